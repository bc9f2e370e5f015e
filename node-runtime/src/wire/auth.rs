//! Sign-in as the API shows it: the answer of the one-time token exchange,
//! and the caller's signed-in sessions (to see and end them).

use serde::{Deserialize, Serialize};

/// Body of `POST /api/v1/auth/exchange`: a session token and the user's
/// workspaces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Session {
    pub session_token: String,
    pub user_id: String,
    #[serde(default)]
    pub workspaces: Vec<Membership>,
}

/// One workspace the user belongs to, with their role in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Membership {
    /// The workspace id.
    pub id: String,
    /// `admin`, `editor` or `viewer` (see [`super::Role`]).
    pub role: String,
    pub org_id: Option<String>,
}

/// One of the caller's sessions (a signed-in browser or client). The
/// session token itself is never shown again; `id` names it for
/// `DELETE /api/v1/auth/sessions/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionInfo {
    pub id: String,
    pub created_at: String,
    pub expires_at: Option<String>,
    /// True for the session that asked.
    pub current: bool,
}

/// Body of `GET /api/v1/auth/sessions`: the caller's sessions, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionList {
    pub sessions: Vec<SessionInfo>,
}
