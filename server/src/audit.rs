//! The audit log's entry points: handlers call [`queue`] (or, where only the
//! store is at hand, [`record`]) after a change an admin may ask about
//! (`GET /api/v1/audit`). The actions are listed on
//! `node_runtime::wire::AuditEvent::action`.
//!
//! An entry is written after the action, which has happened by then: a
//! failure to write it is logged, never the action's failure (a run started
//! or an approval delivered is not undone, and a retry would do it twice).

use crate::auth::Caller;
use crate::runs::Runs;
use crate::storage::{AuditEntry, RunWrite, Store};

/// Adds "`caller` did `action` to `target`" to the caller's workspace's
/// log with the runs' next group commit (`storage::group`), without waiting
/// for it: starting a run, the hot path, is not held up by a commit of its
/// own contending for SQLite's one writer. The log's reader waits for the
/// queue first (`GET /audit`), so an action answered before a read is in
/// what that read sees.
pub fn queue(runs: &Runs, caller: &Caller, action: &str, target: &str, detail: serde_json::Value) {
    let entry = AuditEntry::new(
        &caller.workspace_id,
        &caller.user_id,
        action,
        target,
        &detail,
    );
    let written = runs.writer().submit(RunWrite::Audit(Box::new(entry)));
    let (action, target) = (action.to_string(), target.to_string());
    let workspace = caller.workspace_id.clone();
    tokio::spawn(async move {
        if let Err(e) = written.await {
            tracing::error!(error = %e, action, target, workspace, "the audit log missed an entry");
        }
    });
}

/// [`queue`] stored at once, for the paths the CLI shares with the API
/// (members, invitations, workspaces), which have a store and no runs.
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
    let entry = AuditEntry::new(workspace_id, actor_id, action, target, &detail);
    if let Err(e) = store.insert_audit(&entry).await {
        tracing::error!(error = %e, action, target, workspace = %workspace_id, "the audit log missed an entry");
    }
}
