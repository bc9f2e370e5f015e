//! Regression suites (issue 33), black box through the server's API (the
//! router in-process) and the real `glassbox suite` command on the same
//! database: recorded scripted runs read a counting loopback endpoint
//! (through an `http` connection naming it), a suite of them is run against
//! the workflow's revisions, and the endpoint's counts prove what ran.

mod common;
mod procs;

use std::time::{Duration, Instant};

use common::api::{read, text, write, Api, User};
use node_runtime::wire::{SuiteRunStatus, SuiteRunView};
use procs::Counter;
use serde_json::{json, Value};

/// An Input node (`item`) into a scripted agent with `tools`, answering
/// with `turns`, whose answer is the Output `answer`.
fn workflow(turns: Vec<Value>, tools: Value) -> Value {
    json!({
        "format_version": 1, "id": "suite-test", "name": "suite test", "revision": 0,
        "nodes": [
            {"id": "in", "kind": "input", "config": {"schema": {"type": "object",
                "properties": {"item": {"type": "string"}}, "required": ["item"]}}},
            {"id": "agent", "kind": "agent", "config": {"prompt": "Look up item {{ item }}.", "tools": tools,
                "provider": {"kind": "scripted", "script": {"turns": turns}}}},
            {"id": "out", "kind": "output", "config": {"fields": ["answer"]}}
        ],
        "edges": [
            {"id": "e1", "source": {"node": "in", "handle": "item"}, "target": {"node": "agent", "handle": "item"}},
            {"id": "e2", "source": {"node": "agent", "handle": "response"}, "target": {"node": "out", "handle": "answer"}}
        ]
    })
}

fn http_tool() -> Value {
    json!([{"tool": "http_request@1.0.0"}])
}

