//! Teams as the API shows them: workspaces, members and their roles,
//! invitations, and the audit log of who did what.
//!
//! A role is per workspace. [`Role`] orders them: an admin may do all an
//! editor may, an editor all a viewer may. Each route of the API states the
//! role it takes (`x-required-role` in the OpenAPI document).

use serde::{Deserialize, Serialize};

use super::suites::ShapeError;

/// A member's role in a workspace, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Reads workflows, runs and traces; starts no run, decides no
    /// approval, sees only the count of secrets.
    Viewer,
    /// A viewer who also edits workflows, starts and cancels runs, forks,
    /// runs suites and decides approvals.
    Editor,
    /// An editor who also manages members, invitations, connections,
    /// workspace and organization secrets, and reads the audit log.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Editor, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Editor => "editor",
            Role::Admin => "admin",
        }
    }

    /// Whether this role may do what `needed` may.
    pub fn allows(self, needed: Role) -> bool {
        self >= needed
    }

    /// The role named `name` (`admin`, `editor`, `viewer`).
    pub fn parse(name: &str) -> Result<Role, String> {
        match name {
            "viewer" => Ok(Role::Viewer),
            "editor" => Ok(Role::Editor),
            "admin" => Ok(Role::Admin),
            other => Err(format!("`{other}` is not a role: admin, editor or viewer")),
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The longest workspace name, in characters (at least 1, not blank).
pub const WORKSPACE_NAME_MAX: usize = 100;
/// The longest display name, in characters (at least 1, not blank).
pub const DISPLAY_NAME_MAX: usize = 100;
/// How long an invitation link works unless asked otherwise: 7 days.
pub const INVITATION_DEFAULT_HOURS: u32 = 168;
/// The longest an invitation link may work: 30 days.
pub const INVITATION_MAX_HOURS: u32 = 720;

/// A name of `what` (`a workspace's name`) at `field`: 1 to `max`
/// characters once trimmed, no control characters.
fn check_name(field: &str, what: &str, name: &str, max: usize) -> Result<(), ShapeError> {
    // Measured as stored: trimmed.
    let length = name.trim().chars().count();
    if length == 0 || length > max {
        return Err((
            field.into(),
            format!("{what} is 1 to {max} characters, not blank ({length} given)"),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err((field.into(), format!("{what} has no control characters")));
    }
    Ok(())
}

/// One workspace the caller belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkspaceView {
    pub id: String,
    pub name: String,
    /// The caller's role in it.
    pub role: Role,
    /// The organization it belongs to (its org secrets are shared).
    pub org_id: Option<String>,
    pub created_at: String,
    /// How many members it has.
    pub members: u32,
}

/// Body of `GET /api/v1/workspaces`: the caller's workspaces by name, and
/// the one this request acted in (`X-Glassbox-Workspace`, else the first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkspaceList {
    pub workspaces: Vec<WorkspaceView>,
    pub current: String,
}

/// Body of `POST /api/v1/workspaces` (the caller becomes its admin) and of
/// `PATCH /api/v1/workspace` (a rename of the current one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct WorkspaceName {
    pub name: String,
}

impl WorkspaceName {
    /// 1 to [`WORKSPACE_NAME_MAX`] characters, not blank.
    pub fn check(&self) -> Result<(), ShapeError> {
        check_name("name", "a workspace's name", &self.name, WORKSPACE_NAME_MAX)
    }
}

/// One member of a workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MemberView {
    pub user_id: String,
    /// The display name they chose.
    pub name: String,
    pub role: Role,
    /// When they joined (empty for members from before joins were dated).
    pub joined_at: Option<String>,
    /// True for the caller.
    pub you: bool,
}

/// Body of `GET /api/v1/members`: the workspace's members by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MemberList {
    pub members: Vec<MemberView>,
}

/// Body of `PATCH /api/v1/members/{user_id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RoleChange {
    pub role: Role,
}

/// Body of `POST /api/v1/invitations`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewInvitation {
    pub role: Role,
    /// Hours the link works, 1 to [`INVITATION_MAX_HOURS`] (default
    /// [`INVITATION_DEFAULT_HOURS`]).
    #[serde(default)]
    pub expires_in_hours: Option<u32>,
}

impl NewInvitation {
    pub fn hours(&self) -> u32 {
        self.expires_in_hours.unwrap_or(INVITATION_DEFAULT_HOURS)
    }

