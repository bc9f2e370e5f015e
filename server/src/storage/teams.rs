//! Teams (issue 34): workspaces as their members see them, members and
//! their roles, and one-time invitation links (stored by the BLAKE3 hash of
//! their token). Every statement about members or invitations names its
//! workspace; the last admin of a workspace can be neither demoted nor
//! removed (checked in the statement that would do it, under a lock of the
//! workspace's row on Postgres).

use super::*;

/// A workspace with the asking user's role in it and its member count.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct UserWorkspaceRow {
    pub id: String,
    pub name: String,
    pub org_id: Option<String>,
    pub created_at: String,
    /// The user's role (`admin`, `editor`, `viewer`).
    pub role: String,
    pub members: i64,
}

/// A member of a workspace with their display name.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct MemberRow {
    pub user_id: String,
    pub name: String,
    pub role: String,
    pub joined_at: Option<String>,
}

/// An invitation as stored (never its token).
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct InvitationRow {
    pub id: String,
    pub workspace_id: String,
    pub role: String,
    pub created_by: String,
    pub created_at: String,
    pub expires_at: String,
    pub accepted_by: Option<String>,
    pub accepted_at: Option<String>,
    pub revoked_at: Option<String>,
}

/// What an invitation link offers: its row, its workspace's name and the
/// display name of the admin who made it.
#[derive(Debug, Clone, PartialEq)]
pub struct InvitationOffer {
    pub invitation: InvitationRow,
    pub workspace_name: String,
    pub invited_by: String,
}

/// Why a member's role change or removal was not done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberRefusal {
    /// The user is not a member of the workspace.
    NotMember,
    /// They are its last admin.
    LastAdmin,
}

/// Who takes an invitation: a signed-in user, or a new one with this
/// display name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Joiner {
    Existing(String),
    New(String),
}

/// The outcome of taking an invitation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acceptance {
    /// `user_id` joined `workspace_id` as `role` (and holds the session
    /// stored with it).
    Joined {
        invitation_id: String,
        user_id: String,
        workspace_id: String,
        role: String,
    },
    /// No invitation has this token.
    Unknown,
    /// Taken already.
    Used,
    Revoked,
    Expired,
    /// The signed-in user is a member of the workspace already (the
    /// invitation is left unused).
    AlreadyMember,
}

const INVITATION_COLUMNS: &str = "id, workspace_id, role, created_by, created_at, expires_at, accepted_by, accepted_at, revoked_at";

/// The most invitations a workspace's list shows (newest first).
const INVITATIONS_LISTED: i64 = 500;

/// A statement's condition that `user_id = $2` of workspace `$1` is not its
/// only admin.
const NOT_LAST_ADMIN: &str = "(role <> 'admin' OR (SELECT COUNT(*) FROM memberships a WHERE a.workspace_id = $1 AND a.role = 'admin') > 1)";

impl Store {
    /// On Postgres, locks a workspace's row for the rest of `tx`, so its
    /// member changes happen one after another (SQLite has one writer).
    async fn lock_workspace(
        &self,
        tx: &mut AnyConnection,
        workspace_id: &str,
    ) -> Result<(), StoreError> {
        if !self.is_sqlite() {
            sqlx::query("SELECT id FROM workspaces WHERE id = $1 FOR UPDATE")
                .bind(workspace_id)
                .fetch_optional(&mut *tx)
                .await?;
        }
        Ok(())
    }

    /// A member's role, read in `tx` after locking their workspace (see
    /// [`Store::lock_workspace`]); `None` for no such member.
    async fn locked_role(
        &self,
        tx: &mut AnyConnection,
        workspace_id: &str,
        user_id: &str,
    ) -> Result<Option<String>, StoreError> {
        self.lock_workspace(tx, workspace_id).await?;
        Ok(sqlx::query_scalar(
            "SELECT role FROM memberships WHERE workspace_id = $1 AND user_id = $2",
        )
        .bind(workspace_id)
        .bind(user_id)
        .fetch_optional(&mut *tx)
        .await?)
    }