/// `glassbox suite ...` on the API's data dir: (exit code, stdout, stderr).
fn glassbox_suite(api: &Api, args: &[&str]) -> (i32, String, String) {
    let out = procs::glassbox()
        .arg("suite")
        .args(args)
        .arg("--data-dir")
        .arg(&api.dir)
        .output()
        .expect("glassbox runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Acceptance: a suite of three recorded runs passes on the unchanged
/// workflow (every call answered from the recordings: the endpoint is not
/// hit again); after an edit that removes the agent's tool, `glassbox suite
/// run` exits 1 and names the failing cases and assertion, its `--json` is
/// the suite run, and the API's history lists every run of the suite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suite_passes_then_fails_after_an_edit_that_removes_a_tool() {
    let (counter, api) = Counter::with_api(Duration::ZERO).await;
    let turns = vec![read("/read/1"), text("found")];
    let wf = api.workflow(workflow(turns.clone(), http_tool())).await;
    let mut runs = Vec::new();
    for item in ["a", "b", "c"] {
        runs.push(api.recorded_run(&wf, json!({ "item": item })).await);
    }
    assert_eq!(counter.count("/read/1"), 3);
    let assertions = json!([
        {"kind": "outputs_equal"},
        {"kind": "tool_called", "tool": "http_request", "node": "agent"},
    ]);
    let suite = api
        .suite(json!({
            "name": "lookups", "workflow_id": wf, "description": "three lookups",
            "cases": [
                {"run_id": runs[0], "assertions": assertions},
                {"name": "item b", "run_id": runs[1], "assertions": assertions},
                {"name": "item c", "run_id": runs[2], "assertions": assertions},
            ]
        }))
        .await;
    let (_, view) = api.call("GET", &format!("/suites/{suite}"), None).await;
    assert_eq!(view["cases"][0]["name"], runs[0].as_str(), "{view}");
    assert_eq!(view["workflow_name"], "suite test");
    assert_eq!(view["last_run"], Value::Null);

    let passed = api.run_suite(&suite, json!({})).await;
    assert_eq!(passed.status, SuiteRunStatus::Passed, "{passed:?}");
    assert_eq!((passed.passed, passed.failed, passed.revision), (3, 0, 1));
    assert_eq!(passed.cases.len(), 3);
    for case in &passed.cases {
        assert!(case.passed && case.diff.is_none(), "{case:?}");
        let fork = case.fork_id.as_deref().expect("a fork");
        let (_, run) = api.call("GET", &format!("/runs/{fork}"), None).await;
        assert_eq!(run["kind"], "fork");
        assert_eq!(run["fork_of"], case.run_id.as_str());
    }
    assert_eq!(
        counter.count("/read/1"),
        3,
        "a suite's recorded read ran again"
    );

    // The edit: the agent loses its tool.
    api.revise(&wf, 1, workflow(turns, json!([]))).await;
    let (code, stdout, stderr) = glassbox_suite(&api, &["run", "lookups"]);
    assert_eq!(code, 1, "stdout: {stdout}\nstderr: {stderr}");
    for case in [runs[0].as_str(), "item b", "item c"] {
        assert!(
            stdout.contains(&format!("FAIL {case}")),
            "{case} is not named failing: {stdout}"
        );
        assert!(
            stdout.contains(&format!("{case}: http_request is called in node agent: ")),
            "the failed assertion of {case} is not named: {stdout}"
        );
    }
    let last = stdout.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        format!("suite lookups: 0 passed, 3 failed (workflow {wf} revision 2)"),
        "{stdout}"
    );
    assert_eq!(counter.count("/read/1"), 3);

    let (code, stdout, stderr) = glassbox_suite(&api, &["run", &suite, "--json"]);
    assert_eq!(code, 1, "stderr: {stderr}");
    let failed: SuiteRunView = serde_json::from_str(&stdout).expect("--json is a SuiteRunView");
    assert_eq!(failed.status, SuiteRunStatus::Failed);
    assert_eq!((failed.passed, failed.failed, failed.revision), (0, 3, 2));
    let case = &failed.cases[1];
    assert_eq!(case.name, "item b");
    assert!(
        matches!(&case.assertions[1], a if !a.passed && a.message.contains("http_request ran 0 times")),
        "the tool assertion fails: {case:?}"
    );
    let diff = case.diff.as_ref().expect("a failed case carries its diff");
    assert_eq!(diff.run_id, case.run_id);

    // The revision it passed on still passes, from the command line too.
    let (code, stdout, stderr) = glassbox_suite(&api, &["run", "lookups", "--revision", "1"]);
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        stdout.contains("suite lookups: 3 passed, 0 failed"),
        "{stdout}"
    );
    // Usage errors: exit 2, in words.
    let (code, _, stderr) = glassbox_suite(&api, &["run", "lookups", "--revision", "9"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--revision") && stderr.contains("no revision 9"),
        "{stderr}"
    );
    let (code, _, stderr) = glassbox_suite(&api, &["run", "no-such-suite"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no-such-suite"), "{stderr}");
    let (code, stdout, _) = glassbox_suite(&api, &["list"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("lookups") && stdout.contains("3 cases"),
        "{stdout}"
    );

    // The history: newest first, without cases.
    let (s, history) = api
        .call("GET", &format!("/suites/{suite}/runs"), None)
        .await;
    assert_eq!(s, 200, "{history}");
    let statuses: Vec<(&str, u64)> = history["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| {
            assert_eq!(r["cases"], json!([]), "{r}");
            (
                r["status"].as_str().expect("status"),
                r["revision"].as_u64().expect("revision"),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        vec![("passed", 1), ("failed", 2), ("failed", 2), ("passed", 1)],
        "{history}"
    );
    let (_, list) = api.call("GET", "/suites", None).await;
    assert_eq!(list["suites"][0]["last_run"]["status"], "passed", "{list}");
    assert_eq!(list["suites"][0]["last_run"]["cases"], json!([]));
    let (_, full) = api
        .call("GET", &format!("/suite-runs/{}", failed.id), None)
        .await;
    assert_eq!(full["cases"].as_array().map(Vec::len), Some(3), "{full}");
}

/// A suite never sends a write: the revision under test makes a new write
/// call, which is refused (`SUITE_NO_WRITES`) without asking an approval,
/// and the write's endpoint is never reached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suite_never_sends_a_write() {
    let (counter, api) = Counter::with_api(Duration::ZERO).await;
    let wf = api
        .workflow(workflow(vec![read("/read/1"), text("found")], http_tool()))
        .await;
    let origin = api.recorded_run(&wf, json!({"item": "a"})).await;
    api.revise(
        &wf,
        1,
        workflow(
            vec![read("/read/1"), write("/write/1"), text("written")],
            http_tool(),
        ),
    )
    .await;
    // Live reads on: only writes are refused.
    let suite = api
        .suite(json!({
            "name": "no writes", "workflow_id": wf, "options": {"live_reads": true},
            "cases": [{"name": "write", "run_id": origin, "assertions": [
                {"kind": "tool_called", "tool": "http_request"},
                {"kind": "max_calls", "max": 1},
            ]}]
        }))
        .await;
    let run = api.run_suite(&suite, json!({})).await;
    assert_eq!(run.status, SuiteRunStatus::Failed, "{run:?}");
    let case = &run.cases[0];
    assert_eq!(
        case.assertions.iter().map(|a| a.passed).collect::<Vec<_>>(),
        vec![true, false],
        "{case:?}"
    );
    assert_eq!(counter.count("/write/1"), 0, "a suite sent a write");
    assert_eq!(counter.count("/read/1"), 1, "the recorded read ran again");
    let fork = case.fork_id.as_deref().expect("fork");
    let (_, detail) = api.call("GET", &format!("/runs/{fork}"), None).await;
    assert_eq!(detail["status"], "succeeded", "{detail}");
    let calls = &detail["agent_outputs"]["agent"];
    let second = &calls["tools_by_id"][calls["tool_order"][1].as_str().expect("id")];
    assert_eq!(second["error"]["code"], "POLICY_DENIED", "{second}");
    assert_eq!(second["error"]["details"]["reason"], "SUITE_NO_WRITES");
    let (_, approvals) = api.call("GET", "/approvals", None).await;
    assert_eq!(
        approvals["count"], 0,
        "a suite asked an approval: {approvals}"
    );
    // The diff shows the refused write as new.
    let diff = case.diff.as_ref().expect("diff");
    assert_eq!(diff.summary.new, 1, "{diff:?}");
}

/// What cannot make a suite is a 422 naming the field; a taken name is 409;
/// another workspace's suite is 404 everywhere; a deleted suite takes its
/// runs along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suites_refuse_bad_input_by_field_and_hide_other_workspaces() {
    let (_counter, api) = Counter::with_api(Duration::ZERO).await;
    let wf = api
        .workflow(workflow(vec![read("/read/1"), text("found")], http_tool()))
        .await;
    let run = api.recorded_run(&wf, json!({"item": "a"})).await;
    let other_wf = api.workflow(workflow(vec![text("other")], json!([]))).await;
    let other_run = api.recorded_run(&other_wf, json!({"item": "a"})).await;
    let (s, replay) = api.call("POST", &format!("/runs/{run}/replay"), None).await;
    assert_eq!(s, 200, "{replay}");
    let replay = replay["run_id"].as_str().expect("replay id").to_string();
    // A run waiting for an approval has not finished.
    let waiting =
        common::start_run(&api.state, &api.admin.token, common::approval_workflow()).await;
    let waiting_wf = api
        .wait_for_run(&waiting, |r| r["status"] == "waiting_for_approval")
        .await["workflow_id"]
        .as_str()
        .expect("workflow id")
        .to_string();

    let ok = json!([{"kind": "outputs_equal"}]);
    let suite = |name: &str, workflow_id: &str, cases: Value| json!({"name": name, "workflow_id": workflow_id, "cases": cases});
    let refused = [
        (
            suite("", &wf, json!([{"run_id": run, "assertions": ok}])),
            "name",
        ),
        (
            suite(
                &"x".repeat(101),
                &wf,
                json!([{"run_id": run, "assertions": ok}]),
            ),
            "name",
        ),
        (
            suite(
                "s",
                "no-such-workflow",
                json!([{"run_id": run, "assertions": ok}]),
            ),
            "workflow_id",
        ),
        (suite("s", &wf, json!([])), "cases"),
        (
            suite("s", &wf, json!([{"run_id": run, "assertions": []}])),
            "cases[0].assertions",
        ),
        (
            suite(
                "s",
                &wf,
                json!([
                    {"run_id": run, "assertions": ok},
                    {"run_id": run, "assertions": [{"kind": "path_equals", "path": "$$.nope[", "value": 1}]},
                ]),
            ),
            "cases[1].name",
        ),
        (
            suite(
                "s",
                &wf,
                json!([
                    {"run_id": run, "assertions": ok},
                    {"name": "two", "run_id": run, "assertions": [{"kind": "path_equals", "path": "$$.nope[", "value": 1}]},
                ]),
            ),
            "cases[1].assertions[0].path",
        ),
        (
            suite(
                "s",
                &wf,
                json!([{"run_id": run, "assertions": [{"kind": "matches_schema", "schema": {"type": 7}}]}]),
            ),
            "cases[0].assertions[0].schema",
        ),
        (
            suite("s", &wf, json!([{"run_id": other_run, "assertions": ok}])),
            "cases[0].run_id",
        ),
        (
            suite("s", &wf, json!([{"run_id": replay, "assertions": ok}])),
            "cases[0].run_id",
        ),
        (
            suite(
                "s",
                &wf,
                json!([{"run_id": "no-such-run", "assertions": ok}]),
            ),
            "cases[0].run_id",
        ),
        (
            suite(
                "s",
                &waiting_wf,
                json!([{"run_id": waiting, "assertions": ok}]),
            ),
            "cases[0].run_id",
        ),
    ];
    for (body, path) in refused {
        let (s, e) = api.call("POST", "/suites", Some(body.clone())).await;
        assert_eq!(
            (s, e["error"]["details"]["path"].as_str()),
            (422, Some(path)),
            "{body}: {e}"
        );
        assert!(
            e["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with(&format!("{path}: "))),
            "{e}"
        );
    }
    let message = |body: Value| async {
        let (_, e) = api.call("POST", "/suites", Some(body)).await;
        e["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let m = message(suite(
        "s",
        &wf,
        json!([{"run_id": other_run, "assertions": ok}]),
    ))
    .await;
    assert!(
        m.contains(&format!("run {other_run} is not a run of workflow {wf}")),
        "{m}"
    );
    let m = message(suite(
        "s",
        &wf,
        json!([{"run_id": replay, "assertions": ok}]),
    ))
    .await;
    assert!(m.contains("replay"), "{m}");
    let m = message(suite(
        "s",
        &waiting_wf,
        json!([{"run_id": waiting, "assertions": ok}]),
    ))
    .await;
    assert!(m.contains("has not finished"), "{m}");
    // An unknown assertion is refused by the body's shape, naming it,
    // never a 500.
    let (s, e) = api
        .call(
            "POST",
            "/suites",
            Some(suite(
                "s",
                &wf,
                json!([{"run_id": run, "assertions": [{"kind": "vibes"}]}]),
            )),
        )
        .await;
    assert_eq!(s, 422, "{e}");
    assert!(
        e["error"]["details"]["path"]
            .as_str()
            .is_some_and(|p| p.starts_with("cases[0].assertions[0]")),
        "{e}"
    );

    let id = api
        .suite(suite(
            "kept",
            &wf,
            json!([{"run_id": run, "assertions": ok}]),
        ))
        .await;
    let (s, e) = api
        .call(
            "POST",
            "/suites",
            Some(suite(
                "kept",
                &wf,
                json!([{"run_id": run, "assertions": ok}]),
            )),
        )
        .await;
    assert_eq!(s, 409, "{e}");
    let other = api
        .suite(suite(
            "another",
            &wf,
            json!([{"run_id": run, "assertions": ok}]),
        ))
        .await;
    let (s, e) = api
        .call(
            "PUT",
            &format!("/suites/{other}"),
            Some(suite(
                "kept",
                &wf,
                json!([{"run_id": run, "assertions": ok}]),
            )),
        )
        .await;
    assert_eq!(s, 409, "{e}");
    let (s, replaced) = api
        .call(
            "PUT",
            &format!("/suites/{other}"),
            Some(suite(
                "renamed",
                &wf,
                json!([{"name": "one", "run_id": run, "assertions": ok}]),
            )),
        )
        .await;
    assert_eq!(s, 200, "{replaced}");
    assert_eq!(replaced["name"], "renamed");
    assert_eq!(replaced["cases"][0]["name"], "one");
    let (s, e) = api
        .call(
            "POST",
            &format!("/suites/{id}/runs"),
            Some(json!({"revision": 99})),
        )
        .await;
    assert_eq!(
        (s, e["error"]["details"]["path"].as_str()),
        (422, Some("revision")),
        "{e}"
    );
    let done = api.run_suite(&id, json!({"revision": 1})).await;
    assert_eq!(done.status, SuiteRunStatus::Passed, "{done:?}");

    // Another workspace sees none of it.
    let bob = User::new(common::BOB_TOKEN);
    for (method, path, body) in [
        ("GET", format!("/suites/{id}"), None),
        (
            "PUT",
            format!("/suites/{id}"),
            Some(suite(
                "mine",
                &wf,
                json!([{"run_id": run, "assertions": ok}]),
            )),
        ),
        ("DELETE", format!("/suites/{id}"), None),
        ("POST", format!("/suites/{id}/runs"), Some(json!({}))),
        ("GET", format!("/suites/{id}/runs"), None),
        ("GET", format!("/suite-runs/{}", done.id), None),
    ] {
        let (s, e) = api.call_as(&bob, method, &path, body).await;
        assert_eq!(s, 404, "{method} {path}: {e}");
    }
    let (_, list) = api.call_as(&bob, "GET", "/suites", None).await;
    assert_eq!(list["suites"], json!([]), "{list}");
    // Bob cannot make a suite of the admin's workflow or runs either.
    let (s, e) = api
        .call_as(
            &bob,
            "POST",
            "/suites",
            Some(suite(
                "bobs",
                &wf,
                json!([{"run_id": run, "assertions": ok}]),
            )),
        )
        .await;
    assert_eq!(
        (s, e["error"]["details"]["path"].as_str()),
        (422, Some("workflow_id")),
        "{e}"
    );

    let (s, _) = api.call("DELETE", &format!("/suites/{id}"), None).await;
    assert_eq!(s, 204);
    let (s, _) = api.call("GET", &format!("/suites/{id}"), None).await;
    assert_eq!(s, 404);
    let (s, _) = api
        .call("GET", &format!("/suite-runs/{}", done.id), None)
        .await;
    assert_eq!(s, 404, "a deleted suite's runs are gone");
    let (s, _) = api.call("DELETE", &format!("/suites/{id}"), None).await;
    assert_eq!(s, 404);
}

/// A suite run whose server stops before it ends is `error` after the next
/// start, saying so; its suite runs again. On SQLite and on Postgres.
fn interrupted_suite_run_ends_in_error(dir: &std::path::Path, database_url: &str) {
    // A slow endpoint: the suite's fork is still reading when the server
    // stops.
    let counter = Counter::start(Duration::from_secs(3));
    let runtime = || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    };
    let first = runtime();
    let (token, suite, suite_run, fork) = first.block_on(async {
        let api = Api::open(dir, database_url, None).await;
        api.add_counter(counter.port).await;
        let wf = api
            .workflow(workflow(vec![text("found")], http_tool()))
            .await;
        let origin = api.recorded_run(&wf, json!({"item": "a"})).await;
        // The new revision makes a new read, live in this suite, then a
        // new write, which a suite's fork refuses, after a restart too.
        api.revise(
            &wf,
            1,
            workflow(
                vec![read("/slow"), write("/write/1"), text("found")],
                http_tool(),
            ),
        )
        .await;
        let suite = api
            .suite(
                json!({"name": "slow", "workflow_id": wf, "options": {"live_reads": true},
                "cases": [{"run_id": origin, "assertions": [{"kind": "outputs_equal"}]}]}),
            )
            .await;
        let (s, started) = api
            .call("POST", &format!("/suites/{suite}/runs"), Some(json!({})))
            .await;
        assert_eq!(s, 202, "{started}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while counter.count("/slow") == 0 {
            assert!(Instant::now() < deadline, "the fork never read");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // On Postgres its starter claims a new run a moment after it
        // starts; a stop before that leaves it to be taken as an orphan
        // only after a minute: stop once it is claimed.
        let (_, list) = api.call("GET", "/runs", None).await;
        let fork = list["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .find(|r| r["kind"] == "fork")
            .and_then(|r| r["id"].as_str())
            .expect("the fork")
            .to_string();
        while !api.state.db().is_sqlite()
            && api
                .state
                .db()
                .run_holder(&fork)
                .await
                .expect("holder")
                .0
                .is_none()
        {
            assert!(Instant::now() < deadline, "the fork is never claimed");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let id = started["id"].as_str().expect("id").to_string();
        (api.admin.token.clone(), suite, id, fork)
    });
    first.shutdown_timeout(Duration::from_secs(5));

    let second = runtime();
    second.block_on(async {
        let api = Api::open(dir, database_url, Some(token)).await;
        let (_, before) = api
            .call("GET", &format!("/suite-runs/{suite_run}"), None)
            .await;
        assert_eq!(before["status"], "running", "{before}");
        api.state.runs().hold_instance_name().await.expect("lock");
        // The suite run's fork is resumed like any run (on Postgres the
        // stopped server's session may hold its row a moment: claim again).
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut resumed = api.state.runs().recover().await.expect("recover");
        while resumed == 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
            resumed = api.state.runs().recover().await.expect("recover");
        }
        let (_, runs) = api.call("GET", "/runs", None).await;
        assert_eq!(resumed, 1, "the suite's fork is resumed: {runs}");
        let (_, after) = api
            .call("GET", &format!("/suite-runs/{suite_run}"), None)
            .await;
        assert_eq!(after["status"], "error", "{after}");
        assert!(
            after["error"]
                .as_str()
                .is_some_and(|e| e.contains("the server running it stopped")),
            "{after}"
        );
        assert!(after["finished_at"].is_string(), "{after}");
        // The resumed fork still refuses the new write, asking no approval.
        let run = api.finished(&fork).await;
        assert_eq!(run["status"], "succeeded", "{run}");
        let calls = &run["agent_outputs"]["agent"];
        let second = &calls["tools_by_id"][calls["tool_order"][1].as_str().expect("id")];
        assert_eq!(
            second["error"]["details"]["reason"], "SUITE_NO_WRITES",
            "{second}"
        );
        let (_, approvals) = api.call("GET", "/approvals", None).await;
        assert_eq!(approvals["count"], 0, "{approvals}");
        // A later look leaves a suite run of this process alone.
        let (s, started) = api
            .call("POST", &format!("/suites/{suite}/runs"), Some(json!({})))
            .await;
        assert_eq!(s, 202, "{started}");
        api.state.runs().recover().await.expect("recover");
        let id = started["id"].as_str().expect("id");
        let (_, now) = api.call("GET", &format!("/suite-runs/{id}"), None).await;
        assert_eq!(now["status"], "running", "{now}");
        let done = api
            .wait_for(&format!("/suite-runs/{id}"), |r| r["status"] != "running")
            .await;
        assert_eq!(done["status"], "passed", "{done}");
        assert_eq!(counter.count("/write/1"), 0, "a suite sent a write");
        // The history and the suite's routes on this backend.
        let (_, history) = api
            .call("GET", &format!("/suites/{suite}/runs"), None)
            .await;
        let statuses: Vec<&str> = history["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .filter_map(|r| r["status"].as_str())
            .collect();
        assert_eq!(statuses, vec!["passed", "error"], "{history}");
        let (_, list) = api.call("GET", "/suites", None).await;
        assert_eq!(list["suites"][0]["last_run"]["status"], "passed", "{list}");
        let (_, view) = api.call("GET", &format!("/suites/{suite}"), None).await;
        let mut renamed = json!({"name": "renamed", "workflow_id": view["workflow_id"],
            "cases": view["cases"], "options": view["options"]});
        let (s, e) = api
            .call("PUT", &format!("/suites/{suite}"), Some(renamed.clone()))
            .await;
        assert_eq!((s, &e["name"]), (200, &json!("renamed")), "{e}");
        renamed["name"] = json!("another");
        let other = api.suite(renamed.clone()).await;
        renamed["name"] = json!("renamed");
        let (s, e) = api
            .call("PUT", &format!("/suites/{other}"), Some(renamed))
            .await;
        assert_eq!(s, 409, "{e}");
        let (s, _) = api.call("DELETE", &format!("/suites/{suite}"), None).await;
        assert_eq!(s, 204);
        let (s, _) = api.call("GET", &format!("/suite-runs/{id}"), None).await;
        assert_eq!(s, 404);
    });
    second.shutdown_timeout(Duration::from_secs(5));
}

#[test]
fn an_interrupted_suite_run_is_an_error_at_restart_on_sqlite() {
    let dir = tempfile::tempdir().expect("tmp");
    let url = glassbox_server::Config::default_database_url(dir.path());
    interrupted_suite_run_ends_in_error(dir.path(), &url);
}

#[test]
fn an_interrupted_suite_run_is_an_error_at_restart_on_postgres() {
    let admin = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let Some(db) = admin.block_on(common::TempPgDatabase::create("glassbox_suites")) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tmp");
    let outcome =
        std::panic::catch_unwind(|| interrupted_suite_run_ends_in_error(dir.path(), &db.url));
    admin.block_on(db.drop_now());
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Review of issue 33: a Tool node's new write in a suite's fork is
/// refused (`SUITE_NO_WRITES`, nothing sent, no approval) and the fork's
/// trigger is `suite`; a case whose recorded run is gone is that case's
/// error (the suite `failed`, not a 500); cases are appended one by one
/// with `POST /suites/{id}/cases` (checked like a suite's, `case.…`
/// paths, 409 for a taken case name); `GET /suites?workflow_id=` filters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suite_refuses_a_tool_node_write_and_survives_a_gone_run() {
    let (counter, api) = Counter::with_api(Duration::ZERO).await;
    let wf = api
        .workflow(workflow(vec![text("found")], http_tool()))
        .await;
    let origin = api.recorded_run(&wf, json!({"item": "a"})).await;
    let second = api.recorded_run(&wf, json!({"item": "b"})).await;
    // The new revision adds a Tool node that POSTs (a new write).
    let mut revised = workflow(vec![text("found")], http_tool());
    revised["nodes"].as_array_mut().expect("nodes").push(json!(
        {"id": "poster", "kind": "tool", "config": {"tool": "http_request@1.0.0", "inputs": {
            "connection": {"source": "fixed", "value": "counter"},
            "url": {"source": "fixed", "value": "/write/tool"},
            "method": {"source": "fixed", "value": "POST"},
            "body": {"source": "fixed", "value": {"note": "hi"}}}}}
    ));
    api.revise(&wf, 1, revised).await;
    let suite = api
        .suite(json!({"name": "tool writes", "workflow_id": wf,
            "cases": [{"name": "tool", "run_id": origin, "assertions": [{"kind": "outputs_equal"}]}]}))
        .await;
    let run = api.run_suite(&suite, json!({})).await;
    let case = &run.cases[0];
    assert_eq!(case.error, None, "{case:?}");
    assert_eq!(counter.count("/write/tool"), 0, "a suite sent a write");
    let fork = case.fork_id.as_deref().expect("fork");
    let (_, detail) = api.call("GET", &format!("/runs/{fork}"), None).await;
    assert_eq!(detail["trigger"], "suite", "{detail}");
    assert!(
        detail.to_string().contains("SUITE_NO_WRITES"),
        "the Tool node's write is refused: {detail}"
    );
    let (_, approvals) = api.call("GET", "/approvals", None).await;
    assert_eq!(approvals["count"], 0, "{approvals}");
    let (_, list) = api.call("GET", "/runs", None).await;
    let item = list["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .find(|r| r["id"] == fork)
        .expect("the fork is listed");
    assert_eq!(
        (&item["kind"], &item["trigger"]),
        (&json!("fork"), &json!("suite"))
    );

    // Cases appended one at a time.
    let (s, view) = api
        .call(
            "POST",
            &format!("/suites/{suite}/cases"),
            Some(json!({"run_id": second, "assertions": [{"kind": "status", "equals": "succeeded"}]})),
        )
        .await;
    assert_eq!(s, 200, "{view}");
    let names: Vec<&str> = view["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, vec!["tool", second.as_str()], "{view}");
    for (body, status, path) in [
        (
            json!({"run_id": second, "assertions": [{"kind": "outputs_equal"}]}),
            409,
            "case.name",
        ),
        (
            json!({"name": "x", "run_id": "no-such-run", "assertions": [{"kind": "outputs_equal"}]}),
            422,
            "case.run_id",
        ),
        (
            json!({"name": "x", "run_id": second, "assertions": []}),
            422,
            "case.assertions",
        ),
        (
            json!({"name": "x", "run_id": second, "assertions": [{"kind": "path_equals", "path": "$$.nope[", "value": 1}]}),
            422,
            "case.assertions[0].path",
        ),
    ] {
        let (s, e) = api
            .call(
                "POST",
                &format!("/suites/{suite}/cases"),
                Some(body.clone()),
            )
            .await;
        assert_eq!(
            (s, e["error"]["details"]["path"].as_str()),
            (status, Some(path)),
            "{body}: {e}"
        );
    }
    let bob = User::new(common::BOB_TOKEN);
    let (s, e) = api
        .call_as(
            &bob,
            "POST",
            &format!("/suites/{suite}/cases"),
            Some(json!({"run_id": second, "assertions": [{"kind": "outputs_equal"}]})),
        )
        .await;
    assert_eq!(s, 404, "{e}");
    // Many appends at once: none is lost.
    let mut more = Vec::new();
    for i in 0..6 {
        let body = json!({"name": format!("more {i}"), "run_id": second, "assertions": [{"kind": "outputs_equal"}]});
        let path = format!("/suites/{suite}/cases");
        let api = api.clone();
        more.push(tokio::spawn(async move {
            api.call("POST", &path, Some(body)).await.0
        }));
    }
    for task in more {
        assert_eq!(task.await.expect("append"), 200);
    }
    let (_, view) = api.call("GET", &format!("/suites/{suite}"), None).await;
    assert_eq!(view["cases"].as_array().map(Vec::len), Some(8), "{view}");

    // The filter by workflow.
    let other_wf = api.workflow(workflow(vec![text("other")], json!([]))).await;
    let (_, list) = api
        .call("GET", &format!("/suites?workflow_id={other_wf}"), None)
        .await;
    assert_eq!(list["suites"], json!([]), "{list}");
    let (_, list) = api
        .call("GET", &format!("/suites?workflow_id={wf}"), None)
        .await;
    assert_eq!(list["suites"][0]["id"], suite, "{list}");

    // A case whose run is gone is that case's error.
    let gone = api
        .suite(json!({"name": "gone", "workflow_id": wf,
            "cases": [{"name": "gone", "run_id": second, "assertions": [{"kind": "status", "equals": "succeeded"}]}]}))
        .await;
    sqlx::query("UPDATE suites SET cases = REPLACE(cases, $1, 'no-such-run') WHERE id = $2")
        .bind(&second)
        .bind(&gone)
        .execute(api.state.db().pool())
        .await
        .expect("the case's run goes");
    let run = api.run_suite(&gone, json!({})).await;
    assert_eq!(run.status, SuiteRunStatus::Failed, "{run:?}");
    assert!(
        run.cases[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("no-such-run is gone")),
        "{run:?}"
    );
    assert_eq!((run.passed, run.failed), (0, 1));
}

/// Review of issue 33: a suite run shows its counts while it runs, and a
/// clean stop (`Runs::stop`) ends it `error` at once, starting no further
/// fork, and it stays `error`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suite_run_counts_as_it_goes_and_a_clean_stop_ends_it() {
    let (counter, api) = Counter::with_api(Duration::from_secs(3)).await;
    // `fast`: recorded with the read, answered from its recording;
    // `slow`: recorded without it, so its fork reads live (3 s).
    let wf = api
        .workflow(workflow(vec![read("/slow"), text("found")], http_tool()))
        .await;
    let fast = {
        let (s, started) = api
            .call(
                "POST",
                "/runs",
                Some(json!({"workflow_id": wf, "inputs": {"item": "a"}})),
            )
            .await;
        assert_eq!(s, 202, "{started}");
        let id = started["run_id"].as_str().expect("id").to_string();
        api.wait_for_run(&id, |r| r["status"] == "succeeded").await;
        id
    };
    api.revise(&wf, 1, workflow(vec![text("found")], http_tool()))
        .await;
    let slow = api.recorded_run(&wf, json!({"item": "b"})).await;
    let reads = counter.count("/slow");
    let case = |name: &str, run: &str| json!({"name": name, "run_id": run, "assertions": [{"kind": "status", "equals": "succeeded"}]});
    let counted = api
        .suite(
            json!({"name": "counted", "workflow_id": wf, "options": {"live_reads": true},
            "cases": [case("fast", &fast), case("slow", &slow)]}),
        )
        .await;
    let (s, started) = api
        .call(
            "POST",
            &format!("/suites/{counted}/runs"),
            Some(json!({"revision": 1})),
        )
        .await;
    assert_eq!(s, 202, "{started}");
    let id = started["id"].as_str().expect("id").to_string();
    let during = api
        .wait_for(&format!("/suite-runs/{id}"), |r| {
            r["passed"] == 1 || r["status"] != "running"
        })
        .await;
    assert_eq!(
        (&during["status"], &during["passed"]),
        (&json!("running"), &json!(1)),
        "the counts show while it runs: {during}"
    );
    let done = api
        .wait_for(&format!("/suite-runs/{id}"), |r| r["status"] != "running")
        .await;
    assert_eq!(done["status"], "passed", "{done}");
    assert_eq!(counter.count("/slow"), reads + 1, "{done}");

    // The slow case first: the stop comes while its fork reads.
    let stopped = api
        .suite(
            json!({"name": "stopped", "workflow_id": wf, "options": {"live_reads": true},
            "cases": [case("slow", &slow), case("fast", &fast)]}),
        )
        .await;
    let forks_before = forks(&api).await;
    let (s, started) = api
        .call(
            "POST",
            &format!("/suites/{stopped}/runs"),
            Some(json!({"revision": 1})),
        )
        .await;
    assert_eq!(s, 202, "{started}");
    let id = started["id"].as_str().expect("id").to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    while counter.count("/slow") < reads + 2 {
        assert!(Instant::now() < deadline, "the fork never read");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    api.state.runs().stop().await.expect("stop");
    let (_, now) = api.call("GET", &format!("/suite-runs/{id}"), None).await;
    assert_eq!(now["status"], "error", "{now}");
    assert!(
        now["error"]
            .as_str()
            .is_some_and(|e| e.contains("the server stopped during the suite run")),
        "{now}"
    );
    // Its task winds down: no other case's fork starts, the end stays.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (_, after) = api.call("GET", &format!("/suite-runs/{id}"), None).await;
    assert_eq!(after, now, "a stopped suite run's end stays");
    assert_eq!(
        forks(&api).await,
        forks_before + 1,
        "a fork started after the stop"
    );
}

/// How many forks the workspace has.
async fn forks(api: &Api) -> usize {
    let (_, list) = api.call("GET", "/runs?limit=200", None).await;
    list["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .filter(|r| r["kind"] == "fork")
        .count()
}

/// Review of issue 33: on SQLite a `glassbox suite run` beside the server
/// keeps its suite run through the server's start-up look (its process
/// lives: it holds its owner lock); one killed with `kill -9` is ended
/// `error` by the next CLI's start; Ctrl-C ends it `error` and exits 130.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_suite_run_beside_the_server_is_kept_and_a_killed_one_ended() {
    let (counter, api) = Counter::with_api(Duration::from_secs(2)).await;
    let wf = api
        .workflow(workflow(vec![text("found")], http_tool()))
        .await;
    let origin = api.recorded_run(&wf, json!({"item": "a"})).await;
    api.revise(
        &wf,
        1,
        workflow(vec![read("/slow"), text("found")], http_tool()),
    )
    .await;
    api.suite(
        json!({"name": "beside", "workflow_id": wf, "options": {"live_reads": true},
        "cases": [{"run_id": origin, "assertions": [{"kind": "status", "equals": "succeeded"}]}]}),
    )
    .await;
    let cli = || {
        procs::glassbox()
            .args(["suite", "run", "beside", "--data-dir"])
            .arg(&api.dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("glassbox runs")
    };
    // The suite run the CLI executes, once its fork reads.
    let running = |reads: usize| {
        let api = &api;
        let counter = &counter;
        async move {
            let deadline = Instant::now() + Duration::from_secs(60);
            while counter.count("/slow") < reads {
                assert!(Instant::now() < deadline, "the CLI's fork never read");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let (_, list) = api.call("GET", "/suites", None).await;
            list["suites"][0]["last_run"]["id"]
                .as_str()
                .expect("the CLI's suite run")
                .to_string()
        }
    };

    let mut child = cli();
    let id = running(1).await;
    // The server's start-up look leaves the live CLI's suite run alone.
    let ended = api
        .state
        .runs()
        .end_interrupted_suite_runs(true)
        .await
        .expect("look");
    assert_eq!(ended, 0);
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("wait");
    assert_eq!(status.code(), Some(0));
    let (_, done) = api.call("GET", &format!("/suite-runs/{id}"), None).await;
    assert_eq!(done["status"], "passed", "{done}");

    // Killed: the next CLI's start ends it.
    let mut child = cli();
    let killed = running(2).await;
    child.kill().expect("kill -9");
    child.wait().expect("wait");
    let (_, left) = api
        .call("GET", &format!("/suite-runs/{killed}"), None)
        .await;
    assert_eq!(left["status"], "running", "{left}");

    // Ctrl-C: ended `error` by the CLI itself, exit 130.
    let child = cli();
    let pid = child.id();
    let id = running(3).await;
    let (_, gone) = api
        .call("GET", &format!("/suite-runs/{killed}"), None)
        .await;
    assert_eq!(gone["status"], "error", "{gone}");
    assert!(
        gone["error"]
            .as_str()
            .is_some_and(|e| e.contains("the server running it stopped")),
        "{gone}"
    );
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("kill -INT");
    assert!(sent.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("join")
        .expect("wait");
    assert_eq!(out.status.code(), Some(130));
    let (_, stopped) = api.call("GET", &format!("/suite-runs/{id}"), None).await;
    assert_eq!(stopped["status"], "error", "{stopped}");
    assert!(
        stopped["error"]
            .as_str()
            .is_some_and(|e| e.contains("Ctrl-C")),
        "{stopped}"
    );
}
