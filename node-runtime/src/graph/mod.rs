//! The workflow graph: the versioned JSON format users save, the node kinds
//! and their handles, the rules the editor and validation share (`rules`),
//! pinned-handle resolution, validation, materialize-as-node, and what a run
//! records and reports (`record`). Plain data and pure functions
//! (wasm-safe), shared by the browser app and the server; the engine that
//! runs a graph is `engine` (runtime feature).
//!
//! # Format (version 1)
//!
//! ```json
//! {"format_version": 1, "id": "wf1", "name": "Weather",
//!  "description": "Asks an agent for the weather in a city", "revision": 3,
//!  "nodes": [{"id": "in", "label": "Input", "position": {"x": 0, "y": 0},
//!             "kind": "input", "config": {"schema": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
//!  "edges": [{"id": "e1", "source": {"node": "in", "handle": "city"},
//!             "target": {"node": "agent", "handle": "city"}}]}
//! ```
//!
//! A node's `kind` selects its `config` (see [`NodeKind`]). Handles are
//! derived from the config ([`Node::inputs`], [`Node::outputs`]); an Agent
//! node always has the five fixed outputs plus one per pinned handle,
//! whatever its tools, so saved edges never break.

#[cfg(feature = "runtime")]
pub mod engine;
pub mod materialize;
#[cfg(feature = "runtime")]
mod node_de;
pub mod pins;
pub mod record;
pub mod rules;
pub mod validate;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent_config::{ModelParams, ProviderConfig};
use crate::policy::Policy;
use crate::tool_spec::SecretScope;

pub use pins::{OnMissing, PinSelector, PinStrategy, PinnedHandle};

pub const WORKFLOW_FORMAT_VERSION: u32 = 1;

