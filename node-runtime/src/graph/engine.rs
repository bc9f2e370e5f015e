//! The graph engine: runs a workflow.
//!
//! Nodes run as soon as every upstream node has ended, so independent
//! branches run concurrently. A node's inputs are its incoming edges'
//! source values. A Branch node emits only the handle it takes; whatever
//! hangs off the other handle is skipped (an Output node still runs and
//! records null for what was skipped). A failed node fails everything
//! downstream of it while unrelated branches finish. Cancelling the run
//! stops in-flight nodes and skips the rest.
//!
//! Tool errors are data, not failures: a Tool node whose call fails ends
//! `done` with the error on its `error` handle, so a Branch can route on the
//! code. A node fails when it cannot produce its outputs at all (a template
//! that does not render, a pin with `on_missing: error`, an agent whose
//! model is unreachable).
//!
//! A host that must survive restarts passes [`Checkpoints`]: every ended
//! node's record and every Agent node's state at an approval suspension are
//! handed over (and awaited) as they happen. [`resume_workflow`] continues
//! an interrupted run from them: ended nodes are not run again, a suspended
//! agent continues from its saved state, and a node that was in flight
//! starts over. Approved writes go through a [`WriteJournal`], so a write
//! runs at most once.
//!
//! [`replay_workflow`] re-runs every Agent node from its replay bundle and
//! every other node from the recorded run, with no model or tool call, and
//! must reproduce the workflow's outputs exactly.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::pins::{resolve, PinValue};
use super::validate::{runnable, topological_order, validate, Diagnostic};
use super::{FieldSource, Node, NodeKind, Workflow, AGENT_OUTPUTS};
use crate::agent::approval::{ApprovalRequest, Decision};
use crate::agent::replay::{replay, ReplayBundle};
use crate::agent::{AgentEvent, AgentRun, AgentRuntime, EventSink, LiveTools, Step, WriteJournal};
use crate::agent_config::{AgentConfig, ProviderConfig};
use crate::call_id::CallIdAllocator;
use crate::envelope::ToolEnvelope;
use crate::executor::{now_rfc3339, CallScope, Executor, ToolCall};

use crate::model::{ChatModel, ModelError};
use crate::policy::{Policy, Usage};
use crate::secrets::SecretOwner;
use crate::tool::{ToolEnv, ToolRegistry};
use crate::tool_spec::{split_tool_ref, SideEffects, ToolSpec};

/// Builds the model an Agent node's provider config names (the host
/// resolves the API key secret).
pub trait ModelFactory: Send + Sync {
    fn model(&self, config: &ProviderConfig) -> Result<Arc<dyn ChatModel>, ModelError>;
}

/// Durable progress of a run (see the module docs). `agent_suspended`
/// returns once the host has stored the state; `node_ended` may return as
/// soon as the record is queued in order (a lost node record only means the
/// node runs again on resume).
pub trait Checkpoints: Send + Sync {
    fn node_ended<'a>(&'a self, record: &'a NodeRecord) -> BoxFuture<'a, ()>;
    fn agent_suspended<'a>(&'a self, node_id: &'a str, run: &'a AgentRun) -> BoxFuture<'a, ()>;
}

/// What an interrupted run had done, from its [`Checkpoints`].
#[derive(Debug, Clone, Default)]
pub struct ResumeState {
    /// Nodes that had ended.
    pub records: BTreeMap<String, NodeRecord>,
    /// Agent nodes suspended for approval, by node id.
    pub agents: HashMap<String, AgentRun>,
}

/// Waits for human decisions on pending writes.
pub trait ApprovalGate: Send + Sync {
    fn decide<'a>(
        &'a self,
        node_id: &'a str,
        requests: Vec<ApprovalRequest>,
    ) -> BoxFuture<'a, Vec<(String, Decision)>>;
}

/// Where `stale_last_success` finds values from earlier runs.
pub trait PinHistory: Send + Sync {
    fn last_resolved(&self, workflow_id: &str, node_id: &str, pin: &str) -> Option<Value>;
    fn record(&self, workflow_id: &str, node_id: &str, pin: &str, value: &Value);
}

