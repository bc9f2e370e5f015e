//! The `glassbox` command: parses configuration and serves. All behaviour
//! lives in the library (`glassbox_server`).

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use glassbox_server::{app, AppState, Config, Store, VERSION};

#[derive(Parser)]
#[command(name = "glassbox", version = VERSION, about = "Glassbox: agent workflows whose every tool call is visible.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the JSON API and the browser app.
    Serve(ServeArgs),
    /// Apply database migrations and exit.
    Migrate(DbArgs),
}

#[derive(Args)]
struct DbArgs {
    /// Directory for the embedded database and other local state.
    #[arg(long, env = "GLASSBOX_DATA_DIR", default_value = "data")]
    data_dir: PathBuf,
    /// Store URL: sqlite://FILE or postgres://... (default: a SQLite file in the data dir).
    #[arg(long, env = "GLASSBOX_DATABASE_URL")]
    database_url: Option<String>,
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Address to bind.
    #[arg(long, env = "GLASSBOX_BIND", default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Port to listen on (0 picks a free one).
    #[arg(long, env = "GLASSBOX_PORT", default_value_t = 8080)]
    port: u16,
    /// Directory of the built app (Trunk's dist/).
    #[arg(long, env = "GLASSBOX_STATIC_DIR", default_value = "dist")]
    static_dir: PathBuf,
}

impl DbArgs {
    fn config(&self, bind: IpAddr, port: u16, static_dir: Option<PathBuf>) -> Config {
        Config {
            bind,
            port,
            data_dir: self.data_dir.clone(),
            database_url: self
                .database_url
                .clone()
                .unwrap_or_else(|| Config::default_database_url(&self.data_dir)),
            static_dir,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,sqlx=warn,tower_http=warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve(args).await,
            Command::Migrate(args) => migrate(args).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { message, code }) => {
            eprintln!("error: {message}");
            ExitCode::from(code)
        }
    }
}

/// A start-up failure: a message for the user and the exit code.
struct Failure {
    message: String,
    code: u8,
}

impl Failure {
    fn config(message: impl ToString) -> Self {
        Self {
            message: message.to_string(),
            code: 2,
        }
    }
    fn runtime(message: impl ToString) -> Self {
        Self {
            message: message.to_string(),
            code: 1,
        }
    }
}

async fn open_database(config: &Config) -> Result<Store, Failure> {
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

async fn migrate(args: DbArgs) -> Result<(), Failure> {
    let config = args.config(IpAddr::from([127, 0, 0, 1]), 0, None);
    let db = open_database(&config).await?;
    let version = db.schema_version().await.map_err(Failure::runtime)?;
    println!(
        "database migrated ({}, schema version {version})",
        db.backend()
    );
    db.close().await;
    Ok(())
}

async fn serve(args: ServeArgs) -> Result<(), Failure> {
    let config = args
        .db
        .config(args.bind, args.port, Some(args.static_dir.clone()));
    config.validate().map_err(Failure::config)?;
    // Bind first: a taken port is the most common start-up failure and needs
    // no database to report.
    let addr = config.socket_addr();
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|err| {
        if err.kind() == std::io::ErrorKind::AddrInUse {
            Failure::runtime(format!(
                "port {} on {} is already in use. Start Glassbox on another port with \
                 --port <PORT> (or GLASSBOX_PORT=<PORT>; with xtask: cargo xtask run --port <PORT>).",
                addr.port(),
                addr.ip()
            ))
        } else {
            Failure::runtime(format!("cannot listen on {addr}: {err}"))
        }
    })?;
    let local = listener.local_addr().map_err(Failure::runtime)?;
    let db = open_database(&config).await?;
    if !args.static_dir.join("index.html").is_file() {
        tracing::warn!(
            static_dir = %args.static_dir.display(),
            "the app is not built; `/` shows how to build it (the API works)"
        );
    }
    let state = AppState::new(db.clone(), config);
    println!("Glassbox {VERSION} is ready at http://{local}/");
    let _ = std::io::stdout().flush();
    axum::serve(listener, app(state))
        .with_graceful_shutdown(shutdown_signal())
        .await
        .map_err(|err| Failure::runtime(format!("server error: {err}")))?;
    db.close().await;
    println!("Glassbox stopped.");
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
