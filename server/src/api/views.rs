//! The API's answer bodies (`node_runtime::wire`) built from storage rows.
//! A stored status word is parsed into its enum; a word this server does
//! not know is an internal error, never a panic.

use node_runtime::wire::{
    ApiToken, Approval, Invocation, InvocationSummary, RunItem, Span, WorkflowItem, WorkflowView,
};

use crate::storage::{
    ApiTokenRow, ApprovalRow, Cursor, InvocationRow, RunRow, SpanRow, WorkflowRow,
};
use crate::ApiError;

use crate::run_details::{duration_ms, json_text};

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
