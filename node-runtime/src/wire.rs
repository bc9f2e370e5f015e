//! Wire types of the JSON API under `/api/v1`, shared by the server (which
//! produces them) and the browser app (which consumes them).
//!
//! This module holds only plain serde data: no behaviour that needs IO.

use serde::{Deserialize, Serialize};

/// The API version prefix every route lives under.
pub const API_PREFIX: &str = "/api/v1";

/// Body of `GET /api/v1/health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// The inside of [`ErrorBody`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// A stable machine-readable code, e.g. `NOT_FOUND`, `BAD_REQUEST`.
    pub code: String,
    /// A sentence for people.
    pub message: String,
    /// Structured context (the failing field path, limits), or null.
    #[serde(default)]
    pub details: serde_json::Value,
}

/// Body of `POST /api/v1/runs/{id}/replay` and `POST /api/v1/replays`: what
/// a hermetic replay found. The replay is itself a run (kind `replay`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayOutcome {
    /// The replay's own run record.
    pub run_id: String,
    pub replay_of: Option<String>,
    #[serde(rename = "match")]
    pub matches: bool,
    /// The first divergence, in words, when it does not match.
    pub divergence: Option<String>,
    /// The node where the replay diverged, when it did at a node.
    #[serde(default)]
    pub diverged_node: Option<String>,
    #[serde(default)]
    pub outputs: serde_json::Value,
    /// Each Agent node's tool calls, recorded and replayed, in tool order;
    /// a diverging replay's list stops where it diverged.
    #[serde(default)]
    pub timelines: std::collections::BTreeMap<String, ReplayTimeline>,
}

/// One Agent node's tool calls in the recorded run and in its replay.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReplayTimeline {
    #[serde(default)]
    pub recorded: Vec<crate::envelope::ToolEnvelope>,
    #[serde(default)]
    pub replayed: Vec<crate::envelope::ToolEnvelope>,
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
