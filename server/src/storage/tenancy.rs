//! Organizations, workspaces, users, memberships, session and API tokens.

use super::*;

impl Store {
    /// Inserts `(id, name, now)` into a table of named things unless the id
    /// exists (`table` is one of ours, never input).
    pub(super) async fn ensure_named(
        &self,
        table: &'static str,
        id: &str,
        name: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(&format!(
            "INSERT INTO {table} (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING"
        ))
        .bind(id)
        .bind(name)
        .bind(now())
        .execute(self.writer())
        .await?;
        Ok(())
    }

    pub async fn ensure_workspace(&self, id: &str, name: &str) -> Result<(), StoreError> {
        self.ensure_named("workspaces", id, name).await
    }

    pub async fn ensure_org(&self, id: &str, name: &str) -> Result<(), StoreError> {
        self.ensure_named("orgs", id, name).await
    }

    /// Puts a workspace in an organization (or takes it out with `None`).
    pub async fn set_workspace_org(
        &self,
        workspace_id: &str,
        org_id: Option<&str>,
    ) -> Result<(), StoreError> {
        let n = sqlx::query("UPDATE workspaces SET org_id = $1 WHERE id = $2")
            .bind(org_id)
            .bind(workspace_id)
            .execute(self.writer())
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("workspace {workspace_id}")));
        }
        Ok(())
    }

    /// The organization a workspace belongs to, if any.
    pub async fn workspace_org(&self, workspace_id: &str) -> Result<Option<String>, StoreError> {
        let org: Option<Option<String>> =
            sqlx::query_scalar("SELECT org_id FROM workspaces WHERE id = $1")
                .bind(workspace_id)
                .fetch_optional(self.pool())
                .await?;
        Ok(org.flatten())
    }

    pub async fn ensure_user(&self, id: &str, name: &str) -> Result<(), StoreError> {
        self.ensure_named("users", id, name).await
    }

    pub async fn add_membership(
        &self,
        workspace_id: &str,
        user_id: &str,
        role: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO memberships (workspace_id, user_id, role) VALUES ($1, $2, $3) ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = $3")
            .bind(workspace_id)
            .bind(user_id)
            .bind(role)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// `(workspace, role, the workspace's org)` for each membership, the
    /// first joined first (a user's first workspace is where a request
    /// without `X-Glassbox-Workspace` acts).
    pub async fn memberships(
        &self,
        user_id: &str,
    ) -> Result<Vec<(String, String, Option<String>)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT m.workspace_id, m.role, w.org_id FROM memberships m JOIN workspaces w ON w.id = m.workspace_id WHERE m.user_id = $1 ORDER BY COALESCE(m.joined_at, ''), m.workspace_id",
        )
        .bind(user_id)
        .fetch_all(self.pool())
        .await?)
    }

    /// Stores a token by its hash (the token itself is never stored).
    pub async fn insert_token(
        &self,
        token_hash: &str,
        user_id: &str,
        kind: &str,
        expires_at: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO api_tokens (token_hash, user_id, kind, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)")
            .bind(token_hash)
            .bind(user_id)
            .bind(kind)
            .bind(now())
            .bind(expires_at)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// The user of a valid token of `kind`. A `signin` token is single-use:
    /// taking it marks it used in the same statement.
    pub async fn token_user(
        &self,
        token_hash: &str,
        kind: &str,
    ) -> Result<Option<String>, StoreError> {
        let now = now();
        if kind == "signin" {
            let user: Option<String> = sqlx::query_scalar(
                "UPDATE api_tokens SET used_at = $1 WHERE token_hash = $2 AND kind = 'signin' AND used_at IS NULL AND (expires_at IS NULL OR expires_at > $1) RETURNING user_id",
            )
            .bind(&now)
            .bind(token_hash)
            .fetch_optional(self.writer())
            .await?;
            return Ok(user);
        }
        Ok(sqlx::query_scalar("SELECT user_id FROM api_tokens WHERE token_hash = $1 AND kind = $2 AND (expires_at IS NULL OR expires_at > $3)")
            .bind(token_hash)
            .bind(kind)
            .bind(&now)
            .fetch_optional(self.pool())
            .await?)
    }

    /// The user of a valid session or API token with their memberships
    /// `(workspace_id, role, org_id)`, in one query: this runs before every
    /// API request. A user with no membership comes with an empty list;
    /// the first joined comes first (undated memberships, such as the
    /// local admin's, before any other).
    pub async fn token_caller(
        &self,
        token_hash: &str,
    ) -> Result<Option<(String, Vec<(String, String, Option<String>)>)>, StoreError> {
        type Row = (String, Option<String>, Option<String>, Option<String>);
        const SQL: &str = "SELECT t.user_id, m.workspace_id, m.role, w.org_id FROM api_tokens t \
             LEFT JOIN memberships m ON m.user_id = t.user_id \
             LEFT JOIN workspaces w ON w.id = m.workspace_id \
             WHERE t.token_hash = $1 AND t.kind IN ('session', 'api') \
             AND (t.expires_at IS NULL OR t.expires_at > $2) ORDER BY COALESCE(m.joined_at, ''), m.workspace_id";
        let at = now();
        let direct = self.read_direct(|conn| {
            conn.prepare_cached(SQL)?
                .query_map(rusqlite::params![token_hash, at], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?
                .collect::<rusqlite::Result<Vec<Row>>>()
        });
        let rows: Vec<Row> = match direct {
            Some(rows) => rows?,
            None => {
                sqlx::query_as(SQL)
                    .bind(token_hash)
                    .bind(&at)
                    .fetch_all(self.pool())
                    .await?
            }
        };
        let Some(user) = rows.first().map(|r| r.0.clone()) else {
            return Ok(None);
        };
        let memberships = rows
            .into_iter()
            .filter_map(|(_, ws, role, org)| Some((ws?, role?, org)))
            .collect();
        Ok(Some((user, memberships)))
    }

    /// The kind (`session`, `api`, ...) of the token with this hash and
    /// when it expires (None: never).
    pub async fn token_kind_and_expiry(
        &self,
        token_hash: &str,
    ) -> Result<Option<(String, Option<String>)>, StoreError> {
        Ok(
            sqlx::query_as("SELECT kind, expires_at FROM api_tokens WHERE token_hash = $1")
                .bind(token_hash)
                .fetch_optional(self.pool())
                .await?,
        )
    }

    /// Stores a named, long-lived API token (by hash) for a user.
    pub async fn insert_api_token(
        &self,
        t: &ApiTokenRow,
        token_hash: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO api_tokens (token_hash, user_id, kind, created_at, expires_at, id, name) VALUES ($1, $2, 'api', $3, $4, $5, $6)")
            .bind(token_hash)
            .bind(&t.user_id)
            .bind(&t.created_at)
            .bind(&t.expires_at)
            .bind(&t.id)
            .bind(&t.name)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// A user's API tokens (never their hashes), newest first.
    pub async fn list_api_tokens(&self, user_id: &str) -> Result<Vec<ApiTokenRow>, StoreError> {
        Ok(sqlx::query_as("SELECT id, name, user_id, created_at, expires_at FROM api_tokens WHERE user_id = $1 AND kind = 'api' ORDER BY created_at DESC, id")
            .bind(user_id)
            .fetch_all(self.pool())
            .await?)
    }

    /// The user's sessions that have not expired, newest first: the id
    /// each is listed by (see [`session_id`]), created and expiry times.
    pub async fn list_sessions(
        &self,
        user_id: &str,
    ) -> Result<Vec<(String, String, Option<String>)>, StoreError> {
        let rows: Vec<(String, String, Option<String>)> = sqlx::query_as("SELECT token_hash, created_at, expires_at FROM api_tokens WHERE user_id = $1 AND kind = 'session' AND (expires_at IS NULL OR expires_at > $2) ORDER BY created_at DESC, token_hash")
            .bind(user_id)
            .bind(now())
            .fetch_all(self.pool())
            .await?;
        Ok(rows
            .into_iter()
            .map(|(hash, created, expires)| (session_id(&hash), created, expires))
            .collect())
    }

    /// Revokes one of the user's sessions by its listed id.
    pub async fn revoke_session(&self, user_id: &str, id: &str) -> Result<(), StoreError> {
        let done = sqlx::query(
            "DELETE FROM api_tokens WHERE user_id = $1 AND kind = 'session' AND substr(token_hash, 1, 16) = $2",
        )
        .bind(user_id)
        .bind(id)
        .execute(self.writer())
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("session {id}")));
        }
        Ok(())
    }

    /// Revokes the session whose token has this hash (sign-out).
    pub async fn delete_session(&self, token_hash: &str) -> Result<u64, StoreError> {
        Ok(
            sqlx::query("DELETE FROM api_tokens WHERE token_hash = $1 AND kind = 'session'")
                .bind(token_hash)
                .execute(self.writer())
                .await?
                .rows_affected(),
        )
    }

    /// Revokes one of the user's API tokens.
    pub async fn delete_api_token(&self, user_id: &str, id: &str) -> Result<(), StoreError> {
        let done =
            sqlx::query("DELETE FROM api_tokens WHERE user_id = $1 AND id = $2 AND kind = 'api'")
                .bind(user_id)
                .bind(id)
                .execute(self.writer())
                .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("token {id}")));
        }
        Ok(())
    }
}

/// The id a session is listed and revoked by (`revoke_session` matches it
/// with `substr(token_hash, 1, 16)`): the first 16 hex digits of
/// its token's hash (the token is 244 random bits; this names it without
/// making it guessable, and needs no column of its own).
pub fn session_id(token_hash: &str) -> String {
    token_hash.chars().take(16).collect()
}
