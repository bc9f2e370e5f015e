//! `/api/v1/connections`: a workspace's connections (`crate::connections`).
//! Members read names and kinds; admins also read configs (which name
//! secrets, never hold them) and change them.

use serde::{Deserialize, Serialize};

use crate::connections::ConnectionConfig;

/// One connection as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConnectionView {
    pub name: String,
    /// `http`, `postgres` or `sqlite`.
    pub kind: String,
    /// The config, for admins; null for other members.
    #[serde(default)]
    pub config: Option<ConnectionConfig>,
    pub created_at: String,
    pub updated_at: String,
}

/// Body of `GET /api/v1/connections`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConnectionList {
    pub connections: Vec<ConnectionView>,
}

/// Body of `POST /api/v1/connections`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewConnection {
    pub name: String,
    pub config: ConnectionConfig,
}

/// Body of `PUT /api/v1/connections/{name}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ConnectionUpdate {
    pub config: ConnectionConfig,
}

/// Body of `POST /api/v1/connections/{name}/test`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConnectionTestResult {
    pub ok: bool,
    /// What happened, in words ("answered 200 in 12 ms", "the secret
    /// PG_URL is not set", the server's own error).
    pub message: String,
    pub latency_ms: f64,
}
