//! `glassbox connection ...`: the default workspace's connections, as the
//! API has them (`crate::connections`). `add` takes the config as JSON,
//! the same shape `POST /api/v1/connections` takes.

use std::net::IpAddr;

use clap::Subcommand;
use node_runtime::connections::{name_ok, ConnectionConfig};
use node_runtime::secrets::SecretOwner;

use super::{load_cipher, open_database, DbArgs, Failure};

#[derive(Subcommand)]
pub enum ConnectionCommand {
    /// List connections: name, kind and config (configs name secrets, never hold them).
    List {
        #[command(flatten)]
        db: DbArgs,
    },
    /// Add a connection, e.g. `glassbox connection add shop '{"kind":"sqlite","path":"shop.db"}'`.
    Add {
        #[command(flatten)]
        db: DbArgs,
        name: String,
        /// The config as JSON: `{"kind":"http","base_url":...,"auth":{"scheme":"bearer","secret":"API_TOKEN"}}`,
        /// `{"kind":"postgres","url_secret":"PG_URL"}` or `{"kind":"sqlite","path":"file.db"}`.
        config: String,
    },
    /// Use a connection once (`SELECT 1`, or a GET of the API's base URL) and say how it went.
    Test {
        #[command(flatten)]
        db: DbArgs,
        name: String,
    },
    /// Remove a connection.
    Remove {
        #[command(flatten)]
        db: DbArgs,
        name: String,
    },
}

pub async fn connection_command(cmd: ConnectionCommand) -> Result<(), Failure> {
    let ws = crate::auth::DEFAULT_WORKSPACE;
    let localhost = IpAddr::from([127, 0, 0, 1]);
    match cmd {
        ConnectionCommand::List { db } => {
            let store = open_database(&db.config(localhost, 0, None)).await?;
            let rows = store.list_connections(ws).await.map_err(Failure::runtime);
            store.close().await;
            for row in rows? {
                outln!("{:<24} {:<9} {}", row.name, row.kind, row.config);
            }
            Ok(())
        }
        ConnectionCommand::Add { db, name, config } => {
            if !name_ok(&name) {
                return Err(Failure::config(format!(
                    "`{name}` is not a connection name (1-128 of A-Z a-z 0-9 _ - .)"
                )));
            }
            let parsed: ConnectionConfig = serde_json::from_str(&config).map_err(|e| {
                Failure::config(format!("the config is not a connection config: {e}"))
            })?;
            parsed.validate().map_err(|e| {
                Failure::config(format!(
                    "config{}: {}",
                    e.path.trim_start_matches("/config"),
                    e.message
                ))
            })?;
            let text = serde_json::to_string(&parsed).map_err(Failure::runtime)?;
            let store = open_database(&db.config(localhost, 0, None)).await?;
            let added = store
                .insert_connection(ws, &name, parsed.kind(), &text)
                .await
                .map_err(Failure::runtime);
            store.close().await;
            if !added? {
                return Err(Failure::config(format!("a connection named {name} exists")));
            }
            outln!("added {name} ({})", parsed.kind());
            Ok(())
        }
        ConnectionCommand::Test { db, name } => {
            let config = db.config(localhost, 0, None);
            let cipher = load_cipher(&config)?;
            let store = open_database(&config).await?;
            let result = async {
                let row = store.connection(ws, &name).await.map_err(|e| match e {
                    crate::storage::StoreError::NotFound(_) => {
                        Failure::config(format!("no connection named {name}"))
                    }
                    other => Failure::runtime(other),
                })?;
                let org = store.workspace_org(ws).await.map_err(Failure::runtime)?;
                let owner = SecretOwner {
                    workspace_id: ws.into(),
                    user_id: Some(crate::auth::ADMIN_USER.into()),
                    org_id: org,
                };
                let secrets = crate::secrets::StoreSecrets {
                    store: store.clone(),
                    cipher,
                };
                let files = config.data_dir.join("files").join(ws);
                let runs = crate::config::RunsConfig::from_config(&config);
                let hub = crate::mcp::McpHub::new(runs.mcp_inherit_env, runs.http_allow_hosts);
                let result =
                    crate::connections::test(&row, &secrets, &owner, &files, (&hub, &store)).await;
                hub.shutdown().await;
                Ok(result)
            }
            .await;
            store.close().await;
            let result = result?;
            outln!(
                "{}: {}",
                if result.ok { "ok" } else { "failed" },
                result.message
            );
            if result.ok {
                Ok(())
            } else {
                Err(Failure::runtime(format!(
                    "connection {name} did not answer"
                )))
            }
        }
        ConnectionCommand::Remove { db, name } => {
            let store = open_database(&db.config(localhost, 0, None)).await?;
            let result = store.delete_connection(ws, &name).await;
            store.close().await;
            match result {
                Ok(()) => {
                    outln!("removed {name}");
                    Ok(())
                }
                Err(crate::storage::StoreError::NotFound(_)) => {
                    Err(Failure::config(format!("no connection named {name}")))
                }
                Err(e) => Err(Failure::runtime(e)),
            }
        }
    }
}
