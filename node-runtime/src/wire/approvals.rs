//! Approvals as the API shows them: a write waiting for a human, the
//! pending list and the answer of a decision.

use serde::{Deserialize, Serialize};

use super::ApprovalStatus;

/// One approval (a row of the approvals table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Approval {
    /// The single-use approval token, also the approval's id.
    pub token: String,
    pub workspace_id: String,
    pub run_id: String,
    pub node_id: String,
    pub call_id: String,
    /// `name@version`.
    pub tool: String,
    pub args_summary: String,
    pub effect_description: String,
    pub status: ApprovalStatus,
    pub decided_by: Option<String>,
    /// The denial's reason or the revision request's note.
    pub note: Option<String>,
    pub created_at: String,
    pub decided_at: Option<String>,
}

/// Body of `GET /api/v1/approvals`: the pending approvals, oldest first,
/// and their count (the UI's badge).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PendingApprovals {
    pub count: usize,
    pub pending: Vec<Approval>,
}

/// Body of `POST /api/v1/approvals/{token}/{approve,deny,revise}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalDecided {
    pub approval: Approval,
    /// Whether a live run was waiting for the decision (otherwise it is
    /// applied when the run resumes).
    pub delivered: bool,
}
