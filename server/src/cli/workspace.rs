//! `glassbox workspace list|create|rename`: the local admin's workspaces,
//! in-process on the database (like `glassbox secret`), through the same
//! code as the API's `/workspaces`.

use std::net::IpAddr;

use clap::Subcommand;
use node_runtime::wire::{Role, WorkspaceList, WorkspaceName};

use super::{DbArgs, Failure};
use crate::api::workspaces;
use crate::auth::{Caller, ADMIN_USER, DEFAULT_WORKSPACE};
use crate::{ApiError, Store};

#[derive(Subcommand)]
pub enum WorkspaceCommand {
    /// List the local admin's workspaces (id, role, members, name).
    List {
        #[command(flatten)]
        db: DbArgs,
        /// Print the list as JSON (the API's `GET /workspaces`).
        #[arg(long)]
        json: bool,
    },
    /// Create a workspace (in the default workspace's organization) with
    /// the local admin as its admin; prints its id.
    Create {
        #[command(flatten)]
        db: DbArgs,
        name: String,
    },
    /// Rename a workspace the local admin administers.
    Rename {
        #[command(flatten)]
        db: DbArgs,
        /// The workspace's id (or its name).
        workspace: String,
        name: String,
    },
}

/// A failure of the shared code: the caller's mistakes exit 2, the
/// rest 1.
pub(super) fn failure(e: ApiError) -> Failure {
    match e {
        ApiError::Internal(_) => Failure::runtime(e),
        e => Failure::config(e),
    }
}

/// The database, with the local admin made on a first use.
pub(super) async fn open(db: &DbArgs) -> Result<Store, Failure> {
    super::open_with_admin(&db.config(IpAddr::from([127, 0, 0, 1]), 0, None)).await
}

/// The local admin acting in `workspace` (an id, or the name of exactly
/// one of theirs; None: the default workspace).
pub(super) async fn admin_in(store: &Store, workspace: Option<&str>) -> Result<Caller, Failure> {
    let wanted = workspace.unwrap_or(DEFAULT_WORKSPACE);
    let mine = store
        .user_workspaces(ADMIN_USER)
        .await
        .map_err(Failure::runtime)?;
    let by_id = mine.iter().find(|w| w.id == wanted);
    let by_name: Vec<_> = mine.iter().filter(|w| w.name == wanted).collect();
    let found = match (by_id, by_name.as_slice()) {
        (Some(w), _) => w,
        (None, [w]) => *w,
        (None, []) => {
            return Err(Failure::config(format!(
                "--workspace `{wanted}`: the local admin belongs to no such workspace (see `glassbox workspace list`)"
            )))
        }
        (None, _) => {
            return Err(Failure::config(format!(
                "--workspace `{wanted}`: several workspaces have this name; give its id (see `glassbox workspace list`)"
            )))
        }
    };
    Ok(Caller {
        user_id: ADMIN_USER.into(),
        workspace_id: found.id.clone(),
        role: crate::auth::role_of(&found.role),
        org_id: found.org_id.clone(),
    })
}

/// 2 unless `caller` is an admin of its workspace.
pub(super) fn admin_only(caller: &Caller) -> Result<(), Failure> {
    if caller.role == Role::Admin {
        Ok(())
    } else {
        Err(Failure::config(format!(
            "the local admin is {} of workspace {}, not admin",
            caller.role, caller.workspace_id
        )))
    }
}

/// A name's shape, or exit 2 naming it.
fn check_name(name: &str) -> Result<String, Failure> {
    let body = WorkspaceName { name: name.into() };
    body.check()
        .map_err(|(_, message)| Failure::config(format!("the workspace name: {message}")))?;
    Ok(name.trim().to_string())
}

pub async fn workspace_command(cmd: WorkspaceCommand) -> Result<(), Failure> {
    match cmd {
        WorkspaceCommand::List { db, json } => {
            let store = open(&db).await?;
            let list = workspaces::workspaces_of(&store, ADMIN_USER).await;
            store.close().await;
            let list = WorkspaceList {
                workspaces: list.map_err(failure)?,
                current: DEFAULT_WORKSPACE.into(),
            };
            if json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&list).map_err(Failure::runtime)?
                );
            } else {
                for w in list.workspaces {
                    outln!("{:<36}  {:<6}  {:>3}  {}", w.id, w.role, w.members, w.name);
                }
            }
            Ok(())
        }
        WorkspaceCommand::Create { db, name } => {
            let name = check_name(&name)?;
            let store = open(&db).await?;
            let result = async {
                let caller = admin_in(&store, None).await?;
                workspaces::create_workspace(&store, &caller, &name)
                    .await
                    .map_err(failure)
            }
            .await;
            store.close().await;
            let view = result?;
            outln!("{}", view.id);
            Ok(())
        }
        WorkspaceCommand::Rename {
            db,
            workspace,
            name,
        } => {
            let name = check_name(&name)?;
            let store = open(&db).await?;
            let result = async {
                let caller = admin_in(&store, Some(&workspace)).await?;
                admin_only(&caller)?;
                workspaces::rename_workspace(&store, &caller, &name)
                    .await
                    .map_err(failure)
            }
            .await;
            store.close().await;
            let view = result?;
            outln!("renamed {} to {}", view.id, view.name);
            Ok(())
        }
    }
}
