//! The audit log's one entry point: handlers call [`record`] after a change
//! an admin may ask about (`GET /api/v1/audit`). The actions are listed on
//! `node_runtime::wire::AuditEvent::action`.

use crate::auth::Caller;
use crate::storage::Store;

/// Adds "`caller` did `action` to `target`" to the caller's workspace's
/// log. It is written after the action, which has happened by then: a
/// failure to write it is logged, never the action's failure (a run
/// started or an approval delivered is not undone, and a retry would do it
/// twice).
pub async fn record(
    store: &Store,
    caller: &Caller,
    action: &str,
    target: &str,
    detail: serde_json::Value,
) {
    record_in(
        store,
        &caller.workspace_id,
        &caller.user_id,
        action,
        target,
        detail,
    )
    .await;
}

/// [`record`] for an actor who is not the request's caller in that
/// workspace (a workspace just made, a member just joined).
pub async fn record_in(
    store: &Store,
    workspace_id: &str,
    actor_id: &str,
    action: &str,
    target: &str,
    detail: serde_json::Value,
) {
    let written = store
        .insert_audit(workspace_id, actor_id, action, target, &detail)
        .await;
    if let Err(e) = written {
        tracing::error!(error = %e, action, target, workspace = %workspace_id, "the audit log missed an entry");
    }
}
