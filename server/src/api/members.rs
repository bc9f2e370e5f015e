//! Members of the current workspace (issue 34): `GET /members` (any
//! member), `PATCH /members/{user_id}` (a role change) and `DELETE
//! /members/{user_id}` (a removal), both admin. The last admin of a
//! workspace can be neither demoted nor removed (409). A removed member's
//! tokens stop reaching the workspace at once (the caller is resolved on
//! every request); one left in no workspace loses every token.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use node_runtime::wire::{MemberList, MemberView, Role, RoleChange};
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::role_of;
use crate::auth::Caller;
use crate::error::{ApiJson, ApiPath};
use crate::storage::{MemberRefusal, MemberRow, Store};
use crate::{ApiError, AppState};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(change_role, remove))
}

fn view(row: MemberRow, caller: &str) -> MemberView {
    MemberView {
        you: row.user_id == caller,
        role: role_of(&row.role),
        user_id: row.user_id,
        name: row.name,
        joined_at: row.joined_at,
    }
}

fn refusal(refused: MemberRefusal, user_id: &str, what: &str) -> ApiError {
    match refused {
        MemberRefusal::NotMember => {
            ApiError::not_found(format!("member {user_id} not found in this workspace"))
        }
        MemberRefusal::LastAdmin => ApiError::Conflict {
            message: format!(
                "{user_id} is the last admin of this workspace and cannot be {what}; make another member admin first"
            ),
            details: json!({ "user_id": user_id }),
        },
    }
}

/// The members of `caller`'s workspace by name.
pub(crate) async fn members(store: &Store, caller: &Caller) -> Result<MemberList, ApiError> {
    Ok(MemberList {
        members: store
            .list_members(&caller.workspace_id)
            .await?
            .into_iter()
            .map(|m| view(m, &caller.user_id))
            .collect(),
    })
}

/// Gives `user_id` the role `role` in `caller`'s workspace.
pub(crate) async fn change_member_role(
    store: &Store,
    caller: &Caller,
    user_id: &str,
    role: Role,
) -> Result<MemberView, ApiError> {
    let before = store
        .set_member_role(&caller.workspace_id, user_id, role.as_str())
        .await?
        .map_err(|r| refusal(r, user_id, "demoted"))?;
    if before != role.as_str() {
        crate::audit::record(
            store,
            caller,
            "member.role_changed",
            user_id,
            json!({ "role": role, "from": before }),
        )
        .await;
    }
    let member = store
        .get_member(&caller.workspace_id, user_id)
        .await?
        .ok_or_else(|| refusal(MemberRefusal::NotMember, user_id, "changed"))?;
    Ok(view(member, &caller.user_id))
}

/// Removes `user_id` from `caller`'s workspace.
pub(crate) async fn remove_member(
    store: &Store,
    caller: &Caller,
    user_id: &str,
) -> Result<(), ApiError> {
    let (role, tokens_deleted) = store
        .remove_member(&caller.workspace_id, user_id)
        .await?
        .map_err(|r| refusal(r, user_id, "removed"))?;
    crate::audit::record(
        store,
        caller,
        "member.removed",
        user_id,
        json!({ "role": role, "tokens_deleted": tokens_deleted }),
    )
    .await;
    Ok(())
}

#[utoipa::path(get, path = "/members", tag = "members", extensions(("x-required-role" = json!("viewer"))), responses((status = 200, body = MemberList, description = "the current workspace's members by name")))]
async fn list(State(state): State<AppState>, caller: Caller) -> Result<Json<MemberList>, ApiError> {
    Ok(Json(members(state.db(), &caller).await?))
}

#[utoipa::path(patch, path = "/members/{user_id}", tag = "members", params(("user_id" = String, Path, description = "the member's user id")), request_body = RoleChange, extensions(("x-required-role" = json!("admin"))), responses((status = 200, body = MemberView, description = "the member with their new role"), (status = 403, description = "not an admin of the workspace"), (status = 404, description = "no such member of this workspace"), (status = 409, description = "the last admin cannot be demoted"), (status = 422, description = "not a role; `details.path` is `role`")))]
async fn change_role(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(user_id): ApiPath<String>,
    ApiJson(body): ApiJson<RoleChange>,
) -> Result<Json<MemberView>, ApiError> {
    Ok(Json(
        change_member_role(state.db(), &caller, &user_id, body.role).await?,
    ))
}

#[utoipa::path(delete, path = "/members/{user_id}", tag = "members", params(("user_id" = String, Path, description = "the member's user id")), extensions(("x-required-role" = json!("admin"))), responses((status = 204, description = "removed: their sessions and tokens no longer reach this workspace (and are deleted if they belong to no other)"), (status = 403, description = "not an admin of the workspace"), (status = 404, description = "no such member of this workspace"), (status = 409, description = "the last admin cannot be removed")))]
async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(user_id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    remove_member(state.db(), &caller, &user_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
