//! Forks and diffs (issue 33), black box through the server's API (the
//! router in-process): a recorded scripted run reads a counting loopback
//! endpoint (through an `http` connection naming it), forks of it change
//! the script, and the endpoint's counts prove which calls ran.

mod common;
mod procs;

use std::time::Duration;

use common::api::{read, text, write, Api, User};
use procs::Counter;
use serde_json::{json, Value};

/// A scripted agent with `http_request`, answering with `turns`.
fn workflow(turns: Vec<Value>) -> Value {
    json!({
        "format_version": 1, "id": "fork-test", "name": "fork test", "revision": 0,
        "nodes": [{"id": "agent", "kind": "agent", "config": {"prompt": "go", "tools": [{"tool": "http_request@1.0.0"}],
            "provider": {"kind": "scripted", "script": {"turns": turns}}}}],
        "edges": []
    })
}

/// The change of a fork that gives the agent `turns` as its script.
fn script_change(turns: Vec<Value>, live_reads: bool) -> Value {
    json!({"changes": {"nodes": {"agent": {"provider": {"script": {"turns": turns}}}}}, "live_reads": live_reads})
}

/// The changes of a node's calls in a diff, with whether the other run's
/// call was replayed.
fn changes(diff: &Value, node: &str) -> Vec<(String, bool)> {
    diff["nodes"][node]["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| {
            (
                c["change"].as_str().expect("change").to_string(),
                c["other"]["replayed"] == json!(true),
            )
        })
        .collect()
}

/// Acceptance: a recorded run with two calls of a counting endpoint; a fork
/// whose script changes the second call's arguments answers the first from
/// the recording (the endpoint is not hit again) and runs the new read only
/// when it allows live reads; the diff shows call 1 same and call 2 changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_that_changes_the_second_call_replays_the_first() {
    let (counter, api) = Counter::with_api(Duration::ZERO).await;
    let wf = api
        .workflow(workflow(vec![
            read("/read/1"),
            read("/read/2"),
            text("done"),
        ]))
        .await;
    let origin = api.recorded_run(&wf, json!({})).await;
    assert_eq!((counter.count("/read/1"), counter.count("/read/2")), (1, 1));

    let changed = vec![read("/read/1"), read("/read/3"), text("done")];
    // Without live reads the new read fails, typed, and never runs.
    let offline = api
        .fork(&origin, script_change(changed.clone(), false))
        .await;
    let run = api.finished(&offline).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let calls = &run["agent_outputs"]["agent"];
    let second = &calls["tools_by_id"][calls["tool_order"][1].as_str().expect("id")];
    assert_eq!(second["error"]["code"], "POLICY_DENIED", "{second}");
    assert_eq!(second["error"]["details"]["reason"], "LIVE_READS_OFF");
    assert_eq!(
        counter.count("/read/3"),
        0,
        "a new read ran without live reads"
    );

    // With live reads it runs; the first call is still answered from the
    // recording.
    let fork = api.fork(&origin, script_change(changed, true)).await;
    let run = api.finished(&fork).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["kind"], "fork");
    assert_eq!(run["fork_of"], origin.as_str());
    assert_eq!(run["replay_of"], Value::Null);
    assert_eq!(
        (
            counter.count("/read/1"),
            counter.count("/read/2"),
            counter.count("/read/3")
        ),
        (1, 1, 1),
        "call 1 was replayed, not run again; the new call 2 ran once"
    );
    let diff = api.diff(&origin, &fork).await;
    assert_eq!(
        changes(&diff, "agent"),
        vec![("same".to_string(), true), ("changed".to_string(), false)],
        "{diff}"
    );
    let call2 = &diff["nodes"]["agent"]["calls"][1];
    assert_eq!(call2["input_changed"], true);
    assert!(call2["run"]["input"]["url"]
        .as_str()
        .expect("url")
        .ends_with("/read/2"));
    assert!(call2["other"]["input"]["url"]
        .as_str()
        .expect("url")
        .ends_with("/read/3"));
    assert_eq!(diff["summary"]["replayed"], 1);
    assert_eq!(diff["nodes"]["agent"]["response_changed"], false);

    // Bad changes are typed errors naming the field.
    let (s, e) = api
        .call(
            "POST",
            &format!("/runs/{origin}/fork"),
            Some(json!({"changes": {"nodes": {"nope": {"prompt": "x"}}}})),
        )
        .await;
    assert_eq!(
        (s, &e["error"]["details"]["path"]),
        (422, &json!("changes.nodes.nope")),
        "{e}"
    );
    let (s, e) = api
        .call(
            "POST",
            &format!("/runs/{origin}/fork"),
            Some(json!({"changes": {"nodes": {"agent": {"tools": "http_request"}}}})),
        )
        .await;
    assert_eq!(
        (s, &e["error"]["details"]["path"]),
        (422, &json!("changes.nodes.agent.tools")),
        "{e}"
    );
    let (s, e) = api
        .call(
            "POST",
            &format!("/runs/{origin}/fork"),
            Some(json!({"changes": {"nodes": {"agent": {"tools": [{"tool": 7}]}}}})),
        )
        .await;
    assert_eq!(
        (s, &e["error"]["details"]["path"]),
        (422, &json!("changes.nodes.agent.tools[0].tool")),
        "{e}"
    );
    let (s, e) = api
        .call(
            "POST",
            &format!("/runs/{origin}/fork"),
            Some(json!({"chnages": {}})),
        )
        .await;
    assert!(s == 400 || s == 422, "{s} {e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("chnages"),
        "{e}"
    );
    let (s, e) = api
        .call("POST", "/runs/no-such-run/fork", Some(json!({})))
        .await;
    assert_eq!(s, 404, "{e}");
    let (s, e) = api
        .call("GET", &format!("/runs/{origin}/diff/no-such-run"), None)
        .await;
    assert_eq!(s, 404, "{e}");
}

