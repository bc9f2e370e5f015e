//! Connections (`node_runtime::connections`): one row per workspace and
//! name, the config stored as JSON.

use super::*;

impl Store {
    /// Every connection of a workspace, by name. Every run reads them (its
    /// tools' connections), on SQLite through the store's own connections
    /// ([`Store::read_direct`]).
    pub async fn list_connections(
        &self,
        workspace_id: &str,
    ) -> Result<Vec<ConnectionRow>, StoreError> {
        self.workspace_rows(
            "SELECT name, kind, config, created_at, updated_at FROM connections WHERE workspace_id = $1 ORDER BY name",
            workspace_id,
            |r| {
                Ok(ConnectionRow {
                    name: r.get(0)?,
                    kind: r.get(1)?,
                    config: r.get(2)?,
                    created_at: r.get(3)?,
                    updated_at: r.get(4)?,
                })
            },
        )
        .await
    }

    /// One connection.
    pub async fn connection(
        &self,
        workspace_id: &str,
        name: &str,
    ) -> Result<ConnectionRow, StoreError> {
        sqlx::query_as(
            "SELECT name, kind, config, created_at, updated_at FROM connections WHERE workspace_id = $1 AND name = $2",
        )
        .bind(workspace_id)
        .bind(name)
        .fetch_optional(self.pool())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("connection {name}")))
    }

    /// Adds a connection; false when the name is taken.
    pub async fn insert_connection(
        &self,
        workspace_id: &str,
        name: &str,
        kind: &str,
        config: &str,
    ) -> Result<bool, StoreError> {
        let at = now();
        let n = sqlx::query("INSERT INTO connections (workspace_id, name, kind, config, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (workspace_id, name) DO NOTHING")
            .bind(workspace_id)
            .bind(name)
            .bind(kind)
            .bind(config)
            .bind(at)
            .execute(self.writer())
            .await?
            .rows_affected();
        Ok(n == 1)
    }

    /// Replaces a connection's config.
    pub async fn update_connection(
        &self,
        workspace_id: &str,
        name: &str,
        kind: &str,
        config: &str,
    ) -> Result<(), StoreError> {
        let n = sqlx::query("UPDATE connections SET kind = $3, config = $4, updated_at = $5 WHERE workspace_id = $1 AND name = $2")
            .bind(workspace_id)
            .bind(name)
            .bind(kind)
            .bind(config)
            .bind(now())
            .execute(self.writer())
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("connection {name}")));
        }
        Ok(())
    }

    pub async fn delete_connection(
        &self,
        workspace_id: &str,
        name: &str,
    ) -> Result<(), StoreError> {
        let n = sqlx::query("DELETE FROM connections WHERE workspace_id = $1 AND name = $2")
            .bind(workspace_id)
            .bind(name)
            .execute(self.writer())
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("connection {name}")));
        }
        Ok(())
    }
}
