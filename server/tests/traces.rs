//! A run's trace: the stored spans run -> node -> iteration -> model_call /
//! tool_call with their timings, the trace id on the run's records, and
//! another workspace gets 404.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use axum::http::StatusCode;
use common::request as call;
use serde_json::{json, Value};

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or(Value::Null)
}

#[tokio::test]
async fn a_run_stores_its_spans_with_timings_and_trace_id() {
    let env = common::TwoWorkspaces::new(glassbox_server::config::DEFAULT_MAX_OUTPUT_BYTES).await;
    let (state, token) = (env.state.clone(), env.admin_token.clone());
    let workflow = json!({
        "format_version": 1, "id": "traced", "name": "traced", "revision": 0,
        "nodes": [
            {"id": "agent", "kind": "agent", "config": {
                "prompt": "go",
                "tools": [{"tool": "calculator@1.0.0"}],
                "provider": {"kind": "scripted", "script": {"turns": [
                    {"latency_ms": 30, "tool_calls": [
                        {"name": "calculator", "arguments": {"expression": "1+1"}},
                        {"name": "calculator", "arguments": {"expression": "1/"}}]},
                    {"text": "done"}]}}}},
            {"id": "out", "kind": "output", "config": {"fields": ["answer"]}}
        ],
        "edges": [{"id": "e", "source": {"node": "agent", "handle": "response"}, "target": {"node": "out", "handle": "answer"}}]
    });
    let run_id = common::start_run(&state, &token, workflow).await;

    // The run span closes just after the run ends: wait for it.
    let mut trace = Value::Null;
    for _ in 0..250 {
        let (s, _, body) = call(
            &state,
            "GET",
            &format!("/api/v1/runs/{run_id}/trace"),
            &token,
            None,
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        trace = parse(&body);
        let spans = trace["spans"].as_array().cloned().unwrap_or_default();
        if spans.iter().any(|s| s["name"] == "run") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let spans = trace["spans"].as_array().expect("spans").clone();
    let by_id: HashMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["span_id"].as_str().expect("span id"), s))
        .collect();
    let named =
        |name: &str| -> Vec<&Value> { spans.iter().filter(|s| s["name"] == name).collect() };
    let parent_name = |s: &Value| -> String {
        s["parent_id"]
            .as_str()
            .and_then(|p| by_id.get(p))
            .map(|p| p["name"].as_str().unwrap_or_default().to_string())
            .unwrap_or_default()
    };

    let run = named("run");
    assert_eq!(run.len(), 1, "{trace:#}");
    assert!(run[0]["parent_id"].is_null());
    assert_eq!(run[0]["fields"]["run_id"], run_id.as_str());
    let nodes = named("node");
    assert_eq!(nodes.len(), 2, "agent and output: {trace:#}");
    assert!(nodes.iter().all(|n| parent_name(n) == "run"));
    let iterations = named("iteration");
    assert_eq!(iterations.len(), 2, "{trace:#}");
    assert!(iterations.iter().all(|i| parent_name(i) == "node"));
    let models = named("model_call");
    assert_eq!(models.len(), 2, "{trace:#}");
    assert!(models.iter().all(|m| parent_name(m) == "iteration"));
    assert_eq!(models[0]["fields"]["provider"], "scripted");
    assert_eq!(models[0]["fields"]["tool_calls"], 2);
    assert!(
        models[0]["duration_ms"].as_f64().unwrap_or(0.0) >= 30.0,
        "the scripted turn's latency is inside the model call: {}",
        models[0]
    );
    let tools = named("tool_call");
    assert_eq!(tools.len(), 2, "{trace:#}");
    assert!(tools.iter().all(|t| parent_name(t) == "iteration"));
    assert!(tools
        .iter()
        .all(|t| t["fields"]["tool"] == "calculator@1.0.0"));
    assert!(
        tools
            .iter()
            .any(|t| t["fields"]["error"] == "VALIDATION_ERROR"),
        "the failing call's code is on its span: {trace:#}"
    );
    let run_ms = run[0]["duration_ms"].as_f64().expect("duration");
    assert!(spans
        .iter()
        .all(|s| s["duration_ms"].as_f64().expect("duration") <= run_ms));
    assert!(spans
        .iter()
        .all(|s| s["started_at"].as_str().is_some_and(|t| t.ends_with('Z'))));

    // The trace id is on the run, its node rows and its invocations.
    let trace_id = trace["trace_id"].as_str().expect("trace id").to_string();
    assert_eq!(trace_id.len(), 32);
    assert_eq!(trace_id, run_id.replace('-', ""));
    let (_, _, body) = call(
        &state,
        "GET",
        &format!("/api/v1/runs/{run_id}"),
        &token,
        None,
    )
    .await;
    assert_eq!(parse(&body)["trace_id"], trace_id.as_str());
    let nodes = env
        .db
        .node_runs("default", &run_id)
        .await
        .expect("node rows");
    assert!(!nodes.is_empty());
    assert!(nodes
        .iter()
        .all(|n| n.trace_id.as_deref() == Some(trace_id.as_str())));
    let (_, _, body) = call(
        &state,
        "GET",
        &format!("/api/v1/invocations?run_id={run_id}"),
        &token,
        None,
    )
    .await;
    let invocations = parse(&body);
    let rows = invocations["invocations"]
        .as_array()
        .or_else(|| invocations.as_array())
        .cloned()
        .unwrap_or_default();
    assert_eq!(rows.len(), 2, "{invocations}");
    assert!(rows.iter().all(|r| r["trace_id"] == trace_id.as_str()));

    // Another workspace cannot see it.
    let (s, _, _) = call(
        &state,
        "GET",
        &format!("/api/v1/runs/{run_id}/trace"),
        common::BOB_TOKEN,
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}
