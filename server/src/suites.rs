//! Regression suites (issue 33): a named set of recorded runs of one
//! workflow, each case with assertions (`node_runtime::wire::suites`).
//! Used by the API (`api/suites.rs`) and `glassbox suite` (`cli/suite.rs`)
//! alike.
//!
//! Running a suite stores a suite run `running` (naming the process that
//! executes it, see `runs::suites`; at most four per workspace at once),
//! then forks each case's recorded run in turn, through the one fork path
//! (`Runs::fork_from`, trigger `suite`), against the workflow revision
//! asked for, never sending a write (a new write call is refused,
//! `SUITE_NO_WRITES`; a recorded one is answered from the recording) and,
//! with `model: recorded`, answering every Agent node from its recorded
//! model answers. Each fork starts in a run slot of its workspace reserved
//! for it (waited for, so a suite never fails on the runs-in-progress
//! limit nor goes beyond it) and is awaited to its end: told by the run
//! manager while it executes here; a fork another instance took over
//! (Postgres) is read again every second, for 30 minutes at most; one that
//! left this process unfinished with no live holder is the case's error.
//! Both runs' details are then built as the API shows them, each
//! assertion is checked (`node_runtime::suites::check`), and a failed case
//! carries the diff of the recorded run against its fork. The counts are
//! stored after each case. The suite run then ends `passed` or `failed`
//! with its counts, or `error` when it could not finish (a clean stop of
//! the server ends it so at once); an end is only stored over `running`.

use std::sync::Arc;

use node_runtime::graph::Workflow;
use node_runtime::secrets::SecretOwner;
use node_runtime::wire::{
    diff_runs, CaseResult, ForkRequest, NewSuite, RunDetail, RunKind, RunStatus, SuiteCase,
    SuiteModel, SuiteOptions, SuiteRunStatus, SuiteRunView, SuiteView, SUITE_CASES_MAX,
};
use serde_json::Value;

use crate::run_details::{run_detail, run_detail_of};
use crate::runs::{ForkBase, Runs, SuiteHere, SUITE_STOPPED};
use crate::storage::{new_id, now, RunRow, Store, StoreError, SuiteRow, SuiteRunRow};

