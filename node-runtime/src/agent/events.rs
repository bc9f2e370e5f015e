//! The agent loop's events: a closed enum, past tense, delivered through an
//! [`EventSink`]. The server persists and streams them.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::approval::{ApprovalRequest, Decision};
use crate::envelope::{AgentOutputs, ToolEnvelope};
use crate::model::{StopReason, TokenUsage};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum AgentEvent {
    IterationStarted {
        iteration: u32,
    },
    ModelCalled {
        iteration: u32,
        stop_reason: StopReason,
        usage: TokenUsage,
        tool_calls: usize,
        tools_offered: bool,
    },
    ToolCallStarted {
        call_id: String,
        tool: String,
        input: Value,
    },
    ToolCallFinished {
        envelope: ToolEnvelope,
    },
    ApprovalRequested {
        request: ApprovalRequest,
    },
    ApprovalDecided {
        call_id: String,
        decision: Decision,
    },
    LimitReached {
        limit: String,
    },
    Finished {
        outputs: AgentOutputs,
    },
    Failed {
        message: String,
    },
}

/// Where events go.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: AgentEvent);
}

/// Drops every event.
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&self, _event: AgentEvent) {}
}

/// Keeps every event (tests, the CLI).
#[derive(Default)]
pub struct VecSink(Mutex<Vec<AgentEvent>>);

impl VecSink {
    pub fn events(&self) -> Vec<AgentEvent> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Event type names in order, e.g. `["IterationStarted", "ModelCalled", ...]`.
    pub fn names(&self) -> Vec<String> {
        self.events()
            .iter()
            .map(|e| {
                serde_json::to_value(e)
                    .ok()
                    .and_then(|v| v["type"].as_str().map(str::to_string))
                    .unwrap_or_default()
            })
            .collect()
    }
}

impl EventSink for VecSink {
    fn emit(&self, event: AgentEvent) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(event);
    }
}
