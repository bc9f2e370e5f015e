//! The JSON API under `/api/v1`. One module per route group, each with its
//! own `router()`. Every route except `health` and `auth/exchange` needs a
//! bearer token and sees only the caller's workspace.

mod approvals;
mod auth;
mod health;
mod runs;
mod tools;
mod workflows;

use axum::extract::DefaultBodyLimit;
use axum::Router;

use crate::{ApiError, AppState};

/// The largest request body accepted on any route.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

pub fn router() -> Router<AppState> {
    Router::new()
        .merge(health::router())
        .merge(auth::router())
        .merge(workflows::router())
        .merge(tools::router())
        .merge(runs::router())
        .merge(approvals::router())
        .fallback(unknown_route)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
}

/// Unknown API paths answer with the API's JSON error, never the app's HTML.
async fn unknown_route(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("no API route {uri}"))
}
