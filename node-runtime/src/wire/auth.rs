//! Sign-in as the API shows it: the answer of the one-time token exchange.

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
    /// `admin` or `member`.
    pub role: String,
    pub org_id: Option<String>,
}
