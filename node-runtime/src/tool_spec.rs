//! What a tool declares about itself (seed 003 §3.3 and §7): name, semver
//! version, schemas and metadata. Plain data, shared with the browser app's
//! tool selector; the executable side is `tool::Tool` (runtime feature).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// High-level category for the tool selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCategory {
    Api,
    Code,
    Data,
    Search,
    Utility,
}

/// The security manifest for the policy guard. Ordered: `None < Reads < Writes`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum SideEffects {
    /// A pure function.
    None,
    /// Reads external data.
    Reads,
    /// Writes or modifies external state. The default: a tool that does not
    /// declare its side effects is treated as writing.
    #[default]
    Writes,
}

/// The executor's caching policy for a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CachePolicy {
    #[default]
    None,
    Ttl,
    Forever,
}

/// Deprecation lifecycle of one tool version (seed 003 §7.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    /// Discoverable and executable.
    #[default]
    Active,
    /// Hidden unless asked for; still executes, with a warning.
    Deprecated,
    /// Not discoverable; executing it is POLICY_DENIED.
    Blocked,
}

/// The snake_case word each of these enums serializes as, for display.
macro_rules! words {
    ($($ty:ident { $($variant:ident => $word:literal),+ $(,)? })+) => {
        $(
            impl $ty {
                /// The word this value serializes as.
                pub const fn as_str(self) -> &'static str {
                    match self {
                        $($ty::$variant => $word),+
                    }
                }
            }

            impl std::fmt::Display for $ty {
                fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str(self.as_str())
                }
            }
        )+
    };
}

words! {
    ToolCategory { Api => "api", Code => "code", Data => "data", Search => "search", Utility => "utility" }
    SideEffects { None => "none", Reads => "reads", Writes => "writes" }
    CachePolicy { None => "none", Ttl => "ttl", Forever => "forever" }
    Lifecycle { Active => "active", Deprecated => "deprecated", Blocked => "blocked" }
}

/// A token-bucket rate limit: `requests` per `per_seconds`, per workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimit {
    pub requests: u32,
    pub per_seconds: u32,
}

/// Everything about a tool except its code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolMetadata {
    pub category: ToolCategory,
    #[serde(default)]
    pub side_effects: SideEffects,
    #[serde(default)]
    pub cache: CachePolicy,
    /// Seconds a cached result stays valid when `cache` is `ttl`.
    #[serde(default)]
    pub cache_ttl_s: Option<u64>,
    #[serde(default)]
    pub lifecycle: Lifecycle,
    /// Names of the secrets the tool needs (e.g. `"GITHUB_TOKEN"`); it
    /// receives these and no others.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// Default timeout of one call, in milliseconds.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    #[serde(default)]
    pub rate_limit: Option<RateLimit>,
    /// A sentence on what a call changes in the world, shown on approvals.
    #[serde(default)]
    pub effect_description: Option<String>,
}

fn default_timeout_ms() -> u64 {
    30_000
}

impl ToolMetadata {
    /// Metadata with the safe defaults: writes, no cache, active, 30 s.
    pub fn new(category: ToolCategory) -> Self {
        Self {
            category,
            side_effects: SideEffects::default(),
            cache: CachePolicy::None,
            cache_ttl_s: None,
            lifecycle: Lifecycle::Active,
            secrets: Vec::new(),
            timeout_ms: default_timeout_ms(),
            rate_limit: None,
            effect_description: None,
        }
    }
}

/// Where a secret was found. Ordered by precedence: user first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretScope {
    User,
    Workspace,
    Org,
}

impl SecretScope {
    /// Resolution order.
    pub const ORDER: [SecretScope; 3] = [Self::User, Self::Workspace, Self::Org];
}

/// A tool's full declaration: identity, schemas and metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    /// A semver version, e.g. `1.2.0`.
    pub version: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Value,
    pub metadata: ToolMetadata,
}

impl ToolSpec {
    /// `name@version`, the registry key.
    pub fn key(&self) -> String {
        tool_key(&self.name, &self.version)
    }
}

/// `name@version`: how the registry keys a tool version.
pub fn tool_key(name: &str, version: &str) -> String {
    format!("{name}@{version}")
}

/// Splits `name@version`; `None` when there is no `@` or a side is empty.
pub fn split_tool_ref(reference: &str) -> Option<(&str, &str)> {
    let (name, version) = reference.rsplit_once('@')?;
    (!name.is_empty() && !version.is_empty()).then_some((name, version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undeclared_side_effects_count_as_writes() {
        let meta: ToolMetadata = serde_json::from_str(r#"{"category":"utility"}"#).expect("parses");
        assert_eq!(meta.side_effects, SideEffects::Writes);
        assert_eq!(
            ToolMetadata::new(ToolCategory::Api).side_effects,
            SideEffects::Writes
        );
    }

    #[test]
    fn words_are_the_serialized_words() {
        let word = |v: serde_json::Value| v.as_str().expect("a word").to_string();
        for c in [
            ToolCategory::Api,
            ToolCategory::Code,
            ToolCategory::Data,
            ToolCategory::Search,
            ToolCategory::Utility,
        ] {
            assert_eq!(c.as_str(), word(serde_json::json!(c)));
        }
        for e in [SideEffects::None, SideEffects::Reads, SideEffects::Writes] {
            assert_eq!(e.to_string(), word(serde_json::json!(e)));
        }
        for c in [CachePolicy::None, CachePolicy::Ttl, CachePolicy::Forever] {
            assert_eq!(c.as_str(), word(serde_json::json!(c)));
        }
        for l in [Lifecycle::Active, Lifecycle::Deprecated, Lifecycle::Blocked] {
            assert_eq!(l.as_str(), word(serde_json::json!(l)));
        }
    }

    #[test]
    fn side_effects_are_ordered() {
        assert!(SideEffects::None < SideEffects::Reads);
        assert!(SideEffects::Reads < SideEffects::Writes);
    }

    #[test]
    fn tool_refs_split_at_last_at() {
        assert_eq!(
            split_tool_ref("calculator@1.0.0"),
            Some(("calculator", "1.0.0"))
        );
        assert_eq!(split_tool_ref("calculator"), None);
        assert_eq!(split_tool_ref("@1.0.0"), None);
    }
}
