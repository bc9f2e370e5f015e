//! The one error type of the API.
//!
//! Every non-2xx response has the body `{"error": {"code", "message",
//! "details"}}` (see `node_runtime::wire::ErrorBody`). Internal errors are
//! logged with their cause and answered with a generic message: details of
//! the server's insides never reach the caller.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use node_runtime::wire::{ErrorBody, ErrorDetail};
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{message}")]
    NotFound { message: String },
    #[error("{message}")]
    BadRequest { message: String, details: Value },
    #[error("internal error: {0}")]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::NotFound {
            message: message.into(),
        }
    }

    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            Self::NotFound { .. } => (StatusCode::NOT_FOUND, "NOT_FOUND"),
            Self::BadRequest { .. } => (StatusCode::BAD_REQUEST, "BAD_REQUEST"),
            Self::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        Self::Internal(err.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let (message, details) = match self {
            Self::NotFound { message } => (message, Value::Null),
            Self::BadRequest { message, details } => (message, details),
            Self::Internal(err) => {
                tracing::error!(error = ?err, "internal error");
                (
                    "internal server error; see the server log".to_string(),
                    Value::Null,
                )
            }
        };
        let body = ErrorBody {
            error: ErrorDetail {
                code: code.to_string(),
                message,
                details,
            },
        };
        (status, Json(body)).into_response()
    }
}
