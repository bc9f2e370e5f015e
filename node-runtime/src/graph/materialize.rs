//! Materialize as node (seed 003 §8.1): eject one tool call of an Agent
//! node into an explicit Tool node, with exactly that tool@version, input and
//! secret scope, placed beside the agent. A pure function: the agent node is
//! untouched and the previous revision is the undo.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Edge, FieldSource, HandleRef, Node, NodeKind, Position, ToolNodeConfig, Workflow};
use crate::envelope::ToolEnvelope;
use crate::tool_spec::SecretScope;

/// What is being materialized.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A row of the tool timeline.
    CallId(String),
    /// A pinned handle: its downstream edges move to the new node.
    Pin(String),
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MaterializeError {
    #[error("node `{0}` is not an Agent node of this workflow")]
    NotAnAgent(String),
    #[error("the agent has no pinned handle `{0}`")]
    UnknownPin(String),
    #[error("the envelope is for {found}, but {expected} was asked for")]
    Mismatch { expected: String, found: String },
    #[error("the call's input is not an object, so it cannot become fields")]
    InputNotObject,
}

/// The new graph and the id of the Tool node it added.
pub fn materialize(
    workflow: &Workflow,
    agent_id: &str,
    source: &Source,
    envelope: &ToolEnvelope,
    secret_scope: Option<SecretScope>,
) -> Result<(Workflow, String), MaterializeError> {
    let agent = workflow
        .node(agent_id)
        .ok_or_else(|| MaterializeError::NotAnAgent(agent_id.into()))?;
    let NodeKind::Agent(config) = &agent.kind else {
        return Err(MaterializeError::NotAnAgent(agent_id.into()));
    };
    let pin = match source {
        Source::CallId(id) if *id != envelope.call_id => {
            return Err(MaterializeError::Mismatch {
                expected: id.clone(),
                found: envelope.call_id.clone(),
            })
        }
        Source::CallId(_) => None,
        Source::Pin(name) => {
            let pin = config
                .pins
                .iter()
                .find(|p| &p.name == name)
                .ok_or_else(|| MaterializeError::UnknownPin(name.clone()))?;
            if pin.selector.tool != envelope.name {
                return Err(MaterializeError::Mismatch {
                    expected: pin.selector.tool.clone(),
                    found: envelope.name.clone(),
                });
            }
            Some(pin)
        }
    };
    let Value::Object(fields) = envelope.input.value() else {
        return Err(MaterializeError::InputNotObject);
    };
    let inputs: BTreeMap<String, FieldSource> = fields
        .iter()
        .map(|(k, v)| (k.clone(), FieldSource::Fixed { value: v.clone() }))
        .collect();

    let base = format!(
        "{}_{}_{}",
        agent_id,
        envelope.name,
        &envelope.call_id[..envelope.call_id.len().min(8)]
    );
    let mut id = base.clone();
    let mut n = 2;
    while workflow.node(&id).is_some() {
        id = format!("{base}_{n}");
        n += 1;
    }
    // Beside the agent, below any node already there.
    let x = agent.position.x + 320.0;
    let mut y = agent.position.y;
    while workflow
        .nodes
        .iter()
        .any(|n| (n.position.x - x).abs() < 200.0 && (n.position.y - y).abs() < 100.0)
    {
        y += 120.0;
    }
    let label = if agent.label.is_empty() {
        envelope.name.clone()
    } else {
        format!("{} (from {})", envelope.name, agent.label)
    };
    let node = Node {
        id: id.clone(),
        label,
        position: Position { x, y },
        kind: NodeKind::Tool(ToolNodeConfig {
            tool: envelope.tool_ref(),
            inputs,
            secret_scope,
            output_path: pin.and_then(|p| p.path.clone()),
        }),
    };
    let mut out = workflow.clone();
    out.nodes.push(node);
    if let Some(pin) = pin {
        out.edges = out
            .edges
            .into_iter()
            .map(|e| {
                if e.source.node == agent_id && e.source.handle == pin.name {
                    Edge {
                        source: HandleRef {
                            node: id.clone(),
                            handle: "output".into(),
                        },
                        ..e
                    }
                } else {
                    e
                }
            })
            .collect();
    }
    Ok((out, id))
}
