//! MCP discovery (`crate::mcp`): each `mcp` connection's server info, the
//! tool versions it listed, and admins' side-effect overrides.

use super::*;

impl Store {
    /// Every stored MCP tool version of a workspace, by connection, tool
    /// and version.
    ///
    /// Every run reads them (its tools), on SQLite through the store's
    /// own connections ([`Store::read_direct`]).
    pub async fn mcp_tools(&self, workspace_id: &str) -> Result<Vec<McpToolRow>, StoreError> {
        self.workspace_rows(
            "SELECT connection, tool, version, spec, annotations, current, discovered_at FROM mcp_tools WHERE workspace_id = $1 ORDER BY connection, tool, version",
            workspace_id,
            |r| {
                Ok(McpToolRow {
                    connection: r.get(0)?,
                    tool: r.get(1)?,
                    version: r.get(2)?,
                    spec: r.get(3)?,
                    annotations: r.get(4)?,
                    current: r.get(5)?,
                    discovered_at: r.get(6)?,
                })
            },
        )
        .await
    }

    /// What each `mcp` connection's server said at its last refresh.
    pub async fn mcp_servers(&self, workspace_id: &str) -> Result<Vec<McpServerRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT connection, server_name, server_version, protocol_version, refreshed_at FROM mcp_servers WHERE workspace_id = $1 ORDER BY connection",
        )
        .bind(workspace_id)
        .fetch_all(self.pool())
        .await?)
    }

    /// Records a refresh: the server's info, and the listed tools as the
    /// current versions (earlier versions stay, not current).
    pub async fn record_mcp_discovery(
        &self,
        workspace_id: &str,
        server: &McpServerRow,
        tools: &[McpToolRow],
    ) -> Result<(), StoreError> {
        let mut tx = self.writer().begin().await?;
        sqlx::query("INSERT INTO mcp_servers (workspace_id, connection, server_name, server_version, protocol_version, refreshed_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (workspace_id, connection) DO UPDATE SET server_name = $3, server_version = $4, protocol_version = $5, refreshed_at = $6")
            .bind(workspace_id)
            .bind(&server.connection)
            .bind(&server.server_name)
            .bind(&server.server_version)
            .bind(&server.protocol_version)
            .bind(&server.refreshed_at)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE mcp_tools SET current = 0 WHERE workspace_id = $1 AND connection = $2")
            .bind(workspace_id)
            .bind(&server.connection)
            .execute(&mut *tx)
            .await?;
        for t in tools {
            sqlx::query("INSERT INTO mcp_tools (workspace_id, connection, tool, version, spec, annotations, current, discovered_at) VALUES ($1, $2, $3, $4, $5, $6, 1, $7) ON CONFLICT (workspace_id, connection, tool, version) DO UPDATE SET current = 1, spec = $5, annotations = $6")
                .bind(workspace_id)
                .bind(&server.connection)
                .bind(&t.tool)
                .bind(&t.version)
                .bind(&t.spec)
                .bind(&t.annotations)
                .bind(&t.discovered_at)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Forgets a removed connection's server info and marks its tools not
    /// current (recorded runs still find their versions).
    pub async fn retire_mcp_connection(
        &self,
        workspace_id: &str,
        connection: &str,
    ) -> Result<(), StoreError> {
        let mut tx = self.writer().begin().await?;
        sqlx::query("DELETE FROM mcp_servers WHERE workspace_id = $1 AND connection = $2")
            .bind(workspace_id)
            .bind(connection)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE mcp_tools SET current = 0 WHERE workspace_id = $1 AND connection = $2")
            .bind(workspace_id)
            .bind(connection)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Admins' overrides of tools' side-effect classes.
    pub async fn mcp_overrides(
        &self,
        workspace_id: &str,
    ) -> Result<Vec<McpOverrideRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT connection, tool, side_effects, set_by, set_at FROM mcp_overrides WHERE workspace_id = $1 ORDER BY connection, tool",
        )
        .bind(workspace_id)
        .fetch_all(self.pool())
        .await?)
    }

    /// Sets (or, with `None`, clears) one tool's side-effect class.
    pub async fn set_mcp_override(
        &self,
        workspace_id: &str,
        connection: &str,
        tool: &str,
        side_effects: Option<&str>,
        set_by: &str,
    ) -> Result<(), StoreError> {
        match side_effects {
            Some(class) => {
                sqlx::query("INSERT INTO mcp_overrides (workspace_id, connection, tool, side_effects, set_by, set_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (workspace_id, connection, tool) DO UPDATE SET side_effects = $4, set_by = $5, set_at = $6")
                    .bind(workspace_id)
                    .bind(connection)
                    .bind(tool)
                    .bind(class)
                    .bind(set_by)
                    .bind(now())
                    .execute(self.writer())
                    .await?;
            }
            None => {
                sqlx::query("DELETE FROM mcp_overrides WHERE workspace_id = $1 AND connection = $2 AND tool = $3")
                    .bind(workspace_id)
                    .bind(connection)
                    .bind(tool)
                    .execute(self.writer())
                    .await?;
            }
        }
        Ok(())
    }
}
