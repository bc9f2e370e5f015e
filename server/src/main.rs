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
    /// Export run spans over OTLP/HTTP to this collector (base URL, e.g.
    /// http://127.0.0.1:4318). Spans are always stored for the trace page.
    #[arg(long, global = true, env = "GLASSBOX_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the JSON API and the browser app.
    Serve(ServeArgs),
    /// Apply database migrations and exit.
    Migrate(DbArgs),
    /// Run a workflow file headlessly and print its outputs as JSON.
    Run(RunArgs),
    /// Replay a recorded run hermetically and report whether it matches.
    Replay(ReplayArgs),
    /// The tool registry, invocation records and approvals.
    #[command(subcommand)]
    Tool(ToolCommand),
    /// Secrets of the default workspace: names out, values in (from stdin).
    #[command(subcommand)]
    Secret(SecretCommand),
}

#[derive(Subcommand)]
enum SecretCommand {
    /// List secret names and scopes (never values).
    List {
        #[command(flatten)]
        db: DbArgs,
    },
    /// Set a secret; the value is read from standard input.
    Set {
        #[command(flatten)]
        db: DbArgs,
        /// `workspace`, `user` (the local admin) or `org` (the workspace's
        /// organization, shared by its workspaces).
        #[arg(long, default_value = "workspace")]
        scope: String,
        name: String,
    },
    /// Delete a secret.
    Delete {
        #[command(flatten)]
        db: DbArgs,
        #[arg(long, default_value = "workspace")]
        scope: String,
        name: String,
    },
}

#[derive(Subcommand)]
enum ToolCommand {
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

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    db: DbArgs,
    /// The workflow JSON file.
    file: PathBuf,
    /// An input field, `name=value` (a JSON value, or else a string).
    #[arg(long = "input", value_name = "NAME=VALUE")]
    inputs: Vec<String>,
    /// Print the whole run (every node's record) instead of the outputs.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ReplayArgs {
    #[command(flatten)]
    db: DbArgs,
    /// The id of a recorded run (as printed by `glassbox run`).
    run_id: String,
}

#[derive(Args)]
struct DbArgs {
    /// Directory for the embedded database and other local state.
    #[arg(long, env = "GLASSBOX_DATA_DIR", default_value = "data")]
    data_dir: PathBuf,
    /// Database URL: sqlite://FILE or postgres://... (default: a SQLite file in the data dir).
    #[arg(long, env = "GLASSBOX_DATABASE_URL")]
    database_url: Option<String>,
    /// Tool outputs larger than this many bytes are stored as blobs and previewed.
    #[arg(long, env = "GLASSBOX_MAX_OUTPUT_BYTES", default_value_t = glassbox_server::config::DEFAULT_MAX_OUTPUT_BYTES)]
    max_output_bytes: usize,
    /// Every Agent Node's traces_url: `{run_id}` is replaced (default: the app's trace page).
    #[arg(long, env = "GLASSBOX_TRACES_URL", default_value = glassbox_server::config::DEFAULT_TRACES_URL)]
    traces_url: String,
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
    /// Workflows loaded into the default workspace on first start.
    #[arg(long, env = "GLASSBOX_EXAMPLES_DIR", default_value = "examples")]
    examples_dir: PathBuf,
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
            max_output_bytes: self.max_output_bytes,
            traces_url: self.traces_url.clone(),
            // From the environment only: a flag would show in `ps` and shell history.
            secret_key: std::env::var("GLASSBOX_SECRET_KEY")
                .ok()
                .filter(|k| !k.is_empty()),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Logs (filtered by RUST_LOG), the spans of runs (always), and OTLP.
    let otlp = match init_tracing(cli.otlp_endpoint.as_deref().filter(|e| !e.is_empty())) {
        Ok(guard) => guard,
        Err(message) => {
            eprintln!("error: invalid --otlp-endpoint / GLASSBOX_OTLP_ENDPOINT: {message}");
            return ExitCode::from(2);
        }
    };
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
            Command::Run(args) => run_file(args).await,
            Command::Replay(args) => replay_run(args).await,
            Command::Tool(cmd) => tool_command(cmd).await,
            Command::Secret(cmd) => secret_command(cmd).await,
        }
    });
    if let Some(otlp) = otlp {
        otlp.shutdown();
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { message, code }) => {
            eprintln!("error: {message}");
            ExitCode::from(code)
        }
    }
}

