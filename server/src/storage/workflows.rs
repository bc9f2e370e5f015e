//! Workflows and their revisions.

use super::*;

impl Store {
    /// Creates a workflow at revision 1 (the document's revision is set).
    pub async fn create_workflow(
        &self,
        workspace_id: &str,
        workflow: &Workflow,
    ) -> Result<WorkflowRow, StoreError> {
        let mut wf = workflow.clone();
        wf.revision = 1;
        let document = wf.to_json();
        let t = now();
        let mut tx = self.writer().begin().await?;
        sqlx::query("INSERT INTO workflows (id, workspace_id, name, description, revision, document, created_at, updated_at) VALUES ($1, $2, $3, $4, 1, $5, $6, $6)")
            .bind(&wf.id)
            .bind(workspace_id)
            .bind(&wf.name)
            .bind(&wf.description)
            .bind(&document)
            .bind(&t)
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO workflow_revisions (workflow_id, revision, document, created_at) VALUES ($1, 1, $2, $3)")
            .bind(&wf.id)
            .bind(&document)
            .bind(&t)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.get_workflow(workspace_id, &wf.id).await
    }

    pub async fn list_workflows(&self, workspace_id: &str) -> Result<Vec<WorkflowRow>, StoreError> {
        Ok(sqlx::query_as("SELECT id, workspace_id, name, description, revision, document, created_at, updated_at FROM workflows WHERE workspace_id = $1 ORDER BY updated_at DESC, id")
            .bind(workspace_id)
            .fetch_all(self.pool())
            .await?)
    }

    pub async fn get_workflow(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<WorkflowRow, StoreError> {
        const SQL: &str = "SELECT id, workspace_id, name, description, revision, document, created_at, updated_at FROM workflows WHERE workspace_id = $1 AND id = $2";
        let direct = self.read_direct(|conn| {
            use rusqlite::OptionalExtension;
            conn.prepare_cached(SQL)?
                .query_row(rusqlite::params![workspace_id, id], |r| {
                    Ok(WorkflowRow {
                        id: r.get(0)?,
                        workspace_id: r.get(1)?,
                        name: r.get(2)?,
                        description: r.get(3)?,
                        revision: r.get(4)?,
                        document: r.get(5)?,
                        created_at: r.get(6)?,
                        updated_at: r.get(7)?,
                    })
                })
                .optional()
        });
        let row = match direct {
            Some(row) => row?,
            None => {
                sqlx::query_as(SQL)
                    .bind(workspace_id)
                    .bind(id)
                    .fetch_optional(self.pool())
                    .await?
            }
        };
        row.ok_or_else(|| StoreError::NotFound(format!("workflow {id}")))
    }

    /// Saves a new revision if `base_revision` is the stored one; a stale
    /// base is refused (nothing is overwritten).
    pub async fn update_workflow(
        &self,
        workspace_id: &str,
        id: &str,
        base_revision: i64,
        workflow: &Workflow,
    ) -> Result<WorkflowRow, StoreError> {
        let current = self.get_workflow(workspace_id, id).await?;
        if current.revision != base_revision {
            return Err(StoreError::Conflict {
                expected: base_revision,
                actual: current.revision,
            });
        }
        let next = base_revision + 1;
        let mut wf = workflow.clone();
        wf.id = id.to_string();
        wf.revision = next as u64;
        let document = wf.to_json();
        let t = now();
        let mut tx = self.writer().begin().await?;
        let updated = sqlx::query("UPDATE workflows SET name = $1, description = $8, revision = $2, document = $3, updated_at = $4 WHERE workspace_id = $5 AND id = $6 AND revision = $7")
            .bind(&wf.name)
            .bind(next)
            .bind(&document)
            .bind(&t)
            .bind(workspace_id)
            .bind(id)
            .bind(base_revision)
            .bind(&wf.description)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if updated != 1 {
            // Someone saved in between: refuse rather than overwrite.
            tx.rollback().await?;
            let actual = self.get_workflow(workspace_id, id).await?.revision;
            return Err(StoreError::Conflict {
                expected: base_revision,
                actual,
            });
        }
        sqlx::query("INSERT INTO workflow_revisions (workflow_id, revision, document, created_at) VALUES ($1, $2, $3, $4)")
            .bind(id)
            .bind(next)
            .bind(&document)
            .bind(&t)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.get_workflow(workspace_id, id).await
    }

    pub async fn delete_workflow(&self, workspace_id: &str, id: &str) -> Result<(), StoreError> {
        let n = sqlx::query("DELETE FROM workflows WHERE workspace_id = $1 AND id = $2")
            .bind(workspace_id)
            .bind(id)
            .execute(self.writer())
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("workflow {id}")));
        }
        Ok(())
    }

    pub async fn list_revisions(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Vec<RevisionRow>, StoreError> {
        self.get_workflow(workspace_id, id).await?;
        Ok(sqlx::query_as("SELECT workflow_id, revision, document, created_at FROM workflow_revisions WHERE workflow_id = $1 ORDER BY revision DESC")
            .bind(id)
            .fetch_all(self.pool())
            .await?)
    }
}
