//! A run's trace as the API shows it: the stored spans of one run.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::RunStatus;

/// Body of `GET /api/v1/runs/{id}/trace`: the run's trace id and its stored
/// spans (run -> node -> iteration -> model_call / tool_call) in start order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Trace {
    pub run_id: String,
    /// 32 hex digits, the OTLP trace id.
    pub trace_id: String,
    pub status: RunStatus,
    pub spans: Vec<Span>,
}

/// One stored span of a [`Trace`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Span {
    pub span_id: String,
    pub parent_id: Option<String>,
    /// `run`, `node`, `iteration`, `model_call` or `tool_call`.
    pub name: String,
    /// RFC 3339 with microseconds.
    pub started_at: String,
    pub duration_ms: f64,
    /// The span's attributes (a JSON object; null when unreadable).
    #[serde(default)]
    pub fields: Value,
}
