//! The `glassbox` command: parses the command line and dispatches to the
//! library (`glassbox_server::cli`), where every subcommand lives.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use glassbox_server::cli::{
    connection_command, member_command, migrate, replay_run, run_file, secret_command, serve,
    suite_command, tool_command, workspace_command, ConnectionCommand, DbArgs, Failure,
    MemberCommand, ReplayArgs, RunArgs, SecretCommand, ServeArgs, SuiteCommand, ToolCommand,
    WorkspaceCommand,
};
use glassbox_server::VERSION;

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
    /// Connections of the default workspace (APIs and databases the tools reach).
    #[command(subcommand)]
    Connection(ConnectionCommand),
    /// Regression suites of the default workspace: run one (exit 1 when a
    /// case fails, for CI), list them.
    #[command(subcommand)]
    Suite(SuiteCommand),
    /// Workspaces the local admin belongs to: list, create, rename.
    #[command(subcommand)]
    Workspace(WorkspaceCommand),
    /// Members of a workspace: list, invite (prints a one-time link),
    /// change a role, remove.
    #[command(subcommand)]
    Member(MemberCommand),
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
    // `glassbox run` ends the process as soon as its result is printed and
    // its database closed: the runtime's worker threads are not joined and
    // what its tasks still hold is not freed one allocation at a time
    // (about 6 us per tool call of a long run on one core, issue #30); the OS takes it
    // back at once. Nothing is left to flush: `run_file` closed the store.
    let one_shot = matches!(cli.command, Command::Run(_));
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve(args).await,
            Command::Migrate(args) => migrate(args).await,
            Command::Run(args) => run_file(args).await,
            Command::Replay(args) => replay_run(args).await,
            Command::Tool(cmd) => tool_command(cmd).await,
            Command::Secret(cmd) => secret_command(cmd).await,
            Command::Connection(cmd) => connection_command(cmd).await,
            Command::Suite(cmd) => suite_command(cmd).await,
            Command::Workspace(cmd) => workspace_command(cmd).await,
            Command::Member(cmd) => member_command(cmd).await,
        }
    });
    if let Some(otlp) = otlp {
        otlp.shutdown();
    }
    if one_shot {
        std::mem::forget(runtime);
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
    // Colours only on a terminal: in a file or a pipe (a service's log, a
    // CI log) the escape codes are noise. It also spares painting each
    // span's fields at the default level: the log layer's share of a
    // sequential tool call fell from about 13.7K to 8.3K instructions
    // (issue #30, counted by callgrind; the benches log errors only).
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
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