/// An in-memory pin history.
#[derive(Default)]
pub struct MemoryPinHistory(Mutex<HashMap<(String, String, String), Value>>);

impl PinHistory for MemoryPinHistory {
    fn last_resolved(&self, workflow_id: &str, node_id: &str, pin: &str) -> Option<Value> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(workflow_id.into(), node_id.into(), pin.into()))
            .cloned()
    }
    fn record(&self, workflow_id: &str, node_id: &str, pin: &str, value: &Value) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(
            (workflow_id.into(), node_id.into(), pin.into()),
            value.clone(),
        );
    }
}

/// Everything the engine needs from its host.
pub struct EngineServices {
    pub registry: Arc<ToolRegistry>,
    pub executor: Arc<Executor>,
    pub agents: Arc<AgentRuntime>,
    pub models: Arc<dyn ModelFactory>,
    pub approvals: Arc<dyn ApprovalGate>,
    pub pin_history: Arc<dyn PinHistory>,
    pub owner: SecretOwner,
    pub env: Arc<ToolEnv>,
    /// `traces_url` template; `{run_id}` is replaced.
    pub traces_url: Option<String>,
    /// Durable progress, for hosts that resume runs after a restart.
    pub checkpoints: Option<Arc<dyn Checkpoints>>,
    /// Intent and result records of approved writes.
    pub journal: Option<Arc<dyn WriteJournal>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    Done,
    Failed,
    Skipped,
}

/// What one node did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRecord {
    pub node_id: String,
    pub status: NodeStatus,
    pub inputs: BTreeMap<String, Value>,
    pub outputs: BTreeMap<String, Value>,
    pub error: Option<String>,
    pub started_at: String,
    pub finished_at: String,
    /// Agent nodes: the replay bundle of their loop.
    #[serde(default)]
    pub bundle: Option<ReplayBundle>,
    /// Tool nodes: the call's envelope.
    #[serde(default)]
    pub envelope: Option<ToolEnvelope>,
    /// Pins that fell back to an earlier run's value (for replay).
    #[serde(default)]
    pub pin_fallbacks: BTreeMap<String, Value>,
}

impl NodeRecord {
    /// The record of a node that ended without running (skipped, or failed
    /// because of its upstream).
    fn ended(node_id: &str, status: NodeStatus, reason: String, now: String) -> Self {
        Self {
            node_id: node_id.to_string(),
            status,
            inputs: BTreeMap::new(),
            outputs: BTreeMap::new(),
            error: Some(reason),
            started_at: now.clone(),
            finished_at: now,
            bundle: None,
            envelope: None,
            pin_fallbacks: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    Succeeded,
    Failed,
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowRun {
    pub run_id: String,
    pub workflow_id: String,
    pub outcome: RunOutcome,
    /// Output nodes' fields, merged.
    pub outputs: BTreeMap<String, Value>,
    pub nodes: BTreeMap<String, NodeRecord>,
}

/// Node- and agent-level events of a workflow run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum WorkflowEvent {
    NodeStarted {
        node_id: String,
    },
    NodeFinished {
        node_id: String,
        status: NodeStatus,
        error: Option<String>,
    },
    Agent {
        node_id: String,
        /// Boxed: agent events are much larger than node events.
        event: Box<AgentEvent>,
    },
    RunFinished {
        outcome: RunOutcome,
    },
}

pub trait WorkflowSink: Send + Sync {
    fn emit(&self, event: WorkflowEvent);
}

/// Keeps every event (tests, CLI).
#[derive(Default)]
pub struct VecWorkflowSink(pub Mutex<Vec<WorkflowEvent>>);

impl WorkflowSink for VecWorkflowSink {
    fn emit(&self, event: WorkflowEvent) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(event);
    }
}

/// Passes an agent's events on, tagged with its node.
struct AgentSink<'a> {
    node_id: String,
    inner: &'a dyn WorkflowSink,
}

