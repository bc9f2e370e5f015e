//! Durable runs: checkpoints, interrupted runs, the write journal of approved writes.

use super::*;

impl Store {
    /// Runs a write at the strongest durability the backend has: on SQLite
    /// `synchronous=FULL` (the WAL is synced at commit) for this statement;
    /// Postgres commits synchronously by default (`synchronous_commit=on`),
    /// which this asserts for the transaction.
    pub(super) async fn durable(&self, query: Q<'_>) -> Result<u64, StoreError> {
        let mut conn = self.writer().acquire().await?;
        let sqlite = self.backend() == "sqlite";
        if sqlite {
            sqlx::query("PRAGMA synchronous = FULL")
                .execute(&mut *conn)
                .await?;
            let done = query.execute(&mut *conn).await;
            sqlx::query("PRAGMA synchronous = NORMAL")
                .execute(&mut *conn)
                .await?;
            Ok(done?.rows_affected())
        } else {
            let mut tx = sqlx::Connection::begin(&mut *conn).await?;
            sqlx::query("SET LOCAL synchronous_commit = on")
                .execute(&mut *tx)
                .await?;
            let done = query.execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(done.rows_affected())
        }
    }

    /// Stores a suspended agent's state, synced like the write journal: it
    /// waits for a human, possibly for days. (Ended nodes' records go
    /// through the group writer, `RunWrite::NodeCheckpoint`.)
    pub async fn put_agent_checkpoint(
        &self,
        run_id: &str,
        node_id: &str,
        state: &str,
    ) -> Result<(), StoreError> {
        let sql = format!(
            "{} VALUES ($1, $2, 'agent', $3, $4, NULL) {}",
            CHECKPOINTS.head, CHECKPOINTS.tail
        );
        self.durable(
            sqlx::query(&sql)
                .bind(run_id)
                .bind(node_id)
                .bind(state)
                .bind(now()),
        )
        .await?;
        Ok(())
    }

    /// A run's checkpoints: `(node_id, kind, state)`, inflated (see
    /// `payloads`).
    pub async fn checkpoints(
        &self,
        run_id: &str,
    ) -> Result<Vec<(String, String, String)>, StoreError> {
        let rows: Vec<(String, String, String, Option<String>)> = sqlx::query_as("SELECT node_id, kind, state, refs FROM run_checkpoints WHERE run_id = $1 ORDER BY node_id, kind")
            .bind(run_id)
            .fetch_all(self.pool())
            .await?;
        let (keys, texts): (Vec<_>, Vec<_>) = rows
            .into_iter()
            .map(|(node_id, kind, state, refs)| ((node_id, kind), (state, refs)))
            .unzip();
        let states = self.inflate(run_id, texts).await?;
        Ok(keys
            .into_iter()
            .zip(states)
            .map(|((node_id, kind), state)| (node_id, kind, state))
            .collect())
    }

    /// The last stored event number of a run (0 when none).
    pub async fn last_event_seq(&self, run_id: &str) -> Result<i64, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = $1")
                .bind(run_id)
                .fetch_one(self.pool())
                .await?,
        )
    }

    /// One stored revision of a workflow of `workspace_id` (not found
    /// when the workflow is another workspace's).
    pub async fn revision_in(
        &self,
        workspace_id: &str,
        workflow_id: &str,
        revision: i64,
    ) -> Result<RevisionRow, StoreError> {
        sqlx::query_as("SELECT r.workflow_id, r.revision, r.document, r.created_at FROM workflow_revisions r JOIN workflows w ON w.id = r.workflow_id WHERE w.workspace_id = $1 AND r.workflow_id = $2 AND r.revision = $3")
            .bind(workspace_id)
            .bind(workflow_id)
            .bind(revision)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("revision {revision} of workflow {workflow_id}")))
    }

    /// The journal entry of an approved write: `None` when it is new (the
    /// intent is then recorded, durably, before this returns), else
    /// `Some(envelope)` with the recorded result, `Some(None)` for an
    /// intent without a result.
    pub async fn journal_begin(
        &self,
        agent_run: &str,
        call_id: &str,
        run_id: &str,
        tool: &str,
    ) -> Result<Option<Option<String>>, StoreError> {
        let inserted = self
            .durable(
                sqlx::query("INSERT INTO write_journal (agent_run, call_id, run_id, tool, intent_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (agent_run, call_id) DO NOTHING")
                    .bind(agent_run)
                    .bind(call_id)
                    .bind(run_id)
                    .bind(tool)
                    .bind(now()),
            )
            .await?;
        if inserted == 1 {
            return Ok(None);
        }
        let envelope: Option<String> = sqlx::query_scalar(
            "SELECT envelope FROM write_journal WHERE agent_run = $1 AND call_id = $2",
        )
        .bind(agent_run)
        .bind(call_id)
        .fetch_one(self.writer())
        .await?;
        Ok(Some(envelope))
    }

    /// Records an approved write's result, durably.
    pub async fn journal_finish(
        &self,
        agent_run: &str,
        call_id: &str,
        envelope: &str,
    ) -> Result<(), StoreError> {
        self.durable(
            sqlx::query("UPDATE write_journal SET envelope = $1, result_at = $2 WHERE agent_run = $3 AND call_id = $4")
                .bind(envelope)
                .bind(now())
                .bind(agent_run)
                .bind(call_id),
        )
        .await?;
        Ok(())
    }
}
