//! The agent loop with the scripted provider: answers, calls, parallel
//! calls, errors fed back, limits, blocked tools, approvals, resume from
//! serialized state, and replay.

mod common;

use std::sync::Arc;

use common::{Probe, RenamedProbe};
use node_runtime::agent::replay::{outputs_match, replay, BundleError, ReplayBundle};
use node_runtime::agent::{
    AgentError, AgentRun, AgentRuntime, ApprovalError, Decision, LiveTools, NullSink, Step, VecSink,
};
use node_runtime::agent_config::{AgentConfig, ModelParams, ProviderConfig};
use node_runtime::blob::FsBlobStore;
use node_runtime::executor::{Executor, ExecutorConfig};
use node_runtime::model::scripted::ScriptedModel;
use node_runtime::model::ChatModel;
use node_runtime::policy::Policy;
use node_runtime::secrets::{MemorySecrets, SecretOwner};
use node_runtime::tool::{ToolEnv, ToolRegistry};
use node_runtime::tool_spec::Lifecycle;
use node_runtime::{AgentOutputs, ErrorCode};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

struct Harness {
    runtime: AgentRuntime,
    tools: LiveTools,
    files: tempfile::TempDir,
    _blobs: tempfile::TempDir,
}

fn harness() -> Harness {
    let mut registry = ToolRegistry::new();
    node_runtime::builtins::register_builtins(&mut registry).expect("builtins");
    let mut blocked = Probe::new("noop");
    blocked.metadata.lifecycle = Lifecycle::Blocked;
    registry
        .register(RenamedProbe(blocked, "legacy"))
        .expect("register");
    registry.register(Probe::new("panic")).expect("register");
    let blobs = tempfile::tempdir().expect("tmp");
    let files = tempfile::tempdir().expect("tmp");
    let executor = Arc::new(Executor::new(
        ExecutorConfig::default(),
        Arc::new(MemorySecrets::new()),
        Arc::new(FsBlobStore::new(blobs.path())),
    ));
    let env = ToolEnv {
        files_root: Some(files.path().to_path_buf()),
        ..ToolEnv::default()
    };
    Harness {
        runtime: AgentRuntime {
            registry: Arc::new(registry),
            approval_key: [7; 32],
        },
        tools: LiveTools {
            executor,
            owner: SecretOwner {
                user_id: None,
                workspace_id: "ws".into(),
                org_id: None,
            },
            env: Arc::new(env),
            cancel: CancellationToken::new(),
            journal: None,
            progress: None,
        },
        files,
        _blobs: blobs,
    }
}

fn config(tools: &[&str], script: Value) -> AgentConfig {
    AgentConfig {
        system_prompt: "You are a careful assistant.".into(),
        user_prompt: "What is 6 times 7?".into(),
        tools: tools.iter().map(|t| t.to_string()).collect(),
        policy: Policy::default(),
        provider: ProviderConfig::Scripted {
            script: script.into(),
        },
        params: ModelParams::default(),
        traces_url: Some("/runs/r1/trace".into()),
    }
}

fn model(config: &AgentConfig) -> ScriptedModel {
    let ProviderConfig::Scripted { script } = &config.provider else {
        panic!("scripted")
    };
    ScriptedModel::from_json(script).expect("script")
}

impl Harness {
    async fn run_to_end(&self, run: &mut AgentRun, sink: &VecSink) -> AgentOutputs {
        let m = model(&run.config);
        match self
            .runtime
            .drive(run, &m, &self.tools, sink)
            .await
            .expect("drive")
        {
            Step::Finished => run.outputs.clone(),
            Step::Suspended(a) => panic!("unexpected approvals: {a:?}"),
        }
    }

    fn start(&self, config: AgentConfig) -> AgentRun {
        self.runtime.start("r1", "ws", config).expect("start")
    }
}

fn codes(outputs: &AgentOutputs) -> Vec<Option<ErrorCode>> {
    outputs
        .tool_order
        .iter()
        .map(|id| outputs.tools_by_id[id].error.as_ref().map(|e| e.code))
        .collect()
}

