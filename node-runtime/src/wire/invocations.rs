//! Seed 001's invocation records as the API shows them: lists carry each
//! record without its payloads, a page at a time; the item route has the
//! input and output.

use serde::{Deserialize, Serialize};

use super::{InvocationApproval, InvocationStatus};

/// One tool invocation record without its payloads (input and output), as
/// lists show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InvocationSummary {
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
    /// The call's error (code and message), as JSON text.
    pub error: Option<String>,
    pub cost: f64,
    pub created_at: String,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
    pub trace_id: Option<String>,
}

/// Body of `GET /api/v1/invocations/{id}`: one record with its payloads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Invocation {
    #[serde(flatten)]
    pub record: InvocationSummary,
    /// The call's input, as JSON text.
    pub input: String,
    /// The call's output, as JSON text (a large one is a preview naming
    /// the blob that holds it whole).
    pub output: Option<String>,
}

/// Body of `GET /api/v1/invocations`: one page of records, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InvocationList {
    pub invocations: Vec<InvocationSummary>,
    /// Pass as `cursor` for the next page; null on the last page.
    #[serde(default)]
    pub next_cursor: Option<String>,
}