fn init_tracing(
    otlp_endpoint: Option<&str>,
) -> Result<Option<glassbox_server::trace::OtlpGuard>, String> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,sqlx=warn,tower_http=warn".into()),
        );
    let registry = tracing_subscriber::registry()
        .with(logs)
        .with(glassbox_server::trace::SpanStore);
    match otlp_endpoint {
        Some(endpoint) => {
            let (layer, guard) = glassbox_server::trace::otlp_layer(endpoint)?;
            registry.with(layer).init();
            Ok(Some(guard))
        }
        None => {
            registry.init();
            Ok(None)
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
    let signin = glassbox_server::auth::bootstrap(&db)
        .await
        .map_err(Failure::runtime)?;
    load_examples(&db, &args.examples_dir).await;
    let state = AppState::new(db.clone(), config)
        .map_err(|e| Failure::config(format!("GLASSBOX_SECRET_KEY / secret key file: {e}")))?;
    match state.runs().recover().await {
        Ok(0) => {}
        Ok(n) => println!("Resumed {n} interrupted run(s)."),
        Err(e) => tracing::error!(error = %e, "cannot look for interrupted runs"),
    }
    println!("Glassbox {VERSION} is ready at http://{local}/");
    println!("Sign in as the local admin (one-time link, valid 24 h): http://{local}/signin?token={signin}");
    let _ = std::io::stdout().flush();
    axum::serve(listener, app(state))
        .with_graceful_shutdown(shutdown_signal())
        .await
        .map_err(|err| Failure::runtime(format!("server error: {err}")))?;
    db.close().await;
    println!("Glassbox stopped.");
    Ok(())
}

/// Loads `dir/*.json` into the default workspace when it has no workflows.
async fn load_examples(db: &Store, dir: &std::path::Path) {
    let ws = glassbox_server::auth::DEFAULT_WORKSPACE;
    match db.list_workflows(ws).await {
        Ok(existing) if existing.is_empty() => {}
        _ => return,
    }
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
                wf.id = glassbox_server::storage::new_id();
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

/// The secrets key (GLASSBOX_SECRET_KEY or the key file), or a message naming it.
fn load_cipher(
    config: &Config,
) -> Result<std::sync::Arc<glassbox_server::secrets::SecretCipher>, Failure> {
    glassbox_server::secrets::SecretCipher::load(&config.data_dir, config.secret_key.as_deref())
        .map(std::sync::Arc::new)
        .map_err(|e| Failure::config(format!("GLASSBOX_SECRET_KEY / secret key file: {e}")))
}

fn parse_inputs(pairs: &[String]) -> Result<serde_json::Map<String, serde_json::Value>, Failure> {
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

async fn run_file(args: RunArgs) -> Result<(), Failure> {
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| Failure::config(format!("cannot read {}: {e}", args.file.display())))?;
    let workflow = node_runtime::graph::Workflow::from_json(&text)
        .map_err(|e| Failure::config(format!("{}: {e}", args.file.display())))?;
    let inputs = parse_inputs(&args.inputs)?;
    let config = args.db.config(IpAddr::from([127, 0, 0, 1]), 0, None);
    let db = open_database(&config).await?;
    glassbox_server::auth::bootstrap(&db)
        .await
        .map_err(Failure::runtime)?;
    let runs = glassbox_server::runs::Runs::new(
        db.clone(),
        config.data_dir.clone(),
        Some(config.traces_url.clone()),
        config.max_output_bytes,
        load_cipher(&config)?,
    );
    let row = runs
        .run_to_end(
            glassbox_server::auth::DEFAULT_WORKSPACE,
            workflow,
            inputs,
            "cli",
        )
        .await
        .map_err(Failure::runtime)?;
    let parse = |s: &Option<String>| {
        s.as_deref()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
            .unwrap_or(serde_json::Value::Null)
    };
    let record = db
        .run_record(&row)
        .await
        .map_err(Failure::runtime)?
        .unwrap_or(serde_json::Value::Null);
    let mut agents = serde_json::Map::new();
    if let Some(nodes) = record.get("nodes").and_then(serde_json::Value::as_object) {
        for (id, node) in nodes {
            if node.get("bundle").is_some_and(|b| !b.is_null()) {
                let outputs = &node["outputs"];
                let contract: serde_json::Map<String, serde_json::Value> =
                    node_runtime::graph::AGENT_OUTPUTS
                        .iter()
                        .map(|k| (k.to_string(), outputs[*k].clone()))
                        .collect();
                agents.insert(id.clone(), serde_json::Value::Object(contract));
            }
        }
    }
    let printed = if args.json {
        serde_json::json!({"run_id": row.id, "status": row.status, "outputs": parse(&row.outputs), "agent_outputs": agents, "record": record})
    } else {
        serde_json::json!({"run_id": row.id, "status": row.status, "outputs": parse(&row.outputs), "agent_outputs": agents, "error": row.error})
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&printed).unwrap_or_default()
    );
    db.close().await;
    if row.status == "succeeded" {
        Ok(())
    } else {
        Err(Failure::runtime(format!(
            "the run ended {}: {}",
            row.status,
            row.error.unwrap_or_default()
        )))
    }
}

async fn replay_run(args: ReplayArgs) -> Result<(), Failure> {
    let config = args.db.config(IpAddr::from([127, 0, 0, 1]), 0, None);
    let db = open_database(&config).await?;
    let row = db
        .get_run(glassbox_server::auth::DEFAULT_WORKSPACE, &args.run_id)
        .await
        .map_err(|e| Failure::config(format!("run {}: {e}", args.run_id)))?;
    let record = db
        .run_record(&row)
        .await
        .map_err(Failure::runtime)?
        .ok_or_else(|| {
            Failure::runtime(format!(
                "run {} has no record to replay (it did not finish)",
                args.run_id
            ))
        })?;
    let runs = glassbox_server::runs::Runs::new(
        db.clone(),
        config.data_dir.clone(),
        Some(config.traces_url.clone()),
        config.max_output_bytes,
        load_cipher(&config)?,
    );
    let outcome = runs
        .replay_record(
            glassbox_server::auth::DEFAULT_WORKSPACE,
            &record,
            Some(&args.run_id),
        )
        .await;
    db.close().await;
    match outcome {
        Ok(o) if o.matches => {
            println!("{}", serde_json::json!(o));
            Ok(())
        }
        Ok(o) => Err(Failure::runtime(format!(
            "replay diverged: {}",
            o.divergence.unwrap_or_default()
        ))),
        Err(e) => Err(Failure::runtime(e)),
    }
}

fn registry() -> node_runtime::tool::ToolRegistry {
    let mut registry = node_runtime::tool::ToolRegistry::new();
    node_runtime::builtins::register_builtins(&mut registry)
        .expect("the built-in tools have valid schemas");
    registry
}

fn word(v: impl serde::Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

async fn tool_command(cmd: ToolCommand) -> Result<(), Failure> {
    let ws = glassbox_server::auth::DEFAULT_WORKSPACE;
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
                println!(
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
            println!(
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
            let filter = glassbox_server::storage::InvocationFilter {
                status,
                tool,
                run_id: run,
                since: None,
                until: None,
                limit,
            };
            let rows = store
                .list_invocations(ws, &filter)
                .await
                .map_err(Failure::runtime)?;
            for r in &rows {
                println!(
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

/// The owner of a scope in the default workspace (the org: the one the
/// workspace belongs to).
async fn secret_owner(store: &Store, scope: &str) -> Result<String, Failure> {
    match scope {
        "workspace" => Ok(glassbox_server::auth::DEFAULT_WORKSPACE.into()),
        "user" => Ok(glassbox_server::auth::ADMIN_USER.into()),
        "org" => glassbox_server::auth::default_org(store)
            .await
            .map_err(Failure::runtime),
        other => Err(Failure::config(format!(
            "--scope `{other}` is not workspace, user or org"
        ))),
    }
}

async fn secret_command(cmd: SecretCommand) -> Result<(), Failure> {
    let ws = glassbox_server::auth::DEFAULT_WORKSPACE;
    match cmd {
        SecretCommand::List { db } => {
            let config = db.config(IpAddr::from([127, 0, 0, 1]), 0, None);
            let store = open_database(&config).await?;
            let org = store.workspace_org(ws).await.map_err(Failure::runtime)?;
            let rows = store
                .list_secrets(ws, glassbox_server::auth::ADMIN_USER, org.as_deref())
                .await
                .map_err(Failure::runtime)?;
            for (name, scope, created_at) in rows {
                println!("{name:<32} {scope:<10} {created_at}");
            }
            store.close().await;
            Ok(())
        }
        SecretCommand::Set { db, scope, name } => {
            if !matches!(scope.as_str(), "workspace" | "user" | "org") {
                return Err(Failure::config(format!(
                    "--scope `{scope}` is not workspace, user or org"
                )));
            }
            let mut value = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut value).map_err(|e| {
                Failure::config(format!("cannot read the value from standard input: {e}"))
            })?;
            let value = value.trim_end_matches(['\r', '\n']);
            if value.is_empty() {
                return Err(Failure::config(
                    "the secret value (standard input) is empty",
                ));
            }
            let valid = !name.is_empty()
                && name.len() <= 128
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            if !valid {
                return Err(Failure::config(format!(
                    "`{name}` is not a secret name (1-128 of A-Z a-z 0-9 _ - .)"
                )));
            }
            let config = db.config(IpAddr::from([127, 0, 0, 1]), 0, None);
            let cipher = load_cipher(&config)?;
            let store = open_database(&config).await?;
            let owner = secret_owner(&store, &scope).await?;
            let ciphertext = cipher.encrypt(&scope, &owner, &name, value);
            store
                .put_secret(ws, &scope, &owner, &name, &ciphertext)
                .await
                .map_err(Failure::runtime)?;
            store.close().await;
            println!("set {name} ({scope})");
            Ok(())
        }
        SecretCommand::Delete { db, scope, name } => {
            let config = db.config(IpAddr::from([127, 0, 0, 1]), 0, None);
            let store = open_database(&config).await?;
            let owner = secret_owner(&store, &scope).await?;
            let result = store.delete_secret(ws, &scope, &owner, &name).await;
            store.close().await;
            match result {
                Ok(()) => {
                    println!("deleted {name} ({scope})");
                    Ok(())
                }
                Err(glassbox_server::storage::StoreError::NotFound(_)) => {
                    Err(Failure::config(format!("no {scope} secret named {name}")))
                }
                Err(e) => Err(Failure::runtime(e)),
            }
        }
    }
}

/// Records a decision in the database; a server waiting on it picks it up.
async fn decide_cli(
    db: DbArgs,
    token: &str,
    status: &str,
    note: Option<String>,
) -> Result<(), Failure> {
    let config = db.config(IpAddr::from([127, 0, 0, 1]), 0, None);
    let store = open_database(&config).await?;
    let result = store
        .decide_approval(
            glassbox_server::auth::DEFAULT_WORKSPACE,
            token,
            status,
            "cli",
            note.as_deref(),
        )
        .await;
    store.close().await;
    match result {
        Ok(row) => {
            println!(
                "{} {} ({} on run {})",
                row.status, row.call_id, row.tool, row.run_id
            );
            Ok(())
        }
        Err(glassbox_server::storage::StoreError::NotFound(_)) => {
            Err(Failure::config(format!("no approval with token {token}")))
        }
        Err(glassbox_server::storage::StoreError::Conflict { .. }) => {
            Err(Failure::config("that approval was already decided"))
        }
        Err(e) => Err(Failure::runtime(e)),
    }
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
