//! The API's answer bodies (`node_runtime::wire`) built from storage rows.
//! A stored status word is parsed into its enum; a word this server does
//! not know is an internal error, never a panic.

use std::collections::BTreeMap;

use node_runtime::chat::ModelUsage;
use node_runtime::wire::{
    ApiToken, Approval, Invocation, InvocationSummary, NodeRun, RunDetail, RunItem, RunKind, Span,
    WorkflowItem, WorkflowView,
};
use serde_json::{Map, Value};

use crate::storage::{
    ApiTokenRow, ApprovalRow, Cursor, InvocationRow, RunRow, SpanRow, WorkflowRow,
};
use crate::ApiError;

/// Milliseconds from a run's creation to its end; null while it runs.
fn duration_ms(created_at: &str, finished_at: Option<&str>) -> Option<f64> {
    let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    let (start, end) = (parse(created_at)?, parse(finished_at?)?);
    Some((end - start).num_microseconds()? as f64 / 1000.0)
}

/// Stored JSON text as a value; null when absent or unreadable.
fn json_text(text: Option<&str>) -> Value {
    text.and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or(Value::Null)
}

/// One row of the runs list.
pub fn run_item(row: &RunRow) -> Result<RunItem, ApiError> {
    Ok(RunItem {
        id: row.id.clone(),
        workflow_id: row.workflow_id.clone(),
        kind: row.kind.parse()?,
        status: row.status.parse()?,
        trigger: row.trigger_kind.clone(),
        created_at: row.created_at.clone(),
        finished_at: row.finished_at.clone(),
        duration_ms: duration_ms(&row.created_at, row.finished_at.as_deref()),
    })
}

/// A run with its record (`Store::run_record`, null while the run has not
/// finished): each node's result, every Agent node's outputs, the graph.
pub fn run_detail(row: &RunRow, record: &Value) -> Result<RunDetail, ApiError> {
    let nodes: Option<BTreeMap<String, NodeRun>> = match record.get("nodes") {
        None | Some(Value::Null) => None,
        Some(nodes) => Some(
            serde_json::from_value(nodes.clone())
                .map_err(|e| ApiError::Internal(anyhow::anyhow!("run {}: {e}", row.id)))?,
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
    let kind: RunKind = row.kind.parse()?;
    Ok(RunDetail {
        id: row.id.clone(),
        workflow_id: row.workflow_id.clone(),
        workflow_revision: row.workflow_revision,
        kind,
        // The column holds a replay's or a fork's origin.
        replay_of: row.replay_of.clone().filter(|_| kind != RunKind::Fork),
        fork_of: row.replay_of.clone().filter(|_| kind == RunKind::Fork),
        status: row.status.parse()?,
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

/// One stored span of a run's trace.
pub fn span(row: SpanRow) -> Span {
    Span {
        span_id: row.span_id,
        parent_id: row.parent_id,
        name: row.name,
        started_at: row.started_at,
        duration_ms: row.duration_us as f64 / 1000.0,
        fields: json_text(Some(&row.fields)),
    }
}

pub fn approval(row: ApprovalRow) -> Result<Approval, ApiError> {
    Ok(Approval {
        status: row.status.parse()?,
        token: row.token,
        workspace_id: row.workspace_id,
        run_id: row.run_id,
        node_id: row.node_id,
        call_id: row.call_id,
        tool: row.tool,
        args_summary: row.args_summary,
        effect_description: row.effect_description,
        decided_by: row.decided_by,
        note: row.note,
        created_at: row.created_at,
        decided_at: row.decided_at,
    })
}

pub fn invocation(row: InvocationRow) -> Result<Invocation, ApiError> {
    let (input, output) = (row.input.clone(), row.output.clone());
    Ok(Invocation {
        record: invocation_summary(row)?,
        input,
        output,
    })
}

/// One row of the invocations list: the record without its payloads.
pub fn invocation_summary(row: InvocationRow) -> Result<InvocationSummary, ApiError> {
    Ok(InvocationSummary {
        status: row.status.parse()?,
        approval_status: row.approval_status.as_deref().map(str::parse).transpose()?,
        id: row.id,
        workspace_id: row.workspace_id,
        run_id: row.run_id,
        node_id: row.node_id,
        call_id: row.call_id,
        tool_name: row.tool_name,
        tool_version: row.tool_version,
        approval_required: row.approval_required,
        decided_by: row.decided_by,
        reason: row.reason,
        error: row.error,
        cost: row.cost,
        created_at: row.created_at,
        started_at: row.started_at,
        completed_at: row.completed_at,
        trace_id: row.trace_id,
    })
}

/// A list's `cursor` parameter: one this server gave, else a 400 naming it.
pub fn cursor(text: Option<&str>) -> Result<Option<Cursor>, ApiError> {
    text.filter(|t| !t.is_empty())
        .map(|t| {
            Cursor::decode(t).ok_or_else(|| {
                ApiError::bad_request(
                    "cursor is not one this server gave; pass a list's `next_cursor` as it came",
                    serde_json::json!({"path": "cursor"}),
                )
            })
        })
        .transpose()
}

pub fn api_token(row: ApiTokenRow) -> ApiToken {
    ApiToken {
        id: row.id,
        name: row.name,
        user_id: row.user_id,
        created_at: row.created_at,
        expires_at: row.expires_at,
    }
}

/// A stored revision number (counted from 1, never negative).
pub fn revision(stored: i64) -> Result<u64, ApiError> {
    u64::try_from(stored)
        .map_err(|_| ApiError::Internal(anyhow::anyhow!("negative revision {stored}")))
}

pub fn workflow_item(row: &WorkflowRow) -> Result<WorkflowItem, ApiError> {
    Ok(WorkflowItem {
        id: row.id.clone(),
        name: row.name.clone(),
        description: row.description.clone(),
        revision: revision(row.revision)?,
        updated_at: row.updated_at.clone(),
    })
}

/// A workflow's latest revision with its document.
pub fn workflow_view(row: &WorkflowRow) -> Result<WorkflowView, ApiError> {
    Ok(WorkflowView {
        id: row.id.clone(),
        name: row.name.clone(),
        description: row.description.clone(),
        revision: revision(row.revision)?,
        created_at: row.created_at.clone(),
        updated_at: row.updated_at.clone(),
        workflow: row.workflow()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_stored_status_is_an_internal_error() {
        let mut row = RunRow::queued("r", "w");
        row.status = "done".into();
        assert!(matches!(run_item(&row), Err(ApiError::Internal(_))));
        row.status = "running".into();
        let item = run_item(&row).expect("known words");
        assert_eq!(item.status, node_runtime::wire::RunStatus::Running);
    }

    #[test]
    fn durations_run_from_creation_to_the_end() {
        assert_eq!(
            duration_ms("2026-01-01T00:00:00Z", Some("2026-01-01T00:00:01.5Z")),
            Some(1500.0)
        );
        assert_eq!(duration_ms("2026-01-01T00:00:00Z", None), None);
    }
}
