//! `GET /api/v1/health`: liveness, the server version and the database check.

use axum::extract::State;
use axum::Json;
use node_runtime::wire::Health;

use crate::{ApiError, AppState, VERSION};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(health))
}

#[utoipa::path(get, path = "/health", extensions(("x-required-role" = json!("public"))), tag = "health", responses((status = 200, body = Health, description = "server version and database")))]
async fn health(State(state): State<AppState>) -> Result<Json<Health>, ApiError> {
    let schema_version = state.db().schema_version().await?;
    Ok(Json(Health {
        status: "ok".into(),
        version: VERSION.into(),
        database: state.db().backend().into(),
        schema_version,
    }))
}
