//! The tool selector's model: the registry as the API lists it, filtered
//! by text, category and "show deprecated"; the badges each row shows; and
//! the Agent node edits the selector makes (enable, disable, pin).

use node_runtime::graph::{
    AgentNodeConfig, FieldSource, OnMissing, PinSelector, PinStrategy, PinnedHandle,
    ToolNodeConfig, ToolSelection,
};
use node_runtime::tool_spec::Lifecycle;
use serde_json::Value;

/// One tool version from `GET /api/v1/tools`: the wire type itself.
pub use node_runtime::wire::{ToolAuth as Auth, ToolSecret as SecretStatus, ToolView as ToolInfo};

/// The categories, in the order the filter offers them.
pub const CATEGORIES: [&str; 5] = ["api", "code", "data", "search", "utility"];

/// The tools a selector shows: blocked never; deprecated only when asked;
/// `query` matches name or description (case-insensitive); `category`
/// empty means all.
pub fn filter<'a>(
    tools: &'a [ToolInfo],
    query: &str,
    category: &str,
    show_deprecated: bool,
) -> Vec<&'a ToolInfo> {
    let q = lowercase(query.trim());
    tools
        .iter()
        .filter(|t| t.lifecycle != Lifecycle::Blocked)
        .filter(|t| show_deprecated || t.lifecycle != Lifecycle::Deprecated)
        .filter(|t| category.is_empty() || t.category.as_str() == category)
        .filter(|t| {
            q.is_empty()
                || lowercase(&t.name).contains(&q)
                || lowercase(&t.description).contains(&q)
        })
        .collect()
}

/// `s` in lower case, as [`str::to_lowercase`] has it (Unicode's full
/// mapping, final sigma included). In the browser it is the browser's
/// `toLowerCase`, the same mapping: Rust's case tables and their code
/// (about 8 KiB gzipped) stay off the editor's load, whose palette search
/// is its only use of them.
pub fn lowercase(s: &str) -> String {
    #[cfg(target_arch = "wasm32")]
    {
        String::from(js_sys::JsString::from(s).to_lower_case())
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        s.to_lowercase()
    }
}

/// The auth badge of a row: (text, is a problem).
pub fn auth_badge(tool: &ToolInfo) -> Option<(String, bool)> {
    if tool.auth.secrets.is_empty() {
        return None;
    }
    if let Some(missing) = tool.auth.secrets.iter().find(|s| s.status == "missing") {
        return Some((format!("Missing API key ({})", missing.name), true));
    }
    if let Some(w) = tool.auth.secrets.iter().find_map(|s| s.warning.clone()) {
        return Some((w, true));
    }
    let scope = tool
        .auth
        .secrets
        .iter()
        .find_map(|s| s.scope.clone())
        .unwrap_or_default();
    Some((format!("Using {scope} key"), false))
}

/// The scope a tool's secrets come from in this workspace, when they all
/// come from one (what a materialized node pins as its secret scope).
pub fn secret_scope(tool: &ToolInfo) -> Option<node_runtime::tool_spec::SecretScope> {
    let mut scopes = tool.auth.secrets.iter().map(|s| s.scope.clone());
    let first = scopes.next()??;
    if scopes.any(|s| s.as_deref() != Some(first.as_str())) {
        return None;
    }
    serde_json::from_value(Value::String(first)).ok()
}

/// Whether `reference` is enabled in the agent.
pub fn is_enabled(config: &AgentNodeConfig, reference: &str) -> bool {
    config
        .tools
        .iter()
        .any(|t| t.tool == reference && t.enabled)
}

/// Enables or disables a tool version. Disabling keeps the entry (and any
/// pin on the tool): saved graphs never lose a handle.
pub fn set_enabled(config: &mut AgentNodeConfig, reference: &str, enabled: bool) {
    match config.tools.iter_mut().find(|t| t.tool == reference) {
        Some(t) => t.enabled = enabled,
        None if enabled => config.tools.push(ToolSelection {
            tool: reference.into(),
            enabled: true,
        }),
        None => {}
    }
}

