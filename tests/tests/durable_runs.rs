//! Durable approvals and exactly-once writes against the real binary:
//! runs waiting on write approvals survive `kill -9`; an approved write
//! reaches a loopback endpoint (which counts requests per
//! `Idempotency-Key`) exactly once; a crash between a write's intent and
//! its result leaves the invocation "outcome_unknown", never retried.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use glassbox_tests::harness::{http, json, Server};
use serde_json::{json, Value};

/// A loopback HTTP endpoint counting requests per Idempotency-Key. With
/// `hang`, it reports each request and never answers.
struct Endpoint {
    port: u16,
    counts: Arc<Mutex<HashMap<String, usize>>>,
    arrived: mpsc::Receiver<String>,
}

impl Endpoint {
    fn start(hang: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let counts = Arc::new(Mutex::new(HashMap::new()));
        let (tx, arrived) = mpsc::channel();
        let c = counts.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (c, tx) = (c.clone(), tx.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                    let mut key = String::new();
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                            break;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("idempotency-key:") {
                            key = v.trim().to_string();
                        }
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    let _ = std::io::Read::read_exact(&mut reader, &mut body);
                    *c.lock().expect("lock").entry(key.clone()).or_insert(0) += 1;
                    let _ = tx.send(key);
                    if hang {
                        std::thread::sleep(Duration::from_secs(600));
                    }
                    let mut stream = stream;
                    let _ = stream.write_all(
                        b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{\"ok\":true}",
                    );
                });
            }
        });
        Self {
            port,
            counts,
            arrived,
        }
    }

    fn counts(&self) -> HashMap<String, usize> {
        self.counts.lock().expect("lock").clone()
    }
}

fn sign_in(server: &Server) -> String {
    let signin = server.signin_url.split("token=").nth(1).expect("token");
    let (s, body) = http(
        &server.url,
        "POST",
        "/api/v1/auth/exchange",
        None,
        Some(&json!({"token": signin})),
    );
    assert_eq!(s, 200, "{body}");
    json(&body)["session_token"]
        .as_str()
        .expect("session")
        .to_string()
}

/// A workflow whose agent POSTs `n` to the endpoint, then answers.
fn create_writer(server: &Server, token: &str, port: u16, n: usize) -> String {
    let workflow = json!({
        "format_version": 1, "id": format!("w{n}"), "name": format!("writer {n}"), "revision": 0,
        "nodes": [{"id": "agent", "kind": "agent", "config": {"prompt": "post", "tools": [{"tool": "http_request@1.0.0"}],
            "provider": {"kind": "scripted", "script": {"turns": [
                {"tool_calls": [{"name": "http_request", "arguments": {"url": format!("http://127.0.0.1:{port}/write"), "method": "POST", "body": {"n": n}}}]},
                {"text": "done"}]}}}}],
        "edges": []
    });
    let (s, body) = http(
        &server.url,
        "POST",
        "/api/v1/workflows",
        Some(token),
        Some(&workflow),
    );
    assert_eq!(s, 201, "{body}");
    let wf = json(&body)["id"].as_str().expect("id").to_string();
    let (s, body) = http(
        &server.url,
        "POST",
        "/api/v1/runs",
        Some(token),
        Some(&json!({"workflow_id": wf})),
    );
    assert_eq!(s, 202, "{body}");
    json(&body)["run_id"].as_str().expect("run").to_string()
}

fn pending_tokens(server: &Server, token: &str, want: usize) -> Vec<String> {
    for _ in 0..400 {
        let (_, body) = http(&server.url, "GET", "/api/v1/approvals", Some(token), None);
        let v = json(&body);
        let tokens: Vec<String> = v["pending"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|p| p["token"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if tokens.len() >= want {
            return tokens;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("fewer than {want} approvals became pending");
}

fn final_status(server: &Server, token: &str, run_id: &str) -> Value {
    for _ in 0..600 {
        let (_, body) = http(
            &server.url,
            "GET",
            &format!("/api/v1/runs/{run_id}"),
            Some(token),
            None,
        );
        let v = json(&body);
        if matches!(
            v["status"].as_str(),
            Some("succeeded" | "failed" | "cancelled")
        ) {
            return v;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("run {run_id} did not finish");
}

fn invocation_status(server: &Server, token: &str, run_id: &str) -> String {
    let (_, body) = http(
        &server.url,
        "GET",
        &format!("/api/v1/invocations?run_id={run_id}"),
        Some(token),
        None,
    );
    let v = json(&body);
    v["invocations"][0]["status"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn twenty_waiting_writes_survive_kill_9_and_run_exactly_once() {
    let endpoint = Endpoint::start(false);
    let allow = format!("127.0.0.1:{}", endpoint.port);
    let env = [("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str())];
    let dir = tempfile::tempdir().expect("tmp");
    let server = Server::start_in(dir, None, &env).expect("server starts");
    let token = sign_in(&server);
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
        let v = final_status(&server, &token, run);
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
    let token = sign_in(&server);
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
    let v = final_status(&server, &token, &run);
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
