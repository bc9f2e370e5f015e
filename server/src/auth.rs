//! Authentication and tenancy.
//!
//! API tokens are random, shown once, and stored only as their BLAKE3 hash.
//! On start the server makes sure a local admin exists in the default
//! workspace and prints a sign-in URL carrying a one-time token, which the
//! app exchanges (`POST /api/v1/auth/exchange`) for a session token; an
//! invitation link (`api/invitations.rs`) makes a user and a session too.
//! Every API call but the public ones (`api/roles.rs`) carries
//! `Authorization: Bearer <token>`; the workspace is `X-Glassbox-Workspace`
//! if the user belongs to it (404 otherwise), else the one they joined
//! first.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use node_runtime::wire::Role;

use crate::storage::{now_plus, Store};
use crate::{ApiError, AppState};

pub const DEFAULT_WORKSPACE: &str = "default";
pub const ADMIN_USER: &str = "admin";
/// The organization the default workspace belongs to.
pub const DEFAULT_ORG: &str = "default";
const SIGNIN_TTL_HOURS: i64 = 24;
/// How long a session lasts, from a sign-in link or an invitation.
pub const SESSION_TTL_DAYS: i64 = 30;

/// A fresh random token (two v4 UUIDs, 244 random bits), as hex.
pub fn new_token() -> String {
    format!(
        "gbx_{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

pub fn hash_token(token: &str) -> String {
    blake3::hash(token.as_bytes()).to_hex().to_string()
}

/// Ensures the default workspace and the local admin; returns a new
/// one-time sign-in token.
pub async fn bootstrap(store: &Store) -> Result<String, crate::storage::StoreError> {
    ensure_local_admin(store).await?;
    let token = new_token();
    store
        .insert_token(
            &hash_token(&token),
            ADMIN_USER,
            "signin",
            Some(&now_plus(chrono::Duration::hours(SIGNIN_TTL_HOURS))),
        )
        .await?;
    Ok(token)
}

/// Ensures the default workspace (in the default organization) and the
/// local admin. The local admin is made admin of the default workspace on
/// the first start, or again when they belong to no workspace (so the
/// printed link always signs in); a role they were given since stays.
pub async fn ensure_local_admin(store: &Store) -> Result<(), crate::storage::StoreError> {
    store
        .ensure_workspace(DEFAULT_WORKSPACE, "Default workspace")
        .await?;
    default_org(store).await?;
    store.ensure_user(ADMIN_USER, "Local admin").await?;
    if store.memberships(ADMIN_USER).await?.is_empty() {
        store
            .add_membership(DEFAULT_WORKSPACE, ADMIN_USER, "admin")
            .await?;
    }
    Ok(())
}

/// The default workspace's organization, created and linked on first use.
pub async fn default_org(store: &Store) -> Result<String, crate::storage::StoreError> {
    if let Some(org) = store.workspace_org(DEFAULT_WORKSPACE).await? {
        return Ok(org);
    }
    store
        .ensure_workspace(DEFAULT_WORKSPACE, "Default workspace")
        .await?;
    store
        .ensure_org(DEFAULT_ORG, "Default organization")
        .await?;
    store
        .set_workspace_org(DEFAULT_WORKSPACE, Some(DEFAULT_ORG))
        .await?;
    Ok(DEFAULT_ORG.into())
}

/// Trades a one-time sign-in token for a session token.
pub async fn exchange(store: &Store, signin_token: &str) -> Result<(String, String), ApiError> {
    let user = store
        .token_user(&hash_token(signin_token), "signin")
        .await?
        .ok_or_else(|| ApiError::unauthorized("this sign-in link is invalid, expired or already used; restart the server for a new one"))?;
    let session = new_token();
    store
        .insert_token(
            &hash_token(&session),
            &user,
            "session",
            Some(&now_plus(chrono::Duration::days(SESSION_TTL_DAYS))),
        )
        .await?;
    Ok((session, user))
}

/// A stored role; one this server does not know (a newer server's) grants
/// the least.
pub fn role_of(stored: &str) -> Role {
    Role::parse(stored).unwrap_or(Role::Viewer)
}

/// The caller: a user acting in one workspace.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user_id: String,
    pub workspace_id: String,
    pub role: Role,
    /// The organization of the workspace, if it belongs to one.
    pub org_id: Option<String>,
}

impl Caller {
    /// The caller's workspace and organization as the owner of a run: a run
    /// reads workspace and organization secrets, never the user's own.
    pub fn secret_owner(&self) -> node_runtime::secrets::SecretOwner {
        node_runtime::secrets::SecretOwner {
            user_id: None,
            workspace_id: self.workspace_id.clone(),
            org_id: self.org_id.clone(),
        }
    }
}

/// The bearer token of a request, if it sends one.
pub fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        // The route's role guard resolved it already.
        if let Some(caller) = parts.extensions.get::<Caller>() {
            return Ok(caller.clone());
        }
        let token = bearer(&parts.headers).ok_or_else(|| {
            ApiError::unauthorized("sign in first: send `Authorization: Bearer <token>`")
        })?;
        let hash = hash_token(token.trim());
        let store = state.db();
        let (user, memberships) = store
            .token_caller(&hash)
            .await?
            .ok_or_else(|| ApiError::unauthorized("the token is invalid or expired"))?;
        let wanted = parts
            .headers
            .get("x-glassbox-workspace")
            .and_then(|v| v.to_str().ok());
        let (workspace_id, role, org_id) = match wanted {
            // Asking for a workspace you do not belong to looks exactly like
            // asking for one that does not exist.
            Some(w) => memberships
                .into_iter()
                .find(|(id, _, _)| id == w)
                .ok_or_else(|| ApiError::not_found(format!("workspace {w} not found")))?,
            None => memberships
                .into_iter()
                .next()
                .ok_or_else(|| ApiError::unauthorized("this user belongs to no workspace"))?,
        };
        let role = role_of(&role);
        Ok(Self {
            user_id: user,
            workspace_id,
            role,
            org_id,
        })
    }
}
