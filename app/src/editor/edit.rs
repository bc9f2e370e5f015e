//! Every change to the editor's document as an [`Edit`], and applying one
//! to a workflow. A refused edit changes nothing. The graph's rules (which
//! handles may be wired, cycles, a new node's defaults) are node-runtime's
//! `graph::rules`, the same ones validation reports with.

use std::collections::HashMap;

use node_runtime::envelope::ToolEnvelope;
use node_runtime::graph::materialize::{materialize, Source};
use node_runtime::graph::rules;
use node_runtime::graph::{Edge, HandleRef, Node, NodeKind, Position, Workflow};
use node_runtime::tool_spec::SecretScope;

/// The node kinds the palette offers.
pub const PALETTE: [(&str, &str); 6] = rules::NODE_KINDS;

/// One change to the document.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    AddNode {
        kind: String,
        at: Position,
    },
    /// Moves nodes by a delta (a whole drag, or an arrow key).
    Move {
        ids: Vec<String>,
        dx: f64,
        dy: f64,
    },
    Connect {
        source: HandleRef,
        target: HandleRef,
    },
    /// Removes nodes (with their edges) and edges.
    Delete {
        nodes: Vec<String>,
        edges: Vec<String>,
    },
    /// Adds copies of nodes and the edges among them, under fresh ids,
    /// shifted by (dx, dy) (paste).
    Paste {
        clip: Clip,
        dx: f64,
        dy: f64,
    },
    Rename {
        node: String,
        label: String,
    },
    /// Renames an Agent node's pinned handle and the edges that leave it.
    RenamePin {
        node: String,
        from: String,
        to: String,
    },
    /// Ejects one tool call of an Agent node into a Tool node beside it
    /// (seed 003 §8.1, `graph::materialize`); the new node's id is returned.
    Materialize {
        agent: String,
        source: Source,
        envelope: Box<ToolEnvelope>,
        secret_scope: Option<SecretScope>,
    },
    /// Replaces a node's kind and config (the configuration panel);
    /// wires at handles it no longer has go.
    SetKind {
        node: String,
        kind: Box<NodeKind>,
    },
}

/// Copied nodes and the edges between them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Clip {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
}

/// Why an edit was refused, in words for the user.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EditError {
    #[error("there is no node `{0}`")]
    UnknownNode(String),
    #[error("`{0}` is not a node kind")]
    UnknownKind(String),
    #[error("{0}")]
    Refused(String),
}

/// Every input handle `source` may be wired to, in document order: what
/// the keyboard's "Connect" list offers.
pub fn connect_targets(doc: &Workflow, source: &HandleRef) -> Vec<HandleRef> {
    rules::connect_targets(doc, source)
}

/// Whether `source` (an output handle) may be wired to `target` (an input
/// handle); the reason when not.
pub fn can_connect(doc: &Workflow, source: &HandleRef, target: &HandleRef) -> Result<(), String> {
    rules::can_connect(doc, source, target).map_err(|e| e.to_string())
}

/// A new node of `kind` with a working default configuration.
pub fn new_node(kind: &str, id: String, at: Position) -> Result<Node, EditError> {
    rules::new_node(kind, id, at).map_err(|rules::UnknownKind(kind)| EditError::UnknownKind(kind))
}

fn fresh_id(doc: &Workflow, prefix: &str) -> String {
    (1..)
        .map(|i| format!("{prefix}{i}"))
        .find(|id| doc.node(id).is_none() && !doc.edges.iter().any(|e| e.id == *id))
        .unwrap_or_else(|| prefix.to_string())
}

