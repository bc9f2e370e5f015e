//! Building blocks of the adapters' tool-schema normalizers (seed 002):
//! inline `$ref`/`$defs`, flatten union `type` arrays, drop `nullable`,
//! give every array `items`, make the top level an object, and optionally
//! close objects. Each adapter composes the ones its API needs in its own
//! `tool_schemas()`.

use serde_json::{json, Map, Value};

/// How strict the target API is.
#[derive(Debug, Clone, Copy, Default)]
pub struct Strictness {
    /// Every object with properties gets `additionalProperties: false`.
    pub close_objects: bool,
}

const MAX_REF_DEPTH: usize = 16;

/// Normalizes one tool's input schema.
pub fn normalize(schema: &Value, strictness: Strictness) -> Value {
    let defs = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .cloned()
        .unwrap_or(Value::Null);
    let mut out = walk(schema, &defs, strictness, 0);
    // The top level must be an object with properties.
    if let Value::Object(map) = &mut out {
        map.insert("type".into(), json!("object"));
        map.entry("properties").or_insert_with(|| json!({}));
        if strictness.close_objects {
            map.insert("additionalProperties".into(), json!(false));
        }
    } else {
        out = json!({"type": "object", "properties": {}});
    }
    out
}

fn resolve_ref<'a>(reference: &str, defs: &'a Value) -> Option<&'a Value> {
    let name = reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))?;
    defs.get(name)
}

fn walk(node: &Value, defs: &Value, strictness: Strictness, depth: usize) -> Value {
    let Value::Object(map) = node else {
        return node.clone();
    };
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        if depth < MAX_REF_DEPTH {
            if let Some(target) = resolve_ref(reference, defs) {
                return walk(target, defs, strictness, depth + 1);
            }
        }
        // Unresolvable or too deep (recursive): accept any value.
        return json!({});
    }
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            "$defs" | "definitions" | "$schema" | "$id" | "nullable" => {}
            "type" => {
                if let Value::Array(types) = value {
                    // ["string", "null"] -> "string": optional-ness lives in `required`.
                    let first = types.iter().find(|t| t.as_str() != Some("null")).cloned();
                    out.insert("type".into(), first.unwrap_or(json!("string")));
                } else {
                    out.insert("type".into(), value.clone());
                }
            }
            "properties" => {
                let props = value
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(k, v)| (k.clone(), walk(v, defs, strictness, depth)))
                            .collect::<Map<_, _>>()
                    })
                    .unwrap_or_default();
                out.insert("properties".into(), Value::Object(props));
            }
            "items" | "additionalProperties" if value.is_object() => {
                out.insert(key.clone(), walk(value, defs, strictness, depth));
            }
            "anyOf" | "oneOf" | "allOf" => {
                let alts: Vec<Value> = value
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter(|s| s.get("type") != Some(&json!("null")))
                            .map(|s| walk(s, defs, strictness, depth))
                            .collect()
                    })
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Array(alts));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if out.get("type") == Some(&json!("array")) {
        let needs_items = match out.get("items") {
            None => true,
            Some(Value::Object(m)) => m.is_empty(),
            Some(_) => true,
        };
        if needs_items {
            out.insert("items".into(), json!({"type": "string"}));
        }
    }
    if strictness.close_objects
        && out.get("type") == Some(&json!("object"))
        && out.contains_key("properties")
    {
        out.insert("additionalProperties".into(), json!(false));
    }
    Value::Object(out)
}

/// The documented rules a normalized schema must satisfy, as violations.
pub fn violations(schema: &Value, strictness: Strictness) -> Vec<String> {
    let mut found = Vec::new();
    if schema.get("type") != Some(&json!("object"))
        || !schema.get("properties").is_some_and(Value::is_object)
    {
        found.push("top level is not an object with properties".into());
    }
    check_node(schema, "", strictness, &mut found);
    found
}

fn check_node(node: &Value, path: &str, strictness: Strictness, found: &mut Vec<String>) {
    let Value::Object(map) = node else { return };
    for banned in ["$ref", "$defs", "definitions", "nullable"] {
        if map.contains_key(banned) {
            found.push(format!("{path}: has `{banned}`"));
        }
    }
    if let Some(t) = map.get("type") {
        if !t.is_string() {
            found.push(format!("{path}: `type` is not a single string"));
        }
        if t == "array"
            && !map
                .get("items")
                .and_then(Value::as_object)
                .is_some_and(|i| {
                    i.contains_key("type")
                        || i.contains_key("properties")
                        || i.contains_key("anyOf")
                })
        {
            found.push(format!("{path}: array without typed `items`"));
        }
        if t == "object"
            && strictness.close_objects
            && map.contains_key("properties")
            && map.get("additionalProperties") != Some(&json!(false))
        {
            found.push(format!("{path}: object is not closed"));
        }
    }
    for (key, value) in map {
        match value {
            Value::Object(_) => check_node(value, &format!("{path}/{key}"), strictness, found),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    check_node(item, &format!("{path}/{key}/{i}"), strictness, found);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_the_seed_002_pitfalls() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": ["number", "null"]}}}},
            "properties": {
                "a": {"type": ["string", "null"], "nullable": true},
                "tags": {"type": "array"},
                "any_items": {"type": "array", "items": {}},
                "p": {"$ref": "#/$defs/Point"},
                "missing": {"$ref": "#/$defs/Nope"}
            }
        });
        let strict = Strictness {
            close_objects: true,
        };
        let out = normalize(&schema, strict);
        assert_eq!(violations(&out, strict), Vec::<String>::new(), "{out:#}");
        assert_eq!(out["properties"]["a"], json!({"type": "string"}));
        assert_eq!(
            out["properties"]["tags"]["items"],
            json!({"type": "string"})
        );
        assert_eq!(
            out["properties"]["p"]["properties"]["x"],
            json!({"type": "number"})
        );
        assert!(
            violations(&schema, strict).len() >= 4,
            "the raw schema breaks the rules"
        );
    }

    #[test]
    fn recursive_refs_terminate() {
        let schema = json!({"type": "object", "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}},
                            "properties": {"root": {"$ref": "#/$defs/N"}}});
        let out = normalize(&schema, Strictness::default());
        assert!(violations(&out, Strictness::default()).is_empty());
    }
}
