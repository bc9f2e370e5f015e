//! The suites pages' model, free of the DOM (issue 33): the assertions a
//! new case starts with, a case's assertions as text and back (a bad text
//! refused in words), the suite to send after adding, removing or editing a
//! case, the revision field, and a suite run's verdict in words. Suites
//! themselves are `node_runtime::wire`'s `SuiteView` and `SuiteRunView`.

use std::collections::BTreeSet;

use node_runtime::wire::{
    Assertion, NewSuite, RunDetail, SuiteCase, SuiteOptions, SuiteRunStatus, SuiteRunView,
    SuiteView, SUITE_NAME_MAX,
};

/// The kinds of assertion, as a bad text's message lists them.
pub const KINDS: &str = "outputs_equal, status, path_equals, path_contains, matches_schema, \
tool_called, tool_not_called, max_calls, cost_below";

/// The assertions a new case of `run` starts with: the workflow's outputs
/// equal the recorded run's, and every tool the run called successfully is
/// called again (each tool once, in the order of its first call).
pub fn suggested_assertions(run: &RunDetail) -> Vec<Assertion> {
    let mut seen = BTreeSet::new();
    let mut assertions = vec![Assertion::OutputsEqual];
    for (_, call) in run.calls() {
        if call.error.is_none() && seen.insert(call.name.clone()) {
            assertions.push(Assertion::ToolCalled {
                tool: call.name,
                node: None,
            });
        }
    }
    assertions
}

/// A case's assertions as the editor shows them: a JSON list, one
/// assertion per line, without the optional fields left out (null).
pub fn assertions_text(assertions: &[Assertion]) -> String {
    let lines: Vec<String> = assertions
        .iter()
        .map(|a| {
            let mut value = serde_json::to_value(a).unwrap_or_default();
            if let Some(fields) = value.as_object_mut() {
                fields.retain(|_, v| !v.is_null());
            }
            format!("  {value}")
        })
        .collect();
    if lines.is_empty() {
        "[]".into()
    } else {
        format!("[\n{}\n]", lines.join(",\n"))
    }
}

/// A case's assertions from the editor's text; what is wrong, in words,
/// before anything is sent.
pub fn parse_assertions(text: &str) -> Result<Vec<Assertion>, String> {
    if text.trim().is_empty() {
        return Err(
            "Write the case's assertions: a JSON list such as [{\"kind\": \"outputs_equal\"}]."
                .into(),
        );
    }
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("The assertions are not valid JSON: {e}."))?;
    let serde_json::Value::Array(items) = value else {
        return Err("The assertions must be a JSON list: [ … ], one object per assertion.".into());
    };
    if items.is_empty() {
        return Err("A case needs at least one assertion.".into());
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let parsed = serde_json::from_value::<Assertion>(item.clone()).map_err(|e| {
                format!(
                    "Assertion {} is not valid: {e}. Each one is an object with a \"kind\": {KINDS}.",
                    i + 1
                )
            })?;
            // A kind without fields takes any (serde's internally tagged
            // unit variants): a misspelt field is refused here instead.
            let known = serde_json::to_value(&parsed).unwrap_or_default();
            let unknown = item
                .as_object()
                .into_iter()
                .flat_map(|fields| fields.keys())
                .find(|key| known.get(key.as_str()).is_none());
            match unknown {
                Some(key) => Err(format!(
                    "Assertion {} ({}) has no field `{key}`.",
                    i + 1,
                    parsed.describe()
                )),
                None => Ok(parsed),
            }
        })
        .collect()
}

/// A suite as the body that replaces it (`PUT`).
pub fn as_new(suite: &SuiteView) -> NewSuite {
    NewSuite {
        name: suite.name.clone(),
        workflow_id: suite.workflow_id.clone(),
        description: suite.description.clone(),
        cases: suite.cases.clone(),
        options: suite.options,
    }
}

/// A case of `run_id` named `name` (empty: the server names it by the
/// run's id) with `assertions`.
pub fn case(name: &str, run_id: &str, assertions: Vec<Assertion>) -> SuiteCase {
    SuiteCase {
        name: name.trim().to_string(),
        run_id: run_id.to_string(),
        assertions,
    }
}

/// A new suite named `name` of `workflow_id` with its first case.
pub fn new_suite(name: &str, workflow_id: &str, case: SuiteCase) -> Result<NewSuite, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("Give the new suite a name.".into());
    }
    if name.chars().count() > SUITE_NAME_MAX {
        return Err(format!(
            "A suite's name is at most {SUITE_NAME_MAX} characters."
        ));
    }
    Ok(NewSuite {
        name: name.to_string(),
        workflow_id: workflow_id.to_string(),
        description: String::new(),
        cases: vec![case],
        options: SuiteOptions::default(),
    })
}

