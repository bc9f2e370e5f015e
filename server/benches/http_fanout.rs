//! Fan-out of `http_request` through the real `glassbox run`: one model
//! turn asks for K calls to a loopback endpoint that answers after 100 ms;
//! the batch's makespan (first call's start to last call's end, from the
//! envelopes) is what a user waits for. Ideal: 100 ms, whatever K, up to
//! the executor's per-batch concurrency (64).
//!
//! A turn with one call comes first: a fresh process loads the system's TLS
//! roots once before its first HTTP client exists (`http_request::prewarm`
//! starts it beside start-up; on some machines it is not done by the first
//! call), which a server does at start and a batch in a running process
//! never pays. That first call's own figure is printed beside the batch's.
//!
//!   cargo bench -p glassbox-server --bench http_fanout

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use common::{glassbox_run, report};

use serde_json::{json, Value};

const DELAY: Duration = Duration::from_millis(100);

/// A loopback endpoint answering every request after [`DELAY`].
fn slow_endpoint() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                std::thread::sleep(DELAY);
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{\"ok\":true}",
                );
            });
        }
    });
    port
}

/// The path of the first turn's one call.
const WARM_UP: &str = "/warm-up";

fn workflow(k: usize, port: u16) -> Value {
    let calls: Vec<Value> = (0..k)
        .map(|i| json!({"name": "http_request", "arguments": {"url": format!("http://127.0.0.1:{port}/item/{i}")}}))
        .collect();
    let first = json!({"name": "http_request", "arguments": {"url": format!("http://127.0.0.1:{port}{WARM_UP}")}});
    json!({
        "format_version": 1, "id": "fanout", "name": "fan-out", "revision": 0,
        "nodes": [{"id": "agent", "kind": "agent", "config": {"prompt": "fetch",
            "tools": [{"tool": "http_request@1.0.0"}],
            "policy": {"max_tool_calls": 1000, "max_iterations": 3},
            "provider": {"kind": "scripted", "script": {"turns": [{"tool_calls": [first]}, {"tool_calls": calls}, {"text": "done"}]}}}}],
        "edges": []
    })
}

/// Seconds since midnight of an RFC 3339 UTC timestamp.
fn seconds(t: &str) -> f64 {
    let time = t
        .split('T')
        .nth(1)
        .unwrap_or_default()
        .trim_end_matches('Z');
    let parts: Vec<f64> = time.split(':').filter_map(|p| p.parse().ok()).collect();
    parts.first().copied().unwrap_or(0.0) * 3600.0
        + parts.get(1).copied().unwrap_or(0.0) * 60.0
        + parts.get(2).copied().unwrap_or(0.0)
}

fn main() {
    let bin = common::glassbox_bin();
    let bin = bin.as_str();
    let port = slow_endpoint();
    let dir = tempfile::tempdir().expect("tmp");
    println!(
        "http_request fan-out through `glassbox run` ({bin}), endpoint delay {} ms",
        DELAY.as_millis()
    );
    for k in [8usize, 64, 256] {
        let file = dir.path().join(format!("fanout-{k}.json"));
        std::fs::write(&file, workflow(k, port).to_string()).expect("write workflow");
        let mut best = f64::MAX;
        let mut wall_best = f64::MAX;
        let mut first_best = f64::MAX;
        for _ in 0..3 {
            let allow = [("GLASSBOX_HTTP_ALLOW_HOSTS", format!("127.0.0.1:{port}"))];
            let (wall, printed, _) = glassbox_run(bin, &file, &allow);
            let mut calls = printed["agent_outputs"]["agent"]["tools_by_id"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            assert_eq!(calls.len(), k + 1, "every call ran");
            assert!(
                calls.values().all(|c| c["error"].is_null()),
                "every call succeeded"
            );
            let span = |c: &Value| {
                let at = |key: &str| seconds(c[key].as_str().unwrap_or_default());
                (at("t_start"), at("t_end"))
            };
            let warm_up = calls
                .iter()
                .find(|(_, c)| {
                    c["input"]["url"]
                        .as_str()
                        .is_some_and(|u| u.ends_with(WARM_UP))
                })
                .map(|(id, c)| (id.clone(), span(c)))
                .expect("the first turn's call");
            calls.remove(&warm_up.0);
            first_best = first_best.min((warm_up.1 .1 - warm_up.1 .0) * 1000.0);
            let start = calls.values().map(|c| span(c).0).fold(f64::MAX, f64::min);
            let end = calls.values().map(|c| span(c).1).fold(0.0, f64::max);
            best = best.min((end - start) * 1000.0);
            wall_best = wall_best.min(wall);
        }
        println!(
            "K = {k:>3}: batch makespan {best:>6.0} ms ({:.2}x the 100 ms ideal); whole `glassbox run` {wall_best:.0} ms; the process's first call {first_best:.0} ms (best of 3)",
            best / 100.0
        );
        report(
            &format!("parallel_{k}_calls_of_a_100ms_tool_makespan_over_100ms"),
            best - 100.0,
            "ms",
            (k == 64).then_some(5.0),
        );
    }
}
