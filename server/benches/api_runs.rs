//! Server benchmarks (issue 6 targets), a plain bench binary:
//! - 100 concurrent runs through the API, scripted provider with 200 ms
//!   turns and three tool calls each: runs/s and the p50/p99 latency added
//!   over the ideal 400 ms (target p99 <= 5 ms);
//! - server start to ready with an existing database: open + migrate check +
//!   bootstrap + state + bind (target < 200 ms).
//!
//! Run: `cargo bench -p glassbox-server --bench api_runs`.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use glassbox_server::auth::{bootstrap, exchange};
use glassbox_server::{app, AppState, Config, Store};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

const RUNS: usize = 100;
const TURN_MS: u64 = 200;

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

fn millis(rfc3339: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| t.timestamp_millis())
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
        let config = Config { bind: [127, 0, 0, 1].into(), port: 0, data_dir: dir.path().to_path_buf(), database_url: url.clone(), static_dir: None, max_output_bytes: glassbox_server::config::DEFAULT_MAX_OUTPUT_BYTES, secret_key: None };
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

        let db = Store::open(&url).await.expect("open");
        let signin = bootstrap(&db).await.expect("bootstrap");
        let state = AppState::new(db.clone(), config.clone()).expect("state");
        let (token, _) = exchange(&db, &signin).await.expect("session");
        let router = app(state.clone());
        let created = call(&router, "POST", "/api/v1/workflows", &token, Some(workflow())).await;
        let wf = created["id"].as_str().expect("workflow id").to_string();
        let start = Instant::now();
        let mut ids = Vec::new();
        for _ in 0..RUNS {
            let r = call(&router, "POST", "/api/v1/runs", &token, Some(json!({"workflow_id": wf}))).await;
            ids.push(r["run_id"].as_str().expect("run id").to_string());
        }
        let started_all = start.elapsed();
        let mut rows = Vec::new();
        loop {
            rows.clear();
            for id in &ids {
                rows.push(db.get_run("default", id).await.expect("run"));
            }
            if rows.iter().all(|r| r.finished_at.is_some()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let wall = start.elapsed();
        assert!(rows.iter().all(|r| r.status == "succeeded"), "{:?}", rows.iter().map(|r| (&r.status, &r.error)).collect::<Vec<_>>());
        let ideal = (2 * TURN_MS) as i64;
        let mut added: Vec<i64> = rows.iter().map(|r| millis(r.finished_at.as_deref().unwrap_or_default()) - millis(&r.created_at) - ideal).collect();
        added.sort_unstable();
        let pct = |p: f64| added[((added.len() as f64 - 1.0) * p).round() as usize];
        println!(
            "server/{RUNS}_concurrent_runs: {:.1} runs/s (all started in {} ms, all done in {} ms; ideal per run {ideal} ms); added latency p50 {} ms, p99 {} ms, max {} ms; target p99 <= 5 ms",
            RUNS as f64 / wall.as_secs_f64(),
            started_all.as_millis(),
            wall.as_millis(),
            pct(0.5),
            pct(0.99),
            added[added.len() - 1]
        );
        db.close().await;
    });
}
