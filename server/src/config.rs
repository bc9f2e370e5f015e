//! Server configuration from flags and environment variables.
//!
//! Every value is checked before start-up continues; a bad value stops the
//! server with a message naming the flag and the variable.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

/// Resolved configuration for `glassbox serve`.
#[derive(Clone)]
pub struct Config {
    pub bind: IpAddr,
    /// 0 asks the OS for a free port (tests use this).
    pub port: u16,
    pub data_dir: PathBuf,
    /// `sqlite://...` or `postgres://...`.
    pub database_url: String,
    /// The directory holding the built app (`dist/`), if any.
    pub static_dir: Option<PathBuf>,
    /// Tool outputs larger than this are stored as blobs and previewed.
    pub max_output_bytes: usize,
    /// The secrets key (64 hex characters) from GLASSBOX_SECRET_KEY; none
    /// means the key file in the data dir.
    pub secret_key: Option<String>,
    /// Every Agent Node's `traces_url`: a template where `{run_id}` is
    /// replaced, e.g. an external trace UI; by default the app's own trace
    /// page ([`DEFAULT_TRACES_URL`]).
    pub traces_url: String,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret key never reaches a log line.
        f.debug_struct("Config")
            .field("bind", &self.bind)
            .field("port", &self.port)
            .field("data_dir", &self.data_dir)
            .field(
                "database_url",
                &crate::storage::redact_url(&self.database_url),
            )
            .field("static_dir", &self.static_dir)
            .field("max_output_bytes", &self.max_output_bytes)
            .field("traces_url", &self.traces_url)
            .field(
                "secret_key",
                &self.secret_key.as_ref().map(|_| "[REDACTED]"),
            )
            .finish()
    }
}

/// What the run manager needs besides its store and the secrets cipher:
/// the server's settings that shape runs, and the allow-list of internal
/// hosts. Built once, here; `Runs` reads no environment of its own.
#[derive(Debug, Clone, Default)]
pub struct RunsConfig {
    pub data_dir: PathBuf,
    /// Every Agent Node's `traces_url` template.
    pub traces_url: Option<String>,
    pub max_output_bytes: usize,
    /// Hosts (`host` or `host:port`) that `http_request` and the model
    /// providers may reach on loopback or private addresses
    /// (GLASSBOX_HTTP_ALLOW_HOSTS, comma-separated; empty by default).
    pub http_allow_hosts: Vec<String>,
    /// What a stdio MCP server gets of the server's environment: only
    /// [`MCP_INHERITED_ENV`], so it can find its program and a home for its
    /// caches; never the server's own settings or keys.
    pub mcp_inherit_env: Vec<(String, String)>,
    pub limits: Limits,
    /// This process as one instance among several on one database.
    pub instance: InstanceConfig,
    /// Test builds only (feature `test-hooks`): the leak-test tools and
    /// crash injection. A release binary has neither.
    #[cfg(feature = "test-hooks")]
    pub test_hooks: TestHooks,
}

/// The end-to-end tests' hooks (feature `test-hooks`).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Clone, Default)]
pub struct TestHooks {
    /// GLASSBOX_TEST_TOOLS=1: register `secret_probe` (`test_tools.rs`).
    pub tools: bool,
    /// GLASSBOX_TEST_CRASH_AT: abort at that point of an approved write.
    pub crash_at: Option<String>,
}

/// Per-workspace caps, so one workspace cannot take the server:
/// concurrent runs (GLASSBOX_MAX_RUNS_PER_WORKSPACE, default 100) and open
/// event streams (GLASSBOX_MAX_STREAMS_PER_WORKSPACE, default 200). Past
/// one, the API answers 429 with `Retry-After`.
#[derive(Debug, Clone)]
pub struct Limits {
    pub runs_per_workspace: usize,
    pub streams_per_workspace: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            runs_per_workspace: 100,
            streams_per_workspace: 200,
        }
    }
}

impl Limits {
    /// The variables, if set, are positive integers; the error names the
    /// variable (checked at start-up, before anything is served).
    pub fn check_env() -> Result<(), String> {
        for var in [
            "GLASSBOX_MAX_RUNS_PER_WORKSPACE",
            "GLASSBOX_MAX_STREAMS_PER_WORKSPACE",
            "GLASSBOX_MAX_CONNECTIONS",
            "GLASSBOX_IDLE_TIMEOUT_S",
            "GLASSBOX_HEADER_TIMEOUT_S",
        ] {
            if let Ok(v) = std::env::var(var) {
                if !v.trim().parse::<usize>().is_ok_and(|n| n > 0) {
                    return Err(format!("{var} must be a positive whole number, not `{v}`"));
                }
            }
        }
        Ok(())
    }

    fn from_env() -> Self {
        let d = Self::default();
        Self {
            runs_per_workspace: positive_env(
                "GLASSBOX_MAX_RUNS_PER_WORKSPACE",
                d.runs_per_workspace,
            ),
            streams_per_workspace: positive_env(
                "GLASSBOX_MAX_STREAMS_PER_WORKSPACE",
                d.streams_per_workspace,
            ),
        }
    }
}

