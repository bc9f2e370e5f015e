//! What a tool call receives from its host besides its input: the
//! per-workspace settings (`ToolEnv`: HTTP allow-list, files root, SQL
//! connections) and the per-call [`ToolContext`].
//!
//! The host's SQL connection is a [`SqlBackend`] declared here, so the tool
//! contract names no built-in tool: `builtins::sql_query` reads its
//! connections from the context like any other tool would.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::connections::{HttpAuth, HttpConnection};
use crate::error::{ErrorCode, ToolError};
use crate::secrets::{ResolvedSecrets, SecretValue};

/// Which SQL dialect a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlDialect {
    Sqlite,
    Postgres,
}

/// A read-only connection the host provides.
pub trait SqlBackend: Send + Sync {
    fn dialect(&self) -> SqlDialect;
    /// Runs one already-checked query read-only with a statement timeout and
    /// returns its rows as JSON objects.
    fn query<'a>(
        &'a self,
        sql: &'a str,
        timeout_ms: u64,
    ) -> BoxFuture<'a, Result<Vec<Value>, ToolError>>;
}

/// Maps a driver failure to the taxonomy (used by backends).
pub fn backend_error(message: impl Into<String>, timed_out: bool) -> ToolError {
    if timed_out {
        ToolError::new(ErrorCode::Timeout, message)
    } else {
        ToolError::new(ErrorCode::ProviderError, message)
    }
}

/// An `http` connection ready for calls: its credential resolved in
/// memory. `http_request` adds the credential after the call's input was
/// validated and recorded, so the model never sees it.
#[derive(Clone)]
pub struct HttpRoute {
    pub config: HttpConnection,
    /// The credential's secret name and value; none without auth.
    pub credential: Option<(String, SecretValue)>,
}

impl HttpRoute {
    pub fn auth(&self) -> Option<&HttpAuth> {
        self.config.auth.as_ref()
    }
}

/// Per-workspace settings the built-in tools read.
#[derive(Clone, Default)]
pub struct ToolEnv {
    /// Hosts (`host` or `host:port`) the HTTP tool may reach even when they
    /// resolve to loopback or private addresses. Empty: none.
    pub http_allow_hosts: Vec<String>,
    /// The directory the file tools are confined to; none disables them.
    pub files_root: Option<PathBuf>,
    /// Named SQL connections for `sql_query`.
    pub sql: Vec<(String, Arc<dyn SqlBackend>)>,
    /// Named `http` connections for `http_request`.
    pub http: Vec<(String, Arc<HttpRoute>)>,
    /// Connections of the workspace that cannot be used in this run, with
    /// the reason (a secret no scope has), so a call names it.
    pub unavailable: Vec<(String, String)>,
}

impl ToolEnv {
    /// Why connection `name` cannot be used, for a tool's error: it is
    /// unavailable (and why), or there is none by that name.
    pub fn connection_error(&self, name: &str, kind: &str, available: &[&str]) -> ToolError {
        if let Some((_, why)) = self.unavailable.iter().find(|(n, _)| n == name) {
            return ToolError::new(
                ErrorCode::AuthRequired,
                format!("connection `{name}`: {why}"),
            )
            .with_details(serde_json::json!({"path": "/connection"}));
        }
        let list = if available.is_empty() {
            "none; an admin adds them under Settings -> Connections".to_string()
        } else {
            available.join(", ")
        };
        ToolError::validation(format!(
            "no {kind} connection named `{name}` in this workspace (available: {list})"
        ))
        .with_details(serde_json::json!({"path": "/connection"}))
    }
}

impl std::fmt::Debug for ToolEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEnv")
            .field("http_allow_hosts", &self.http_allow_hosts)
            .field("files_root", &self.files_root)
            .field(
                "sql",
                &self.sql.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            )
            .field(
                "http",
                &self
                    .http
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Attachments a tool adds beside its output (an MCP server's images);
/// the executor puts them in the call's envelope.
#[derive(Clone, Default)]
pub struct Attachments(Arc<std::sync::Mutex<Vec<crate::envelope::Attachment>>>);

impl Attachments {
    pub fn add(&self, items: impl IntoIterator<Item = crate::envelope::Attachment>) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(items);
    }

    pub fn take(&self) -> Vec<crate::envelope::Attachment> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// One progress report of a running call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolProgress {
    pub call_id: String,
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Where a call reports its progress: the agent's live events (none for
/// calls nobody watches).
#[derive(Clone, Default)]
pub struct Progress {
    pub(crate) call_id: String,
    pub(crate) to: Option<tokio::sync::mpsc::UnboundedSender<ToolProgress>>,
}

impl Progress {
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(to) = &self.to {
            let _ = to.send(ToolProgress {
                call_id: self.call_id.clone(),
                progress,
                total,
                message,
            });
        }
    }
}

/// What one call receives besides its input (seed 003 §3.3 `ToolContext`).
#[derive(Clone)]
pub struct ToolContext {
    /// The workspace (tenant) the call runs for.
    pub workspace_id: String,
    pub call_id: String,
    /// Only the secrets the tool declared, resolved user -> workspace -> org.
    pub secrets: ResolvedSecrets,
    /// Cancelled when the run is aborted or the call times out.
    pub cancel: CancellationToken,
    pub env: Arc<ToolEnv>,
    pub attachments: Attachments,
    pub progress: Progress,
}
