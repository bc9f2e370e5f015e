//! The graph engine: ordering, concurrency of independent branches
//! (measured from the records), branch skips, failure propagation,
//! cancellation, pinned handles across runs, materialize-then-run, the
//! workflow-level replay, and forks answering recorded calls.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use node_runtime::agent::AgentRuntime;
use node_runtime::agent_config::{ModelParams, ProviderConfig};
use node_runtime::blob::FsBlobStore;
use node_runtime::executor::{Executor, ExecutorConfig};
use node_runtime::graph::engine::*;
use node_runtime::graph::materialize::{materialize, Source};
use node_runtime::graph::validate::{runnable, validate};
use node_runtime::graph::*;
use node_runtime::policy::Policy;
use node_runtime::secrets::{MemorySecrets, SecretOwner};
use node_runtime::tool::{ToolEnv, ToolRegistry};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

fn services(history: Arc<MemoryPinHistory>) -> (EngineServices, tempfile::TempDir) {
    let mut registry = ToolRegistry::new();
    node_runtime::builtins::register_builtins(&mut registry).expect("builtins");
    registry
        .register(common::Probe::new("sleep"))
        .expect("sleep");
    let registry = Arc::new(registry);
    let blobs = tempfile::tempdir().expect("tmp");
    let executor = Arc::new(Executor::new(
        ExecutorConfig::default(),
        Arc::new(MemorySecrets::new()),
        Arc::new(FsBlobStore::new(blobs.path())),
    ));
    let services = EngineServices {
        registry: registry.clone(),
        executor,
        agents: Arc::new(AgentRuntime {
            registry,
            approval_key: [5; 32],
        }),
        models: Arc::new(PlainModels),
        approvals: Arc::new(ApproveAll),
        pin_history: history,
        owner: SecretOwner {
            user_id: None,
            workspace_id: "ws".into(),
            org_id: None,
        },
        env: Arc::new(ToolEnv::default()),
        traces_url: Some("/runs/{run_id}/trace".into()),
        checkpoints: None,
        journal: None,
        fork: None,
    };
    (services, blobs)
}

fn node(id: &str, x: f64, kind: NodeKind) -> Node {
    Node {
        id: id.into(),
        label: id.into(),
        position: Position { x, y: 0.0 },
        kind,
    }
}

fn edge(id: &str, from: (&str, &str), to: (&str, &str)) -> Edge {
    Edge {
        id: id.into(),
        source: HandleRef {
            node: from.0.into(),
            handle: from.1.into(),
        },
        target: HandleRef {
            node: to.0.into(),
            handle: to.1.into(),
        },
    }
}

fn wf(nodes: Vec<Node>, edges: Vec<Edge>) -> Workflow {
    Workflow {
        format_version: WORKFLOW_FORMAT_VERSION,
        id: "wf".into(),
        name: "test".into(),
        description: String::new(),
        revision: 1,
        nodes,
        edges,
    }
}

fn input(props: Value) -> NodeKind {
    NodeKind::Input(InputConfig {
        schema: json!({"type": "object", "properties": props}),
    })
}

fn template(t: &str) -> NodeKind {
    NodeKind::Template(TemplateConfig { template: t.into() })
}

fn output(fields: &[&str]) -> NodeKind {
    NodeKind::Output(OutputConfig {
        fields: fields.iter().map(|s| s.to_string()).collect(),
    })
}

fn tool(reference: &str, fixed: Value, wired: &[&str]) -> NodeKind {
    let mut inputs: BTreeMap<String, FieldSource> = fixed
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), FieldSource::Fixed { value: v.clone() }))
                .collect()
        })
        .unwrap_or_default();
    for w in wired {
        inputs.insert(w.to_string(), FieldSource::Wired);
    }
    NodeKind::Tool(ToolNodeConfig {
        tool: reference.into(),
        inputs,
        secret_scope: None,
        output_path: None,
    })
}