/// Adds a pinned handle on the latest result of `tool_name` (a fresh
/// handle name); returns it.
pub fn add_pin(config: &mut AgentNodeConfig, tool_name: &str) -> String {
    let base = format!("{tool_name}_result");
    let name = (1..)
        .map(|i| {
            if i == 1 {
                base.clone()
            } else {
                format!("{base}_{i}")
            }
        })
        .find(|n| !config.pins.iter().any(|p| p.name == *n))
        .unwrap_or(base);
    config.pins.push(PinnedHandle {
        name: name.clone(),
        selector: PinSelector {
            tool: tool_name.into(),
            strategy: PinStrategy::Latest,
            call_id: None,
        },
        on_missing: OnMissing::Null,
        path: None,
    });
    name
}

/// The pin strategies and on-missing behaviours the panel offers, as
/// (wire value, label).
pub const PIN_STRATEGIES: [(&str, &str); 3] = [
    ("latest", "Latest call"),
    ("first_success", "First success"),
    ("by_call_id", "One call (by call id)"),
];
pub const PIN_ON_MISSING: [(&str, &str); 3] = [
    ("null", "Output null"),
    ("error", "Fail the node"),
    ("stale_last_success", "Last run's value"),
];

/// Sets one field of the pin `pin` from the panel's text: `tool`,
/// `strategy`, `call_id`, `on_missing` or `path` (empty: the whole output).
/// A refused value changes nothing and the error names the field.
pub fn set_pin_field(
    config: &mut AgentNodeConfig,
    pin: &str,
    field: &str,
    text: &str,
) -> Result<(), String> {
    let p = config
        .pins
        .iter_mut()
        .find(|p| p.name == pin)
        .ok_or_else(|| format!("there is no pin `{pin}`"))?;
    let text = text.trim();
    let word = |v: &str| serde_json::Value::String(v.into());
    match field {
        "tool" if text.is_empty() => return Err("tool: name the tool the pin listens to".into()),
        "tool" => p.selector.tool = text.into(),
        "strategy" => {
            p.selector.strategy = serde_json::from_value(word(text))
                .map_err(|_| format!("strategy: `{text}` is not a pin strategy"))?;
        }
        "call_id" => p.selector.call_id = (!text.is_empty()).then(|| text.into()),
        "on_missing" => {
            p.on_missing = serde_json::from_value(word(text))
                .map_err(|_| format!("on_missing: `{text}` is not an on-missing behaviour"))?;
        }
        "path" => {
            node_runtime::graph::pins::check_path(text).map_err(|e| format!("path: {e}"))?;
            p.path = (!text.is_empty()).then(|| text.into());
        }
        other => return Err(format!("`{other}` is not a pin setting")),
    }
    Ok(())
}

/// How a field's fixed value is edited, from its schema.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// A string: the text is the value.
    Text,
    /// `integer` or `number`.
    Number { integer: bool },
    /// `boolean`: a checkbox.
    Toggle,
    /// `enum`: a choice among the values, each as (JSON text, label).
    Choice(Vec<(String, String)>),
    /// Objects, arrays, anything else: JSON, checked against the schema.
    Json,
}

/// One input field of a Tool node, as its form shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldRow {
    pub name: String,
    pub required: bool,
    /// The schema's `type`, or `any`.
    pub kind: String,
    pub control: Control,
    pub description: String,
    pub wired: bool,
    /// The fixed value as the user edits it: a string field's text as
    /// itself, anything else as JSON; empty when unset.
    pub text: String,
}

fn control_of(prop: &Value) -> Control {
    if let Some(values) = prop["enum"].as_array() {
        return Control::Choice(
            values
                .iter()
                .map(|v| {
                    let label = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                    (v.to_string(), label)
                })
                .collect(),
        );
    }
    match prop["type"].as_str() {
        Some("string") => Control::Text,
        Some("integer") => Control::Number { integer: true },
        Some("number") => Control::Number { integer: false },
        Some("boolean") => Control::Toggle,
        _ => Control::Json,
    }
}

