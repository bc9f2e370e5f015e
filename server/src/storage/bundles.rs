//! Replay bundles, run records with their bundles, and pinned handles' values.

use super::*;

impl Store {
    pub async fn put_bundle(
        &self,
        run_id: &str,
        node_id: &str,
        bundle: &str,
    ) -> Result<(), StoreError> {
        let row = vec![
            run_id.into(),
            node_id.into(),
            bundle.into(),
            Arg::Text(None),
        ];
        self.write_values(&BUNDLES, vec![row]).await
    }

    /// A finished run's record as served, downloaded and replayed: the
    /// stored record with each agent node's replay bundle put back from
    /// `replay_bundles`. A run's end stores the record without its bundles,
    /// so each bundle is stored once; records from before that carry them
    /// inline and are returned as they are. None while the run has no
    /// record (it has not finished).
    /// Stored texts are inflated first (see `payloads`), so the answer is
    /// the same whichever way they were stored.
    pub async fn run_record(&self, run: &RunRow) -> Result<Option<Value>, StoreError> {
        let Some(text) = &run.record else {
            return Ok(None);
        };
        let rows: Vec<(String, String, Option<String>)> =
            sqlx::query_as("SELECT node_id, bundle, refs FROM replay_bundles WHERE run_id = $1")
                .bind(&run.id)
                .fetch_all(self.pool())
                .await?;
        // The record and its bundles share payloads: inflated together.
        let (ids, mut texts): (Vec<String>, Vec<(String, Option<String>)>) = rows
            .into_iter()
            .map(|(node_id, text, refs)| (node_id, (text, refs)))
            .unzip();
        texts.insert(0, (text.clone(), run.record_refs.clone()));
        let mut texts = self.inflate(&run.id, texts).await?.into_iter();
        let Some(Ok(mut record)) = texts.next().map(|t| serde_json::from_str::<Value>(&t)) else {
            return Ok(None);
        };
        let Some(nodes) = record.get_mut("nodes").and_then(Value::as_object_mut) else {
            return Ok(Some(record));
        };
        for (node_id, text) in ids.into_iter().zip(texts) {
            let Some(node) = nodes.get_mut(&node_id).and_then(Value::as_object_mut) else {
                continue;
            };
            if node.get("bundle").is_none_or(Value::is_null) {
                let bundle = serde_json::from_str(&text).map_err(|e| {
                    StoreError::Corrupt(format!("the bundle of run {} node {node_id}: {e}", run.id))
                })?;
                node.insert("bundle".into(), bundle);
            }
        }
        Ok(Some(record))
    }

    pub async fn get_bundle(
        &self,
        workspace_id: &str,
        run_id: &str,
        node_id: &str,
    ) -> Result<String, StoreError> {
        self.get_run(workspace_id, run_id).await?;
        let row: (String, Option<String>) = sqlx::query_as(
            "SELECT bundle, refs FROM replay_bundles WHERE run_id = $1 AND node_id = $2",
        )
        .bind(run_id)
        .bind(node_id)
        .fetch_optional(self.pool())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("bundle of node {node_id}")))?;
        let mut texts = self.inflate(run_id, vec![row]).await?;
        Ok(texts.pop().unwrap_or_default())
    }

    pub async fn pin_value(
        &self,
        workflow_id: &str,
        node_id: &str,
        pin: &str,
    ) -> Result<Option<Value>, StoreError> {
        let text: Option<String> = sqlx::query_scalar(
            "SELECT value FROM pin_history WHERE workflow_id = $1 AND node_id = $2 AND pin = $3",
        )
        .bind(workflow_id)
        .bind(node_id)
        .bind(pin)
        .fetch_optional(self.pool())
        .await?;
        text.map(|t| serde_json::from_str(&t).map_err(|e| StoreError::Corrupt(e.to_string())))
            .transpose()
    }

    pub async fn set_pin_value(
        &self,
        workflow_id: &str,
        node_id: &str,
        pin: &str,
        value: &Value,
    ) -> Result<(), StoreError> {
        let row = vec![
            workflow_id.into(),
            node_id.into(),
            pin.into(),
            value.to_string().into(),
            now().into(),
        ];
        self.write_values(&PINS, vec![row]).await
    }

    /// One statement of [`super::group`]'s set, on the writer.
    pub(super) async fn write_values(
        &self,
        statement: &Values,
        rows: Vec<Vec<Arg>>,
    ) -> Result<(), StoreError> {
        let mut conn = self.writer().acquire().await?;
        execute_values(&mut conn, statement, rows).await
    }
}
