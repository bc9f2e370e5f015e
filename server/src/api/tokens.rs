//! Long-lived API tokens for automation (CI jobs, scripts): create (the
//! token is shown once), list, revoke. A token acts as the user who made
//! it, in the same workspaces.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use node_runtime::wire::{ApiTokenCreated, ApiTokenList};
use serde::Deserialize;
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::views;
use crate::auth::{hash_token, new_token, Caller};
use crate::error::{ApiJson, ApiPath};
use crate::storage::{new_id, now, ApiTokenRow};
use crate::{ApiError, AppState};

/// The longest lifetime a token can ask for.
pub const MAX_TOKEN_DAYS: i64 = 3650;
const DEFAULT_TOKEN_DAYS: i64 = 90;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(revoke))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    /// What the token is for, 1-100 characters.
    name: String,
    /// Days until it expires, 1-3650 (default 90).
    expires_in_days: Option<i64>,
}

#[utoipa::path(post, path = "/tokens", extensions(("x-required-role" = json!("viewer"))), tag = "tokens", request_body = CreateBody, responses((status = 201, body = ApiTokenCreated, description = "the token, shown this once"), (status = 422, description = "bad name or lifetime")))]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    headers: axum::http::HeaderMap,
    ApiJson(body): ApiJson<CreateBody>,
) -> Result<(StatusCode, Json<ApiTokenCreated>), ApiError> {
    let name = body.name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(ApiError::unprocessable(
            "a token name is 1-100 characters",
            json!({"path": "name"}),
        ));
    }
    let days = body.expires_in_days.unwrap_or(DEFAULT_TOKEN_DAYS);
    if !(1..=MAX_TOKEN_DAYS).contains(&days) {
        return Err(ApiError::unprocessable(
            format!("expires_in_days is 1 to {MAX_TOKEN_DAYS}"),
            json!({"path": "expires_in_days"}),
        ));
    }
    let expires = chrono::Utc::now() + chrono::Duration::days(days);
    // An API token never makes a token that outlives it (a session, which
    // a person renews by signing in, may make any).
    if let Some(own) = crate::auth::bearer(&headers) {
        let own = state.db().token_kind_and_expiry(&hash_token(own)).await?;
        if let Some(limit) = own
            .filter(|(kind, _)| kind == "api")
            .and_then(|(_, expires)| expires)
            .and_then(|l| chrono::DateTime::parse_from_rfc3339(&l).ok())
        {
            if expires > limit {
                return Err(ApiError::unprocessable(
                    format!(
                        "a token cannot outlive the token that creates it (yours expires at {}); ask for fewer days",
                        limit.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                    ),
                    json!({"path": "expires_in_days"}),
                ));
            }
        }
    }
    let token = new_token();
    let row = ApiTokenRow {
        id: new_id(),
        name: name.to_string(),
        user_id: caller.user_id.clone(),
        created_at: now(),
        expires_at: Some(expires.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
    };
    state
        .db()
        .insert_api_token(&row, &hash_token(&token))
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(ApiTokenCreated {
            id: row.id,
            name: row.name,
            user_id: row.user_id,
            created_at: row.created_at,
            expires_at: row.expires_at,
            token,
        }),
    ))
}

#[utoipa::path(get, path = "/tokens", extensions(("x-required-role" = json!("viewer"))), tag = "tokens", responses((status = 200, body = ApiTokenList, description = "the caller's API tokens, without the tokens themselves")))]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<ApiTokenList>, ApiError> {
    let rows = state.db().list_api_tokens(&caller.user_id).await?;
    Ok(Json(ApiTokenList {
        tokens: rows.into_iter().map(views::api_token).collect(),
    }))
}

#[utoipa::path(delete, path = "/tokens/{id}", extensions(("x-required-role" = json!("viewer"))), tag = "tokens", params(("id" = String, Path)), responses((status = 204, description = "revoked"), (status = 404, description = "no such token of the caller")))]
async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    state.db().delete_api_token(&caller.user_id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
