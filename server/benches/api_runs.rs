//! Server benchmarks (issue 6 targets), a plain bench binary:
//! - 100 concurrent runs through the API, scripted provider with 200 ms
//!   turns and three tool calls each: runs/s and the p50/p99 latency added
//!   over the ideal 400 ms (target p99 <= 5 ms), over 5 rounds, with where
//!   the latency goes (from the runs' stored spans) and two peers: the same
//!   sleeps as bare tasks, on the scripted provider's timer and on tokio's;
//! - server start to ready with an existing database: open + migrate check +
//!   bootstrap + state + bind (target < 200 ms).
//!
//! Run: `cargo bench -p glassbox-server --bench api_runs`.

mod common;

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use glassbox_server::auth::{bootstrap, exchange};
use glassbox_server::{app, AppState, Config, Store};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use common::{percentile, report};

const RUNS: usize = 100;
const TURN_MS: u64 = 200;
const ROUNDS: usize = 5;

fn workflow() -> Value {
    json!({
        "format_version": 1, "id": "bench", "name": "bench", "revision": 0,
        "nodes": [
            {"id": "agent", "kind": "agent", "config": {
                "prompt": "go",
                "tools": [{"tool": "calculator@1.0.0"}],
                "provider": {"kind": "scripted", "script": {"turns": [
                    {"latency_ms": TURN_MS, "tool_calls": [
                        {"name": "calculator", "arguments": {"expression": "1+1"}},
                        {"name": "calculator", "arguments": {"expression": "2+2"}},
                        {"name": "calculator", "arguments": {"expression": "3+3"}}]},
                    {"latency_ms": TURN_MS, "text": "done"}]}}}},
            {"id": "out", "kind": "output", "config": {"fields": ["answer"]}}
        ],
        "edges": [{"id": "e", "source": {"node": "agent", "handle": "response"}, "target": {"node": "out", "handle": "answer"}}]
    })
}

