//! Seed 001's invocation records.

use super::*;

impl Store {
    pub async fn upsert_invocation(&self, i: &InvocationRow) -> Result<(), StoreError> {
        self.write_values(&INVOCATIONS, vec![invocation_args(i)])
            .await
    }

    pub async fn list_invocations(
        &self,
        workspace_id: &str,
        f: &InvocationFilter,
    ) -> Result<Vec<InvocationRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT * FROM tool_invocations WHERE workspace_id = $1 AND ($2 IS NULL OR status = $2) AND ($3 IS NULL OR tool_name = $3) AND ($4 IS NULL OR run_id = $4) AND ($5 IS NULL OR created_at >= $5) AND ($6 IS NULL OR created_at <= $6) ORDER BY created_at DESC, id DESC LIMIT $7",
        )
        .bind(workspace_id)
        .bind(&f.status)
        .bind(&f.tool)
        .bind(&f.run_id)
        .bind(&f.since)
        .bind(&f.until)
        .bind(limit(f.limit))
        .fetch_all(self.pool())
        .await?)
    }
}
