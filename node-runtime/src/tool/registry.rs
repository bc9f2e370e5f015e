//! The tool registry: versions side by side, keyed by `name@version`.
//!
//! Lookups are by exact version; new nodes get the latest active version.
//! Blocked versions are never listed for discovery; deprecated ones only on
//! request. Schemas are compiled once at registration through a cache keyed
//! by the BLAKE3 hash of the schema's canonical JSON.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use serde_json::Value;

use super::{erase, DynTool, Tool};
use crate::call_id::canonical_json;
use crate::graph::validate::ToolCatalog;
use crate::tool_spec::{tool_key, Lifecycle, SideEffects, ToolCategory, ToolSpec};

/// A registered tool version: its declaration, compiled schemas and code.
pub struct RegisteredTool {
    pub spec: ToolSpec,
    pub input_validator: Arc<jsonschema::Validator>,
    pub output_validator: Arc<jsonschema::Validator>,
    pub tool: Arc<dyn DynTool>,
}

impl RegisteredTool {
    /// The effective side effects of a call with this input.
    pub fn side_effects_for(&self, input: &Value) -> SideEffects {
        self.tool
            .side_effects_for(input)
            .unwrap_or(self.spec.metadata.side_effects)
    }
}

impl std::fmt::Debug for RegisteredTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredTool")
            .field("key", &self.spec.key())
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RegistryError {
    #[error("no tool {0}")]
    NotFound(String),
    #[error("tool {0} is already registered")]
    Duplicate(String),
    #[error("tool {name}@{version}: version is not semver: {message}")]
    BadVersion {
        name: String,
        version: String,
        message: String,
    },
    #[error("tool {key}: invalid {which} schema: {message}")]
    BadSchema {
        key: String,
        which: &'static str,
        message: String,
    },
}

/// Compiled JSON Schema validators shared by schema hash.
#[derive(Default)]
pub struct SchemaCache {
    compiled: RwLock<HashMap<[u8; 32], Arc<jsonschema::Validator>>>,
}

impl SchemaCache {
    pub fn get_or_compile(&self, schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
        let hash = *blake3::hash(canonical_json(schema).as_bytes()).as_bytes();
        if let Some(v) = self
            .compiled
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&hash)
        {
            return Ok(v.clone());
        }
        let validator = Arc::new(jsonschema::validator_for(schema).map_err(|e| e.to_string())?);
        self.compiled
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(hash, validator.clone());
        Ok(validator)
    }

    pub fn len(&self) -> usize {
        self.compiled
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Filters for [`ToolRegistry::list`].
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub category: Option<ToolCategory>,
    /// Case-insensitive substring of name or description.
    pub text: Option<String>,
    pub include_deprecated: bool,
}

#[derive(Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<RegisteredTool>>,
    schemas: Arc<SchemaCache>,
}