/// Applies an edit to the document; `index` is the id -> position table of
/// `doc.nodes` as it is before the edit.
pub(super) fn apply_to(
    doc: &mut Workflow,
    index: &HashMap<String, usize>,
    edit: &Edit,
) -> Result<Option<String>, EditError> {
    match edit {
        Edit::AddNode { kind, at } => {
            let id = fresh_id(doc, kind);
            doc.nodes.push(new_node(kind, id.clone(), *at)?);
            Ok(Some(id))
        }
        Edit::Move { ids, dx, dy } => {
            // All or nothing: check every id before moving any.
            if let Some(missing) = ids.iter().find(|id| !index.contains_key(*id)) {
                return Err(EditError::UnknownNode(missing.clone()));
            }
            for id in ids {
                let p = &mut doc.nodes[index[id]].position;
                p.x += dx;
                p.y += dy;
            }
            Ok(None)
        }
        Edit::Connect { source, target } => {
            can_connect(doc, source, target).map_err(EditError::Refused)?;
            let id = fresh_id(doc, "e");
            doc.edges.push(Edge {
                id,
                source: source.clone(),
                target: target.clone(),
            });
            Ok(None)
        }
        Edit::Delete { nodes, edges } => {
            for n in nodes {
                if doc.node(n).is_none() {
                    return Err(EditError::UnknownNode(n.clone()));
                }
            }
            doc.nodes.retain(|n| !nodes.contains(&n.id));
            doc.edges.retain(|e| {
                !edges.contains(&e.id)
                    && !nodes.contains(&e.source.node)
                    && !nodes.contains(&e.target.node)
            });
            Ok(None)
        }
        Edit::Paste { clip, dx, dy } => {
            let mut renamed = HashMap::new();
            for n in &clip.nodes {
                let id = fresh_id(doc, n.kind_name());
                renamed.insert(n.id.clone(), id.clone());
                let mut copy = n.clone();
                copy.id = id;
                copy.position.x += dx;
                copy.position.y += dy;
                doc.nodes.push(copy);
            }
            for e in &clip.edges {
                let (Some(s), Some(t)) = (renamed.get(&e.source.node), renamed.get(&e.target.node))
                else {
                    continue;
                };
                let id = fresh_id(doc, "e");
                doc.edges.push(Edge {
                    id,
                    source: HandleRef {
                        node: s.clone(),
                        handle: e.source.handle.clone(),
                    },
                    target: HandleRef {
                        node: t.clone(),
                        handle: e.target.handle.clone(),
                    },
                });
            }
            Ok(None)
        }
        Edit::Rename { node, label } => {
            let n = doc
                .nodes
                .iter_mut()
                .find(|n| n.id == *node)
                .ok_or_else(|| EditError::UnknownNode(node.clone()))?;
            n.label = label.clone();
            Ok(None)
        }
        Edit::RenamePin { node, from, to } => {
            let n = index
                .get(node)
                .map(|i| &mut doc.nodes[*i])
                .ok_or_else(|| EditError::UnknownNode(node.clone()))?;
            let NodeKind::Agent(config) = &mut n.kind else {
                return Err(EditError::Refused(format!("`{node}` is not an Agent node")));
            };
            node_runtime::graph::pins::check_name(to)
                .map_err(|e| EditError::Refused(format!("name: {e}")))?;
            if node_runtime::graph::AGENT_OUTPUTS.contains(&to.as_str())
                || config.pins.iter().any(|p| p.name == *to && p.name != *from)
            {
                return Err(EditError::Refused(format!(
                    "name: `{to}` is already an output of this node"
                )));
            }
            let pin = config
                .pins
                .iter_mut()
                .find(|p| p.name == *from)
                .ok_or_else(|| EditError::Refused(format!("there is no pin `{from}`")))?;
            pin.name = to.clone();
            for e in &mut doc.edges {
                if e.source.node == *node && e.source.handle == *from {
                    e.source.handle = to.clone();
                }
            }
            Ok(None)
        }
        Edit::Materialize {
            agent,
            source,
            envelope,
            secret_scope,
        } => {
            let (next, id) = materialize(doc, agent, source, envelope, *secret_scope)
                .map_err(|e| EditError::Refused(e.to_string()))?;
            *doc = next;
            Ok(Some(id))
        }
        Edit::SetKind { node, kind } => {
            let n = doc
                .nodes
                .iter_mut()
                .find(|n| n.id == *node)
                .ok_or_else(|| EditError::UnknownNode(node.clone()))?;
            n.kind = (**kind).clone();
            // Wires at handles the new config no longer has (a removed
            // field, a template variable gone) go with them; undo brings
            // both back. While a template's variables are not known (see
            // `crate::templates`), its node keeps every wire in.
            let (inputs, outputs) = (n.known_inputs(), n.outputs());
            doc.edges.retain(|e| {
                (e.target.node != *node
                    || inputs.as_ref().is_none_or(|i| i.contains(&e.target.handle)))
                    && (e.source.node != *node || outputs.contains(&e.source.handle))
            });
            Ok(None)
        }
    }
}
