//! MCP, both ways, on the official SDK (`rmcp`, pinned exactly).
//!
//! As a client (this module): an `mcp` connection names a server reached
//! over stdio or streamable HTTP. [`McpHub`] owns the running servers, one
//! per workspace and connection, shared by that workspace's runs: started
//! on first use, restarted with backoff after they die, stopped on
//! shutdown. A refresh ([`discover`]) lists the server's tools and stores
//! each as `mcp.<connection>.<tool>` at a version made of the server's
//! version and a hash of the tool's schemas, so a changed schema is a new
//! version and a recorded run keeps the one it called. [`registry_for`]
//! puts a workspace's stored MCP tools over the built-ins; each is an
//! [`McpTool`], which the executor runs like any other tool (policy,
//! validation, rate limit, output cap, redaction, timeout).
//!
//! Side effects come from the server's annotations, conservatively:
//! `readOnlyHint: true` is `reads`, anything else `writes` (approval
//! needed). Annotations are hints the server gives about itself, not
//! guarantees; an admin can set one tool's class (`mcp_overrides`, with
//! who and when).
//!
//! As a server: [`serve`] (`/mcp`).

pub mod serve;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use futures::future::BoxFuture;
use node_runtime::call_id::canonical_json;
use node_runtime::connections::{HttpAuth, McpConnection, McpTransport};
use node_runtime::envelope::{Attachment, AttachmentKind};
use node_runtime::error::{ErrorCode, ToolError};
use node_runtime::secrets::ResolvedSecrets;
use node_runtime::tool::context::Progress;
use node_runtime::tool::{DynTool, ToolContext, ToolRegistry};
use node_runtime::tool_spec::{Lifecycle, SideEffects, ToolCategory, ToolMetadata, ToolSpec};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest,
    Implementation, ProgressNotificationParam, ProgressToken, ServerResult,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService, ServiceError};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;

use crate::storage::{McpOverrideRow, McpServerRow, McpToolRow, Store, StoreError};

/// How long a server may take to start and answer `initialize` (an
/// `npx -y` server may download its package first).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest wait before restarting a server that keeps dying.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// One `mcp` connection made usable for a run: its config and its
/// secrets' values (in memory only).
pub struct McpLaunch {
    pub workspace_id: String,
    pub connection: String,
    pub config: McpConnection,
    pub secrets: ResolvedSecrets,
    /// The workspace's files directory: a stdio server's working directory.
    pub files_root: PathBuf,
}

impl McpLaunch {
    /// Config and secret values: a change restarts the server.
    fn fingerprint(&self) -> blake3::Hash {
        let mut h = blake3::Hasher::new();
        h.update(
            serde_json::to_string(&self.config)
                .unwrap_or_default()
                .as_bytes(),
        );
        for name in self.config.transport.secrets() {
            h.update(name.as_bytes());
            h.update(&[0]);
            if let Some(v) = self.secrets.get(name) {
                h.update(v.expose().as_bytes());
            }
            h.update(&[0]);
        }
        h.finalize()
    }
}

/// What the client tells servers about itself, and where their
/// notifications go: a call's progress to that call's [`Progress`].
#[derive(Clone)]
struct Handler {
    connection: String,
    progress: ProgressRoutes,
}

/// A server's calls in flight: progress token -> where the call reports.
type ProgressRoutes = Arc<std::sync::Mutex<HashMap<ProgressToken, Progress>>>;

impl rmcp::ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("glassbox", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let to = self
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&params.progress_token)
            .cloned();
        match to {
            Some(p) => p.report(params.progress, params.total, params.message),
            None => tracing::debug!(connection = %self.connection, "progress of no call in flight"),
        }
    }
}

/// A running server.
pub struct LiveServer {
    service: RunningService<RoleClient, Handler>,
    fingerprint: blake3::Hash,
    started: Instant,
    pub server_name: String,
    pub server_version: String,
    pub protocol_version: String,
}

impl LiveServer {
    /// Not stopped, and its transport still open (a server that exited
    /// closes it).
    fn alive(&self) -> bool {
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }
}

#[derive(Default)]
struct Slot {
    live: Option<Arc<LiveServer>>,
    /// Starts that failed or servers that died since the last healthy one.
    failures: u32,
    last_failure: Option<Instant>,
}

/// (workspace, connection) -> its server's slot.
type Slots = HashMap<(String, String), Arc<tokio::sync::Mutex<Slot>>>;