/// Why `case` cannot be appended to `suite` as last listed, if it cannot:
/// the run is already a case, or the name is taken. (The server checks
/// again when it appends: another user may have appended since.)
pub fn append_problem(suite: &SuiteView, case: &SuiteCase) -> Option<String> {
    if suite.cases.iter().any(|c| c.run_id == case.run_id) {
        return Some(format!(
            "This run is already a case of \u{201c}{}\u{201d}.",
            suite.name
        ));
    }
    if !case.name.is_empty() && suite.cases.iter().any(|c| c.name == case.name) {
        return Some(format!(
            "\u{201c}{}\u{201d} already has a case named \u{201c}{}\u{201d}: choose another name.",
            suite.name, case.name
        ));
    }
    None
}

/// What the Add to suite panel says when the server refused to append
/// (409: the name was taken meanwhile; 422: a field of the case).
pub fn append_refused(suite: &str, error: &str) -> String {
    format!("Not added to \u{201c}{suite}\u{201d}: {error}")
}

/// Why no case of `suite` can be removed, if none can: a suite keeps at
/// least one case (the server refuses one without).
pub fn remove_problem(suite: &SuiteView) -> Option<&'static str> {
    (suite.cases.len() <= 1).then_some(LAST_CASE)
}

/// The hint on the last case's disabled Remove.
pub const LAST_CASE: &str = "a suite needs a case; delete the suite instead";

/// `suite` without its case at `index`.
pub fn without_case(suite: &SuiteView, index: usize) -> NewSuite {
    let mut new = as_new(suite);
    if index < new.cases.len() {
        new.cases.remove(index);
    }
    new
}

/// `suite` with the assertions of its case at `index` replaced.
pub fn with_assertions(suite: &SuiteView, index: usize, assertions: Vec<Assertion>) -> NewSuite {
    let mut new = as_new(suite);
    if let Some(case) = new.cases.get_mut(index) {
        case.assertions = assertions;
    }
    new
}

/// `suite` with other options.
pub fn with_options(suite: &SuiteView, options: SuiteOptions) -> NewSuite {
    let mut new = as_new(suite);
    new.options = options;
    new
}

/// The "Run suite" revision field: empty for the workflow's current
/// revision, else a whole number of 1 or more.
pub fn parse_revision(text: &str) -> Result<Option<u64>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => Err(format!(
            "The revision is a whole number of 1 or more (or empty for the current one), not \u{201c}{text}\u{201d}."
        )),
    }
}

/// A suite run's counts: "3 of 3 passed", "1 of 3 passed, 2 failed".
pub fn counts(run: &SuiteRunView) -> String {
    let total = run.passed + run.failed;
    if run.failed == 0 {
        format!("{} of {total} passed", run.passed)
    } else {
        format!("{} of {total} passed, {} failed", run.passed, run.failed)
    }
}

