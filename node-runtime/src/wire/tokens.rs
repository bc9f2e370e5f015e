//! Long-lived API tokens as the API shows them: the list (never the
//! tokens themselves) and the answer of a creation (the token, once).

use serde::{Deserialize, Serialize};

/// One API token as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApiToken {
    pub id: String,
    /// What the token is for.
    pub name: String,
    /// The user the token acts as.
    pub user_id: String,
    pub created_at: String,
    pub expires_at: Option<String>,
}

/// Body of `POST /api/v1/tokens` (201): the token, shown this once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApiTokenCreated {
    pub id: String,
    pub name: String,
    pub user_id: String,
    pub created_at: String,
    pub expires_at: Option<String>,
    /// The bearer token itself; only its hash is stored.
    pub token: String,
}

/// Body of `GET /api/v1/tokens`: the caller's API tokens, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApiTokenList {
    pub tokens: Vec<ApiToken>,
}