/// Why a suite cannot be stored or run.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// A field of the request that is not acceptable, at `path`
    /// (`cases[1].assertions[0].path`).
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    /// Another suite of the workspace has this name.
    #[error("a suite named `{0}` exists already in this workspace")]
    NameTaken(String),
    /// The suite has a case of this name.
    #[error("the suite has a case named `{0}` already: case names are unique in a suite")]
    CaseNameTaken(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn invalid(path: impl Into<String>, message: impl Into<String>) -> SuiteError {
    SuiteError::Invalid {
        path: path.into(),
        message: message.into(),
    }
}

/// The field an assertion's check names first (`` `path` is ... `` ->
/// `path`), so the error's path reaches into the assertion.
fn named_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix('`')?;
    let field = &rest[..rest.find('`')?];
    (!field.is_empty() && field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(field)
}

/// Checks a suite as sent and fills in its defaults (a case's name is its
/// run's id): its shape (`NewSuite::check`), then every case a finished
/// run of the suite's workflow (not a replay) in the caller's workspace,
/// and assertions that can be evaluated. The first problem is returned,
/// naming its field.
pub async fn check_suite(
    store: &Store,
    workspace_id: &str,
    mut suite: NewSuite,
) -> Result<NewSuite, SuiteError> {
    suite
        .check()
        .map_err(|(path, message)| invalid(path, message))?;
    suite.fill_default_names();
    match store.get_workflow(workspace_id, &suite.workflow_id).await {
        Ok(_) => {}
        Err(StoreError::NotFound(_)) => {
            return Err(invalid(
                "workflow_id",
                format!("no workflow {} in this workspace", suite.workflow_id),
            ))
        }
        Err(e) => return Err(e.into()),
    }
    for (i, case) in suite.cases.iter().enumerate() {
        check_case(
            store,
            workspace_id,
            &suite.workflow_id,
            case,
            &format!("cases[{i}]"),
        )
        .await?;
    }
    Ok(suite)
}

/// Checks one case (at `at`: `cases[1]`, `case`) whose shape was checked
/// (`SuiteCase::check`) and default name filled in: its run, its
/// assertions.
async fn check_case(
    store: &Store,
    workspace_id: &str,
    workflow_id: &str,
    case: &SuiteCase,
    at: &str,
) -> Result<(), SuiteError> {
    check_case_run(store, workspace_id, workflow_id, case)
        .await
        .map_err(|e| match e {
            SuiteError::Invalid { message, .. } => invalid(format!("{at}.run_id"), message),
            other => other,
        })?;
    for (j, assertion) in case.assertions.iter().enumerate() {
        if let Err(message) = node_runtime::suites::validate(assertion) {
            let path = match named_field(&message) {
                Some(field) => format!("{at}.assertions[{j}].{field}"),
                None => format!("{at}.assertions[{j}]"),
            };
            return Err(invalid(path, message));
        }
    }
    Ok(())
}

/// Appends `case` to suite `suite_id`, checked like a suite's (errors
/// name `case.<field>`), atomically: a concurrent edit of the suite is
/// not lost (its cases are replaced only if unchanged since read, else
/// read again). A case name the suite has is [`SuiteError::CaseNameTaken`].
pub async fn add_case(
    store: &Store,
    workspace_id: &str,
    suite_id: &str,
    mut case: SuiteCase,
) -> Result<SuiteRow, SuiteError> {
    case.check("case")
        .map_err(|(path, message)| invalid(path, message))?;
    case.fill_default_name();
    let row = store.get_suite(workspace_id, suite_id).await?;
    check_case(store, workspace_id, &row.workflow_id, &case, "case").await?;
    let mut row = row;
    for _ in 0..20 {
        let (mut cases, _) = suite_parts(&row)?;
        if cases.iter().any(|c| c.name == case.name) {
            return Err(SuiteError::CaseNameTaken(case.name));
        }
        if cases.len() >= SUITE_CASES_MAX {
            return Err(invalid(
                "case",
                format!("the suite holds {SUITE_CASES_MAX} cases, the most"),
            ));
        }
        cases.push(case.clone());
        let text = serde_json::to_string(&cases)
            .map_err(|e| StoreError::Corrupt(format!("a suite's JSON: {e}")))?;
        if store
            .replace_suite_cases(workspace_id, suite_id, &row.cases, &text)
            .await?
        {
            return Ok(store.get_suite(workspace_id, suite_id).await?);
        }
        // Changed meanwhile: read again (its workflow may have changed
        // too: the case is checked against it again).
        row = store.get_suite(workspace_id, suite_id).await?;
        check_case(store, workspace_id, &row.workflow_id, &case, "case").await?;
    }
    Err(StoreError::Unavailable(format!(
        "suite {suite_id} changes too often to add a case; try again"
    ))
    .into())
}

/// A case's run: in the workspace, of the workflow, finished, not a replay.
async fn check_case_run(
    store: &Store,
    workspace_id: &str,
    workflow_id: &str,
    case: &SuiteCase,
) -> Result<(), SuiteError> {
    let run = match store.get_run(workspace_id, &case.run_id).await {
        Ok(run) => run,
        Err(StoreError::NotFound(_)) => {
            return Err(invalid(
                "",
                format!("no run {} in this workspace", case.run_id),
            ))
        }
        Err(e) => return Err(e.into()),
    };
    if run.workflow_id.as_deref() != Some(workflow_id) {
        return Err(invalid(
            "",
            format!("run {} is not a run of workflow {workflow_id}", run.id),
        ));
    }
    if run.kind == RunKind::Replay.as_str() {
        return Err(invalid(
            "",
            format!(
                "run {} is a replay: it records no calls of its own to fork",
                run.id
            ),
        ));
    }
    let finished = run
        .status
        .parse::<RunStatus>()
        .is_ok_and(RunStatus::is_final);
    if !finished || run.record.is_none() {
        return Err(invalid(
            "",
            format!(
                "run {} has not finished ({}): only a recorded run can be a case",
                run.id, run.status
            ),
        ));
    }
    Ok(())
}

/// A checked suite as a row (`id`, `created_at` as given).
pub fn suite_row(
    id: &str,
    workspace_id: &str,
    suite: &NewSuite,
    created_at: &str,
) -> Result<SuiteRow, StoreError> {
    let json = |v: Result<String, serde_json::Error>| {
        v.map_err(|e| StoreError::Corrupt(format!("a suite's JSON: {e}")))
    };
    Ok(SuiteRow {
        id: id.into(),
        workspace_id: workspace_id.into(),
        workflow_id: suite.workflow_id.clone(),
        name: suite.name.clone(),
        description: suite.description.clone(),
        cases: json(serde_json::to_string(&suite.cases))?,
        options: json(serde_json::to_string(&suite.options))?,
        created_at: created_at.into(),
        updated_at: now(),
    })
}

/// A stored suite's cases and options.
pub fn suite_parts(row: &SuiteRow) -> Result<(Vec<SuiteCase>, SuiteOptions), StoreError> {
    let cases = serde_json::from_str(&row.cases)
        .map_err(|e| StoreError::Corrupt(format!("the cases of suite {}: {e}", row.id)))?;
    let options = serde_json::from_str(&row.options)
        .map_err(|e| StoreError::Corrupt(format!("the options of suite {}: {e}", row.id)))?;
    Ok((cases, options))
}

/// A suite as the API answers it: with its workflow's name and its latest
/// run (without cases).
pub async fn suite_view(store: &Store, row: &SuiteRow) -> Result<SuiteView, StoreError> {
    let (cases, options) = suite_parts(row)?;
    let workflow_name = match store
        .get_workflow(&row.workspace_id, &row.workflow_id)
        .await
    {
        Ok(w) => Some(w.name),
        Err(StoreError::NotFound(_)) => None,
        Err(e) => return Err(e),
    };
    let last_run = match store
        .list_suite_runs(&row.workspace_id, &row.id, 1)
        .await?
        .first()
    {
        Some(run) => Some(run_view(run)?),
        None => None,
    };
    Ok(SuiteView {
        id: row.id.clone(),
        name: row.name.clone(),
        workflow_id: row.workflow_id.clone(),
        workflow_name,
        description: row.description.clone(),
        cases,
        options,
        created_at: row.created_at.clone(),
        updated_at: row.updated_at.clone(),
        last_run,
    })
}

/// A workspace's suites (of `workflow_id` only when given) as the API
/// answers them, by name.
pub async fn list_views(
    store: &Store,
    workspace_id: &str,
    workflow_id: Option<&str>,
) -> Result<Vec<SuiteView>, StoreError> {
    let rows = store.list_suites(workspace_id, workflow_id).await?;
    let mut views = Vec::with_capacity(rows.len());
    for row in &rows {
        views.push(suite_view(store, row).await?);
    }
    Ok(views)
}

/// A suite run as the API answers it; `cases` empty when the row was read
/// without its verdict (a list) or it has not ended.
pub fn run_view(row: &SuiteRunRow) -> Result<SuiteRunView, StoreError> {
    let status: SuiteRunStatus = row
        .status
        .parse()
        .map_err(|e| StoreError::Corrupt(format!("suite run {}: {e}", row.id)))?;
    let cases: Vec<CaseResult> = match &row.result {
        Some(text) => serde_json::from_str(text).map_err(|e| {
            StoreError::Corrupt(format!("the verdict of suite run {}: {e}", row.id))
        })?,
        None => Vec::new(),
    };
    Ok(SuiteRunView {
        id: row.id.clone(),
        suite_id: row.suite_id.clone(),
        suite_name: row.suite_name.clone(),
        workflow_id: row.workflow_id.clone(),
        revision: u64::try_from(row.revision).unwrap_or(0),
        status,
        started_at: row.started_at.clone(),
        finished_at: row.finished_at.clone(),
        passed: usize::try_from(row.passed).unwrap_or(0),
        failed: usize::try_from(row.failed).unwrap_or(0),
        cases,
        error: row.error.clone(),
    })
}

/// The graph a suite runs against: its workflow's current revision, or
/// `revision` (an error naming `revision` when the workflow has none such).
pub async fn suite_graph(
    store: &Store,
    suite: &SuiteRow,
    revision: Option<u64>,
) -> Result<Workflow, SuiteError> {
    let current = match store
        .get_workflow(&suite.workspace_id, &suite.workflow_id)
        .await
    {
        Ok(w) => w,
        Err(StoreError::NotFound(_)) => {
            return Err(invalid(
                "workflow_id",
                format!(
                    "the suite's workflow {} no longer exists",
                    suite.workflow_id
                ),
            ))
        }
        Err(e) => return Err(e.into()),
    };
    let document = match revision {
        None => current.document,
        Some(n) if i64::try_from(n).ok() == Some(current.revision) => current.document,
        Some(n) => {
            let missing = || {
                invalid(
                    "revision",
                    format!(
                        "workflow {} has no revision {n} (its current revision is {})",
                        suite.workflow_id, current.revision
                    ),
                )
            };
            let n = i64::try_from(n).map_err(|_| missing())?;
            match store
                .revision_in(&suite.workspace_id, &suite.workflow_id, n)
                .await
            {
                Ok(row) => row.document,
                Err(StoreError::NotFound(_)) => return Err(missing()),
                Err(e) => return Err(e.into()),
            }
        }
    };
    Workflow::from_json(&document).map_err(|e| {
        SuiteError::Store(StoreError::Corrupt(format!(
            "workflow {}: {e}",
            suite.workflow_id
        )))
    })
}

/// A suite run stored `running`, not yet executing: hand it to [`execute`]
/// (or [`spawn`]).
pub struct Started {
    pub row: SuiteRunRow,
    here: SuiteHere,
}

/// Why a suite run does not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The workspace has this many suite runs executing here, the most.
    #[error(
        "this workspace has {0} suite runs in progress, its limit; start this one when one ends"
    )]
    Busy(usize),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Stores a new suite run of `suite` against `workflow` as `running`,
