//! `glassbox tool ...`: the registry, invocation records and the decisions
//! on pending writes.

use std::net::IpAddr;

use clap::Subcommand;

use super::{open_database, registry, word, DbArgs, Failure};

#[derive(Subcommand)]
pub enum ToolCommand {
    /// List the tools available for new nodes.
    List {
        /// Only this category (api, code, data, search, utility).
        #[arg(long)]
        category: Option<String>,
        /// Include deprecated versions.
        #[arg(long)]
        include_deprecated: bool,
    },
    /// Show one tool version: metadata and schemas.
    Show {
        /// `name@version`.
        tool: String,
    },
    /// List invocation records of the default workspace.
    Invocations {
        #[command(flatten)]
        db: DbArgs,
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        tool: Option<String>,
        #[arg(long)]
        run: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// Approve a pending write (by its approval token).
    Approve {
        #[command(flatten)]
        db: DbArgs,
        token: String,
    },
    /// Reject a pending write, with a reason.
    Reject {
        #[command(flatten)]
        db: DbArgs,
        token: String,
        #[arg(long)]
        reason: String,
    },
}

pub async fn tool_command(cmd: ToolCommand) -> Result<(), Failure> {
    let ws = crate::auth::DEFAULT_WORKSPACE;
    match cmd {
        ToolCommand::List {
            category,
            include_deprecated,
        } => {
            let category = category
                .map(|c| {
                    serde_json::from_value(serde_json::Value::String(c.clone())).map_err(|_| {
                        Failure::config(format!(
                            "--category `{c}` is not one of api, code, data, search, utility"
                        ))
                    })
                })
                .transpose()?;
            let filter = node_runtime::tool::registry::ListFilter {
                category,
                text: None,
                include_deprecated,
            };
            for t in registry().list(&filter) {
                let m = &t.spec.metadata;
                outln!(
                    "{:<24} {:<8} {:<7} {:<10} {}",
                    t.spec.key(),
                    word(m.category),
                    word(m.side_effects),
                    word(m.lifecycle),
                    t.spec.description
                );
            }
            Ok(())
        }
        ToolCommand::Show { tool } => {
            let (name, version) = node_runtime::tool_spec::split_tool_ref(&tool)
                .ok_or_else(|| Failure::config(format!("`{tool}` is not name@version")))?;
            let t = registry().get(name, version).map_err(Failure::config)?;
            outln!(
                "{}",
                serde_json::to_string_pretty(&t.spec).unwrap_or_default()
            );
            Ok(())
        }
        ToolCommand::Invocations {
            db,
            status,
            tool,
            run,
            limit,
        } => {
            let config = db.config(IpAddr::from([127, 0, 0, 1]), 0, None);
            let store = open_database(&config).await?;
            let filter = crate::storage::InvocationFilter {
                status,
                tool,
                run_id: run,
                limit,
                ..Default::default()
            };
            let rows = store
                .list_invocations(ws, &filter)
                .await
                .map_err(Failure::runtime)?
                .items;
            for r in &rows {
                outln!(
                    "{}  {:<10} {}@{}  approval={}  run={}",
                    r.created_at,
                    r.status,
                    r.tool_name,
                    r.tool_version,
                    r.approval_status.as_deref().unwrap_or("-"),
                    r.run_id
                );
            }
            store.close().await;
            Ok(())
        }
        ToolCommand::Approve { db, token } => decide_cli(db, &token, "approved", None).await,
        ToolCommand::Reject { db, token, reason } => {
            if reason.trim().is_empty() {
                return Err(Failure::config("--reason must not be empty"));
            }
            decide_cli(db, &token, "denied", Some(reason)).await
        }
    }
}

/// Records a decision in the database; a server waiting on it picks it up.
pub async fn decide_cli(
    db: DbArgs,
    token: &str,
    status: &str,
    note: Option<String>,
) -> Result<(), Failure> {
    let config = db.config(IpAddr::from([127, 0, 0, 1]), 0, None);
    let store = open_database(&config).await?;
    let result = store
        .decide_approval(
            crate::auth::DEFAULT_WORKSPACE,
            token,
            status,
            "cli",
            note.as_deref(),
        )
        .await;
    store.close().await;
    match result {
        Ok(row) => {
            outln!(
                "{} {} ({} on run {})",
                row.status,
                row.call_id,
                row.tool,
                row.run_id
            );
            Ok(())
        }
        Err(crate::storage::StoreError::NotFound(_)) => {
            Err(Failure::config(format!("no approval with token {token}")))
        }
        Err(crate::storage::StoreError::Conflict { .. }) => {
            Err(Failure::config("that approval was already decided"))
        }
        Err(e) => Err(Failure::runtime(e)),
    }
}
