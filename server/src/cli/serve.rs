//! `glassbox serve`: bind first, open and migrate the database, read the
//! examples (stored in the default workspace on first start, see
//! `crate::examples`), resume interrupted runs, print the ready line and
//! the sign-in link, serve until Ctrl-C or SIGTERM.

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;

use clap::Args;

use super::{open_database, DbArgs, Failure};
use crate::{app, AppState, VERSION};

#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Address to bind.
    #[arg(long, env = "GLASSBOX_BIND", default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Port to listen on (0 picks a free one).
    #[arg(long, env = "GLASSBOX_PORT", default_value_t = 8080)]
    port: u16,
    /// Directory of the built app (`dist/`).
    #[arg(long, env = "GLASSBOX_STATIC_DIR", default_value = "dist")]
    static_dir: PathBuf,
    /// Example workflows: offered by "New from example", and loaded into
    /// the default workspace on first start.
    #[arg(long, env = "GLASSBOX_EXAMPLES_DIR", default_value = "examples")]
    examples_dir: PathBuf,
    /// This instance's name among the servers on one database (default
    /// `<hostname>-<pid>`); shown by `GET /api/v1/instances`.
    #[arg(long, env = "GLASSBOX_INSTANCE_NAME")]
    instance_name: Option<String>,
}

pub async fn serve(args: ServeArgs) -> Result<(), Failure> {
    let config = args
        .db
        .config(args.bind, args.port, Some(args.static_dir.clone()));
    config.validate().map_err(Failure::config)?;
    crate::config::Limits::check_env().map_err(Failure::config)?;
    crate::config::InstanceConfig::check_lease_env().map_err(Failure::config)?;
    let instance_name = args
        .instance_name
        .clone()
        .unwrap_or_else(crate::config::default_instance_name);
    crate::config::InstanceConfig::check_name(&instance_name).map_err(Failure::config)?;
    // The HTTP tool's TLS roots load beside start-up (database, migrations),
    // not on the first call.
    std::thread::spawn(node_runtime::builtins::http_request::prewarm);
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
    // SQLite serves one instance: a second server on the same file stops
    // here, before it migrates or resumes anything (see `crate::instance`).
    let _sqlite_lock = match crate::instance::sqlite_file(&config.database_url) {
        Some(file) => {
            if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
                let _ = std::fs::create_dir_all(dir);
            }
            Some(crate::instance::SqliteLock::take(&file).map_err(Failure::runtime)?)
        }
        None => None,
    };
    let db = open_database(&config).await?;
    if !args.static_dir.join("index.html").is_file() {
        tracing::warn!(
            static_dir = %args.static_dir.display(),
            "the app is not built; `/` shows how to build it (the API works)"
        );
    }
    let signin = crate::auth::bootstrap(&db)
        .await
        .map_err(Failure::runtime)?;
    let examples = crate::examples::read_dir(&args.examples_dir);
    let state = AppState::new_instance(db.clone(), config, Some(instance_name.clone()))
        .map_err(|e| Failure::config(format!("secret or approval key: {e}")))?
        .with_examples(examples);
    crate::examples::first_start(&state, &args.examples_dir, local).await;
    crate::example_api::follow_port(&state, local).await;
    // On Postgres, the instance's name is held for the life of the process
    // (another live instance of this name stops this start), and the runs
    // of instances that are gone are claimed (see `runs::claims`).
    match state.runs().hold_instance_name().await {
        Ok(true) => {}
        Ok(false) => {
            return Err(Failure::runtime(format!(
                "another running instance is named `{instance_name}` on this database; \
                 give this one another --instance-name (or GLASSBOX_INSTANCE_NAME)"
            )))
        }
        Err(e) => {
            return Err(Failure::runtime(format!(
                "cannot hold the instance name: {e}"
            )))
        }
    }
    match state.runs().recover().await {
        Ok(0) => {}
        Ok(n) => println!("Resumed {n} interrupted run(s)."),
        Err(e) => tracing::error!(error = %e, "cannot look for interrupted runs"),
    }
    // Last and set apart, so it is not lost among build output.
    println!();
    println!("  Glassbox {VERSION} is ready at http://{local}/");
    println!("  Sign in as the local admin (one-time link, valid 24 h): http://{local}/signin?token={signin}");
    println!();
    let _ = std::io::stdout().flush();
    state.runs().serve_as_instance(!db.is_sqlite()).await;
    let mcp = state.runs().mcp().clone();
    let runs = state.runs().clone();
    // On Ctrl-C or SIGTERM the server stops taking connections and waits
    // for the open ones, at most SHUTDOWN_GRACE: an event stream or a slow
    // client does not keep it alive.
    let stopping = std::sync::Arc::new(tokio::sync::Notify::new());
    let signal = {
        let stopping = stopping.clone();
        async move {
            shutdown_signal().await;
            stopping.notify_one();
        }
    };
    let limits = crate::config::ConnectionLimits::from_env();
    let listener = crate::listener::Limited::new(listener, limits.max_connections, limits.idle);
    let served = crate::listener::serve(listener, app(state), limits.header, signal);
    tokio::select! {
        () = served => {}
        () = async {
            stopping.notified().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            tracing::warn!("connections still open {} s after the stop signal; closing them", SHUTDOWN_GRACE.as_secs());
        }
    }
    // The runs stop before what they use: the heartbeat, the runs, their
    // queued writes, then their leases (see `Runs::stop`).
    if let Err(e) = runs.stop().await {
        tracing::warn!(error = %e, "cannot record this instance's stop");
    }
    // MCP servers started for runs stop with the server.
    mcp.shutdown().await;
    db.close().await;
    println!("Glassbox stopped.");
    Ok(())
}

/// How long a stopping server waits for open connections.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(4);

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
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
