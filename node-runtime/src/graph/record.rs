//! What a workflow run records and reports: each node's [`NodeRecord`],
//! the run's [`WorkflowRun`] and [`RunOutcome`], and the
//! [`WorkflowEvent`]s the host stores and streams. Plain data (wasm-safe):
//! the app decodes them; the engine that produces them is `engine`
//! (runtime feature).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent_event::AgentEvent;
use crate::envelope::ToolEnvelope;
use crate::replay_bundle::ReplayBundle;

/// How a node ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    Done,
    Failed,
    Skipped,
}

/// What one node did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeRecord {
    pub node_id: String,
    pub status: NodeStatus,
    #[cfg_attr(
        feature = "runtime",
        serde(serialize_with = "crate::fast_json::values")
    )]
    pub inputs: BTreeMap<String, Value>,
    #[cfg_attr(
        feature = "runtime",
        serde(serialize_with = "crate::fast_json::values")
    )]
    pub outputs: BTreeMap<String, Value>,
    pub error: Option<String>,
    pub started_at: String,
    pub finished_at: String,
    /// Agent nodes: the replay bundle of their loop.
    #[serde(default)]
    pub bundle: Option<ReplayBundle>,
    /// Tool nodes: the call's envelope.
    #[serde(default)]
    pub envelope: Option<ToolEnvelope>,
    /// Pins that fell back to an earlier run's value (for replay).
    #[serde(default)]
    pub pin_fallbacks: BTreeMap<String, Value>,
}

/// How a workflow run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    Succeeded,
    Failed,
    Cancelled,
}

/// A whole workflow run: its outcome, outputs and every node's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkflowRun {
    pub run_id: String,
    pub workflow_id: String,
    pub outcome: RunOutcome,
    /// Output nodes' fields, merged.
    pub outputs: BTreeMap<String, Value>,
    pub nodes: BTreeMap<String, NodeRecord>,
}

/// Node- and agent-level events of a workflow run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type")]
pub enum WorkflowEvent {
    NodeStarted {
        node_id: String,
    },
    NodeFinished {
        node_id: String,
        status: NodeStatus,
        error: Option<String>,
    },
    Agent {
        node_id: String,
        /// Boxed: agent events are much larger than node events.
        event: Box<AgentEvent>,
    },
    /// The run's last event, whatever ended it (a workflow refused before
    /// any node ran included).
    RunFinished {
        outcome: RunOutcome,
        /// Why it failed: the first failed node's error, or why the run
        /// could not start.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent_event::Decision;

    fn check(event: WorkflowEvent, wire: &str) {
        assert_eq!(serde_json::to_string(&event).expect("serializes"), wire);
        let back: WorkflowEvent = serde_json::from_str(wire).expect("decodes");
        assert_eq!(back, event);
    }

    #[test]
    fn events_keep_their_wire_form() {
        check(
            WorkflowEvent::NodeStarted {
                node_id: "a".into(),
            },
            r#"{"type":"NodeStarted","node_id":"a"}"#,
        );
        check(
            WorkflowEvent::NodeFinished {
                node_id: "a".into(),
                status: NodeStatus::Skipped,
                error: None,
            },
            r#"{"type":"NodeFinished","node_id":"a","status":"skipped","error":null}"#,
        );
        check(
            WorkflowEvent::Agent {
                node_id: "a".into(),
                event: Box::new(AgentEvent::ApprovalDecided {
                    call_id: "c".into(),
                    decision: Decision::Deny {
                        reason: "no".into(),
                    },
                }),
            },
            r#"{"type":"Agent","node_id":"a","event":{"type":"ApprovalDecided","call_id":"c","decision":{"decision":"deny","reason":"no"}}}"#,
        );
        check(
            WorkflowEvent::RunFinished {
                outcome: RunOutcome::Cancelled,
                error: None,
            },
            r#"{"type":"RunFinished","outcome":"cancelled"}"#,
        );
    }

    #[cfg(feature = "openapi")]
    #[test]
    fn the_event_schema_has_one_alternative_per_variant() {
        use utoipa::PartialSchema;
        let schema = serde_json::to_value(WorkflowEvent::schema()).expect("schema");
        let variants = schema["oneOf"].as_array().expect("oneOf");
        assert_eq!(variants.len(), 4, "{schema}");
    }
}