/// The running MCP servers of every workspace.
pub struct McpHub {
    slots: std::sync::Mutex<Slots>,
    /// Variables a stdio server gets from the server's environment
    /// (`PATH`, `HOME`, `LANG`, `TMPDIR`; `RunsConfig::mcp_inherit_env`).
    inherit_env: Vec<(String, String)>,
    /// Hosts the HTTP transport may reach besides the connection's own.
    http_allow_hosts: Vec<String>,
}

/// Why a server cannot be used: a transient error (the next call tries
/// again).
fn unreachable(connection: &str, why: impl std::fmt::Display) -> ToolError {
    ToolError::new(
        ErrorCode::NetworkError,
        format!("the MCP server of connection `{connection}` cannot be reached: {why}"),
    )
    .with_details(json!({ "reason": "MCP_UNAVAILABLE", "connection": connection }))
}

fn backoff(failures: u32) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let ms = 250u64.saturating_mul(1 << failures.min(8).saturating_sub(1));
    Duration::from_millis(ms).min(MAX_BACKOFF)
}

impl McpHub {
    pub fn new(inherit_env: Vec<(String, String)>, http_allow_hosts: Vec<String>) -> Self {
        Self {
            slots: Default::default(),
            inherit_env,
            http_allow_hosts,
        }
    }

    fn slot(&self, workspace_id: &str, connection: &str) -> Arc<tokio::sync::Mutex<Slot>> {
        self.slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((workspace_id.to_string(), connection.to_string()))
            .or_default()
            .clone()
    }

    /// The running server of a connection, started (or restarted, after
    /// a backoff when it keeps dying) when needed.
    pub async fn server(&self, launch: &McpLaunch) -> Result<Arc<LiveServer>, ToolError> {
        let slot = self.slot(&launch.workspace_id, &launch.connection);
        let mut slot = slot.lock().await;
        let fingerprint = launch.fingerprint();
        if let Some(live) = slot.live.clone() {
            if live.alive() && live.fingerprint == fingerprint {
                if live.started.elapsed() > Duration::from_secs(60) {
                    slot.failures = 0;
                }
                return Ok(live.clone());
            }
            if !live.alive() {
                tracing::warn!(connection = %launch.connection, "the MCP server exited; starting it again");
                slot.failures += 1;
                slot.last_failure = Some(Instant::now());
            }
        }
        if let Some(old) = slot.live.take() {
            old.service.cancellation_token().cancel();
        }
        let wait = backoff(slot.failures).saturating_sub(
            slot.last_failure
                .map(|t| t.elapsed())
                .unwrap_or(MAX_BACKOFF),
        );
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        match self.start(launch, fingerprint).await {
            Ok(live) => {
                let live = Arc::new(live);
                slot.live = Some(live.clone());
                Ok(live)
            }
            Err(e) => {
                slot.failures += 1;
                slot.last_failure = Some(Instant::now());
                Err(e)
            }
        }
    }