/// Validation reads the registered specs where they are (issue #30: the
/// engine used to copy every spec, schemas included, at each run's start).
impl ToolCatalog for ToolRegistry {
    fn spec(&self, name: &str, version: &str) -> Option<&ToolSpec> {
        self.entry(name, version).map(|t| &t.spec)
    }
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy to add tools to (a workspace's MCP tools over the built-ins):
    /// the registered tools are shared, and so is the schema cache, so a
    /// schema compiled once is compiled once for every copy.
    pub fn layered(&self) -> Self {
        Self {
            tools: self.tools.clone(),
            schemas: self.schemas.clone(),
        }
    }

    /// Registers a typed tool.
    pub fn register<T: Tool>(&mut self, tool: T) -> Result<Arc<RegisteredTool>, RegistryError> {
        let (spec, dyn_tool) = erase(tool);
        self.register_dyn(spec, dyn_tool)
    }

    /// Registers an already type-erased tool.
    pub fn register_dyn(
        &mut self,
        spec: ToolSpec,
        tool: Arc<dyn DynTool>,
    ) -> Result<Arc<RegisteredTool>, RegistryError> {
        let key = spec.key();
        semver::Version::parse(&spec.version).map_err(|e| RegistryError::BadVersion {
            name: spec.name.clone(),
            version: spec.version.clone(),
            message: e.to_string(),
        })?;
        if self.tools.contains_key(&key) {
            return Err(RegistryError::Duplicate(key));
        }
        let compile = |which, schema: &Value| {
            self.schemas
                .get_or_compile(schema)
                .map_err(|message| RegistryError::BadSchema {
                    key: key.clone(),
                    which,
                    message,
                })
        };
        let input_validator = compile("input", &spec.input_schema)?;
        let output_validator = compile("output", &spec.output_schema)?;
        let registered = Arc::new(RegisteredTool {
            spec,
            input_validator,
            output_validator,
            tool,
        });
        self.tools.insert(key, registered.clone());
        Ok(registered)
    }

    /// The exact version (`get("calculator", "1.0.0")`), whatever its lifecycle.
    pub fn get(&self, name: &str, version: &str) -> Result<Arc<RegisteredTool>, RegistryError> {
        self.entry(name, version)
            .cloned()
            .ok_or_else(|| RegistryError::NotFound(tool_key(name, version)))
    }

    /// The registered version, looked up by its key.
    fn entry(&self, name: &str, version: &str) -> Option<&Arc<RegisteredTool>> {
        self.tools.get(&tool_key(name, version))
    }

    /// The highest active version of `name`, for new nodes.
    pub fn latest_active(&self, name: &str) -> Result<Arc<RegisteredTool>, RegistryError> {
        self.tools
            .values()
            .filter(|t| t.spec.name == name && t.spec.metadata.lifecycle == Lifecycle::Active)
            .filter_map(|t| semver::Version::parse(&t.spec.version).ok().map(|v| (v, t)))
            .max_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, t)| t.clone())
            .ok_or_else(|| RegistryError::NotFound(format!("{name} (no active version)")))
    }

    /// Every version of every tool, blocked ones included (for validation).
    pub fn all(&self) -> impl Iterator<Item = &Arc<RegisteredTool>> {
        self.tools.values()
    }

    /// Discovery: never blocked, deprecated only when asked, sorted by key.
    pub fn list(&self, filter: &ListFilter) -> Vec<Arc<RegisteredTool>> {
        let text = filter.text.as_ref().map(|t| t.to_lowercase());
        self.tools
            .values()
            .filter(|t| match t.spec.metadata.lifecycle {
                Lifecycle::Active => true,
                Lifecycle::Deprecated => filter.include_deprecated,
                Lifecycle::Blocked => false,
            })
            .filter(|t| {
                filter
                    .category
                    .is_none_or(|c| t.spec.metadata.category == c)
            })
            .filter(|t| {
                text.as_ref().is_none_or(|q| {
                    t.spec.name.to_lowercase().contains(q)
                        || t.spec.description.to_lowercase().contains(q)
                })
            })
            .cloned()
            .collect()
    }

    pub fn schema_cache(&self) -> &SchemaCache {
        &self.schemas
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolContext;
    use crate::tool_spec::ToolMetadata;
    use crate::ToolError;
    use serde_json::json;

    struct Versioned {
        version: &'static str,
        lifecycle: Lifecycle,
        category: ToolCategory,
    }

    impl Tool for Versioned {
        type Input = Value;
        type Output = Value;
        fn spec(&self) -> ToolSpec {
            let mut metadata = ToolMetadata::new(self.category);
            metadata.lifecycle = self.lifecycle;
            ToolSpec {
                name: "t".into(),
                version: self.version.into(),
                description: "a test tool".into(),
                input_schema: json!({"type": "object"}),
                output_schema: json!({}),
                metadata,
            }
        }
        async fn execute(&self, input: Value, _ctx: &ToolContext) -> Result<Value, ToolError> {
            Ok(input)
        }
    }

    fn registry() -> ToolRegistry {
        let mut r = ToolRegistry::new();
        for (version, lifecycle) in [
            ("1.0.0", Lifecycle::Deprecated),
            ("1.2.0", Lifecycle::Active),
            ("1.10.0", Lifecycle::Active),
            ("2.0.0", Lifecycle::Blocked),
        ] {
            r.register(Versioned {
                version,
                lifecycle,
                category: ToolCategory::Utility,
            })
            .expect("registers");
        }
        r
    }

    #[test]
    fn versions_live_side_by_side() {
        let r = registry();
        assert_eq!(r.get("t", "1.0.0").expect("exact").spec.version, "1.0.0");
        assert_eq!(
            r.get("t", "2.0.0")
                .expect("blocked still found")
                .spec
                .version,
            "2.0.0"
        );
        assert_eq!(
            r.get("t", "9.9.9").expect_err("missing"),
            RegistryError::NotFound("t@9.9.9".into())
        );
        // Semver order, not string order: 1.10.0 > 1.2.0; blocked 2.0.0 skipped.
        assert_eq!(r.latest_active("t").expect("latest").spec.version, "1.10.0");
        // Identical schemas compile once.
        assert_eq!(r.schema_cache().len(), 2);
    }

    #[test]
    fn validation_reads_the_registered_specs() {
        let r = registry();
        let catalog: &dyn ToolCatalog = &r;
        // Every version, blocked ones included, as `all` lists them.
        for (version, lifecycle) in [
            ("1.0.0", Lifecycle::Deprecated),
            ("2.0.0", Lifecycle::Blocked),
        ] {
            let spec = catalog.spec("t", version).expect("registered");
            assert_eq!(
                (spec.version.as_str(), spec.metadata.lifecycle),
                (version, lifecycle)
            );
        }
        assert!(catalog.spec("t", "9.9.9").is_none());
        assert!(catalog.spec("u", "1.0.0").is_none());
        // The same answers as the list of copies it replaced.
        let copies: Vec<ToolSpec> = r.all().map(|t| t.spec.clone()).collect();
        for version in ["1.0.0", "1.2.0", "1.10.0", "2.0.0", "3.0.0"] {
            assert_eq!(
                catalog.spec("t", version).map(ToolSpec::key),
                copies.spec("t", version).map(ToolSpec::key)
            );
        }
    }

    #[test]
    fn discovery_hides_blocked_and_deprecated() {
        let r = registry();
        let versions = |f: &ListFilter| -> Vec<String> {
            r.list(f).iter().map(|t| t.spec.version.clone()).collect()
        };
        assert_eq!(versions(&ListFilter::default()), vec!["1.10.0", "1.2.0"]);
        let with_deprecated = ListFilter {
            include_deprecated: true,
            ..Default::default()
        };
        assert_eq!(versions(&with_deprecated), vec!["1.0.0", "1.10.0", "1.2.0"]);
        let other_category = ListFilter {
            category: Some(ToolCategory::Api),
            ..Default::default()
        };
        assert!(versions(&other_category).is_empty());
        let text = ListFilter {
            text: Some("TEST".into()),
            ..Default::default()
        };
        assert_eq!(versions(&text).len(), 2);
    }

    #[test]
    fn duplicate_bad_version_and_bad_schema_are_refused() {
        let mut r = registry();
        let dup = r.register(Versioned {
            version: "1.2.0",
            lifecycle: Lifecycle::Active,
            category: ToolCategory::Utility,
        });
        assert!(matches!(dup, Err(RegistryError::Duplicate(_))));
        let bad = r.register(Versioned {
            version: "one",
            lifecycle: Lifecycle::Active,
            category: ToolCategory::Utility,
        });
        assert!(matches!(bad, Err(RegistryError::BadVersion { .. })));
    }
}
