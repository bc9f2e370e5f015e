//! Seed 001's invocation records as the API shows them.

use serde::{Deserialize, Serialize};

use super::{InvocationApproval, InvocationStatus};

/// One tool invocation record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Invocation {
    pub id: String,
    pub workspace_id: String,
    pub run_id: String,
    pub node_id: String,
    pub call_id: String,
    pub tool_name: String,
    pub tool_version: String,
    pub status: InvocationStatus,
    /// 1 when the call needed a human's approval, else 0.
    pub approval_required: i64,
    pub approval_status: Option<InvocationApproval>,
    pub decided_by: Option<String>,
    pub reason: Option<String>,
    /// The call's input, as JSON text.
    pub input: String,
    /// The call's output, as JSON text.
    pub output: Option<String>,
    pub error: Option<String>,
    pub cost: f64,
    pub created_at: String,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
    pub trace_id: Option<String>,
}

/// Body of `GET /api/v1/invocations`: records, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InvocationList {
    pub invocations: Vec<Invocation>,
}
