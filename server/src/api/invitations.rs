//! Invitations (issue 34). Admins of the current workspace: `GET
//! /invitations`, `POST /invitations` (a one-time link for a role; its token
//! is shown once and stored only as its BLAKE3 hash) and `DELETE
//! /invitations/{id}` (revoke). Anyone holding the link: `GET
//! /invite/{token}` (what it offers) and `POST /invite/{token}/accept`
//! (join: a new user with the display name given, or the signed-in caller;
//! either way a new session). A link works once: taking it is one atomic
//! `UPDATE ... RETURNING`, so a second accept, like an expired or revoked
//! link, is 410 saying which.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use node_runtime::wire::{
    InvitationAccept, InvitationCreated, InvitationList, InvitationPreview, InvitationStatus,
    InvitationView, NewInvitation, Session,
};
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{bearer, hash_token, new_token, role_of, Caller};
use crate::error::{ApiJson, ApiPath};
use crate::storage::{new_id, now, now_plus, Acceptance, InvitationRow, Joiner, Store};
use crate::{ApiError, AppState};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(revoke))
        .routes(routes!(preview))
        .routes(routes!(accept))
}

/// Where an invitation stands now.
fn status(row: &InvitationRow, now: &str) -> InvitationStatus {
    if row.accepted_at.is_some() {
        InvitationStatus::Accepted
    } else if row.revoked_at.is_some() {
        InvitationStatus::Revoked
    } else if row.expires_at.as_str() <= now {
        InvitationStatus::Expired
    } else {
        InvitationStatus::Pending
    }
}

fn view(row: InvitationRow, now: &str) -> InvitationView {
    InvitationView {
        status: status(&row, now),
        role: role_of(&row.role),
        id: row.id,
        workspace_id: row.workspace_id,
        created_by: row.created_by,
        created_at: row.created_at,
        expires_at: row.expires_at,
        accepted_by: row.accepted_by,
        accepted_at: row.accepted_at,
        revoked_at: row.revoked_at,
    }
}

/// The 410 of a link that worked once and works no more.
fn gone(status: InvitationStatus) -> ApiError {
    ApiError::gone(match status {
        InvitationStatus::Accepted => {
            "this invitation link was already used; ask an admin of the workspace for a new one"
        }
        InvitationStatus::Revoked => {
            "this invitation link was revoked; ask an admin of the workspace for a new one"
        }
        _ => "this invitation link has expired; ask an admin of the workspace for a new one",
    })
}

fn unknown() -> ApiError {
    ApiError::not_found("no invitation has this link; check that it was copied whole")
}

/// The invitations of `caller`'s workspace, newest first.
pub(crate) async fn invitations(
    store: &Store,
    caller: &Caller,
) -> Result<InvitationList, ApiError> {
    let t = now();
    Ok(InvitationList {
        invitations: store
            .list_invitations(&caller.workspace_id)
            .await?
            .into_iter()
            .map(|r| view(r, &t))
            .collect(),
    })
}

/// A new invitation into `caller`'s workspace (its shape checked).
pub(crate) async fn invite(
    store: &Store,
    caller: &Caller,
    body: &NewInvitation,
) -> Result<InvitationCreated, ApiError> {
    ApiError::from_shape(body.check())?;
    let token = new_token();
    let row = InvitationRow {
        id: new_id(),
        workspace_id: caller.workspace_id.clone(),
        role: body.role.as_str().into(),
        created_by: caller.user_id.clone(),
        created_at: now(),
        expires_at: now_plus(chrono::Duration::hours(i64::from(body.hours()))),
        accepted_by: None,
        accepted_at: None,
        revoked_at: None,
    };
    store.insert_invitation(&row, &hash_token(&token)).await?;
    crate::audit::record(
        store,
        caller,
        "member.invited",
        &row.id,
        json!({ "role": body.role, "expires_at": row.expires_at }),
    )
    .await;
    Ok(InvitationCreated {
        invitation: view(row, &now()),
        path: format!("/invite/{token}"),
        token,
    })
}

#[utoipa::path(get, path = "/invitations", tag = "members", extensions(("x-required-role" = json!("admin"))), responses((status = 200, body = InvitationList, description = "the workspace's invitations, newest first (never their links)"), (status = 403, description = "not an admin of the workspace")))]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<InvitationList>, ApiError> {
    Ok(Json(invitations(state.db(), &caller).await?))
}

#[utoipa::path(post, path = "/invitations", tag = "members", request_body = NewInvitation, extensions(("x-required-role" = json!("admin"))), responses((status = 201, body = InvitationCreated, description = "the one-time link, shown this once"), (status = 403, description = "not an admin of the workspace"), (status = 422, description = "a bad role or lifetime; `details.path` names the field")))]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<NewInvitation>,
) -> Result<(StatusCode, Json<InvitationCreated>), ApiError> {
    Ok((
        StatusCode::CREATED,
        Json(invite(state.db(), &caller, &body).await?),
    ))
}

