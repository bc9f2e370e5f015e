//! Durable approvals and exactly-once writes against the real binary:
//! runs waiting on write approvals survive `kill -9`; an approved write
//! reaches a loopback endpoint (which counts requests per
//! `Idempotency-Key`) exactly once; a crash between a write's intent and
//! its result leaves the invocation "outcome_unknown", never retried; a
//! run killed mid-way is resumed, or failed with the reason. Each suite
//! runs on SQLite and again on Postgres.

use std::time::Duration;

use glassbox_tests::db::TestDb;
use glassbox_tests::harness::{http, try_http, Server};
use glassbox_tests::writes::{
    create_tool_writer, create_writer, invocation_status, pending_tokens, Endpoint,
};

#[test]
fn twenty_waiting_writes_survive_kill_9_and_run_exactly_once() {
    twenty_waiting_writes(&TestDb::sqlite());
}

#[test]
fn twenty_waiting_writes_survive_kill_9_and_run_exactly_once_on_postgres() {
    if let Some(db) = TestDb::postgres("durable_twenty") {
        twenty_waiting_writes(&db);
    }
}

fn twenty_waiting_writes(db: &TestDb) {
    let endpoint = Endpoint::start(false);
    let allow = format!("127.0.0.1:{}", endpoint.port);
    let mut env = db.env();
    env.push(("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str()));
    let dir = tempfile::tempdir().expect("tmp");
    let server = Server::start_in(dir, None, &env).expect("server starts");
    let token = server.sign_in();
    let runs: Vec<String> = (0..20)
        .map(|n| create_writer(&server, &token, endpoint.port, n))
        .collect();
    assert_eq!(pending_tokens(&server, &token, 20).len(), 20);

    let dir = server.kill9();
    let server = Server::start_in(dir, None, &env).expect("server restarts");
    // Still pending after the restart; nothing ran.
    let tokens = pending_tokens(&server, &token, 20);
    assert!(endpoint.counts().is_empty(), "no write ran before approval");
    for t in &tokens {
        let (s, body) = http(
            &server.url,
            "POST",
            &format!("/api/v1/approvals/{t}/approve"),
            Some(&token),
            None,
        );
        assert_eq!(s, 200, "{body}");
    }
    for run in &runs {
        let v = server.finished_run(&token, run);
        assert_eq!(v["status"], "succeeded", "{v}");
        assert_eq!(invocation_status(&server, &token, run), "completed");
    }
    let counts = endpoint.counts();
    assert_eq!(counts.len(), 20, "one key per call: {counts:?}");
    assert!(
        counts.values().all(|&n| n == 1),
        "exactly one request per Idempotency-Key: {counts:?}"
    );
}

/// A Tool node's approved write, killed at `point` and restarted.
#[test]
fn a_tool_nodes_approved_write_never_runs_twice() {
    for point in ["after_intent", "after_response", "before_result"] {
        crash_writer_at(&TestDb::sqlite(), point, true);
    }
}

#[test]
fn a_tool_nodes_approved_write_never_runs_twice_on_postgres() {
    for point in ["after_intent", "after_response", "before_result"] {
        if let Some(db) = TestDb::postgres("durable_tool_node") {
            crash_writer_at(&db, point, true);
        }
    }
}

/// One crash point: approve, crash there, restart; the write reached the
/// endpoint at most once and the invocation says "outcome_unknown".
fn crash_writer_at(db: &TestDb, point: &str, tool_node: bool) {
    let hang = point == "after_request";
    let endpoint = Endpoint::start(hang);
    let allow = format!("127.0.0.1:{}", endpoint.port);
    let mut env = db.env();
    env.push(("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str()));
    // The restart runs without the crash point.
    let restart_env = env.clone();
    if !hang {
        env.push(("GLASSBOX_TEST_CRASH_AT", point));
    }
    let dir = tempfile::tempdir().expect("tmp");
    let mut server = Server::start_in(dir, None, &env).expect("server starts");
    let token = server.sign_in();
    let run = if tool_node {
        create_tool_writer(&server, &token, endpoint.port)
    } else {
        create_writer(&server, &token, endpoint.port, 1)
    };
    let approval = pending_tokens(&server, &token, 1).remove(0);
    // The decision is recorded before the write starts; the server may
    // crash at `point` before its answer is sent.
    match try_http(
        &server.url,
        "POST",
        &format!("/api/v1/approvals/{approval}/approve"),
        Some(&token),
        None,
    ) {
        Ok((s, body)) => assert_eq!(s, 200, "{body}"),
        Err(e) => assert!(!hang, "the approval is answered when nothing crashes: {e}"),
    }
    let dir = if hang {
        // The request reached the endpoint; kill the server before it answers.
        endpoint
            .arrived
            .recv_timeout(Duration::from_secs(30))
            .expect("the request arrives");
        server.kill9()
    } else {
        assert!(
            server.wait_for_exit(Duration::from_secs(30)),
            "the server aborts at {point}"
        );
        server.kill9()
    };
    let server = Server::start_in(dir, None, &restart_env).expect("server restarts");
    let v = server.finished_run(&token, &run);
    if !tool_node {
        assert_eq!(
            v["status"], "succeeded",
            "{point}: the model is told and answers: {v}"
        );
    }
    assert_eq!(
        invocation_status(&server, &token, &run),
        "outcome_unknown",
        "{point}"
    );
    let counts = endpoint.counts();
    let expected = usize::from(point != "after_intent");
    assert_eq!(
        counts.values().sum::<usize>(),
        expected,
        "{point}: never retried: {counts:?}"
    );
}

const CRASH_POINTS: [&str; 4] = [
    "after_intent",
    "after_request",
    "after_response",
    "before_result",
];

#[test]
fn crash_points_never_duplicate_a_write() {
    for point in CRASH_POINTS {
        crash_writer_at(&TestDb::sqlite(), point, false);
    }
}

#[test]
fn crash_points_never_duplicate_a_write_on_postgres() {
    for point in CRASH_POINTS {
        if let Some(db) = TestDb::postgres("durable_crash") {
            crash_writer_at(&db, point, false);
        }
    }
}

/// A two-node workflow: a slow agent (a `turn_ms` model turn and a
/// calculator call), then a template using its answer.
fn create_slow_run(server: &Server, token: &str, n: usize, turn_ms: u64) -> (String, String) {
    let workflow = serde_json::json!({
        "format_version": 1, "id": format!("slow{n}"), "name": format!("slow {n}"), "revision": 0,
        "nodes": [
            {"id": "agent", "kind": "agent", "config": {"prompt": "add", "tools": [{"tool": "calculator@1.0.0"}],
                "provider": {"kind": "scripted", "script": {"turns": [
                    {"tool_calls": [{"name": "calculator", "arguments": {"expression": format!("{n}+1")}}]},
                    {"latency_ms": turn_ms, "text": "done"}]}}}},
            {"id": "out", "kind": "output", "config": {"fields": ["answer"]}}
        ],
        "edges": [{"id": "e", "source": {"node": "agent", "handle": "response"}, "target": {"node": "out", "handle": "answer"}}]
    });
    let wf = server.create_workflow(token, &workflow);
    let run = server.start_run(token, &wf);
    (wf, run)
}

#[test]
fn runs_killed_mid_way_are_resumed_or_failed_with_the_reason() {
    killed_mid_way(&TestDb::sqlite());
}

#[test]
fn runs_killed_mid_way_are_resumed_or_failed_with_the_reason_on_postgres() {
    if let Some(db) = TestDb::postgres("durable_mid_way") {
        killed_mid_way(&db);
    }
}

fn killed_mid_way(db: &TestDb) {
    let env = db.env();
    let dir = tempfile::tempdir().expect("tmp");
    let server = Server::start_in(dir, None, &env).expect("server starts");
    let token = server.sign_in();
    let (_, resumable) = create_slow_run(&server, &token, 1, 5_000);
    let (wf_gone, unresumable) = create_slow_run(&server, &token, 2, 5_000);
    // Both are mid-way: the calculator call is done, the last turn is slow.
    for run in [&resumable, &unresumable] {
        for _ in 0..200 {
            let (_, body) = http(
                &server.url,
                "GET",
                &format!("/api/v1/invocations?run_id={run}"),
                Some(&token),
                None,
            );
            if glassbox_tests::harness::json(&body)["invocations"][0]["status"] == "completed" {
                break;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }
    let dir = server.kill9();
    // The second run's workflow revision disappears while the server is down.
    db.execute(
        dir.path(),
        "DELETE FROM workflow_revisions WHERE workflow_id = $1",
        &[&wf_gone],
    );
    let server = Server::start_in(dir, None, &env).expect("server restarts");

    let v = server.finished_run(&token, &resumable);
    assert_eq!(v["status"], "succeeded", "resumed from its last step: {v}");
    assert_eq!(v["outputs"]["answer"], "done", "{v}");
    let (_, body) = http(
        &server.url,
        "GET",
        &format!("/api/v1/invocations?run_id={resumable}"),
        Some(&token),
        None,
    );
    let calls = glassbox_tests::harness::json(&body)["invocations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    // The in-flight agent node started over; its read-only call has the same
    // deterministic call id, so there is still one record, completed.
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["status"], "completed", "{calls:?}");

    let v = server.finished_run(&token, &unresumable);
    assert_eq!(v["status"], "failed", "{v}");
    let error = v["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("interrupted by a server stop and not resumable"),
        "{v}"
    );
}
