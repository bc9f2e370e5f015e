//! The audit log's one entry point: handlers call [`record`] after a change
//! an admin may ask about (`GET /api/v1/audit`). The actions are listed on
//! `node_runtime::wire::AuditEvent::action`.

use crate::auth::Caller;
use crate::storage::{Store, StoreError};

/// Adds "`caller` did `action` to `target`" to the caller's workspace's
/// log.
pub async fn record(
    store: &Store,
    caller: &Caller,
    action: &str,
    target: &str,
    detail: serde_json::Value,
) -> Result<(), StoreError> {
    store
        .insert_audit(
            &caller.workspace_id,
            &caller.user_id,
            action,
            target,
            &detail,
        )
        .await
}
