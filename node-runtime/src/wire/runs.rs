//! Runs as the API shows them: the list item, the detail with each node's
//! record, the answers of start and cancel, and hermetic replays' outcome.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{RunKind, RunStatus};

/// Body of `POST /api/v1/runs` (202): the run id; the run proceeds in the
/// background.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunStarted {
    pub run_id: String,
    pub status: RunStatus,
}

/// Body of `GET /api/v1/runs`: one page of runs, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunList {
    pub runs: Vec<RunItem>,
    /// Pass as `cursor` for the next page; null on the last page.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// One row of [`RunList`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunItem {
    pub id: String,
    /// Null for the replay of an uploaded bundle.
    pub workflow_id: Option<String>,
    pub kind: RunKind,
    pub status: RunStatus,
    /// What started the run (`api`, `cli`, `replay`, `fork`, `suite`: a
    /// regression suite's case).
    pub trigger: String,
    pub created_at: String,
    pub finished_at: Option<String>,
    /// Milliseconds from creation to the end; null while the run runs.
    pub duration_ms: Option<f64>,
}

/// Body of `GET /api/v1/runs/{id}`: status, node results and agent outputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunDetail {
    pub id: String,
    pub workflow_id: Option<String>,
    pub workflow_revision: Option<i64>,
    pub kind: RunKind,
    pub replay_of: Option<String>,
    /// A fork's origin (kind `fork`); null for other runs.
    #[serde(default)]
    pub fork_of: Option<String>,
    pub status: RunStatus,
    pub trigger: String,
    #[serde(default)]
    pub inputs: Value,
    #[serde(default)]
    pub outputs: Value,
    pub error: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
    #[serde(default)]
    pub trace_id: Option<String>,
    pub duration_ms: Option<f64>,
    /// What each node did, by node id (null until the run ends).
    #[serde(default)]
    pub nodes: Option<BTreeMap<String, NodeRun>>,
    /// Every Agent node's outputs, by node id, each with its `usage`.
    #[serde(default)]
    pub agent_outputs: Map<String, Value>,
    /// What the run's model calls consumed (tokens, cost), summed over its
    /// Agent nodes.
    #[serde(default)]
    pub usage: crate::chat::ModelUsage,
    /// The graph as it ran (null until the run ends).
    #[serde(default)]
    pub workflow: Value,
}

impl RunDetail {
    /// Whether the run may still change (worth watching and cancelling).
    pub fn is_active(&self) -> bool {
        !self.status.is_final()
    }
}

/// How one node of a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum NodeRunStatus {
    Done,
    Failed,
    Skipped,
}

impl NodeRunStatus {
    /// The serialized word.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
        }
    }
}

/// What one node of a finished run did (the run record's node entry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeRun {
    pub node_id: String,
    pub status: NodeRunStatus,
    #[serde(default)]
    pub inputs: BTreeMap<String, Value>,
    #[serde(default)]
    pub outputs: BTreeMap<String, Value>,
    pub error: Option<String>,
    pub started_at: String,
    pub finished_at: String,
    /// Agent nodes: the replay bundle of their loop.
    #[serde(default)]
    pub bundle: Value,
    /// Tool nodes: the call's envelope.
    #[serde(default)]
    pub envelope: Value,
    /// Pins that fell back to an earlier run's value (for replay).
    #[serde(default)]
    pub pin_fallbacks: BTreeMap<String, Value>,
}

/// Body of `POST /api/v1/runs/{id}/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunCancelled {
    pub run_id: String,
    /// Whether a live run was there to cancel.
    pub cancelled: bool,
    /// The status before the cancellation took effect.
    pub status: RunStatus,
}

/// Body of `POST /api/v1/runs/{id}/replay` and `POST /api/v1/replays`: what
/// a hermetic replay found. The replay is itself a run (kind `replay`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReplayOutcome {
    /// The replay's own run record.
    pub run_id: String,
    pub replay_of: Option<String>,
    #[serde(rename = "match")]
    pub matches: bool,
    /// The first divergence, in words, when it does not match.
    pub divergence: Option<String>,
    /// The node where the replay diverged, when it did at a node.
    #[serde(default)]
    pub diverged_node: Option<String>,
    #[serde(default)]
    pub outputs: Value,
    /// Each Agent node's tool calls, recorded and replayed, in tool order;
    /// a diverging replay's list stops where it diverged.
    #[serde(default)]
    pub timelines: BTreeMap<String, ReplayTimeline>,
}

/// One Agent node's tool calls in the recorded run and in its replay.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReplayTimeline {
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub recorded: Vec<crate::envelope::ToolEnvelope>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub replayed: Vec<crate::envelope::ToolEnvelope>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_running_run_has_every_key_with_nulls() {
        let detail = RunDetail {
            id: "r".into(),
            workflow_id: Some("w".into()),
            workflow_revision: Some(2),
            kind: RunKind::Run,
            replay_of: None,
            fork_of: None,
            status: RunStatus::Running,
            trigger: "api".into(),
            inputs: json!({}),
            outputs: Value::Null,
            error: None,
            created_at: "t".into(),
            finished_at: None,
            trace_id: None,
            duration_ms: None,
            nodes: None,
            agent_outputs: Map::new(),
            usage: Default::default(),
            workflow: Value::Null,
        };
        let value = serde_json::to_value(&detail).expect("plain data");
        assert_eq!(
            value,
            json!({
                "id": "r", "workflow_id": "w", "workflow_revision": 2, "kind": "run",
                "replay_of": null, "fork_of": null, "status": "running", "trigger": "api", "inputs": {},
                "outputs": null, "error": null, "created_at": "t", "finished_at": null,
                "trace_id": null, "duration_ms": null, "nodes": null, "agent_outputs": {},
                "usage": {"model_calls": 0, "input_tokens": 0, "output_tokens": 0, "cost": 0.0},
                "workflow": null
            })
        );
        assert!(detail.is_active());
        let back: RunDetail = serde_json::from_value(value).expect("round trip");
        assert_eq!(back, detail);
    }

    #[test]
    fn a_node_record_round_trips() {
        let record = json!({
            "node_id": "agent", "status": "done", "inputs": {}, "outputs": {"response": "hi"},
            "error": null, "started_at": "a", "finished_at": "b", "bundle": null,
            "envelope": null, "pin_fallbacks": {}
        });
        let node: NodeRun = serde_json::from_value(record.clone()).expect("decodes");
        assert_eq!(node.status.as_str(), "done");
        assert_eq!(serde_json::to_value(&node).expect("encodes"), record);
    }
}