/// The form of a Tool node: one row per property of the tool's input
/// schema, in the schema's order.
pub fn field_rows(schema: &Value, config: &ToolNodeConfig) -> Vec<FieldRow> {
    let required = required_fields(schema);
    schema["properties"]
        .as_object()
        .map(|props| {
            props
                .iter()
                .map(|(name, prop)| {
                    let control = control_of(prop);
                    let (wired, text) = match config.inputs.get(name) {
                        Some(FieldSource::Wired) => (true, String::new()),
                        Some(FieldSource::Fixed {
                            value: Value::String(s),
                        }) if control == Control::Text => (false, s.clone()),
                        Some(FieldSource::Fixed { value }) => (false, value.to_string()),
                        None => (false, String::new()),
                    };
                    FieldRow {
                        name: name.clone(),
                        required: required.contains(&name.as_str()),
                        kind: prop["type"].as_str().unwrap_or("any").to_string(),
                        control,
                        description: prop["description"].as_str().unwrap_or_default().to_string(),
                        wired,
                        text,
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The names a JSON Schema's `required` lists.
pub fn required_fields(schema: &Value) -> Vec<&str> {
    schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The value a fixed field's text stands for; the error names the field.
fn parse_field(row: &FieldRow, text: &str) -> Result<Value, String> {
    let name = &row.name;
    match &row.control {
        Control::Text => Ok(Value::String(text.to_string())),
        Control::Number { integer } => match serde_json::from_str::<Value>(text.trim()) {
            Ok(Value::Number(n)) if !integer || n.is_i64() || n.is_u64() => Ok(Value::Number(n)),
            Ok(Value::Number(_)) => Err(format!("{name}: `{}` is not a whole number", text.trim())),
            _ => Err(format!("{name}: `{}` is not a number", text.trim())),
        },
        Control::Toggle => match text.trim() {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            other => Err(format!("{name}: `{other}` is not true or false")),
        },
        Control::Choice(_) | Control::Json => {
            serde_json::from_str(text).map_err(|e| format!("{name}: not valid JSON ({e})"))
        }
    }
}

/// Sets one field from the form: wired (an input handle appears), or a
/// fixed value parsed for its control (a number field takes only numbers,
/// a whole-number field only whole ones); empty text unsets it. A refused
/// value changes nothing and the error names the field. The rest of the
/// schema (ranges, lengths, nested fields) is checked by the server's
/// validator, whose `FIELD_INVALID` diagnostics the form shows per field.
pub fn set_field(
    config: &mut ToolNodeConfig,
    row: &FieldRow,
    wired: bool,
    text: &str,
) -> Result<(), String> {
    if wired {
        config.inputs.insert(row.name.clone(), FieldSource::Wired);
        return Ok(());
    }
    if text.trim().is_empty() {
        config.inputs.remove(&row.name);
        return Ok(());
    }
    let value = parse_field(row, text)?;
    config
        .inputs
        .insert(row.name.clone(), FieldSource::Fixed { value });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::editor::model::new_node;
    use node_runtime::graph::{NodeKind, Position};

    fn tool(
        name: &str,
        version: &str,
        category: &str,
        lifecycle: &str,
        secrets: Vec<SecretStatus>,
    ) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            version: version.into(),
            reference: node_runtime::tool_spec::tool_key(name, version),
            description: format!("{name} does things"),
            category: serde_json::from_value(Value::String(category.into())).expect("category"),
            side_effects: node_runtime::tool_spec::SideEffects::None,
            lifecycle: serde_json::from_value(Value::String(lifecycle.into())).expect("lifecycle"),
            cache: node_runtime::tool_spec::CachePolicy::None,
            timeout_ms: 1000,
            auth: Auth {
                ok: secrets.iter().all(|s| s.status == "ok"),
                secrets,
            },
            input_schema: Value::Null,
            output_schema: Value::Null,
            effect_description: None,
            mcp: None,
        }
    }

    fn catalog() -> Vec<ToolInfo> {
        vec![
            tool("calculator", "1.0.0", "utility", "active", vec![]),
            tool("calculator", "0.9.0", "utility", "deprecated", vec![]),
            tool(
                "search",
                "1.0.0",
                "search",
                "active",
                vec![SecretStatus {
                    name: "SEARCH_KEY".into(),
                    status: "missing".into(),
                    scope: None,
                    warning: Some("Missing API key".into()),
                }],
            ),
            tool(
                "github",
                "1.0.0",
                "api",
                "active",
                vec![SecretStatus {
                    name: "GH".into(),
                    status: "ok".into(),
                    scope: Some("org".into()),
                    warning: Some("Using the organization's key (broad scope)".into()),
                }],
            ),
            tool(
                "jira",
                "1.0.0",
                "api",
                "active",
                vec![SecretStatus {
                    name: "JIRA".into(),
                    status: "ok".into(),
                    scope: Some("workspace".into()),
                    warning: None,
                }],
            ),
            tool("old", "1.0.0", "api", "blocked", vec![]),
        ]
    }

    fn refs(v: Vec<&ToolInfo>) -> Vec<&str> {
        v.into_iter().map(|t| t.reference.as_str()).collect()
    }

    #[test]
    fn search_category_and_deprecated_narrow_the_list_and_blocked_never_shows() {
        let c = catalog();
        assert_eq!(
            refs(filter(&c, "", "", false)),
            [
                "calculator@1.0.0",
                "search@1.0.0",
                "github@1.0.0",
                "jira@1.0.0"
            ]
        );
        assert_eq!(refs(filter(&c, "", "", true)).len(), 5);
        assert_eq!(
            refs(filter(&c, "CALC", "", true)),
            ["calculator@1.0.0", "calculator@0.9.0"]
        );
        assert_eq!(
            refs(filter(&c, "", "api", true)),
            ["github@1.0.0", "jira@1.0.0"]
        );
        assert_eq!(refs(filter(&c, "does", "search", false)), ["search@1.0.0"]);
        assert!(filter(&c, "old", "", true).is_empty());
    }

    #[test]
    fn a_tool_nodes_form_follows_its_schema_and_parses_by_type() {
        let schema = serde_json::json!({"type": "object", "properties": {
            "expression": {"type": "string"}, "limit": {"type": "integer"}, "data": {}},
            "required": ["expression"]});
        let mut config = ToolNodeConfig {
            tool: "t@1.0.0".into(),
            inputs: [(
                "expression".to_string(),
                FieldSource::Fixed {
                    value: serde_json::json!("1 + 1"),
                },
            )]
            .into(),
            secret_scope: None,
            output_path: None,
        };
        let rows = field_rows(&schema, &config);
        let names: Vec<(&str, bool, &str, &str)> = rows
            .iter()
            .map(|r| {
                (
                    r.name.as_str(),
                    r.required,
                    r.kind.as_str(),
                    r.text.as_str(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("data", false, "any", ""),
                ("expression", true, "string", "1 + 1"),
                ("limit", false, "integer", "")
            ]
        );
        set_field(&mut config, &rows[2], false, "5").unwrap();
        assert_eq!(
            config.inputs["limit"],
            FieldSource::Fixed {
                value: serde_json::json!(5)
            }
        );
        let err = set_field(&mut config, &rows[0], false, "{oops").unwrap_err();
        assert!(err.starts_with("data: not valid JSON"), "{err}");
        set_field(&mut config, &rows[1], true, "").unwrap();
        assert_eq!(config.inputs["expression"], FieldSource::Wired);
        set_field(&mut config, &rows[2], false, " ").unwrap();
        assert!(!config.inputs.contains_key("limit"), "empty unsets");
        let node = node_runtime::graph::Node {
            id: "t".into(),
            label: String::new(),
            position: Default::default(),
            kind: node_runtime::graph::NodeKind::Tool(config),
        };
        assert_eq!(
            node.inputs(),
            ["expression"],
            "a wired field is an input handle"
        );
    }

    #[test]
    fn auth_badges_say_what_is_missing_or_used() {
        let c = catalog();
        assert_eq!(auth_badge(&c[0]), None);
        assert_eq!(
            auth_badge(&c[2]),
            Some(("Missing API key (SEARCH_KEY)".into(), true))
        );
        assert_eq!(
            auth_badge(&c[3]),
            Some(("Using the organization's key (broad scope)".into(), true))
        );
        assert_eq!(
            auth_badge(&c[4]),
            Some(("Using workspace key".into(), false))
        );
    }

    #[test]
    fn the_form_follows_the_schema_and_parses_values_by_control() {
        let schema = serde_json::json!({"type": "object", "properties": {
            "units": {"type": "string", "enum": ["metric", "imperial"], "description": "Unit system"},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "ratio": {"type": "number"},
            "alerts": {"type": "boolean"},
            "where": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]},
            "name": {"type": "string", "maxLength": 5}
        }});
        let mut config = ToolNodeConfig {
            tool: "t@1.0.0".into(),
            inputs: Default::default(),
            secret_scope: None,
            output_path: None,
        };
        let rows = field_rows(&schema, &config);
        let row = |n: &str| rows.iter().find(|r| r.name == n).expect(n).clone();
        assert_eq!(
            row("units").control,
            Control::Choice(vec![
                ("\"metric\"".into(), "metric".into()),
                ("\"imperial\"".into(), "imperial".into())
            ])
        );
        assert_eq!(row("units").description, "Unit system");
        assert_eq!(row("days").control, Control::Number { integer: true });
        assert_eq!(row("ratio").control, Control::Number { integer: false });
        assert_eq!(row("alerts").control, Control::Toggle);
        assert_eq!(row("where").control, Control::Json);
        assert_eq!(row("name").control, Control::Text);

        set_field(&mut config, &row("units"), false, "\"imperial\"").unwrap();
        set_field(&mut config, &row("days"), false, "3").unwrap();
        set_field(&mut config, &row("ratio"), false, "0.5").unwrap();
        set_field(&mut config, &row("alerts"), false, "true").unwrap();
        set_field(&mut config, &row("where"), false, r#"{"lat": 52.5}"#).unwrap();
        let before = config.clone();
        for (field, text, says) in [
            ("days", "2.5", "days: `2.5` is not a whole number"),
            ("days", "many", "days: `many` is not a number"),
            ("alerts", "yes", "alerts: `yes` is not true or false"),
            ("where", "{lat", "where: not valid JSON"),
        ] {
            let err = set_field(&mut config, &row(field), false, text).expect_err(text);
            assert!(err.starts_with(says), "{field}={text}: {err}");
            assert_eq!(config, before, "{field}={text} refused: nothing changed");
        }
        let fixed = |n: &str| match &config.inputs[n] {
            FieldSource::Fixed { value } => value.clone(),
            FieldSource::Wired => Value::Null,
        };
        assert_eq!(fixed("units"), serde_json::json!("imperial"));
        assert_eq!(fixed("days"), serde_json::json!(3));
        assert_eq!(fixed("alerts"), serde_json::json!(true));
        // The form shows the stored values back.
        let again = field_rows(&schema, &config);
        assert_eq!(
            again.iter().find(|r| r.name == "units").unwrap().text,
            "\"imperial\""
        );
    }

    #[test]
    fn pin_settings_are_checked_and_a_refused_value_changes_nothing() {
        let node = new_node("agent", "a".into(), Position::default()).unwrap();
        let NodeKind::Agent(mut config) = node.kind else {
            panic!("agent")
        };
        let name = add_pin(&mut config, "calculator");
        set_pin_field(&mut config, &name, "strategy", "first_success").expect("strategy");
        set_pin_field(&mut config, &name, "on_missing", "stale_last_success").expect("on_missing");
        set_pin_field(&mut config, &name, "path", " /value ").expect("path");
        set_pin_field(&mut config, &name, "call_id", "c-1").expect("call id");
        let before = config.clone();
        for (field, text, named) in [
            ("path", "value", "path: `value` is not a JSON Pointer"),
            ("strategy", "newest", "strategy: `newest`"),
            ("on_missing", "ignore", "on_missing: `ignore`"),
            ("tool", " ", "tool:"),
            ("colour", "red", "`colour`"),
        ] {
            let err = set_pin_field(&mut config, &name, field, text).expect_err(field);
            assert!(err.starts_with(named), "{err}");
            assert_eq!(config, before, "{field} refused, nothing changed");
        }
        let pin = &config.pins[0];
        assert_eq!(pin.selector.strategy, PinStrategy::FirstSuccess);
        assert_eq!(pin.on_missing, OnMissing::StaleLastSuccess);
        assert_eq!(pin.path.as_deref(), Some("/value"));
        assert_eq!(pin.selector.call_id.as_deref(), Some("c-1"));
        set_pin_field(&mut config, &name, "path", "").expect("clear path");
        set_pin_field(&mut config, &name, "call_id", "").expect("clear call id");
        assert_eq!(
            (
                config.pins[0].path.clone(),
                config.pins[0].selector.call_id.clone()
            ),
            (None, None)
        );
        assert!(set_pin_field(&mut config, "nope", "path", "").is_err());
    }

    #[test]
    fn a_tools_secret_scope_is_the_one_all_its_secrets_come_from() {
        let secret = |scope: Option<&str>| SecretStatus {
            name: "K".into(),
            status: if scope.is_some() { "ok" } else { "missing" }.into(),
            scope: scope.map(str::to_string),
            warning: None,
        };
        let with = |s: Vec<SecretStatus>| tool("t", "1.0.0", "api", "active", s);
        use node_runtime::tool_spec::SecretScope;
        assert_eq!(secret_scope(&with(vec![])), None);
        assert_eq!(
            secret_scope(&with(vec![secret(Some("org"))])),
            Some(SecretScope::Org)
        );
        assert_eq!(
            secret_scope(&with(vec![secret(Some("user")), secret(Some("user"))])),
            Some(SecretScope::User)
        );
        assert_eq!(
            secret_scope(&with(vec![secret(Some("user")), secret(Some("org"))])),
            None
        );
        assert_eq!(secret_scope(&with(vec![secret(None)])), None);
    }

    #[test]
    fn disabling_a_pinned_tool_keeps_its_pin_and_handle() {
        let node = new_node("agent", "a".into(), Position::default()).unwrap();
        let NodeKind::Agent(mut config) = node.kind else {
            panic!("agent")
        };
        set_enabled(&mut config, "calculator@1.0.0", true);
        set_enabled(&mut config, "json_query@1.0.0", true);
        assert!(is_enabled(&config, "calculator@1.0.0"));
        assert_eq!(add_pin(&mut config, "calculator"), "calculator_result");
        assert_eq!(add_pin(&mut config, "calculator"), "calculator_result_2");
        set_enabled(&mut config, "calculator@1.0.0", false);
        assert!(!is_enabled(&config, "calculator@1.0.0"));
        assert_eq!(config.tools.len(), 2, "the entry stays, switched off");
        assert_eq!(config.pins.len(), 2, "the pins stay");
        let node = node_runtime::graph::Node {
            id: "a".into(),
            label: "A".into(),
            position: Position::default(),
            kind: NodeKind::Agent(config),
        };
        assert!(node.outputs().contains(&"calculator_result".to_string()));
        set_enabled(
            &mut match node.kind {
                NodeKind::Agent(c) => c,
                _ => unreachable!(),
            },
            "never@1.0.0",
            false,
        );
    }
}
