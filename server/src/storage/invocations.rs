//! Seed 001's invocation records.

use super::*;

impl Store {
    pub async fn upsert_invocation(&self, i: &InvocationRow) -> Result<(), StoreError> {
        self.write_values(&INVOCATIONS, vec![invocation_args(i)])
            .await
    }

    /// A page of the workspace's invocation records, newest first,
    /// without their payloads (input empty, output null; see
    /// [`Store::get_invocation`]).
    pub async fn list_invocations(
        &self,
        workspace_id: &str,
        f: &InvocationFilter,
    ) -> Result<Page<InvocationRow>, StoreError> {
        let size = limit(f.limit);
        let (at, id) = f
            .cursor
            .as_ref()
            .map(|c| (Some(c.created_at.as_str()), Some(c.id.as_str())))
            .unwrap_or_default();
        let rows = sqlx::query_as(
            "SELECT id, workspace_id, run_id, node_id, call_id, tool_name, tool_version, status, approval_required, approval_status, decided_by, reason, '' AS input, NULL AS output, error, cost, created_at, started_at, completed_at, trace_id FROM tool_invocations WHERE workspace_id = $1 AND ($2 IS NULL OR status = $2) AND ($3 IS NULL OR tool_name = $3) AND ($4 IS NULL OR run_id = $4) AND ($5 IS NULL OR created_at >= $5) AND ($6 IS NULL OR created_at <= $6) AND ($7 IS NULL OR node_id = $7) AND ($8 IS NULL OR call_id = $8) AND ($9 IS NULL OR created_at < $9 OR (created_at = $9 AND id < $10)) ORDER BY created_at DESC, id DESC LIMIT $11",
        )
        .bind(workspace_id)
        .bind(&f.status)
        .bind(&f.tool)
        .bind(&f.run_id)
        .bind(&f.since)
        .bind(&f.until)
        .bind(&f.node_id)
        .bind(&f.call_id)
        .bind(at)
        .bind(id)
        .bind(size + 1)
        .fetch_all(self.pool())
        .await?;
        Ok(Page::of(rows, size, |r: &InvocationRow| Cursor {
            created_at: r.created_at.clone(),
            id: r.id.clone(),
        }))
    }

    /// One invocation record with its payloads (inflated, see `payloads`).
    pub async fn get_invocation(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<InvocationRow, StoreError> {
        let mut row: InvocationRow =
            sqlx::query_as("SELECT * FROM tool_invocations WHERE workspace_id = $1 AND id = $2")
                .bind(workspace_id)
                .bind(id)
                .fetch_optional(self.pool())
                .await?
                .ok_or_else(|| StoreError::NotFound(format!("invocation {id}")))?;
        if row.input_refs.is_none() && row.output_refs.is_none() {
            return Ok(row);
        }
        let mut texts = vec![(std::mem::take(&mut row.input), row.input_refs.take())];
        if let Some(output) = row.output.take() {
            texts.push((output, row.output_refs.take()));
        }
        let mut texts = self.inflate(&row.run_id, texts).await?.into_iter();
        row.input = texts.next().unwrap_or_default();
        row.output = texts.next();
        Ok(row)
    }
}