/// The Agent Node's fixed outputs (seed 003 §3.1), always present.
pub const AGENT_OUTPUTS: [&str; 5] = [
    "response",
    "tools_by_id",
    "tool_order",
    "last_tool",
    "traces_url",
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workflow {
    pub format_version: u32,
    pub id: String,
    pub name: String,
    /// One line saying what the workflow does (and what it needs, if
    /// anything); shown under its name. Absent when empty, so documents
    /// written before it existed stay byte for byte what they were.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default)]
    pub revision: u64,
    pub nodes: Vec<Node>,
    #[serde(default)]
    pub edges: Vec<Edge>,
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Position {
    pub x: f64,
    pub y: f64,
}

/// A node: `id`, `label`, `position`, then its `kind` and `config` (see
/// [`NodeKind`]). Written as derived; read by hand in the native build
/// (`node_de`), as derived in the app (whose size the hand-written reader
/// would grow).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(not(feature = "runtime"), derive(Deserialize))]
pub struct Node {
    pub id: String,
    #[serde(default)]
    pub label: String,
    #[serde(default)]
    pub position: Position,
    #[serde(flatten)]
    pub kind: NodeKind,
}

/// The node kinds and their configuration.
///
/// The Agent's config is the largest by far (a few hundred bytes); nodes
/// are built and matched far more often than they are moved, and a graph
/// holds at most thousands, so it stays inline rather than boxed.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "config", rename_all = "snake_case")]
pub enum NodeKind {
    /// The workflow's inputs: one output per property of `schema`.
    Input(InputConfig),
    Agent(AgentNodeConfig),
    /// One tool@version; each input field fixed or wired.
    Tool(ToolNodeConfig),
    /// Text rendered by minijinja over the node's inputs.
    Template(TemplateConfig),
    /// Routes its input to `true` or `false`.
    Branch(BranchConfig),
    /// Collects the workflow's result: one input per name.
    Output(OutputConfig),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputConfig {
    /// A JSON Schema of type object; each property is an output handle.
    pub schema: Value,
}

/// One tool version offered to the agent, switched on or off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSelection {
    /// `name@version`.
    pub tool: String,
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentNodeConfig {
    #[serde(default)]
    pub system_prompt: String,
    /// A minijinja template; its variables are the node's input handles.
    pub prompt: String,
    #[serde(default)]
    pub tools: Vec<ToolSelection>,
    #[serde(default)]
    pub policy: Policy,
    #[cfg_attr(
        feature = "runtime",
        serde(deserialize_with = "crate::agent_config::deserialize_provider")
    )]
    pub provider: ProviderConfig,
    #[serde(default)]
    pub params: ModelParams,
    #[serde(default)]
    pub pins: Vec<PinnedHandle>,
}

impl AgentNodeConfig {
    /// The enabled tool refs, the agent's allow-list.
    pub fn enabled_tools(&self) -> Vec<String> {
        self.tools
            .iter()
            .filter(|t| t.enabled)
            .map(|t| t.tool.clone())
            .collect()
    }
}

/// Where a Tool node input field gets its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case", deny_unknown_fields)]
pub enum FieldSource {
    Fixed {
        value: Value,
    },
    /// From the edge that targets the handle of the same name.
    Wired,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolNodeConfig {
    /// `name@version`.
    pub tool: String,
    #[serde(default)]
    pub inputs: BTreeMap<String, FieldSource>,
    /// Which secret scope the call should use (recorded when materialized).
    #[serde(default)]
    pub secret_scope: Option<SecretScope>,
    /// A JSON Pointer applied to the tool's output for the `output` handle.
    #[serde(default)]
    pub output_path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateConfig {
    pub template: String,
}

/// The comparison a Branch node makes on the value at `pointer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Condition {
    Equals { value: Value },
    NotEquals { value: Value },
    Exists,
    IsNull,
    Truthy,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BranchConfig {
    /// JSON Pointer into the input, e.g. `/error/code` of a Tool node's
    /// envelope to route "on VALIDATION_ERROR go to review".
    #[serde(default)]
    pub pointer: String,
    pub condition: Condition,
}

impl BranchConfig {
    /// Whether `input` takes the `true` side.
    pub fn evaluate(&self, input: &Value) -> bool {
        let at = if self.pointer.is_empty() {
            Some(input)
        } else {
            input.pointer(&self.pointer)
        };
        match &self.condition {
            Condition::Equals { value } => at == Some(value),
            Condition::NotEquals { value } => at != Some(value),
            Condition::Exists => at.is_some(),
            Condition::IsNull => at.is_none_or(Value::is_null),
            Condition::Truthy => match at {
                None | Some(Value::Null) | Some(Value::Bool(false)) => false,
                Some(Value::String(s)) => !s.is_empty(),
                Some(Value::Number(n)) => n.as_f64() != Some(0.0),
                Some(Value::Array(a)) => !a.is_empty(),
                Some(_) => true,
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// The result's field names; each is an input handle.
    pub fields: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandleRef {
    pub node: String,
    pub handle: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edge {
    pub id: String,
    pub source: HandleRef,
    pub target: HandleRef,
}

/// The most steps one rendering may take (minijinja's fuel): enough for
/// any prompt or report, and a runaway loop stops within milliseconds, so
/// a cancel is not kept waiting behind it.
pub const TEMPLATE_FUEL: u64 = 1_000_000;
/// The largest text one rendering may produce.
pub const TEMPLATE_MAX_OUTPUT: usize = 1024 * 1024;

/// Renders a minijinja template over the inputs, within [`TEMPLATE_FUEL`]
/// steps and [`TEMPLATE_MAX_OUTPUT`] bytes: the run's rendering, and the
/// editor's preview of a Template node (wasm), which therefore agree.
pub fn render(template: &str, inputs: &BTreeMap<String, Value>) -> Result<String, String> {
    render_within(template, inputs, TEMPLATE_FUEL).map_err(|e| e.to_string())
}

/// Why a rendering gave no text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RenderError {
    #[error("template stopped: it took more than {0} steps")]
    OutOfFuel(u64),
    #[error("{0}")]
    Failed(String),
}

/// [`render`] within `fuel` steps (at most [`TEMPLATE_FUEL`]).
pub fn render_within(
    template: &str,
    inputs: &BTreeMap<String, Value>,
    fuel: u64,
) -> Result<String, RenderError> {
    let fuel = fuel.min(TEMPLATE_FUEL);
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Chainable);
    env.set_fuel(Some(fuel));
    let out = env.render_str(template, inputs).map_err(|e| {
        if e.kind() == minijinja::ErrorKind::OutOfFuel {
            RenderError::OutOfFuel(fuel)
        } else {
            RenderError::Failed(format!("template does not render: {e}"))
        }
    })?;
    if out.len() > TEMPLATE_MAX_OUTPUT {
        return Err(RenderError::Failed(format!(
            "template output is {} bytes, more than the {TEMPLATE_MAX_OUTPUT} allowed",
            out.len()
        )));
    }
    Ok(out)
}

/// The variables of a template, or why it does not parse.
pub type TemplateVariables = Result<BTreeSet<String>, String>;

thread_local! {
    /// Answers for the most recent templates: a node's handles are asked for
    /// often (the editor draws, culls and wires by them), and a parse costs
    /// microseconds each time.
    static KNOWN_TEMPLATES: std::cell::RefCell<lru::LruCache<String, TemplateVariables>> =
        std::cell::RefCell::new(lru::LruCache::new(KEPT_TEMPLATES));
    /// Templates asked for and not known (the browser app only: it learns
    /// them from the server, see [`template_variables`]).
    static MISSED_TEMPLATES: std::cell::RefCell<BTreeSet<String>> =
        const { std::cell::RefCell::new(BTreeSet::new()) };
}

const KEPT_TEMPLATES: std::num::NonZeroUsize = match std::num::NonZeroUsize::new(256) {
    Some(n) => n,
    None => unreachable!(),
};

/// Variables a minijinja template reads (its input handles), sorted.
///
/// Answers are kept per thread for the most recent templates. Natively an
/// unknown template is parsed. In the browser app (wasm) it is not: the
/// parser is most of the editor's code, so the app learns the answers from
/// the server (`POST /api/v1/workflows/template-variables`) and
/// [`remember_template_variables`]; until then an unknown template reads no
/// variables and is listed by [`take_missed_templates`]. The inspector,
/// which edits templates, parses with [`parse_template_variables`].
pub fn template_variables(template: &str) -> TemplateVariables {
    if let Some(known) = known_template_variables(template) {
        return known;
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        parse_template_variables(template)
    }
    #[cfg(target_arch = "wasm32")]
    {
        MISSED_TEMPLATES.with_borrow_mut(|missed| missed.insert(template.to_string()));
        Ok(BTreeSet::new())
    }
}

/// The kept answer for `template`, if any.
pub fn known_template_variables(template: &str) -> Option<TemplateVariables> {
    KNOWN_TEMPLATES.with_borrow_mut(|known| known.get(template).cloned())
}

/// Parses `template` (with minijinja) for its variables and keeps the
/// answer.
pub fn parse_template_variables(template: &str) -> TemplateVariables {
    // An empty environment: the variables come from the template's syntax
    // alone, and the built-in filters (most of minijinja's code) are not
    // reached.
    let env = minijinja::Environment::empty();
    let found = env
        .template_from_str(template)
        .map(|tmpl| tmpl.undeclared_variables(false).into_iter().collect())
        .map_err(|e| e.to_string());
    remember_template_variables(template, found.clone());
    found
}

/// Keeps `answer` as the variables of `template` (an answer from the
/// server, in the browser app).
pub fn remember_template_variables(template: &str, answer: TemplateVariables) {
    MISSED_TEMPLATES.with_borrow_mut(|missed| missed.remove(template));
    KNOWN_TEMPLATES.with_borrow_mut(|known| known.put(template.to_string(), answer));
}

/// The templates [`template_variables`] was asked for and did not know
/// since the last call (always none natively).
pub fn take_missed_templates() -> Vec<String> {
    MISSED_TEMPLATES.with_borrow_mut(|missed| std::mem::take(missed).into_iter().collect())
}

impl Node {
    pub fn kind_name(&self) -> &'static str {
        match &self.kind {
            NodeKind::Input(_) => "input",
            NodeKind::Agent(_) => "agent",
            NodeKind::Tool(_) => "tool",
            NodeKind::Template(_) => "template",
            NodeKind::Branch(_) => "branch",
            NodeKind::Output(_) => "output",
        }
    }

    /// Input handle names, or `None` while they depend on a template whose
    /// variables are not known (see [`template_variables`]).
    pub fn known_inputs(&self) -> Option<Vec<String>> {
        let template = match &self.kind {
            NodeKind::Agent(c) => &c.prompt,
            NodeKind::Template(c) => &c.template,
            _ => return Some(self.inputs()),
        };
        if cfg!(target_arch = "wasm32") && known_template_variables(template).is_none() {
            return None;
        }
        Some(self.inputs())
    }

    /// Input handle names.
    pub fn inputs(&self) -> Vec<String> {
        match &self.kind {
            NodeKind::Input(_) => Vec::new(),
            NodeKind::Agent(c) => template_variables(&c.prompt)
                .map(|v| v.into_iter().collect())
                .unwrap_or_default(),
            NodeKind::Template(c) => template_variables(&c.template)
                .map(|v| v.into_iter().collect())
                .unwrap_or_default(),
            NodeKind::Tool(c) => c
                .inputs
                .iter()
                .filter(|(_, s)| matches!(s, FieldSource::Wired))
                .map(|(k, _)| k.clone())
                .collect(),
            NodeKind::Branch(_) => vec!["value".into()],
            NodeKind::Output(c) => c.fields.clone(),
        }
    }

    /// Output handle names.
    pub fn outputs(&self) -> Vec<String> {
        match &self.kind {
            NodeKind::Input(c) => c
                .schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default(),
            NodeKind::Agent(c) => AGENT_OUTPUTS
                .iter()
                .map(|s| s.to_string())
                .chain(c.pins.iter().map(|p| p.name.clone()))
                .collect(),
            NodeKind::Tool(_) => vec!["output".into(), "error".into(), "envelope".into()],
            NodeKind::Template(_) => vec!["text".into()],
            NodeKind::Branch(_) => vec!["true".into(), "false".into()],
            NodeKind::Output(_) => Vec::new(),
        }
    }
}

/// Why a workflow document was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkflowError {
    #[error("workflow JSON does not parse: {0}")]
    NotJson(String),
    #[error("workflow format_version {found} is not supported (this Glassbox reads {WORKFLOW_FORMAT_VERSION})")]
    UnknownVersion { found: Value },
    #[error("invalid workflow at `{path}`: {message}")]
    Invalid { path: String, message: String },
}

impl Workflow {
    /// Parses and checks a workflow document; errors name the JSON path.
    ///
    /// A document of the current format is read straight into its types;
    /// only one that does not read that way goes through a `Value`, whose
    /// errors name the JSON path. Both ways accept the same documents and
    /// give the same workflow (no type here keeps its keys' order), but the
    /// `Value` costs a copy of every string of the document: a workflow
    /// carrying a long scripted conversation paid that on every run (issue
    /// #30).
    pub fn from_json(text: &str) -> Result<Self, WorkflowError> {
        if let Ok(wf) = serde_json::from_str::<Workflow>(text) {
            if wf.format_version == WORKFLOW_FORMAT_VERSION {
                return wf.checked();
            }
        }
        let value: Value =
            serde_json::from_str(text).map_err(|e| WorkflowError::NotJson(e.to_string()))?;
        Self::from_value(&value)
    }

    pub fn from_value(value: &Value) -> Result<Self, WorkflowError> {
        match value.get("format_version") {
            Some(v) if v.as_u64() == Some(u64::from(WORKFLOW_FORMAT_VERSION)) => {}
            Some(other) => {
                return Err(WorkflowError::UnknownVersion {
                    found: other.clone(),
                })
            }
            None => {
                return Err(WorkflowError::Invalid {
                    path: "format_version".into(),
                    message: "missing field".into(),
                })
            }
        }
        let wf: Workflow =
            serde_path_to_error::deserialize(value).map_err(|e| WorkflowError::Invalid {
                path: e.path().to_string(),
                message: e.inner().to_string(),
            })?;
        wf.checked()
    }

    /// The workflow if its node and edge ids are unique and not empty.
    fn checked(self) -> Result<Self, WorkflowError> {
        let mut seen = BTreeSet::new();
        for (i, node) in self.nodes.iter().enumerate() {
            if node.id.is_empty() {
                return Err(WorkflowError::Invalid {
                    path: format!("nodes[{i}].id"),
                    message: "empty node id".into(),
                });
            }
            if !seen.insert(node.id.as_str()) {
                return Err(WorkflowError::Invalid {
                    path: format!("nodes[{i}].id"),
                    message: format!("duplicate node id `{}`", node.id),
                });
            }
        }
        let mut edge_ids = BTreeSet::new();
        for (i, edge) in self.edges.iter().enumerate() {
            if !edge_ids.insert(edge.id.as_str()) {
                return Err(WorkflowError::Invalid {
                    path: format!("edges[{i}].id"),
                    message: format!("duplicate edge id `{}`", edge.id),
                });
            }
        }
        Ok(self)
    }

    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a workflow is plain data and always serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::{template_variables, Workflow};

    #[test]
    fn a_description_is_kept_and_an_empty_one_is_not_written() {
        let plain =
            r#"{"format_version":1,"id":"w","name":"n","revision":1,"nodes":[],"edges":[]}"#;
        let wf = Workflow::from_json(plain).expect("parses");
        assert_eq!(wf.description, "");
        assert_eq!(serde_json::to_string(&wf).expect("json"), plain);
        let described = r#"{"format_version":1,"id":"w","name":"n","description":"Does a thing.","revision":1,"nodes":[],"edges":[]}"#;
        let wf = Workflow::from_json(described).expect("parses");
        assert_eq!(wf.description, "Does a thing.");
        assert_eq!(serde_json::to_string(&wf).expect("json"), described);
        let err = Workflow::from_json(&described.replace("\"Does a thing.\"", "7"))
            .expect_err("not text");
        assert!(err.to_string().contains("`description`"), "{err}");
    }

    /// `from_json` reads a document straight into its types and falls back
    /// to the `Value` path; both must give the same workflow, or the same
    /// error, for every document.
    #[test]
    fn the_typed_path_and_the_value_path_agree() {
        let via_value = |text: &str| -> Result<Workflow, String> {
            let value: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| super::WorkflowError::NotJson(e.to_string()).to_string())?;
            Workflow::from_value(&value).map_err(|e| e.to_string())
        };
        let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        let mut docs: Vec<String> = std::fs::read_dir(&examples)
            .expect("the examples directory")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .map(|p| std::fs::read_to_string(p).expect("an example"))
            .collect();
        assert!(docs.len() >= 5, "the examples were read");
        let plain =
            r#"{"format_version":1,"id":"w","name":"n","revision":1,"nodes":[],"edges":[]}"#;
        docs.extend([
            plain.to_string(),
            // A repeated key: the `Value` keeps the last; so must the typed path.
            plain.replace(r#""name":"n""#, r#""name":"a","name":"n""#),
            plain.replace(r#""format_version":1"#, r#""format_version":2"#),
            plain.replace(r#""format_version":1"#, r#""format_version":1.0"#),
            plain.replace(r#""format_version":1,"#, ""),
            plain.replace(r#""revision":1"#, r#""revision":"one""#),
            plain.replace(r#""nodes":[]"#, r#""nodes":[{"id":"a","kind":"input","config":{}},{"id":"a","kind":"input","config":{}}]"#),
            plain.replace(r#""edges":[]"#, r#""edges":[],"extra":true"#),
            "[]".to_string(),
            "{".to_string(),
        ]);
        for doc in &docs {
            let typed = Workflow::from_json(doc).map_err(|e| e.to_string());
            assert_eq!(typed, via_value(doc), "{doc}");
        }
        let repeated = plain.replace(r#""name":"n""#, r#""name":"a","name":"n""#);
        assert_eq!(Workflow::from_json(&repeated).expect("reads").name, "n");
    }

    #[test]
    fn remembered_answers_are_the_answers() {
        // The browser app learns answers from the server: a remembered
        // answer is what every later question gets, parse error included.
        use super::{known_template_variables, remember_template_variables, take_missed_templates};
        let text = "{{ remembered_only }}";
        assert!(known_template_variables(text).is_none());
        let answer: std::collections::BTreeSet<String> = ["x".to_string()].into();
        remember_template_variables(text, Ok(answer.clone()));
        assert_eq!(template_variables(text), Ok(answer));
        remember_template_variables("{{ a ", Err("unclosed".into()));
        assert_eq!(template_variables("{{ a "), Err("unclosed".into()));
        // Natively an unknown template is parsed, never missed.
        assert_eq!(
            template_variables("{{ fresh_one }}").map(|v| v.len()),
            Ok(1)
        );
        assert!(take_missed_templates().is_empty());
    }

    #[test]
    fn template_variables_answer_the_same_when_kept() {
        for _ in 0..2 {
            let vars =
                template_variables("{{ b }} {% for x in items %}{{ x.name }}{% endfor %} {{ a }}")
                    .expect("valid");
            assert_eq!(vars.into_iter().collect::<Vec<_>>(), ["a", "b", "items"]);
            let err = template_variables("{{ a ").expect_err("unclosed");
            assert!(err.contains("syntax error"), "{err}");
        }
        // Past what is kept, older templates are parsed again.
        for i in 0..300 {
            let vars = template_variables(&format!("{{{{ v{i} }}}}")).expect("valid");
            assert_eq!(vars.into_iter().collect::<Vec<_>>(), [format!("v{i}")]);
        }
        assert!(template_variables("{{ b }}").expect("valid").contains("b"));
        // Filters and tests need no environment to be read (only to render).
        let vars =
            template_variables("{{ name | upper }}{% if n is even %}{{ n | round }}{% endif %}")
                .expect("valid");
        assert_eq!(vars.into_iter().collect::<Vec<_>>(), ["n", "name"]);
    }
}
