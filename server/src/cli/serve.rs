//! `glassbox serve`: bind first, open and migrate the database, load the
//! examples on first start, resume interrupted runs, print the ready line
//! and the sign-in link, serve until Ctrl-C or SIGTERM.

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;

use clap::Args;

use super::{open_database, DbArgs, Failure};
use crate::{app, AppState, Store, VERSION};

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
    /// Workflows loaded into the default workspace on first start.
    #[arg(long, env = "GLASSBOX_EXAMPLES_DIR", default_value = "examples")]
    examples_dir: PathBuf,
}

pub async fn serve(args: ServeArgs) -> Result<(), Failure> {
    let config = args
        .db
        .config(args.bind, args.port, Some(args.static_dir.clone()));
    config.validate().map_err(Failure::config)?;
    crate::config::Limits::check_env().map_err(Failure::config)?;
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
    let signin = crate::auth::bootstrap(&db)
        .await
        .map_err(Failure::runtime)?;
    load_examples(&db, &args.examples_dir, &config.data_dir).await;
    let state = AppState::new(db.clone(), config)
        .map_err(|e| Failure::config(format!("secret or approval key: {e}")))?;
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
    let mcp = state.runs().mcp().clone();
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
    // MCP servers started for runs stop with the server.
    mcp.shutdown().await;
    db.close().await;
    println!("Glassbox stopped.");
    Ok(())
}

/// Loads `dir/*.json` into the default workspace when it has no workflows.
pub async fn load_examples(db: &Store, dir: &std::path::Path, data_dir: &std::path::Path) {
    let ws = crate::auth::DEFAULT_WORKSPACE;
    match db.list_workflows(ws).await {
        Ok(existing) if existing.is_empty() => {}
        _ => return,
    }
    example_database(db, dir, data_dir).await;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for path in paths {
        let loaded = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|text| {
                node_runtime::graph::Workflow::from_json(&text).map_err(|e| e.to_string())
            });
        match loaded {
            Ok(mut wf) => {
                wf.id = crate::storage::new_id();
                match db.create_workflow(ws, &wf).await {
                    Ok(_) => tracing::info!(file = %path.display(), "loaded example workflow"),
                    Err(e) => {
                        tracing::warn!(file = %path.display(), error = %e, "cannot store example workflow")
                    }
                }
            }
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "skipping example workflow")
            }
        }
    }
}

/// The example shop database (`examples/files/shop.sql`) built into the
/// workspace's files and its SQLite connection `shop`, on first start; a
/// failure is logged and leaves the rest of the start alone.
async fn example_database(db: &Store, dir: &std::path::Path, data_dir: &std::path::Path) {
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
