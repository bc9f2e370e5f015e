//! The configuration of Input, Output, Branch and Tool nodes as the
//! inspector edits it, free of the DOM: each change is checked and a
//! refused one names the field and changes nothing.

use node_runtime::graph::{BranchConfig, Condition, ToolNodeConfig};
use serde_json::{json, Map, Value};

/// The JSON types an Input field may have.
pub const FIELD_TYPES: [&str; 6] = ["string", "number", "integer", "boolean", "object", "array"];

/// The comparisons a Branch node offers: (op, label).
pub const BRANCH_OPS: [(&str, &str); 5] = [
    ("equals", "equals"),
    ("not_equals", "does not equal"),
    ("exists", "exists"),
    ("is_null", "is null"),
    ("truthy", "is truthy"),
];

/// One field of an Input node: a property of its JSON Schema.
#[derive(Debug, Clone, PartialEq)]
pub struct InputField {
    pub name: String,
    pub kind: String,
    /// The default as JSON text (empty: none).
    pub default: String,
    pub description: String,
    pub required: bool,
}

/// An Input node's fields, in the schema's order.
pub fn input_fields(schema: &Value) -> Vec<InputField> {
    let required = super::tools::required_fields(schema);
    schema["properties"]
        .as_object()
        .map(|props| {
            props
                .iter()
                .map(|(name, p)| InputField {
                    name: name.clone(),
                    kind: p["type"].as_str().unwrap_or("string").to_string(),
                    default: match p.get("default") {
                        None => String::new(),
                        Some(Value::String(s)) => s.clone(),
                        Some(v) => v.to_string(),
                    },
                    description: p["description"].as_str().unwrap_or_default().to_string(),
                    required: required.contains(&name.as_str()),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A handle name: letters, digits and `_`, not starting with a digit
/// (what templates and handles accept). The error names `what`.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what}: `{name}` is not a name (letters, digits and _, not starting with a digit)"
        ))
    }
}

/// The default's text as a value of the field's type.
fn default_value(field: &InputField) -> Result<Option<Value>, String> {
    let text = field.default.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let name = &field.name;
    let value = if field.kind == "string" {
        Value::String(field.default.clone())
    } else {
        serde_json::from_str::<Value>(text)
            .map_err(|_| format!("{name}: the default is not a {} (JSON)", field.kind))?
    };
    let fits = match field.kind.as_str() {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.as_i64().is_some() || value.as_u64().is_some(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        _ => true,
    };
    if fits {
        Ok(Some(value))
    } else {
        Err(format!("{name}: the default is not a {}", field.kind))
    }
}

/// The JSON Schema of an Input node with these fields; the error names the
/// field at fault.
pub fn input_schema(fields: &[InputField]) -> Result<Value, String> {
    let mut props = Map::new();
    let mut required = Vec::new();
    for f in fields {
        check_name("Field name", &f.name)?;
        if props.contains_key(&f.name) {
            return Err(format!("Field name: `{}` is there twice", f.name));
        }
        if !FIELD_TYPES.contains(&f.kind.as_str()) {
            return Err(format!("{}: `{}` is not a type", f.name, f.kind));
        }
        let mut p = Map::new();
        p.insert("type".into(), json!(f.kind));
        if let Some(d) = default_value(f)? {
            p.insert("default".into(), d);
        }
        if !f.description.trim().is_empty() {
            p.insert("description".into(), json!(f.description.trim()));
        }
        props.insert(f.name.clone(), Value::Object(p));
        if f.required {
            required.push(json!(f.name));
        }
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    Ok(Value::Object(schema))
}

/// A field name not yet taken: `field1`, `field2`, ...
pub fn new_field_name(fields: &[InputField]) -> String {
    (1..)
        .map(|n| format!("field{n}"))
        .find(|n| !fields.iter().any(|f| f.name == *n))
        .unwrap_or_default()
}

/// An Output node's field names from text (one per line or separated by
/// commas); the error names the one at fault.
pub fn output_fields(text: &str) -> Result<Vec<String>, String> {
    let mut fields: Vec<String> = Vec::new();
    for name in text
        .split([',', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        check_name("Output field", name)?;
        if fields.iter().any(|f| f == name) {
            return Err(format!("Output field: `{name}` is there twice"));
        }
        fields.push(name.to_string());
    }
    Ok(fields)
}

/// The op word of a Branch condition and its value's text (for `equals`
/// and `not_equals`).
pub fn branch_op(c: &Condition) -> (&'static str, String) {
    match c {
        Condition::Equals { value } => ("equals", value.to_string()),
        Condition::NotEquals { value } => ("not_equals", value.to_string()),
        Condition::Exists => ("exists", String::new()),
        Condition::IsNull => ("is_null", String::new()),
        Condition::Truthy => ("truthy", String::new()),
    }
}

/// Sets one Branch field (`pointer`, `op` or `value`) from its text.
pub fn set_branch_field(config: &mut BranchConfig, field: &str, text: &str) -> Result<(), String> {
    let value_of = |text: &str| -> Result<Value, String> {
        let t = text.trim();
        if t.is_empty() {
            return Ok(Value::Null);
        }
        // A bare word is a string; anything else must be JSON.
        serde_json::from_str(t).or_else(|_| {
            if t.starts_with(['{', '[', '"']) {
                Err("Value: not valid JSON".to_string())
            } else {
                Ok(Value::String(t.to_string()))
            }
        })
    };
    match field {
        "pointer" => {
            let t = text.trim();
            if !t.is_empty() && !t.starts_with('/') {
                return Err("Path: a JSON Pointer starts with / (empty: the whole value)".into());
            }
            config.pointer = t.to_string();
        }
        "op" => {
            let current = branch_op(&config.condition).1;
            config.condition = match text {
                "equals" => Condition::Equals {
                    value: value_of(&current)?,
                },
                "not_equals" => Condition::NotEquals {
                    value: value_of(&current)?,
                },
                "exists" => Condition::Exists,
                "is_null" => Condition::IsNull,
                "truthy" => Condition::Truthy,
                other => return Err(format!("Condition: `{other}` is not one")),
            }
        }
        "value" => match &mut config.condition {
            Condition::Equals { value } | Condition::NotEquals { value } => {
                *value = value_of(text)?;
            }
            _ => return Err("Value: this condition compares with no value".into()),
        },
        other => return Err(format!("{other}: not a Branch setting")),
    }
    Ok(())
}

/// A Tool node switched to `reference`: only the new tool's fields stay
/// (a field of the old tool would be an unknown field of the new one).
pub fn switch_tool(config: &mut ToolNodeConfig, reference: &str, schema: &Value) {
    config.tool = reference.to_string();
    let known: Vec<&String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    config.inputs.retain(|name, _| known.contains(&name));
}

#[cfg(test)]
mod tests {
    use super::*;
    use node_runtime::graph::FieldSource;

    #[test]
    fn input_fields_round_trip_through_the_schema() {
        let fields = vec![
            InputField {
                name: "city".into(),
                kind: "string".into(),
                default: "Paris".into(),
                description: "Where".into(),
                required: true,
            },
            InputField {
                name: "n".into(),
                kind: "integer".into(),
                default: "3".into(),
                description: String::new(),
                required: false,
            },
        ];
        let schema = input_schema(&fields).expect("schema");
        assert_eq!(
            schema,
            json!({"type": "object", "properties": {
                "city": {"type": "string", "default": "Paris", "description": "Where"},
                "n": {"type": "integer", "default": 3}}, "required": ["city"]})
        );
        assert_eq!(input_fields(&schema), fields);
    }

    #[test]
    fn bad_input_fields_name_the_field() {
        let field = |name: &str, kind: &str, default: &str| InputField {
            name: name.into(),
            kind: kind.into(),
            default: default.into(),
            description: String::new(),
            required: false,
        };
        for (fields, wanted) in [
            (vec![field("1st", "string", "")], "1st"),
            (vec![field("a b", "string", "")], "a b"),
            (
                vec![field("a", "string", ""), field("a", "number", "")],
                "twice",
            ),
            (
                vec![field("n", "integer", "1.5")],
                "n: the default is not a integer",
            ),
            (
                vec![field("n", "number", "abc")],
                "n: the default is not a number",
            ),
            (vec![field("x", "date", "")], "not a type"),
        ] {
            let e = input_schema(&fields).expect_err("refused");
            assert!(e.contains(wanted), "{e} should name {wanted}");
        }
        assert_eq!(new_field_name(&[field("field1", "string", "")]), "field2");
    }

    #[test]
    fn output_fields_come_from_lines_or_commas() {
        assert_eq!(
            output_fields("answer, total\nnote\n\n").expect("fields"),
            ["answer", "total", "note"]
        );
        assert!(output_fields("a, a").expect_err("twice").contains("twice"));
        assert!(output_fields("a-b").expect_err("name").contains("a-b"));
    }

    #[test]
    fn branch_fields_are_checked() {
        let mut c = BranchConfig {
            pointer: String::new(),
            condition: Condition::Truthy,
        };
        set_branch_field(&mut c, "op", "equals").expect("op");
        set_branch_field(&mut c, "value", "VALIDATION_ERROR").expect("bare word");
        assert_eq!(
            c.condition,
            Condition::Equals {
                value: json!("VALIDATION_ERROR")
            }
        );
        set_branch_field(&mut c, "value", "42").expect("json");
        assert_eq!(branch_op(&c.condition), ("equals", "42".to_string()));
        set_branch_field(&mut c, "op", "not_equals").expect("keeps the value");
        assert_eq!(c.condition, Condition::NotEquals { value: json!(42) });
        assert!(set_branch_field(&mut c, "pointer", "error/code").is_err());
        set_branch_field(&mut c, "pointer", "/error/code").expect("pointer");
        assert!(set_branch_field(&mut c, "value", "{oops").is_err());
        set_branch_field(&mut c, "op", "exists").expect("op");
        assert!(set_branch_field(&mut c, "value", "1").is_err());
    }

    #[test]
    fn switching_a_tool_keeps_only_the_new_tools_fields() {
        let mut c = ToolNodeConfig {
            tool: "calculator@1.0.0".into(),
            inputs: [
                (
                    "expression".to_string(),
                    FieldSource::Fixed {
                        value: json!("1+1"),
                    },
                ),
                ("data".to_string(), FieldSource::Wired),
            ]
            .into(),
            secret_scope: None,
            output_path: None,
        };
        switch_tool(
            &mut c,
            "json_query@1.0.0",
            &json!({"properties": {"program": {}, "data": {}}}),
        );
        assert_eq!(c.tool, "json_query@1.0.0");
        assert_eq!(c.inputs.keys().collect::<Vec<_>>(), ["data"]);
    }
}
