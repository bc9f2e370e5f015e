//! Blob metadata; the bytes live in the blob store.

use super::*;

impl Store {
    /// Records that a workspace owns a blob (idempotent).
    pub async fn put_blob(
        &self,
        workspace_id: &str,
        hash: &str,
        content_type: &str,
        bytes: i64,
    ) -> Result<(), StoreError> {
        let row = vec![
            hash.into(),
            workspace_id.into(),
            content_type.into(),
            bytes.into(),
            now().into(),
        ];
        self.write_values(&BLOBS, vec![row]).await
    }

    /// The content type of a blob the workspace owns.
    pub async fn blob_content_type(
        &self,
        workspace_id: &str,
        hash: &str,
    ) -> Result<String, StoreError> {
        sqlx::query_scalar("SELECT content_type FROM blobs WHERE workspace_id = $1 AND hash = $2")
            .bind(workspace_id)
            .bind(hash)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound("blob".into()))
    }
}
