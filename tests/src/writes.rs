//! Fixtures for tests of approved writes: a loopback endpoint counting
//! requests per `Idempotency-Key`, workflows whose agent writes to it, and
//! the approval and invocation lookups those tests share.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use crate::harness::{http, json, Server};

/// A loopback HTTP endpoint counting requests per Idempotency-Key. With
/// `hang`, it reports each request and never answers.
pub struct Endpoint {
    pub port: u16,
    counts: Arc<Mutex<HashMap<String, usize>>>,
    pub arrived: mpsc::Receiver<String>,
}

impl Endpoint {
    pub fn start(hang: bool) -> Self {
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

    pub fn counts(&self) -> HashMap<String, usize> {
        self.counts.lock().expect("lock").clone()
    }
}

/// A workflow whose agent POSTs `n` to the endpoint, then answers.
pub fn create_writer(server: &Server, token: &str, port: u16, n: usize) -> String {
    let workflow = json!({
        "format_version": 1, "id": format!("w{n}"), "name": format!("writer {n}"), "revision": 0,
        "nodes": [{"id": "agent", "kind": "agent", "config": {"prompt": "post", "tools": [{"tool": "http_request@1.0.0"}],
            "provider": {"kind": "scripted", "script": {"turns": [
                {"tool_calls": [{"name": "http_request", "arguments": {"url": format!("http://127.0.0.1:{port}/write"), "method": "POST", "body": {"n": n}}}]},
                {"text": "done"}]}}}}],
        "edges": []
    });
    let wf = server.create_workflow(token, &workflow);
    server.start_run(token, &wf)
}

/// A Tool node (no agent) that POSTs to the endpoint: a write, so it waits
/// for approval. Returns the run id.
pub fn create_tool_writer(server: &Server, token: &str, port: u16) -> String {
    let workflow = json!({
        "format_version": 1, "id": "tool-writer", "name": "tool writer", "revision": 0,
        "nodes": [{"id": "post", "kind": "tool", "config": {"tool": "http_request@1.0.0", "inputs": {
            "url": {"source": "fixed", "value": format!("http://127.0.0.1:{port}/write")},
            "method": {"source": "fixed", "value": "POST"},
            "body": {"source": "fixed", "value": {"n": 1}}}}}],
        "edges": []
    });
    let wf = server.create_workflow(token, &workflow);
    server.start_run(token, &wf)
}

pub fn pending_tokens(server: &Server, token: &str, want: usize) -> Vec<String> {
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

pub fn invocation_status(server: &Server, token: &str, run_id: &str) -> String {
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
