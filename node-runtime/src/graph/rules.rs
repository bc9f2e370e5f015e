//! The graph's rules, written once and used by both the editor (which
//! refuses an edit that breaks them) and validation (which reports a saved
//! graph that breaks them): which output handle may feed which input
//! handle, the JSON types a schema makes certain and when they are
//! compatible, cycles and the order a graph runs in, and the configuration
//! a new node starts from. Pure functions over the graph (wasm-safe).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{json, Value};

use super::{
    AgentNodeConfig, BranchConfig, Condition, FieldSource, HandleRef, InputConfig, Node, NodeKind,
    OutputConfig, Position, TemplateConfig, ToolNodeConfig, Workflow,
};
use crate::agent_config::ProviderConfig;

/// Why an edge may not be drawn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    #[error("there is no node `{0}`")]
    UnknownNode(String),
    #[error("a node cannot feed itself")]
    SelfLoop,
    #[error(transparent)]
    Handle(#[from] HandleError),
    #[error("input `{handle}` of `{node}` is already wired")]
    AlreadyWired { node: String, handle: String },
    #[error("this edge would make a cycle")]
    Cycle,
}

/// An edge names a handle its node does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandleError {
    #[error("`{node}` has no output `{handle}`")]
    UnknownOutput { node: String, handle: String },
    #[error("`{node}` has no input `{handle}`")]
    UnknownInput { node: String, handle: String },
}

/// Whether `from`'s output `source` and `to`'s input `target` exist: the
/// handles an edge may join.
pub fn check_handles(
    from: &Node,
    source: &str,
    to: &Node,
    target: &str,
) -> Result<(), HandleError> {
    if !from.outputs().iter().any(|h| h == source) {
        return Err(HandleError::UnknownOutput {
            node: from.id.clone(),
            handle: source.into(),
        });
    }
    if !to.inputs().iter().any(|h| h == target) {
        return Err(HandleError::UnknownInput {
            node: to.id.clone(),
            handle: target.into(),
        });
    }
    Ok(())
}

/// Whether `source` (an output handle) may be wired to `target` (an input
/// handle) in `doc`: both nodes exist and differ, both handles exist, the
/// input has no edge yet, and the edge closes no cycle.
pub fn can_connect(
    doc: &Workflow,
    source: &HandleRef,
    target: &HandleRef,
) -> Result<(), ConnectError> {
    let from = doc
        .node(&source.node)
        .ok_or_else(|| ConnectError::UnknownNode(source.node.clone()))?;
    let to = doc
        .node(&target.node)
        .ok_or_else(|| ConnectError::UnknownNode(target.node.clone()))?;
    if source.node == target.node {
        return Err(ConnectError::SelfLoop);
    }
    check_handles(from, &source.handle, to, &target.handle)?;
    if doc.edges.iter().any(|e| e.target == *target) {
        return Err(ConnectError::AlreadyWired {
            node: to.id.clone(),
            handle: target.handle.clone(),
        });
    }
    if reaches(doc, &target.node, &source.node) {
        return Err(ConnectError::Cycle);
    }
    Ok(())
}

/// Every input handle `source` may be wired to, in document order.
pub fn connect_targets(doc: &Workflow, source: &HandleRef) -> Vec<HandleRef> {
    doc.nodes
        .iter()
        .flat_map(|n| {
            n.inputs().into_iter().map(|handle| HandleRef {
                node: n.id.clone(),
                handle,
            })
        })
        .filter(|t| can_connect(doc, source, t).is_ok())
        .collect()
}

/// Whether a path of edges leads from node `from` to node `to` (a node
/// reaches itself): an edge `to -> from` would close a cycle.
pub fn reaches(doc: &Workflow, from: &str, to: &str) -> bool {
    let mut stack = vec![from];
    let mut seen = BTreeSet::new();
    while let Some(n) = stack.pop() {
        if n == to {
            return true;
        }
        if seen.insert(n) {
            stack.extend(
                doc.edges
                    .iter()
                    .filter(|e| e.source.node == n)
                    .map(|e| e.target.node.as_str()),
            );
        }
    }
    false
}

