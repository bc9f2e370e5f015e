//! The tool registry as the API shows it: each listable tool version with
//! its badges and whether the workspace has the secrets it needs.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool_spec::{CachePolicy, Lifecycle, SideEffects, ToolCategory};

/// Body of `GET /api/v1/tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolList {
    pub tools: Vec<ToolView>,
}

/// One tool version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolView {
    pub name: String,
    pub version: String,
    /// `name@version`.
    #[serde(rename = "ref")]
    pub reference: String,
    pub description: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub category: ToolCategory,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub side_effects: SideEffects,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub lifecycle: Lifecycle,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub cache: CachePolicy,
    pub timeout_ms: u64,
    pub auth: ToolAuth,
    pub input_schema: Value,
    pub output_schema: Value,
    /// Why the tool has its side-effect class, in words.
    #[serde(default)]
    pub effect_description: Option<String>,
    /// Where an MCP tool comes from; null for built-ins.
    #[serde(default)]
    pub mcp: Option<McpToolSource>,
}

/// An MCP tool's server (at its connection's last refresh).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct McpToolSource {
    pub connection: String,
    /// The server's own name for the tool.
    pub tool: String,
    pub server_name: Option<String>,
    pub server_version: Option<String>,
    /// The negotiated MCP protocol version.
    pub protocol_version: Option<String>,
    /// The tool's annotations as the server sent them (hints).
    pub annotations: Value,
    /// Who set the side-effect class, when an admin did.
    pub side_effects_set_by: Option<String>,
    pub side_effects_set_at: Option<String>,
}

/// Whether the caller's workspace has every secret a tool needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolAuth {
    pub ok: bool,
    pub secrets: Vec<ToolSecret>,
}

/// One secret a tool needs, and where the caller's value comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolSecret {
    pub name: String,
    /// `ok` or `missing`.
    pub status: String,
    /// The scope the value comes from (`user`, `workspace`, `org`).
    pub scope: Option<String>,
    /// A sentence for the tool list, e.g. a missing key.
    pub warning: Option<String>,
}
