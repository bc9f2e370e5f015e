//! `POST /api/v1/auth/exchange`: a one-time sign-in token for a session token.

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ApiJson;
use crate::{ApiError, AppState};

pub fn router() -> Router<AppState> {
    Router::new().route("/auth/exchange", post(exchange))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExchangeBody {
    token: String,
}

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
        .map(|(id, role)| json!({"id": id, "role": role}))
        .collect();
    Ok(Json(
        json!({"session_token": session, "user_id": user, "workspaces": workspaces}),
    ))
}
