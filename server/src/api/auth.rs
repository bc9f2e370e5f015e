//! `POST /api/v1/auth/exchange`: a one-time sign-in token for a session token.

use axum::extract::State;
use axum::Json;
use node_runtime::wire::{Membership, Session};
use serde::Deserialize;

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
