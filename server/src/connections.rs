//! A workspace's connections at work: resolved for a run (secrets looked
//! up user -> workspace -> org, as provider keys are; values only in
//! memory) into the `http` routes and SQL backends the tools read from
//! their context, and tested on demand.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use node_runtime::connections::ConnectionConfig;
use node_runtime::secrets::{resolve, SecretOwner, SecretSource};
use node_runtime::tool::context::{HttpRoute, SqlBackend};
use node_runtime::wire::ConnectionTestResult;

use crate::sql_tool::SqlxBackend;
use crate::storage::{ConnectionRow, Store, StoreError};

/// What the tools of one run can use.
#[derive(Default)]
pub struct ToolConnections {
    pub http: Vec<(String, Arc<HttpRoute>)>,
    pub sql: Vec<(String, Arc<dyn SqlBackend>)>,
    /// `mcp` connections, ready to start their servers (`crate::mcp`).
    pub mcp: Vec<(String, Arc<crate::mcp::McpLaunch>)>,
    /// Connections that cannot be used, and why.
    pub unavailable: Vec<(String, String)>,
}

/// A stored row's config; a row this server cannot read is reported, not
/// fatal.
pub fn config_of(row: &ConnectionRow) -> Result<ConnectionConfig, String> {
    serde_json::from_str(&row.config).map_err(|e| format!("its stored config cannot be read ({e})"))
}

/// One connection made usable: its secret resolved, its backend built
/// (lazily: nothing is reached yet).
async fn ready(
    name: &str,
    config: ConnectionConfig,
    secrets: &dyn SecretSource,
    owner: &SecretOwner,
    files_root: &Path,
    out: &mut ToolConnections,
) {
    if let Some(mcp) = config.mcp() {
        let names: Vec<String> = config.secrets().into_iter().map(str::to_string).collect();
        match resolve(secrets, owner, &names).await {
            Ok(found) => out.mcp.push((
                name.into(),
                Arc::new(crate::mcp::McpLaunch {
                    workspace_id: owner.workspace_id.clone(),
                    connection: name.into(),
                    config: mcp,
                    secrets: found,
                    files_root: files_root.to_path_buf(),
                }),
            )),
            Err(missing_secret) => out
                .unavailable
                .push((name.into(), missing(&missing_secret.0))),
        }
        return;
    }
    let mut values = Vec::new();
    for secret in config.secrets() {
        let names = [secret.to_string()];
        match resolve(secrets, owner, &names).await {
            Ok(found) => match found.get(secret) {
                Some(v) => values.push((secret.to_string(), v.clone())),
                None => {
                    out.unavailable.push((name.into(), missing(secret)));
                    return;
                }
            },
            Err(_) => {
                out.unavailable.push((name.into(), missing(secret)));
                return;
            }
        }
    }
    match config {
        ConnectionConfig::Http(config) => out.http.push((
            name.into(),
            Arc::new(HttpRoute {
                config,
                credential: values.into_iter().next(),
            }),
        )),
        ConnectionConfig::Postgres { .. } => {
            let url = values
                .first()
                .map(|(_, v)| v.expose().to_string())
                .unwrap_or_default();
            match SqlxBackend::postgres_lazy(&url) {
                Ok(backend) => out.sql.push((name.into(), Arc::new(backend))),
                // The driver's message could echo the URL: name the secret only.
                Err(_) => out.unavailable.push((
                    name.into(),
                    "its URL secret does not hold a postgres:// URL".into(),
                )),
            }
        }
        ConnectionConfig::Sqlite { path } => {
            let file = files_root.join(&path);
            if file.is_file() {
                out.sql
                    .push((name.into(), Arc::new(SqlxBackend::sqlite_lazy(&file))));
            } else {
                out.unavailable.push((
                    name.into(),
                    format!("there is no file `{path}` in the workspace's files directory"),
                ));
            }
        }
        // Returned above, with its secrets kept for redaction.
        ConnectionConfig::Mcp { .. } => {}
    }
}