/// executed by this process (its row names it, see `runs::suites`).
pub async fn start(
    runs: &Arc<Runs>,
    store: &Store,
    suite: &SuiteRow,
    workflow: &Workflow,
) -> Result<Started, StartError> {
    let owner = runs.suite_owner().await?;
    let row = SuiteRunRow {
        id: new_id(),
        workspace_id: suite.workspace_id.clone(),
        suite_id: suite.id.clone(),
        suite_name: suite.name.clone(),
        workflow_id: suite.workflow_id.clone(),
        revision: workflow.revision as i64,
        status: SuiteRunStatus::Running.as_str().into(),
        started_at: now(),
        finished_at: None,
        passed: 0,
        failed: 0,
        result: None,
        error: None,
        instance: owner,
    };
    // Noted here before its row is stored (see `runs::suites`).
    let here = runs
        .suite_here(&row.id, &row.workspace_id)
        .map_err(StartError::Busy)?;
    store.insert_suite_run(&row).await?;
    Ok(Started { row, here })
}

/// [`execute`] in a task of its own; a panic of it ends the suite run
/// `error` instead of leaving it `running`.
pub fn spawn(
    runs: Arc<Runs>,
    store: Store,
    owner: SecretOwner,
    suite: SuiteRow,
    workflow: Workflow,
    started: Started,
) {
    let (ws, id) = (started.row.workspace_id.clone(), started.row.id.clone());
    let task = tokio::spawn(execute(
        runs,
        store.clone(),
        owner,
        suite,
        workflow,
        started,
    ));
    tokio::spawn(async move {
        if let Err(e) = task.await {
            let why = format!("the suite run failed: {e}");
            tracing::error!(suite_run_id = %id, error = %why, "a suite run's task ended without its end");
            if let Err(e) = store.abort_suite_run(&ws, &id, &why).await {
                tracing::error!(suite_run_id = %id, error = %e, "cannot store a suite run's end");
            }
        }
    });
}