    async fn start(
        &self,
        launch: &McpLaunch,
        fingerprint: blake3::Hash,
    ) -> Result<LiveServer, ToolError> {
        let name = &launch.connection;
        let handler = Handler {
            connection: name.clone(),
            progress: Default::default(),
        };
        let service = match &launch.config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let dir = match cwd {
                    Some(c) => launch.files_root.join(c),
                    None => launch.files_root.clone(),
                };
                std::fs::create_dir_all(&dir)
                    .map_err(|e| unreachable(name, format!("its working directory: {e}")))?;
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).env_clear().current_dir(&dir);
                for (k, v) in &self.inherit_env {
                    cmd.env(k, v);
                }
                for (var, secret) in env {
                    let value = launch.secrets.get(secret).ok_or_else(|| {
                        ToolError::new(
                            ErrorCode::AuthRequired,
                            format!("connection `{name}` needs the secret {secret}"),
                        )
                    })?;
                    cmd.env(var, value.expose());
                }
                let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
                wrapped
                    .wrap(process_wrap::tokio::ProcessGroup::leader())
                    .wrap(process_wrap::tokio::KillOnDrop);
                let (transport, stderr) = rmcp::transport::TokioChildProcess::builder(wrapped)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| unreachable(name, format!("`{command}` did not start: {e}")))?;
                if let Some(stderr) = stderr {
                    spawn_stderr_log(name.clone(), stderr, launch.secrets.clone());
                }
                tokio::time::timeout(START_TIMEOUT, handler.serve(transport))
                    .await
                    .map_err(|_| unreachable(name, "it did not answer `initialize` within 60 s"))?
                    .map_err(|e| unreachable(name, e))?
            }
            McpTransport::Http { url, auth } => {
                let client = self
                    .http_client(url)
                    .await
                    .map_err(|e| unreachable(name, e))?;
                let mut config =
                    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                        url.as_str(),
                    );
                match auth {
                    None => {}
                    Some(a) => {
                        let value = launch.secrets.get(a.secret()).ok_or_else(|| {
                            ToolError::new(
                                ErrorCode::AuthRequired,
                                format!("connection `{name}` needs the secret {}", a.secret()),
                            )
                        })?;
                        match a {
                            HttpAuth::Bearer { .. } => {
                                config.auth_header = Some(value.expose().to_string());
                            }
                            HttpAuth::Header { header, .. } => {
                                let header =
                                    reqwest::header::HeaderName::from_bytes(header.as_bytes())
                                        .map_err(|e| {
                                            unreachable(name, format!("header name: {e}"))
                                        })?;
                                let mut v = reqwest::header::HeaderValue::from_str(value.expose())
                                    .map_err(|_| {
                                        unreachable(name, "the secret is not a valid header value")
                                    })?;
                                v.set_sensitive(true);
                                config.custom_headers.insert(header, v);
                            }
                            _ => return Err(unreachable(name, "only bearer or header auth")),
                        }
                    }
                }
                let transport =
                    rmcp::transport::StreamableHttpClientTransport::with_client(client, config);
                tokio::time::timeout(START_TIMEOUT, handler.serve(transport))
                    .await
                    .map_err(|_| unreachable(name, "it did not answer `initialize` within 60 s"))?
                    .map_err(|e| {
                        unreachable(
                            name,
                            launch
                                .secrets
                                .redact_str(&e.to_string())
                                .unwrap_or_else(|| e.to_string()),
                        )
                    })?
            }
        };
        let info = service.peer_info();
        let (server_name, server_version, protocol_version) = match info.as_deref() {
            Some(i) => (
                i.server_info
                    .as_ref()
                    .map(|s| s.name.clone())
                    .unwrap_or_default(),
                i.server_info
                    .as_ref()
                    .map(|s| s.version.clone())
                    .unwrap_or_default(),
                i.protocol_version.to_string(),
            ),
            None => Default::default(),
        };
        tracing::info!(connection = %name, server = %server_name, version = %server_version, protocol = %protocol_version, "MCP server started");
        Ok(LiveServer {
            service,
            fingerprint,
            started: Instant::now(),
            server_name,
            server_version,
            protocol_version,
        })
    }

    /// A client that reaches only the checked address of `url` (the same
    /// guard as `http_request`): the URL's own host is allowed even when
    /// internal, as for an `http` connection; no redirects, no proxy.
    async fn http_client(&self, url: &str) -> Result<reqwest::Client, String> {
        let mut allow = self.http_allow_hosts.clone();
        allow.extend(node_runtime::connections::url_authority(url));
        let egress = node_runtime::model::Egress {
            allow_hosts: allow,
            // The transport keeps a server-sent-event stream open; a call's
            // own deadline is the executor's.
            timeout: Duration::from_secs(3600),
            ..Default::default()
        };
        egress
            .client_for("mcp", url)
            .await
            .map_err(|e| e.to_string())
    }

    /// Stops every server (server shutdown).
    pub async fn shutdown(&self) {
        let slots: Vec<_> = self
            .slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .map(|(_, s)| s)
            .collect();
        for slot in slots {
            if let Some(live) = slot.lock().await.live.take() {
                live.service.cancellation_token().cancel();
            }
        }
    }

    /// Stops one connection's server (the connection changed or was
    /// removed).
    pub async fn stop(&self, workspace_id: &str, connection: &str) {
        let slot = self
            .slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(workspace_id.to_string(), connection.to_string()));
        if let Some(slot) = slot {
            if let Some(live) = slot.lock().await.live.take() {
                live.service.cancellation_token().cancel();
            }
        }
    }
}

/// A stdio server's stderr, line by line into the log, its secrets
/// redacted.
fn spawn_stderr_log(
    connection: String,
    stderr: tokio::process::ChildStderr,
    secrets: ResolvedSecrets,
) {
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let line = secrets.redact_str(&line).unwrap_or(line);
            tracing::info!(target: "glassbox::mcp::stderr", connection = %connection, "{line}");
        }
    });
}

