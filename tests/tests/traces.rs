//! Traces against the real binary: a run's trace page (the default
//! `traces_url`) lists its spans with timings in real Chromium; with
//! GLASSBOX_OTLP_ENDPOINT set, a loopback OTLP/HTTP receiver gets the same
//! spans under the run's trace id.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use glassbox_tests::harness::{app_and_browser, http, json, wait_for_text, Server};
use serde_json::json;

/// A workflow whose agent calls the calculator twice (one call fails).
fn start_agent_run(server: &Server, token: &str) -> String {
    let workflow = json!({
        "format_version": 1, "id": "traced", "name": "traced", "revision": 0,
        "nodes": [
            {"id": "agent", "kind": "agent", "config": {"prompt": "go", "tools": [{"tool": "calculator@1.0.0"}],
                "provider": {"kind": "scripted", "script": {"turns": [
                    {"latency_ms": 20, "tool_calls": [
                        {"name": "calculator", "arguments": {"expression": "6*7"}},
                        {"name": "calculator", "arguments": {"expression": "1/"}}]},
                    {"text": "42"}]}}}},
            {"id": "out", "kind": "output", "config": {"fields": ["answer"]}}
        ],
        "edges": [{"id": "e", "source": {"node": "agent", "handle": "response"}, "target": {"node": "out", "handle": "answer"}}]
    });
    let wf = server.create_workflow(token, &workflow);
    let run_id = server.start_run(token, &wf);
    let run = server.finished_run(token, &run_id);
    assert_eq!(run["status"], "succeeded", "{run}");
    // The run's own span is stored just after the run ends.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, body) = http(
            &server.url,
            "GET",
            &format!("/api/v1/runs/{run_id}/trace"),
            Some(token),
            None,
        );
        let spans = json(&body)["spans"].as_array().cloned().unwrap_or_default();
        if spans.iter().any(|s| s["name"] == "run") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the run span was not stored: {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    run_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_page_lists_a_runs_spans_with_timings() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let outcome = async {
        let token = browser.sign_in(&server).await?;
        let run_id = tokio::task::block_in_place(|| start_agent_run(&server, &token));
        // The Agent Node's traces_url is this page.
        let (_, body) = http(
            &server.url,
            "GET",
            &format!("/api/v1/runs/{run_id}"),
            Some(&token),
            None,
        );
        let traces_url = json(&body)["agent_outputs"]["agent"]["traces_url"]
            .as_str()
            .map(str::to_string)
            .ok_or(format!("no traces_url in {body}"))?;
        assert_eq!(traces_url, format!("/runs/{run_id}/trace"));
        browser.open(&format!("{}{traces_url}", server.url)).await?;
        let count = wait_for_text(
            &browser.client,
            "[data-testid=trace-count]",
            Duration::from_secs(30),
        )
        .await?;
        let mut rows = Vec::new();
        for row in browser
            .client
            .find_all(fantoccini::Locator::Css("[data-testid=trace-row]"))
            .await
            .map_err(|e| e.to_string())?
        {
            let name = row
                .attr("data-span")
                .await
                .map_err(|e| e.to_string())?
                .unwrap_or_default();
            let duration = row
                .find(fantoccini::Locator::Css("[data-testid=trace-duration]"))
                .await
                .map_err(|e| e.to_string())?
                .text()
                .await
                .map_err(|e| e.to_string())?;
            rows.push((name, duration));
        }
        let trace_id = wait_for_text(
            &browser.client,
            "[data-testid=trace-id]",
            Duration::from_secs(5),
        )
        .await?;
        browser.screenshot("trace-page").await?;
        Ok::<_, String>((run_id, count, rows, trace_id))
    }
    .await;
    browser.close().await;
    let (run_id, count, rows, trace_id) = outcome.expect("the trace page renders");
    let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "run",
            "node",
            "iteration",
            "model_call",
            "tool_call",
            "tool_call",
            "iteration",
            "model_call",
            "node"
        ],
        "depth-first, children in start order: {rows:?}"
    );
    assert_eq!(count.trim(), rows.len().to_string());
    assert!(
        rows.iter()
            .all(|(_, d)| d.ends_with(" ms") || d.ends_with(" µs") || d.ends_with(" s")),
        "every span shows its duration: {rows:?}"
    );
    let model_ms: f64 = rows[3].1.trim_end_matches(" ms").parse().unwrap_or(0.0);
    assert!(
        model_ms >= 20.0,
        "the scripted 20 ms turn is inside the model call: {rows:?}"
    );
    assert_eq!(trace_id.trim(), run_id.replace('-', ""));
}

/// A loopback OTLP/HTTP receiver: keeps the body of every POST /v1/traces.
fn otlp_receiver() -> (u16, Arc<Mutex<Vec<Vec<u8>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let kept = kept.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut stream = stream;
                // Keep-alive: answer request after request on one connection.
                loop {
                    let mut request_line = String::new();
                    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    if request_line.starts_with("POST /v1/traces") {
                        kept.lock().expect("lock").push(body);
                    }
                    if stream
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n")
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    (port, bodies)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn an_otlp_receiver_gets_the_runs_spans() {
    let (port, bodies) = otlp_receiver();
    let endpoint = format!("http://127.0.0.1:{port}");
    let env = [
        ("GLASSBOX_OTLP_ENDPOINT", endpoint.as_str()),
        // Export within a fraction of a second instead of the default 5 s.
        ("OTEL_BSP_SCHEDULE_DELAY", "200"),
    ];
    let server =
        Server::start_in(tempfile::tempdir().expect("tmp"), None, &env).expect("server starts");
    let token = server.sign_in();
    let run_id = start_agent_run(&server, &token);
    let trace_id = hex::decode(run_id.replace('-', "")).expect("the trace id is the run uuid");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let all: Vec<u8> = bodies.lock().expect("lock").concat();
        let names = ["run", "node", "iteration", "model_call", "tool_call"];
        if contains(&all, &trace_id) && names.iter().all(|n| contains(&all, n.as_bytes())) {
            assert!(contains(&all, b"glassbox"), "the service name is sent");
            assert!(
                contains(&all, b"calculator@1.0.0"),
                "span fields are sent as attributes"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the receiver did not get the run's spans within 30 s ({} request(s), {} bytes)",
            bodies.lock().expect("lock").len(),
            all.len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // A bad endpoint stops start-up with a message naming the variable.
    let out = std::process::Command::new(glassbox_tests::harness::glassbox_bin().expect("bin"))
        .args(["migrate", "--data-dir"])
        .arg(tempfile::tempdir().expect("tmp").path())
        .env("GLASSBOX_OTLP_ENDPOINT", "collector:4318")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("GLASSBOX_OTLP_ENDPOINT"), "{stderr}");
}
