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
    /// Every value's forms ([`encodings`]), longest first, computed on the
    /// first redaction.
    forms: Forms,
}

/// (name, form) pairs; never shown by Debug.
#[derive(Clone, Default)]
struct Forms(std::sync::OnceLock<Vec<(String, String)>>);

impl std::fmt::Debug for Forms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[REDACTED]")
    }
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

    /// Replaces every occurrence of a resolved value in `text`, and of its
    /// common encodings ([`encodings`]: base64 standard and URL-safe, hex,
    /// URL-encoding, JSON escaping), with `[REDACTED:<name>]`, longest
    /// first so overlapping secrets and forms redact whole.
    pub fn redact_str(&self, text: &str) -> Option<String> {
        let entries = self.forms.0.get_or_init(|| {
            let mut entries: Vec<(String, String)> = self
                .values
                .iter()
                .filter(|(_, (v, _))| !v.expose().is_empty())
                .flat_map(|(n, (v, _))| {
                    encodings(v.expose())
                        .into_iter()
                        .map(move |e| (n.clone(), e))
                })
                .collect();
            entries.sort_by_key(|(_, form)| std::cmp::Reverse(form.len()));
            entries
        });
        let mut out: Option<String> = None;
        for (name, form) in entries {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(form.as_str()) {
                out = Some(current.replace(form.as_str(), &format!("[REDACTED:{name}]")));
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

/// The shortest secret value accepted: a shorter one would be redacted
/// wherever its characters happen to occur.
pub const MIN_SECRET_LEN: usize = 8;

/// Whether a value may be stored as a secret: 8 characters to 64 KiB.
pub fn check_value(value: &str) -> Result<(), String> {
    if value.chars().count() < MIN_SECRET_LEN {
        return Err(format!(
            "a secret value is at least {MIN_SECRET_LEN} characters (a shorter one would be redacted wherever its characters occur)"
        ));
    }
    if value.len() > 64 * 1024 {
        return Err("a secret value is at most 64 KiB".into());
    }
    Ok(())
}

/// A value and the forms a tool may turn it into: base64 (standard and
/// URL-safe, with and without padding), hex (lower and upper case),
/// URL-encoded (`%20` and `+` for spaces) and JSON-escaped.
pub fn encodings(value: &str) -> Vec<String> {
    use base64::Engine as _;
    let bytes = value.as_bytes();
    let engines = [
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    let mut forms = vec![value.to_string()];
    forms.extend(engines.iter().map(|e| e.encode(bytes)));
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    forms.push(hex.to_uppercase());
    forms.push(hex);
    let form: String = url::form_urlencoded::byte_serialize(bytes).collect();
    forms.push(form.replace('+', "%20"));
    forms.push(form);
    if let Ok(json) = serde_json::to_string(value) {
        forms.push(json[1..json.len() - 1].to_string());
    }
    forms.sort();
    forms.dedup();
    forms.retain(|f| !f.is_empty());
    forms
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

    #[tokio::test]
    async fn redaction_covers_the_common_encodings() {
        use base64::Engine as _;
        let secret = "p@ss w/rd+\"q\"?&=1";
        let mut s = MemorySecrets::new();
        s.set(SecretScope::Workspace, "w1", "TOKEN", secret);
        let r = resolve(&s, &owner(), &["TOKEN".into()])
            .await
            .expect("found");
        let b = secret.as_bytes();
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        for form in [
            secret.to_string(),
            base64::engine::general_purpose::STANDARD.encode(b),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b),
            hex.clone(),
            hex.to_uppercase(),
            url::form_urlencoded::byte_serialize(b).collect::<String>(),
            serde_json::to_string(secret).expect("json"),
        ] {
            let text = format!("before {form} after");
            let out = r.redact_str(&text).unwrap_or(text.clone());
            assert!(
                out.contains("[REDACTED:TOKEN]") && !out.contains(&form),
                "{form}: {out}"
            );
        }
        assert!(!format!("{r:?}").contains(&hex), "Debug shows no form");
    }

    #[test]
    fn short_values_are_refused() {
        assert!(check_value("1234567").is_err());
        assert!(check_value("12345678").is_ok());
        assert!(check_value(&"x".repeat(64 * 1024 + 1)).is_err());
    }
}
