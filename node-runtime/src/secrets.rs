//! Secrets as the executor sees them: resolution user -> workspace -> org
//! (seed 003 §5.2), a value type that never reveals itself, and redaction.
//!
//! Storage and encryption at rest are the server's; here a secret is only
//! looked up through [`SecretSource`] for the duration of one call.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Serialize, Serializer};
use serde_json::Value;

pub use crate::tool_spec::SecretScope;

/// A secret value. Its `Debug`, `Display` and `Serialize` never show it;
/// only [`SecretValue::expose`] does, at the point of use.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(Arc<str>);

impl SecretValue {
    pub fn new(value: impl Into<String>) -> Self {
        Self(Arc::from(value.into()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretValue([REDACTED])")
    }
}

impl std::fmt::Display for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[REDACTED]")
    }
}

impl Serialize for SecretValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("[REDACTED]")
    }
}

/// Who is asking: the scopes to search.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SecretOwner {
    pub user_id: Option<String>,
    pub workspace_id: String,
    pub org_id: Option<String>,
}

/// Looks secrets up in one scope. The server implements it over its
/// encrypted store; [`MemorySecrets`] serves tests and examples.
pub trait SecretSource: Send + Sync {
    /// The value of `name` in exactly `scope` for `owner`, if set.
    fn lookup<'a>(
        &'a self,
        owner: &'a SecretOwner,
        scope: SecretScope,
        name: &'a str,
    ) -> BoxFuture<'a, Option<SecretValue>>;
}

/// The secrets resolved for one call: name -> (value, scope it came from).
#[derive(Debug, Clone, Default)]
pub struct ResolvedSecrets {
    values: BTreeMap<String, (SecretValue, SecretScope)>,
}

impl ResolvedSecrets {
    pub fn get(&self, name: &str) -> Option<&SecretValue> {
        self.values.get(name).map(|(v, _)| v)
    }

    pub fn scope_of(&self, name: &str) -> Option<SecretScope> {
        self.values.get(name).map(|(_, s)| *s)
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Replaces every occurrence of a resolved value in `text` with
    /// `[REDACTED:<name>]`, longest values first so overlapping secrets
    /// redact whole.
    pub fn redact_str(&self, text: &str) -> Option<String> {
        let mut entries: Vec<(&String, &SecretValue)> = self
            .values
            .iter()
            .map(|(n, (v, _))| (n, v))
            .filter(|(_, v)| !v.expose().is_empty())
            .collect();
        entries.sort_by_key(|(_, v)| std::cmp::Reverse(v.expose().len()));
        let mut out: Option<String> = None;
        for (name, value) in entries {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(value.expose()) {
                out = Some(current.replace(value.expose(), &format!("[REDACTED:{name}]")));
            }
        }
        out
    }

    /// Redacts every string (and object key) inside a JSON value, in place.
    pub fn redact_value(&self, value: &mut Value) {
        if self.values.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                if let Some(r) = self.redact_str(s) {
                    *s = r;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_value(v)),
            Value::Object(map) => {
                let needs_key_change = map.keys().any(|k| self.redact_str(k).is_some());
                if needs_key_change {
                    let old = std::mem::take(map);
                    for (k, v) in old {
                        map.insert(self.redact_str(&k).unwrap_or(k), v);
                    }
                }
                map.values_mut().for_each(|v| self.redact_value(v));
            }
            _ => {}
        }
    }
}

/// A declared secret that no scope has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingSecret(pub String);

/// Resolves each name user -> workspace -> org; the first missing one is an error.
pub async fn resolve(
    source: &dyn SecretSource,
    owner: &SecretOwner,
    names: &[String],
) -> Result<ResolvedSecrets, MissingSecret> {
    let mut resolved = ResolvedSecrets::default();
    for name in names {
        let mut found = None;
        for scope in SecretScope::ORDER {
            if scope == SecretScope::User && owner.user_id.is_none() {
                continue;
            }
            if scope == SecretScope::Org && owner.org_id.is_none() {
                continue;
            }
            if let Some(value) = source.lookup(owner, scope, name).await {
                found = Some((value, scope));
                break;
            }
        }
        match found {
            Some(entry) => {
                resolved.values.insert(name.clone(), entry);
            }
            None => return Err(MissingSecret(name.clone())),
        }
    }
    Ok(resolved)
}

/// An in-memory secret source keyed by (scope, owner id, name).
#[derive(Default, Clone)]
pub struct MemorySecrets {
    entries: BTreeMap<(SecretScope, String, String), SecretValue>,
}

impl MemorySecrets {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `name` for the owner `owner_id` of `scope` (a user, workspace or org id).
    pub fn set(&mut self, scope: SecretScope, owner_id: &str, name: &str, value: &str) {
        self.entries.insert(
            (scope, owner_id.to_string(), name.to_string()),
            SecretValue::new(value),
        );
    }
}

impl SecretSource for MemorySecrets {
    fn lookup<'a>(
        &'a self,
        owner: &'a SecretOwner,
        scope: SecretScope,
        name: &'a str,
    ) -> BoxFuture<'a, Option<SecretValue>> {
        let id = match scope {
            SecretScope::User => owner.user_id.clone(),
            SecretScope::Workspace => Some(owner.workspace_id.clone()),
            SecretScope::Org => owner.org_id.clone(),
        };
        let value = id.and_then(|id| self.entries.get(&(scope, id, name.to_string())).cloned());
        Box::pin(async move { value })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn owner() -> SecretOwner {
        SecretOwner {
            user_id: Some("u1".into()),
            workspace_id: "w1".into(),
            org_id: Some("o1".into()),
        }
    }

    #[tokio::test]
    async fn resolution_order_is_user_workspace_org() {
        let mut s = MemorySecrets::new();
        s.set(SecretScope::Org, "o1", "KEY", "org-value");
        s.set(SecretScope::Workspace, "w1", "KEY", "ws-value");
        let r = resolve(&s, &owner(), &["KEY".into()]).await.expect("found");
        assert_eq!(r.get("KEY").map(SecretValue::expose), Some("ws-value"));
        assert_eq!(r.scope_of("KEY"), Some(SecretScope::Workspace));
        s.set(SecretScope::User, "u1", "KEY", "user-value");
        let r = resolve(&s, &owner(), &["KEY".into()]).await.expect("found");
        assert_eq!(r.scope_of("KEY"), Some(SecretScope::User));
        let missing = resolve(&s, &owner(), &["KEY".into(), "OTHER".into()]).await;
        assert_eq!(missing.expect_err("missing"), MissingSecret("OTHER".into()));
    }

    #[test]
    fn value_never_shows_itself() {
        let v = SecretValue::new("hunter2");
        assert!(!format!("{v:?}").contains("hunter2"));
        assert!(!format!("{v}").contains("hunter2"));
        assert!(!serde_json::to_string(&v).expect("ser").contains("hunter2"));
        assert_eq!(v.expose(), "hunter2");
    }

    #[tokio::test]
    async fn redaction_covers_strings_keys_and_nesting() {
        let mut s = MemorySecrets::new();
        s.set(SecretScope::Workspace, "w1", "TOKEN", "abc123secret");
        let r = resolve(&s, &owner(), &["TOKEN".into()])
            .await
            .expect("found");
        let mut v = json!({"a": "x abc123secret y", "abc123secret": [1, {"b": "abc123secret"}]});
        r.redact_value(&mut v);
        let text = v.to_string();
        assert!(!text.contains("abc123secret"), "{text}");
        assert!(text.contains("[REDACTED:TOKEN]"));
    }
}
