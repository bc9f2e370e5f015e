//! `glassbox suite run` and `glassbox suite list` (issue 33): a regression
//! suite of the default workspace run in this process against the
//! database (like `glassbox run`, beside a running `glassbox serve` too),
//! stored as a suite run the API and the Suites page list. Exit 0 when
//! every case passes, 1 when one fails (or the suite run cannot finish),
//! 2 for a usage or configuration error (no such suite, no such revision).

use std::net::IpAddr;

use clap::Subcommand;
use node_runtime::wire::{SuiteRunStatus, SuiteRunView};

use super::{open_database, DbArgs, Failure};
use crate::suites::SuiteError;

#[derive(Subcommand)]
pub enum SuiteCommand {
    /// Run a suite: fork each case's recorded run against the workflow's
    /// current revision (or --revision), never sending a write, and check
    /// its assertions. Exit 0: all passed; 1: a case failed; 2: usage.
    Run {
        #[command(flatten)]
        db: DbArgs,
        /// The suite's name or id.
        suite: String,
        /// The workflow revision to run against (default: the current one).
        #[arg(long)]
        revision: Option<u64>,
        /// Print the suite run as JSON (the API's SuiteRunView).
        #[arg(long)]
        json: bool,
    },
    /// List the suites with their latest run.
    List {
        #[command(flatten)]
        db: DbArgs,
        /// Print the list as JSON (the API's SuiteList).
        #[arg(long)]
        json: bool,
    },
}

pub async fn suite_command(cmd: SuiteCommand) -> Result<(), Failure> {
    match cmd {
        SuiteCommand::Run {
            db,
            suite,
            revision,
            json,
        } => run(db, &suite, revision, json).await,
        SuiteCommand::List { db, json } => list(db, json).await,
    }
}

fn print_json(value: &impl serde::Serialize) {
    outln!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

async fn list(db: DbArgs, json: bool) -> Result<(), Failure> {
    let config = db.config(IpAddr::from([127, 0, 0, 1]), 0, None);
    let store = open_database(&config).await?;
    let ws = crate::auth::DEFAULT_WORKSPACE;
    let suites = crate::suites::list_views(&store, ws, None)
        .await
        .map_err(Failure::runtime)?;
    store.close().await;
    if json {
        print_json(&node_runtime::wire::SuiteList { suites });
        return Ok(());
    }
    if suites.is_empty() {
        outln!("no suites");
    }
    for s in suites {
        let last = match &s.last_run {
            Some(r) => format!(
                "last run {} ({} passed, {} failed, revision {})",
                r.status, r.passed, r.failed, r.revision
            ),
            None => "never run".into(),
        };
        outln!(
            "{}  {}  {} cases  workflow {}  {last}",
            s.id,
            s.name,
            s.cases.len(),
            s.workflow_id
        );
    }
    Ok(())
}

async fn run(db: DbArgs, name: &str, revision: Option<u64>, json: bool) -> Result<(), Failure> {
    let (store, runs) = super::open_runs(&db).await?;
    let ws = crate::auth::DEFAULT_WORKSPACE;
    let suite = match store.get_suite(ws, name).await {
        Ok(row) => row,
        Err(crate::storage::StoreError::NotFound(_)) => store
            .suite_named(ws, name)
            .await
            .map_err(Failure::runtime)?
            .ok_or_else(|| {
                Failure::config(format!(
                    "no suite named or with id `{name}` (see `glassbox suite list`)"
                ))
            })?,
        Err(e) => return Err(Failure::runtime(e)),
    };
    let workflow = crate::suites::suite_graph(&store, &suite, revision)
        .await
        .map_err(|e| match e {
            SuiteError::Invalid { path, message } if path == "revision" => {
                Failure::config(format!("--revision: {message}"))
            }
            SuiteError::Invalid { message, .. } => Failure::config(message),
            other => Failure::runtime(other),
        })?;
    let owner = runs.owner_of(ws).await.map_err(Failure::runtime)?;
    let started = crate::suites::start(&runs, &store, &suite, &workflow)
        .await
        .map_err(Failure::runtime)?;
    // Suite runs a killed process left `running` end `error` (one whose
    // process lives, a `glassbox serve` beside this, is left alone). After
    // the start: on Postgres this process then holds its instance's lock,
    // without which no other is told gone.
    if let Err(e) = runs.end_interrupted_suite_runs(false).await {
        tracing::warn!(error = %e, "cannot look for interrupted suite runs");
    }
    let (ws_id, id) = (started.row.workspace_id.clone(), started.row.id.clone());
    let execute =
        crate::suites::execute(runs.clone(), store.clone(), owner, suite, workflow, started);
    let view = tokio::select! {
        view = execute => view,
        _ = tokio::signal::ctrl_c() => {
            // The forks stop (their rows resume at a later start, like a
            // killed run's) and the suite run ends `error`.
            let _ = store
                .abort_suite_run(&ws_id, &id, "interrupted (Ctrl-C) before the suite run ended")
                .await;
            let _ = runs.stop().await;
            store.close().await;
            return Err(Failure {
                message: format!("suite run {id} interrupted"),
                code: 130,
            });
        }
    };
    store.close().await;
    if json {
        print_json(&view);
    } else {
        print_report(&view);
    }
    match view.status {
        SuiteRunStatus::Passed => Ok(()),
        SuiteRunStatus::Failed => Err(Failure::runtime(format!(
            "suite {}: {} of {} cases failed",
            view.suite_name,
            view.failed,
            view.passed + view.failed
        ))),
        _ => Err(Failure::runtime(format!(
            "suite {} could not finish: {}",
            view.suite_name,
            view.error.as_deref().unwrap_or("unknown error")
        ))),
    }
}

/// Per case PASS or FAIL, each failed assertion with its message, and the
/// counts.
fn print_report(view: &SuiteRunView) {
    for case in &view.cases {
        let verdict = if case.passed { "PASS" } else { "FAIL" };
        let fork = case
            .fork_id
            .as_deref()
            .map(|f| format!(" (fork {f})"))
            .unwrap_or_default();
        outln!("{verdict} {}{fork}", case.name);
        if let Some(error) = &case.error {
            outln!("  {}: error: {error}", case.name);
        }
        for a in case.assertions.iter().filter(|a| !a.passed) {
            outln!("  {}: {}: {}", case.name, a.assertion.describe(), a.message);
        }
    }
    if let Some(error) = &view.error {
        outln!("error: {error}");
    }
    outln!(
        "suite {}: {} passed, {} failed (workflow {} revision {})",
        view.suite_name,
        view.passed,
        view.failed,
        view.workflow_id,
        view.revision
    );
}