    /// Makes a workspace (in `org_id`'s organization) with `admin` as its
    /// admin, in one transaction.
    pub async fn create_workspace(
        &self,
        id: &str,
        name: &str,
        org_id: Option<&str>,
        admin: &str,
    ) -> Result<(), StoreError> {
        let t = now();
        let mut tx = self.writer().begin().await?;
        sqlx::query(
            "INSERT INTO workspaces (id, name, created_at, org_id) VALUES ($1, $2, $3, $4)",
        )
        .bind(id)
        .bind(name)
        .bind(&t)
        .bind(org_id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("INSERT INTO memberships (workspace_id, user_id, role, joined_at) VALUES ($1, $2, 'admin', $3)")
            .bind(id)
            .bind(admin)
            .bind(&t)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Renames a workspace.
    pub async fn rename_workspace(&self, id: &str, name: &str) -> Result<(), StoreError> {
        let n = sqlx::query("UPDATE workspaces SET name = $1 WHERE id = $2")
            .bind(name)
            .bind(id)
            .execute(self.writer())
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("workspace {id}")));
        }
        Ok(())
    }

    /// The workspaces `user_id` belongs to, by name, with their role in
    /// each and its member count.
    pub async fn user_workspaces(
        &self,
        user_id: &str,
    ) -> Result<Vec<UserWorkspaceRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT w.id, w.name, w.org_id, w.created_at, m.role, \
             (SELECT COUNT(*) FROM memberships c WHERE c.workspace_id = w.id) AS members \
             FROM memberships m JOIN workspaces w ON w.id = m.workspace_id \
             WHERE m.user_id = $1 ORDER BY w.name, w.id",
        )
        .bind(user_id)
        .fetch_all(self.pool())
        .await?)
    }

    /// A workspace's members by display name.
    pub async fn list_members(&self, workspace_id: &str) -> Result<Vec<MemberRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT m.user_id, u.name, m.role, m.joined_at FROM memberships m \
             JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 ORDER BY u.name, m.user_id",
        )
        .bind(workspace_id)
        .fetch_all(self.pool())
        .await?)
    }

    /// One member of a workspace.
    pub async fn get_member(
        &self,
        workspace_id: &str,
        user_id: &str,
    ) -> Result<Option<MemberRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT m.user_id, u.name, m.role, m.joined_at FROM memberships m \
             JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 AND m.user_id = $2",
        )
        .bind(workspace_id)
        .bind(user_id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// Gives a member another role; answers their role before. The last
    /// admin is not demoted.
    pub async fn set_member_role(
        &self,
        workspace_id: &str,
        user_id: &str,
        role: &str,
    ) -> Result<Result<String, MemberRefusal>, StoreError> {
        let mut tx = self.writer().begin().await?;
        let Some(before) = self.locked_role(&mut tx, workspace_id, user_id).await? else {
            tx.rollback().await?;
            return Ok(Err(MemberRefusal::NotMember));
        };
        let n = sqlx::query(&format!(
            "UPDATE memberships SET role = $3 WHERE workspace_id = $1 AND user_id = $2 \
             AND ($3 = 'admin' OR {NOT_LAST_ADMIN})"
        ))
        .bind(workspace_id)
        .bind(user_id)
        .bind(role)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if n == 0 {
            tx.rollback().await?;
            return Ok(Err(MemberRefusal::LastAdmin));
        }
        if role != "admin" {
            revoke_links_of(&mut tx, workspace_id, user_id).await?;
        }
        tx.commit().await?;
        Ok(Ok(before))
    }

    /// Removes a member from a workspace: their tokens stop reaching it at
    /// once (the caller is resolved on every request); a user left in no
    /// workspace loses every token. The last admin is not removed. Answers
    /// their role and whether their tokens were deleted.
    pub async fn remove_member(
        &self,
        workspace_id: &str,
        user_id: &str,
    ) -> Result<Result<(String, bool), MemberRefusal>, StoreError> {
        let mut tx = self.writer().begin().await?;
        let Some(role) = self.locked_role(&mut tx, workspace_id, user_id).await? else {
            tx.rollback().await?;
            return Ok(Err(MemberRefusal::NotMember));
        };
        let n = sqlx::query(&format!(
            "DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2 AND {NOT_LAST_ADMIN}"
        ))
        .bind(workspace_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if n == 0 {
            tx.rollback().await?;
            return Ok(Err(MemberRefusal::LastAdmin));
        }
        revoke_links_of(&mut tx, workspace_id, user_id).await?;
        tx.commit().await?;
        // After the commit, so that of two removals from two workspaces at
        // once (each transaction locks only its workspace), the later one
        // sees the user in none.
        let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM memberships WHERE user_id = $1")
            .bind(user_id)
            .fetch_one(self.writer())
            .await?;
        if left == 0 {
            sqlx::query("DELETE FROM api_tokens WHERE user_id = $1")
                .bind(user_id)
                .execute(self.writer())
                .await?;
        }
        Ok(Ok((role, left == 0)))
    }

    /// Stores an invitation by its token's hash.
    pub async fn insert_invitation(
        &self,
        invitation: &InvitationRow,
        token_hash: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO invitations (id, token_hash, workspace_id, role, created_by, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)")
            .bind(&invitation.id)
            .bind(token_hash)
            .bind(&invitation.workspace_id)
            .bind(&invitation.role)
            .bind(&invitation.created_by)
            .bind(&invitation.created_at)
            .bind(&invitation.expires_at)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// A workspace's invitations, newest first (the latest 500).
    pub async fn list_invitations(
        &self,
        workspace_id: &str,
    ) -> Result<Vec<InvitationRow>, StoreError> {
        Ok(sqlx::query_as(&format!(
            "SELECT {INVITATION_COLUMNS} FROM invitations WHERE workspace_id = $1 \
             ORDER BY created_at DESC, id DESC LIMIT $2"
        ))
        .bind(workspace_id)
        .bind(INVITATIONS_LISTED)
        .fetch_all(self.pool())
        .await?)
    }

    /// Revokes a pending invitation of a workspace; answers it as it is
    /// after (an accepted one is left as it was, a revoked one keeps its
    /// first revocation) and whether this call revoked it, or None if the
    /// workspace has no such invitation.
    pub async fn revoke_invitation(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<(InvitationRow, bool)>, StoreError> {
        let revoked = sqlx::query("UPDATE invitations SET revoked_at = $1 WHERE workspace_id = $2 AND id = $3 AND accepted_at IS NULL AND revoked_at IS NULL")
            .bind(now())
            .bind(workspace_id)
            .bind(id)
            .execute(self.writer())
            .await?
            .rows_affected()
            == 1;
        let row: Option<InvitationRow> = sqlx::query_as(&format!(
            "SELECT {INVITATION_COLUMNS} FROM invitations WHERE workspace_id = $1 AND id = $2"
        ))
        .bind(workspace_id)
        .bind(id)
        .fetch_optional(self.writer())
        .await?;
        Ok(row.map(|row| (row, revoked)))
    }

    /// The invitation whose token has this hash, with what it offers.
    pub async fn invitation_offer(
        &self,
        token_hash: &str,
    ) -> Result<Option<InvitationOffer>, StoreError> {
        type Extra = (String, Option<String>);
        let row: Option<InvitationRow> = sqlx::query_as(&format!(
            "SELECT {INVITATION_COLUMNS} FROM invitations WHERE token_hash = $1"
        ))
        .bind(token_hash)
        .fetch_optional(self.pool())
        .await?;
        let Some(invitation) = row else {
            return Ok(None);
        };
        let (workspace_name, invited_by): Extra = sqlx::query_as(
            "SELECT w.name, u.name FROM workspaces w LEFT JOIN users u ON u.id = $2 WHERE w.id = $1",
        )
        .bind(&invitation.workspace_id)
        .bind(&invitation.created_by)
        .fetch_one(self.pool())
        .await?;
        Ok(Some(InvitationOffer {
            invited_by: invited_by.unwrap_or_else(|| invitation.created_by.clone()),
            invitation,
            workspace_name,
        }))
    }

    /// Takes the invitation with this token hash, in one transaction: the
    /// invitation is marked accepted by one `UPDATE ... RETURNING` only if
    /// it is pending (so of two accepts one wins), the joiner (made first
    /// when new) becomes a member with its role, and the session with
    /// `session_hash` is stored for them.
    pub async fn accept_invitation(
        &self,
        token_hash: &str,
        joiner: &Joiner,
        session_hash: &str,
        session_expires_at: &str,
    ) -> Result<Acceptance, StoreError> {
        let t = now();
        let user_id = match joiner {
            Joiner::Existing(id) => id.clone(),
            Joiner::New(_) => new_id(),
        };
        let mut tx = self.writer().begin().await?;
        let taken: Option<(String, String, String)> = sqlx::query_as(
            "UPDATE invitations SET accepted_by = $1, accepted_at = $2 \
             WHERE token_hash = $3 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $2 \
             RETURNING id, workspace_id, role",
        )
        .bind(&user_id)
        .bind(&t)
        .bind(token_hash)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((invitation_id, workspace_id, role)) = taken else {
            tx.rollback().await?;
            let state: Option<(Option<String>, Option<String>)> = sqlx::query_as(
                "SELECT accepted_at, revoked_at FROM invitations WHERE token_hash = $1",
            )
            .bind(token_hash)
            .fetch_optional(self.writer())
            .await?;
            return Ok(match state {
                None => Acceptance::Unknown,
                Some((Some(_), _)) => Acceptance::Used,
                Some((None, Some(_))) => Acceptance::Revoked,
                Some((None, None)) => Acceptance::Expired,
            });
        };
        if let Joiner::New(name) = joiner {
            sqlx::query("INSERT INTO users (id, name, created_at) VALUES ($1, $2, $3)")
                .bind(&user_id)
                .bind(name)
                .bind(&t)
                .execute(&mut *tx)
                .await?;
        }
        let joined = sqlx::query("INSERT INTO memberships (workspace_id, user_id, role, joined_at) VALUES ($1, $2, $3, $4) ON CONFLICT (workspace_id, user_id) DO NOTHING")
            .bind(&workspace_id)
            .bind(&user_id)
            .bind(&role)
            .bind(&t)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if joined == 0 {
            tx.rollback().await?;
            return Ok(Acceptance::AlreadyMember);
        }
        sqlx::query("INSERT INTO api_tokens (token_hash, user_id, kind, created_at, expires_at) VALUES ($1, $2, 'session', $3, $4)")
            .bind(session_hash)
            .bind(&user_id)
            .bind(&t)
            .bind(session_expires_at)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Acceptance::Joined {
            invitation_id,
            user_id,
            workspace_id,
            role,
        })
    }
}

/// Revokes the pending invitations `user_id` made in a workspace: links an
/// admin made stop working when they are removed or are an admin no more
/// (they saw each link when they made it).
async fn revoke_links_of(
    tx: &mut AnyConnection,
    workspace_id: &str,
    user_id: &str,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE invitations SET revoked_at = $3 WHERE workspace_id = $1 AND created_by = $2 \
         AND accepted_at IS NULL AND revoked_at IS NULL",
    )
    .bind(workspace_id)
    .bind(user_id)
    .bind(now())
    .execute(&mut *tx)
    .await?;
    Ok(())
}
