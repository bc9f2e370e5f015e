//! Workspaces (issue 34): `GET /workspaces` (the caller's, by name, and the
//! one this request acts in), `POST /workspaces` (a new one in the current
//! workspace's organization; the caller becomes its admin) and `PATCH
//! /workspace` (rename the current one; admin).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use node_runtime::wire::{Role, WorkspaceList, WorkspaceName, WorkspaceView};
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{role_of, Caller};
use crate::error::ApiJson;
use crate::storage::{new_id, Store, UserWorkspaceRow};
use crate::{ApiError, AppState};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(rename))
}

fn view(row: UserWorkspaceRow) -> WorkspaceView {
    WorkspaceView {
        role: role_of(&row.role),
        members: u32::try_from(row.members).unwrap_or(u32::MAX),
        id: row.id,
        name: row.name,
        org_id: row.org_id,
        created_at: row.created_at,
    }
}

/// Workspace `id` as `user_id` sees it.
pub(crate) async fn workspace_of(
    store: &Store,
    user_id: &str,
    id: &str,
) -> Result<WorkspaceView, ApiError> {
    store
        .user_workspaces(user_id)
        .await?
        .into_iter()
        .find(|w| w.id == id)
        .map(view)
        .ok_or_else(|| ApiError::not_found(format!("workspace {id} not found")))
}

/// The workspaces `user_id` belongs to, by name.
pub(crate) async fn workspaces_of(
    store: &Store,
    user_id: &str,
) -> Result<Vec<WorkspaceView>, ApiError> {
    Ok(store
        .user_workspaces(user_id)
        .await?
        .into_iter()
        .map(view)
        .collect())
}

/// A new workspace named `name`, with `caller`'s user as its admin;
/// recorded in its own audit log. It joins the organization of the
/// current workspace only when the caller is that workspace's admin: an
/// admin of a workspace may change its organization's secrets, which a
/// viewer or editor must not gain by making a workspace.
pub(crate) async fn create_workspace(
    store: &Store,
    caller: &Caller,
    name: &str,
) -> Result<WorkspaceView, ApiError> {
    let id = new_id();
    let org = caller
        .org_id
        .as_deref()
        .filter(|_| caller.role == Role::Admin);
    store
        .create_workspace(&id, name, org, &caller.user_id)
        .await?;
    crate::audit::record_in(
        store,
        &id,
        &caller.user_id,
        "workspace.created",
        &id,
        json!({ "name": name }),
    )
    .await;
    workspace_of(store, &caller.user_id, &id).await
}

/// Renames `caller`'s current workspace.
pub(crate) async fn rename_workspace(
    store: &Store,
    caller: &Caller,
    name: &str,
) -> Result<WorkspaceView, ApiError> {
    let before = workspace_of(store, &caller.user_id, &caller.workspace_id).await?;
    store.rename_workspace(&caller.workspace_id, name).await?;
    crate::audit::record(
        store,
        caller,
        "workspace.renamed",
        &caller.workspace_id,
        json!({ "name": name, "from": before.name }),
    )
    .await;
    Ok(WorkspaceView {
        name: name.to_string(),
        ..before
    })
}

#[utoipa::path(get, path = "/workspaces", tag = "workspaces", extensions(("x-required-role" = json!("viewer"))), responses((status = 200, body = WorkspaceList, description = "the caller's workspaces by name, with their role in each; `current` is the one this request acts in (`X-Glassbox-Workspace`, else the first)")))]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<WorkspaceList>, ApiError> {
    Ok(Json(WorkspaceList {
        workspaces: workspaces_of(state.db(), &caller.user_id).await?,
        current: caller.workspace_id,
    }))
}

#[utoipa::path(post, path = "/workspaces", tag = "workspaces", request_body = WorkspaceName, extensions(("x-required-role" = json!("viewer"))), responses((status = 201, body = WorkspaceView, description = "created in the current workspace's organization, the caller its admin"), (status = 422, description = "a bad name; `details.path` is `name`")))]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<WorkspaceName>,
) -> Result<(StatusCode, Json<WorkspaceView>), ApiError> {
    ApiError::from_shape(body.check())?;
    let view = create_workspace(state.db(), &caller, body.name.trim()).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[utoipa::path(patch, path = "/workspace", tag = "workspaces", request_body = WorkspaceName, extensions(("x-required-role" = json!("admin"))), responses((status = 200, body = WorkspaceView, description = "the current workspace, renamed"), (status = 403, description = "not an admin of the workspace"), (status = 422, description = "a bad name; `details.path` is `name`")))]
async fn rename(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<WorkspaceName>,
) -> Result<Json<WorkspaceView>, ApiError> {
    ApiError::from_shape(body.check())?;
    Ok(Json(
        rename_workspace(state.db(), &caller, body.name.trim()).await?,
    ))
}
