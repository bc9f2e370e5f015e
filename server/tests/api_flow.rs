//! The API end to end, in-process: sign-in exchange, workflows with
//! revisions, a run that waits for a write approval while two SSE
//! subscribers watch (one reconnecting with Last-Event-ID), invocations,
//! and workspace isolation.

mod common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use glassbox_server::auth::{bootstrap, hash_token};
use glassbox_server::{app, AppState, Config, Store};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

struct Api {
    state: AppState,
    _dir: tempfile::TempDir,
}

impl Api {
    /// Exchanges the one-time sign-in link's token for a session token.
    async fn sign_in(&self, signin: &str) -> String {
        let (_, body) = self
            .call(
                "POST",
                "/api/v1/auth/exchange",
                None,
                Some(json!({"token": signin})),
            )
            .await;
        body["session_token"].as_str().expect("session").to_string()
    }

    async fn new() -> (Self, String) {
        let dir = tempfile::tempdir().expect("tmp");
        let url = Config::default_database_url(dir.path());
        let db = Store::open(&url).await.expect("open");
        let signin = bootstrap(&db).await.expect("bootstrap");
        let config = Config {
            bind: [127, 0, 0, 1].into(),
            port: 0,
            data_dir: dir.path().to_path_buf(),
            database_url: url,
            static_dir: None,
            max_output_bytes: glassbox_server::config::DEFAULT_MAX_OUTPUT_BYTES,
            secret_key: None,
            traces_url: glassbox_server::config::DEFAULT_TRACES_URL.into(),
        };
        (
            Self {
                state: AppState::new(db, config).expect("state"),
                _dir: dir,
            },
            signin,
        )
    }