/// Another workspace's run can be neither forked nor compared: 404, as if
/// it did not exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_workspaces_run_is_not_found_to_fork_or_diff() {
    let (_counter, api) = Counter::with_api(Duration::ZERO).await;
    let wf = api
        .workflow(workflow(vec![read("/read/1"), text("done")]))
        .await;
    let origin = api.recorded_run(&wf, json!({})).await;
    let fork = api
        .fork(
            &origin,
            script_change(vec![read("/read/1"), text("again")], false),
        )
        .await;
    api.finished(&fork).await;
    let bob = User::new(common::BOB_TOKEN);
    for (method, path, body) in [
        ("POST", format!("/runs/{origin}/fork"), Some(json!({}))),
        ("GET", format!("/runs/{origin}/diff/{fork}"), None),
        ("GET", format!("/runs/{fork}/diff/{fork}"), None),
    ] {
        let (s, e) = api.call_as(&bob, method, &path, body).await;
        assert_eq!(s, 404, "{method} {path}: {e}");
    }
    // Bob's own run beside the admin's: still not found.
    let (s, created) = api
        .call_as(
            &bob,
            "POST",
            "/workflows",
            Some(workflow(vec![text("bob's")])),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let (s, started) = api
        .call_as(
            &bob,
            "POST",
            "/runs",
            Some(json!({"workflow_id": created["id"]})),
        )
        .await;
    assert_eq!(s, 202, "{started}");
    let bobs = started["run_id"].as_str().expect("run id").to_string();
    let (s, e) = api
        .call_as(&bob, "GET", &format!("/runs/{bobs}/diff/{origin}"), None)
        .await;
    assert_eq!(s, 404, "{e}");
    let (s, e) = api
        .call("GET", &format!("/runs/{origin}/diff/{bobs}"), None)
        .await;
    assert_eq!(s, 404, "{e}");
}

