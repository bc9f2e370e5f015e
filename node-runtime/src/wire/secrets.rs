//! Secrets as the API shows them: names and scopes, never values.

use serde::{Deserialize, Serialize};

/// One secret the caller can see.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SecretName {
    pub name: String,
    /// `user`, `workspace` or `org`.
    pub scope: String,
    pub created_at: String,
}

/// Body of `GET /api/v1/secrets`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SecretList {
    /// Empty for a viewer, who sees only `total`.
    pub secrets: Vec<SecretName>,
    /// How many secrets the caller's workspace reaches (theirs, the
    /// workspace's and its organization's).
    #[serde(default)]
    pub total: usize,
}