#[tokio::test]
async fn answer_without_tools() {
    let h = harness();
    let sink = VecSink::default();
    let mut run = h.start(config(
        &["calculator@1.0.0"],
        json!({"turns": [{"text": "42."}]}),
    ));
    let out = h.run_to_end(&mut run, &sink).await;
    assert_eq!(out.response, "42.");
    assert!(out.tool_order.is_empty() && out.tools_by_id.is_empty() && out.last_tool.is_none());
    assert_eq!(out.traces_url.as_deref(), Some("/runs/r1/trace"));
    let json = serde_json::to_value(&out).expect("ser");
    for key in [
        "response",
        "tools_by_id",
        "tool_order",
        "last_tool",
        "traces_url",
    ] {
        assert!(json.get(key).is_some(), "{key} always present");
    }
    assert_eq!(
        sink.names(),
        vec!["IterationStarted", "ModelCalled", "Finished"]
    );
}

#[tokio::test]
async fn one_call_then_answer() {
    let h = harness();
    let sink = VecSink::default();
    let script = json!({"turns": [
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
        {"text": "6 times 7 is 42."}]});
    let mut run = h.start(config(&["calculator@1.0.0"], script));
    let out = h.run_to_end(&mut run, &sink).await;
    assert_eq!(out.response, "6 times 7 is 42.");
    assert_eq!(out.tool_order.len(), 1);
    let env = &out.tools_by_id[&out.tool_order[0]];
    assert_eq!(env.output, json!({"result": 42.0}));
    assert_eq!(
        out.last_tool.as_ref().map(|e| e.call_id.clone()),
        Some(env.call_id.clone())
    );
    assert_eq!(
        sink.names(),
        vec![
            "IterationStarted",
            "ModelCalled",
            "ToolCallStarted",
            "ToolCallFinished",
            "IterationStarted",
            "ModelCalled",
            "Finished"
        ]
    );
    // The provider id maps to our call id.
    assert_eq!(run.call_map[0].provider_call_id, "script_0_0");
    assert_eq!(run.call_map[0].call_id, env.call_id);
}

#[tokio::test]
async fn parallel_calls_keep_model_order() {
    let h = harness();
    let script = json!({"turns": [
        {"tool_calls": [
            {"name": "calculator", "arguments": {"expression": "1+1"}},
            {"name": "json_query", "arguments": {"program": ".a", "data": {"a": 5}}},
            {"name": "calculator", "arguments": {"expression": "1+1"}}]},
        {"text": "done"}]});
    let mut run = h.start(config(&["calculator@1.0.0", "json_query@1.0.0"], script));
    let out = h.run_to_end(&mut run, &VecSink::default()).await;
    assert_eq!(out.tool_order.len(), 3);
    let names: Vec<&str> = out
        .tool_order
        .iter()
        .map(|id| out.tools_by_id[id].name.as_str())
        .collect();
    assert_eq!(names, vec!["calculator", "json_query", "calculator"]);
    assert_ne!(
        out.tool_order[0], out.tool_order[2],
        "identical calls get distinct ids"
    );
    assert_eq!(codes(&out), vec![None, None, None]);
    // Results went back to the model in its format, in order.
    let results: Vec<&str> = run
        .messages
        .iter()
        .filter_map(|m| match m {
            node_runtime::model::Message::ToolResult {
                provider_call_id, ..
            } => Some(provider_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(results, vec!["script_0_0", "script_0_1", "script_0_2"]);
}

#[tokio::test]
async fn errors_are_fed_back_and_the_model_recovers() {
    let h = harness();
    let script = json!({"turns": [
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": 42}}]},
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "1/0"}}]},
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
        {"text": "Recovered: 42"}]});
    let mut run = h.start(config(&["calculator@1.0.0"], script));
    let out = h.run_to_end(&mut run, &VecSink::default()).await;
    assert_eq!(
        codes(&out),
        vec![
            Some(ErrorCode::ValidationError),
            Some(ErrorCode::ValidationError),
            None
        ]
    );
    assert_eq!(out.response, "Recovered: 42");
    // The model saw the code and message of the failures.
    let first_result = run.messages.iter().find_map(|m| match m {
        node_runtime::model::Message::ToolResult {
            content,
            is_error: true,
            ..
        } => Some(content.clone()),
        _ => None,
    });
    assert_eq!(
        first_result.expect("an error result")["error"]["code"],
        "VALIDATION_ERROR"
    );
    assert_eq!(
        out.last_tool.expect("success").output,
        json!({"result": 42.0})
    );
}