/// Acceptance: a fork that changes only the final answer's text reuses
/// every call: all are replayed and the endpoint is not hit again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_that_changes_only_the_answer_reuses_every_call() {
    let (counter, api) = Counter::with_api(Duration::ZERO).await;
    let turns = |answer: &str| vec![read("/read/1"), read("/read/2"), text(answer)];
    let wf = api.workflow(workflow(turns("done"))).await;
    let origin = api.recorded_run(&wf, json!({})).await;
    let fork = api
        .fork(&origin, script_change(turns("done, said otherwise"), false))
        .await;
    let run = api.finished(&fork).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(
        run["agent_outputs"]["agent"]["response"],
        "done, said otherwise"
    );
    assert_eq!(
        (counter.count("/read/1"), counter.count("/read/2")),
        (1, 1),
        "no call ran again"
    );
    let diff = api.diff(&origin, &fork).await;
    assert_eq!(
        changes(&diff, "agent"),
        vec![("same".to_string(), true), ("same".to_string(), true)],
        "{diff}"
    );
    let node = &diff["nodes"]["agent"];
    assert_eq!(node["response_changed"], true);
    assert_eq!(node["run_response"], "done");
    assert_eq!(node["other_response"], "done, said otherwise");
    assert_eq!(
        diff["summary"],
        json!({"same": 2, "changed": 0, "new": 0, "missing": 0, "replayed": 2})
    );
    // A run compared with itself is all the same, nothing replayed.
    let itself = api.diff(&origin, &origin).await;
    assert_eq!(itself["summary"]["same"], 2);
    assert_eq!(itself["summary"]["replayed"], 0);
    assert_eq!(itself["outputs_changed"], false);
}

/// Acceptance: a fork whose new write call is not approved does not reach
/// the write's endpoint: it waits for the approval, and once denied, the
/// call fails and the endpoint was never hit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_write_in_a_fork_waits_for_approval_and_a_denied_one_never_runs() {
    let (counter, api) = Counter::with_api(Duration::ZERO).await;
    let wf = api
        .workflow(workflow(vec![read("/read/1"), text("done")]))
        .await;
    let origin = api.recorded_run(&wf, json!({})).await;
    let fork = api
        .fork(
            &origin,
            script_change(
                vec![read("/read/1"), write("/write/1"), text("written")],
                true,
            ),
        )
        .await;
    api.wait_for_run(&fork, |r| r["status"] == "waiting_for_approval")
        .await;
    // Not finished: no diff yet (its calls would read as missing).
    let (s, e) = api
        .call("GET", &format!("/runs/{origin}/diff/{fork}"), None)
        .await;
    assert_eq!(s, 409, "{e}");
    assert_eq!(
        e["error"]["details"]["status"], "waiting_for_approval",
        "{e}"
    );
    let (s, approvals) = api.call("GET", "/approvals", None).await;
    assert_eq!(s, 200, "{approvals}");
    let pending: Vec<&Value> = approvals["pending"]
        .as_array()
        .expect("pending")
        .iter()
        .filter(|a| a["run_id"] == fork.as_str())
        .collect();
    assert_eq!(pending.len(), 1, "only the new write asks: {approvals}");
    assert_eq!(
        counter.count("/write/1"),
        0,
        "the write ran before approval"
    );
    let token = pending[0]["token"].as_str().expect("token");
    let (s, e) = api
        .call(
            "POST",
            &format!("/approvals/{token}/deny"),
            Some(json!({"reason": "not in a fork"})),
        )
        .await;
    assert_eq!(s, 200, "{e}");
    let run = api.finished(&fork).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(
        counter.count("/write/1"),
        0,
        "a denied write reached its endpoint"
    );
    assert_eq!(counter.count("/read/1"), 1, "the recorded read ran again");
    let diff = api.diff(&origin, &fork).await;
    assert_eq!(
        changes(&diff, "agent"),
        vec![("same".to_string(), true), ("new".to_string(), false)],
        "{diff}"
    );
    let write = &diff["nodes"]["agent"]["calls"][1]["other"];
    assert_eq!(
        write["error"]["details"]["reason"], "APPROVAL_DENIED",
        "{write}"
    );
}

