//! `glassbox secret ...`: names out, values in (from standard input).

use std::net::IpAddr;

use clap::Subcommand;

use super::{load_cipher, open_database, DbArgs, Failure};
use crate::Store;

#[derive(Subcommand)]
pub enum SecretCommand {
    /// List secret names and scopes (never values).
    List {
        #[command(flatten)]
        db: DbArgs,
    },
    /// Set a secret; the value is read from standard input.
    Set {
        #[command(flatten)]
        db: DbArgs,
        /// `workspace`, `user` (the local admin) or `org` (the workspace's
        /// organization, shared by its workspaces).
        #[arg(long, default_value = "workspace")]
        scope: String,
        name: String,
    },
    /// Delete a secret.
    Delete {
        #[command(flatten)]
        db: DbArgs,
        #[arg(long, default_value = "workspace")]
        scope: String,
        name: String,
    },
}

/// The owner of a scope in the default workspace (the org: the one the
/// workspace belongs to).
pub async fn secret_owner(store: &Store, scope: &str) -> Result<String, Failure> {
    match scope {
        "workspace" => Ok(crate::auth::DEFAULT_WORKSPACE.into()),
        "user" => Ok(crate::auth::ADMIN_USER.into()),
        "org" => crate::auth::default_org(store)
            .await
            .map_err(Failure::runtime),
        other => Err(Failure::config(format!(
            "--scope `{other}` is not workspace, user or org"
        ))),
    }
}

pub async fn secret_command(cmd: SecretCommand) -> Result<(), Failure> {
    let ws = crate::auth::DEFAULT_WORKSPACE;
    match cmd {
        SecretCommand::List { db } => {
            let config = db.config(IpAddr::from([127, 0, 0, 1]), 0, None);
            let store = open_database(&config).await?;
            let org = store.workspace_org(ws).await.map_err(Failure::runtime)?;
            let rows = store
                .list_secrets(ws, crate::auth::ADMIN_USER, org.as_deref())
                .await
                .map_err(Failure::runtime)?;
            for (name, scope, created_at) in rows {
                outln!("{name:<32} {scope:<10} {created_at}");
            }
            store.close().await;
            Ok(())
        }
        SecretCommand::Set { db, scope, name } => {
            if !matches!(scope.as_str(), "workspace" | "user" | "org") {
                return Err(Failure::config(format!(
                    "--scope `{scope}` is not workspace, user or org"
                )));
            }
            let mut value = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut value).map_err(|e| {
                Failure::config(format!("cannot read the value from standard input: {e}"))
            })?;
            let value = value.trim_end_matches(['\r', '\n']);
            if let Err(why) = node_runtime::secrets::check_value(value) {
                return Err(Failure::config(format!(
                    "the secret value (standard input): {why}"
                )));
            }
            let valid = !name.is_empty()
                && name.len() <= 128
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            if !valid {
                return Err(Failure::config(format!(
                    "`{name}` is not a secret name (1-128 of A-Z a-z 0-9 _ - .)"
                )));
            }
            let config = db.config(IpAddr::from([127, 0, 0, 1]), 0, None);
            let cipher = load_cipher(&config)?;
            let store = open_database(&config).await?;
            let owner = secret_owner(&store, &scope).await?;
            let ciphertext = cipher.encrypt(&scope, &owner, &name, value);
            store
                .put_secret(ws, &scope, &owner, &name, &ciphertext)
                .await
                .map_err(Failure::runtime)?;
            store.close().await;
            outln!("set {name} ({scope})");
            Ok(())
        }
        SecretCommand::Delete { db, scope, name } => {
            let config = db.config(IpAddr::from([127, 0, 0, 1]), 0, None);
            let store = open_database(&config).await?;
            let owner = secret_owner(&store, &scope).await?;
            let result = store.delete_secret(ws, &scope, &owner, &name).await;
            store.close().await;
            match result {
                Ok(()) => {
                    outln!("deleted {name} ({scope})");
                    Ok(())
                }
                Err(crate::storage::StoreError::NotFound(_)) => {
                    Err(Failure::config(format!("no {scope} secret named {name}")))
                }
                Err(e) => Err(Failure::runtime(e)),
            }
        }
    }
}