#[tokio::test]
async fn limit_reached_forces_a_final_answer() {
    let h = harness();
    let looping: Vec<Value> = (0..10).map(|i| json!({"tool_calls": [{"name": "calculator", "arguments": {"expression": format!("{i}+1")}}]})).collect();
    let mut cfg = config(
        &["calculator@1.0.0"],
        json!({"turns": looping, "final_answer": "Best so far: 3"}),
    );
    cfg.policy.max_iterations = 3;
    let sink = VecSink::default();
    let mut run = h.start(cfg);
    let out = h.run_to_end(&mut run, &sink).await;
    assert_eq!(out.limit_reached.as_deref(), Some("max_iterations"));
    assert_eq!(out.response, "Best so far: 3");
    assert_eq!(out.tool_order.len(), 3);
    assert!(sink.names().contains(&"LimitReached".to_string()));
    assert!(
        !run.exchanges.last().expect("final call").tools_offered,
        "the final call offers no tools"
    );

    let mut cfg = config(
        &["calculator@1.0.0"],
        json!({"turns": [
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "1"}}, {"name": "calculator", "arguments": {"expression": "2"}}]},
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "3"}}]}]}),
    );
    cfg.policy.max_tool_calls = 2;
    let mut run = h.start(cfg);
    let out = h.run_to_end(&mut run, &VecSink::default()).await;
    assert_eq!(out.limit_reached.as_deref(), Some("max_tool_calls"));
    assert!(!out.response.is_empty(), "never empty because of a limit");
}

#[tokio::test]
async fn blocked_and_unknown_tools_are_denied_and_the_run_goes_on() {
    let h = harness();
    let script = json!({"turns": [
        {"tool_calls": [{"name": "legacy", "arguments": {}}, {"name": "rm_rf", "arguments": {}}]},
        {"text": "Could not use those tools."}]});
    let mut run = h.start(config(&["legacy@1.0.0"], script));
    let out = h.run_to_end(&mut run, &VecSink::default()).await;
    let reasons: Vec<String> = out
        .tool_order
        .iter()
        .map(|id| {
            out.tools_by_id[id].error.as_ref().expect("denied").details["reason"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(reasons, vec!["TOOL_BLOCKED", "NOT_ENABLED"]);
    assert_eq!(out.response, "Could not use those tools.");
}

fn write_script() -> Value {
    json!({"turns": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "note.txt", "content": "first"}}]},
        {"text": "Done."}]})
}

async fn suspend(h: &Harness, run: &mut AgentRun) -> Vec<node_runtime::agent::ApprovalRequest> {
    let m = model(&run.config);
    match h
        .runtime
        .drive(run, &m, &h.tools, &NullSink)
        .await
        .expect("drive")
    {
        Step::Suspended(a) => a,
        Step::Finished => panic!("expected a suspension, finished with {:?}", run.outputs),
    }
}