/// A write the origin made after its approval is answered from the
/// recording in a fork: no approval is asked and the endpoint is not hit
/// again. A replay has no recording to fork.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_write_is_replayed_without_approval_or_effect() {
    let (counter, api) = Counter::with_api(Duration::ZERO).await;
    let (s, created) = api
        .call(
            "POST",
            "/workflows",
            Some(workflow(vec![write("/write/1"), text("written")])),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let (s, started) = api
        .call("POST", "/runs", Some(json!({"workflow_id": created["id"]})))
        .await;
    assert_eq!(s, 202, "{started}");
    let origin = started["run_id"].as_str().expect("run id").to_string();
    api.wait_for_run(&origin, |r| r["status"] == "waiting_for_approval")
        .await;
    let (_, approvals) = api.call("GET", "/approvals", None).await;
    let token = approvals["pending"][0]["token"].as_str().expect("token");
    let (s, e) = api
        .call("POST", &format!("/approvals/{token}/approve"), None)
        .await;
    assert_eq!(s, 200, "{e}");
    let run = api.finished(&origin).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(counter.count("/write/1"), 1);

    let fork = api
        .fork(
            &origin,
            script_change(vec![write("/write/1"), text("written again")], false),
        )
        .await;
    let run = api.finished(&fork).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(counter.count("/write/1"), 1, "the recorded write ran again");
    let (_, approvals) = api.call("GET", "/approvals", None).await;
    assert_eq!(approvals["count"], 0, "a replayed write asked for approval");
    let diff = api.diff(&origin, &fork).await;
    assert_eq!(
        changes(&diff, "agent"),
        vec![("same".to_string(), true)],
        "{diff}"
    );
    // The fork's replay answers its replayed write from its bundle too,
    // without an approval the bundle cannot hold.
    let (s, replayed) = api
        .call("POST", &format!("/runs/{fork}/replay"), None)
        .await;
    assert_eq!(s, 200, "{replayed}");
    assert_eq!(replayed["match"], true, "{replayed}");
    assert_eq!(counter.count("/write/1"), 1);

    let (s, replay) = api
        .call("POST", &format!("/runs/{origin}/replay"), None)
        .await;
    assert_eq!(s, 200, "{replay}");
    let replay_id = replay["run_id"].as_str().expect("replay id");
    let (s, e) = api
        .call("POST", &format!("/runs/{replay_id}/fork"), Some(json!({})))
        .await;
    assert_eq!(
        (s, e["error"]["code"].as_str()),
        (409, Some("CONFLICT")),
        "{e}"
    );
}

/// A fork of a fork with live reads runs the read its origin (a fork
/// without live reads) was refused: a refusal is not a recorded answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_of_a_fork_runs_the_read_its_origin_was_refused() {
    let (counter, api) = Counter::with_api(Duration::ZERO).await;
    let wf = api
        .workflow(workflow(vec![read("/read/1"), text("done")]))
        .await;
    let origin = api.recorded_run(&wf, json!({})).await;
    let offline = api
        .fork(
            &origin,
            script_change(vec![read("/read/1"), read("/read/3"), text("done")], false),
        )
        .await;
    let run = api.finished(&offline).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(counter.count("/read/3"), 0);

    let live = api.fork(&offline, json!({"live_reads": true})).await;
    let run = api.finished(&live).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let calls = &run["agent_outputs"]["agent"];
    let second = &calls["tools_by_id"][calls["tool_order"][1].as_str().expect("id")];
    assert_eq!(second["error"], Value::Null, "{second}");
    assert_eq!(
        (counter.count("/read/1"), counter.count("/read/3")),
        (1, 1),
        "the refused read ran once, the recorded one not again"
    );
}

