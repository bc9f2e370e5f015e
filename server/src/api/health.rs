//! `GET /api/v1/health`: liveness, the server version and the database check.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use node_runtime::wire::Health;

use crate::{ApiError, AppState, VERSION};

pub fn router() -> Router<AppState> {
    Router::new().route("/health", get(health))
}

async fn health(State(state): State<AppState>) -> Result<Json<Health>, ApiError> {
    let schema_version = state.db().schema_version().await?;
    Ok(Json(Health {
        status: "ok".into(),
        version: VERSION.into(),
        database: state.db().backend().into(),
        schema_version,
    }))
}