/// What a refresh found.
pub struct Discovery {
    pub server: McpServerRow,
    pub tools: Vec<McpToolRow>,
}

/// The registry name of a server's tool.
pub fn tool_name(connection: &str, tool: &str) -> String {
    format!("mcp.{connection}.{tool}")
}

/// `<server version, or 0.0.0 when it is not semver>+<12 hex of the
/// schemas' hash>`.
fn version_of(server_version: &str, input: &Value, output: &Value) -> String {
    let base = semver::Version::parse(server_version)
        .map(|v| format!("{}.{}.{}", v.major, v.minor, v.patch))
        .unwrap_or_else(|_| "0.0.0".into());
    let hash = blake3::hash(canonical_json(&json!({"input": input, "output": output})).as_bytes());
    format!("{base}+{}", &hash.to_hex()[..12])
}

/// A discovered tool as a [`ToolSpec`], its class from the annotations.
fn spec_of(
    connection: &str,
    server_version: &str,
    tool: &rmcp::model::Tool,
    timeout_ms: u64,
) -> ToolSpec {
    let input = Value::Object(tool.input_schema.as_ref().clone());
    let output = tool
        .output_schema
        .as_ref()
        .map(|s| Value::Object(s.as_ref().clone()))
        .unwrap_or_else(|| json!({}));
    let read_only = tool
        .annotations
        .as_ref()
        .and_then(|a| a.read_only_hint)
        .unwrap_or(false);
    let mut metadata = ToolMetadata::new(ToolCategory::Api);
    metadata.side_effects = if read_only {
        SideEffects::Reads
    } else {
        SideEffects::Writes
    };
    metadata.timeout_ms = timeout_ms;
    metadata.effect_description = Some(if read_only {
        "the MCP server marks it read-only (readOnlyHint, a hint from the server)".into()
    } else {
        "the MCP server does not mark it read-only, so it counts as a write".into()
    });
    let description = tool
        .description
        .as_deref()
        .map(str::to_string)
        .or_else(|| tool.title.clone())
        .unwrap_or_default();
    ToolSpec {
        name: tool_name(connection, &tool.name),
        version: version_of(server_version, &input, &output),
        description,
        input_schema: input,
        output_schema: output,
        metadata,
    }
}

/// Lists a connection's tools (starting its server if needed) and stores
/// them as the current versions.
pub async fn discover(
    hub: &McpHub,
    store: &Store,
    launch: &McpLaunch,
) -> Result<Discovery, ToolError> {
    let live = hub.server(launch).await?;
    let tools = tokio::time::timeout(START_TIMEOUT, live.service.peer().list_all_tools())
        .await
        .map_err(|_| unreachable(&launch.connection, "it did not list its tools within 60 s"))?
        .map_err(|e| unreachable(&launch.connection, e))?;
    let at = crate::storage::now();
    let mut rows = Vec::new();
    for t in &tools {
        let spec = spec_of(
            &launch.connection,
            &live.server_version,
            t,
            launch.config.timeout_ms(),
        );
        rows.push(McpToolRow {
            connection: launch.connection.clone(),
            tool: t.name.to_string(),
            version: spec.version.clone(),
            spec: serde_json::to_string(&spec).unwrap_or_default(),
            annotations: serde_json::to_string(&t.annotations).unwrap_or_else(|_| "null".into()),
            current: 1,
            discovered_at: at.clone(),
        });
    }
    let server = McpServerRow {
        connection: launch.connection.clone(),
        server_name: live.server_name.clone(),
        server_version: live.server_version.clone(),
        protocol_version: live.protocol_version.clone(),
        refreshed_at: at,
    };
    store
        .record_mcp_discovery(&launch.workspace_id, &server, &rows)
        .await
        .map_err(|e| ToolError::unknown(format!("cannot store the discovered tools: {e}")))?;
    Ok(Discovery {
        server,
        tools: rows,
    })
}

/// Where an MCP tool of the registry comes from (for the tool list).
#[derive(Debug, Clone)]
pub struct McpSource {
    pub connection: String,
    /// The server's own name for the tool.
    pub tool: String,
    pub server: Option<McpServerRow>,
    pub annotations: Value,
    pub override_row: Option<McpOverrideRow>,
}