/// Calls answered from the recording count toward `max_tool_calls` within
/// their batch: with a limit of 2, a batch of 2 recorded calls and a new
/// read refuses the new read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_calls_count_toward_the_limit_within_a_batch() {
    let (counter, api) = Counter::with_api(Duration::ZERO).await;
    let batch = |paths: &[&str]| -> Value {
        let calls: Vec<Value> = paths
            .iter()
            .map(|p| read(p)["tool_calls"][0].clone())
            .collect();
        json!({ "tool_calls": calls })
    };
    let mut limited = workflow(vec![batch(&["/read/1", "/read/2"]), text("done")]);
    limited["nodes"][0]["config"]["policy"] = json!({"max_tool_calls": 2});
    let wf = api.workflow(limited).await;
    let origin = api.recorded_run(&wf, json!({})).await;
    assert_eq!((counter.count("/read/1"), counter.count("/read/2")), (1, 1));
    let fork = api
        .fork(
            &origin,
            script_change(
                vec![batch(&["/read/1", "/read/2", "/read/3"]), text("done")],
                true,
            ),
        )
        .await;
    let run = api.finished(&fork).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let calls = &run["agent_outputs"]["agent"];
    let third = &calls["tools_by_id"][calls["tool_order"][2].as_str().expect("id")];
    assert_eq!(
        third["error"]["details"]["reason"], "MAX_TOOL_CALLS",
        "{third}"
    );
    assert_eq!(
        counter.count("/read/3"),
        0,
        "a call past max_tool_calls ran"
    );
}

/// What a fork runs is stored with its row, in one write, and dropped with
/// its end: forks that end at once (every call answered from the
/// recording), many at a time, leave no checkpoint behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_forks_leave_no_checkpoint_behind() {
    let (_counter, api) = Counter::with_api(Duration::ZERO).await;
    let turns = |answer: &str| vec![read("/read/1"), text(answer)];
    let wf = api.workflow(workflow(turns("done"))).await;
    let origin = api.recorded_run(&wf, json!({})).await;
    let forks = futures::future::join_all((0..30).map(|i| {
        let (api, origin) = (&api, &origin);
        async move {
            let fork = api
                .fork(origin, script_change(turns(&format!("done {i}")), false))
                .await;
            let run = api.finished(&fork).await;
            assert_eq!(run["status"], "succeeded", "{run}");
            fork
        }
    }))
    .await;
    for fork in forks {
        let left = api
            .state
            .db()
            .checkpoints(&fork)
            .await
            .expect("checkpoints");
        assert!(
            left.is_empty(),
            "fork {fork} left checkpoints behind: {left:?}"
        );
    }
}

/// A fork resolves its pins but does not write them to its origin
/// workflow's pin history: a later run of the workflow falls back on what
/// the workflow's own runs resolved, never on an experiment's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_leaves_the_pin_history_of_its_workflow_alone() {
    let (counter, api) = Counter::with_api(Duration::ZERO).await;
    let mut pinned = workflow(vec![read("/read/1"), text("done")]);
    pinned["nodes"][0]["config"]["pins"] = json!([{
        "name": "report",
        "selector": {"tool": "http_request"},
        "on_missing": "stale_last_success"
    }]);
    let wf = api.workflow(pinned).await;
    let origin = api.recorded_run(&wf, json!({})).await;
    let (_, run) = api.call("GET", &format!("/runs/{origin}"), None).await;
    let workflow_id = run["workflow_id"].as_str().expect("workflow id");
    let pin = || async {
        let value = api
            .state
            .db()
            .pin_value(workflow_id, "agent", "report")
            .await
            .expect("pin")
            .expect("the origin's pin is stored");
        value["final_url"].as_str().expect("url").to_string()
    };
    assert!(pin().await.ends_with("/read/1"));

    let fork = api
        .fork(
            &origin,
            script_change(vec![read("/read/2"), text("done")], true),
        )
        .await;
    let run = api.finished(&fork).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(counter.count("/read/2"), 1);
    assert!(
        run["agent_outputs"]["agent"]["tools_by_id"]
            .to_string()
            .contains("/read/2"),
        "{run}"
    );
    let after = pin().await;
    assert!(
        after.ends_with("/read/1"),
        "the fork stored its pin: {after}"
    );
}

