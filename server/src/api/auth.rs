//! `POST /api/v1/auth/exchange`: a one-time sign-in token for a session
//! token; `POST /api/v1/auth/logout`: the session ends;
//! `GET /api/v1/auth/sessions` and `DELETE /api/v1/auth/sessions/{id}`: the
//! caller's sessions, to see where they are signed in and end any of them.

use axum::extract::State;
use axum::Json;
use node_runtime::wire::{Membership, Session, SessionInfo, SessionList};
use serde::Deserialize;

use crate::auth::{bearer, hash_token, Caller};
use crate::error::{ApiJson, ApiPath};
use crate::storage::session_id;
use crate::{ApiError, AppState};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(exchange))
        .routes(routes!(logout))
        .routes(routes!(sessions))
        .routes(routes!(revoke_session))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExchangeBody {
    token: String,
}

#[utoipa::path(post, path = "/auth/exchange", extensions(("x-required-role" = json!("public"))), tag = "auth", responses((status = 200, body = Session, description = "a session token"), (status = 401, description = "invalid or used link")))]
async fn exchange(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ExchangeBody>,
) -> Result<Json<Session>, ApiError> {
    let (session, user) = crate::auth::exchange(state.db(), &body.token).await?;
    Ok(Json(session_for(state.db(), session, user).await?))
}

/// A sign-in's answer: its session token and the user's workspaces.
pub(super) async fn session_for(
    store: &crate::storage::Store,
    session_token: String,
    user_id: String,
) -> Result<Session, ApiError> {
    let workspaces = store
        .memberships(&user_id)
        .await?
        .into_iter()
        .map(|(id, role, org_id)| Membership { id, role, org_id })
        .collect();
    Ok(Session {
        session_token,
        user_id,
        workspaces,
    })
}

#[utoipa::path(post, path = "/auth/logout", extensions(("x-required-role" = json!("viewer"))), tag = "auth", responses((status = 204, description = "the session's token no longer works"), (status = 401, description = "no valid token")))]
async fn logout(
    State(state): State<AppState>,
    _caller: Caller,
    headers: axum::http::HeaderMap,
) -> Result<axum::http::StatusCode, ApiError> {
    if let Some(token) = bearer(&headers) {
        state.db().delete_session(&hash_token(token)).await?;
    }
    Ok(axum::http::StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/auth/sessions", extensions(("x-required-role" = json!("viewer"))), tag = "auth", responses((status = 200, body = SessionList, description = "the caller's sessions that have not expired, newest first; `current` marks the one asking")))]
async fn sessions(
    State(state): State<AppState>,
    caller: Caller,
    headers: axum::http::HeaderMap,
) -> Result<Json<SessionList>, ApiError> {
    let own = bearer(&headers).map(|t| session_id(&hash_token(t)));
    let sessions = state
        .db()
        .list_sessions(&caller.user_id)
        .await?
        .into_iter()
        .map(|(id, created_at, expires_at)| SessionInfo {
            current: own.as_deref() == Some(id.as_str()),
            id,
            created_at,
            expires_at,
        })
        .collect();
    Ok(Json(SessionList { sessions }))
}

#[utoipa::path(delete, path = "/auth/sessions/{id}", extensions(("x-required-role" = json!("viewer"))), tag = "auth", params(("id" = String, Path, description = "a session's id from the list")), responses((status = 204, description = "that session's token no longer works"), (status = 404, description = "no such session of the caller")))]
async fn revoke_session(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<axum::http::StatusCode, ApiError> {
    state.db().revoke_session(&caller.user_id, &id).await?;
    Ok(axum::http::StatusCode::NO_CONTENT)
}