/// A suite run's verdict in words; `cases` is the suite's number of cases
/// (the progress of a run still checking them).
pub fn verdict(run: &SuiteRunView, cases: usize) -> String {
    match run.status {
        SuiteRunStatus::Running => {
            // The counts are stored after each case; the suite may have
            // been edited since the run started, so never "4 of 3".
            let checked = run.passed + run.failed;
            let total = cases.max(checked);
            let failed = if run.failed == 0 {
                String::new()
            } else {
                format!(" ({} failed)", run.failed)
            };
            format!(
                "Running against revision {}: {checked} of {total} case(s) checked so far{failed}.",
                run.revision
            )
        }
        SuiteRunStatus::Passed => {
            format!("Passed: {} against revision {}.", counts(run), run.revision)
        }
        SuiteRunStatus::Failed => {
            format!("Failed: {} against revision {}.", counts(run), run.revision)
        }
        SuiteRunStatus::Error => format!(
            "The suite run could not finish: {}",
            run.error
                .clone()
                .unwrap_or_else(|| "no reason was recorded.".into())
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use node_runtime::wire::{RunKind, RunStatus, SuiteModel};
    use serde_json::json;

    fn envelope(id: &str, name: &str, failed: bool) -> serde_json::Value {
        let mut e = json!({"call_id": id, "name": name, "version": "1.0.0", "input": {}, "output": 1,
            "t_start": "2026-11-26T06:00:00.000Z", "t_end": "2026-11-26T06:00:00.001Z"});
        if failed {
            e["output"] = serde_json::Value::Null;
            e["error"] = json!({"code": "POLICY_DENIED", "message": "not allowed"});
        }
        e
    }

    fn run(agent_calls: &[(&str, &str, bool)], tool_node: Option<(&str, &str)>) -> RunDetail {
        let tools_by_id: serde_json::Map<String, serde_json::Value> = agent_calls
            .iter()
            .map(|(id, name, failed)| (id.to_string(), envelope(id, name, *failed)))
            .collect();
        let order: Vec<&str> = agent_calls.iter().map(|(id, _, _)| *id).collect();
        let mut nodes = json!({});
        if let Some((node, tool)) = tool_node {
            nodes[node] = json!({"node_id": node, "status": "done", "outputs": {}, "error": null,
                "envelope": envelope("t1", tool, false),
                "started_at": "2026-11-26T06:00:01Z", "finished_at": "2026-11-26T06:00:01Z"});
        }
        serde_json::from_value(json!({
            "id": "r1", "workflow_id": "w1", "workflow_revision": 1, "kind": "run",
            "replay_of": null, "status": "succeeded", "trigger": "api",
            "error": null, "created_at": "2026-11-26T06:00:00Z", "finished_at": "2026-11-26T06:00:02Z",
            "duration_ms": 2.0, "nodes": nodes,
            "agent_outputs": {"agent": {"response": "42", "tools_by_id": tools_by_id, "tool_order": order}}
        }))
        .expect("a run detail")
    }

    fn suite(cases: Vec<SuiteCase>) -> SuiteView {
        SuiteView {
            id: "s1".into(),
            name: "calc regression".into(),
            workflow_id: "w1".into(),
            workflow_name: Some("Calc".into()),
            description: String::new(),
            cases,
            options: SuiteOptions::default(),
            created_at: "2026-11-26T06:00:00Z".into(),
            updated_at: "2026-11-26T06:00:00Z".into(),
            last_run: None,
        }
    }

    #[test]
    fn suggested_assertions_name_each_tool_that_ran_once() {
        let r = run(
            &[
                ("c1", "calculator", false),
                ("c2", "json_query", true),
                ("c3", "calculator", false),
                ("c4", "json_query", false),
                ("c5", "write_file", true),
            ],
            Some(("fetch", "http_request")),
        );
        assert_eq!(r.kind, RunKind::Run);
        let got = suggested_assertions(&r);
        let described: Vec<String> = got.iter().map(Assertion::describe).collect();
        assert_eq!(
            described,
            [
                "outputs equal the recorded run's",
                "calculator is called",
                "json_query is called",
                "http_request is called"
            ]
        );
        assert_eq!(
            serde_json::to_value(&got[1]).unwrap(),
            json!({"kind": "tool_called", "tool": "calculator", "node": null})
        );
        let none = suggested_assertions(&run(&[("c1", "calculator", true)], None));
        assert_eq!(none, vec![Assertion::OutputsEqual]);
    }

    #[test]
    fn assertions_round_trip_through_the_text() {
        let assertions = vec![
            Assertion::OutputsEqual,
            Assertion::ToolCalled {
                tool: "calculator".into(),
                node: None,
            },
            Assertion::Status {
                equals: RunStatus::Succeeded,
            },
        ];
        let text = assertions_text(&assertions);
        assert_eq!(
            text,
            "[\n  {\"kind\":\"outputs_equal\"},\n  {\"kind\":\"tool_called\",\"tool\":\"calculator\"},\n  {\"equals\":\"succeeded\",\"kind\":\"status\"}\n]"
        );
        assert_eq!(parse_assertions(&text), Ok(assertions));
        assert_eq!(assertions_text(&[]), "[]");
    }

    #[test]
    fn a_bad_text_is_refused_in_words() {
        let check = |text: &str, want: &str| {
            let err = parse_assertions(text).expect_err(text);
            assert!(err.contains(want), "{text:?}: {err}");
        };
        check("  ", "Write the case's assertions");
        check("[{\"kind\"", "not valid JSON");
        check("{\"kind\": \"outputs_equal\"}", "must be a JSON list");
        check("[]", "at least one assertion");
        check(
            "[{\"kind\": \"outputs_equal\"}, {\"kind\": \"tool_caled\", \"tool\": \"x\"}]",
            "Assertion 2 is not valid",
        );
        check("[{\"kind\": \"tool_called\"}]", "missing field `tool`");
        check("[{\"kind\": \"max_calls\", \"max\": -1}]", "Assertion 1");
        check(
            "[{\"kind\": \"outputs_equal\", \"extra\": 1}]",
            "Assertion 1 (outputs equal the recorded run's) has no field `extra`.",
        );
        check(
            "[{\"kind\": \"tool_called\", \"tool\": \"x\", \"nod\": \"a\"}]",
            "Assertion 1",
        );
        assert!(parse_assertions("[{\"kind\": \"cost_below\", \"max\": 0.5}]").is_ok());
    }

    #[test]
    fn a_new_suite_needs_a_name() {
        let c = case("  ", "r1", vec![Assertion::OutputsEqual]);
        assert_eq!(c.name, "");
        assert_eq!(
            new_suite(" ", "w1", c.clone()),
            Err("Give the new suite a name.".into())
        );
        assert!(new_suite(&"x".repeat(101), "w1", c.clone())
            .unwrap_err()
            .contains("at most 100"));
        let s = new_suite(" calc regression ", "w1", c.clone()).expect("a suite");
        assert_eq!(s.name, "calc regression");
        assert_eq!(s.cases, vec![c]);
        assert_eq!(s.options.model, SuiteModel::Workflow);
    }

    #[test]
    fn cases_are_appended_edited_and_removed_on_the_whole_suite() {
        let first = case("first", "r1", vec![Assertion::OutputsEqual]);
        let s = suite(vec![first.clone()]);
        let second = case("", "r2", vec![Assertion::OutputsEqual]);
        assert_eq!(append_problem(&s, &second), None);
        assert!(append_problem(&s, &case("", "r1", vec![]))
            .unwrap()
            .contains("already a case"));
        assert!(append_problem(&s, &case("first", "r9", vec![]))
            .unwrap()
            .contains("already has a case named"));
        assert_eq!(
            append_refused(
                "calc regression",
                "the suite has a case named \u{201c}first\u{201d} (CONFLICT, HTTP 409)"
            ),
            "Not added to \u{201c}calc regression\u{201d}: the suite has a case named \u{201c}first\u{201d} (CONFLICT, HTTP 409)"
        );
        // The last case cannot be removed; with two, either can.
        assert_eq!(
            remove_problem(&s),
            Some("a suite needs a case; delete the suite instead")
        );
        let s2 = suite(vec![first.clone(), case("b", "r2", vec![])]);
        assert_eq!(remove_problem(&s2), None);
        assert_eq!(without_case(&s2, 0).cases.len(), 1);
        assert_eq!(without_case(&s2, 0).cases[0].run_id, "r2");
        assert_eq!(without_case(&s2, 7).cases.len(), 2);
        let edited = with_assertions(&s2, 1, vec![Assertion::CostBelow { max: 1.0 }]);
        assert_eq!(
            edited.cases[1].assertions,
            vec![Assertion::CostBelow { max: 1.0 }]
        );
        assert_eq!(edited.cases[0], first);
        let options = SuiteOptions {
            model: SuiteModel::Recorded,
            live_reads: true,
        };
        assert_eq!(with_options(&s2, options).options, options);
    }

    #[test]
    fn the_revision_field_is_empty_or_a_whole_number() {
        assert_eq!(parse_revision(""), Ok(None));
        assert_eq!(parse_revision(" 3 "), Ok(Some(3)));
        for bad in ["0", "-1", "two", "1.5"] {
            assert!(
                parse_revision(bad).unwrap_err().contains("whole number"),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_suite_run_is_told_in_words() {
        let mut r = SuiteRunView {
            id: "sr1".into(),
            suite_id: "s1".into(),
            suite_name: "calc regression".into(),
            workflow_id: "w1".into(),
            revision: 2,
            status: SuiteRunStatus::Running,
            started_at: "2026-11-26T06:00:00Z".into(),
            finished_at: None,
            passed: 1,
            failed: 0,
            cases: vec![],
            error: None,
        };
        assert_eq!(
            verdict(&r, 3),
            "Running against revision 2: 1 of 3 case(s) checked so far."
        );
        // The counts stored after each case, a failure among them.
        r.failed = 1;
        assert_eq!(
            verdict(&r, 3),
            "Running against revision 2: 2 of 3 case(s) checked so far (1 failed)."
        );
        // The suite edited down since the run started: never "3 of 2".
        r.passed = 2;
        assert_eq!(
            verdict(&r, 2),
            "Running against revision 2: 3 of 3 case(s) checked so far (1 failed)."
        );
        r.failed = 0;
        r.status = SuiteRunStatus::Passed;
        r.passed = 3;
        assert_eq!(verdict(&r, 3), "Passed: 3 of 3 passed against revision 2.");
        r.status = SuiteRunStatus::Failed;
        r.passed = 1;
        r.failed = 2;
        assert_eq!(counts(&r), "1 of 3 passed, 2 failed");
        assert_eq!(
            verdict(&r, 3),
            "Failed: 1 of 3 passed, 2 failed against revision 2."
        );
        r.status = SuiteRunStatus::Error;
        r.error = Some("the server stopped".into());
        assert_eq!(
            verdict(&r, 3),
            "The suite run could not finish: the server stopped"
        );
    }
}
