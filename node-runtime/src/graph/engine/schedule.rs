//! Scheduling a live run: which nodes are ready, whether an upstream end
//! lets a node run, skips it or fails it ([`gate`]), cancellation, and the
//! end-of-run record. [`run_workflow`] and [`resume_workflow`] are the entry
//! points.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::eval::collect_outputs;
use super::events::WorkflowSink;
use super::host::{EngineServices, ResumeState};
use super::nodes::Runner;
use crate::executor::now_rfc3339;
use crate::graph::record::{NodeRecord, NodeStatus, RunOutcome, WorkflowEvent, WorkflowRun};
use crate::graph::validate::{runnable, topological_order, validate, Diagnostic, Severity};
use crate::graph::{Edge, Node, NodeKind, Workflow};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    #[error("the workflow is not valid: {}", .0.iter().filter(|d| d.severity == Severity::Error).map(|d| format!("{} on {}: {}", d.code, d.node, d.message)).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<Diagnostic>),
    #[error("input `{field}`: {message}")]
    BadInput { field: String, message: String },
    /// AUTH_REQUIRED: a provider's API key secret is set in no scope.
    #[error("AUTH_REQUIRED: Agent node `{node}` needs the secret `{secret}`, which is not set (searched scopes: {searched})")]
    AuthRequired {
        node: String,
        secret: String,
        searched: String,
    },
    #[error("replay diverged at node `{node}`: {message}")]
    ReplayDiverged { node: String, message: String },
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

/// Incoming edges per node.
pub(super) fn incoming(workflow: &Workflow) -> HashMap<&str, Vec<&Edge>> {
    let mut map: HashMap<&str, Vec<&Edge>> = HashMap::new();
    for e in &workflow.edges {
        map.entry(e.target.node.as_str()).or_default().push(e);
    }
    map
}

/// How an upstream node's end decides a downstream node's fate.
pub(super) enum Gate {
    Run(BTreeMap<String, Value>),
    Skip(String),
    Fail(String),
}

pub(super) fn gate(node: &Node, edges: &[&Edge], records: &BTreeMap<String, NodeRecord>) -> Gate {
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
pub(super) fn check_inputs(
    workflow: &Workflow,
    inputs: &Map<String, Value>,
) -> Result<(), EngineError> {
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
    let diagnostics = validate(workflow, services.registry.as_ref());
    if !runnable(&diagnostics) {
        return Err(EngineError::Invalid(diagnostics));
    }
    check_inputs(workflow, &inputs)?;
    let keys = super::keys::provider_keys(services, workflow).await?;
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
        keys,
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
    let error = (outcome == RunOutcome::Failed)
        .then(|| {
            order.iter().find_map(|id| {
                records
                    .get(id)
                    .filter(|r| r.status == NodeStatus::Failed)
                    .and_then(|r| r.error.as_ref())
                    .map(|e| format!("node `{id}` failed: {e}"))
            })
        })
        .flatten();
    sink.emit(WorkflowEvent::RunFinished { outcome, error });
    Ok(WorkflowRun {
        run_id: run_id.into(),
        workflow_id: workflow.id.clone(),
        outcome,
        outputs,
        nodes: records,
    })
}
