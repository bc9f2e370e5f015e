//! Regression suites (issue 33): a named set of recorded runs of one
//! workflow, each with assertions. Running a suite forks every case's run
//! against the workflow's current revision (or a named one), never sends a
//! write (a new write call is refused, `SUITE_NO_WRITES`; a recorded one is
//! answered from the recording), and checks each assertion on the fork.
//!
//! Routes: `POST/GET /api/v1/suites`, `GET/PUT/DELETE /api/v1/suites/{id}`,
//! `POST/GET /api/v1/suites/{id}/runs`, `GET /api/v1/suite-runs/{id}`. The
//! checks themselves live in `crate::suites` (native only: JSONPath and
//! JSON Schema).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{RunDiff, RunStatus, SuiteRunStatus};

/// One assertion of a case, checked on the case's fork when the suite runs.
///
/// Paths are JSONPath (RFC 9535) over the fork's result document:
/// `{"status": <run status>, "outputs": <the workflow's outputs>,
/// "nodes": {<node id>: <an Agent node's outputs, or a Tool node's
/// envelope>}}`, e.g. `$.outputs.answer` or `$.nodes.agent.response`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Assertion {
    /// The workflow's outputs equal the recorded run's.
    OutputsEqual,
    /// The run ended with this status (e.g. `succeeded`).
    Status { equals: RunStatus },
    /// The value at `path` equals `value` (a path that selects several
    /// values equals an array of them).
    PathEquals {
        path: String,
        #[cfg_attr(feature = "openapi", schema(value_type = Object))]
        value: Value,
    },
    /// The value at `path` contains `value`: a substring of a string, an
    /// element of an array, the keys and values of an object.
    PathContains {
        path: String,
        #[cfg_attr(feature = "openapi", schema(value_type = Object))]
        value: Value,
    },
    /// The value at `path` (default `$.outputs`) is valid against `schema`
    /// (JSON Schema).
    MatchesSchema {
        #[serde(default)]
        path: Option<String>,
        #[cfg_attr(feature = "openapi", schema(value_type = Object))]
        schema: Value,
    },
    /// At least one call of `tool` ran (was not refused), in `node` or in
    /// any node.
    ToolCalled {
        tool: String,
        #[serde(default)]
        node: Option<String>,
    },
    /// No call of `tool` ran, in `node` or in any node.
    ToolNotCalled {
        tool: String,
        #[serde(default)]
        node: Option<String>,
    },
    /// At most `max` tool calls (of `tool`, in `node`, when given),
    /// refused calls included.
    MaxCalls {
        max: u32,
        #[serde(default)]
        tool: Option<String>,
        #[serde(default)]
        node: Option<String>,
    },
    /// The run's model cost is below `max` (US dollars for the real
    /// providers, the script's own unit for the scripted one).
    CostBelow { max: f64 },
}

impl Assertion {
    /// A short text of what the assertion asks, for lists and the CLI.
    pub fn describe(&self) -> String {
        let within = |node: &Option<String>| match node {
            Some(node) => format!(" in node {node}"),
            None => String::new(),
        };
        match self {
            Self::OutputsEqual => "outputs equal the recorded run's".into(),
            Self::Status { equals } => format!("status is {equals}"),
            Self::PathEquals { path, value } => format!("{path} equals {value}"),
            Self::PathContains { path, value } => format!("{path} contains {value}"),
            Self::MatchesSchema { path, .. } => format!(
                "{} matches the schema",
                path.as_deref().unwrap_or("$.outputs")
            ),
            Self::ToolCalled { tool, node } => format!("{tool} is called{}", within(node)),
            Self::ToolNotCalled { tool, node } => {
                format!("{tool} is not called{}", within(node))
            }
            Self::MaxCalls { max, tool, node } => format!(
                "at most {max} calls{}{}",
                tool.as_ref()
                    .map(|t| format!(" of {t}"))
                    .unwrap_or_default(),
                within(node)
            ),
            Self::CostBelow { max } => format!("cost below {max}"),
        }
    }
}

/// One case: a recorded run and what its fork must satisfy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SuiteCase {
    /// The case's name, unique in its suite (default: the run's id).
    #[serde(default)]
    pub name: String,
    /// A finished run of the suite's workflow (not a replay).
    pub run_id: String,
    /// At least one.
    pub assertions: Vec<Assertion>,
}

/// Where a suite's forks get their model's answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum SuiteModel {
    /// The revision's own provider: a scripted model runs its script, a
    /// real provider is called (with its key).
    #[default]
    Workflow,
    /// Every Agent node the recorded run had answers with the recorded
    /// answers, in order (offline for every provider): the suite then
    /// checks tools, policy and graph changes against what the model said.
    Recorded,
}

/// How a suite runs its cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SuiteOptions {
    #[serde(default)]
    pub model: SuiteModel,
    /// Whether a read call the recorded run did not make runs live
    /// (default: refused, `LIVE_READS_OFF`). Writes never run.
    #[serde(default)]
    pub live_reads: bool,
}

/// Body of `POST /api/v1/suites` and `PUT /api/v1/suites/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewSuite {
    /// Unique in the workspace; 1 to 100 characters.
    pub name: String,
    pub workflow_id: String,
    #[serde(default)]
    pub description: String,
    pub cases: Vec<SuiteCase>,
    #[serde(default)]
    pub options: SuiteOptions,
}

/// A suite (`GET /api/v1/suites/{id}`, an item of the list).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SuiteView {
    pub id: String,
    pub name: String,
    pub workflow_id: String,
    /// The workflow's name (null if it was deleted).
    pub workflow_name: Option<String>,
    pub description: String,
    pub cases: Vec<SuiteCase>,
    pub options: SuiteOptions,
    pub created_at: String,
    pub updated_at: String,
    /// The latest run of the suite, without its cases.
    pub last_run: Option<SuiteRunView>,
}

/// Body of `GET /api/v1/suites`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SuiteList {
    pub suites: Vec<SuiteView>,
}

/// Body of `POST /api/v1/suites/{id}/runs`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SuiteRunRequest {
    /// The workflow revision to run against (default: the current one).
    #[serde(default)]
    pub revision: Option<u64>,
}

/// One assertion's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AssertionResult {
    pub assertion: Assertion,
    pub passed: bool,
    /// What was found, in words (why it failed).
    pub message: String,
}

/// One case's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CaseResult {
    pub name: String,
    /// The recorded run.
    pub run_id: String,
    /// The case's fork (null if it could not start: see `error`).
    pub fork_id: Option<String>,
    pub fork_status: Option<RunStatus>,
    pub passed: bool,
    pub assertions: Vec<AssertionResult>,
    /// Why the case could not be checked (its run is gone, the fork could
    /// not start).
    pub error: Option<String>,
    /// For a failed case: the recorded run against its fork, call by call.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub diff: Option<RunDiff>,
}

/// A suite run (`GET /api/v1/suite-runs/{id}`, an item of a suite's
/// history, where `cases` is empty).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SuiteRunView {
    pub id: String,
    pub suite_id: String,
    pub suite_name: String,
    pub workflow_id: String,
    /// The workflow revision the cases were forked against.
    pub revision: u64,
    pub status: SuiteRunStatus,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub passed: usize,
    pub failed: usize,
    pub cases: Vec<CaseResult>,
    pub error: Option<String>,
}

impl SuiteRunView {
    /// Whether the suite run is over.
    pub fn is_final(&self) -> bool {
        self.status != SuiteRunStatus::Running
    }
}

/// Body of `GET /api/v1/suites/{id}/runs`: newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SuiteRunList {
    pub runs: Vec<SuiteRunView>,
}
