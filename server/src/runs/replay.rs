//! Hermetic replays of recorded runs (a run of kind `replay`) and the
//! recorded-versus-replayed timelines the run page compares.

use super::*;

pub use node_runtime::wire::{ReplayOutcome, ReplayTimeline};

/// The recorded Agent nodes' envelopes in tool order, and the replayed
/// ones as their events came.
pub(super) fn replay_timelines(
    recorded: &node_runtime::graph::engine::WorkflowRun,
    events: Vec<WorkflowEvent>,
) -> BTreeMap<String, ReplayTimeline> {
    let mut timelines: BTreeMap<String, ReplayTimeline> = BTreeMap::new();
    for (id, node) in &recorded.nodes {
        // Agent nodes' handles hold their AgentOutputs (pins beside them).
        let Ok(outputs) =
            serde_json::from_value::<node_runtime::envelope::AgentOutputs>(json!(node.outputs))
        else {
            continue;
        };
        timelines.entry(id.clone()).or_default().recorded = outputs.calls().cloned().collect();
    }
    for event in events {
        if let WorkflowEvent::Agent { node_id, event } = event {
            if let AgentEvent::ToolCallFinished { envelope } = *event {
                timelines
                    .entry(node_id)
                    .or_default()
                    .replayed
                    .push(envelope);
            }
        }
    }
    timelines
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("the bundle is not usable: {0}")]
    BadBundle(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Runs {
    /// Replays a recorded run (`record` as stored, with its workflow)
    /// hermetically, records the replay as a run of kind `replay`, and says
    /// whether it reproduced the outputs.
    pub async fn replay_record(
        &self,
        workspace_id: &str,
        record: &Value,
        replay_of: Option<&str>,
    ) -> Result<ReplayOutcome, ReplayError> {
        let workflow = node_runtime::graph::Workflow::from_value(
            record.get("workflow").unwrap_or(&Value::Null),
        )
        .map_err(|e| ReplayError::BadBundle(format!("workflow: {e}")))?;
        let recorded: node_runtime::graph::engine::WorkflowRun =
            serde_path_to_error::deserialize(record)
                .map_err(|e| ReplayError::BadBundle(format!("at `{}`: {}", e.path(), e.inner())))?;
        let sink = node_runtime::graph::engine::VecWorkflowSink::default();
        let result =
            node_runtime::graph::engine::replay_workflow(&self.agents, &workflow, &recorded, &sink)
                .await;
        let mut diverged_node = None;
        let (matches, divergence, outputs) = match result {
            Ok(outputs) if outputs == recorded.outputs => (true, None, json!(outputs)),
            Ok(outputs) => (
                false,
                Some(format!(
                    "the outputs differ: recorded {} but replayed {}",
                    json!(recorded.outputs),
                    json!(outputs)
                )),
                json!(outputs),
            ),
            Err(e) => {
                if let node_runtime::graph::engine::EngineError::ReplayDiverged { node, .. } = &e {
                    diverged_node = Some(node.clone());
                }
                (false, Some(e.to_string()), Value::Null)
            }
        };
        let events = std::mem::take(&mut *sink.0.lock().unwrap_or_else(|p| p.into_inner()));
        let timelines = replay_timelines(&recorded, events);
        let run_id = new_id();
        self.store
            .create_run(&RunRow {
                kind: RunKind::Replay.as_str().into(),
                replay_of: replay_of.map(str::to_string),
                status: RunStatus::Running.as_str().into(),
                trigger_kind: "replay".into(),
                ..new_run_row(&run_id, workspace_id, &workflow)
            })
            .await?;
        let status = if matches {
            RunStatus::Succeeded
        } else {
            RunStatus::Failed
        };
        self.store
            .finish_run(
                &run_id,
                status.as_str(),
                Some(&outputs),
                divergence.as_deref(),
                None,
            )
            .await?;
        Ok(ReplayOutcome {
            run_id,
            replay_of: replay_of.map(str::to_string),
            matches,
            divergence,
            diverged_node,
            outputs,
            timelines,
        })
    }
}