    pub fn check(&self) -> Result<(), ShapeError> {
        if !(1..=INVITATION_MAX_HOURS).contains(&self.hours()) {
            return Err((
                "expires_in_hours".into(),
                format!("an invitation works 1 to {INVITATION_MAX_HOURS} hours"),
            ));
        }
        Ok(())
    }
}

/// Where an invitation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum InvitationStatus {
    Pending,
    Accepted,
    Expired,
    Revoked,
}

/// An invitation as its workspace's admins see it (never its token).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InvitationView {
    pub id: String,
    pub workspace_id: String,
    pub role: Role,
    pub status: InvitationStatus,
    /// The admin who made it.
    pub created_by: String,
    pub created_at: String,
    pub expires_at: String,
    /// The user who accepted it, once accepted.
    pub accepted_by: Option<String>,
    pub accepted_at: Option<String>,
    pub revoked_at: Option<String>,
}

/// Body of `GET /api/v1/invitations`: the workspace's invitations, newest
/// first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InvitationList {
    pub invitations: Vec<InvitationView>,
}

/// Answer of `POST /api/v1/invitations`: the one-time link, shown this
/// once (only its hash is stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InvitationCreated {
    pub invitation: InvitationView,
    /// The secret of the link.
    pub token: String,
    /// The app's path that accepts it: `/invite/{token}`.
    pub path: String,
}

/// Answer of `GET /api/v1/invite/{token}` (no sign-in needed): what the
/// link offers, for the page that accepts it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InvitationPreview {
    pub workspace_id: String,
    pub workspace_name: String,
    pub role: Role,
    /// The display name of the admin who made it.
    pub invited_by: String,
    pub expires_at: String,
}

/// Body of `POST /api/v1/invite/{token}/accept`. Without a sign-in, a new
/// user with this display name is made and signed in; with one, the
/// caller joins and `display_name` may be left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct InvitationAccept {
    #[serde(default)]
    pub display_name: Option<String>,
}

impl InvitationAccept {
    /// The display name's shape, when one is given.
    pub fn check(&self) -> Result<(), ShapeError> {
        match &self.display_name {
            Some(name) => check_name("display_name", "a display name", name, DISPLAY_NAME_MAX),
            None => Ok(()),
        }
    }
}

/// One entry of the audit log: who did what to which thing, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditEvent {
    pub id: String,
    pub at: String,
    /// The user who did it (`admin` for the local admin and the CLI).
    pub actor_id: String,
    /// Their display name as it is now.
    pub actor_name: String,
    /// What was done: `run.started`, `approval.decided`,
    /// `connection.created`, `connection.updated`, `connection.deleted`,
    /// `secret.set`, `secret.deleted`, `member.invited`,
    /// `member.joined`, `member.role_changed`, `member.removed`,
    /// `invitation.revoked`, `workspace.created`, `workspace.renamed`.
    pub action: String,
    /// What it was done to: a run, approval, connection or invitation id, a
    /// secret as `scope/name`, a user id.
    pub target: String,
    /// More about it (`{"decision": "approve"}`, `{"role": "editor"}`).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub detail: serde_json::Value,
}

/// Body of `GET /api/v1/audit`: newest first; `next` is the cursor of the
/// next page (`?before=`), absent on the last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditList {
    pub events: Vec<AuditEvent>,
    pub next: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered_and_named() {
        assert!(Role::Admin.allows(Role::Editor));
        assert!(Role::Editor.allows(Role::Viewer));
        assert!(!Role::Viewer.allows(Role::Editor));
        assert!(!Role::Editor.allows(Role::Admin));
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Ok(role));
            assert_eq!(
                serde_json::to_value(role).unwrap(),
                serde_json::json!(role.as_str())
            );
        }
        assert!(Role::parse("member")
            .unwrap_err()
            .contains("admin, editor or viewer"));
    }

    #[test]
    fn shapes_name_their_field() {
        let blank = WorkspaceName { name: "  ".into() };
        assert_eq!(blank.check().unwrap_err().0, "name");
        assert!(WorkspaceName {
            name: "Team".into()
        }
        .check()
        .is_ok());
        let long = InvitationAccept {
            display_name: Some("x".repeat(DISPLAY_NAME_MAX + 1)),
        };
        assert_eq!(long.check().unwrap_err().0, "display_name");
        let never = NewInvitation {
            role: Role::Viewer,
            expires_in_hours: Some(0),
        };
        assert_eq!(never.check().unwrap_err().0, "expires_in_hours");
        assert!(NewInvitation {
            role: Role::Editor,
            expires_in_hours: None
        }
        .check()
        .is_ok());
    }
}