/// How a suite run's cases ended: each case's verdict, or why the suite
/// run could not finish.
enum Outcome {
    Verdict(Vec<CaseResult>),
    Error(String),
}

/// Runs every case of `suite` (see the module's doc) and stores the
/// verdict; returns the suite run as stored at its end.
pub async fn execute(
    runs: Arc<Runs>,
    store: Store,
    owner: SecretOwner,
    suite: SuiteRow,
    workflow: Workflow,
    started: Started,
) -> SuiteRunView {
    let Started { row, here } = started;
    let ws = row.workspace_id.clone();
    let outcome = match suite_parts(&suite) {
        Ok((cases, options)) => {
            run_cases(&runs, &store, &owner, &row, &cases, options, &workflow).await
        }
        Err(e) => Outcome::Error(e.to_string()),
    };
    let error = |why: &str| (SuiteRunStatus::Error, 0, 0, None, Some(why.to_string()));
    let (status, passed, failed, result, why) = match outcome {
        Outcome::Verdict(results) => {
            let passed = results.iter().filter(|c| c.passed).count();
            let failed = results.len() - passed;
            let status = if failed == 0 {
                SuiteRunStatus::Passed
            } else {
                SuiteRunStatus::Failed
            };
            match serde_json::to_string(&results) {
                Ok(text) => (status, passed as i64, failed as i64, Some(text), None),
                Err(e) => error(&format!("cannot store the verdict: {e}")),
            }
        }
        Outcome::Error(why) => error(&why),
    };
    // Guarded: a suite run a stop ended already keeps that end.
    if let Err(e) = store
        .finish_suite_run(
            &ws,
            &row.id,
            status.as_str(),
            passed,
            failed,
            result.as_deref(),
            why.as_deref(),
        )
        .await
    {
        tracing::error!(suite_run_id = %row.id, error = %e, "cannot store a suite run's end");
    }
    drop(here);
    match store
        .get_suite_run(&ws, &row.id)
        .await
        .and_then(|r| run_view(&r))
    {
        Ok(view) => view,
        Err(e) => SuiteRunView {
            status: SuiteRunStatus::Error,
            error: Some(format!("cannot read the suite run back: {e}")),
            ..run_view(&row).unwrap_or_else(|_| empty_view(&row))
        },
    }
}

