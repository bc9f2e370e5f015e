//! `/api/v1/connections`: a workspace's connections (`crate::connections`).
//! Members read names and kinds; admins also read configs (which name
//! secrets, never hold them) and change them.

use serde::{Deserialize, Serialize};

use crate::connections::ConnectionConfig;
use crate::tool_spec::SideEffects;

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
    /// An `mcp` connection's server at its last refresh; null before one
    /// and for other kinds.
    #[serde(default)]
    pub mcp: Option<McpServerStatus>,
}

/// What an MCP server said at the last refresh.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct McpServerStatus {
    pub server_name: String,
    pub server_version: String,
    /// The MCP protocol version the two sides agreed on.
    pub protocol_version: String,
    pub refreshed_at: String,
    /// The tools it listed (the server's names).
    pub tools: Vec<String>,
}

/// Body of `PUT /api/v1/connections/{name}/tools/{tool}`: an admin's
/// side-effect class for one MCP tool, or null for the annotations'.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct McpToolClass {
    pub side_effects: Option<SideEffects>,
}

/// Answer of `PUT /api/v1/connections/{name}/tools/{tool}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct McpToolClassSet {
    pub connection: String,
    pub tool: String,
    pub side_effects: Option<SideEffects>,
    pub set_by: String,
    pub set_at: String,
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