/// The HTTP server's own limits: open connections
/// (GLASSBOX_MAX_CONNECTIONS, default 1024; more wait until one closes) and
/// how long a connection may do nothing before it is closed
/// (GLASSBOX_IDLE_TIMEOUT_S, default 120; an event stream's keep-alive
/// counts as activity), and how long a request's head may take to arrive
/// once it has begun (GLASSBOX_HEADER_TIMEOUT_S, default 10), so a client
/// that trickles a head byte by byte is closed too.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub idle: std::time::Duration,
    pub header: std::time::Duration,
}

impl ConnectionLimits {
    pub fn from_env() -> Self {
        Self {
            max_connections: positive_env("GLASSBOX_MAX_CONNECTIONS", 1024),
            idle: std::time::Duration::from_secs(
                positive_env("GLASSBOX_IDLE_TIMEOUT_S", 120) as u64
            ),
            header: std::time::Duration::from_secs(
                positive_env("GLASSBOX_HEADER_TIMEOUT_S", 10) as u64
            ),
        }
    }
}

/// This process as one instance (issue 32): its name (`glassbox serve
/// --instance-name`, GLASSBOX_INSTANCE_NAME; default `<hostname>-<pid>`)
/// and the lease on the runs it holds (GLASSBOX_LEASE_S, default 15 s,
/// renewed every third of it): when an instance stops renewing, another
/// claims its runs once the lease has passed.
#[derive(Debug, Clone)]
pub struct InstanceConfig {
    pub name: String,
    pub lease: std::time::Duration,
}

/// The longest instance name.
pub const MAX_INSTANCE_NAME: usize = 100;

/// The longest lease on a run (GLASSBOX_LEASE_S): a day. A dead instance's
/// runs wait that long at most (when its advisory lock does not tell).
pub const MAX_LEASE_S: u64 = 86_400;

impl Default for InstanceConfig {
    fn default() -> Self {
        Self {
            name: default_instance_name(),
            lease: std::time::Duration::from_secs(15),
        }
    }
}

impl InstanceConfig {
    pub fn from_env() -> Self {
        let d = Self::default();
        Self {
            name: std::env::var("GLASSBOX_INSTANCE_NAME")
                .ok()
                .filter(|n| !n.trim().is_empty())
                .unwrap_or(d.name),
            // Bounded even unchecked (`glassbox run`): lease times are
            // computed from it.
            lease: std::time::Duration::from_secs(
                (positive_env("GLASSBOX_LEASE_S", 15) as u64).min(MAX_LEASE_S),
            ),
        }
    }

    /// GLASSBOX_LEASE_S, if set, is a whole number of seconds from 1 to
    /// [`MAX_LEASE_S`] (checked at start-up, before anything is served).
    pub fn check_lease_env() -> Result<(), ConfigError> {
        match std::env::var("GLASSBOX_LEASE_S") {
            Ok(v) => Self::check_lease(&v).map(|_| ()),
            Err(_) => Ok(()),
        }
    }

    /// A lease in seconds, as GLASSBOX_LEASE_S gives it.
    pub fn check_lease(value: &str) -> Result<std::time::Duration, ConfigError> {
        match value.trim().parse::<u64>() {
            Ok(s) if (1..=MAX_LEASE_S).contains(&s) => Ok(std::time::Duration::from_secs(s)),
            _ => Err(ConfigError::Invalid {
                name: "GLASSBOX_LEASE_S",
                message: format!(
                    "`{value}` is not a whole number of seconds from 1 to {MAX_LEASE_S}"
                ),
            }),
        }
    }

    /// A usable name: 1 to [`MAX_INSTANCE_NAME`] characters, none of them
    /// a control character or a space.
    pub fn check_name(name: &str) -> Result<(), String> {
        if name.is_empty()
            || name.chars().count() > MAX_INSTANCE_NAME
            || name.chars().any(|c| c.is_control() || c.is_whitespace())
        {
            return Err(format!(
                "--instance-name / GLASSBOX_INSTANCE_NAME must be 1 to {MAX_INSTANCE_NAME} characters without spaces, not `{name}`"
            ));
        }
        Ok(())
    }
}

/// `<hostname>-<pid>` (the hostname from the kernel; `glassbox` when it
/// cannot be read).
pub fn default_instance_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty() && !h.contains(char::is_whitespace))
        .unwrap_or_else(|| "glassbox".into());
    format!("{host}-{}", std::process::id())
}

/// A positive whole number from the environment, else `default` (a bad
/// value stopped the start in [`Limits::check_env`]).
fn positive_env(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(default)
}

/// The variables a stdio MCP server inherits ([`RunsConfig::mcp_inherit_env`]).
pub const MCP_INHERITED_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "TMPDIR"];