fn missing(secret: &str) -> String {
    format!(
        "it needs the secret {secret}, which is not set for you, this workspace or its organization"
    )
}

/// Every connection of the owner's workspace, ready for a run's tools.
pub async fn for_run(
    store: &Store,
    secrets: &dyn SecretSource,
    owner: &SecretOwner,
    files_root: &Path,
) -> Result<ToolConnections, StoreError> {
    let mut out = ToolConnections::default();
    for row in store.list_connections(&owner.workspace_id).await? {
        match config_of(&row) {
            Ok(config) => ready(&row.name, config, secrets, owner, files_root, &mut out).await,
            Err(why) => out.unavailable.push((row.name.clone(), why)),
        }
    }
    Ok(out)
}

/// One cheap use of a connection: `SELECT 1` for a database, a GET of the
/// base URL for an API (through `http_request`, with its guard).
pub async fn test(
    row: &ConnectionRow,
    secrets: &dyn SecretSource,
    owner: &SecretOwner,
    files_root: &Path,
    mcp: (&crate::mcp::McpHub, &Store),
) -> ConnectionTestResult {
    let started = Instant::now();
    let done = |ok: bool, message: String| ConnectionTestResult {
        ok,
        message,
        latency_ms: started.elapsed().as_secs_f64() * 1000.0,
    };
    let config = match config_of(row) {
        Ok(c) => c,
        Err(why) => return done(false, why),
    };
    let mut ready_set = ToolConnections::default();
    ready(
        &row.name,
        config,
        secrets,
        owner,
        files_root,
        &mut ready_set,
    )
    .await;
    if let Some((_, why)) = ready_set.unavailable.first() {
        return done(false, why.clone());
    }
    // An MCP server: started (or reused), its tools listed and stored.
    if let Some((_, launch)) = ready_set.mcp.first() {
        let (hub, store) = mcp;
        return match crate::mcp::discover(hub, store, launch).await {
            Ok(d) => {
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                done(
                    true,
                    format!(
                        "{} {} answered over MCP {} with {} tools in {ms:.0} ms",
                        d.server.server_name,
                        d.server.server_version,
                        d.server.protocol_version,
                        d.tools.len()
                    ),
                )
            }
            Err(e) => done(false, e.message),
        };
    }
    if let Some((_, backend)) = ready_set.sql.first() {
        return match backend.query("SELECT 1 AS ok", 5_000).await {
            Ok(_) => done(
                true,
                format!(
                    "answered SELECT 1 in {:.0} ms",
                    started.elapsed().as_secs_f64() * 1000.0
                ),
            ),
            Err(e) => done(false, e.message),
        };
    }
    let Some((name, route)) = ready_set.http.first() else {
        return done(false, "nothing to test".into());
    };
    let env = node_runtime::tool::ToolEnv {
        http: vec![(name.clone(), route.clone())],
        ..Default::default()
    };
    let ctx = node_runtime::tool::ToolContext {
        workspace_id: owner.workspace_id.clone(),
        call_id: "connection-test".into(),
        secrets: Default::default(),
        cancel: tokio_util::sync::CancellationToken::new(),
        env: Arc::new(env),
        attachments: Default::default(),
        progress: Default::default(),
    };
    let input = node_runtime::builtins::http_request::HttpInput {
        url: String::new(),
        connection: Some(name.clone()),
        method: "GET".into(),
        headers: Default::default(),
        body: None,
        timeout_ms: Some(10_000),
    };
    use node_runtime::tool::Tool;
    match node_runtime::builtins::http_request::HttpRequest
        .execute(input, &ctx)
        .await
    {
        Ok(v) => {
            let status = v["status"].as_u64().unwrap_or(0);
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            match status {
                401 | 403 => done(
                    false,
                    format!(
                        "the credential was refused ({status}){}",
                        route
                            .credential
                            .as_ref()
                            .map(|(s, _)| format!(": check the secret {s}"))
                            .unwrap_or_default()
                    ),
                ),
                _ => done(true, format!("answered {status} in {ms:.0} ms")),
            }
        }
        Err(e) => done(false, e.message),
    }
}