/// The cases one after another, their counts stored after each; stops
/// (an error) when this process's runs are stopped.
async fn run_cases(
    runs: &Arc<Runs>,
    store: &Store,
    owner: &SecretOwner,
    row: &SuiteRunRow,
    cases: &[SuiteCase],
    options: SuiteOptions,
    workflow: &Workflow,
) -> Outcome {
    let mut results = Vec::with_capacity(cases.len());
    let (mut passed, mut failed) = (0i64, 0i64);
    for case in cases {
        if runs.stopping() {
            return Outcome::Error(SUITE_STOPPED.into());
        }
        let result = run_case(runs, store, owner, case, options, workflow).await;
        // A case a stop cut short is no verdict.
        if runs.stopping() {
            return Outcome::Error(SUITE_STOPPED.into());
        }
        if result.passed {
            passed += 1;
        } else {
            failed += 1;
        }
        results.push(result);
        match store
            .suite_run_progress(&row.workspace_id, &row.id, passed, failed)
            .await
        {
            Ok(true) => {}
            // Ended meanwhile (`error`): nothing more to do.
            Ok(false) => return Outcome::Error(SUITE_STOPPED.into()),
            Err(e) => {
                tracing::warn!(suite_run_id = %row.id, error = %e, "cannot store a suite run's counts")
            }
        }
    }
    Outcome::Verdict(results)
}

fn empty_view(row: &SuiteRunRow) -> SuiteRunView {
    SuiteRunView {
        id: row.id.clone(),
        suite_id: row.suite_id.clone(),
        suite_name: row.suite_name.clone(),
        workflow_id: row.workflow_id.clone(),
        revision: u64::try_from(row.revision).unwrap_or(0),
        status: SuiteRunStatus::Error,
        started_at: row.started_at.clone(),
        finished_at: None,
        passed: 0,
        failed: 0,
        cases: Vec::new(),
        error: None,
    }
}

/// A case that could not be checked, with why.
fn case_error(case: &SuiteCase, fork_id: Option<String>, error: String) -> CaseResult {
    CaseResult {
        name: case.name.clone(),
        run_id: case.run_id.clone(),
        fork_id,
        fork_status: None,
        passed: false,
        assertions: Vec::new(),
        error: Some(error),
        diff: None,
    }
}