/// The environment variable of [`RunsConfig::http_allow_hosts`].
pub const HTTP_ALLOW_HOSTS_ENV: &str = "GLASSBOX_HTTP_ALLOW_HOSTS";

impl RunsConfig {
    /// The run settings of `config`, with the allow-list (and, in test
    /// builds, the test hooks) from the environment.
    pub fn from_config(config: &Config) -> Self {
        Self {
            data_dir: config.data_dir.clone(),
            traces_url: Some(config.traces_url.clone()),
            max_output_bytes: config.max_output_bytes,
            ..Self::from_env()
        }
    }

    /// Only what the environment says: the allow-list and, in test builds,
    /// the test hooks (enough for the tool registry, `glassbox tool list`).
    pub fn from_env() -> Self {
        Self {
            http_allow_hosts: parse_hosts(&std::env::var(HTTP_ALLOW_HOSTS_ENV).unwrap_or_default()),
            limits: Limits::from_env(),
            instance: InstanceConfig::from_env(),
            mcp_inherit_env: MCP_INHERITED_ENV
                .iter()
                .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
                .collect(),
            #[cfg(feature = "test-hooks")]
            test_hooks: TestHooks {
                tools: std::env::var(crate::test_tools::ENV).as_deref() == Ok("1"),
                crash_at: std::env::var("GLASSBOX_TEST_CRASH_AT").ok(),
            },
            ..Self::default()
        }
    }
}

/// The secrets key from GLASSBOX_SECRET_KEY (environment only: a flag
/// would show in `ps` and shell history); none means the key file.
pub fn secret_key_from_env() -> Option<String> {
    std::env::var("GLASSBOX_SECRET_KEY")
        .ok()
        .filter(|k| !k.is_empty())
}

/// `a, b:8080,,c` -> `["a", "b:8080", "c"]`.
pub fn parse_hosts(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(str::to_string)
        .collect()
}

/// The app's trace page for a run.
pub const DEFAULT_TRACES_URL: &str = "/runs/{run_id}/trace";

/// The default output cap (seed 003 §5.4: 2 MB).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 2 * 1024 * 1024;
/// Below this a preview would not be useful.
pub const MIN_MAX_OUTPUT_BYTES: usize = 1024;

/// A configuration value that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid {name}: {message}")]
    Invalid { name: &'static str, message: String },
}

impl Config {
    /// The default database: a SQLite file under the data dir.
    pub fn default_database_url(data_dir: &Path) -> String {
        format!("sqlite://{}", data_dir.join("glassbox.db").display())
    }

    pub fn socket_addr(&self) -> SocketAddr {
        SocketAddr::new(self.bind, self.port)
    }

    /// Checks the values that can be checked before opening anything.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let url = self.database_url.as_str();
        if !(url.starts_with("sqlite:")
            || url.starts_with("postgres://")
            || url.starts_with("postgresql://"))
        {
            return Err(ConfigError::Invalid {
                name: "--database-url / GLASSBOX_DATABASE_URL",
                message: format!("`{url}` is neither a sqlite: nor a postgres:// URL"),
            });
        }
        if self.max_output_bytes < MIN_MAX_OUTPUT_BYTES {
            return Err(ConfigError::Invalid {
                name: "--max-output-bytes / GLASSBOX_MAX_OUTPUT_BYTES",
                message: format!(
                    "{} is below the minimum of {MIN_MAX_OUTPUT_BYTES} bytes",
                    self.max_output_bytes
                ),
            });
        }
        let t = self.traces_url.as_str();
        if !t.contains("{run_id}")
            || !(t.starts_with('/') || t.starts_with("http://") || t.starts_with("https://"))
            || t.contains(char::is_whitespace)
        {
            return Err(ConfigError::Invalid {
                name: "--traces-url / GLASSBOX_TRACES_URL",
                message: format!(
                    "`{t}` is not a path or http(s) URL containing {{run_id}}, e.g. https://traces.example/run/{{run_id}}"
                ),
            });
        }
        if self.data_dir.exists() && !self.data_dir.is_dir() {
            return Err(ConfigError::Invalid {
                name: "--data-dir / GLASSBOX_DATA_DIR",
                message: format!(
                    "`{}` exists and is not a directory",
                    self.data_dir.display()
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(value: &str, expected: Option<u64>) {
        let got = InstanceConfig::check_lease(value);
        match expected {
            Some(s) => assert_eq!(got.ok(), Some(std::time::Duration::from_secs(s)), "{value}"),
            None => {
                let e = got.expect_err(value).to_string();
                assert!(e.contains("GLASSBOX_LEASE_S"), "{value}: {e}");
            }
        }
    }

    #[test]
    fn a_lease_is_1_s_to_a_day() {
        check("15", Some(15));
        check(" 1 ", Some(1));
        check("86400", Some(MAX_LEASE_S));
        check("86401", None);
        check("99999999999999", None);
        check("0", None);
        check("-3", None);
        check("soon", None);
    }
}
