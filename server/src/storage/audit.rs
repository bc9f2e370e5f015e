//! The audit log: one row per thing a member did that admins may ask
//! about (who decided an approval, changed a connection or a secret,
//! started a run, changed the members). Rows are only added.

use super::*;

/// One audit row, with the actor's display name as it is now.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct AuditRow {
    pub id: String,
    pub actor_id: String,
    pub actor_name: Option<String>,
    pub action: String,
    pub target: String,
    pub detail: String,
    pub created_at: String,
}

/// A new row of `audit_events`: stored at once ([`Store::insert_audit`])
/// or with the runs' next group commit (`RunWrite::Audit`).
#[derive(Debug, Clone)]
pub struct AuditEntry {
    /// Taken when the action happened: ids order the log.
    pub id: String,
    pub created_at: String,
    pub workspace_id: String,
    pub actor_id: String,
    pub action: String,
    pub target: String,
    /// JSON.
    pub detail: String,
}

impl AuditEntry {
    pub fn new(
        workspace_id: &str,
        actor_id: &str,
        action: &str,
        target: &str,
        detail: &serde_json::Value,
    ) -> Self {
        Self {
            id: new_id(),
            created_at: now(),
            workspace_id: workspace_id.into(),
            actor_id: actor_id.into(),
            action: action.into(),
            target: target.into(),
            detail: detail.to_string(),
        }
    }
}

impl Store {
    /// Adds an entry to a workspace's audit log.
    pub async fn insert_audit(&self, e: &AuditEntry) -> Result<(), StoreError> {
        self.write_values(&AUDIT, vec![audit_args(e)]).await
    }

    /// A page of a workspace's audit log, newest first: `limit` entries
    /// older than the entry `before` (the newest when `None`).
    pub async fn list_audit(
        &self,
        workspace_id: &str,
        before: Option<&str>,
        limit: i64,
    ) -> Result<Vec<AuditRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT a.id, a.actor_id, u.name AS actor_name, a.action, a.target, a.detail, a.created_at \
             FROM audit_events a LEFT JOIN users u ON u.id = a.actor_id \
             WHERE a.workspace_id = $1 AND ($3 IS NULL OR a.id < $3) ORDER BY a.id DESC LIMIT $2",
        )
        .bind(workspace_id)
        .bind(limit)
        .bind(before)
        .fetch_all(self.pool())
        .await?)
    }
}