#[tokio::test]
async fn approve_runs_the_write_exactly_once() {
    let h = harness();
    let mut run = h.start(config(&["write_file@1.0.0"], write_script()));
    let requests = suspend(&h, &mut run).await;
    assert_eq!(requests.len(), 1);
    let req = &requests[0];
    assert_eq!(req.tool, "write_file@1.0.0");
    assert!(req.args_summary.contains("note.txt"));
    assert!(!req.effect_description.is_empty());
    assert!(
        !h.files.path().join("note.txt").exists(),
        "nothing runs before the decision"
    );
    h.runtime
        .decide(&mut run, &req.token, Decision::Approve, &NullSink)
        .expect("approve");
    let out = h.run_to_end(&mut run, &VecSink::default()).await;
    assert_eq!(
        std::fs::read_to_string(h.files.path().join("note.txt")).expect("written"),
        "first"
    );
    assert!(out.tools_by_id[&out.tool_order[0]].is_success());
    // The token is single-use.
    let again = h
        .runtime
        .decide(&mut run, &req.token, Decision::Approve, &NullSink);
    assert_eq!(again, Err(AgentError::Approval(ApprovalError::AlreadyUsed)));
}

#[tokio::test]
async fn deny_feeds_policy_denied_to_the_model() {
    let h = harness();
    let mut run = h.start(config(&["write_file@1.0.0"], write_script()));
    let req = suspend(&h, &mut run).await.remove(0);
    let no_reason = h.runtime.decide(
        &mut run,
        &req.token,
        Decision::Deny { reason: " ".into() },
        &NullSink,
    );
    assert_eq!(
        no_reason,
        Err(AgentError::Approval(ApprovalError::ReasonRequired))
    );
    h.runtime
        .decide(
            &mut run,
            &req.token,
            Decision::Deny {
                reason: "not today".into(),
            },
            &NullSink,
        )
        .expect("deny");
    let out = h.run_to_end(&mut run, &VecSink::default()).await;
    let err = out.tools_by_id[&out.tool_order[0]]
        .error
        .clone()
        .expect("denied");
    assert_eq!(err.code, ErrorCode::PolicyDenied);
    assert_eq!(
        err.details,
        json!({"reason": "APPROVAL_DENIED", "note": "not today"})
    );
    assert_eq!(
        out.response, "Done.",
        "the run still finishes with a response"
    );
    assert!(!h.files.path().join("note.txt").exists());
}

#[tokio::test]
async fn revise_sends_the_note_and_the_model_proposes_again() {
    let h = harness();
    let script = json!({"turns": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "note.txt", "content": "draft"}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "note.txt", "content": "final"}}]},
        {"text": "Written."}]});
    let mut run = h.start(config(&["write_file@1.0.0"], script));
    let first = suspend(&h, &mut run).await.remove(0);
    h.runtime
        .decide(
            &mut run,
            &first.token,
            Decision::Revise {
                note: "say final".into(),
            },
            &NullSink,
        )
        .expect("revise");
    let second = suspend(&h, &mut run).await.remove(0);
    assert_ne!(first.call_id, second.call_id);
    let note_seen = run.messages.iter().any(|m| matches!(m, node_runtime::model::Message::ToolResult { content, .. } if content.to_string().contains("say final")));
    assert!(note_seen, "the note went back to the model");
    h.runtime
        .decide(&mut run, &second.token, Decision::Approve, &NullSink)
        .expect("approve");
    let out = h.run_to_end(&mut run, &VecSink::default()).await;
    assert_eq!(
        std::fs::read_to_string(h.files.path().join("note.txt")).expect("written"),
        "final"
    );
    assert_eq!(out.tool_order.len(), 2);
}