impl EventSink for AgentSink<'_> {
    fn emit(&self, event: AgentEvent) {
        self.inner.emit(WorkflowEvent::Agent {
            node_id: self.node_id.clone(),
            event: Box::new(event),
        });
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    #[error("the workflow is not valid: {}", .0.iter().filter(|d| d.severity == super::validate::Severity::Error).map(|d| format!("{} on {}: {}", d.code, d.node, d.message)).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<Diagnostic>),
    #[error("input `{field}`: {message}")]
    BadInput { field: String, message: String },
    #[error("replay diverged at node `{node}`: {message}")]
    ReplayDiverged { node: String, message: String },
}

/// What a node's work produced.
struct NodeResult {
    outputs: BTreeMap<String, Value>,
    bundle: Option<ReplayBundle>,
    envelope: Option<ToolEnvelope>,
    pin_fallbacks: BTreeMap<String, Value>,
}

impl NodeResult {
    fn outputs(outputs: BTreeMap<String, Value>) -> Self {
        Self {
            outputs,
            bundle: None,
            envelope: None,
            pin_fallbacks: BTreeMap::new(),
        }
    }
}

/// Renders a minijinja template over the inputs.
pub fn render(template: &str, inputs: &BTreeMap<String, Value>) -> Result<String, String> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Chainable);
    env.render_str(template, inputs)
        .map_err(|e| format!("template does not render: {e}"))
}

/// Branch, Template, Output and Input: the nodes whose outputs are a pure
/// function of their inputs (and the workflow inputs).
fn compute_pure(
    node: &Node,
    inputs: &BTreeMap<String, Value>,
    workflow_inputs: &Map<String, Value>,
) -> Result<BTreeMap<String, Value>, String> {
    Ok(match &node.kind {
        NodeKind::Input(c) => node
            .outputs()
            .into_iter()
            .map(|field| {
                let value = workflow_inputs
                    .get(&field)
                    .cloned()
                    .or_else(|| {
                        c.schema
                            .pointer(&format!("/properties/{field}/default"))
                            .cloned()
                    })
                    .unwrap_or(Value::Null);
                (field, value)
            })
            .collect(),
        NodeKind::Template(c) => BTreeMap::from([(
            "text".to_string(),
            Value::String(render(&c.template, inputs)?),
        )]),
        NodeKind::Branch(c) => {
            let value = inputs.get("value").cloned().unwrap_or(Value::Null);
            let side = if c.evaluate(&value) { "true" } else { "false" };
            BTreeMap::from([(side.to_string(), value)])
        }
        NodeKind::Output(c) => c
            .fields
            .iter()
            .map(|f| (f.clone(), inputs.get(f).cloned().unwrap_or(Value::Null)))
            .collect(),
        NodeKind::Agent(_) | NodeKind::Tool(_) => return Err("not a pure node".into()),
    })
}

fn tool_input(config: &super::ToolNodeConfig, inputs: &BTreeMap<String, Value>) -> Value {
    let mut object = Map::new();
    for (field, source) in &config.inputs {
        let value = match source {
            FieldSource::Fixed { value } => value.clone(),
            FieldSource::Wired => inputs.get(field).cloned().unwrap_or(Value::Null),
        };
        object.insert(field.clone(), value);
    }
    Value::Object(object)
}

fn tool_outputs(
    config: &super::ToolNodeConfig,
    envelope: &ToolEnvelope,
) -> BTreeMap<String, Value> {
    let output = match &config.output_path {
        Some(p) if !p.is_empty() => envelope.output.pointer(p).cloned().unwrap_or(Value::Null),
        _ => envelope.output.clone(),
    };
    BTreeMap::from([
        ("output".to_string(), output),
        (
            "error".to_string(),
            envelope
                .error
                .as_ref()
                .map(|e| json!(e))
                .unwrap_or(Value::Null),
        ),
        ("envelope".to_string(), json!(envelope)),
    ])
}

/// An Agent node's handle values, the pins that fell back to an earlier
/// run's value, and the pins that resolved in this run (for the history).
struct AgentHandles {
    handles: BTreeMap<String, Value>,
    fallbacks: BTreeMap<String, Value>,
    resolved: Vec<(String, Value)>,
}