/// A fork waiting for the approval of a new write when its server stops
/// is resumed by the next start: its changed graph was stored, and its
/// origin's recording is read again, so after the approval the write runs
/// once and the recorded read that follows is still answered from the
/// recording. On SQLite and on Postgres.
fn interrupted_fork_resumes(dir: &std::path::Path, database_url: &str) {
    let counter = Counter::start(Duration::ZERO);
    let runtime = || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    };
    // The first server: the origin, then a fork waiting for an approval.
    let first = runtime();
    let (token, origin, fork) = first.block_on(async {
        let api = Api::open(dir, database_url, None).await;
        api.add_counter(counter.port).await;
        let wf = api
            .workflow(workflow(vec![read("/read/1"), text("done")]))
            .await;
        let origin = api.recorded_run(&wf, json!({})).await;
        let fork = api
            .fork(
                &origin,
                script_change(
                    vec![write("/write/1"), read("/read/1"), text("written")],
                    false,
                ),
            )
            .await;
        api.wait_for_run(&fork, |r| r["status"] == "waiting_for_approval")
            .await;
        (api.admin.token.clone(), origin, fork)
    });
    // The stop: every task of the first server ends where it is.
    first.shutdown_timeout(Duration::from_secs(5));
    assert_eq!(counter.count("/read/1"), 1);

    let second = runtime();
    second.block_on(async {
        let api = Api::open(dir, database_url, Some(token)).await;
        // A restarted server claims at start and then at each heartbeat:
        // the first claim may find the run's row still locked by the
        // stopped server's session until Postgres has noticed it closed
        // (FOR UPDATE SKIP LOCKED skips it), so claim again until then.
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        let mut resumed = api.state.runs().recover().await.expect("recover");
        while resumed == 0 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
            resumed = api.state.runs().recover().await.expect("recover");
        }
        let (_, run) = api.call("GET", &format!("/runs/{fork}"), None).await;
        assert_eq!(resumed, 1, "the fork is resumed: {run}");
        let (_, approvals) = api.call("GET", "/approvals", None).await;
        let token = approvals["pending"][0]["token"]
            .as_str()
            .expect("the write waits again");
        let (s, e) = api
            .call("POST", &format!("/approvals/{token}/approve"), None)
            .await;
        assert_eq!(s, 200, "{e}");
        let run = api.finished(&fork).await;
        assert_eq!(run["status"], "succeeded", "{run}");
        assert_eq!(run["kind"], "fork");
        assert_eq!(run["fork_of"], origin.as_str());
        assert_eq!(counter.count("/write/1"), 1, "the approved write ran once");
        assert_eq!(
            counter.count("/read/1"),
            1,
            "the recorded read ran again after the resume"
        );
        let diff = api.diff(&origin, &fork).await;
        assert_eq!(
            changes(&diff, "agent"),
            vec![("new".to_string(), false), ("same".to_string(), true)],
            "{diff}"
        );
    });
    second.shutdown_timeout(Duration::from_secs(5));
}

#[test]
fn a_fork_interrupted_by_a_stop_resumes_on_sqlite() {
    let dir = tempfile::tempdir().expect("tmp");
    let url = glassbox_server::Config::default_database_url(dir.path());
    interrupted_fork_resumes(dir.path(), &url);
}

#[test]
fn a_fork_interrupted_by_a_stop_resumes_on_postgres() {
    let admin = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let Some(db) = admin.block_on(common::TempPgDatabase::create("glassbox_fork")) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tmp");
    let outcome = std::panic::catch_unwind(|| interrupted_fork_resumes(dir.path(), &db.url));
    admin.block_on(db.drop_now());
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}