/// The longest a case waits for a fork another instance took over
/// (Postgres) to end.
const ELSEWHERE_WAIT: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// Waits for the end of `fork_id`, started here: told by the run manager
/// while it executes here. Then its row must be final; if it is not, the
/// fork either continues on another live instance that took it over
/// (Postgres: its row is read again every second, for
/// [`ELSEWHERE_WAIT`] at most) or nothing will end it (its end could not
/// be stored; this process stopped): an error naming the fork.
async fn await_fork(runs: &Runs, store: &Store, ws: &str, fork_id: &str) -> Result<(), String> {
    runs.wait_end(fork_id).await;
    let deadline = tokio::time::Instant::now() + ELSEWHERE_WAIT;
    loop {
        let run = store.get_run(ws, fork_id).await.map_err(|e| match e {
            StoreError::NotFound(_) => format!("its fork {fork_id} is gone"),
            other => format!("its fork {fork_id}: {other}"),
        })?;
        if run
            .status
            .parse::<RunStatus>()
            .is_ok_and(RunStatus::is_final)
        {
            return Ok(());
        }
        if runs.stopping() {
            return Err(format!(
                "the server stopped before the case's fork {fork_id} ended"
            ));
        }
        match runs.live_holder_elsewhere(fork_id).await {
            Ok(Some(holder)) if tokio::time::Instant::now() < deadline => {
                tracing::debug!(fork_id, %holder, "a case's fork continues on another instance");
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
            Ok(Some(holder)) => {
                return Err(format!(
                    "its fork {fork_id} did not end within {} minutes on instance {holder}",
                    ELSEWHERE_WAIT.as_secs() / 60
                ))
            }
            Ok(None) => {
                return Err(format!(
                    "its fork {fork_id} stopped executing without its end being stored (status {})",
                    run.status
                ))
            }
            Err(e) => return Err(format!("its fork {fork_id}: {e}")),
        }
    }
}

/// Forks one case's run against `workflow`, waits for the fork's end and
/// checks the case's assertions on it.
async fn run_case(
    runs: &Arc<Runs>,
    store: &Store,
    owner: &SecretOwner,
    case: &SuiteCase,
    options: SuiteOptions,
    workflow: &Workflow,
) -> CaseResult {
    let ws = owner.workspace_id.as_str();
    let origin = match store.get_run(ws, &case.run_id).await {
        Ok(run) => run,
        Err(StoreError::NotFound(_)) => {
            return case_error(case, None, format!("its run {} is gone", case.run_id))
        }
        Err(e) => return case_error(case, None, format!("its run {}: {e}", case.run_id)),
    };
    let record = match store.run_record(&origin).await {
        Ok(r) => r,
        Err(e) => return case_error(case, None, format!("the record of its run: {e}")),
    };
    let origin_detail = match detail_of(&origin, record.as_ref()) {
        Ok(d) => d,
        Err(e) => return case_error(case, None, e),
    };
    // A slot of the workspace's runs in progress, reserved for the fork,
    // so it is never refused for the limit nor takes more than it.
    let Some(slot) = runs.wait_slot(ws).await else {
        return case_error(case, None, SUITE_STOPPED.into());
    };
    let request = ForkRequest {
        live_reads: options.live_reads,
        ..ForkRequest::default()
    };
    let base = ForkBase {
        graph: Some(workflow.clone()),
        refuse_writes: true,
        recorded_model: options.model == SuiteModel::Recorded,
        trigger: Some(SUITE_TRIGGER),
        slot: Some(slot),
    };
    let fork_id = match runs
        .fork_from(owner.clone(), &origin, record.as_ref(), &request, base)
        .await
    {
        Ok((id, _)) => id,
        Err(e) => return case_error(case, None, format!("its fork could not start: {e}")),
    };
    if let Err(e) = await_fork(runs, store, ws, &fork_id).await {
        return case_error(case, Some(fork_id), e);
    }
    // Read once, now that it is final.
    let fork_detail = match run_detail_of(store, ws, &fork_id).await {
        Ok(d) => d,
        Err(e) => {
            return case_error(
                case,
                Some(fork_id.clone()),
                format!("its fork {fork_id}: {e}"),
            )
        }
    };
    let assertions: Vec<_> = case
        .assertions
        .iter()
        .map(|a| node_runtime::suites::check(a, &origin_detail, &fork_detail))
        .collect();
    let passed = node_runtime::suites::all_passed(&assertions);
    CaseResult {
        name: case.name.clone(),
        run_id: case.run_id.clone(),
        fork_id: Some(fork_id),
        fork_status: Some(fork_detail.status),
        passed,
        diff: (!passed).then(|| diff_runs(&origin_detail, &fork_detail)),
        assertions,
        error: None,
    }
}

/// The trigger of a suite case's fork, as the Runs list shows it.
pub const SUITE_TRIGGER: &str = "suite";

/// A run's details as the API shows them (its record null while it runs).
fn detail_of(run: &RunRow, record: Option<&Value>) -> Result<RunDetail, String> {
    run_detail(run, record.unwrap_or(&Value::Null)).map_err(|e| format!("run {}: {e}", run.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_an_assertion_check_names_is_found() {
        let cases = [
            ("`path` \"$.\" is not a JSONPath: x", Some("path")),
            ("`schema` is not a valid JSON Schema", Some("schema")),
            ("`max` must be a number", Some("max")),
            ("no field named", None),
            ("`` empty", None),
            ("`a b` spaced", None),
        ];
        for (message, want) in cases {
            assert_eq!(named_field(message), want, "{message}");
        }
    }
}