/// An Agent node's handles from its outputs, pins resolved.
fn agent_handles(
    config: &super::AgentNodeConfig,
    outputs: &crate::envelope::AgentOutputs,
    stale: &dyn Fn(&str) -> Option<Value>,
) -> Result<AgentHandles, String> {
    let as_value = serde_json::to_value(outputs).map_err(|e| e.to_string())?;
    let mut handles: BTreeMap<String, Value> = AGENT_OUTPUTS
        .iter()
        .map(|k| (k.to_string(), as_value[*k].clone()))
        .collect();
    let mut fallbacks = BTreeMap::new();
    let mut resolved = Vec::new();
    for pin in &config.pins {
        match resolve(pin, outputs, || stale(&pin.name)).map_err(|e| e.to_string())? {
            PinValue::Found(v) => {
                if !v.is_null() {
                    resolved.push((pin.name.clone(), v.clone()));
                }
                handles.insert(pin.name.clone(), v);
            }
            PinValue::Missing(v) => {
                if !v.is_null() {
                    fallbacks.insert(pin.name.clone(), v.clone());
                }
                handles.insert(pin.name.clone(), v);
            }
        }
    }
    Ok(AgentHandles {
        handles,
        fallbacks,
        resolved,
    })
}

struct Runner<'a> {
    services: &'a EngineServices,
    workflow: &'a Workflow,
    run_id: &'a str,
    sink: &'a dyn WorkflowSink,
    cancel: CancellationToken,
    /// Suspended agents of a resumed run, taken by their node when it runs.
    resumed_agents: Mutex<HashMap<String, AgentRun>>,
}

