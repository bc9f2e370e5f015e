//! `glassbox member list|invite|role|remove`: a workspace's members and
//! invitation links, in-process on the database as the local admin,
//! through the same code as the API's `/members` and `/invitations`.

use clap::Subcommand;
use node_runtime::wire::{NewInvitation, Role};

use super::workspace::{admin_in, admin_only, failure, open};
use super::{DbArgs, Failure};
use crate::api::{invitations, members};

#[derive(Subcommand)]
pub enum MemberCommand {
    /// List a workspace's members (user id, role, name).
    List {
        #[command(flatten)]
        db: DbArgs,
        /// The workspace's id or name (default: the default workspace).
        #[arg(long)]
        workspace: Option<String>,
        /// Print the list as JSON (the API's `GET /members`).
        #[arg(long)]
        json: bool,
    },
    /// Make a one-time invitation link for a role and print it.
    Invite {
        #[command(flatten)]
        db: DbArgs,
        /// admin, editor or viewer.
        #[arg(long)]
        role: String,
        #[arg(long)]
        workspace: Option<String>,
        /// Hours the link works (1 to 720; default 168).
        #[arg(long)]
        expires_in_hours: Option<u32>,
        /// The address people open the app at.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        base_url: String,
    },
    /// Give a member another role.
    Role {
        #[command(flatten)]
        db: DbArgs,
        /// The member's user id.
        user: String,
        /// admin, editor or viewer.
        role: String,
        #[arg(long)]
        workspace: Option<String>,
    },
    /// Remove a member from a workspace (their tokens stop reaching it).
    Remove {
        #[command(flatten)]
        db: DbArgs,
        /// The member's user id.
        user: String,
        #[arg(long)]
        workspace: Option<String>,
    },
}

fn role(name: &str) -> Result<Role, Failure> {
    Role::parse(name).map_err(|why| Failure::config(format!("role: {why}")))
}

pub async fn member_command(cmd: MemberCommand) -> Result<(), Failure> {
    match cmd {
        MemberCommand::List {
            db,
            workspace,
            json,
        } => {
            let store = open(&db).await?;
            let result = async {
                let caller = admin_in(&store, workspace.as_deref()).await?;
                members::members(&store, &caller).await.map_err(failure)
            }
            .await;
            store.close().await;
            let list = result?;
            if json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&list).map_err(Failure::runtime)?
                );
            } else {
                for m in list.members {
                    outln!("{:<36}  {:<6}  {}", m.user_id, m.role, m.name);
                }
            }
            Ok(())
        }
        MemberCommand::Invite {
            db,
            role: wanted,
            workspace,
            expires_in_hours,
            base_url,
        } => {
            let body = NewInvitation {
                role: role(&wanted)?,
                expires_in_hours,
            };
            body.check()
                .map_err(|(_, why)| Failure::config(format!("--expires-in-hours: {why}")))?;
            let store = open(&db).await?;
            let result = async {
                let caller = admin_in(&store, workspace.as_deref()).await?;
                admin_only(&caller)?;
                invitations::invite(&store, &caller, &body)
                    .await
                    .map_err(failure)
            }
            .await;
            store.close().await;
            let created = result?;
            outln!("{}{}", base_url.trim_end_matches('/'), created.path);
            eprintln!(
                "invitation {} to workspace {} as {}, works once until {}",
                created.invitation.id,
                created.invitation.workspace_id,
                created.invitation.role,
                created.invitation.expires_at
            );
            Ok(())
        }
        MemberCommand::Role {
            db,
            user,
            role: wanted,
            workspace,
        } => {
            let new = role(&wanted)?;
            let store = open(&db).await?;
            let result = async {
                let caller = admin_in(&store, workspace.as_deref()).await?;
                admin_only(&caller)?;
                members::change_member_role(&store, &caller, &user, new)
                    .await
                    .map_err(failure)
            }
            .await;
            store.close().await;
            let member = result?;
            outln!(
                "{} ({}) is now {}",
                member.user_id,
                member.name,
                member.role
            );
            Ok(())
        }
        MemberCommand::Remove {
            db,
            user,
            workspace,
        } => {
            let store = open(&db).await?;
            let result = async {
                let caller = admin_in(&store, workspace.as_deref()).await?;
                admin_only(&caller)?;
                members::remove_member(&store, &caller, &user)
                    .await
                    .map_err(failure)?;
                Ok::<_, Failure>(caller.workspace_id)
            }
            .await;
            store.close().await;
            outln!("removed {user} from workspace {}", result?);
            Ok(())
        }
    }
}