/// The nodes Kahn's algorithm can order, in document order where it has a
/// choice; what it cannot order sits on a cycle or below one. Edges to
/// missing nodes are ignored.
fn partial_order(workflow: &Workflow) -> Vec<String> {
    let ids: BTreeSet<&str> = workflow.nodes.iter().map(|n| n.id.as_str()).collect();
    let mut indegree: BTreeMap<&str, usize> = ids.iter().map(|id| (*id, 0)).collect();
    let mut succ: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in &workflow.edges {
        if ids.contains(e.source.node.as_str()) && ids.contains(e.target.node.as_str()) {
            *indegree.entry(e.target.node.as_str()).or_default() += 1;
            succ.entry(e.source.node.as_str())
                .or_default()
                .push(e.target.node.as_str());
        }
    }
    let mut queue: VecDeque<&str> = workflow
        .nodes
        .iter()
        .map(|n| n.id.as_str())
        .filter(|id| indegree[id] == 0)
        .collect();
    let mut order = Vec::new();
    while let Some(id) = queue.pop_front() {
        order.push(id.to_string());
        for next in succ.get(id).into_iter().flatten() {
            if let Some(d) = indegree.get_mut(next) {
                *d -= 1;
                if *d == 0 {
                    queue.push_back(next);
                }
            }
        }
    }
    order
}

/// Node ids in an order where every edge goes forward, or the nodes that
/// cannot be ordered (on a cycle or below one), in document order.
pub fn topological_order(workflow: &Workflow) -> Result<Vec<String>, Vec<String>> {
    let order = partial_order(workflow);
    if order.len() == workflow.nodes.len() {
        Ok(order)
    } else {
        let done: BTreeSet<&String> = order.iter().collect();
        Err(workflow
            .nodes
            .iter()
            .map(|n| n.id.clone())
            .filter(|id| !done.contains(id))
            .collect())
    }
}

/// A coarse JSON type, for the mismatches a schema makes certain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonType {
    Known(&'static str),
    Any,
}

/// The type a JSON Schema declares with a single `type`; anything else
/// could be any value.
pub fn schema_type(schema: Option<&Value>) -> JsonType {
    match schema.and_then(|s| s.get("type")).and_then(Value::as_str) {
        Some("string") => JsonType::Known("string"),
        Some("number") => JsonType::Known("number"),
        Some("integer") => JsonType::Known("integer"),
        Some("boolean") => JsonType::Known("boolean"),
        Some("object") => JsonType::Known("object"),
        Some("array") => JsonType::Known("array"),
        _ => JsonType::Any,
    }
}

/// The type of a value (null could stand for anything).
pub fn value_type(v: &Value) -> JsonType {
    match v {
        Value::String(_) => JsonType::Known("string"),
        Value::Number(n) if n.is_i64() || n.is_u64() => JsonType::Known("integer"),
        Value::Number(_) => JsonType::Known("number"),
        Value::Bool(_) => JsonType::Known("boolean"),
        Value::Object(_) => JsonType::Known("object"),
        Value::Array(_) => JsonType::Known("array"),
        Value::Null => JsonType::Any,
    }
}

/// Whether a value of type `source` may feed a place expecting `target`
/// (an integer is a number).
pub fn compatible(source: JsonType, target: JsonType) -> bool {
    match (source, target) {
        (JsonType::Any, _) | (_, JsonType::Any) => true,
        (JsonType::Known(a), JsonType::Known(b)) => a == b || (a == "integer" && b == "number"),
    }
}

/// The node kinds a new node may have, with their labels, in the order the
/// editor's palette offers them.
pub const NODE_KINDS: [(&str, &str); 6] = [
    ("input", "Input"),
    ("agent", "Agent"),
    ("tool", "Tool"),
    ("template", "Template"),
    ("branch", "Branch"),
    ("output", "Output"),
];

/// `kind` is not one of [`NODE_KINDS`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a node kind")]
pub struct UnknownKind(pub String);

