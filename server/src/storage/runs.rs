//! Run records, node runs, events and spans.

use super::*;

impl Store {
    pub async fn create_run(&self, run: &RunRow) -> Result<(), StoreError> {
        self.write_values(&RUNS, vec![run_args(run)]).await
    }

    pub async fn finish_run(
        &self,
        run_id: &str,
        status: &str,
        outputs: Option<&Value>,
        error: Option<&str>,
        record: Option<&Value>,
    ) -> Result<(), StoreError> {
        let row = vec![
            run_id.into(),
            status.into(),
            outputs.map(Value::to_string).into(),
            error.map(str::to_string).into(),
            record.map(Value::to_string).into(),
            Arg::Text(None),
            now().into(),
        ];
        self.write_values(&RUN_END, vec![row]).await
    }

    pub async fn get_run(&self, workspace_id: &str, id: &str) -> Result<RunRow, StoreError> {
        sqlx::query_as("SELECT * FROM runs WHERE workspace_id = $1 AND id = $2")
            .bind(workspace_id)
            .bind(id)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("run {id}")))
    }

    /// A page of the workspace's runs, newest first, without their
    /// payloads (inputs, outputs and record are left empty; the item route
    /// has them).
    pub async fn list_runs(
        &self,
        workspace_id: &str,
        filter: &RunFilter,
    ) -> Result<Page<RunRow>, StoreError> {
        let size = limit(filter.limit);
        let (at, id) = filter
            .cursor
            .as_ref()
            .map(|c| (Some(c.created_at.as_str()), Some(c.id.as_str())))
            .unwrap_or_default();
        let rows = sqlx::query_as(
            "SELECT id, workspace_id, workflow_id, workflow_revision, kind, replay_of, status, trigger_kind, '{}' AS inputs, NULL AS outputs, error, NULL AS record, created_at, finished_at, trace_id, started_by FROM runs WHERE workspace_id = $1 AND ($2 IS NULL OR workflow_id = $2) AND ($3 IS NULL OR status = $3) AND ($4 IS NULL OR created_at < $4 OR (created_at = $4 AND id < $5)) ORDER BY created_at DESC, id DESC LIMIT $6",
        )
        .bind(workspace_id)
        .bind(&filter.workflow_id)
        .bind(&filter.status)
        .bind(at)
        .bind(id)
        .bind(size + 1)
        .fetch_all(self.pool())
        .await?;
        Ok(Page::of(rows, size, |r: &RunRow| Cursor {
            created_at: r.created_at.clone(),
            id: r.id.clone(),
        }))
    }

    pub async fn append_event(
        &self,
        run_id: &str,
        seq: i64,
        event: &Value,
    ) -> Result<(), StoreError> {
        let row = vec![
            run_id.into(),
            seq.into(),
            event.to_string().into(),
            now().into(),
            Arg::Text(None),
        ];
        self.write_values(&EVENTS, vec![row]).await
    }

    /// Stores the per-node rows of a finished run (replacing any).
    pub async fn put_node_runs(
        &self,
        run_id: &str,
        nodes: &[NodeRunRow],
    ) -> Result<(), StoreError> {
        let mut tx = self.writer().begin().await?;
        execute_values(&mut tx, &CLEAR_NODE_RUNS, vec![vec![run_id.into()]]).await?;
        let rows = nodes.iter().map(|n| node_run_args(run_id, n)).collect();
        execute_values(&mut tx, &NODE_RUNS, rows).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The nodes of a run (the run must be the caller's).
    pub async fn node_runs(
        &self,
        workspace_id: &str,
        run_id: &str,
    ) -> Result<Vec<NodeRunRow>, StoreError> {
        self.get_run(workspace_id, run_id).await?;
        let mut rows: Vec<NodeRunRow> = sqlx::query_as("SELECT run_id, node_id, status, error, outputs, started_at, finished_at, trace_id, outputs_refs FROM node_runs WHERE run_id = $1 ORDER BY started_at, node_id")
            .bind(run_id)
            .fetch_all(self.pool())
            .await?;
        let texts = rows
            .iter_mut()
            .map(|n| (std::mem::take(&mut n.outputs), n.outputs_refs.take()))
            .collect();
        for (n, outputs) in rows.iter_mut().zip(self.inflate(run_id, texts).await?) {
            n.outputs = outputs;
        }
        Ok(rows)
    }

    /// The stored spans of a run in start order (the run must be the caller's).
    pub async fn spans(
        &self,
        workspace_id: &str,
        run_id: &str,
    ) -> Result<Vec<SpanRow>, StoreError> {
        self.get_run(workspace_id, run_id).await?;
        Ok(sqlx::query_as("SELECT run_id, span_id, parent_id, trace_id, name, started_at, duration_us, fields FROM run_spans WHERE run_id = $1 ORDER BY started_at, span_id")
            .bind(run_id)
            .fetch_all(self.pool())
            .await?)
    }

    /// Events of a run with `seq > after`, in order (the run must be the caller's).
    pub async fn events_after(
        &self,
        workspace_id: &str,
        run_id: &str,
        after: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        type Row = (i64, String, String, Option<String>);
        const RUN: &str = "SELECT 1 FROM runs WHERE workspace_id = $1 AND id = $2";
        const EVENTS: &str = "SELECT seq, event, created_at, refs FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq";
        let direct = self.read_direct(|conn| {
            use rusqlite::OptionalExtension;
            let found = conn
                .prepare_cached(RUN)?
                .query_row(rusqlite::params![workspace_id, run_id], |_| Ok(()))
                .optional()?;
            if found.is_none() {
                return Ok(None);
            }
            conn.prepare_cached(EVENTS)?
                .query_map(rusqlite::params![run_id, after], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?
                .collect::<rusqlite::Result<Vec<Row>>>()
                .map(Some)
        });
        let rows: Vec<Row> = match direct {
            Some(rows) => rows?.ok_or_else(|| StoreError::NotFound(format!("run {run_id}")))?,
            None => {
                self.get_run(workspace_id, run_id).await?;
                sqlx::query_as(EVENTS)
                    .bind(run_id)
                    .bind(after)
                    .fetch_all(self.pool())
                    .await?
            }
        };
        let (heads, texts): (Vec<_>, Vec<_>) = rows
            .into_iter()
            .map(|(seq, event, created_at, refs)| ((seq, created_at), (event, refs)))
            .unzip();
        let texts = self.inflate(run_id, texts).await?;
        Ok(heads
            .into_iter()
            .zip(texts)
            .map(|((seq, created_at), event)| EventRow {
                run_id: run_id.to_string(),
                seq,
                event,
                created_at,
            })
            .collect())
    }
}