impl Runner<'_> {
    async fn run_node(
        &self,
        node: &Node,
        inputs: &BTreeMap<String, Value>,
        workflow_inputs: &Map<String, Value>,
    ) -> Result<NodeResult, String> {
        match &node.kind {
            NodeKind::Tool(c) => self.run_tool_node(node, c, inputs).await,
            NodeKind::Agent(c) => self.run_agent_node(node, c, inputs).await,
            _ => compute_pure(node, inputs, workflow_inputs).map(NodeResult::outputs),
        }
    }

    async fn run_tool_node(
        &self,
        node: &Node,
        config: &super::ToolNodeConfig,
        inputs: &BTreeMap<String, Value>,
    ) -> Result<NodeResult, String> {
        let (name, version) = split_tool_ref(&config.tool)
            .ok_or_else(|| format!("`{}` is not a tool ref", config.tool))?;
        let tool = self
            .services
            .registry
            .get(name, version)
            .map_err(|e| e.to_string())?;
        let input = tool_input(config, inputs);
        let call_id = CallIdAllocator::new().next(name, version, &input);
        let mut approved = HashSet::new();
        if tool.side_effects_for(&input) == SideEffects::Writes {
            let token = crate::agent::approval::approval_token(
                &self.services.agents.approval_key,
                self.run_id,
                &call_id,
                &config.tool,
                &input,
            );
            let request = ApprovalRequest {
                call_id: call_id.clone(),
                tool: config.tool.clone(),
                args_summary: crate::agent::approval::summarize_args(&input),
                effect_description: tool
                    .spec
                    .metadata
                    .effect_description
                    .clone()
                    .unwrap_or_else(|| format!("{} changes external state.", tool.spec.name)),
                token: token.clone(),
            };
            self.sink.emit(WorkflowEvent::Agent {
                node_id: node.id.clone(),
                event: Box::new(AgentEvent::ApprovalRequested {
                    request: request.clone(),
                }),
            });
            let decisions = self
                .services
                .approvals
                .decide(&node.id, vec![request])
                .await;
            if matches!(
                decisions.iter().find(|(t, _)| *t == token),
                Some((_, Decision::Approve))
            ) {
                approved.insert(call_id.clone());
            }
        }
        let scope = Arc::new(CallScope {
            owner: self.services.owner.clone(),
            policy: Policy {
                enabled_tools: vec![config.tool.clone()],
                ..Policy::default()
            },
            approved,
            cancel: self.cancel.child_token(),
            env: self.services.env.clone(),
        });
        self.sink.emit(WorkflowEvent::Agent {
            node_id: node.id.clone(),
            event: Box::new(AgentEvent::ToolCallStarted {
                call_id: call_id.clone(),
                tool: config.tool.clone(),
                input: input.clone(),
            }),
        });
        let envelope = self
            .services
            .executor
            .execute(
                scope,
                ToolCall {
                    call_id,
                    tool,
                    input,
                },
                Usage::default(),
            )
            .await;
        self.sink.emit(WorkflowEvent::Agent {
            node_id: node.id.clone(),
            event: Box::new(AgentEvent::ToolCallFinished {
                envelope: envelope.clone(),
            }),
        });
        Ok(NodeResult {
            outputs: tool_outputs(config, &envelope),
            bundle: None,
            envelope: Some(envelope),
            pin_fallbacks: BTreeMap::new(),
        })
    }

    async fn run_agent_node(
        &self,
        node: &Node,
        config: &super::AgentNodeConfig,
        inputs: &BTreeMap<String, Value>,
    ) -> Result<NodeResult, String> {
        let agent_config = AgentConfig {
            system_prompt: config.system_prompt.clone(),
            user_prompt: render(&config.prompt, inputs)?,
            tools: config.enabled_tools(),
            policy: config.policy.clone(),
            provider: config.provider.clone(),
            params: config.params.clone(),
            traces_url: self
                .services
                .traces_url
                .as_ref()
                .map(|t| t.replace("{run_id}", self.run_id)),
        };
        let model = self
            .services
            .models
            .model(&config.provider)
            .map_err(|e| e.to_string())?;
        let runtime = &self.services.agents;
        let resumed = self
            .resumed_agents
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&node.id);
        let mut run = match resumed {
            Some(run) => run,
            None => runtime
                .start(
                    &format!("{}/{}", self.run_id, node.id),
                    &self.services.owner.workspace_id,
                    agent_config,
                )
                .map_err(|e| e.to_string())?,
        };
        let tools = LiveTools {
            executor: self.services.executor.clone(),
            owner: self.services.owner.clone(),
            env: self.services.env.clone(),
            cancel: self.cancel.child_token(),
            journal: self.services.journal.clone(),
        };
        let sink = AgentSink {
            node_id: node.id.clone(),
            inner: self.sink,
        };
        let outputs = loop {
            match runtime
                .drive(&mut run, model.as_ref(), &tools, &sink)
                .await
                .map_err(|e| e.to_string())?
            {
                Step::Finished(outputs) => break outputs,
                Step::Suspended(requests) => {
                    if let Some(checkpoints) = &self.services.checkpoints {
                        checkpoints.agent_suspended(&node.id, &run).await;
                    }
                    for (token, decision) in
                        self.services.approvals.decide(&node.id, requests).await
                    {
                        runtime
                            .decide(&mut run, &token, decision, &sink)
                            .map_err(|e| e.to_string())?;
                    }
                }
            }
        };
        let history = &self.services.pin_history;
        let wf = &self.workflow.id;
        let AgentHandles {
            handles,
            fallbacks: pin_fallbacks,
            resolved,
        } = agent_handles(config, &outputs, &|pin| {
            history.last_resolved(wf, &node.id, pin)
        })?;
        for (pin, value) in resolved {
            history.record(wf, &node.id, &pin, &value);
        }
        let bundle = ReplayBundle::from_run(&run, model.tool_schemas(&run.tool_definitions)).ok();
        Ok(NodeResult {
            outputs: handles,
            bundle,
            envelope: None,
            pin_fallbacks,
        })
    }
}

/// Incoming edges per node.
fn incoming(workflow: &Workflow) -> HashMap<&str, Vec<&super::Edge>> {
    let mut map: HashMap<&str, Vec<&super::Edge>> = HashMap::new();
    for e in &workflow.edges {
        map.entry(e.target.node.as_str()).or_default().push(e);
    }
    map
}

/// How an upstream node's end decides a downstream node's fate.
enum Gate {
    Run(BTreeMap<String, Value>),
    Skip(String),
    Fail(String),
}

