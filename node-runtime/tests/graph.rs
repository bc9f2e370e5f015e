//! The workflow graph: format round-trip and malformed input (property
//! tests), pinned handles (every strategy x on_missing), validation
//! diagnostics, and materialize-as-node.

use std::collections::BTreeMap;

use node_runtime::agent_config::{ModelParams, ProviderConfig};
use node_runtime::envelope::{AgentOutputs, ToolEnvelope};
use node_runtime::graph::materialize::{materialize, Source};
use node_runtime::graph::pins::{resolve, PinValue};
use node_runtime::graph::validate::{runnable, validate, Severity};
use node_runtime::graph::*;
use node_runtime::policy::Policy;
use node_runtime::tool_spec::{
    Lifecycle, SecretScope, SideEffects, ToolCategory, ToolMetadata, ToolSpec,
};
use node_runtime::{ErrorCode, ToolError};
use proptest::prelude::*;
use serde_json::{json, Value};

fn spec(name: &str, version: &str, lifecycle: Lifecycle) -> ToolSpec {
    let mut metadata = ToolMetadata::new(ToolCategory::Utility);
    metadata.side_effects = SideEffects::None;
    metadata.lifecycle = lifecycle;
    ToolSpec {
        name: name.into(),
        version: version.into(),
        description: String::new(),
        input_schema: json!({"type": "object", "properties": {"expression": {"type": "string"}, "count": {"type": "integer"}}, "required": ["expression"]}),
        output_schema: json!({"type": "object"}),
        metadata,
    }
}

fn catalog() -> Vec<ToolSpec> {
    vec![
        spec("calculator", "1.0.0", Lifecycle::Active),
        spec("web_search", "1.0.0", Lifecycle::Active),
        spec("old_search", "0.9.0", Lifecycle::Deprecated),
        spec("evil", "1.0.0", Lifecycle::Blocked),
    ]
}