/// The built-ins plus a workspace's MCP tools. `launches` are the
/// workspace's usable `mcp` connections for a run (none for listing and
/// validation: nothing is started then); a tool whose connection is not
/// among them answers why when called.
pub async fn registry_for(
    base: &ToolRegistry,
    store: &Store,
    hub: &Arc<McpHub>,
    workspace_id: &str,
    launches: &[(String, Arc<McpLaunch>)],
    unavailable: &[(String, String)],
) -> Result<(ToolRegistry, HashMap<String, McpSource>), StoreError> {
    let rows = store.mcp_tools(workspace_id).await?;
    if rows.is_empty() {
        return Ok((base.layered(), HashMap::new()));
    }
    let servers = store.mcp_servers(workspace_id).await?;
    let overrides = store.mcp_overrides(workspace_id).await?;
    let mut registry = base.layered();
    let mut sources = HashMap::new();
    for row in rows {
        let Ok(mut spec) = serde_json::from_str::<ToolSpec>(&row.spec) else {
            tracing::warn!(tool = %row.tool, "a stored MCP tool spec cannot be read; skipped");
            continue;
        };
        let override_row = overrides
            .iter()
            .find(|o| o.connection == row.connection && o.tool == row.tool)
            .cloned();
        if let Some(o) = &override_row {
            if let Ok(class) = serde_json::from_value::<SideEffects>(json!(o.side_effects)) {
                spec.metadata.side_effects = class;
                spec.metadata.effect_description =
                    Some(format!("set to {class} by {} at {}", o.set_by, o.set_at));
            }
        }
        spec.metadata.lifecycle = if row.current == 1 {
            Lifecycle::Active
        } else {
            Lifecycle::Deprecated
        };
        let launch = launches
            .iter()
            .find(|(n, _)| *n == row.connection)
            .map(|(_, l)| l.clone());
        let why = unavailable
            .iter()
            .find(|(n, _)| *n == row.connection)
            .map(|(_, w)| w.clone());
        let key = spec.key();
        let tool = McpTool {
            hub: hub.clone(),
            connection: row.connection.clone(),
            tool: row.tool.clone(),
            launch,
            unavailable: why,
        };
        match registry.register_dyn(spec, Arc::new(tool)) {
            Ok(_) => {
                sources.insert(
                    key,
                    McpSource {
                        connection: row.connection.clone(),
                        tool: row.tool.clone(),
                        server: servers
                            .iter()
                            .find(|s| s.connection == row.connection)
                            .cloned(),
                        annotations: serde_json::from_str(&row.annotations).unwrap_or(Value::Null),
                        override_row,
                    },
                );
            }
            Err(e) => tracing::warn!(error = %e, "an MCP tool cannot be registered; skipped"),
        }
    }
    Ok((registry, sources))
}

/// One tool of an MCP server, as the executor runs it.
pub struct McpTool {
    hub: Arc<McpHub>,
    connection: String,
    /// The server's own name for the tool.
    tool: String,
    launch: Option<Arc<McpLaunch>>,
    /// Why the connection cannot be used in this run, when it cannot.
    unavailable: Option<String>,
}

impl DynTool for McpTool {
    fn side_effects_for(&self, _input: &Value) -> Option<SideEffects> {
        None
    }

    fn call<'a>(
        &'a self,
        input: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let Some(launch) = &self.launch else {
                let why = self.unavailable.clone().unwrap_or_else(|| {
                    format!(
                        "this workspace has no MCP connection named `{}`",
                        self.connection
                    )
                });
                return Err(ToolError::new(
                    ErrorCode::AuthRequired,
                    format!("connection `{}` cannot be used: {why}", self.connection),
                )
                .with_details(json!({ "connection": self.connection })));
            };
            let Value::Object(arguments) = input.clone() else {
                return Err(ToolError::validation("an MCP tool takes a JSON object"));
            };
            let live = self.hub.server(launch).await?;
            let params = CallToolRequestParams::new(self.tool.clone()).with_arguments(arguments);
            let result = call(&live, params, &ctx.progress).await;
            match result {
                Ok(r) => {
                    let (output, attachments) = result_of(r, &launch.secrets)?;
                    ctx.attachments.add(attachments);
                    Ok(output)
                }
                Err(ServiceError::TransportClosed) | Err(ServiceError::TransportSend(_)) => {
                    Err(ToolError::new(
                        ErrorCode::NetworkError,
                        format!(
                            "the MCP server of connection `{}` stopped during the call; the next call starts it again",
                            self.connection
                        ),
                    )
                    .with_details(json!({ "reason": "MCP_SERVER_EXITED", "connection": self.connection })))
                }
                Err(ServiceError::McpError(e)) => {
                    let message = launch
                        .secrets
                        .redact_str(&e.message)
                        .unwrap_or_else(|| e.message.to_string());
                    let code = if e.code == rmcp::model::ErrorCode::INVALID_PARAMS {
                        ErrorCode::ValidationError
                    } else {
                        ErrorCode::ProviderError
                    };
                    Err(ToolError::new(code, format!("the MCP server refused the call: {message}"))
                        .with_details(json!({ "reason": "MCP_ERROR", "mcp_code": e.code.0 })))
                }
                Err(other) => Err(unreachable(&self.connection, other)),
            }
        })
    }
}