fn gate(node: &Node, edges: &[&super::Edge], records: &BTreeMap<String, NodeRecord>) -> Gate {
    let mut inputs = BTreeMap::new();
    for e in edges {
        let Some(source) = records.get(&e.source.node) else {
            return Gate::Fail(format!("upstream `{}` did not run", e.source.node));
        };
        match source.status {
            NodeStatus::Failed => {
                return Gate::Fail(format!("upstream node `{}` failed", e.source.node))
            }
            NodeStatus::Skipped if !matches!(node.kind, NodeKind::Output(_)) => {
                return Gate::Skip(format!("upstream node `{}` was skipped", e.source.node))
            }
            NodeStatus::Skipped => {}
            NodeStatus::Done => match source.outputs.get(&e.source.handle) {
                Some(v) => {
                    inputs.insert(e.target.handle.clone(), v.clone());
                }
                None if matches!(node.kind, NodeKind::Output(_)) => {}
                None => {
                    return Gate::Skip(format!(
                        "branch `{}` did not take `{}`",
                        e.source.node, e.source.handle
                    ))
                }
            },
        }
    }
    Gate::Run(inputs)
}

/// Validates `inputs` against the Input nodes' schemas.
fn check_inputs(workflow: &Workflow, inputs: &Map<String, Value>) -> Result<(), EngineError> {
    for node in &workflow.nodes {
        if let NodeKind::Input(c) = &node.kind {
            let validator =
                jsonschema::validator_for(&c.schema).map_err(|e| EngineError::BadInput {
                    field: node.id.clone(),
                    message: format!("the input schema is invalid: {e}"),
                })?;
            let instance = Value::Object(inputs.clone());
            let first = validator
                .iter_errors(&instance)
                .next()
                .map(|err| (err.instance_path().to_string(), err.to_string()));
            if let Some((path, message)) = first {
                return Err(EngineError::BadInput {
                    field: path.trim_start_matches('/').to_string(),
                    message,
                });
            }
        }
    }
    Ok(())
}

/// Runs a workflow to its end.
pub async fn run_workflow(
    services: &EngineServices,
    workflow: &Workflow,
    run_id: &str,
    inputs: Map<String, Value>,
    sink: &dyn WorkflowSink,
    cancel: CancellationToken,
) -> Result<WorkflowRun, EngineError> {
    resume_workflow(
        services,
        workflow,
        run_id,
        inputs,
        sink,
        cancel,
        ResumeState::default(),
    )
    .await
}

