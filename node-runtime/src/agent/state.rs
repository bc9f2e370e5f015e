//! The state of one Agent Node run: the whole [`AgentRun`] (it serializes,
//! so a host persists it at a suspension and resumes it later), where it
//! stands, the calls waiting to run, what `drive` came back with, and why
//! a run could not go on.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::approval::{ApprovalError, ApprovalRequest, Decision};
use crate::agent_config::AgentConfig;
use crate::call_id::CallIdAllocator;
use crate::envelope::{AgentOutputs, ToolEnvelope};
use crate::model::{Message, ModelError, ProviderToolCall, ToolDefinition};
use crate::policy::Usage;
use crate::replay_bundle::{ApprovalRecord, CallMapping, RecordedExchange};

/// Why a run could not go on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("REPLAY_DIVERGED at step {step}: {message}")]
    ReplayDiverged { step: usize, message: String },
    #[error("agent configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Approval(#[from] ApprovalError),
}

/// Where a run stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    WaitingForApproval,
    Finished,
    Failed { message: String },
}

/// One call of the current model turn, waiting to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    pub provider_call: ProviderToolCall,
    pub call_id: String,
    /// `name@version` when the model named an enabled tool.
    pub tool_ref: Option<String>,
    pub approval: Option<ApprovalRequest>,
    pub decision: Option<Decision>,
}

/// The whole state of one Agent Node run. It serializes to JSON, so the
/// host can persist it at any suspension and resume it after a restart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRun {
    pub run_id: String,
    pub workspace_id: String,
    pub config: AgentConfig,
    pub status: RunStatus,
    pub messages: Vec<Message>,
    pub outputs: AgentOutputs,
    pub usage: Usage,
    pub ids: CallIdAllocator,
    pub pending: Vec<PendingCall>,
    pub used_tokens: BTreeSet<String>,
    /// The tools as offered to the model (before the adapter normalizes them).
    pub tool_definitions: Vec<ToolDefinition>,
    pub exchanges: Vec<RecordedExchange>,
    pub envelopes: Vec<ToolEnvelope>,
    pub approvals: Vec<ApprovalRecord>,
    pub call_map: Vec<CallMapping>,
    /// How many of `messages` are already in `exchanges`.
    pub recorded_messages: usize,
    pub started_at: String,
    pub finished_at: Option<String>,
}

/// What `drive` came back with.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The run has its outputs (`AgentRun::outputs`). They are not handed
    /// out here: a copy of them holds every call of the run (issue #30).
    Finished,
    /// Waiting for these approvals; persist the run and come back with decisions.
    Suspended(Vec<ApprovalRequest>),
}
