//! The stored rows, as plain structs, and the record timestamps and ids.

use super::*;

/// Record timestamps: RFC 3339 UTC with microseconds (text that sorts in
/// time order; the same width on every row).
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// A new id: UUID v7 (time-ordered), lowercase hex with dashes.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct WorkflowRow {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    pub description: String,
    pub revision: i64,
    pub document: String,
    pub created_at: String,
    pub updated_at: String,
}

impl WorkflowRow {
    pub fn workflow(&self) -> Result<Workflow, StoreError> {
        Workflow::from_json(&self.document)
            .map_err(|e| StoreError::Corrupt(format!("workflow {}: {e}", self.id)))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct RevisionRow {
    pub workflow_id: String,
    pub revision: i64,
    pub document: String,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct RunRow {
    pub id: String,
    pub workspace_id: String,
    pub workflow_id: Option<String>,
    pub workflow_revision: Option<i64>,
    /// `run`, `replay` or `fork`.
    pub kind: String,
    /// A replay's or a fork's origin.
    pub replay_of: Option<String>,
    /// queued | running | waiting_for_approval | succeeded | failed | cancelled
    pub status: String,
    pub trigger_kind: String,
    pub inputs: String,
    pub outputs: Option<String>,
    pub error: Option<String>,
    /// JSON; stored as a skeleton when `record_refs` is set (see
    /// `payloads`): read it through `Store::run_record`.
    pub record: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
    /// The run's trace (32 hex digits, the OTLP trace id).
    pub trace_id: Option<String>,
    /// The user who started it (none: the CLI); its secrets' first scope.
    pub started_by: Option<String>,
    /// The payloads `record` refers to (see `payloads`); none: it is whole.
    #[sqlx(default)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_refs: Option<String>,
}

impl RunRow {
    /// A run just created: queued, triggered from the API with no inputs,
    /// of no workflow yet, nothing recorded (the caller sets the rest).
    pub fn queued(id: &str, workspace_id: &str) -> Self {
        RunRow {
            id: id.into(),
            workspace_id: workspace_id.into(),
            workflow_id: None,
            workflow_revision: None,
            kind: "run".into(),
            replay_of: None,
            status: "queued".into(),
            trigger_kind: "api".into(),
            inputs: "{}".into(),
            outputs: None,
            error: None,
            record: None,
            created_at: now(),
            finished_at: None,
            trace_id: None,
            started_by: None,
            record_refs: None,
        }
    }
}

/// One node of a finished run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct NodeRunRow {
    pub run_id: String,
    pub node_id: String,
    pub status: String,
    pub error: Option<String>,
    pub outputs: String,
    pub started_at: String,
    pub finished_at: String,
    pub trace_id: Option<String>,
    /// The payloads `outputs` refers to (see `payloads`); none as read
    /// (`Store::node_runs` inflates) and for a whole text.
    #[sqlx(default)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs_refs: Option<String>,
}

/// A payload to store: its hash, its inflated length, and its text as a
/// skeleton with its own refs, encoded by `codec`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadRow {
    /// Its key (`payloads::key_of`): lowercase hex BLAKE3 of the inflated
    /// bytes, or of the skeleton and refs when it holds payloads.
    pub hash: String,
    /// How `data` holds the skeleton: 0 as is, 1 raw deflate (rows of
    /// earlier versions), 2 zstd (see `payloads`).
    pub codec: i64,
    /// The inflated length in bytes.
    pub size: i64,
    /// The skeleton, encoded by `codec`.
    pub data: Vec<u8>,
    /// The skeleton's refs (JSON), `None` when it has none.
    pub refs: Option<String>,
}

/// One closed `tracing` span of a run (see `crate::trace`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct SpanRow {
    pub run_id: String,
    pub span_id: String,
    pub parent_id: Option<String>,
    pub trace_id: String,
    pub name: String,
    pub started_at: String,
    pub duration_us: i64,
    /// JSON object.
    pub fields: String,
}

#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub workflow_id: Option<String>,
    pub status: Option<String>,
    pub limit: i64,
    pub cursor: Option<super::Cursor>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct EventRow {
    pub run_id: String,
    pub seq: i64,
    pub event: String,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct ApprovalRow {
    pub token: String,
    pub workspace_id: String,
    pub run_id: String,
    pub node_id: String,
    pub call_id: String,
    pub tool: String,
    pub args_summary: String,
    pub effect_description: String,
    /// pending | approved | denied | revision_requested (the approval
    /// row's words; an invocation's `approval_status` is seed 001's
    /// pending | approved | rejected)
    pub status: String,
    pub decided_by: Option<String>,
    pub note: Option<String>,
    pub created_at: String,
    pub decided_at: Option<String>,
}

/// A connection as stored: its config is `ConnectionConfig` as JSON.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ConnectionRow {
    pub name: String,
    pub kind: String,
    pub config: String,
    pub created_at: String,
    pub updated_at: String,
}

/// One MCP tool version as discovered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct McpToolRow {
    pub connection: String,
    /// The server's own name for the tool.
    pub tool: String,
    pub version: String,
    /// `ToolSpec` JSON.
    pub spec: String,
    /// The tool's annotations JSON, as the server sent them.
    pub annotations: String,
    /// 1 when the last refresh listed this version.
    pub current: i64,
    pub discovered_at: String,
}

/// What an MCP server said about itself at the last refresh.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct McpServerRow {
    pub connection: String,
    pub server_name: String,
    pub server_version: String,
    pub protocol_version: String,
    pub refreshed_at: String,
}

/// An admin's side-effect class for one MCP tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct McpOverrideRow {
    pub connection: String,
    pub tool: String,
    pub side_effects: String,
    pub set_by: String,
    pub set_at: String,
}

/// A long-lived API token as listed (the token itself is shown once, at
/// creation, and stored only as its hash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct ApiTokenRow {
    pub id: String,
    pub name: String,
    pub user_id: String,
    pub created_at: String,
    pub expires_at: Option<String>,
}

/// Seed 001's invocation record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct InvocationRow {
    pub id: String,
    pub workspace_id: String,
    pub run_id: String,
    pub node_id: String,
    pub call_id: String,
    pub tool_name: String,
    pub tool_version: String,
    /// pending | approved | rejected | running | completed | failed
    pub status: String,
    pub approval_required: i64,
    pub approval_status: Option<String>,
    pub decided_by: Option<String>,
    pub reason: Option<String>,
    pub input: String,
    pub output: Option<String>,
    pub error: Option<String>,
    pub cost: f64,
    pub created_at: String,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
    pub trace_id: Option<String>,
    /// The payloads `input` and `output` refer to (see `payloads`); none
    /// as read (`Store::get_invocation` inflates) and for whole texts.
    #[sqlx(default)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_refs: Option<String>,
    #[sqlx(default)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_refs: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct InvocationFilter {
    pub status: Option<String>,
    pub tool: Option<String>,
    pub run_id: Option<String>,
    pub since: Option<String>,
    pub until: Option<String>,
    pub node_id: Option<String>,
    pub call_id: Option<String>,
    pub limit: i64,
    pub cursor: Option<super::Cursor>,
}
