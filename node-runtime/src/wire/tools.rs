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
