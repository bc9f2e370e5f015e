//! Graph validation. It returns diagnostics and never panics: cycles,
//! dangling edges, unknown handles, unknown or blocked tools (errors),
//! deprecated tools and pins on disabled tools (warnings), schema-known type
//! mismatches. Every diagnostic names its node and, where there is one, its
//! handle. The rules themselves (handles, types, cycles) are `rules`, which
//! the editor applies too.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::rules::{check_handles, compatible, schema_type, value_type, HandleError, JsonType};
use super::{template_variables, FieldSource, Node, NodeKind, Workflow, AGENT_OUTPUTS};
use crate::policy::check_parallel_calls;
use crate::tool_spec::{split_tool_ref, Lifecycle, ToolSpec};

pub use super::rules::topological_order;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Stable code, e.g. `CYCLE`, `PIN_TOOL_DISABLED`.
    pub code: String,
    pub message: String,
    pub node: String,
    #[serde(default)]
    pub handle: Option<String>,
}

/// Whether the diagnostics allow a run (no errors).
pub fn runnable(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().all(|d| d.severity != Severity::Error)
}

/// The tool versions validation knows about.
pub trait ToolCatalog {
    fn spec(&self, name: &str, version: &str) -> Option<&ToolSpec>;
}

impl ToolCatalog for [ToolSpec] {
    fn spec(&self, name: &str, version: &str) -> Option<&ToolSpec> {
        self.iter().find(|s| s.name == name && s.version == version)
    }
}

impl ToolCatalog for Vec<ToolSpec> {
    fn spec(&self, name: &str, version: &str) -> Option<&ToolSpec> {
        self.as_slice().spec(name, version)
    }
}

struct Ctx<'a> {
    catalog: &'a dyn ToolCatalog,
    out: Vec<Diagnostic>,
}

impl<'a> Ctx<'a> {
    fn push(
        &mut self,
        severity: Severity,
        code: &str,
        node: &str,
        handle: Option<&str>,
        message: String,
    ) {
        self.out.push(Diagnostic {
            severity,
            code: code.into(),
            message,
            node: node.into(),
            handle: handle.map(str::to_string),
        });
    }

    fn tool(&self, reference: &str) -> Result<&'a ToolSpec, String> {
        let catalog: &'a dyn ToolCatalog = self.catalog;
        let (name, version) = split_tool_ref(reference)
            .ok_or_else(|| format!("`{reference}` is not a name@version tool ref"))?;
        catalog
            .spec(name, version)
            .ok_or_else(|| format!("tool {reference} is not registered"))
    }

    /// Unknown, blocked and deprecated tool checks for one reference.
    fn check_tool(&mut self, node: &str, reference: &str, enabled: bool) {
        match self.tool(reference).map(|s| s.metadata.lifecycle) {
            Err(message) => self.push(Severity::Error, "UNKNOWN_TOOL", node, None, message),
            Ok(Lifecycle::Blocked) if enabled => self.push(
                Severity::Error,
                "TOOL_BLOCKED",
                node,
                None,
                format!("tool {reference} is blocked and cannot run"),
            ),
            Ok(Lifecycle::Deprecated) => self.push(
                Severity::Warning,
                "TOOL_DEPRECATED",
                node,
                None,
                format!("tool {reference} is deprecated"),
            ),
            Ok(_) => {}
        }
    }

    fn output_type(&self, node: &Node, handle: &str) -> JsonType {
        match &node.kind {
            NodeKind::Input(c) => {
                schema_type(c.schema.pointer(&format!("/properties/{}", escape(handle))))
            }
            NodeKind::Agent(_) => match handle {
                "response" => JsonType::Known("string"),
                "tools_by_id" => JsonType::Known("object"),
                "tool_order" => JsonType::Known("array"),
                _ => JsonType::Any,
            },
            NodeKind::Tool(c) => match handle {
                "output" if c.output_path.is_none() => self
                    .tool(&c.tool)
                    .map(|s| schema_type(Some(&s.output_schema)))
                    .unwrap_or(JsonType::Any),
                "envelope" => JsonType::Known("object"),
                _ => JsonType::Any,
            },
            NodeKind::Template(_) => JsonType::Known("string"),
            _ => JsonType::Any,
        }
    }

    fn input_type(&self, node: &Node, handle: &str) -> JsonType {
        match &node.kind {
            NodeKind::Tool(c) => self
                .tool(&c.tool)
                .map(|s| {
                    schema_type(
                        s.input_schema
                            .pointer(&format!("/properties/{}", escape(handle))),
                    )
                })
                .unwrap_or(JsonType::Any),
            _ => JsonType::Any,
        }
    }
}