/// A new node of `kind` with a working default configuration.
pub fn new_node(kind: &str, id: String, at: Position) -> Result<Node, UnknownKind> {
    let (label, kind) = match kind {
        "input" => (
            "Input",
            NodeKind::Input(InputConfig {
                schema: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            }),
        ),
        "agent" => (
            "Agent",
            NodeKind::Agent(AgentNodeConfig {
                system_prompt: String::new(),
                prompt: "{{ text }}".into(),
                tools: Vec::new(),
                policy: Default::default(),
                provider: ProviderConfig::Scripted {
                    script: json!({"turns": [{"text": "Scripted answer."}]}).into(),
                },
                params: Default::default(),
                pins: Vec::new(),
            }),
        ),
        "tool" => (
            "Tool",
            NodeKind::Tool(ToolNodeConfig {
                tool: "calculator@1.0.0".into(),
                inputs: [(
                    "expression".to_string(),
                    FieldSource::Fixed {
                        value: json!("1 + 1"),
                    },
                )]
                .into(),
                secret_scope: None,
                output_path: None,
            }),
        ),
        "template" => (
            "Template",
            NodeKind::Template(TemplateConfig {
                template: "{{ value }}".into(),
            }),
        ),
        "branch" => (
            "Branch",
            NodeKind::Branch(BranchConfig {
                pointer: String::new(),
                condition: Condition::Truthy,
            }),
        ),
        "output" => (
            "Output",
            NodeKind::Output(OutputConfig {
                fields: vec!["result".into()],
            }),
        ),
        other => return Err(UnknownKind(other.into())),
    };
    Ok(Node {
        id,
        label: label.into(),
        position: at,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Edge;

    fn h(node: &str, handle: &str) -> HandleRef {
        HandleRef {
            node: node.into(),
            handle: handle.into(),
        }
    }

    /// input1.text -> template1.value -> (template1.text) ; template2, output1 free.
    fn doc() -> Workflow {
        let mut nodes = Vec::new();
        for (kind, id) in [
            ("input", "input1"),
            ("template", "template1"),
            ("template", "template2"),
            ("output", "output1"),
        ] {
            nodes.push(new_node(kind, id.into(), Position::default()).expect("kind"));
        }
        Workflow {
            format_version: 1,
            id: "wf".into(),
            name: "rules".into(),
            description: String::new(),
            revision: 0,
            nodes,
            edges: vec![Edge {
                id: "e1".into(),
                source: h("input1", "text"),
                target: h("template1", "value"),
            }],
        }
    }

    fn check(source: HandleRef, target: HandleRef, expected: Result<(), ConnectError>) {
        assert_eq!(can_connect(&doc(), &source, &target), expected);
    }

    #[test]
    fn connections_follow_the_handle_rules() {
        use ConnectError::*;
        check(h("template1", "text"), h("output1", "result"), Ok(()));
        check(
            h("nowhere", "x"),
            h("output1", "result"),
            Err(UnknownNode("nowhere".into())),
        );
        check(
            h("template1", "text"),
            h("template1", "value"),
            Err(SelfLoop),
        );
        check(
            h("input1", "nope"),
            h("output1", "result"),
            Err(Handle(HandleError::UnknownOutput {
                node: "input1".into(),
                handle: "nope".into(),
            })),
        );
        check(
            h("template1", "text"),
            h("output1", "missing"),
            Err(Handle(HandleError::UnknownInput {
                node: "output1".into(),
                handle: "missing".into(),
            })),
        );
        check(
            h("template2", "text"),
            h("template1", "value"),
            Err(AlreadyWired {
                node: "template1".into(),
                handle: "value".into(),
            }),
        );
    }

    #[test]
    fn an_edge_back_upstream_is_a_cycle() {
        let mut d = doc();
        d.edges.push(Edge {
            id: "e2".into(),
            source: h("template1", "text"),
            target: h("template2", "value"),
        });
        if let NodeKind::Template(t) = &mut d.nodes[1].kind {
            t.template = "{{ value }} {{ other }}".into();
        }
        assert!(reaches(&d, "input1", "template2"));
        assert!(!reaches(&d, "template2", "input1"));
        assert_eq!(
            can_connect(&d, &h("template2", "text"), &h("template1", "other")),
            Err(ConnectError::Cycle)
        );
        assert_eq!(
            topological_order(&d),
            Ok(vec![
                "input1".into(),
                "output1".into(),
                "template1".into(),
                "template2".into()
            ])
        );
        d.edges.push(Edge {
            id: "e3".into(),
            source: h("template2", "text"),
            target: h("template1", "other"),
        });
        assert_eq!(
            topological_order(&d),
            Err(vec!["template1".into(), "template2".into()])
        );
    }

    #[test]
    fn connect_targets_are_the_free_inputs_of_other_nodes() {
        let targets = connect_targets(&doc(), &h("template1", "text"));
        assert_eq!(targets, [h("template2", "value"), h("output1", "result")]);
    }

    #[test]
    fn types_are_compatible_when_a_schema_does_not_rule_it_out() {
        let string = schema_type(Some(&json!({"type": "string"})));
        let number = schema_type(Some(&json!({"type": "number"})));
        assert_eq!(string, JsonType::Known("string"));
        assert_eq!(
            schema_type(Some(&json!({"type": ["string", "null"]}))),
            JsonType::Any
        );
        assert_eq!(schema_type(None), JsonType::Any);
        assert!(compatible(value_type(&json!(3)), number));
        assert!(!compatible(
            value_type(&json!(3.5)),
            JsonType::Known("integer")
        ));
        assert!(!compatible(string, number));
        assert!(compatible(value_type(&Value::Null), number));
    }

    #[test]
    fn every_kind_starts_with_a_valid_config_and_others_are_refused() {
        for (kind, label) in NODE_KINDS {
            let node = new_node(kind, "n".into(), Position::default()).expect("kind");
            assert_eq!((node.kind_name(), node.label.as_str()), (kind, label));
        }
        assert_eq!(
            new_node("nope", "n".into(), Position::default()),
            Err(UnknownKind("nope".into()))
        );
    }
}
