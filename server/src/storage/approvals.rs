//! The approvals table: pending writes and their decisions, and how a
//! decision is announced: on Postgres a `NOTIFY` on [`DECISIONS_CHANNEL`]
//! with the token, whichever process decided; on SQLite (one server) the
//! server hands its own decisions over in process, and
//! [`Store::decided_since`] finds those another process (the CLI) stored.

use super::*;

/// The Postgres channel a decided approval's token is announced on.
pub const DECISIONS_CHANNEL: &str = "glassbox_approval_decided";

impl Store {
    pub async fn insert_approval(&self, a: &ApprovalRow) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO approvals (token, workspace_id, run_id, node_id, call_id, tool, args_summary, effect_description, status, decided_by, note, created_at, decided_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (token) DO NOTHING")
            .bind(&a.token)
            .bind(&a.workspace_id)
            .bind(&a.run_id)
            .bind(&a.node_id)
            .bind(&a.call_id)
            .bind(&a.tool)
            .bind(&a.args_summary)
            .bind(&a.effect_description)
            .bind(&a.status)
            .bind(&a.decided_by)
            .bind(&a.note)
            .bind(&a.created_at)
            .bind(&a.decided_at)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    pub async fn pending_approvals(
        &self,
        workspace_id: &str,
    ) -> Result<Vec<ApprovalRow>, StoreError> {
        Ok(sqlx::query_as("SELECT * FROM approvals WHERE workspace_id = $1 AND status = 'pending' ORDER BY created_at")
            .bind(workspace_id)
            .fetch_all(self.pool())
            .await?)
    }

    pub async fn get_approval(
        &self,
        workspace_id: &str,
        token: &str,
    ) -> Result<ApprovalRow, StoreError> {
        sqlx::query_as("SELECT * FROM approvals WHERE workspace_id = $1 AND token = $2")
            .bind(workspace_id)
            .bind(token)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound("approval".into()))
    }

    /// Records a decision on a pending approval; a decided one is refused
    /// (`Conflict`), so a token decides once.
    pub async fn decide_approval(
        &self,
        workspace_id: &str,
        token: &str,
        status: &str,
        decided_by: &str,
        note: Option<&str>,
    ) -> Result<ApprovalRow, StoreError> {
        let n = sqlx::query("UPDATE approvals SET status = $1, decided_by = $2, note = $3, decided_at = $4 WHERE workspace_id = $5 AND token = $6 AND status = 'pending'")
            .bind(status)
            .bind(decided_by)
            .bind(note)
            .bind(now())
            .bind(workspace_id)
            .bind(token)
            .execute(self.writer())
            .await?
            .rows_affected();
        let row = self.get_approval(workspace_id, token).await?;
        if n == 0 {
            return Err(StoreError::Conflict {
                expected: 0,
                actual: 1,
            });
        }
        if self.backend == Backend::Postgres {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(DECISIONS_CHANNEL)
                .bind(token)
                .execute(self.writer())
                .await?;
        }
        // The call's invocation record names who decided (the decision
        // event that follows carries no user and keeps it).
        sqlx::query("UPDATE tool_invocations SET decided_by = $1 WHERE workspace_id = $2 AND run_id = $3 AND node_id = $4 AND call_id = $5")
            .bind(decided_by)
            .bind(workspace_id)
            .bind(&row.run_id)
            .bind(&row.node_id)
            .bind(&row.call_id)
            .execute(self.writer())
            .await?;
        Ok(row)
    }

    /// An approval by its token alone (tokens are unique), for delivering
    /// an announced decision to the run that waits for it.
    pub async fn approval_by_token(&self, token: &str) -> Result<Option<ApprovalRow>, StoreError> {
        Ok(sqlx::query_as("SELECT * FROM approvals WHERE token = $1")
            .bind(token)
            .fetch_optional(self.pool())
            .await?)
    }

    /// Approvals decided at or after `since` (RFC 3339, as stored).
    pub async fn decided_since(&self, since: &str) -> Result<Vec<ApprovalRow>, StoreError> {
        Ok(sqlx::query_as("SELECT * FROM approvals WHERE decided_at >= $1 AND status <> 'pending' AND status <> 'closed'")
            .bind(since)
            .fetch_all(self.pool())
            .await?)
    }

    /// On Postgres, a connection listening on [`DECISIONS_CHANNEL`]
    /// (it reconnects by itself; `try_recv` answers `None` after a lost
    /// connection, when announcements may have been missed). `None` on
    /// SQLite.
    pub async fn decisions_listener(
        &self,
    ) -> Result<Option<sqlx::postgres::PgListener>, StoreError> {
        if self.backend != Backend::Postgres {
            return Ok(None);
        }
        let mut listener = sqlx::postgres::PgListener::connect(&self.url.0).await?;
        listener.listen(DECISIONS_CHANNEL).await?;
        Ok(Some(listener))
    }
}