    async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = match body {
            Some(b) => req
                .header("content-type", "application/json")
                .body(Body::from(b.to_string())),
            None => req.body(Body::empty()),
        }
        .expect("request");
        let res = app(self.state.clone())
            .oneshot(req)
            .await
            .expect("infallible");
        let status = res.status();
        let bytes = res.into_body().collect().await.expect("body").to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// Reads an SSE stream to its end: (id, event type, data) per event.
    async fn sse(
        &self,
        path: &str,
        token: &str,
        last_event_id: Option<i64>,
    ) -> Vec<(i64, String, Value)> {
        let mut req = Request::get(path).header("authorization", format!("Bearer {token}"));
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id.to_string());
        }
        let res = app(self.state.clone())
            .oneshot(req.body(Body::empty()).expect("req"))
            .await
            .expect("infallible");
        assert_eq!(res.status(), StatusCode::OK);
        let bytes = tokio::time::timeout(Duration::from_secs(30), res.into_body().collect())
            .await
            .expect("stream ends")
            .expect("body")
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes).to_string();
        text.split("\n\n")
            .filter(|block| block.contains("data:"))
            .map(|block| {
                let field = |name: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .map(|v| v.trim().to_string())
                        .unwrap_or_default()
                };
                (
                    field("id:").parse().unwrap_or(-1),
                    field("event:"),
                    serde_json::from_str(&field("data:")).unwrap_or(Value::Null),
                )
            })
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_workflows_runs_approvals_and_events() {
    let (api, signin) = Api::new().await;

    // Without a token: 401 in the API's error shape.
    let (s, body) = api.call("GET", "/api/v1/workflows", None, None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");

    // The one-time link works once.
    let (s, body) = api
        .call(
            "POST",
            "/api/v1/auth/exchange",
            None,
            Some(json!({"token": signin})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let token = body["session_token"].as_str().expect("session").to_string();
    let (s, _) = api
        .call(
            "POST",
            "/api/v1/auth/exchange",
            None,
            Some(json!({"token": signin})),
        )
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let t = Some(token.as_str());

    // Bad documents name the field; malformed JSON is a 400.
    let mut bad = common::approval_workflow();
    bad["nodes"][0]["position"]["x"] = json!("left");
    let (s, body) = api.call("POST", "/api/v1/workflows", t, Some(bad)).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["error"]["details"]["path"]
            .as_str()
            .unwrap_or_default()
            .starts_with("nodes[0]"),
        "{body}"
    );
    let req = Request::post("/api/v1/workflows")
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Body::from("{not json"))
        .expect("req");
    assert_eq!(
        app(api.state.clone())
            .oneshot(req)
            .await
            .expect("res")
            .status(),
        StatusCode::BAD_REQUEST
    );

    // Create, update, stale update refused.
    let (s, created) = api
        .call(
            "POST",
            "/api/v1/workflows",
            t,
            Some(common::approval_workflow()),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().expect("id").to_string();
    assert_eq!(created["revision"], 1);
    let mut doc = created["workflow"].clone();
    doc["name"] = json!("Renamed");
    let (s, v2) = api
        .call(
            "PUT",
            &format!("/api/v1/workflows/{id}"),
            t,
            Some(json!({"base_revision": 1, "workflow": doc.clone()})),
        )
        .await;
    assert_eq!((s, v2["revision"].clone()), (StatusCode::OK, json!(2)));
    let (s, body) = api
        .call(
            "PUT",
            &format!("/api/v1/workflows/{id}"),
            t,
            Some(json!({"base_revision": 1, "workflow": doc})),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["details"]["current_revision"], 2);
    let (_, revs) = api
        .call("GET", &format!("/api/v1/workflows/{id}/revisions"), t, None)
        .await;
    assert_eq!(revs["revisions"].as_array().map(Vec::len), Some(2));

    // Start a run; it waits for the write approval.
    let (s, started) = api
        .call("POST", "/api/v1/runs", t, Some(json!({"workflow_id": id})))
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{started}");
    let run_id = started["run_id"].as_str().expect("run id").to_string();
    let mut pending = Value::Null;
    for _ in 0..200 {
        let (_, p) = api.call("GET", "/api/v1/approvals", t, None).await;
        if p["count"] == 1 {
            pending = p;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(pending["count"], 1, "the write waits for a human");
    let approval_token = pending["pending"][0]["token"]
        .as_str()
        .expect("token")
        .to_string();
    assert_eq!(pending["pending"][0]["tool"], "write_file@1.0.0");

    // Subscriber A joins mid-run; the run finishes after the approval.
    let events_path = format!("/api/v1/runs/{run_id}/events");
    let api_ref = &api;
    let token_ref = token.clone();
    let path_ref = events_path.clone();
    let subscriber = async move { api_ref.sse(&path_ref, &token_ref, None).await };
    let approve = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        api.call(
            "POST",
            &format!("/api/v1/approvals/{approval_token}/approve"),
            t,
            None,
        )
        .await
    };
    let (events_a, (s, decided)) = tokio::join!(subscriber, approve);
    assert_eq!(s, StatusCode::OK, "{decided}");
    assert_eq!(decided["delivered"], true);
    let seqs: Vec<i64> = events_a.iter().map(|e| e.0).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as i64).collect::<Vec<_>>(),
        "every event once, in order"
    );
    assert_eq!(events_a.last().map(|e| e.1.as_str()), Some("RunFinished"));
    assert!(events_a.iter().any(|e| e.1 == "ApprovalRequested"));
    assert!(events_a.iter().any(|e| e.1 == "ToolCallFinished"));

    // Subscriber B reconnects after event 3: the rest, no gaps, no repeats.
    let events_b = api.sse(&events_path, &token, Some(3)).await;
    assert_eq!(
        events_b.iter().map(|e| e.0).collect::<Vec<_>>(),
        seqs[3..].to_vec()
    );

    // The run and its records.
    let (_, run) = api
        .call("GET", &format!("/api/v1/runs/{run_id}"), t, None)
        .await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["outputs"]["answer"], "Written.");
    // The graph as it ran comes with the run, for the run page to draw.
    assert!(
        run["workflow"]["nodes"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n["id"] == "agent")),
        "{run}"
    );
    let agent = &run["agent_outputs"]["agent"];
    for key in [
        "response",
        "tools_by_id",
        "tool_order",
        "last_tool",
        "traces_url",
    ] {
        assert!(agent.get(key).is_some(), "{key}");
    }
    let (_, inv) = api
        .call(
            "GET",
            &format!("/api/v1/invocations?run_id={run_id}"),
            t,
            None,
        )
        .await;
    let statuses: Vec<(String, String)> = inv["invocations"]
        .as_array()
        .expect("list")
        .iter()
        .map(|i| {
            (
                i["tool_name"].as_str().unwrap_or_default().to_string(),
                i["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert!(
        statuses.contains(&("write_file".into(), "completed".into())),
        "{statuses:?}"
    );
    assert!(
        statuses.contains(&("calculator".into(), "completed".into())),
        "{statuses:?}"
    );
    let (_, inv) = api
        .call("GET", "/api/v1/invocations?tool=write_file", t, None)
        .await;
    assert_eq!(inv["invocations"][0]["approval_status"], "approved");
    assert!(
        inv["invocations"][0]["decided_by"]
            .as_str()
            .is_some_and(|u| !u.is_empty()),
        "the record names who approved: {inv}"
    );
    // Replay: download the bundle, replay the run, replay an upload.
    let req = Request::get(format!("/api/v1/runs/{run_id}/bundle"))
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .expect("req");
    let res = app(api.state.clone()).oneshot(req).await.expect("res");
    assert_eq!(res.status(), StatusCode::OK);
    let disposition = res
        .headers()
        .get("content-disposition")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(disposition.starts_with("attachment"), "{disposition}");
    let bundle: Value =
        serde_json::from_slice(&res.into_body().collect().await.expect("body").to_bytes())
            .expect("bundle json");
    // Each agent bundle is stored once: the stored record goes without it,
    // the downloaded one has it back, equal to the stored bundle.
    let stored = api
        .state
        .db()
        .get_run("default", &run_id)
        .await
        .expect("run");
    let stored: Value =
        serde_json::from_str(stored.record.as_deref().expect("record")).expect("json");
    assert_eq!(stored["nodes"]["agent"]["bundle"], Value::Null);
    let agent_bundle = api
        .state
        .db()
        .get_bundle("default", &run_id, "agent")
        .await
        .expect("bundle");
    assert_eq!(
        bundle["nodes"]["agent"]["bundle"],
        serde_json::from_str::<Value>(&agent_bundle).expect("json")
    );
    assert!(bundle["nodes"]["agent"]["bundle"]["exchanges"].is_array());
    let (s, replayed) = api
        .call("POST", &format!("/api/v1/runs/{run_id}/replay"), t, None)
        .await;
    assert_eq!(s, StatusCode::OK, "{replayed}");
    assert_eq!(replayed["match"], true, "{replayed}");
    assert_eq!(replayed["replay_of"], run_id.as_str());
    // The replay's tool timeline is set beside the recorded one, call for call.
    let timeline = &replayed["timelines"]["agent"];
    let ids = |side: &str| -> Vec<Value> {
        timeline[side]
            .as_array()
            .map(|a| a.iter().map(|e| e["call_id"].clone()).collect())
            .unwrap_or_default()
    };
    assert!(!ids("recorded").is_empty(), "{replayed}");
    assert_eq!(ids("recorded"), ids("replayed"), "{replayed}");
    assert_eq!(timeline["recorded"], timeline["replayed"], "{replayed}");
    let (_, replay_run) = api
        .call(
            "GET",
            &format!("/api/v1/runs/{}", replayed["run_id"].as_str().expect("id")),
            t,
            None,
        )
        .await;
    assert_eq!(
        (
            replay_run["kind"].as_str(),
            replay_run["replay_of"].as_str()
        ),
        (Some("replay"), Some(run_id.as_str()))
    );
    let (s, uploaded) = api
        .call("POST", "/api/v1/replays", t, Some(bundle.clone()))
        .await;
    assert_eq!(
        (s, uploaded["match"].clone()),
        (StatusCode::OK, json!(true)),
        "{uploaded}"
    );
    let mut edited = bundle.clone();
    edited["nodes"]["agent"]["bundle"]["exchanges"][1]["response"]["text"] =
        json!("Something else.");
    let (s, diverged) = api.call("POST", "/api/v1/replays", t, Some(edited)).await;
    assert_eq!(s, StatusCode::OK, "{diverged}");
    assert_eq!(diverged["match"], false);
    assert!(
        diverged["divergence"]
            .as_str()
            .unwrap_or_default()
            .contains("agent"),
        "{diverged}"
    );
    assert_eq!(diverged["diverged_node"], "agent", "{diverged}");
    // Its replayed calls stop where the edited exchange was reached.
    let recorded = diverged["timelines"]["agent"]["recorded"]
        .as_array()
        .map(Vec::len);
    let replayed_calls = diverged["timelines"]["agent"]["replayed"]
        .as_array()
        .map(Vec::len);
    assert!(recorded.is_some() && replayed_calls.is_some(), "{diverged}");
    assert!(replayed_calls <= recorded, "{diverged}");
    let (s, body) = api
        .call(
            "POST",
            "/api/v1/replays",
            t,
            Some(json!({"not": "a bundle"})),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");

    // A second decision is refused.
    let (s, _) = api
        .call(
            "POST",
            &format!(
                "/api/v1/approvals/{}/deny",
                pending["pending"][0]["token"].as_str().expect("t")
            ),
            t,
            Some(json!({"reason": "late"})),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);

    // Workspace isolation: another workspace's user sees 404 for all of it.
    let db = api.state.db();
    db.ensure_workspace("other", "Other").await.expect("ws");
    db.ensure_user("bob", "Bob").await.expect("user");
    db.add_membership("other", "bob", "admin")
        .await
        .expect("member");
    db.insert_token(&hash_token("bob-token"), "bob", "session", None)
        .await
        .expect("token");
    let b = Some("bob-token");
    for (method, path, body) in [
        ("GET", format!("/api/v1/workflows/{id}"), None),
        (
            "PUT",
            format!("/api/v1/workflows/{id}"),
            Some(json!({"base_revision": 2, "workflow": common::approval_workflow()})),
        ),
        ("DELETE", format!("/api/v1/workflows/{id}"), None),
        ("GET", format!("/api/v1/workflows/{id}/revisions"), None),
        ("POST", format!("/api/v1/workflows/{id}/validate"), None),
        (
            "POST",
            "/api/v1/runs".to_string(),
            Some(json!({"workflow_id": id})),
        ),
        ("GET", format!("/api/v1/runs/{run_id}"), None),
        ("POST", format!("/api/v1/runs/{run_id}/cancel"), None),
        ("GET", format!("/api/v1/runs/{run_id}/events"), None),
        (
            "POST",
            format!("/api/v1/approvals/{approval_token}/approve"),
            None,
        ),
    ] {
        let (s, body) = api.call(method, &path, b, body).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{method} {path}: {body}");
    }
    for path in [
        "/api/v1/workflows",
        "/api/v1/runs",
        "/api/v1/approvals",
        "/api/v1/invocations",
    ] {
        let (s, body) = api.call("GET", path, b, None).await;
        assert_eq!(s, StatusCode::OK);
        let items = body
            .as_object()
            .and_then(|o| o.values().find_map(Value::as_array))
            .expect("a list");
        assert!(items.is_empty(), "{path}: {body}");
    }
    // Asking for a workspace one does not belong to is a 404 too.
    let req = Request::get("/api/v1/workflows")
        .header("authorization", "Bearer bob-token")
        .header("x-glassbox-workspace", "default")
        .body(Body::empty())
        .expect("req");
    assert_eq!(
        app(api.state.clone())
            .oneshot(req)
            .await
            .expect("res")
            .status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn oversized_bodies_get_413() {
    let (api, signin) = Api::new().await;
    let token = api.sign_in(&signin).await;
    let huge =
        json!({"format_version": 1, "id": "x", "name": "x".repeat(5 * 1024 * 1024), "nodes": []});
    let (s, body) = api
        .call("POST", "/api/v1/workflows", Some(&token), Some(huge))
        .await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"]["code"], "PAYLOAD_TOO_LARGE");
}

/// A run starts while its record is still queued on the group writer. A
/// record that cannot be stored (here its workspace does not exist) refuses
/// the start and cancels the run: nothing of it is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_record_cannot_be_stored_does_not_start() {
    use sqlx::Connection;
    let (api, _) = Api::new().await;
    let workflow = node_runtime::graph::Workflow::from_value(&json!({
        "format_version": 1, "id": "wf", "name": "wf", "revision": 1,
        "nodes": [
            {"id": "agent", "kind": "agent", "config": {
                "prompt": "go",
                "provider": {"kind": "scripted", "script": {"turns": [
                    {"latency_ms": 50, "text": "done"}]}}}},
            {"id": "out", "kind": "output", "config": {"fields": ["answer"]}}
        ],
        "edges": [{"id": "e", "source": {"node": "agent", "handle": "response"}, "target": {"node": "out", "handle": "answer"}}]
    }))
    .expect("workflow");
    let owner = node_runtime::secrets::SecretOwner {
        user_id: None,
        workspace_id: "nowhere".into(),
        org_id: None,
    };
    let err = api
        .state
        .runs()
        .start(owner, workflow, serde_json::Map::new(), "api")
        .await
        .expect_err("the run's workspace does not exist");
    assert!(
        matches!(err, glassbox_server::storage::StoreError::Unavailable(_)),
        "{err}"
    );
    assert_eq!(
        err.to_string().matches("storage unavailable").count(),
        1,
        "{err}"
    );
    // Past the scripted turn: a run that went on would have written by now.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let url = Config::default_database_url(api._dir.path());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("db");
    for table in ["runs", "run_events", "node_runs", "run_spans"] {
        let (n,): (i64,) = sqlx::query_as(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(&mut conn)
            .await
            .expect("count");
        assert_eq!(n, 0, "{table} holds rows of a run that did not start");
    }
}

/// A run whose calls carry big inputs stores each once (issue 30): the
/// bundle, node outputs and record refer to payloads, and every reader
/// gives back the very texts the run wrote, byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_payloads_are_stored_once_and_read_back_whole() {
    let (api, signin) = Api::new().await;
    let token = api.sign_in(&signin).await;
    let kilobyte = "x".repeat(1024);
    let mut turns: Vec<Value> = (0..3)
        .map(|i| {
            json!({"tool_calls": [{"name": "json_query", "arguments": {
                "program": ".note | length", "data": {"i": i, "note": kilobyte}}}]})
        })
        .collect();
    turns.push(json!({"text": "done"}));
    let workflow = node_runtime::graph::Workflow::from_value(&json!({
        "format_version": 1, "id": "wf", "name": "wf", "revision": 1,
        "nodes": [{"id": "agent", "kind": "agent", "config": {"prompt": "go",
            "tools": [{"tool": "json_query@1.0.0"}],
            "provider": {"kind": "scripted", "script": {"turns": turns}}}}],
        "edges": []
    }))
    .expect("workflow");
    let owner = node_runtime::secrets::SecretOwner {
        user_id: None,
        workspace_id: "default".into(),
        org_id: None,
    };
    let db = api.state.db();
    let run_id = api
        .state
        .runs()
        .start(owner, workflow, serde_json::Map::new(), "api")
        .await
        .expect("starts");
    let run = loop {
        let run = db.get_run("default", &run_id).await.expect("run");
        if run.record.is_some() {
            break run;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(run.status, "succeeded");
    assert!(run.record_refs.is_some(), "the record refers to payloads");
    let stored: (i64,) = sqlx::query_as("SELECT COUNT(*) FROM payloads WHERE run_id = $1")
        .bind(&run_id)
        .fetch_one(db.pool())
        .await
        .expect("count");
    // The bundle, the node's outputs, the three inputs, the script's
    // arguments (the same bytes as the inputs), the record's node inputs.
    assert!((5..=8).contains(&stored.0), "{stored:?}");
    // The bundle as the run wrote it: its typed form serializes to it.
    let text = db
        .get_bundle("default", &run_id, "agent")
        .await
        .expect("bundle");
    let bundle =
        node_runtime::replay_bundle::ReplayBundle::from_json(&text).expect("a valid bundle");
    assert_eq!(bundle.to_json(), text);
    assert_eq!(bundle.envelopes.len(), 3);
    // Each call's input, as its event carries it, is in the bundle as is.
    for event in db
        .events_after("default", &run_id, 0)
        .await
        .expect("events")
    {
        let value: Value = serde_json::from_str(&event.event).expect("event");
        if let Some(input) = value.pointer("/event/envelope/input") {
            assert!(text.contains(&format!("\"input\":{input}")));
        }
    }
    // Events refer to the payloads too; the stored part of the event
    // stream reads them whole.
    let with_refs: (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM run_events WHERE run_id = $1 AND refs IS NOT NULL")
            .bind(&run_id)
            .fetch_one(db.pool())
            .await
            .expect("count");
    assert!(
        with_refs.0 >= 7,
        "3 starts, 3 finishes, the agent's end: {with_refs:?}"
    );
    let stored_events = db
        .events_after("default", &run_id, 0)
        .await
        .expect("events");
    let streamed = api
        .sse(&format!("/api/v1/runs/{run_id}/events"), &token, None)
        .await;
    assert_eq!(streamed.len(), stored_events.len());
    for ((id, _, data), stored) in streamed.iter().zip(&stored_events) {
        assert_eq!(*id, stored.seq);
        assert_eq!(
            data,
            &serde_json::from_str::<Value>(&stored.event).expect("json")
        );
    }
    assert_eq!(
        stored_events
            .iter()
            .filter(|e| e.event.contains(&kilobyte))
            .count(),
        with_refs.0 as usize
    );
    // Invocation records refer to the same payloads; the API answers the
    // texts the events carry.
    let with_refs: (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM tool_invocations WHERE run_id = $1 AND input_refs IS NOT NULL",
    )
    .bind(&run_id)
    .fetch_one(db.pool())
    .await
    .expect("count");
    assert_eq!(with_refs.0, 3);
    let mut checked = 0;
    for event in &stored_events {
        let value: Value = serde_json::from_str(&event.event).expect("event");
        let Some(envelope) = value.pointer("/event/envelope") else {
            continue;
        };
        let id = format!(
            "{run_id}/agent/{}",
            envelope["call_id"].as_str().expect("call id")
        );
        let (s, answer) = api
            .call(
                "GET",
                &format!("/api/v1/invocations/{}", urlencode(&id)),
                Some(&token),
                None,
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{answer}");
        let row = db.get_invocation("default", &id).await.expect("invocation");
        assert_eq!(row.input, envelope["input"].to_string());
        assert_eq!(row.output, Some(envelope["output"].to_string()));
        assert_eq!(answer["input"].as_str(), Some(row.input.as_str()));
        assert_eq!(answer["output"].as_str(), row.output.as_deref());
        checked += 1;
    }
    assert_eq!(checked, 3);
    let nodes = db.node_runs("default", &run_id).await.expect("nodes");
    let outputs: std::collections::BTreeMap<String, Value> =
        serde_json::from_str(&nodes[0].outputs).expect("outputs");
    assert_eq!(
        serde_json::to_string(&outputs).expect("json"),
        nodes[0].outputs
    );
    let record = db.run_record(&run).await.expect("record").expect("some");
    assert_eq!(
        record["nodes"]["agent"]["outputs"],
        serde_json::to_value(&outputs).expect("v")
    );
    assert_eq!(
        record["nodes"]["agent"]["bundle"],
        serde_json::from_str::<Value>(&text).expect("json")
    );
    let outcome = api
        .state
        .runs()
        .replay_record("default", &record, Some(&run_id))
        .await
        .expect("replays");
    assert!(outcome.matches);
}

/// A path segment with its `/` escaped.
fn urlencode(text: &str) -> String {
    text.replace('/', "%2F")
}
