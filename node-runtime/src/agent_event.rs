//! What an Agent Node run reports: the loop's events (a closed enum, past
//! tense) and the approval request and decision they carry. Plain data
//! (wasm-safe): the server stores and streams these events and the app
//! decodes them. The loop that emits them and the sinks they go through
//! are `crate::agent` (runtime feature).

use serde::{Deserialize, Serialize};

use crate::chat::{StopReason, TokenUsage};
use crate::envelope::{AgentOutputs, ToolEnvelope};
use crate::payload::Payload;

/// What the agent loop did, one step at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type")]
pub enum AgentEvent {
    IterationStarted {
        iteration: u32,
    },
    ModelCalled {
        iteration: u32,
        stop_reason: StopReason,
        usage: TokenUsage,
        /// What this call cost (`crate::pricing`).
        #[serde(default)]
        cost: f64,
        tool_calls: usize,
        tools_offered: bool,
    },
    /// A piece of a streamed answer's text, as it arrived. Only the live
    /// view uses it: the model call's recorded answer is the whole text.
    TextDelta {
        iteration: u32,
        text: String,
    },
    ToolCallStarted {
        call_id: String,
        tool: String,
        #[cfg_attr(feature = "openapi", schema(value_type = Value))]
        input: Payload,
    },
    /// How far a running call has come, as the tool reported it (an MCP
    /// server's `notifications/progress`). Only the live view uses it.
    ToolProgress {
        call_id: String,
        progress: f64,
        #[serde(default)]
        total: Option<f64>,
        #[serde(default)]
        message: Option<String>,
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

/// What the operator sees for a pending write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalRequest {
    pub call_id: String,
    /// `name@version`.
    pub tool: String,
    /// The arguments, secrets redacted, shortened for display.
    pub args_summary: String,
    pub effect_description: String,
    pub token: String,
}

/// The operator's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Approve,
    Deny {
        reason: String,
    },
    /// The note goes back to the model, which may propose another call.
    Revise {
        note: String,
    },
}