/// JSON Pointer escaping of one key.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Validates a workflow against the known tools.
pub fn validate(workflow: &Workflow, catalog: &dyn ToolCatalog) -> Vec<Diagnostic> {
    let mut cx = Ctx {
        catalog,
        out: Vec::new(),
    };
    let nodes: BTreeMap<&str, &Node> = workflow.nodes.iter().map(|n| (n.id.as_str(), n)).collect();

    for node in &workflow.nodes {
        match &node.kind {
            NodeKind::Agent(c) => {
                if let Err(e) = check_parallel_calls(c.policy.max_parallel_calls) {
                    cx.push(
                        Severity::Error,
                        "POLICY_INVALID",
                        &node.id,
                        None,
                        format!("{e}, not {}", c.policy.max_parallel_calls),
                    );
                }
                if let Err(e) = template_variables(&c.prompt) {
                    cx.push(
                        Severity::Error,
                        "TEMPLATE",
                        &node.id,
                        None,
                        format!("the prompt does not parse: {e}"),
                    );
                }
                let mut names = BTreeSet::new();
                for t in &c.tools {
                    cx.check_tool(&node.id, &t.tool, t.enabled);
                    if let Some((name, _)) = split_tool_ref(&t.tool) {
                        if t.enabled && !names.insert(name.to_string()) {
                            cx.push(
                                Severity::Error,
                                "TOOL_TWICE",
                                &node.id,
                                None,
                                format!("tool {name} is enabled in two versions"),
                            );
                        }
                    }
                }
                let enabled: BTreeSet<String> = c
                    .tools
                    .iter()
                    .filter(|t| t.enabled)
                    .filter_map(|t| split_tool_ref(&t.tool).map(|(n, _)| n.to_string()))
                    .collect();
                let mut pin_names = BTreeSet::new();
                for pin in &c.pins {
                    if AGENT_OUTPUTS.contains(&pin.name.as_str())
                        || !pin_names.insert(pin.name.as_str())
                    {
                        cx.push(
                            Severity::Error,
                            "PIN_NAME",
                            &node.id,
                            Some(&pin.name),
                            format!("pin name `{}` is already an output of this node", pin.name),
                        );
                    }
                    if !enabled.contains(&pin.selector.tool) {
                        cx.push(
                            Severity::Warning,
                            "PIN_TOOL_DISABLED",
                            &node.id,
                            Some(&pin.name),
                            format!("pin `{}` listens to {}, which is not enabled; it will output its on_missing value", pin.name, pin.selector.tool),
                        );
                    }
                    if let Some(Err(e)) = pin.path.as_deref().map(super::pins::check_path) {
                        cx.push(
                            Severity::Error,
                            "PIN_PATH",
                            &node.id,
                            Some(&pin.name),
                            format!("pin `{}` path: {e}", pin.name),
                        );
                    }
                    if pin.selector.strategy == super::PinStrategy::ByCallId
                        && pin.selector.call_id.is_none()
                    {
                        cx.push(
                            Severity::Error,
                            "PIN_CALL_ID",
                            &node.id,
                            Some(&pin.name),
                            format!("pin `{}` selects by call id but names none", pin.name),
                        );
                    }
                }
            }
            NodeKind::Tool(c) => {
                cx.check_tool(&node.id, &c.tool, true);
                if let Ok(spec) = cx.tool(&c.tool) {
                    let required: Vec<String> = spec
                        .input_schema
                        .get("required")
                        .and_then(Value::as_array)
                        .map(|r| {
                            r.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default();
                    for field in required {
                        if !c.inputs.contains_key(&field) {
                            cx.push(
                                Severity::Error,
                                "MISSING_FIELD",
                                &node.id,
                                Some(&field),
                                format!("required field `{field}` is neither fixed nor wired"),
                            );
                        }
                    }
                    let known = spec
                        .input_schema
                        .get("properties")
                        .and_then(Value::as_object);
                    // Fields already named for their type are not named twice.
                    let mut mismatched = BTreeSet::new();
                    for (field, source) in &c.inputs {
                        if known.is_some_and(|k| !k.contains_key(field))
                            && spec.input_schema.get("additionalProperties")
                                == Some(&Value::Bool(false))
                        {
                            cx.push(
                                Severity::Error,
                                "UNKNOWN_FIELD",
                                &node.id,
                                Some(field),
                                format!("{} has no field `{field}`", c.tool),
                            );
                        }
                        if let FieldSource::Fixed { value } = source {
                            let expected = schema_type(known.and_then(|k| k.get(field)));
                            if !compatible(value_type(value), expected) {
                                mismatched.insert(field.as_str());
                                cx.push(Severity::Error, "TYPE_MISMATCH", &node.id, Some(field), format!("fixed value of `{field}` is not of the type the tool expects"));
                            }
                        }
                    }
                    #[cfg(feature = "runtime")]
                    for (field, message) in fixed_violations(&spec.input_schema, &c.inputs)
                        .into_iter()
                        .filter(|(f, _)| !mismatched.contains(f.as_str()))
                    {
                        cx.push(
                            Severity::Error,
                            "FIELD_INVALID",
                            &node.id,
                            Some(&field),
                            format!("fixed value of `{field}`: {message}"),
                        );
                    }
                }
            }
            NodeKind::Template(c) => {
                if let Err(e) = template_variables(&c.template) {
                    cx.push(
                        Severity::Error,
                        "TEMPLATE",
                        &node.id,
                        None,
                        format!("the template does not parse: {e}"),
                    );
                }
            }
            _ => {}
        }
    }

    // Edges: dangling, unknown handles, types, one edge per input.
    let mut wired: BTreeSet<(&str, &str)> = BTreeSet::new();
    for edge in &workflow.edges {
        let (Some(source), Some(target)) = (
            nodes.get(edge.source.node.as_str()),
            nodes.get(edge.target.node.as_str()),
        ) else {
            let missing = if nodes.contains_key(edge.source.node.as_str()) {
                &edge.target
            } else {
                &edge.source
            };
            cx.push(
                Severity::Error,
                "DANGLING_EDGE",
                &missing.node,
                Some(&missing.handle),
                format!(
                    "edge `{}` points at node `{}`, which does not exist",
                    edge.id, missing.node
                ),
            );
            continue;
        };
        match check_handles(source, &edge.source.handle, target, &edge.target.handle) {
            Ok(()) => {}
            Err(HandleError::UnknownOutput { node, handle }) => {
                let message = format!("node `{node}` has no output `{handle}`");
                cx.push(
                    Severity::Error,
                    "UNKNOWN_HANDLE",
                    &node,
                    Some(&handle),
                    message,
                );
                continue;
            }
            Err(HandleError::UnknownInput { node, handle }) => {
                let message = format!("node `{node}` has no input `{handle}`");
                cx.push(
                    Severity::Error,
                    "UNKNOWN_HANDLE",
                    &node,
                    Some(&handle),
                    message,
                );
                continue;
            }
        }
        if !wired.insert((target.id.as_str(), edge.target.handle.as_str())) {
            cx.push(
                Severity::Error,
                "DUPLICATE_INPUT",
                &target.id,
                Some(&edge.target.handle),
                format!(
                    "input `{}` of `{}` has more than one edge",
                    edge.target.handle, target.id
                ),
            );
        }
        let (from, to) = (
            cx.output_type(source, &edge.source.handle),
            cx.input_type(target, &edge.target.handle),
        );
        if !compatible(from, to) {
            cx.push(
                Severity::Error,
                "TYPE_MISMATCH",
                &target.id,
                Some(&edge.target.handle),
                format!(
                    "`{}.{}` gives {:?} but `{}.{}` expects {:?}",
                    source.id, edge.source.handle, from, target.id, edge.target.handle, to
                ),
            );
        }
    }
    for node in &workflow.nodes {
        for input in node.inputs() {
            if !wired.contains(&(node.id.as_str(), input.as_str())) {
                let severity = if matches!(node.kind, NodeKind::Tool(_) | NodeKind::Branch(_)) {
                    Severity::Error
                } else {
                    Severity::Warning
                };
                cx.push(
                    severity,
                    "UNWIRED_INPUT",
                    &node.id,
                    Some(&input),
                    format!("input `{input}` of `{}` has no edge", node.id),
                );
            }
        }
    }

    // Cycles: whatever cannot be ordered sits on a cycle (or below one).
    if let Err(unordered) = topological_order(workflow) {
        for node in unordered {
            let message = format!("node `{node}` is on a cycle");
            cx.push(Severity::Error, "CYCLE", &node, None, message);
        }
    }
    cx.out
        .sort_by(|a, b| (a.severity, &a.node, &a.code).cmp(&(b.severity, &b.node, &b.code)));
    cx.out
}

/// The fixed inputs of a Tool node checked against the tool's input schema
/// with the executor's validator (`jsonschema`), so the editor hears of a
/// value the call would refuse before it runs. Fields that are wired or
/// unset are not checked (a missing required one is `MISSING_FIELD`).
/// Returns (field, message), the first problem of each field.
#[cfg(feature = "runtime")]
fn fixed_violations(
    schema: &Value,
    inputs: &std::collections::BTreeMap<String, FieldSource>,
) -> Vec<(String, String)> {
    let fixed: serde_json::Map<String, Value> = inputs
        .iter()
        .filter_map(|(k, s)| match s {
            FieldSource::Fixed { value } => Some((k.clone(), value.clone())),
            FieldSource::Wired => None,
        })
        .collect();
    if fixed.is_empty() {
        return Vec::new();
    }
    let mut partial = schema.clone();
    if let Some(obj) = partial.as_object_mut() {
        obj.remove("required");
    }
    let Ok(validator) = jsonschema::validator_for(&partial) else {
        return Vec::new();
    };
    let instance = Value::Object(fixed);
    let mut found: Vec<(String, String)> = Vec::new();
    for e in validator.iter_errors(&instance) {
        let path = e.instance_path().to_string();
        let Some(field) = path
            .trim_start_matches('/')
            .split('/')
            .next()
            .filter(|f| !f.is_empty())
        else {
            continue;
        };
        let field = field.replace("~1", "/").replace("~0", "~");
        if found.iter().any(|(f, _)| *f == field) {
            continue;
        }
        let within = path
            .splitn(3, '/')
            .nth(2)
            .map(|rest| format!(" (at /{rest})"))
            .unwrap_or_default();
        found.push((field, format!("{e}{within}")));
    }
    found
}