#[tokio::test]
async fn resume_from_serialized_state_and_parallel_approvals_in_any_order() {
    let h = harness();
    let script = json!({"turns": [
        {"tool_calls": [
            {"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}},
            {"name": "calculator", "arguments": {"expression": "2+2"}},
            {"name": "write_file", "arguments": {"path": "b.txt", "content": "B"}}]},
        {"text": "Both written."}]});
    let mut run = h.start(config(&["write_file@1.0.0", "calculator@1.0.0"], script));
    let requests = suspend(&h, &mut run).await;
    assert_eq!(requests.len(), 2, "each write gets its own approval");
    // Persist, drop, restore (as the server does across a restart).
    let saved = serde_json::to_string(&run).expect("state serializes");
    drop(run);
    let mut restored: AgentRun = serde_json::from_str(&saved).expect("state deserializes");
    // Decide the second first.
    h.runtime
        .decide(
            &mut restored,
            &requests[1].token,
            Decision::Approve,
            &NullSink,
        )
        .expect("second");
    let still = suspend(&h, &mut restored).await;
    assert_eq!(still.len(), 1);
    assert_eq!(still[0].call_id, requests[0].call_id);
    h.runtime
        .decide(
            &mut restored,
            &requests[0].token,
            Decision::Approve,
            &NullSink,
        )
        .expect("first");
    let out = h.run_to_end(&mut restored, &VecSink::default()).await;
    assert_eq!(codes(&out), vec![None, None, None]);
    assert_eq!(
        std::fs::read_to_string(h.files.path().join("a.txt")).expect("a"),
        "A"
    );
    assert_eq!(
        std::fs::read_to_string(h.files.path().join("b.txt")).expect("b"),
        "B"
    );
}

#[tokio::test]
async fn approval_tokens_are_bound_to_run_call_and_args() {
    let h = harness();
    let mut run1 = h.start(config(&["write_file@1.0.0"], write_script()));
    let req1 = suspend(&h, &mut run1).await.remove(0);
    let mut run2 = h
        .runtime
        .start("r2", "ws", config(&["write_file@1.0.0"], write_script()))
        .expect("start");
    let req2 = suspend(&h, &mut run2).await.remove(0);
    assert_ne!(req1.token, req2.token);
    // Another run's token.
    assert_eq!(
        h.runtime
            .decide(&mut run1, &req2.token, Decision::Approve, &NullSink),
        Err(AgentError::Approval(ApprovalError::UnknownToken))
    );
    // Tampered args: the pending call's arguments were edited after the request.
    run1.pending[0].provider_call.arguments =
        json!({"path": "../../etc/evil", "content": "x"}).into();
    assert_eq!(
        h.runtime
            .decide(&mut run1, &req1.token, Decision::Approve, &NullSink),
        Err(AgentError::Approval(ApprovalError::Tampered))
    );
    // Nothing ran.
    assert!(!h.files.path().join("note.txt").exists());
    assert!(run1.envelopes.is_empty() && run2.envelopes.is_empty());
}

async fn finished_run(h: &Harness) -> (AgentRun, ReplayBundle) {
    let script = json!({"turns": [
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}, {"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}]},
        {"tool_calls": [{"name": "json_query", "arguments": {"program": ".n", "data": {"n": 1}}}]},
        {"text": "All done."}]});
    let cfg = config(
        &["calculator@1.0.0", "write_file@1.0.0", "json_query@1.0.0"],
        script,
    );
    let mut run = h.start(cfg);
    let req = suspend(h, &mut run).await.remove(0);
    h.runtime
        .decide(
            &mut run,
            &req.token,
            Decision::Deny {
                reason: "no files".into(),
            },
            &NullSink,
        )
        .expect("deny");
    h.run_to_end(&mut run, &VecSink::default()).await;
    let m = model(&run.config);
    let bundle =
        ReplayBundle::from_run(&run, m.tool_schemas(&run.tool_definitions)).expect("bundle");
    (run, bundle)
}

#[tokio::test]
async fn replay_reproduces_outputs_byte_for_byte_without_running_tools() {
    let h = harness();
    let (run, bundle) = finished_run(&h).await;
    let loaded = ReplayBundle::from_json(&bundle.to_json()).expect("loads");
    // Replay on a runtime whose registry has no tools at all: nothing can run.
    let empty = AgentRuntime {
        registry: Arc::new(ToolRegistry::new()),
        approval_key: [9; 32],
    };
    let replayed = replay(&empty, &loaded, &NullSink).await.expect("replays");
    assert!(outputs_match(&replayed, &run.outputs));
    let a = node_runtime::call_id::canonical_json(&serde_json::to_value(&replayed).expect("ser"));
    let b =
        node_runtime::call_id::canonical_json(&serde_json::to_value(&run.outputs).expect("ser"));
    assert_eq!(a, b);
}

/// A bundle's integrity is hashed as it is written, piece by piece (issue
/// #30); it is the same hash as that of the whole bundle's canonical JSON,
/// which loading checks, also for what takes RFC 8785's general path:
/// fractional and huge numbers, non-ASCII keys (also in `tools_by_id`).
#[tokio::test]
async fn a_bundle_hashed_piece_by_piece_loads() {
    let h = harness();
    let (mut run, _) = finished_run(&h).await;
    let odd = json!({"é": 1.5, "big": 9_007_199_254_740_993_u64, "two": 2.0, "z": -0.0, "a": [0.1, 1e21]});
    run.envelopes[0].output = odd.clone().into();
    run.exchanges[0].response.text = "ünïcode".into();
    let mut envelope = run.envelopes[0].clone();
    envelope.input = odd.into();
    run.outputs.tools_by_id.insert("ключ".into(), envelope);
    let bundle = ReplayBundle::from_run(&run, vec![json!({"x": 0.5})]).expect("bundle");
    let loaded = ReplayBundle::from_json(&bundle.to_json()).expect("its integrity holds");
    assert_eq!(loaded, bundle);
    // And with only ASCII keys in `tools_by_id` (written entry by entry).
    run.outputs.tools_by_id.remove("ключ");
    let bundle = ReplayBundle::from_run(&run, Vec::new()).expect("bundle");
    ReplayBundle::from_json(&bundle.to_json()).expect("its integrity holds");
    // Past the hasher's 64 KB buffer: a piece longer than it (hashed in
    // place) and pieces that fill it (hashed as it fills).
    run.envelopes[0].output = json!("x".repeat(70_000)).into();
    run.envelopes[1].output = json!("y".repeat(40_000)).into();
    run.exchanges[0].response.text = "z".repeat(50_000);
    let bundle = ReplayBundle::from_run(&run, Vec::new()).expect("bundle");
    let loaded = ReplayBundle::from_json(&bundle.to_json()).expect("its integrity holds");
    assert_eq!(loaded, bundle);
}

/// Every record of a bundle gets its canonical text straight from its
/// `Serialize` (no `Value` tree, issue #30), the very text of the `Value`
/// path that loading checks against; and the odd values of the test above
/// (a fractional number, a non-ASCII key) take the `Value` path instead.
#[tokio::test]
async fn a_bundles_records_are_written_canonically_without_a_value() {
    use node_runtime::call_id::canonical_json;
    use node_runtime::canonical_ser::to_string as direct;
    fn same<T: serde::Serialize>(what: &str, record: &T) {
        let via_value = canonical_json(&serde_json::to_value(record).expect("to_value"));
        assert_eq!(
            direct(record).as_deref(),
            Some(via_value.as_str()),
            "{what}"
        );
    }
    let h = harness();
    let (mut run, bundle) = finished_run(&h).await;
    same("config", &bundle.config);
    same("outputs", &bundle.outputs);
    for e in &bundle.envelopes {
        same("envelope", e);
    }
    for x in &bundle.exchanges {
        same("exchange", x);
    }
    for d in &bundle.tool_definitions {
        same("tool definition", d);
    }
    for c in &bundle.call_map {
        same("call map entry", c);
    }
    for a in &bundle.approvals {
        same("approval", a);
    }
    run.envelopes[0].output = json!({"ratio": 1.5}).into();
    assert_eq!(direct(&run.envelopes[0]), None);
    run.envelopes[0].output = json!({"é": 1}).into();
    assert_eq!(direct(&run.envelopes[0]), None);
}

/// An Agent with no tools replays: its model call was recorded as offered
/// the (empty) tool list, and a replay can only offer the same empty list
/// (the MCP example before its setup step has no tools).
#[tokio::test]
async fn an_agent_with_no_tools_replays() {
    let h = harness();
    let mut run = h.start(config(
        &[],
        json!({"turns": [{"text": "Nothing to call."}]}),
    ));
    h.run_to_end(&mut run, &VecSink::default()).await;
    let m = model(&run.config);
    let bundle =
        ReplayBundle::from_run(&run, m.tool_schemas(&run.tool_definitions)).expect("bundle");
    assert!(bundle.tool_definitions.is_empty());
    let loaded = ReplayBundle::from_json(&bundle.to_json()).expect("loads");
    let replayed = replay(&h.runtime, &loaded, &NullSink)
        .await
        .expect("replays");
    assert!(outputs_match(&replayed, &run.outputs));
}

#[tokio::test]
async fn an_edited_bundle_diverges_with_the_step_named() {
    let h = harness();
    let (_, bundle) = finished_run(&h).await;
    // Edit the recorded second exchange's conversation and re-seal it, as
    // someone preparing a "what if" bundle would.
    let mut edited = bundle.clone();
    edited.exchanges[1]
        .appended
        .push(node_runtime::model::Message::User {
            text: "extra".into(),
        });
    let mut value = serde_json::to_value(&edited).expect("ser");
    value.as_object_mut().expect("object").remove("integrity");
    edited.integrity = blake3::hash(node_runtime::call_id::canonical_json(&value).as_bytes())
        .to_hex()
        .to_string();
    let loaded = ReplayBundle::from_json(&edited.to_json()).expect("re-sealed bundle loads");
    let err = replay(&h.runtime, &loaded, &NullSink)
        .await
        .expect_err("diverges");
    match err {
        AgentError::ReplayDiverged { step, ref message } => {
            assert_eq!(step, 2, "{message}");
            assert!(
                err.to_string().starts_with("REPLAY_DIVERGED at step 2"),
                "{err}"
            );
            assert!(message.contains("differs"), "{message}");
        }
        other => panic!("expected REPLAY_DIVERGED, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_bundles_are_refused_clearly() {
    let h = harness();
    let (_, bundle) = finished_run(&h).await;
    let text = bundle.to_json();
    assert!(matches!(
        ReplayBundle::from_json(&text[..text.len() / 2]),
        Err(BundleError::NotJson(_))
    ));
    let mut v: Value = serde_json::from_str(&text).expect("json");
    v["format_version"] = json!(99);
    assert!(matches!(
        ReplayBundle::from_json(&v.to_string()),
        Err(BundleError::UnknownVersion { .. })
    ));
    let mut v: Value = serde_json::from_str(&text).expect("json");
    v["outputs"]["response"] = json!("I was edited");
    assert_eq!(
        ReplayBundle::from_json(&v.to_string()),
        Err(BundleError::Tampered)
    );
    let mut v: Value = serde_json::from_str(&text).expect("json");
    v["exchanges"][0]["step"] = json!("one");
    match ReplayBundle::from_json(&v.to_string()) {
        Err(BundleError::Shape { path, .. }) => assert_eq!(path, "exchanges[0].step"),
        other => panic!("{other:?}"),
    }
    assert!(!text.contains("hunter2"));
}

#[tokio::test]
async fn bundles_store_each_message_once() {
    let h = harness();
    let (run, bundle) = finished_run(&h).await;
    let appended: usize = bundle.exchanges.iter().map(|e| e.appended.len()).sum();
    let assistant_messages = run
        .messages
        .iter()
        .filter(|m| matches!(m, node_runtime::model::Message::Assistant { .. }))
        .count();
    // Every other message is stored once in a delta; every assistant message
    // is stored once, as the response of its exchange.
    assert_eq!(appended + assistant_messages, run.messages.len());
    assert_eq!(bundle.exchanges.len(), assistant_messages);
    let rebuilt = node_runtime::agent::replay::conversation_before(&bundle.exchanges);
    assert_eq!(
        rebuilt.as_slice(),
        &run.messages[..run.messages.len() - 1],
        "the last request is rebuilt exactly"
    );
}
