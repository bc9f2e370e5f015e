//! Hermetic replay of a recorded workflow run: Agent nodes re-run from
//! their bundles, Tool nodes answer from their recorded envelopes, pure
//! nodes are recomputed, and any difference is a divergence.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::eval::{agent_handles, collect_outputs, compute, tool_input, tool_outputs};
use super::events::{AgentSink, WorkflowSink};
use super::schedule::{gate, incoming, EngineError, Gate};
use crate::agent::replay::replay;
use crate::agent::AgentRuntime;
use crate::graph::record::{NodeRecord, NodeStatus, WorkflowRun};
use crate::graph::validate::topological_order;
use crate::graph::{NodeKind, Workflow};

/// Re-runs a recorded workflow run hermetically and returns its outputs.
/// Agent nodes' events go to `sink` as they replay (a diverging replay's
/// events stop where it diverged), so a caller can set the replay's tool
/// timeline beside the recorded one.
pub async fn replay_workflow(
    agents: &AgentRuntime,
    workflow: &Workflow,
    recorded: &WorkflowRun,
    sink: &dyn WorkflowSink,
) -> Result<BTreeMap<String, Value>, EngineError> {
    let order = topological_order(workflow).map_err(|_| EngineError::Invalid(Vec::new()))?;
    let incoming = incoming(workflow);
    let mut records: BTreeMap<String, NodeRecord> = BTreeMap::new();
    for id in &order {
        let node = workflow
            .node(id)
            .ok_or_else(|| EngineError::ReplayDiverged {
                node: id.clone(),
                message: "node missing".into(),
            })?;
        let original = recorded
            .nodes
            .get(id)
            .ok_or_else(|| EngineError::ReplayDiverged {
                node: id.clone(),
                message: "no record of this node".into(),
            })?;
        let diverged = |message: String| EngineError::ReplayDiverged {
            node: id.clone(),
            message,
        };
        let edges = incoming.get(id.as_str()).cloned().unwrap_or_default();
        let mut record = original.clone();
        match gate(node, &edges, &records) {
            Gate::Run(inputs)
                if original.status != NodeStatus::Skipped
                    && (original.status != NodeStatus::Failed
                        || !original.inputs.is_empty()
                        || edges.is_empty()) =>
            {
                if inputs != original.inputs && !matches!(node.kind, NodeKind::Input(_)) {
                    return Err(diverged("its inputs differ from the recorded run".into()));
                }
                let outputs = match &node.kind {
                    NodeKind::Agent(c) => match &original.bundle {
                        Some(bundle) => {
                            let node_sink = AgentSink {
                                node_id: id.clone(),
                                inner: sink,
                            };
                            let replayed = replay(agents, bundle, &node_sink)
                                .await
                                .map_err(|e| diverged(e.to_string()))?;
                            let fallbacks = &original.pin_fallbacks;
                            agent_handles(c, &replayed, &|pin| fallbacks.get(pin).cloned())
                                .map_err(diverged)?
                                .handles
                        }
                        None => original.outputs.clone(),
                    },
                    NodeKind::Tool(c) => match &original.envelope {
                        Some(envelope) => {
                            if envelope.input != tool_input(c, &inputs) {
                                return Err(diverged(
                                    "the tool input differs from the recorded call".into(),
                                ));
                            }
                            tool_outputs(c, envelope)
                        }
                        None => original.outputs.clone(),
                    },
                    NodeKind::Input(_) => original.outputs.clone(),
                    _ => compute(node, &inputs, &Map::new())
                        .await
                        .unwrap_or_else(|_| original.outputs.clone()),
                };
                if original.status == NodeStatus::Done && outputs != original.outputs {
                    return Err(diverged("its outputs differ from the recorded run".into()));
                }
                record.outputs = outputs;
            }
            _ => {}
        }
        records.insert(id.clone(), record);
    }
    Ok(collect_outputs(workflow, &records))
}