/// Continues an interrupted run to its end from what its checkpoints
/// recorded (an empty state runs it from the start).
pub async fn resume_workflow(
    services: &EngineServices,
    workflow: &Workflow,
    run_id: &str,
    inputs: Map<String, Value>,
    sink: &dyn WorkflowSink,
    cancel: CancellationToken,
    resume: ResumeState,
) -> Result<WorkflowRun, EngineError> {
    let catalog: Vec<ToolSpec> = services.registry.all().map(|t| t.spec.clone()).collect();
    let diagnostics = validate(workflow, &catalog);
    if !runnable(&diagnostics) {
        return Err(EngineError::Invalid(diagnostics));
    }
    check_inputs(workflow, &inputs)?;
    let order =
        topological_order(workflow).map_err(|_| EngineError::Invalid(diagnostics.clone()))?;
    let incoming = incoming(workflow);
    let nodes: HashMap<&str, &Node> = workflow.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
    let runner = Runner {
        services,
        workflow,
        run_id,
        sink,
        cancel: cancel.clone(),
        resumed_agents: Mutex::new(resume.agents),
    };
    let checkpoint = |record: NodeRecord| async move {
        if let Some(c) = &services.checkpoints {
            c.node_ended(&record).await;
        }
        record
    };
    let mut records: BTreeMap<String, NodeRecord> = resume.records;
    let mut started: HashSet<String> = records.keys().cloned().collect();
    let mut in_flight = FuturesUnordered::new();
    let mut cancelled = false;
    loop {
        // A cancelled run starts nothing more, even if a node finished in
        // the same instant as the cancellation.
        if cancel.is_cancelled() && !cancelled {
            cancelled = true;
            in_flight = FuturesUnordered::new();
        }
        // Start every node whose upstream has ended.
        if !cancelled {
            for id in &order {
                if started.contains(id) {
                    continue;
                }
                let edges = incoming.get(id.as_str()).cloned().unwrap_or_default();
                if !edges.iter().all(|e| records.contains_key(&e.source.node)) {
                    continue;
                }
                started.insert(id.clone());
                let node = nodes[id.as_str()];
                let now = now_rfc3339();
                let ended = match gate(node, &edges, &records) {
                    Gate::Skip(reason) => Some((NodeStatus::Skipped, reason)),
                    Gate::Fail(reason) => Some((NodeStatus::Failed, reason)),
                    Gate::Run(node_inputs) => {
                        sink.emit(WorkflowEvent::NodeStarted {
                            node_id: id.clone(),
                        });
                        let runner = &runner;
                        let workflow_inputs = &inputs;
                        let started_at = now.clone();
                        let span = tracing::info_span!(
                            "node",
                            node_id = %node.id,
                            kind = node.kind_name(),
                            error = tracing::field::Empty,
                        );
                        in_flight.push(async move {
                            let result = runner
                                .run_node(node, &node_inputs, workflow_inputs)
                                .instrument(span.clone())
                                .await;
                            if let Err(e) = &result {
                                span.record("error", e.as_str());
                            }
                            (node, node_inputs, started_at, result)
                        });
                        None
                    }
                };
                if let Some((status, reason)) = ended {
                    sink.emit(WorkflowEvent::NodeFinished {
                        node_id: id.clone(),
                        status,
                        error: Some(reason.clone()),
                    });
                    let record = checkpoint(NodeRecord::ended(id, status, reason, now)).await;
                    records.insert(id.clone(), record);
                }
            }
            // Skips and failures recorded above may unblock more nodes.
            if in_flight.is_empty()
                && started.len() < order.len()
                && order.iter().any(|id| {
                    !started.contains(id)
                        && incoming.get(id.as_str()).is_none_or(|es| {
                            es.iter().all(|e| records.contains_key(&e.source.node))
                        })
                })
            {
                continue;
            }
        }
        if in_flight.is_empty() {
            break;
        }
        tokio::select! {
            biased;
            () = cancel.cancelled(), if !cancelled => {
                cancelled = true;
                // Dropping the in-flight futures cancels their calls.
                in_flight = FuturesUnordered::new();
            }
            Some((node, node_inputs, started_at, result)) = in_flight.next() => {
                let (status, error, result) = match result {
                    Ok(r) => (NodeStatus::Done, None, Some(r)),
                    Err(e) => (NodeStatus::Failed, Some(e), None),
                };
                sink.emit(WorkflowEvent::NodeFinished { node_id: node.id.clone(), status, error: error.clone() });
                let (outputs, bundle, envelope, pin_fallbacks) = match result {
                    Some(r) => (r.outputs, r.bundle, r.envelope, r.pin_fallbacks),
                    None => (BTreeMap::new(), None, None, BTreeMap::new()),
                };
                let record = checkpoint(NodeRecord { node_id: node.id.clone(), status, inputs: node_inputs, outputs, error, started_at, finished_at: now_rfc3339(), bundle, envelope, pin_fallbacks }).await;
                records.insert(node.id.clone(), record);
            }
        }
    }
    let now = now_rfc3339();
    for id in &order {
        if !records.contains_key(id) {
            let reason = if cancelled {
                "the run was cancelled"
            } else {
                "not reached"
            };
            records.insert(
                id.clone(),
                NodeRecord::ended(id, NodeStatus::Skipped, reason.into(), now.clone()),
            );
        }
    }
    let outcome = if cancelled {
        RunOutcome::Cancelled
    } else if records.values().any(|r| r.status == NodeStatus::Failed) {
        RunOutcome::Failed
    } else {
        RunOutcome::Succeeded
    };
    let outputs = collect_outputs(workflow, &records);
    sink.emit(WorkflowEvent::RunFinished { outcome });
    Ok(WorkflowRun {
        run_id: run_id.into(),
        workflow_id: workflow.id.clone(),
        outcome,
        outputs,
        nodes: records,
    })
}

fn collect_outputs(
    workflow: &Workflow,
    records: &BTreeMap<String, NodeRecord>,
) -> BTreeMap<String, Value> {
    let mut outputs = BTreeMap::new();
    for node in &workflow.nodes {
        if let (NodeKind::Output(_), Some(r)) = (&node.kind, records.get(&node.id)) {
            outputs.extend(r.outputs.clone());
        }
    }
    outputs
}

