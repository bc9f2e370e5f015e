//! The example workflows: `examples/*.json` (`--examples-dir`), read at
//! every start and kept in memory for the gallery (`GET /api/v1/examples`,
//! "New from example"), and on first start (a default workspace with no
//! workflows) stored in the default workspace with what they use: the
//! example shop database and its connection `shop`, the example API's
//! token and connection (`example_api`), and the `everything` MCP
//! connection (which needs Node.js when used).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use node_runtime::connections::{ConnectionConfig, McpTransport};
use node_runtime::graph::Workflow;

use crate::{AppState, Store};

/// The official MCP test server the example "Call an MCP server" uses,
/// pinned like the README's instructions.
pub const EVERYTHING_PACKAGE: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// The example workflows of `dir` (`*.json`, by file name), each under its
/// document's `id`. A file that does not parse, or repeats an id, is
/// skipped with a warning; a missing directory is no examples.
pub fn read_dir(dir: &Path) -> Vec<Workflow> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for path in paths {
        let loaded = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|text| Workflow::from_json(&text).map_err(|e| e.to_string()));
        match loaded {
            Ok(wf) if !seen.insert(wf.id.clone()) => {
                tracing::warn!(file = %path.display(), id = %wf.id, "skipping example workflow: another example has its id");
            }
            Ok(wf) => out.push(wf),
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "skipping example workflow")
            }
        }
    }
    out
}

/// First start (the default workspace has no workflows): stores the
/// examples there under fresh ids, with the shop database, the example
/// API's token and connection, and the `everything` MCP connection. With
/// no examples, nothing is added. Failures are logged and leave the rest of
/// the start alone.
pub async fn first_start(state: &AppState, dir: &Path, local: SocketAddr) {
    let db = state.db();
    let ws = crate::auth::DEFAULT_WORKSPACE;
    let examples = state.examples();
    if examples.is_empty() {
        return;
    }
    match db.list_workflows(ws).await {
        Ok(existing) if existing.is_empty() => {}
        _ => return,
    }
    example_database(db, dir, &state.config().data_dir).await;
    crate::example_api::provision(state, local).await;
    everything_connection(db).await;
    // Newest first in the list: stored last to first, they list in the
    // gallery's order.
    for example in examples.iter().rev() {
        let mut wf = example.clone();
        wf.id = crate::storage::new_id();
        match db.create_workflow(ws, &wf).await {
            Ok(_) => tracing::info!(example = %example.id, "loaded example workflow"),
            Err(e) => {
                tracing::warn!(example = %example.id, error = %e, "cannot store example workflow")
            }
        }
    }
}

/// The example shop database (`examples/files/shop.sql`) built into the
/// workspace's files and its SQLite connection `shop`.
async fn example_database(db: &Store, dir: &Path, data_dir: &Path) {
    use sqlx::Connection;
    let ws = crate::auth::DEFAULT_WORKSPACE;
    let Ok(sql) = std::fs::read_to_string(dir.join("files").join("shop.sql")) else {
        return;
    };
    let files = data_dir.join("files").join(ws);
    let file = files.join("shop.db");
    if !file.exists() {
        let built = async {
            std::fs::create_dir_all(&files).map_err(|e| e.to_string())?;
            let url = format!("sqlite://{}?mode=rwc", file.display());
            let mut conn = sqlx::SqliteConnection::connect(&url)
                .await
                .map_err(|e| e.to_string())?;
            sqlx::raw_sql(&sql)
                .execute(&mut conn)
                .await
                .map_err(|e| e.to_string())?;
            conn.close().await.map_err(|e| e.to_string())
        }
        .await;
        if let Err(e) = built {
            tracing::warn!(error = %e, "cannot build the example database");
            let _ = std::fs::remove_file(&file);
            return;
        }
    }
    let config = r#"{"kind":"sqlite","path":"shop.db"}"#;
    if let Err(e) = db.insert_connection(ws, "shop", "sqlite", config).await {
        tracing::warn!(error = %e, "cannot add the example connection `shop`");
    }
}

/// The stdio MCP connection `everything` (`npx -y` the official test
/// server). Nothing starts now: the server is started on first use (a
/// refresh in Settings -> Connections, or a run calling one of its tools).
async fn everything_connection(db: &Store) {
    let config = ConnectionConfig::Mcp {
        transport: McpTransport::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), EVERYTHING_PACKAGE.into()],
            env: Default::default(),
            cwd: None,
        },
        timeout_ms: None,
    };
    let added = match serde_json::to_string(&config) {
        Ok(text) => db
            .insert_connection(
                crate::auth::DEFAULT_WORKSPACE,
                "everything",
                config.kind(),
                &text,
            )
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = added {
        tracing::warn!(error = %e, "cannot add the example connection `everything`");
    }
}
