//! Wire types of the JSON API under `/api/v1`, shared by the server (which
//! produces them) and the browser app (which consumes them).
//!
//! This module holds only plain serde data: no behaviour that needs IO.
//! One file per resource; every answer body of a route is a named type
//! here, with a utoipa schema behind the `openapi` feature (the server's
//! `/api/v1/openapi.json`).

use serde::{Deserialize, Serialize};

mod approvals;
mod auth;
mod connections;
mod forks;
mod instances;
mod invocations;
mod providers;
mod runs;
mod secrets;
mod status;
mod suites;
mod teams;
mod tokens;
mod tools;
mod traces;
mod workflows;

pub use approvals::{Approval, ApprovalDecided, PendingApprovals};
pub use auth::{Membership, Session, SessionInfo, SessionList};
pub use connections::{
    ConnectionList, ConnectionTestResult, ConnectionUpdate, ConnectionView, McpServerStatus,
    McpToolClass, McpToolClassSet, NewConnection,
};
pub use forks::{
    diff_runs, CallChange, CallDiff, DiffSummary, ForkChanges, ForkRequest, ForkStarted, NodeDiff,
    RunDiff,
};
pub use instances::{InstanceList, InstanceView};
pub use invocations::{Invocation, InvocationList, InvocationSummary};
pub use providers::{ProviderTest, ProviderTestResult};
pub use runs::{
    NodeRun, NodeRunStatus, ReplayOutcome, ReplayTimeline, RunCancelled, RunDetail, RunItem,
    RunList, RunStarted,
};
pub use secrets::{SecretList, SecretName};
pub use status::{
    ApprovalStatus, InvocationApproval, InvocationStatus, RunKind, RunStatus, SuiteRunStatus,
    UnknownStatus,
};
pub use suites::{
    Assertion, AssertionResult, CaseResult, NewSuite, ShapeError, SuiteCase, SuiteList, SuiteModel,
    SuiteOptions, SuiteRunList, SuiteRunRequest, SuiteRunView, SuiteView, CASE_ASSERTIONS_MAX,
    CASE_NAME_MAX, SUITE_CASES_MAX, SUITE_DESCRIPTION_MAX, SUITE_NAME_MAX,
};
pub use teams::{
    AuditEvent, AuditList, InvitationAccept, InvitationCreated, InvitationList, InvitationPreview,
    InvitationStatus, InvitationView, MemberList, MemberView, NewInvitation, Role, RoleChange,
    WorkspaceList, WorkspaceName, WorkspaceView, DISPLAY_NAME_MAX, INVITATION_DEFAULT_HOURS,
    INVITATION_MAX_HOURS, WORKSPACE_NAME_MAX,
};
pub use tokens::{ApiToken, ApiTokenCreated, ApiTokenList};
pub use tools::{McpToolSource, ToolAuth, ToolList, ToolSecret, ToolView};
pub use traces::{Span, Trace};
pub use workflows::{
    Diagnostics, ExampleItem, ExampleList, Revision, RevisionList, TemplateVariablesAnswer,
    TemplateVariablesOf, TemplateVariablesRequest, WorkflowItem, WorkflowList, WorkflowSaved,
    WorkflowView, MAX_TEMPLATES_PER_REQUEST,
};

/// The API version prefix every route lives under.
pub const API_PREFIX: &str = "/api/v1";

/// Body of `GET /api/v1/health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Health {
    /// Always `"ok"` when the server answers; a failing database check is an
    /// error response instead.
    pub status: String,
    /// The server's crate version (`CARGO_PKG_VERSION`).
    pub version: String,
    /// Which storage backend is in use: `"sqlite"` or `"postgres"`.
    pub database: String,
    /// Applied schema migrations, newest last.
    pub schema_version: i64,
}

/// The error body every non-2xx API response carries:
/// `{"error": {"code", "message", "details"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// The inside of [`ErrorBody`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorDetail {
    /// A stable machine-readable code, e.g. `NOT_FOUND`, `BAD_REQUEST`.
    pub code: String,
    /// A sentence for people.
    pub message: String,
    /// Structured context (the failing field path, limits), or null.
    #[serde(default)]
    pub details: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_body_always_has_details_key() {
        let body = ErrorBody {
            error: ErrorDetail {
                code: "NOT_FOUND".into(),
                message: "no such workflow".into(),
                details: serde_json::Value::Null,
            },
        };
        let json = serde_json::to_value(&body).expect("plain data serializes");
        assert_eq!(
            json,
            serde_json::json!({"error": {"code": "NOT_FOUND", "message": "no such workflow", "details": null}})
        );
    }

    #[test]
    fn error_body_parses_without_details() {
        let body: ErrorBody =
            serde_json::from_str(r#"{"error":{"code":"X","message":"m"}}"#).expect("valid");
        assert_eq!(body.error.details, serde_json::Value::Null);
    }
}
