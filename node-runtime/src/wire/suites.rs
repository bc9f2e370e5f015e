//! Regression suites (issue 33): a named set of recorded runs of one
//! workflow, each with assertions. Running a suite forks every case's run
//! against the workflow's current revision (or a named one), never sends a
//! write (a new write call is refused, `SUITE_NO_WRITES`; a recorded one is
//! answered from the recording), and checks each assertion on the fork.
//!
//! Routes: `POST/GET /api/v1/suites`, `GET/PUT/DELETE /api/v1/suites/{id}`,
//! `POST /api/v1/suites/{id}/cases`, `POST/GET /api/v1/suites/{id}/runs`,
//! `GET /api/v1/suite-runs/{id}`. A suite's shape (its limits, unique case
//! names, a case's default name) is checked here ([`NewSuite::check`],
//! [`SuiteCase::check`]: wasm-safe, so the app may check before sending);
//! the assertions' checks live in `crate::suites` (native only: JSONPath
//! and JSON Schema), the look-ups of its workflow and runs in the server.

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

/// The longest suite name, in characters (at least 1, not blank).
pub const SUITE_NAME_MAX: usize = 100;
/// The longest suite description, in characters.
pub const SUITE_DESCRIPTION_MAX: usize = 2000;
/// The most cases a suite holds.
pub const SUITE_CASES_MAX: usize = 200;
/// The longest case name, in characters.
pub const CASE_NAME_MAX: usize = 200;
/// The most assertions a case holds.
pub const CASE_ASSERTIONS_MAX: usize = 100;

/// A field that is not acceptable: its path in the body
/// (`cases[1].name`) and why.
pub type ShapeError = (String, String);

impl SuiteCase {
    /// Names a case without a name after its run (its default).
    pub fn fill_default_name(&mut self) {
        if self.name.trim().is_empty() {
            self.name = self.run_id.clone();
        }
    }

    /// The case's name, or its run's id when it has none (its default).
    pub fn effective_name(&self) -> &str {
        if self.name.trim().is_empty() {
            &self.run_id
        } else {
            &self.name
        }
    }

    /// The case's shape (at `at`: `cases[1]`, `case`), its default name
    /// filled in first: its name's length, one to
    /// [`CASE_ASSERTIONS_MAX`] assertions.
    pub fn check(&self, at: &str) -> Result<(), ShapeError> {
        if self.effective_name().chars().count() > CASE_NAME_MAX {
            return Err((
                format!("{at}.name"),
                format!("at most {CASE_NAME_MAX} characters"),
            ));
        }
        if self.assertions.is_empty() {
            return Err((
                format!("{at}.assertions"),
                "a case needs at least one assertion".into(),
            ));
        }
        if self.assertions.len() > CASE_ASSERTIONS_MAX {
            return Err((
                format!("{at}.assertions"),
                format!("a case holds at most {CASE_ASSERTIONS_MAX} assertions"),
            ));
        }
        Ok(())
    }
}

impl NewSuite {
    /// Names each case without a name after its run.
    pub fn fill_default_names(&mut self) {
        self.cases.iter_mut().for_each(SuiteCase::fill_default_name);
    }

    /// The suite's shape, as sent (default names taken into account): its
    /// name, description, one to [`SUITE_CASES_MAX`] cases with unique
    /// names, each case's shape ([`SuiteCase::check`]). The first problem.
    pub fn check(&self) -> Result<(), ShapeError> {
        let length = self.name.chars().count();
        if self.name.trim().is_empty() || length > SUITE_NAME_MAX {
            return Err((
                "name".into(),
                format!(
                    "a suite's name is 1 to {SUITE_NAME_MAX} characters, not blank ({length} given)"
                ),
            ));
        }
        if self.name.chars().any(char::is_control) {
            return Err((
                "name".into(),
                "a suite's name has no control characters".into(),
            ));
        }
        if self.description.chars().count() > SUITE_DESCRIPTION_MAX {
            return Err((
                "description".into(),
                format!("at most {SUITE_DESCRIPTION_MAX} characters"),
            ));
        }
        if self.cases.is_empty() {
            return Err(("cases".into(), "a suite needs at least one case".into()));
        }
        if self.cases.len() > SUITE_CASES_MAX {
            return Err((
                "cases".into(),
                format!(
                    "a suite holds at most {SUITE_CASES_MAX} cases, not {}",
                    self.cases.len()
                ),
            ));
        }
        let mut names = std::collections::HashSet::new();
        for (i, case) in self.cases.iter().enumerate() {
            let at = format!("cases[{i}]");
            let name = case.effective_name();
            if !names.insert(name) {
                return Err((
                    format!("{at}.name"),
                    format!("another case is named `{name}`: case names are unique in a suite"),
                ));
            }
            case.check(&at)?;
        }
        Ok(())
    }
}

/// Body of `POST /api/v1/suites` and `PUT /api/v1/suites/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewSuite {
    /// Unique in the workspace; 1 to [`SUITE_NAME_MAX`] characters.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, run: &str, assertions: usize) -> SuiteCase {
        SuiteCase {
            name: name.into(),
            run_id: run.into(),
            assertions: vec![Assertion::OutputsEqual; assertions],
        }
    }

    fn suite(name: &str, cases: Vec<SuiteCase>) -> NewSuite {
        NewSuite {
            name: name.into(),
            workflow_id: "w".into(),
            description: String::new(),
            cases,
            options: SuiteOptions::default(),
        }
    }

    #[test]
    fn a_suite_shape_is_checked_field_by_field() {
        let path = |s: NewSuite| s.check().err().map(|(p, _)| p);
        assert_eq!(path(suite("ok", vec![case("", "r1", 1)])), None);
        assert_eq!(
            path(suite(" ", vec![case("", "r1", 1)])),
            Some("name".into())
        );
        let long = "x".repeat(SUITE_NAME_MAX + 1);
        assert_eq!(
            path(suite(&long, vec![case("", "r1", 1)])),
            Some("name".into())
        );
        assert_eq!(path(suite("s", vec![])), Some("cases".into()));
        let many = vec![case("", "r", 1); SUITE_CASES_MAX + 1];
        assert_eq!(path(suite("s", many)), Some("cases".into()));
        // The default name (the run's id) counts in the uniqueness.
        assert_eq!(
            path(suite("s", vec![case("", "r1", 1), case("r1", "r2", 1)])),
            Some("cases[1].name".into())
        );
        assert_eq!(
            path(suite("s", vec![case("", "r1", 0)])),
            Some("cases[0].assertions".into())
        );
        assert_eq!(
            path(suite("s", vec![case("", "r1", CASE_ASSERTIONS_MAX + 1)])),
            Some("cases[0].assertions".into())
        );
        let mut named = suite("s", vec![case("", "r1", 1)]);
        named.fill_default_names();
        assert_eq!(named.cases[0].name, "r1");
    }
}
