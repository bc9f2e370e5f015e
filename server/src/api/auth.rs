//! `POST /api/v1/auth/exchange`: a one-time sign-in token for a session token.

use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ApiJson;
use crate::{ApiError, AppState};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(exchange))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExchangeBody {
    token: String,
}

#[utoipa::path(post, path = "/auth/exchange", tag = "auth", responses((status = 200, description = "a session token"), (status = 401, description = "invalid or used link")))]
async fn exchange(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ExchangeBody>,
) -> Result<Json<Value>, ApiError> {
    let (session, user) = crate::auth::exchange(state.db(), &body.token).await?;
    let workspaces: Vec<Value> = state
        .db()
        .memberships(&user)
        .await?
        .into_iter()
        .map(|(id, role, org)| json!({"id": id, "role": role, "org_id": org}))
        .collect();
    Ok(Json(
        json!({"session_token": session, "user_id": user, "workspaces": workspaces}),
    ))
}