fn node(id: &str, kind: NodeKind) -> Node {
    Node {
        id: id.into(),
        label: id.to_uppercase(),
        position: Position { x: 0.0, y: 0.0 },
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

fn agent(tools: &[(&str, bool)], pins: Vec<PinnedHandle>) -> NodeKind {
    NodeKind::Agent(AgentNodeConfig {
        system_prompt: String::new(),
        prompt: "Weather in {{ city }}?".into(),
        tools: tools
            .iter()
            .map(|(t, e)| ToolSelection {
                tool: t.to_string(),
                enabled: *e,
            })
            .collect(),
        policy: Policy::default(),
        provider: ProviderConfig::Scripted {
            script: json!({"turns": []}).into(),
        },
        params: ModelParams::default(),
        pins,
    })
}

fn pin(name: &str, tool: &str, strategy: PinStrategy, on_missing: OnMissing) -> PinnedHandle {
    PinnedHandle {
        name: name.into(),
        selector: PinSelector {
            tool: tool.into(),
            strategy,
            call_id: None,
        },
        on_missing,
        path: None,
    }
}

/// Input -> Agent (pin "report" on web_search) -> Template <- pin.
fn weather_graph(web_search_enabled: bool) -> Workflow {
    Workflow {
        format_version: WORKFLOW_FORMAT_VERSION,
        id: "wf".into(),
        name: "Weather".into(),
        description: String::new(),
        revision: 1,
        nodes: vec![
            node(
                "in",
                NodeKind::Input(InputConfig {
                    schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
                }),
            ),
            node(
                "agent",
                agent(
                    &[
                        ("web_search@1.0.0", web_search_enabled),
                        ("calculator@1.0.0", true),
                    ],
                    vec![pin(
                        "report",
                        "web_search",
                        PinStrategy::Latest,
                        OnMissing::Null,
                    )],
                ),
            ),
            node(
                "tpl",
                NodeKind::Template(TemplateConfig {
                    template: "Report: {{ report }}".into(),
                }),
            ),
            node(
                "out",
                NodeKind::Output(OutputConfig {
                    fields: vec!["text".into(), "answer".into()],
                }),
            ),
        ],
        edges: vec![
            edge("e1", ("in", "city"), ("agent", "city")),
            edge("e2", ("agent", "report"), ("tpl", "report")),
            edge("e3", ("tpl", "text"), ("out", "text")),
            edge("e4", ("agent", "response"), ("out", "answer")),
        ],
    }
}

#[test]
fn agent_node_has_fixed_outputs_plus_pins() {
    let wf = weather_graph(true);
    let agent = wf.node("agent").expect("agent");
    assert_eq!(
        agent.outputs(),
        vec![
            "response",
            "tools_by_id",
            "tool_order",
            "last_tool",
            "traces_url",
            "report"
        ]
    );
    assert_eq!(agent.inputs(), vec!["city"]);
}

#[test]
fn disabling_the_pinned_tool_keeps_pin_and_edges_with_a_warning() {
    let enabled = weather_graph(true);
    assert!(
        validate(&enabled, &catalog()).is_empty(),
        "{:?}",
        validate(&enabled, &catalog())
    );
    let disabled = weather_graph(false);
    let diags = validate(&disabled, &catalog());
    assert!(runnable(&diags), "a warning, not an error: {diags:?}");
    assert_eq!(diags.len(), 1);
    assert_eq!(
        (
            diags[0].severity,
            diags[0].code.as_str(),
            diags[0].node.as_str(),
            diags[0].handle.as_deref()
        ),
        (
            Severity::Warning,
            "PIN_TOOL_DISABLED",
            "agent",
            Some("report")
        )
    );
    // The handle and its edge are still there.
    assert!(disabled
        .node("agent")
        .expect("agent")
        .outputs()
        .contains(&"report".to_string()));
    assert!(disabled.edges.iter().any(|e| e.source.handle == "report"));
}

#[test]
fn validation_names_node_and_handle_for_each_problem() {
    let mut wf = weather_graph(true);
    wf.nodes.push(node(
        "t1",
        NodeKind::Tool(ToolNodeConfig {
            tool: "nope@1.0.0".into(),
            inputs: BTreeMap::new(),
            secret_scope: None,
            output_path: None,
        }),
    ));
    wf.nodes.push(node(
        "t2",
        NodeKind::Tool(ToolNodeConfig {
            tool: "evil@1.0.0".into(),
            inputs: BTreeMap::from([(
                "expression".into(),
                FieldSource::Fixed { value: json!("1") },
            )]),
            secret_scope: None,
            output_path: None,
        }),
    ));
    wf.nodes.push(node(
        "t3",
        NodeKind::Tool(ToolNodeConfig {
            tool: "old_search@0.9.0".into(),
            inputs: BTreeMap::from([("expression".into(), FieldSource::Fixed { value: json!(5) })]),
            secret_scope: None,
            output_path: None,
        }),
    ));
    wf.nodes.push(node(
        "t4",
        NodeKind::Tool(ToolNodeConfig {
            tool: "calculator@1.0.0".into(),
            inputs: BTreeMap::new(),
            secret_scope: None,
            output_path: None,
        }),
    ));
    wf.nodes.push(node(
        "c1",
        NodeKind::Template(TemplateConfig {
            template: "{{ a }}".into(),
        }),
    ));
    wf.nodes.push(node(
        "c2",
        NodeKind::Template(TemplateConfig {
            template: "{{ text }}".into(),
        }),
    ));
    wf.nodes.push(node(
        "calc",
        NodeKind::Tool(ToolNodeConfig {
            tool: "calculator@1.0.0".into(),
            inputs: BTreeMap::from([
                (
                    "expression".into(),
                    FieldSource::Fixed { value: json!("1") },
                ),
                ("count".into(), FieldSource::Wired),
            ]),
            secret_scope: None,
            output_path: None,
        }),
    ));
    wf.edges
        .push(edge("x1", ("ghost", "out"), ("tpl", "report")));
    wf.edges
        .push(edge("x2", ("agent", "no_such_handle"), ("c1", "a")));
    wf.edges.push(edge("x3", ("c1", "text"), ("c2", "text")));
    wf.edges.push(edge("x4", ("c2", "text"), ("c1", "a")));
    wf.edges
        .push(edge("x5", ("agent", "response"), ("calc", "count")));
    let diags = validate(&wf, &catalog());
    let find = |code: &str, node: &str| {
        diags
            .iter()
            .find(|d| d.code == code && d.node == node)
            .unwrap_or_else(|| panic!("no {code} on {node}: {diags:#?}"))
    };
    assert_eq!(find("UNKNOWN_TOOL", "t1").severity, Severity::Error);
    assert_eq!(
        find("MISSING_FIELD", "t4").handle.as_deref(),
        Some("expression")
    );
    assert_eq!(find("TOOL_BLOCKED", "t2").severity, Severity::Error);
    assert_eq!(find("TOOL_DEPRECATED", "t3").severity, Severity::Warning);
    assert_eq!(
        find("TYPE_MISMATCH", "t3").handle.as_deref(),
        Some("expression")
    );
    assert_eq!(
        find("DANGLING_EDGE", "ghost").handle.as_deref(),
        Some("out")
    );
    assert_eq!(
        find("UNKNOWN_HANDLE", "agent").handle.as_deref(),
        Some("no_such_handle")
    );
    assert_eq!(find("CYCLE", "c1").severity, Severity::Error);
    assert_eq!(find("CYCLE", "c2").severity, Severity::Error);
    assert_eq!(
        find("TYPE_MISMATCH", "calc").handle.as_deref(),
        Some("count")
    );
    assert!(!runnable(&diags));
}

fn envelope(id: &str, name: &str, output: Value, error: bool) -> ToolEnvelope {
    ToolEnvelope {
        call_id: id.into(),
        name: name.into(),
        version: "1.0.0".into(),
        input: json!({"q": id}).into(),
        output: if error { Value::Null } else { output }.into(),
        error: error.then(|| ToolError::new(ErrorCode::Timeout, "slow")),
        t_start: "2026-11-22T00:00:00.000Z".into(),
        t_end: "2026-11-22T00:00:00.001Z".into(),
        cached: false,
        truncated: false,
        attachments: vec![],
        replayed: false,
    }
}

fn outputs(calls: Vec<ToolEnvelope>) -> AgentOutputs {
    let mut o = AgentOutputs::default();
    for c in calls {
        o.record(c);
    }
    o
}

#[test]
fn every_strategy_with_every_on_missing() {
    // web_search: a ok, b failed, c ok; calculator: d.
    let full = outputs(vec![
        envelope(
            "a",
            "web_search",
            json!({"t": "A", "deep": {"x": 1}}),
            false,
        ),
        envelope("b", "web_search", json!(null), true),
        envelope("d", "calculator", json!(4), false),
        envelope("c", "web_search", json!({"t": "C"}), false),
    ]);
    let none = outputs(vec![envelope("d", "calculator", json!(4), false)]);
    let only_failed = outputs(vec![envelope("b", "web_search", json!(null), true)]);
    let stale = || Some(json!("from an earlier run"));
    for on_missing in [
        OnMissing::Null,
        OnMissing::Error,
        OnMissing::StaleLastSuccess,
    ] {
        let mk = |strategy, call_id: Option<&str>| {
            let mut p = pin("p", "web_search", strategy, on_missing);
            p.selector.call_id = call_id.map(str::to_string);
            p
        };
        // Found cases do not depend on on_missing.
        assert_eq!(
            resolve(&mk(PinStrategy::Latest, None), &full, stale),
            Ok(PinValue::Found(json!({"t": "C"})))
        );
        assert_eq!(
            resolve(&mk(PinStrategy::FirstSuccess, None), &full, stale),
            Ok(PinValue::Found(json!({"t": "A", "deep": {"x": 1}})))
        );
        assert_eq!(
            resolve(&mk(PinStrategy::ByCallId, Some("c")), &full, stale),
            Ok(PinValue::Found(json!({"t": "C"})))
        );
        // latest = the last call even if it failed: null, found.
        assert_eq!(
            resolve(&mk(PinStrategy::Latest, None), &only_failed, stale),
            Ok(PinValue::Found(Value::Null))
        );
        assert_eq!(
            resolve(&mk(PinStrategy::ByCallId, Some("b")), &full, stale),
            Ok(PinValue::Found(Value::Null))
        );
        // Missing cases follow on_missing.
        let missing_cases = [
            (mk(PinStrategy::Latest, None), &none),
            (mk(PinStrategy::FirstSuccess, None), &only_failed),
            (mk(PinStrategy::ByCallId, Some("zzz")), &full),
            (mk(PinStrategy::ByCallId, Some("d")), &full), // a calculator call is not web_search
        ];
        for (p, outs) in missing_cases {
            let got = resolve(&p, outs, stale);
            match on_missing {
                OnMissing::Null => assert_eq!(got, Ok(PinValue::Missing(Value::Null))),
                OnMissing::StaleLastSuccess => {
                    assert_eq!(got, Ok(PinValue::Missing(json!("from an earlier run"))))
                }
                OnMissing::Error => {
                    let err = got.expect_err("fails the node");
                    assert_eq!(err.pin, "p");
                    assert!(err.to_string().contains("`p`"));
                }
            }
        }
        // stale_last_success without any earlier value gives null.
        if on_missing == OnMissing::StaleLastSuccess {
            assert_eq!(
                resolve(&mk(PinStrategy::Latest, None), &none, || None),
                Ok(PinValue::Missing(Value::Null))
            );
        }
    }
    // A call the policy refused because the tool is disabled never ran: missing.
    let mut denied = envelope("x", "web_search", json!(null), true);
    denied.error = Some(
        ToolError::new(ErrorCode::PolicyDenied, "not enabled")
            .with_details(json!({"reason": "NOT_ENABLED"})),
    );
    let p = pin(
        "p",
        "web_search",
        PinStrategy::Latest,
        OnMissing::StaleLastSuccess,
    );
    assert_eq!(
        resolve(&p, &outputs(vec![denied]), || Some(json!(7))),
        Ok(PinValue::Missing(json!(7)))
    );

    // A path into the output; a path that is absent counts as missing.
    let mut p = pin(
        "p",
        "web_search",
        PinStrategy::FirstSuccess,
        OnMissing::Null,
    );
    p.path = Some("/deep/x".into());
    assert_eq!(resolve(&p, &full, || None), Ok(PinValue::Found(json!(1))));
    p.path = Some("/nope".into());
    assert_eq!(
        resolve(&p, &full, || None),
        Ok(PinValue::Missing(Value::Null))
    );
}

#[test]
fn materialize_from_a_timeline_row_and_from_a_pin() {
    let wf = weather_graph(true);
    let env = envelope("abcdef1234", "web_search", json!({"t": "x"}), false);
    let (from_row, id) = materialize(
        &wf,
        "agent",
        &Source::CallId("abcdef1234".into()),
        &env,
        Some(SecretScope::Workspace),
    )
    .expect("row");
    let new = from_row.node(&id).expect("new node");
    match &new.kind {
        NodeKind::Tool(c) => {
            assert_eq!(c.tool, "web_search@1.0.0");
            assert_eq!(
                c.inputs.get("q"),
                Some(&FieldSource::Fixed {
                    value: json!("abcdef1234")
                })
            );
            assert_eq!(c.secret_scope, Some(SecretScope::Workspace));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(new.position.x, 320.0);
    assert_eq!(
        from_row.node("agent"),
        wf.node("agent"),
        "the agent is untouched"
    );
    assert_eq!(from_row.edges, wf.edges, "a timeline row moves no edges");

    let (from_pin, id) =
        materialize(&wf, "agent", &Source::Pin("report".into()), &env, None).expect("pin");
    let moved = from_pin.edges.iter().find(|e| e.id == "e2").expect("e2");
    assert_eq!(
        (moved.source.node.as_str(), moved.source.handle.as_str()),
        (id.as_str(), "output")
    );
    assert_eq!(from_pin.node("agent"), wf.node("agent"));
    assert!(validate(&from_pin, &catalog())
        .iter()
        .all(|d| d.code != "UNKNOWN_HANDLE"));

    assert!(materialize(&wf, "tpl", &Source::CallId("abcdef1234".into()), &env, None).is_err());
    assert!(materialize(&wf, "agent", &Source::Pin("nope".into()), &env, None).is_err());
    assert!(materialize(&wf, "agent", &Source::CallId("other".into()), &env, None).is_err());
}

#[test]
fn malformed_workflows_name_the_path() {
    let good = weather_graph(true).to_json();
    let check = |edit: &dyn Fn(&mut Value), expected_path: &str| {
        let mut v: Value = serde_json::from_str(&good).expect("json");
        edit(&mut v);
        match Workflow::from_value(&v) {
            Err(WorkflowError::Invalid { path, message }) => {
                assert!(path.starts_with(expected_path), "{path} / {message}")
            }
            other => panic!("expected an error at {expected_path}, got {other:?}"),
        }
    };
    check(
        &|v| v["nodes"][0]["position"]["x"] = json!("left"),
        "nodes[0]",
    );
    check(&|v| v["nodes"][1]["kind"] = json!("quantum"), "nodes[1]");
    check(&|v| v["nodes"][2]["id"] = json!("in"), "nodes[2].id");
    check(&|v| v["edges"][0]["source"] = json!(5), "edges[0].source");
    check(&|v| v["name"] = json!(["x"]), "name");
    assert!(matches!(
        Workflow::from_json("{\"format_version\": 2}"),
        Err(WorkflowError::UnknownVersion { .. })
    ));
    assert!(matches!(
        Workflow::from_json("{"),
        Err(WorkflowError::NotJson(_))
    ));
    assert_eq!(
        Workflow::from_json(&good).expect("good parses"),
        weather_graph(true)
    );
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z_]{0,8}".prop_map(Value::String),
        Just(json!("agent")),
        Just(json!(1)),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("format_version".to_string()),
                    Just("nodes".to_string()),
                    Just("edges".to_string()),
                    Just("kind".to_string()),
                    Just("config".to_string()),
                    Just("id".to_string()),
                    "[a-z]{1,6}"
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arb_workflow() -> impl Strategy<Value = Workflow> {
    let kinds = prop_oneof![
        Just(NodeKind::Input(InputConfig {
            schema: json!({"type": "object", "properties": {"a": {"type": "string"}}})
        })),
        Just(agent(
            &[("calculator@1.0.0", true)],
            vec![pin(
                "p",
                "calculator",
                PinStrategy::FirstSuccess,
                OnMissing::StaleLastSuccess
            )]
        )),
        Just(NodeKind::Template(TemplateConfig {
            template: "{{ a }} and {{ b }}".into()
        })),
        Just(NodeKind::Branch(BranchConfig {
            pointer: "/error/code".into(),
            condition: Condition::Equals {
                value: json!("VALIDATION_ERROR")
            }
        })),
        Just(NodeKind::Output(OutputConfig {
            fields: vec!["x".into()]
        })),
        Just(NodeKind::Tool(ToolNodeConfig {
            tool: "calculator@1.0.0".into(),
            inputs: BTreeMap::from([("expression".into(), FieldSource::Wired)]),
            secret_scope: Some(SecretScope::Org),
            output_path: Some("/result".into())
        })),
    ];
    (
        prop::collection::vec(
            (
                kinds,
                -1000.0f64..1000.0,
                -1000.0f64..1000.0,
                "[a-z ]{0,10}",
            ),
            0..8,
        ),
        0u64..100,
    )
        .prop_map(|(nodes, revision)| {
            let nodes: Vec<Node> = nodes
                .into_iter()
                .enumerate()
                .map(|(i, (kind, x, y, label))| Node {
                    id: format!("n{i}"),
                    label,
                    position: Position { x, y },
                    kind,
                })
                .collect();
            let edges = nodes
                .windows(2)
                .enumerate()
                .map(|(i, w)| edge(&format!("e{i}"), (&w[0].id, "out"), (&w[1].id, "in")))
                .collect();
            Workflow {
                format_version: WORKFLOW_FORMAT_VERSION,
                id: "wf".into(),
                name: "random".into(),
                description: String::new(),
                revision,
                nodes,
                edges,
            }
        })
}

proptest! {
    #[test]
    fn workflow_json_round_trips(wf in arb_workflow()) {
        let text = wf.to_json();
        let back = Workflow::from_json(&text).expect("own output parses");
        prop_assert_eq!(back, wf);
    }

    #[test]
    fn random_json_never_panics(v in arb_json()) {
        let _ = Workflow::from_value(&v);
        if let Ok(wf) = Workflow::from_value(&v) {
            let _ = validate(&wf, &catalog());
        }
    }

    #[test]
    fn validation_never_panics_on_random_graphs(wf in arb_workflow()) {
        let _ = validate(&wf, &catalog());
    }
}

#[test]
fn a_pin_path_that_is_not_a_json_pointer_is_an_error_naming_the_pin() {
    let mut wf = weather_graph(true);
    config_path(&mut wf, "temperature");
    let diags = validate(&wf, &catalog());
    assert!(!runnable(&diags), "{diags:?}");
    let d = diags
        .iter()
        .find(|d| d.code == "PIN_PATH")
        .expect("PIN_PATH");
    assert_eq!(
        (d.node.as_str(), d.handle.as_deref()),
        ("agent", Some("report"))
    );
    assert!(d.message.contains("`temperature`"), "{}", d.message);
    config_path(&mut wf, "/temperature");
    assert!(validate(&wf, &catalog()).is_empty());
}

/// Sets the path of the agent's first pin.
fn config_path(wf: &mut Workflow, path: &str) {
    if let Some(NodeKind::Agent(config)) = wf
        .nodes
        .iter_mut()
        .find(|n| n.id == "agent")
        .map(|n| &mut n.kind)
    {
        config.pins[0].path = Some(path.into());
    }
}

/// A fixed Tool-node value the call would refuse is named by the validator
/// with the executor's own JSON Schema rules, before anything runs.
#[cfg(feature = "runtime")]
#[test]
fn fixed_tool_inputs_are_checked_against_the_tools_schema() {
    let mut strict = spec("forecast", "1.0.0", Lifecycle::Active);
    strict.input_schema = json!({"type": "object", "properties": {
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "units": {"enum": ["metric", "imperial"]},
        "where": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]},
        "city": {"type": "string"}
    }, "required": ["city"]});
    let fixed = |v: Value| FieldSource::Fixed { value: v };
    let tool_node = |inputs: Vec<(&str, FieldSource)>| Workflow {
        format_version: WORKFLOW_FORMAT_VERSION,
        id: "w".into(),
        name: "w".into(),
        description: String::new(),
        revision: 0,
        nodes: vec![node(
            "t",
            NodeKind::Tool(ToolNodeConfig {
                tool: "forecast@1.0.0".into(),
                inputs: inputs
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
                secret_scope: None,
                output_path: None,
            }),
        )],
        edges: vec![],
    };
    let catalog = vec![strict];
    let ok = tool_node(vec![
        ("city", FieldSource::Wired),
        ("days", fixed(json!(3))),
        ("units", fixed(json!("metric"))),
        ("where", fixed(json!({"lat": 52.5}))),
    ]);
    let diags = validate(&ok, &catalog);
    assert!(diags.iter().all(|d| d.code != "FIELD_INVALID"), "{diags:?}");
    let bad = tool_node(vec![
        ("city", FieldSource::Wired),
        ("days", fixed(json!(0))),
        ("units", fixed(json!("kelvin"))),
        ("where", fixed(json!({"lon": 1}))),
    ]);
    let diags = validate(&bad, &catalog);
    let invalid: Vec<(&str, &str)> = diags
        .iter()
        .filter(|d| d.code == "FIELD_INVALID")
        .map(|d| (d.handle.as_deref().unwrap_or_default(), d.message.as_str()))
        .collect();
    assert_eq!(invalid.len(), 3, "{invalid:?}");
    let says = |field: &str| {
        invalid
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, m)| *m)
            .unwrap_or_default()
    };
    assert!(says("days").contains("minimum of 1"), "{invalid:?}");
    assert!(says("units").contains("kelvin"), "{invalid:?}");
    assert!(
        says("where").contains("\"lat\" is a required property"),
        "{invalid:?}"
    );
    assert!(diags
        .iter()
        .filter(|d| d.code == "FIELD_INVALID")
        .all(|d| d.severity == Severity::Error));
    // A value of the wrong type is named once, as TYPE_MISMATCH.
    let typed = tool_node(vec![
        ("city", FieldSource::Wired),
        ("days", fixed(json!("three"))),
    ]);
    let codes: Vec<String> = validate(&typed, &catalog)
        .into_iter()
        .filter(|d| d.handle.as_deref() == Some("days"))
        .map(|d| d.code)
        .collect();
    assert_eq!(codes, ["TYPE_MISMATCH"]);
}

/// `policy.max_parallel_calls` outside 1 to 64 is an error naming the field
/// (the API saves the workflow with it; a run is refused), not a value the
/// executor silently clamps.
#[test]
fn max_parallel_calls_out_of_range_is_an_error_naming_the_field() {
    let set = |n: u32| {
        let mut wf = weather_graph(true);
        for node in &mut wf.nodes {
            if let NodeKind::Agent(c) = &mut node.kind {
                c.policy.max_parallel_calls = n;
            }
        }
        validate(&wf, &catalog())
    };
    for n in [0, 65, 1000] {
        let diags = set(n);
        assert!(!runnable(&diags), "{n}: {diags:?}");
        let d = diags
            .iter()
            .find(|d| d.code == "POLICY_INVALID")
            .expect("POLICY_INVALID");
        assert_eq!(d.node, "agent");
        assert!(
            d.message
                .starts_with("max_parallel_calls: a whole number from 1 to 64"),
            "{}",
            d.message
        );
        assert!(d.message.ends_with(&format!("not {n}")), "{}", d.message);
    }
    for n in [1, 8, 64] {
        assert!(set(n).is_empty(), "{n}");
    }
}
