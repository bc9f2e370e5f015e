//! Durable approvals and exactly-once writes against the real binary:
//! runs waiting on write approvals survive `kill -9`; an approved write
//! reaches a loopback endpoint (which counts requests per
//! `Idempotency-Key`) exactly once; a crash between a write's intent and
//! its result leaves the invocation "outcome_unknown", never retried.

use std::time::Duration;

use glassbox_tests::harness::{http, Server};
use glassbox_tests::writes::{create_writer, invocation_status, pending_tokens, Endpoint};

#[test]
fn twenty_waiting_writes_survive_kill_9_and_run_exactly_once() {
    let endpoint = Endpoint::start(false);
    let allow = format!("127.0.0.1:{}", endpoint.port);
    let env = [("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str())];
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

/// One crash point: approve, crash there, restart; the write reached the
/// endpoint at most once and the invocation says "outcome_unknown".
fn crash_at(point: &str) {
    let hang = point == "after_request";
    let endpoint = Endpoint::start(hang);
    let allow = format!("127.0.0.1:{}", endpoint.port);
    let mut env = vec![("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str())];
    if !hang {
        env.push(("GLASSBOX_TEST_CRASH_AT", point));
    }
    let dir = tempfile::tempdir().expect("tmp");
    let mut server = Server::start_in(dir, None, &env).expect("server starts");
    let token = server.sign_in();
    let run = create_writer(&server, &token, endpoint.port, 1);
    let approval = pending_tokens(&server, &token, 1).remove(0);
    let (s, body) = http(
        &server.url,
        "POST",
        &format!("/api/v1/approvals/{approval}/approve"),
        Some(&token),
        None,
    );
    assert_eq!(s, 200, "{body}");
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
    let server = Server::start_in(dir, None, &env[..1]).expect("server restarts");
    let v = server.finished_run(&token, &run);
    assert_eq!(
        v["status"], "succeeded",
        "{point}: the model is told and answers: {v}"
    );
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

#[test]
fn crash_points_never_duplicate_a_write() {
    for point in [
        "after_intent",
        "after_request",
        "after_response",
        "before_result",
    ] {
        crash_at(point);
    }
}
