//! The end-of-run record: final status, outputs, node rows, bundles and
//! pin values, from the engine's result.

use super::*;

/// A run's stored record: the engine's account of the run and the
/// workflow it ran.
#[derive(serde::Serialize)]
pub(super) struct RunRecord<'a> {
    #[serde(flatten)]
    pub(super) run: &'a node_runtime::graph::engine::WorkflowRun,
    pub(super) workflow: &'a Workflow,
}

/// The end of a run to store, from what the engine returned, without its
/// record (the run's task writes that cut: [`RunEnd::write_record`] of a
/// [`RunRecord`]). `pins`: the
/// pins the run resolved, stored as its workflow's pin history; none for a
/// fork (its pins resolve for itself, but it is an experiment on a past
/// run, not a run of the workflow: later runs never fall back on it).
pub(super) fn end_of(
    run_id: &str,
    workflow: &Workflow,
    result: &mut Result<
        node_runtime::graph::engine::WorkflowRun,
        node_runtime::graph::engine::EngineError,
    >,
    pins: Option<&MemoryPinHistory>,
    checkpointed: &HashMap<String, Checkpointed>,
) -> RunEnd {
    // A node's outputs and bundle: left empty when its checkpoint cut them
    // out as payloads, which the end refers to instead (`Checkpointed::lend`
    // puts the reference in their place; a copy of their text, megabytes
    // for a long run, would only be dropped there), else written now.
    let cut = |node: &str, key: &str| checkpointed.get(node).is_some_and(|c| c.cut(key));
    match result {
        Ok(run) => {
            let trace_id = crate::trace::trace_id(run_id);
            let nodes = run
                .nodes
                .values()
                .map(|n| NodeRunRow {
                    run_id: run_id.to_string(),
                    node_id: n.node_id.clone(),
                    status: word(n.status),
                    error: n.error.clone(),
                    outputs: if cut(&n.node_id, "outputs") {
                        String::new()
                    } else {
                        serde_json::to_string(&n.outputs).unwrap_or_default()
                    },
                    started_at: n.started_at.clone(),
                    finished_at: n.finished_at.clone(),
                    trace_id: Some(trace_id.clone()),
                    outputs_refs: None,
                })
                .collect();
            // Each agent bundle is stored once, in `replay_bundles`; the
            // record goes without them (`Store::run_record` puts them back).
            let bundles = run
                .nodes
                .iter_mut()
                .filter_map(|(id, r)| {
                    let bundle = r.bundle.take()?;
                    let text = if cut(id, "bundle") {
                        String::new()
                    } else {
                        bundle.to_json()
                    };
                    Some((id.clone(), text, None))
                })
                .collect();
            let mut pin_values = Vec::new();
            for node in &workflow.nodes {
                if let (NodeKind::Agent(c), Some(pins)) = (&node.kind, pins) {
                    for pin in &c.pins {
                        if let Some(v) = pins.last_resolved(&workflow.id, &node.id, &pin.name) {
                            pin_values.push((
                                workflow.id.clone(),
                                node.id.clone(),
                                pin.name.clone(),
                                v.to_string(),
                            ));
                        }
                    }
                }
            }
            let status = match run.outcome {
                RunOutcome::Succeeded => RunStatus::Succeeded,
                RunOutcome::Failed => RunStatus::Failed,
                RunOutcome::Cancelled => RunStatus::Cancelled,
            };
            let error = run.nodes.values().find_map(|n| {
                n.error
                    .clone()
                    .filter(|_| n.status == node_runtime::graph::engine::NodeStatus::Failed)
            });
            RunEnd {
                run_id: run_id.into(),
                status: status.as_str().into(),
                outputs: serde_json::to_string(&run.outputs).ok(),
                error,
                nodes,
                bundles,
                pins: pin_values,
                ..RunEnd::default()
            }
        }
        Err(e) => RunEnd {
            run_id: run_id.into(),
            status: RunStatus::Failed.as_str().into(),
            error: Some(e.to_string()),
            ..RunEnd::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use node_runtime::graph::engine::{EngineError, NodeRecord, NodeStatus, WorkflowRun};

    fn workflow() -> Workflow {
        Workflow::from_json(
            r#"{"format_version": 1, "id": "wf", "name": "w", "nodes": [], "edges": []}"#,
        )
        .expect("an empty workflow")
    }

    fn run(outcome: RunOutcome, failed_node: Option<&str>) -> WorkflowRun {
        let mut nodes = BTreeMap::new();
        if let Some(error) = failed_node {
            nodes.insert(
                "n".to_string(),
                NodeRecord {
                    node_id: "n".into(),
                    status: NodeStatus::Failed,
                    inputs: BTreeMap::new(),
                    outputs: BTreeMap::new(),
                    error: Some(error.into()),
                    started_at: "t0".into(),
                    finished_at: "t1".into(),
                    bundle: None,
                    envelope: None,
                    pin_fallbacks: BTreeMap::new(),
                },
            );
        }
        WorkflowRun {
            run_id: "r".into(),
            workflow_id: "wf".into(),
            outcome,
            outputs: BTreeMap::new(),
            nodes,
        }
    }

    /// The stored status, error and node rows of one engine result.
    fn check(
        mut result: Result<WorkflowRun, EngineError>,
        status: &str,
        error: Option<&str>,
        nodes: usize,
    ) {
        let end = end_of(
            "r",
            &workflow(),
            &mut result,
            Some(&MemoryPinHistory::default()),
            &HashMap::new(),
        );
        assert_eq!(
            (end.status.as_str(), end.error.as_deref(), end.nodes.len()),
            (status, error, nodes)
        );
        assert_eq!(
            end.status.parse::<RunStatus>().map(RunStatus::is_final),
            Ok(true)
        );
    }

    #[test]
    fn the_outcome_decides_the_stored_status() {
        check(Ok(run(RunOutcome::Succeeded, None)), "succeeded", None, 0);
        check(Ok(run(RunOutcome::Cancelled, None)), "cancelled", None, 0);
        check(
            Ok(run(RunOutcome::Failed, Some("boom"))),
            "failed",
            Some("boom"),
            1,
        );
        check(
            Err(EngineError::BadInput {
                field: "q".into(),
                message: "missing".into(),
            }),
            "failed",
            Some("input `q`: missing"),
            0,
        );
    }
}