#[utoipa::path(delete, path = "/invitations/{id}", tag = "members", params(("id" = String, Path, description = "the invitation's id")), extensions(("x-required-role" = json!("admin"))), responses((status = 204, description = "revoked: its link no longer works"), (status = 403, description = "not an admin of the workspace"), (status = 404, description = "no such invitation in this workspace"), (status = 409, description = "already accepted")))]
async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    revoke_invitation(state.db(), &caller, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Revokes invitation `id` of `caller`'s workspace (again: nothing more).
pub(crate) async fn revoke_invitation(
    store: &Store,
    caller: &Caller,
    id: &str,
) -> Result<(), ApiError> {
    let (after, revoked) = store
        .revoke_invitation(&caller.workspace_id, id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("invitation {id} not found")))?;
    if after.accepted_at.is_some() {
        return Err(ApiError::Conflict {
            message: format!("invitation {id} was already accepted; remove the member instead"),
            details: json!({ "accepted_by": after.accepted_by }),
        });
    }
    if revoked {
        crate::audit::record(
            store,
            caller,
            "invitation.revoked",
            id,
            json!({ "role": after.role }),
        )
        .await;
    }
    Ok(())
}

#[utoipa::path(get, path = "/invite/{token}", tag = "members", params(("token" = String, Path, description = "the secret of the link")), extensions(("x-required-role" = json!("public"))), responses((status = 200, body = InvitationPreview, description = "what the link offers (no sign-in needed)"), (status = 404, description = "no invitation has this link"), (status = 410, description = "used, expired or revoked, saying which")))]
async fn preview(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
) -> Result<Json<InvitationPreview>, ApiError> {
    let offer = state
        .db()
        .invitation_offer(&hash_token(token.trim()))
        .await?
        .ok_or_else(unknown)?;
    let invitation = offer.invitation;
    match status(&invitation, &now()) {
        InvitationStatus::Pending => {}
        other => return Err(gone(other)),
    }
    Ok(Json(InvitationPreview {
        workspace_id: invitation.workspace_id,
        workspace_name: offer.workspace_name,
        role: role_of(&invitation.role),
        invited_by: offer.invited_by,
        expires_at: invitation.expires_at,
    }))
}

#[utoipa::path(post, path = "/invite/{token}/accept", tag = "members", params(("token" = String, Path, description = "the secret of the link")), request_body = InvitationAccept, extensions(("x-required-role" = json!("public"))), responses((status = 200, body = Session, description = "joined, and signed in with a new session"), (status = 404, description = "no invitation has this link"), (status = 409, description = "the signed-in caller is a member of the workspace already"), (status = 410, description = "used, expired or revoked, saying which"), (status = 422, description = "a display name is needed (without a sign-in) or not acceptable; `details.path` is `display_name`")))]
async fn accept(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiPath(token): ApiPath<String>,
    ApiJson(body): ApiJson<InvitationAccept>,
) -> Result<Json<Session>, ApiError> {
    let store = state.db();
    ApiError::from_shape(body.check())?;
    // A valid sign-in joins its user; none (or a stale one) makes a user.
    let signed_in = match bearer(&headers) {
        Some(t) => store
            .token_caller(&hash_token(t))
            .await?
            .map(|(user, _)| user),
        None => None,
    };
    let joiner = match (signed_in, &body.display_name) {
        (Some(user), _) => Joiner::Existing(user),
        (None, Some(name)) => Joiner::New(name.trim().to_string()),
        (None, None) => {
            return Err(ApiError::invalid_at(
                "display_name",
                "choose the name the workspace's members will see you by",
            ))
        }
    };
    let session = new_token();
    let outcome = store
        .accept_invitation(
            &hash_token(token.trim()),
            &joiner,
            &hash_token(&session),
            &now_plus(chrono::Duration::days(crate::auth::SESSION_TTL_DAYS)),
        )
        .await?;
    let (invitation_id, user_id, workspace_id, role) =
        match outcome {
            Acceptance::Joined {
                invitation_id,
                user_id,
                workspace_id,
                role,
            } => (invitation_id, user_id, workspace_id, role),
            Acceptance::Unknown => return Err(unknown()),
            Acceptance::Used => return Err(gone(InvitationStatus::Accepted)),
            Acceptance::Revoked => return Err(gone(InvitationStatus::Revoked)),
            Acceptance::Expired => return Err(gone(InvitationStatus::Expired)),
            Acceptance::AlreadyMember => return Err(ApiError::Conflict {
                message:
                    "you are a member of this workspace already; the link is left for someone else"
                        .into(),
                details: serde_json::Value::Null,
            }),
        };
    crate::audit::record_in(
        store,
        &workspace_id,
        &user_id,
        "member.joined",
        &user_id,
        json!({ "role": role, "invitation": invitation_id }),
    )
    .await;
    let mut answer = super::auth::session_for(store, session, user_id).await?;
    // The workspace joined comes first, so the app opens it.
    answer.workspaces.sort_by_key(|m| m.id != workspace_id);
    Ok(Json(answer))
}
