//! The `glassbox` subcommands, as library code: `main.rs` only parses the
//! command line and dispatches here. One module per subcommand group:
//! `serve`, `run` (run, replay, migrate), `tool`, `secret`, `connection`,
//! `suite` (regression suites), `workspace` and `member` (teams); what they share
//! (database flags, start-up failures, the secrets key) is here.

/// `println!` for a command's output: when the reader has gone away
/// (`glassbox replay ID | head -1`) the process ends as a Unix tool killed
/// by SIGPIPE does (status 141, nothing printed) instead of panicking; any
/// other write error is reported and ends it with status 1.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        if let Err(e) = writeln!(out, $($arg)*).and_then(|()| out.flush()) {
            $crate::cli::stdout_failed(e);
        }
    }};
}

/// Ends the process after a failed write to stdout (see `outln!`).
pub(crate) fn stdout_failed(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(141);
    }
    eprintln!("error: cannot write to stdout: {e}");
    std::process::exit(1)
}

mod connection;
mod member;
mod run;
mod secret;
mod serve;
mod suite;
mod tool;
mod workspace;

use std::net::IpAddr;
use std::path::PathBuf;

use clap::Args;

use crate::{Config, Store};

pub use connection::{connection_command, ConnectionCommand};
pub use member::{member_command, MemberCommand};
pub use run::{migrate, replay_run, run_file, ReplayArgs, RunArgs};
pub use secret::{secret_command, SecretCommand};
pub use serve::{serve, ServeArgs};
pub use suite::{suite_command, SuiteCommand};
pub use tool::{tool_command, ToolCommand};
pub use workspace::{workspace_command, WorkspaceCommand};

#[derive(Args)]
pub struct DbArgs {
    /// Directory for the embedded database and other local state.
    #[arg(long, env = "GLASSBOX_DATA_DIR", default_value = "data")]
    data_dir: PathBuf,
    /// Database URL: sqlite://FILE or postgres://... (default: a SQLite file in the data dir).
    #[arg(long, env = "GLASSBOX_DATABASE_URL")]
    database_url: Option<String>,
    /// Tool outputs larger than this many bytes are stored as blobs and previewed.
    #[arg(long, env = "GLASSBOX_MAX_OUTPUT_BYTES", default_value_t = crate::config::DEFAULT_MAX_OUTPUT_BYTES)]
    max_output_bytes: usize,
    /// Every Agent Node's traces_url: `{run_id}` is replaced (default: the app's trace page).
    #[arg(long, env = "GLASSBOX_TRACES_URL", default_value = crate::config::DEFAULT_TRACES_URL)]
    traces_url: String,
}

impl DbArgs {
    pub fn config(&self, bind: IpAddr, port: u16, static_dir: Option<PathBuf>) -> Config {
        Config {
            bind,
            port,
            data_dir: self.data_dir.clone(),
            database_url: self
                .database_url
                .clone()
                .unwrap_or_else(|| Config::default_database_url(&self.data_dir)),
            static_dir,
            max_output_bytes: self.max_output_bytes,
            traces_url: self.traces_url.clone(),
            // From the environment only: a flag would show in `ps` and shell history.
            secret_key: crate::config::secret_key_from_env(),
        }
    }
}

/// A start-up failure: a message for the user and the exit code.
pub struct Failure {
    pub message: String,
    pub code: u8,
}

impl Failure {
    pub fn config(message: impl ToString) -> Self {
        Self {
            message: message.to_string(),
            code: 2,
        }
    }
    pub fn runtime(message: impl ToString) -> Self {
        Self {
            message: message.to_string(),
            code: 1,
        }
    }
}

pub async fn open_database(config: &Config) -> Result<Store, Failure> {
    config.validate().map_err(Failure::config)?;
    if config.database_url.starts_with("sqlite:") {
        std::fs::create_dir_all(&config.data_dir).map_err(|err| {
            Failure::config(format!(
                "cannot create data dir `{}` (--data-dir / GLASSBOX_DATA_DIR): {err}",
                config.data_dir.display()
            ))
        })?;
    }
    Store::open(&config.database_url)
        .await
        .map_err(Failure::runtime)
}

/// The database opened and migrated, with the local admin made on a first
/// use (no sign-in link: a command prints none).
async fn open_with_admin(config: &Config) -> Result<Store, Failure> {
    let store = open_database(config).await?;
    crate::auth::ensure_local_admin(&store)
        .await
        .map_err(Failure::runtime)?;
    Ok(store)
}

/// What a command that executes runs in this process needs (`glassbox
/// run`, `glassbox suite run`): the database opened and bootstrapped (its
/// WAL kept small, see [`WalBound::COMMAND`](crate::storage::WalBound::COMMAND)), and
/// the run manager with the configured limits, secrets key and approval
/// key.
pub async fn open_runs(db: &DbArgs) -> Result<(Store, std::sync::Arc<crate::runs::Runs>), Failure> {
    let config = db.config(IpAddr::from([127, 0, 0, 1]), 0, None);
    let store = open_with_admin(&config)
        .await?
        .with_wal_bound(crate::storage::WalBound::COMMAND);
    let runs = crate::runs::Runs::new(
        store.clone(),
        crate::config::RunsConfig::from_config(&config),
        load_cipher(&config)?,
        load_approval_key(&config)?,
    );
    Ok((store, runs))
}

/// The secrets key (GLASSBOX_SECRET_KEY or the key file), or a message naming it.
pub fn load_cipher(
    config: &Config,
) -> Result<std::sync::Arc<crate::secrets::SecretCipher>, Failure> {
    crate::secrets::SecretCipher::load(&config.data_dir, config.secret_key.as_deref())
        .map(std::sync::Arc::new)
        .map_err(|e| Failure::config(format!("GLASSBOX_SECRET_KEY / secret key file: {e}")))
}

/// The approval key file, or a message naming it.
pub fn load_approval_key(config: &Config) -> Result<[u8; 32], Failure> {
    crate::secrets::load_approval_key(&config.data_dir).map_err(|e| Failure::config(e.to_string()))
}

pub fn parse_inputs(
    pairs: &[String],
) -> Result<serde_json::Map<String, serde_json::Value>, Failure> {
    let mut map = serde_json::Map::new();
    for pair in pairs {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| Failure::config(format!("--input `{pair}` is not NAME=VALUE")))?;
        let value =
            serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
        map.insert(k.to_string(), value);
    }
    Ok(map)
}

/// The registry the server's runs use (test builds may add test tools).
pub fn registry() -> node_runtime::tool::ToolRegistry {
    crate::runs::tool_registry(&crate::config::RunsConfig::from_env())
}

pub fn word(v: impl serde::Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}
