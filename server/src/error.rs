//! The one error type of the API.
//!
//! Every non-2xx response has the body `{"error": {"code", "message",
//! "details"}}` (see `node_runtime::wire::ErrorBody`). Internal errors are
//! logged with their cause and answered with a generic message: details of
//! the server's insides never reach the caller. [`ApiJson`] is the JSON
//! extractor whose rejections use the same shape, so malformed input gets
//! the same kind of answer as invalid input.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use node_runtime::wire::{ErrorBody, ErrorDetail};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::storage::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{message}")]
    NotFound { message: String },
    #[error("{message}")]
    BadRequest { message: String, details: Value },
    #[error("{message}")]
    Unprocessable { message: String, details: Value },
    #[error("{message}")]
    Conflict { message: String, details: Value },
    #[error("{message}")]
    Unauthorized { message: String },
    /// Signed in, but the role does not allow it.
    #[error("{message}")]
    Forbidden { message: String },
    /// It was there and is no more: a used, expired or revoked link.
    #[error("{message}")]
    Gone { message: String },
    #[error("{message}")]
    PayloadTooLarge { message: String },
    /// The route exists, not with this method.
    #[error("{message}")]
    MethodNotAllowed { message: String },
    /// A per-workspace cap is reached; try again after `retry_after_s`.
    #[error("{message}")]
    TooManyRequests { message: String, retry_after_s: u64 },
    #[error("internal error: {0}")]
    Internal(#[from] anyhow::Error),
}

/// A stored status word that names no status: the store holds something
/// this server does not know, an internal error (never a panic).
impl From<node_runtime::wire::UnknownStatus> for ApiError {
    fn from(e: node_runtime::wire::UnknownStatus) -> Self {
        Self::Internal(e.into())
    }
}

impl ApiError {
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::NotFound {
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>, details: Value) -> Self {
        Self::BadRequest {
            message: message.into(),
            details,
        }
    }

    pub fn unprocessable(message: impl Into<String>, details: Value) -> Self {
        Self::Unprocessable {
            message: message.into(),
            details,
        }
    }

    /// A 422 for the request body's field at `path` (`details.path`), its
    /// message prefixed with the path.
    /// A wire type's shape error (`(field, why)`, from its `check`) as
    /// a 422 naming the field.
    pub fn from_shape(shape: Result<(), (String, String)>) -> Result<(), Self> {
        shape.map_err(|(field, message)| Self::invalid_at(&field, message))
    }

    pub fn invalid_at(path: &str, message: impl std::fmt::Display) -> Self {
        Self::unprocessable(format!("{path}: {message}"), json!({ "path": path }))
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::Forbidden {
            message: message.into(),
        }
    }

    pub fn gone(message: impl Into<String>) -> Self {
        Self::Gone {
            message: message.into(),
        }
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::Unauthorized {
            message: message.into(),
        }
    }

    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            Self::NotFound { .. } => (StatusCode::NOT_FOUND, "NOT_FOUND"),
            Self::BadRequest { .. } => (StatusCode::BAD_REQUEST, "BAD_REQUEST"),
            Self::Unprocessable { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "INVALID"),
            Self::Conflict { .. } => (StatusCode::CONFLICT, "CONFLICT"),
            Self::Unauthorized { .. } => (StatusCode::UNAUTHORIZED, "UNAUTHORIZED"),
            Self::Forbidden { .. } => (StatusCode::FORBIDDEN, "FORBIDDEN"),
            Self::Gone { .. } => (StatusCode::GONE, "GONE"),
            Self::PayloadTooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE"),
            Self::MethodNotAllowed { .. } => (StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED"),
            Self::TooManyRequests { .. } => (StatusCode::TOO_MANY_REQUESTS, "RATE_LIMIT"),
            Self::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        Self::Internal(err.into())
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound(what) => Self::not_found(format!("{what} not found")),
            StoreError::Conflict { expected, actual } => Self::Conflict {
                message: format!("stale revision: your change is based on revision {expected}, but revision {actual} is stored; reload and apply it again"),
                details: json!({ "base_revision": expected, "current_revision": actual }),
            },
            other => Self::Internal(other.into()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let retry_after = match &self {
            Self::TooManyRequests { retry_after_s, .. } => Some(*retry_after_s),
            _ => None,
        };
        let (message, details) = match self {
            Self::NotFound { message }
            | Self::Unauthorized { message }
            | Self::Forbidden { message }
            | Self::Gone { message }
            | Self::PayloadTooLarge { message }
            | Self::MethodNotAllowed { message } => (message, Value::Null),
            Self::TooManyRequests {
                message,
                retry_after_s,
            } => (message, serde_json::json!({"retry_after_s": retry_after_s})),
            Self::BadRequest { message, details }
            | Self::Unprocessable { message, details }
            | Self::Conflict { message, details } => (message, details),
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
        let mut response = (status, Json(body)).into_response();
        if let Some(s) = retry_after {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(s),
            );
        }
        response
    }
}

/// `Json<T>` whose rejections are [`ApiError`]s naming the problem.
pub struct ApiJson<T>(pub T);

/// The field a body's data error names (`cases[0].assertions[0].kind` of
/// "Failed to deserialize ...: cases[0].assertions[0].kind: unknown
/// variant ..."), when it names one.
fn data_error_path(text: &str) -> Option<&str> {
    let rest = text.split_once("target type: ").map_or(text, |(_, r)| r);
    let path = rest.split_once(": ")?.0;
    (!path.is_empty()
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-[].".contains(c)))
    .then_some(path)
}

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(Self(v)),
            Err(rejection) => Err(match &rejection {
                JsonRejection::JsonDataError(_) => {
                    let text = rejection.body_text();
                    let details = match data_error_path(&text) {
                        Some(path) => serde_json::json!({ "path": path }),
                        None => Value::Null,
                    };
                    ApiError::unprocessable(text, details)
                }
                JsonRejection::JsonSyntaxError(_) => {
                    ApiError::bad_request(rejection.body_text(), Value::Null)
                }
                JsonRejection::MissingJsonContentType(_) => ApiError::bad_request(
                    "send the body as JSON with `content-type: application/json`",
                    Value::Null,
                ),
                _ if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                    ApiError::PayloadTooLarge {
                        message: "the request body is larger than the server accepts".into(),
                    }
                }
                _ => ApiError::bad_request(rejection.body_text(), Value::Null),
            }),
        }
    }
}

/// `Path<T>` whose rejection is an [`ApiError`] (a path segment that does
/// not decode, `%FF`, or does not parse).
pub struct ApiPath<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(v)| Self(v))
            .map_err(|r| {
                ApiError::bad_request(r.body_text(), serde_json::json!({"path": parts.uri.path()}))
            })
    }
}

/// The answer to a method a route does not have: 405 in the error shape.
pub async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::MethodNotAllowed {
        message: format!("{} does not take {method}", uri.path()),
    }
}

/// `Query<T>` whose rejection is an [`ApiError`] naming the parameter.
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(v)| Self(v))
            .map_err(|r| ApiError::bad_request(r.body_text(), Value::Null))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_data_error_names_its_field_when_it_has_one() {
        let cases = [
            ("Failed to deserialize the JSON body into the target type: cases[0].assertions[0].kind: unknown variant `vibes`", Some("cases[0].assertions[0].kind")),
            ("Failed to deserialize the JSON body into the target type: missing field `name` at line 1 column 2", None),
            ("Failed to deserialize the JSON body into the target type: options.model: unknown variant `x`: y", Some("options.model")),
        ];
        for (text, want) in cases {
            assert_eq!(super::data_error_path(text), want, "{text}");
        }
    }
}