/// One `tools/call`, its progress notifications routed to `progress`.
/// Dropped before the answer (the executor's deadline, a run's cancel),
/// the server is sent `notifications/cancelled` for the request.
async fn call(
    live: &LiveServer,
    params: CallToolRequestParams,
    progress: &Progress,
) -> Result<rmcp::model::CallToolResult, ServiceError> {
    let peer = live.service.peer();
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
        .await?;
    let routes = live.service.service().progress.clone();
    let token = handle.progress_token.clone();
    routes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(token.clone(), progress.clone());
    let mut guard = InFlight {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
        routes,
        token,
    };
    let answer = handle.await_response().await;
    guard.id = None;
    match answer? {
        ServerResult::CallToolResult(r) => Ok(r),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// A call in flight: on drop its progress route goes, and, unless it was
/// answered, the server is told to stop.
struct InFlight {
    peer: rmcp::Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
    routes: ProgressRoutes,
    token: ProgressToken,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.token);
        if let Some(id) = self.id.take() {
            let peer = self.peer.clone();
            let notification = rmcp::model::CancelledNotification::new(
                rmcp::model::CancelledNotificationParam::new(
                    Some(id),
                    Some("the call's deadline passed or its run was cancelled".into()),
                ),
            );
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    let _ = peer.send_notification(notification.into()).await;
                });
            }
        }
    }
}

/// A `tools/call` result as a tool output: `structuredContent` when the
/// server sent it, else `{"text": <the text content>}`; images, audio and
/// resources become attachments (data: URLs). `isError` is an error with
/// the text.
fn result_of(
    r: rmcp::model::CallToolResult,
    secrets: &ResolvedSecrets,
) -> Result<(Value, Vec<Attachment>), ToolError> {
    let mut text = Vec::new();
    let mut attachments = Vec::new();
    for block in &r.content {
        let v = serde_json::to_value(block).unwrap_or(Value::Null);
        match v.get("type").and_then(Value::as_str) {
            Some("text") => text.push(v["text"].as_str().unwrap_or_default().to_string()),
            Some(kind @ ("image" | "audio")) => {
                let mime = v["mimeType"].as_str().unwrap_or("application/octet-stream");
                let data = v["data"].as_str().unwrap_or_default();
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .map(|b| b.len() as u64)
                    .ok();
                attachments.push(Attachment {
                    kind: if kind == "image" {
                        AttachmentKind::Image
                    } else {
                        AttachmentKind::Blob
                    },
                    url: format!("data:{mime};base64,{data}"),
                    content_type: Some(mime.to_string()),
                    bytes,
                });
            }
            Some(_) => {
                let raw = serde_json::to_string(&v).unwrap_or_default();
                attachments.push(Attachment {
                    kind: AttachmentKind::Blob,
                    url: format!(
                        "data:application/json;base64,{}",
                        base64::engine::general_purpose::STANDARD.encode(raw.as_bytes())
                    ),
                    content_type: Some("application/json".into()),
                    bytes: Some(raw.len() as u64),
                });
            }
            None => {}
        }
    }
    let text = text.join("\n");
    let text = secrets.redact_str(&text).unwrap_or(text);
    if r.is_error == Some(true) {
        return Err(ToolError::new(
            ErrorCode::ProviderError,
            format!("the MCP tool reported an error: {text}"),
        )
        .with_details(json!({ "reason": "MCP_TOOL_ERROR" })));
    }
    let mut output = match r.structured_content {
        Some(v) => v,
        None => json!({ "text": text }),
    };
    secrets.redact_value(&mut output);
    Ok((output, attachments))
}
