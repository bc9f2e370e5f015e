//! The JSON API under `/api/v1`. One module per route group, each with its
//! own `router()`.

mod health;

use axum::Router;

use crate::{ApiError, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .merge(health::router())
        .fallback(unknown_route)
}

/// Unknown API paths answer with the API's JSON error, never the app's HTML.
async fn unknown_route(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("no API route {uri}"))
}
