//! `GET /api/v1/audit`: the workspace's audit log for its admins, newest
//! first, a page at a time (`?before=` the last id of the page before).

use axum::extract::State;
use axum::Json;
use node_runtime::wire::{AuditEvent, AuditList};
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::ApiQuery;
use crate::{ApiError, AppState};

/// Entries per page unless `limit` asks for fewer or more (at most
/// [`MAX_PAGE`]).
const DEFAULT_PAGE: i64 = 50;
const MAX_PAGE: i64 = 200;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    before: Option<String>,
    limit: Option<i64>,
}

#[utoipa::path(get, path = "/audit", extensions(("x-required-role" = json!("admin"))), tag = "audit", params(("before" = Option<String>, Query, description = "the `next` of the page before"), ("limit" = Option<i64>, Query, description = "entries per page, 1-200 (default 50)")), responses((status = 200, body = AuditList, description = "who did what, newest first: approvals decided, connections and secrets changed, runs started, members and invitations"), (status = 403, description = "takes the admin role"), (status = 422, description = "a bad `limit`")))]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> Result<Json<AuditList>, ApiError> {
    let limit = q.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::invalid_at(
            "limit",
            format!("a page holds 1 to {MAX_PAGE} entries"),
        ));
    }
    // Entries queued before this request are in the page (see `audit::queue`).
    state.runs().writer().flush().await?;
    // One more than asked tells whether a next page exists.
    let mut rows = state
        .db()
        .list_audit(&caller.workspace_id, q.before.as_deref(), limit + 1)
        .await?;
    let more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    let next = more.then(|| rows.last().map(|r| r.id.clone())).flatten();
    let events = rows
        .into_iter()
        .map(|r| AuditEvent {
            actor_name: r.actor_name.unwrap_or_else(|| r.actor_id.clone()),
            detail: serde_json::from_str(&r.detail).unwrap_or(serde_json::Value::Null),
            id: r.id,
            at: r.created_at,
            actor_id: r.actor_id,
            action: r.action,
            target: r.target,
        })
        .collect();
    Ok(Json(AuditList { events, next }))
}
