//! The tool selector's model: the registry as the API lists it, filtered
//! by text, category and "show deprecated"; the badges each row shows; and
//! the Agent node edits the selector makes (enable, disable, pin).

use node_runtime::graph::{
    AgentNodeConfig, OnMissing, PinSelector, PinStrategy, PinnedHandle, ToolSelection,
};
use serde::Deserialize;

/// One tool version from `GET /api/v1/tools`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
    #[serde(rename = "ref")]
    pub reference: String,
    #[serde(default)]
    pub description: String,
    pub category: String,
    pub side_effects: String,
    pub lifecycle: String,
    pub auth: Auth,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Auth {
    pub ok: bool,
    #[serde(default)]
    pub secrets: Vec<SecretStatus>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SecretStatus {
    pub name: String,
    pub status: String,
    pub scope: Option<String>,
    pub warning: Option<String>,
}

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
    let q = query.trim().to_lowercase();
    tools
        .iter()
        .filter(|t| t.lifecycle != "blocked")
        .filter(|t| show_deprecated || t.lifecycle != "deprecated")
        .filter(|t| category.is_empty() || t.category == category)
        .filter(|t| {
            q.is_empty()
                || t.name.to_lowercase().contains(&q)
                || t.description.to_lowercase().contains(&q)
        })
        .collect()
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
            reference: format!("{name}@{version}"),
            description: format!("{name} does things"),
            category: category.into(),
            side_effects: "none".into(),
            lifecycle: lifecycle.into(),
            auth: Auth {
                ok: secrets.iter().all(|s| s.status == "ok"),
                secrets,
            },
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
