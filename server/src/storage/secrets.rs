//! Secret entries: names and scopes out, values encrypted at rest (`crate::secrets`).

use super::*;

/// The upsert of one invocation record (insert, or move it through its lifecycle).
/// The secrets a user (`$2`) sees in a workspace (`$1`) of an org (`$3`,
/// NULL for none).
const VISIBLE_SECRETS: &str = "((scope = 'user' AND owner_id = $2 AND workspace_id = $1) OR (scope = 'workspace' AND owner_id = $1) OR (scope = 'org' AND owner_id = $3))";

impl Store {
    /// Records that a secret exists in a scope (`user`, `workspace`, `org`).
    pub async fn put_secret_entry(
        &self,
        workspace_id: &str,
        scope: &str,
        owner_id: &str,
        name: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO secret_entries (workspace_id, scope, owner_id, name, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (scope, owner_id, name) DO NOTHING")
            .bind(workspace_id)
            .bind(scope)
            .bind(owner_id)
            .bind(name)
            .bind(now())
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// Stores (or replaces) an encrypted secret value.
    pub async fn put_secret(
        &self,
        workspace_id: &str,
        scope: &str,
        owner_id: &str,
        name: &str,
        ciphertext: &[u8],
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO secret_entries (workspace_id, scope, owner_id, name, ciphertext, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (scope, owner_id, name) DO UPDATE SET ciphertext = $5, created_at = $6")
            .bind(workspace_id)
            .bind(scope)
            .bind(owner_id)
            .bind(name)
            .bind(ciphertext.to_vec())
            .bind(now())
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// Deletes one secret. An org secret is the org's, whichever of its
    /// workspaces set it; the others belong to this workspace.
    pub async fn delete_secret(
        &self,
        workspace_id: &str,
        scope: &str,
        owner_id: &str,
        name: &str,
    ) -> Result<(), StoreError> {
        let n = sqlx::query("DELETE FROM secret_entries WHERE (scope = 'org' OR workspace_id = $1) AND scope = $2 AND owner_id = $3 AND name = $4")
            .bind(workspace_id)
            .bind(scope)
            .bind(owner_id)
            .bind(name)
            .execute(self.writer())
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("secret {name}")));
        }
        Ok(())
    }

    /// Names and scopes visible to a user in a workspace: their own user
    /// secrets, the workspace's, and those of the workspace's org. Never values.
    pub async fn list_secrets(
        &self,
        workspace_id: &str,
        user_id: &str,
        org_id: Option<&str>,
    ) -> Result<Vec<(String, String, String)>, StoreError> {
        Ok(sqlx::query_as(&format!(
            "SELECT name, scope, created_at FROM secret_entries WHERE {VISIBLE_SECRETS} ORDER BY name, scope"
        ))
        .bind(workspace_id)
        .bind(user_id)
        .bind(org_id)
        .fetch_all(self.pool())
        .await?)
    }

    /// The stored ciphertext of one secret slot.
    pub async fn secret_ciphertext(
        &self,
        workspace_id: &str,
        scope: &str,
        owner_id: &str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let row: Option<Option<Vec<u8>>> = sqlx::query_scalar("SELECT ciphertext FROM secret_entries WHERE (scope = 'org' OR workspace_id = $1) AND scope = $2 AND owner_id = $3 AND name = $4")
            .bind(workspace_id)
            .bind(scope)
            .bind(owner_id)
            .bind(name)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.flatten())
    }

    /// The scope a secret resolves from for this user in this workspace,
    /// in the order user -> workspace -> org.
    pub async fn secret_scope(
        &self,
        workspace_id: &str,
        user_id: &str,
        org_id: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, StoreError> {
        let scopes: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT scope FROM secret_entries WHERE {VISIBLE_SECRETS} AND name = $4"
        ))
        .bind(workspace_id)
        .bind(user_id)
        .bind(org_id)
        .bind(name)
        .fetch_all(self.pool())
        .await?;
        Ok(["user", "workspace", "org"]
            .iter()
            .find(|s| scopes.iter().any(|x| x == *s))
            .map(|s| s.to_string()))
    }
}