async fn call(
    router: &axum::Router,
    method: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> Value {
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .expect("request");
    // The router is built once, as the server does, and cloned per request.
    let res = router.clone().oneshot(req).await.expect("infallible");
    let bytes = res.into_body().collect().await.expect("body").to_bytes();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

type Sleep = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// `RUNS` tasks of two `TURN_MS` sleeps each, `ROUNDS` times: each task's
/// time beyond the ideal, sorted.
async fn peer(sleep: fn(Duration) -> Sleep) -> Vec<f64> {
    let mut out = Vec::new();
    for _ in 0..ROUNDS {
        let handles: Vec<_> = (0..RUNS)
            .map(|_| {
                tokio::spawn(async move {
                    let t = Instant::now();
                    sleep(Duration::from_millis(TURN_MS)).await;
                    sleep(Duration::from_millis(TURN_MS)).await;
                    t.elapsed().as_secs_f64() * 1000.0 - (2 * TURN_MS) as f64
                })
            })
            .collect();
        for h in handles {
            out.push(h.await.expect("peer task"));
        }
    }
    out.sort_by(|a, b| a.total_cmp(b));
    out
}

fn micros(rfc3339: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| t.timestamp_micros())
        .unwrap_or(0)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    rt.block_on(async {
        let dir = tempfile::tempdir().expect("tmp");
        let url = Config::default_database_url(dir.path());
        let config = Config { bind: [127, 0, 0, 1].into(), port: 0, data_dir: dir.path().to_path_buf(), database_url: url.clone(), static_dir: None, max_output_bytes: glassbox_server::config::DEFAULT_MAX_OUTPUT_BYTES, secret_key: None, traces_url: glassbox_server::config::DEFAULT_TRACES_URL.into() };
        {
            let db = Store::open(&url).await.expect("create");
            db.close().await;
        }
        // Start to ready on the existing database, 10 times.
        let mut starts = Vec::new();
        for _ in 0..10 {
            let t = Instant::now();
            let db = Store::open(&url).await.expect("open");
            bootstrap(&db).await.expect("bootstrap");
            let state = AppState::new(db.clone(), config.clone()).expect("state");
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let elapsed = t.elapsed();
            drop((state, listener));
            db.close().await;
            starts.push(elapsed.as_secs_f64() * 1000.0);
        }
        starts.sort_by(|a, b| a.total_cmp(b));
        println!("server/start_to_ready_existing_db: median {:.1} ms (min {:.1}, max {:.1}); target < 200 ms", starts[5], starts[0], starts[9]);
        report("server_start_to_ready_existing_db", starts[5], "ms", Some(200.0));

        let db = Store::open(&url).await.expect("open");
        let signin = bootstrap(&db).await.expect("bootstrap");
        let state = AppState::new(db.clone(), config.clone()).expect("state");
        let (token, _) = exchange(&db, &signin).await.expect("session");
        let router = app(state.clone());
        let created = call(&router, "POST", "/api/v1/workflows", &token, Some(workflow())).await;
        let wf = created["id"].as_str().expect("workflow id").to_string();
        let ideal = (2 * TURN_MS) as i64;
        let mut added: Vec<f64> = Vec::new();
        let mut round_p99 = Vec::new();
        let mut rates = Vec::new();
        let mut all_rows = Vec::new();
        for _ in 0..ROUNDS {
            let start = Instant::now();
            let mut ids = Vec::new();
            for _ in 0..RUNS {
                let r = call(&router, "POST", "/api/v1/runs", &token, Some(json!({"workflow_id": wf}))).await;
                ids.push(r["run_id"].as_str().expect("run id").to_string());
            }
            // Polling is load too: look only once the runs should be done,
            // and only at those still running.
            tokio::time::sleep_until((start + Duration::from_millis(2 * TURN_MS + 100)).into()).await;
            let mut rows = Vec::new();
            let mut waiting = ids.clone();
            while !waiting.is_empty() {
                let mut still = Vec::new();
                for id in waiting {
                    let row = db.get_run("default", &id).await.expect("run");
                    if row.finished_at.is_some() {
                        rows.push(row);
                    } else {
                        still.push(id);
                    }
                }
                waiting = still;
                if !waiting.is_empty() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            assert!(rows.iter().all(|r| r.status == "succeeded"), "{:?}", rows.iter().map(|r| (&r.status, &r.error)).collect::<Vec<_>>());
            let mut round: Vec<f64> = rows
                .iter()
                .map(|r| (micros(r.finished_at.as_deref().unwrap_or_default()) - micros(&r.created_at)) as f64 / 1000.0 - ideal as f64)
                .collect();
            round.sort_by(|a, b| a.total_cmp(b));
            round_p99.push(percentile(&round, 0.99));
            // Throughput from the runs' own records: first created to last finished.
            let first = rows.iter().map(|r| micros(&r.created_at)).min().unwrap_or(0);
            let last = rows.iter().map(|r| micros(r.finished_at.as_deref().unwrap_or_default())).max().unwrap_or(0);
            rates.push(RUNS as f64 / ((last - first) as f64 / 1e6));
            added.extend(round);
            all_rows.extend(rows);
            // Let the last spans land before the next round.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        added.sort_by(|a, b| a.total_cmp(b));
        let mut sorted_p99 = round_p99.clone();
        sorted_p99.sort_by(|a, b| a.total_cmp(b));
        rates.sort_by(|a, b| a.total_cmp(b));
        println!(
            "server/{RUNS}_concurrent_runs x {ROUNDS} rounds: {:.1} runs/s (median round; ideal per run {ideal} ms); added latency over all runs p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; p99 per round {:?} (median {:.2} ms); target p99 <= 5 ms",
            rates[rates.len() / 2],
            percentile(&added, 0.5),
            percentile(&added, 0.99),
            added[added.len() - 1],
            round_p99.iter().map(|v| (v * 100.0).round() / 100.0).collect::<Vec<_>>(),
            sorted_p99[sorted_p99.len() / 2],
        );
        report("concurrent_100_runs_in_process_added_p99", percentile(&added, 0.99), "ms", Some(5.0));
        // Where the added latency goes, from the runs' own stored spans.
        let mut parts: [Vec<f64>; 4] = Default::default();
        for r in &all_rows {
            let spans = db.spans("default", &r.id).await.expect("spans");
            let Some(run) = spans.iter().find(|s| s.name == "run") else { continue };
            let run_start = micros(&run.started_at);
            let model: i64 = spans.iter().filter(|s| s.name == "model_call").map(|s| s.duration_us).sum();
            let created = micros(&r.created_at);
            let finished = micros(r.finished_at.as_deref().unwrap_or_default());
            parts[0].push((run_start - created) as f64 / 1000.0);
            parts[1].push((model - ideal * 1000) as f64 / 1000.0);
            let nodes_end = spans
                .iter()
                .filter(|s| s.name == "node")
                .map(|s| micros(&s.started_at) + s.duration_us)
                .max()
                .unwrap_or(run_start);
            parts[2].push((nodes_end - run_start - model) as f64 / 1000.0);
            parts[3].push((finished - nodes_end) as f64 / 1000.0);
        }
        let names = ["created -> run task starts", "model calls beyond 2 x 200 ms (timer)", "engine and tools (run start -> last node ends, less model time)", "last node ends -> end committed (finished_at)"];
        for (name, v) in names.iter().zip(parts.iter_mut()) {
            v.sort_by(|a, b| a.total_cmp(b));
            if v.is_empty() { continue; }
            println!("  {name}: p50 {:.2} ms, p99 {:.2} ms", percentile(v, 0.5), percentile(v, 0.99));
        }

        // The peers: the same 100 x (200 ms + 200 ms) as bare sleeps on this
        // runtime, started as fast as a loop can, with the scripted
        // provider's timer (a timerfd on Linux) and with tokio's. Their added
        // latency is the timer's and scheduler's floor.
        let peer_precise = peer(|d| Box::pin(node_runtime::model::scripted::wait(d))).await;
        let peer_tokio = peer(|d| Box::pin(tokio::time::sleep(d))).await;
        println!(
            "  peer (bare sleeps on the scripted provider's timer, no server): p50 {:.2} ms, p99 {:.2} ms; the server adds p50 {:.2} ms, p99 {:.2} ms over it",
            percentile(&peer_precise, 0.5),
            percentile(&peer_precise, 0.99),
            percentile(&added, 0.5) - percentile(&peer_precise, 0.5),
            percentile(&added, 0.99) - percentile(&peer_precise, 0.99),
        );
        println!(
            "  peer (bare tokio::time::sleep, 1 ms ticks): p50 {:.2} ms, p99 {:.2} ms",
            percentile(&peer_tokio, 0.5),
            percentile(&peer_tokio, 0.99),
        );
        db.close().await;
    });
}
