//! `POST /api/v1/auth/exchange`: a one-time sign-in token for a session
//! token; `POST /api/v1/auth/logout`: the session ends.

use axum::extract::State;
use axum::Json;
use node_runtime::wire::{Membership, Session};
use serde::Deserialize;

use crate::error::ApiJson;
use crate::{ApiError, AppState};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(exchange))
        .routes(routes!(logout))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExchangeBody {
    token: String,
}

#[utoipa::path(post, path = "/auth/exchange", tag = "auth", responses((status = 200, body = Session, description = "a session token"), (status = 401, description = "invalid or used link")))]
async fn exchange(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ExchangeBody>,
) -> Result<Json<Session>, ApiError> {
    let (session, user) = crate::auth::exchange(state.db(), &body.token).await?;
    let workspaces = state
        .db()
        .memberships(&user)
        .await?
        .into_iter()
        .map(|(id, role, org_id)| Membership { id, role, org_id })
        .collect();
    Ok(Json(Session {
        session_token: session,
        user_id: user,
        workspaces,
    }))
}

#[utoipa::path(post, path = "/auth/logout", tag = "auth", responses((status = 204, description = "the session's token no longer works"), (status = 401, description = "no valid token")))]
async fn logout(
    State(state): State<AppState>,
    _caller: crate::auth::Caller,
    headers: axum::http::HeaderMap,
) -> Result<axum::http::StatusCode, ApiError> {
    if let Some(token) = crate::auth::bearer(&headers) {
        state
            .db()
            .delete_session(&crate::auth::hash_token(token))
            .await?;
    }
    Ok(axum::http::StatusCode::NO_CONTENT)
}
