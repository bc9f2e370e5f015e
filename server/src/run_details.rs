//! A run's details as the API shows them (`GET /runs/{id}`), built from
//! its row and stored record: used by the API, the run diff and the suite
//! runner alike (outside `api`, so the runner does not reach into it).

use std::collections::BTreeMap;

use node_runtime::chat::ModelUsage;
use node_runtime::wire::{NodeRun, RunDetail, RunKind};
use serde_json::{Map, Value};

use crate::storage::{RunRow, Store, StoreError};

/// Milliseconds from a run's creation to its end; null while it runs.
pub(crate) fn duration_ms(created_at: &str, finished_at: Option<&str>) -> Option<f64> {
    let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    let (start, end) = (parse(created_at)?, parse(finished_at?)?);
    Some((end - start).num_microseconds()? as f64 / 1000.0)
}

/// Stored JSON text as a value; null when absent or unreadable.
pub(crate) fn json_text(text: Option<&str>) -> Value {
    text.and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or(Value::Null)
}

/// A stored word this server does not know: corrupt, never a panic.
fn corrupt(row: &RunRow, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("run {}: {e}", row.id))
}

/// The details of run `run_id` of `workspace_id`, read with its record
/// (null while it runs).
pub async fn run_detail_of(
    store: &Store,
    workspace_id: &str,
    run_id: &str,
) -> Result<RunDetail, StoreError> {
    let run = store.get_run(workspace_id, run_id).await?;
    let record = store.run_record(&run).await?.unwrap_or(Value::Null);
    run_detail(&run, &record)
}

/// A run with its record (`Store::run_record`, null while the run has not
/// finished): each node's result, every Agent node's outputs, the graph.
pub fn run_detail(row: &RunRow, record: &Value) -> Result<RunDetail, StoreError> {
    let nodes: Option<BTreeMap<String, NodeRun>> = match record.get("nodes") {
        None | Some(Value::Null) => None,
        Some(nodes) => Some(
            serde_json::from_value(nodes.clone())
                .map_err(|e| StoreError::Corrupt(format!("the nodes of run {}: {e}", row.id)))?,
        ),
    };
    // Every Agent node's outputs, for convenience, with what its model
    // calls consumed (from its bundle); the run's usage is their sum.
    let mut usage = ModelUsage::default();
    let agent_outputs: Map<String, Value> = nodes
        .iter()
        .flatten()
        .filter(|(_, n)| !n.bundle.is_null())
        .map(|(id, n)| {
            let node_usage: ModelUsage = n
                .bundle
                .pointer("/outputs/usage")
                .and_then(|u| serde_json::from_value(u.clone()).ok())
                .unwrap_or_default();
            usage.merge(&node_usage);
            let mut outputs = serde_json::json!(n.outputs);
            outputs["usage"] = serde_json::json!(node_usage);
            (id.clone(), outputs)
        })
        .collect();
    let kind: RunKind = row.kind.parse().map_err(|e| corrupt(row, e))?;
    Ok(RunDetail {
        id: row.id.clone(),
        workflow_id: row.workflow_id.clone(),
        workflow_revision: row.workflow_revision,
        kind,
        // The column holds a replay's or a fork's origin.
        replay_of: row.replay_of.clone().filter(|_| kind != RunKind::Fork),
        fork_of: row.replay_of.clone().filter(|_| kind == RunKind::Fork),
        status: row.status.parse().map_err(|e| corrupt(row, e))?,
        trigger: row.trigger_kind.clone(),
        inputs: json_text(Some(&row.inputs)),
        outputs: json_text(row.outputs.as_deref()),
        error: row.error.clone(),
        created_at: row.created_at.clone(),
        finished_at: row.finished_at.clone(),
        trace_id: row.trace_id.clone(),
        duration_ms: duration_ms(&row.created_at, row.finished_at.as_deref()),
        nodes,
        agent_outputs,
        usage,
        workflow: record.get("workflow").cloned().unwrap_or(Value::Null),
    })
}