fn inputs(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

async fn run(s: &EngineServices, w: &Workflow, i: Value) -> (WorkflowRun, Vec<WorkflowEvent>) {
    let sink = VecWorkflowSink::default();
    let r = run_workflow(s, w, "run1", inputs(i), &sink, CancellationToken::new())
        .await
        .expect("runs");
    let events = sink.0.lock().expect("lock").clone();
    (r, events)
}

#[tokio::test]
async fn nodes_run_in_dependency_order() {
    let (s, _b) = services(Arc::default());
    let w = wf(
        vec![
            node("out", 3.0, output(&["greeting"])),
            node("t2", 2.0, template("{{ text }}!")),
            node("t1", 1.0, template("Hello {{ name }}")),
            node("in", 0.0, input(json!({"name": {"type": "string"}}))),
        ],
        vec![
            edge("a", ("in", "name"), ("t1", "name")),
            edge("b", ("t1", "text"), ("t2", "text")),
            edge("c", ("t2", "text"), ("out", "greeting")),
        ],
    );
    let (r, events) = run(&s, &w, json!({"name": "Ada"})).await;
    assert_eq!(r.outcome, RunOutcome::Succeeded);
    assert_eq!(r.outputs.get("greeting"), Some(&json!("Hello Ada!")));
    let finished: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            WorkflowEvent::NodeFinished { node_id, .. } => Some(node_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, vec!["in", "t1", "t2", "out"]);
    assert!(matches!(
        events.last(),
        Some(WorkflowEvent::RunFinished {
            outcome: RunOutcome::Succeeded,
            error: None
        })
    ));
    // Bad input names the field.
    let sink = VecWorkflowSink::default();
    let mut typed = w.clone();
    typed.nodes[3] = node("in", 0.0, input(json!({"name": {"type": "string"}})));
    let err = run_workflow(
        &s,
        &typed,
        "r",
        inputs(json!({"name": 5})),
        &sink,
        CancellationToken::new(),
    )
    .await
    .expect_err("bad input");
    assert!(
        matches!(&err, EngineError::BadInput { field, .. } if field == "name"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn independent_branches_run_concurrently() {
    let (s, _b) = services(Arc::default());
    let w = wf(
        vec![
            node("a", 0.0, tool("sleep@1.0.0", json!({"ms": 300}), &[])),
            node(
                "b",
                0.0,
                tool("sleep@1.0.0", json!({"ms": 300, "other": true}), &[]),
            ),
            node("out", 1.0, output(&["a", "b"])),
        ],
        vec![
            edge("1", ("a", "output"), ("out", "a")),
            edge("2", ("b", "output"), ("out", "b")),
        ],
    );
    let (r, _) = run(&s, &w, json!({})).await;
    assert_eq!(r.outcome, RunOutcome::Succeeded);
    let (a, b) = (&r.nodes["a"], &r.nodes["b"]);
    // Overlap measured from the records: each started before the other ended.
    assert!(
        a.started_at < b.finished_at && b.started_at < a.finished_at,
        "{a:?} {b:?}"
    );
    assert_eq!(r.outputs["a"], json!({"slept_ms": 300}));
}

#[tokio::test]
async fn branch_routes_on_a_tool_error_code_and_skips_the_other_side() {
    let (s, _b) = services(Arc::default());
    let w = wf(
        vec![
            node(
                "calc",
                0.0,
                tool("calculator@1.0.0", json!({"expression": "1 +"}), &[]),
            ),
            node(
                "br",
                1.0,
                NodeKind::Branch(BranchConfig {
                    pointer: "/error/code".into(),
                    condition: Condition::Equals {
                        value: json!("VALIDATION_ERROR"),
                    },
                }),
            ),
            node(
                "review",
                2.0,
                template("needs review: {{ value.error.message }}"),
            ),
            node("fine", 2.0, template("fine: {{ value.output }}")),
            node("out", 3.0, output(&["review", "fine"])),
        ],
        vec![
            edge("1", ("calc", "envelope"), ("br", "value")),
            edge("2", ("br", "true"), ("review", "value")),
            edge("3", ("br", "false"), ("fine", "value")),
            edge("4", ("review", "text"), ("out", "review")),
            edge("5", ("fine", "text"), ("out", "fine")),
        ],
    );
    let (r, _) = run(&s, &w, json!({})).await;
    assert_eq!(
        r.outcome,
        RunOutcome::Succeeded,
        "a tool error is data, not a failure"
    );
    assert_eq!(r.nodes["review"].status, NodeStatus::Done);
    assert_eq!(r.nodes["fine"].status, NodeStatus::Skipped);
    assert!(r.outputs["review"]
        .as_str()
        .expect("text")
        .starts_with("needs review: cannot evaluate"));
    assert_eq!(r.outputs["fine"], Value::Null);
}

#[tokio::test]
async fn a_failed_node_fails_its_downstream_only() {
    let (s, _b) = services(Arc::default());
    let w = wf(
        vec![
            node("in", 0.0, input(json!({"x": {"type": "string"}}))),
            node("bad", 1.0, template("{{ x | no_such_filter }}")),
            node("after_bad", 2.0, template("{{ text }}")),
            node("good", 1.0, template("ok {{ x }}")),
            node("out", 3.0, output(&["good"])),
        ],
        vec![
            edge("1", ("in", "x"), ("bad", "x")),
            edge("2", ("bad", "text"), ("after_bad", "text")),
            edge("3", ("in", "x"), ("good", "x")),
            edge("4", ("good", "text"), ("out", "good")),
        ],
    );
    let (r, _) = run(&s, &w, json!({"x": "1"})).await;
    assert_eq!(r.outcome, RunOutcome::Failed);
    assert_eq!(r.nodes["bad"].status, NodeStatus::Failed);
    assert!(r.nodes["bad"]
        .error
        .as_deref()
        .unwrap_or_default()
        .contains("template"));
    assert_eq!(r.nodes["after_bad"].status, NodeStatus::Failed);
    assert!(r.nodes["after_bad"]
        .error
        .as_deref()
        .unwrap_or_default()
        .contains("upstream node `bad` failed"));
    assert_eq!(r.nodes["good"].status, NodeStatus::Done);
    assert_eq!(r.outputs["good"], json!("ok 1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_stops_the_run() {
    let (s, _b) = services(Arc::default());
    let w = wf(
        vec![
            node("slow", 0.0, tool("sleep@1.0.0", json!({"ms": 20_000}), &[])),
            node("after", 1.0, template("{{ x }}")),
            node("out", 2.0, output(&["x"])),
        ],
        vec![
            edge("1", ("slow", "output"), ("after", "x")),
            edge("2", ("after", "text"), ("out", "x")),
        ],
    );
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.cancel();
    });
    let start = Instant::now();
    let r = run_workflow(&s, &w, "r", Map::new(), &VecWorkflowSink::default(), cancel)
        .await
        .expect("runs");
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(r.outcome, RunOutcome::Cancelled);
    assert_eq!(r.nodes["after"].status, NodeStatus::Skipped);
    assert_eq!(
        r.nodes["after"].error.as_deref(),
        Some("the run was cancelled")
    );
}

fn agent_node(calc_enabled: bool, on_missing: OnMissing, script: Value) -> NodeKind {
    NodeKind::Agent(AgentNodeConfig {
        system_prompt: String::new(),
        prompt: "Compute {{ q }}".into(),
        tools: vec![
            ToolSelection {
                tool: "calculator@1.0.0".into(),
                enabled: calc_enabled,
            },
            ToolSelection {
                tool: "json_query@1.0.0".into(),
                enabled: true,
            },
        ],
        policy: Policy::default(),
        provider: ProviderConfig::Scripted {
            script: script.into(),
        },
        params: ModelParams::default(),
        pins: vec![PinnedHandle {
            name: "calc_result".into(),
            selector: PinSelector {
                tool: "calculator".into(),
                strategy: PinStrategy::Latest,
                call_id: None,
            },
            on_missing,
            path: Some("/result".into()),
        }],
    })
}

fn pinned_workflow(calc_enabled: bool, on_missing: OnMissing) -> Workflow {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
        {"text": "It is 42."}]});
    wf(
        vec![
            node("in", 0.0, input(json!({"q": {"type": "string"}}))),
            node("agent", 1.0, agent_node(calc_enabled, on_missing, script)),
            node("tpl", 2.0, template("pinned={{ calc_result }}")),
            node("out", 3.0, output(&["pinned", "answer"])),
        ],
        vec![
            edge("1", ("in", "q"), ("agent", "q")),
            edge("2", ("agent", "calc_result"), ("tpl", "calc_result")),
            edge("3", ("tpl", "text"), ("out", "pinned")),
            edge("4", ("agent", "response"), ("out", "answer")),
        ],
    )
}

#[tokio::test]
async fn a_pin_wires_one_tool_result_downstream() {
    let (s, _b) = services(Arc::default());
    let (r, _) = run(
        &s,
        &pinned_workflow(true, OnMissing::Null),
        json!({"q": "6*7"}),
    )
    .await;
    assert_eq!(r.outcome, RunOutcome::Succeeded);
    assert_eq!(r.nodes["agent"].outputs["calc_result"], json!(42.0));
    assert_eq!(r.outputs["pinned"], json!("pinned=42.0"));
    assert_eq!(r.outputs["answer"], json!("It is 42."));
    assert_eq!(
        r.nodes["agent"].outputs["traces_url"],
        json!("/runs/run1/trace")
    );
}

#[tokio::test]
async fn disabling_the_pinned_tool_outputs_null_and_downstream_still_runs() {
    let (s, _b) = services(Arc::default());
    let w = pinned_workflow(false, OnMissing::Null);
    let diags = validate(&w, s.registry.as_ref());
    assert!(
        runnable(&diags) && diags.iter().any(|d| d.code == "PIN_TOOL_DISABLED"),
        "{diags:?}"
    );
    let (r, _) = run(&s, &w, json!({"q": "6*7"})).await;
    assert_eq!(r.outcome, RunOutcome::Succeeded);
    assert_eq!(
        r.nodes["agent"].outputs["calc_result"],
        Value::Null,
        "the pin stays and outputs null"
    );
    assert_eq!(r.nodes["tpl"].status, NodeStatus::Done);
    assert_eq!(r.outputs["pinned"], json!("pinned=None"));
    // The model's call to the disabled tool was denied, never executed.
    let tools_by_id = &r.nodes["agent"].outputs["tools_by_id"];
    let denied = tools_by_id
        .as_object()
        .expect("map")
        .values()
        .next()
        .expect("one call");
    assert_eq!(denied["error"]["code"], "POLICY_DENIED");
}

#[tokio::test]
async fn on_missing_error_fails_the_node_naming_the_pin() {
    let (s, _b) = services(Arc::default());
    let (r, _) = run(
        &s,
        &pinned_workflow(false, OnMissing::Error),
        json!({"q": "x"}),
    )
    .await;
    assert_eq!(r.nodes["agent"].status, NodeStatus::Failed);
    assert!(r.nodes["agent"]
        .error
        .as_deref()
        .unwrap_or_default()
        .contains("calc_result"));
    assert_eq!(r.nodes["tpl"].status, NodeStatus::Failed);
}

#[tokio::test]
async fn stale_last_success_uses_the_previous_run() {
    let history = Arc::new(MemoryPinHistory::default());
    let (s, _b) = services(history);
    // Run 1: the tool is on and the pin resolves.
    let (r1, _) = run(
        &s,
        &pinned_workflow(true, OnMissing::StaleLastSuccess),
        json!({"q": "6*7"}),
    )
    .await;
    assert_eq!(r1.nodes["agent"].outputs["calc_result"], json!(42.0));
    // Run 2: the tool is off; the pin gives run 1's value.
    let (r2, _) = run(
        &s,
        &pinned_workflow(false, OnMissing::StaleLastSuccess),
        json!({"q": "6*7"}),
    )
    .await;
    assert_eq!(r2.nodes["agent"].outputs["calc_result"], json!(42.0));
    assert_eq!(
        r2.nodes["agent"].pin_fallbacks.get("calc_result"),
        Some(&json!(42.0))
    );
    assert_eq!(r2.outputs["pinned"], json!("pinned=42.0"));
    // A fresh history has nothing: null.
    let (s3, _b3) = services(Arc::default());
    let (r3, _) = run(
        &s3,
        &pinned_workflow(false, OnMissing::StaleLastSuccess),
        json!({"q": "6*7"}),
    )
    .await;
    assert_eq!(r3.nodes["agent"].outputs["calc_result"], Value::Null);
}

#[tokio::test]
async fn materialized_nodes_reproduce_the_original_call() {
    let (s, _b) = services(Arc::default());
    let w = pinned_workflow(true, OnMissing::Null);
    let (r, _) = run(&s, &w, json!({"q": "6*7"})).await;
    let tools_by_id = r.nodes["agent"].outputs["tools_by_id"]
        .as_object()
        .expect("map")
        .clone();
    let (call_id, env_value) = tools_by_id.iter().next().expect("one call");
    let envelope: node_runtime::ToolEnvelope =
        serde_json::from_value(env_value.clone()).expect("envelope");

    // From a timeline row.
    let (w2, id) = materialize(
        &w,
        "agent",
        &Source::CallId(call_id.clone()),
        &envelope,
        None,
    )
    .expect("materialize");
    let (r2, _) = run(&s, &w2, json!({"q": "6*7"})).await;
    assert_eq!(
        r2.nodes[&id].outputs["output"], envelope.output,
        "same output as the original call"
    );

    // From the pin: its downstream edge now comes from the new node.
    let (w3, id3) = materialize(
        &w,
        "agent",
        &Source::Pin("calc_result".into()),
        &envelope,
        None,
    )
    .expect("materialize");
    let (r3, _) = run(&s, &w3, json!({"q": "6*7"})).await;
    assert_eq!(
        r3.nodes[&id3].outputs["output"],
        json!(42.0),
        "the pin's path applies"
    );
    assert_eq!(r3.outputs["pinned"], json!("pinned=42.0"));
}

#[tokio::test]
async fn workflow_replay_reproduces_outputs_without_live_calls() {
    let (s, _b) = services(Arc::default());
    let mut w = pinned_workflow(true, OnMissing::Null);
    w.nodes.push(node(
        "calc",
        1.0,
        tool("calculator@1.0.0", json!({"expression": "2+2"}), &[]),
    ));
    w.nodes.push(node("out2", 4.0, output(&["four"])));
    w.edges
        .push(edge("5", ("calc", "output"), ("out2", "four")));
    let (r, _) = run(&s, &w, json!({"q": "6*7"})).await;
    assert_eq!(r.outcome, RunOutcome::Succeeded);
    // Replay with a runtime that has no tools registered: nothing can run live.
    let empty = AgentRuntime {
        registry: Arc::new(ToolRegistry::new()),
        approval_key: [0; 32],
    };
    let stored: WorkflowRun =
        serde_json::from_str(&serde_json::to_string(&r).expect("ser")).expect("de");
    let sink = VecWorkflowSink::default();
    let replayed = replay_workflow(&empty, &w, &stored, &sink)
        .await
        .expect("replays");
    assert_eq!(replayed, r.outputs);
    // The replay's tool timeline comes out as events, in the recorded order.
    let replayed_calls: Vec<Value> = sink
        .0
        .lock()
        .expect("sink")
        .iter()
        .filter_map(|e| match e {
            WorkflowEvent::Agent { node_id, event } if node_id == "agent" => match &**event {
                node_runtime::agent::AgentEvent::ToolCallFinished { envelope } => {
                    Some(json!(envelope.call_id))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        json!(replayed_calls),
        r.nodes["agent"].outputs["tool_order"]
    );
    assert_eq!(replayed_calls.len(), 1);
    // A record edited to differ is reported at its node.
    let mut edited = stored.clone();
    edited
        .nodes
        .get_mut("calc")
        .expect("calc")
        .envelope
        .as_mut()
        .expect("env")
        .input = json!({"expression": "3+3"}).into();
    let err = replay_workflow(&empty, &w, &edited, &VecWorkflowSink::default())
        .await
        .expect_err("diverges");
    assert!(
        matches!(&err, EngineError::ReplayDiverged { node, .. } if node == "calc"),
        "{err}"
    );
}

/// A fork answers every call its origin recorded, an Agent node's and a
/// Tool node's, from the recording (`replayed`); a call the origin never
/// made (the Tool node's changed input) runs.
#[tokio::test]
async fn a_fork_answers_recorded_calls_from_the_recording() {
    let (s, _b) = services(Arc::default());
    let calc = |expression: &str| {
        node(
            "calc",
            1.0,
            tool("calculator@1.0.0", json!({ "expression": expression }), &[]),
        )
    };
    let mut w = pinned_workflow(true, OnMissing::Null);
    w.nodes.push(calc("2+2"));
    w.nodes.push(node("out2", 4.0, output(&["four"])));
    w.edges
        .push(edge("5", ("calc", "output"), ("out2", "four")));
    let (origin, _) = run(&s, &w, json!({"q": "6*7"})).await;
    assert_eq!(origin.outcome, RunOutcome::Succeeded);
    let recorded: WorkflowRun =
        serde_json::from_str(&serde_json::to_string(&origin).expect("ser")).expect("de");
    let (mut forked, _b2) = services(Arc::default());
    forked.fork = Some(Arc::new(ForkRecording::from_run(&recorded, false)));
    assert_eq!(forked.fork.as_ref().map(|f| f.len()), Some(2));
    let replayed = |r: &WorkflowRun| {
        let agent = r.nodes["agent"].bundle.as_ref().expect("bundle");
        (
            agent
                .envelopes
                .iter()
                .map(|e| e.replayed)
                .collect::<Vec<_>>(),
            r.nodes["calc"]
                .envelope
                .as_ref()
                .expect("envelope")
                .replayed,
        )
    };
    assert_eq!(replayed(&origin), (vec![false], false));
    let (same, _) = run(&forked, &w, json!({"q": "6*7"})).await;
    assert_eq!(same.outcome, RunOutcome::Succeeded);
    assert_eq!(replayed(&same), (vec![true], true));
    assert_eq!(same.outputs, origin.outputs);
    let mut changed = w.clone();
    changed.nodes.retain(|n| n.id != "calc");
    changed.nodes.push(calc("3+3"));
    let (other, _) = run(&forked, &changed, json!({"q": "6*7"})).await;
    assert_eq!(replayed(&other), (vec![true], false));
    assert_eq!(other.outputs["four"], json!({"result": 6.0}));
}

#[tokio::test]
async fn invalid_workflows_are_refused_with_diagnostics() {
    let (s, _b) = services(Arc::default());
    let w = wf(
        vec![node("t", 0.0, template("{{ a }}"))],
        vec![edge("1", ("t", "text"), ("t", "a"))],
    );
    let err = run_workflow(
        &s,
        &w,
        "r",
        Map::new(),
        &VecWorkflowSink::default(),
        CancellationToken::new(),
    )
    .await
    .expect_err("cycle");
    match err {
        EngineError::Invalid(d) => assert!(d.iter().any(|d| d.code == "CYCLE")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_tool_the_registry_does_not_have_is_refused_at_run_start() {
    let (s, _b) = services(Arc::default());
    // The engine validates against the registry itself: a known tool in an
    // unknown version is refused before anything runs, as is an unknown one.
    for reference in ["calculator@9.9.9", "no_such_tool@1.0.0"] {
        let w = wf(
            vec![node(
                "t",
                0.0,
                tool(reference, json!({"expression": "1+1"}), &[]),
            )],
            vec![],
        );
        let sink = VecWorkflowSink::default();
        let err = run_workflow(&s, &w, "r", Map::new(), &sink, CancellationToken::new())
            .await
            .expect_err("refused");
        match err {
            EngineError::Invalid(d) => assert!(
                d.iter().any(|d| d.code == "UNKNOWN_TOOL" && d.node == "t"),
                "{reference}: {d:?}"
            ),
            other => panic!("{reference}: {other:?}"),
        }
        assert!(
            sink.0.lock().expect("lock").is_empty(),
            "{reference}: nothing ran"
        );
    }
    // The registered version runs.
    let w = wf(
        vec![node(
            "t",
            0.0,
            tool("calculator@1.0.0", json!({"expression": "1+1"}), &[]),
        )],
        vec![],
    );
    let (r, _) = run(&s, &w, json!({})).await;
    assert_eq!(r.outcome, RunOutcome::Succeeded);
}

/// A loopback OpenAI-compatible server that answers every request with
/// one text answer and keeps each request's head.
async fn openai_mock() -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let heads = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = heads.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let head_end = loop {
                let n = stream.read(&mut chunk).await.unwrap_or(0);
                if n == 0 {
                    break None;
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break Some(p + 4);
                }
            };
            let Some(head_end) = head_end else { continue };
            let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < head_end + len {
                let n = stream.read(&mut chunk).await.unwrap_or(0);
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            seen.lock().expect("lock").push(head);
            let body = json!({"choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "hello"}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2}})
            .to_string();
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    (url, heads)
}

fn openai_agent_workflow(base_url: &str) -> Workflow {
    let mut agent = agent_node(true, OnMissing::Null, json!({"turns": []}));
    if let NodeKind::Agent(config) = &mut agent {
        config.provider = ProviderConfig::Openai {
            base_url: base_url.into(),
            model: "gpt-4o".into(),
            api_key_secret: Some("OPENAI_API_KEY".into()),
            price: None,
            stream: false,
        };
        config.prompt = "Say hello".into();
    }
    wf(vec![node("agent", 0.0, agent)], vec![])
}

#[tokio::test]
async fn a_providers_api_key_is_resolved_at_run_start_and_reaches_only_the_provider() {
    let (url, heads) = openai_mock().await;
    let workflow = openai_agent_workflow(&url);
    let env = node_runtime::model::ModelEnv {
        egress: node_runtime::model::Egress::with_allow_hosts(vec!["127.0.0.1".into()]),
        ..Default::default()
    };

    // Missing in every scope: the run fails before any model call.
    let (mut services, _blobs) = services(Arc::new(MemoryPinHistory::default()));
    services.models = Arc::new(ProviderModels(env.clone()));
    let err = run_workflow(
        &services,
        &workflow,
        "r1",
        Map::new(),
        &VecWorkflowSink::default(),
        CancellationToken::new(),
    )
    .await
    .expect_err("no key");
    let message = err.to_string();
    assert!(message.starts_with("AUTH_REQUIRED"), "{message}");
    assert!(
        message.contains("OPENAI_API_KEY") && message.contains("workspace"),
        "{message}"
    );
    assert!(
        heads.lock().expect("lock").is_empty(),
        "the provider was called"
    );

    // Set for the workspace: the provider sees it as a bearer token.
    let mut secrets = MemorySecrets::new();
    secrets.set(
        node_runtime::secrets::SecretScope::Workspace,
        "ws",
        "OPENAI_API_KEY",
        "sk-canary-7f3a9",
    );
    services.executor = Arc::new(Executor::new(
        ExecutorConfig::default(),
        Arc::new(secrets),
        Arc::new(FsBlobStore::new(_blobs.path())),
    ));
    let sink = VecWorkflowSink::default();
    let run = run_workflow(
        &services,
        &workflow,
        "r2",
        Map::new(),
        &sink,
        CancellationToken::new(),
    )
    .await
    .expect("runs");
    assert_eq!(run.outcome, RunOutcome::Succeeded, "{:?}", run.nodes);
    assert_eq!(run.nodes["agent"].outputs["response"], json!("hello"));
    let heads = heads.lock().expect("lock").clone();
    assert_eq!(heads.len(), 1);
    assert!(
        heads[0].contains("authorization: bearer sk-canary-7f3a9"),
        "{}",
        heads[0]
    );
    let recorded = serde_json::to_string(&run.nodes).expect("records") + &format!("{:?}", sink.0);
    assert!(
        !recorded.contains("sk-canary-7f3a9"),
        "the key leaked into the run's records"
    );
}

/// A template that runs until its fuel is spent: the longest a rendering
/// can take.
const RUNAWAY: &str =
    "{% for i in range(10000) %}{% for j in range(10000) %}x{% endfor %}{% endfor %}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_during_a_long_template_render_takes_effect_without_waiting_for_it() {
    let began = Instant::now();
    let err = node_runtime::graph::engine::render(RUNAWAY, &Default::default())
        .expect_err("stops at its fuel");
    let render = began.elapsed();
    assert!(err.contains("steps"), "{err}");

    let (s, _b) = services(Arc::default());
    let w = wf(
        vec![
            node("t", 0.0, template(RUNAWAY)),
            node("out", 1.0, output(&["x"])),
        ],
        vec![edge("1", ("t", "text"), ("out", "x"))],
    );
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let cancelled_at = Arc::new(std::sync::Mutex::new(None::<Instant>));
    let at = cancelled_at.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(2)).await;
        *at.lock().expect("lock") = Some(Instant::now());
        c.cancel();
    });
    let r = run_workflow(&s, &w, "r", Map::new(), &VecWorkflowSink::default(), cancel)
        .await
        .expect("runs");
    let latency = cancelled_at
        .lock()
        .expect("lock")
        .map(|t| t.elapsed())
        .expect("cancelled");
    assert_eq!(r.outcome, RunOutcome::Cancelled);
    eprintln!("a whole runaway render: {render:?}; the cancel took effect after {latency:?}");
    assert!(
        latency * 4 < render,
        "the cancel ({latency:?}) did not wait for the render ({render:?})"
    );
}