/// Re-runs a recorded workflow run hermetically and returns its outputs.
/// Agent nodes' events go to `sink` as they replay (a diverging replay's
/// events stop where it diverged), so a caller can set the replay's tool
/// timeline beside the recorded one.
pub async fn replay_workflow(
    agents: &AgentRuntime,
    workflow: &Workflow,
    recorded: &WorkflowRun,
    sink: &dyn WorkflowSink,
) -> Result<BTreeMap<String, Value>, EngineError> {
    let order = topological_order(workflow).map_err(|_| EngineError::Invalid(Vec::new()))?;
    let incoming = incoming(workflow);
    let mut records: BTreeMap<String, NodeRecord> = BTreeMap::new();
    for id in &order {
        let node = workflow
            .node(id)
            .ok_or_else(|| EngineError::ReplayDiverged {
                node: id.clone(),
                message: "node missing".into(),
            })?;
        let original = recorded
            .nodes
            .get(id)
            .ok_or_else(|| EngineError::ReplayDiverged {
                node: id.clone(),
                message: "no record of this node".into(),
            })?;
        let diverged = |message: String| EngineError::ReplayDiverged {
            node: id.clone(),
            message,
        };
        let edges = incoming.get(id.as_str()).cloned().unwrap_or_default();
        let mut record = original.clone();
        match gate(node, &edges, &records) {
            Gate::Run(inputs)
                if original.status != NodeStatus::Skipped
                    && (original.status != NodeStatus::Failed
                        || !original.inputs.is_empty()
                        || edges.is_empty()) =>
            {
                if inputs != original.inputs && !matches!(node.kind, NodeKind::Input(_)) {
                    return Err(diverged("its inputs differ from the recorded run".into()));
                }
                let outputs = match &node.kind {
                    NodeKind::Agent(c) => match &original.bundle {
                        Some(bundle) => {
                            let node_sink = AgentSink {
                                node_id: id.clone(),
                                inner: sink,
                            };
                            let replayed = replay(agents, bundle, &node_sink)
                                .await
                                .map_err(|e| diverged(e.to_string()))?;
                            let fallbacks = &original.pin_fallbacks;
                            agent_handles(c, &replayed, &|pin| fallbacks.get(pin).cloned())
                                .map_err(diverged)?
                                .handles
                        }
                        None => original.outputs.clone(),
                    },
                    NodeKind::Tool(c) => match &original.envelope {
                        Some(envelope) => {
                            if envelope.input != tool_input(c, &inputs) {
                                return Err(diverged(
                                    "the tool input differs from the recorded call".into(),
                                ));
                            }
                            tool_outputs(c, envelope)
                        }
                        None => original.outputs.clone(),
                    },
                    NodeKind::Input(_) => original.outputs.clone(),
                    _ => compute_pure(node, &inputs, &Map::new())
                        .unwrap_or_else(|_| original.outputs.clone()),
                };
                if original.status == NodeStatus::Done && outputs != original.outputs {
                    return Err(diverged("its outputs differ from the recorded run".into()));
                }
                record.outputs = outputs;
            }
            _ => {}
        }
        records.insert(id.clone(), record);
    }
    Ok(collect_outputs(workflow, &records))
}

/// A model factory with no secrets: the scripted provider and keyless
/// OpenAI-compatible servers.
pub struct PlainModels;

impl ModelFactory for PlainModels {
    fn model(&self, config: &ProviderConfig) -> Result<Arc<dyn ChatModel>, ModelError> {
        crate::model::build_model(config, None, crate::model::RetryPolicy::default())
    }
}

/// Approves everything (tests and trusted offline examples only).
pub struct ApproveAll;

impl ApprovalGate for ApproveAll {
    fn decide<'a>(
        &'a self,
        _node_id: &'a str,
        requests: Vec<ApprovalRequest>,
    ) -> BoxFuture<'a, Vec<(String, Decision)>> {
        Box::pin(async move {
            requests
                .into_iter()
                .map(|r| (r.token, Decision::Approve))
                .collect()
        })
    }
}
