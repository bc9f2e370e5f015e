//! Regression suites (issue 33): a named set of recorded runs of one
//! workflow, each case with assertions (`node_runtime::wire::suites`).
//! Used by the API (`api/suites.rs`) and `glassbox suite` (`cli/suite.rs`)
//! alike.
//!
//! Running a suite stores a suite run `running` (with the instance that
//! executes it, see `runs::suites`), then forks each case's recorded run
//! in turn, through the one fork path (`Runs::fork_from`), against the
//! workflow revision asked for, never sending a write (a new write call is
//! refused, `SUITE_NO_WRITES`; a recorded one is answered from the
//! recording) and, with `model: recorded`, answering every Agent node from
//! its recorded model answers. Each fork is awaited to its end (told by
//! the run manager, no polling), both runs' details are built as the API
//! shows them, each assertion is checked (`node_runtime::suites::check`),
//! and a failed case carries the diff of the recorded run against its
//! fork. The suite run then ends `passed` or `failed` with its counts, or
//! `error` when it could not finish. Cases run one at a time, each waiting
//! for a free run slot of its workspace, so a suite never fails on the
//! runs-in-progress limit.

use std::collections::HashSet;
use std::sync::Arc;

use node_runtime::graph::Workflow;
use node_runtime::secrets::SecretOwner;
use node_runtime::wire::{
    diff_runs, CaseResult, ForkRequest, NewSuite, RunDetail, RunKind, RunStatus, SuiteCase,
    SuiteModel, SuiteOptions, SuiteRunStatus, SuiteRunView, SuiteView,
};
use serde_json::Value;

use crate::api::views::run_detail;
use crate::runs::{ForkBase, Runs, SuiteHere};
use crate::storage::{new_id, now, Store, StoreError, SuiteRow, SuiteRunRow};

