//! Approvals: the pending list (with a count for the UI badge), approve,
//! deny (reason required) and request revision (note required).

use axum::extract::State;
use axum::Json;
use node_runtime::agent::approval::Decision;
use node_runtime::wire::{ApprovalDecided, ApprovalStatus, PendingApprovals};
use serde::Deserialize;
use serde_json::json;

use super::views;
use crate::auth::Caller;
use crate::error::{ApiJson, ApiPath};
use crate::storage::StoreError;
use crate::{ApiError, AppState};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(pending))
        .routes(routes!(approve))
        .routes(routes!(deny))
        .routes(routes!(revise))
}

#[utoipa::path(get, path = "/approvals", extensions(("x-required-role" = json!("viewer"))), tag = "approvals", responses((status = 200, body = PendingApprovals, description = "pending approvals and their count")))]
async fn pending(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<PendingApprovals>, ApiError> {
    let rows = state.db().pending_approvals(&caller.workspace_id).await?;
    let pending: Vec<_> = rows
        .into_iter()
        .map(views::approval)
        .collect::<Result<_, _>>()?;
    Ok(Json(PendingApprovals {
        count: pending.len(),
        pending,
    }))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ReasonBody {
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    note: Option<String>,
}

async fn decide(
    state: &AppState,
    caller: &Caller,
    token: &str,
    status: &str,
    decision: Decision,
    note: Option<String>,
) -> Result<Json<ApprovalDecided>, ApiError> {
    let decided = state
        .db()
        .decide_approval(
            &caller.workspace_id,
            token,
            status,
            &caller.user_id,
            note.as_deref(),
        )
        .await;
    let row = match decided {
        Ok(row) => row,
        Err(StoreError::Conflict { .. }) => {
            let current = state.db().get_approval(&caller.workspace_id, token).await?;
            let message = if current.status == ApprovalStatus::Closed.as_str() {
                "the run of this approval has ended; nothing waits for a decision".to_string()
            } else {
                format!("this approval was already decided ({})", current.status)
            };
            return Err(ApiError::Conflict {
                message,
                details: json!({"status": current.status}),
            });
        }
        Err(other) => return Err(other.into()),
    };
    let detail = json!({"decision": status, "run_id": row.run_id, "tool": row.tool, "note": note});
    crate::audit::queue(
        state.runs(),
        caller,
        "approval.decided",
        &row.call_id,
        detail,
    );
    let delivered = state.runs().deliver(token, decision);
    Ok(Json(ApprovalDecided {
        approval: views::approval(row)?,
        delivered,
    }))
}

#[utoipa::path(post, path = "/approvals/{token}/approve", extensions(("x-required-role" = json!("editor"))), tag = "approvals", params(("token" = String, Path, description = "approval token")), responses((status = 200, body = ApprovalDecided, description = "approved"), (status = 409, description = "already decided")))]
async fn approve(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(token): ApiPath<String>,
) -> Result<Json<ApprovalDecided>, ApiError> {
    decide(&state, &caller, &token, "approved", Decision::Approve, None).await
}

#[utoipa::path(post, path = "/approvals/{token}/deny", extensions(("x-required-role" = json!("editor"))), tag = "approvals", params(("token" = String, Path, description = "approval token")), responses((status = 200, body = ApprovalDecided, description = "denied"), (status = 422, description = "reason missing")))]
async fn deny(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(token): ApiPath<String>,
    ApiJson(body): ApiJson<ReasonBody>,
) -> Result<Json<ApprovalDecided>, ApiError> {
    let reason = body
        .reason
        .filter(|r| !r.trim().is_empty())
        .ok_or_else(|| {
            ApiError::unprocessable("a denial needs a reason", json!({"path": "reason"}))
        })?;
    decide(
        &state,
        &caller,
        &token,
        "denied",
        Decision::Deny {
            reason: reason.clone(),
        },
        Some(reason),
    )
    .await
}

#[utoipa::path(post, path = "/approvals/{token}/revise", extensions(("x-required-role" = json!("editor"))), tag = "approvals", params(("token" = String, Path, description = "approval token")), responses((status = 200, body = ApprovalDecided, description = "revision requested"), (status = 422, description = "note missing")))]
async fn revise(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(token): ApiPath<String>,
    ApiJson(body): ApiJson<ReasonBody>,
) -> Result<Json<ApprovalDecided>, ApiError> {
    let note = body.note.filter(|r| !r.trim().is_empty()).ok_or_else(|| {
        ApiError::unprocessable("a revision request needs a note", json!({"path": "note"}))
    })?;
    decide(
        &state,
        &caller,
        &token,
        "revision_requested",
        Decision::Revise { note: note.clone() },
        Some(note),
    )
    .await
}