/// The most cases a suite holds.
pub const MAX_CASES: usize = 200;
/// The most assertions a case holds.
pub const MAX_ASSERTIONS: usize = 100;

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
/// run's id): every case a finished run of the suite's workflow (not a
/// replay) in the caller's workspace, names unique, assertions that can be
/// evaluated. The first problem is returned, naming its field.
pub async fn check_suite(
    store: &Store,
    workspace_id: &str,
    mut suite: NewSuite,
) -> Result<NewSuite, SuiteError> {
    let length = suite.name.chars().count();
    if suite.name.trim().is_empty() || length > 100 {
        return Err(invalid(
            "name",
            format!("a suite's name is 1 to 100 characters, not blank ({length} given)"),
        ));
    }
    if suite.name.chars().any(char::is_control) {
        return Err(invalid("name", "a suite's name has no control characters"));
    }
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
    if suite.description.chars().count() > 2000 {
        return Err(invalid("description", "at most 2000 characters"));
    }
    if suite.cases.is_empty() {
        return Err(invalid("cases", "a suite needs at least one case"));
    }
    if suite.cases.len() > MAX_CASES {
        return Err(invalid(
            "cases",
            format!(
                "a suite holds at most {MAX_CASES} cases, not {}",
                suite.cases.len()
            ),
        ));
    }
    let mut names = HashSet::new();
    for (i, case) in suite.cases.iter_mut().enumerate() {
        let at = format!("cases[{i}]");
        if case.name.trim().is_empty() {
            case.name = case.run_id.clone();
        }
        if case.name.chars().count() > 200 {
            return Err(invalid(format!("{at}.name"), "at most 200 characters"));
        }
        if !names.insert(case.name.clone()) {
            return Err(invalid(
                format!("{at}.name"),
                format!(
                    "another case is named `{}`: case names are unique in a suite",
                    case.name
                ),
            ));
        }
        check_case_run(store, workspace_id, &suite.workflow_id, case)
            .await
            .map_err(|e| match e {
                SuiteError::Invalid { message, .. } => invalid(format!("{at}.run_id"), message),
                other => other,
            })?;
        if case.assertions.is_empty() {
            return Err(invalid(
                format!("{at}.assertions"),
                "a case needs at least one assertion",
            ));
        }
        if case.assertions.len() > MAX_ASSERTIONS {
            return Err(invalid(
                format!("{at}.assertions"),
                format!("a case holds at most {MAX_ASSERTIONS} assertions"),
            ));
        }
        for (j, assertion) in case.assertions.iter().enumerate() {
            if let Err(message) = node_runtime::suites::validate(assertion) {
                let path = match named_field(&message) {
                    Some(field) => format!("{at}.assertions[{j}].{field}"),
                    None => format!("{at}.assertions[{j}]"),
                };
                return Err(invalid(path, message));
            }
        }
    }
    Ok(suite)
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
            match store.revision(&suite.workflow_id, n).await {
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

/// A suite run stored `running`, not yet executing: hand it to [`execute`].
pub struct Started {
    pub row: SuiteRunRow,
    here: SuiteHere,
}

/// Stores a new suite run of `suite` against `workflow` as `running`,
/// executed by this process.
pub async fn start(
    runs: &Arc<Runs>,
    store: &Store,
    suite: &SuiteRow,
    workflow: &Workflow,
) -> Result<Started, StoreError> {
    // On Postgres the instance's lock tells others this process lives (a
    // start marks the suite runs of a gone one `error`).
    if let Err(e) = runs.hold_instance_name().await {
        tracing::warn!(error = %e, "cannot hold this process's instance name");
    }
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
        instance: runs.instance_name().to_string(),
    };
    let here = runs.suite_here(&row.id);
    store.insert_suite_run(&row).await?;
    Ok(Started { row, here })
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
            let mut results = Vec::with_capacity(cases.len());
            for case in &cases {
                results.push(run_case(&runs, &store, &owner, case, options, &workflow).await);
            }
            Ok(results)
        }
        Err(e) => Err(e.to_string()),
    };
    let stored = match outcome {
        Ok(results) => {
            let passed = results.iter().filter(|c| c.passed).count();
            let failed = results.len() - passed;
            let status = if failed == 0 {
                SuiteRunStatus::Passed
            } else {
                SuiteRunStatus::Failed
            };
            match serde_json::to_string(&results) {
                Ok(text) => {
                    store
                        .finish_suite_run(
                            &ws,
                            &row.id,
                            status.as_str(),
                            passed as i64,
                            failed as i64,
                            Some(&text),
                            None,
                        )
                        .await
                }
                Err(e) => {
                    store
                        .finish_suite_run(
                            &ws,
                            &row.id,
                            SuiteRunStatus::Error.as_str(),
                            0,
                            0,
                            None,
                            Some(&format!("cannot store the verdict: {e}")),
                        )
                        .await
                }
            }
        }
        Err(why) => {
            store
                .finish_suite_run(
                    &ws,
                    &row.id,
                    SuiteRunStatus::Error.as_str(),
                    0,
                    0,
                    None,
                    Some(&why),
                )
                .await
        }
    };
    if let Err(e) = stored {
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

/// A run's details as the API shows them.
async fn detail(store: &Store, workspace_id: &str, run_id: &str) -> Result<RunDetail, String> {
    let run = store
        .get_run(workspace_id, run_id)
        .await
        .map_err(|e| match e {
            StoreError::NotFound(_) => format!("run {run_id} is gone"),
            other => format!("run {run_id}: {other}"),
        })?;
    let record = store
        .run_record(&run)
        .await
        .map_err(|e| format!("the record of run {run_id}: {e}"))?
        .unwrap_or(Value::Null);
    run_detail(&run, &record).map_err(|e| format!("run {run_id}: {e}"))
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
    let origin_detail = match run_detail(&origin, record.as_ref().unwrap_or(&Value::Null)) {
        Ok(d) => d,
        Err(e) => return case_error(case, None, format!("its run {}: {e}", origin.id)),
    };
    // A slot of the workspace's runs in progress, so the fork is never
    // refused for the limit.
    runs.wait_for_slot(ws).await;
    let request = ForkRequest {
        live_reads: options.live_reads,
        ..ForkRequest::default()
    };
    let base = ForkBase {
        graph: Some(workflow.clone()),
        refuse_writes: true,
        recorded_model: options.model == SuiteModel::Recorded,
    };
    let fork_id = match runs
        .fork_from(owner.clone(), &origin, record.as_ref(), &request, base)
        .await
    {
        Ok((id, _)) => id,
        Err(e) => return case_error(case, None, format!("its fork could not start: {e}")),
    };
    runs.wait_end(&fork_id).await;
    let fork_detail = loop {
        match detail(store, ws, &fork_id).await {
            Ok(d) if d.is_active() && runs.stopping() => {
                return case_error(
                    case,
                    Some(fork_id),
                    "the server stopped before the case's fork ended".into(),
                )
            }
            // Given up here to another instance (Postgres): it continues
            // there; its end is read from the table.
            Ok(d) if d.is_active() => tokio::time::sleep(std::time::Duration::from_secs(1)).await,
            Ok(d) => break d,
            Err(e) => return case_error(case, Some(fork_id), e),
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
