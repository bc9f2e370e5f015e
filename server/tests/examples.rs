//! The example workflows and the gallery, in-process: every shipped example
//! has a one-line description, validates, and is laid out left to right
//! without overlaps; the materialize example is what `materialize` makes of
//! hello_agent's calculator call; `GET /examples` and
//! `POST /examples/{id}/workflows`; a workflow's description is stored,
//! listed, changed by a save and checked; and the example API's guard
//! (loopback peers with the workspace's token only).

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::StatusCode;
use common::{request, shipped_examples, TwoWorkspaces};
use node_runtime::envelope::ToolEnvelope;
use node_runtime::graph::materialize::{materialize, Source};
use node_runtime::graph::{Node, Workflow};
use serde_json::{json, Value};

fn json_of(answer: &(StatusCode, Option<String>, Vec<u8>)) -> Value {
    serde_json::from_slice(&answer.2).unwrap_or(Value::Null)
}

fn example(id: &str) -> Workflow {
    shipped_examples()
        .into_iter()
        .find(|w| w.id == id)
        .unwrap_or_else(|| panic!("the example {id} is shipped"))
}

/// A node's box on the canvas (the editor's sizes: 180 wide, a 30 px
/// header, 22 px per handle row on its taller side, 8 px below).
fn node_box(node: &Node) -> (f64, f64, f64, f64) {
    let rows = node.inputs().len().max(node.outputs().len()).max(1);
    let height = 30.0 + rows as f64 * 22.0 + 8.0;
    (node.position.x, node.position.y, 180.0, height)
}

#[tokio::test]
async fn every_example_is_described_valid_and_laid_out_left_to_right() {
    let examples = shipped_examples();
    assert!(examples.len() >= 8, "{} examples", examples.len());
    let env = TwoWorkspaces::new(1 << 20).await;
    for wf in &examples {
        let d = &wf.description;
        assert!(
            !d.trim().is_empty() && !d.contains('\n') && d.chars().count() <= 200,
            "{}: a one-line description, not {d:?}",
            wf.id
        );
        let diagnostics = json_of(
            &request(
                &env.state,
                "POST",
                "/api/v1/workflows/validate",
                &env.admin_token,
                Some(serde_json::to_value(wf).expect("json")),
            )
            .await,
        );
        let errors: Vec<&Value> = diagnostics["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .filter(|d| d["severity"] == "error")
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", wf.id);
        // Left to right: every wire goes rightwards, at least 300 px.
        for edge in &wf.edges {
            let (from, to) = (
                wf.node(&edge.source.node).expect("source"),
                wf.node(&edge.target.node).expect("target"),
            );
            assert!(
                to.position.x - from.position.x >= 300.0,
                "{}: {} -> {} does not go right",
                wf.id,
                from.id,
                to.id
            );
        }
        for (i, a) in wf.nodes.iter().enumerate() {
            for b in &wf.nodes[i + 1..] {
                let (ax, ay, aw, ah) = node_box(a);
                let (bx, by, bw, bh) = node_box(b);
                let apart = ax + aw <= bx || bx + bw <= ax || ay + ah <= by || by + bh <= ay;
                assert!(apart, "{}: {} and {} overlap", wf.id, a.id, b.id);
            }
        }
    }
}

/// Polls `GET /runs/{id}` until the run has ended.
async fn finished(state: &glassbox_server::AppState, token: &str, run_id: &str) -> Value {
    for _ in 0..500 {
        let run =
            json_of(&request(state, "GET", &format!("/api/v1/runs/{run_id}"), token, None).await);
        if ["succeeded", "failed", "cancelled"].contains(&run["status"].as_str().unwrap_or("")) {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("run {run_id} did not end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_materialize_example_is_hello_agent_with_its_calculator_call_materialized() {
    let env = TwoWorkspaces::new(1 << 20).await;
    let hello = example("hello_agent");
    let run_id = common::start_run(
        &env.state,
        &env.admin_token,
        serde_json::to_value(&hello).expect("json"),
    )
    .await;
    let run = finished(&env.state, &env.admin_token, &run_id).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let calls = run["agent_outputs"]["agent"]["tools_by_id"]
        .as_object()
        .expect("the agent's calls");
    let calculator: ToolEnvelope = calls
        .values()
        .find(|c| c["name"] == "calculator")
        .map(|c| serde_json::from_value(c.clone()).expect("an envelope"))
        .expect("a calculator call");
    let (made, tool_node) = materialize(
        &hello,
        "agent",
        &Source::Pin("product".into()),
        &calculator,
        None,
    )
    .expect("materialized");
    let shipped = example("materialized_tool_call");
    // Placed by hand where its wires go rightwards (materialize puts it
    // beside the agent, in the column of what it feeds).
    let mut made = made;
    let placed = shipped.node(&tool_node).expect("the Tool node").position;
    for node in made.nodes.iter_mut().filter(|n| n.id == tool_node) {
        node.position = placed;
    }
    assert_eq!(shipped.nodes, made.nodes, "the nodes materialize makes");
    assert_eq!(shipped.edges, made.edges, "the edges materialize makes");
}

#[tokio::test]
async fn the_gallery_lists_the_examples_and_makes_workflows_from_them() {
    let env = TwoWorkspaces::new(1 << 20).await;
    let examples = shipped_examples();
    let state = env.state.clone().with_examples(examples.clone());
    let t = env.admin_token.as_str();
    let listed = json_of(&request(&state, "GET", "/api/v1/examples", t, None).await);
    let want: Vec<Value> = examples
        .iter()
        .map(|w| json!({"id": w.id, "name": w.name, "description": w.description}))
        .collect();
    assert_eq!(listed["examples"], json!(want));

    // A new workflow from one: its document under a fresh id, revision 1.
    let made = request(
        &state,
        "POST",
        "/api/v1/examples/branch_on_error_code/workflows",
        t,
        None,
    )
    .await;
    assert_eq!(made.0, StatusCode::CREATED, "{}", json_of(&made));
    let made = json_of(&made);
    let source = example("branch_on_error_code");
    assert_eq!(made["name"], source.name);
    assert_eq!(made["description"], source.description);
    assert_eq!(made["revision"], 1);
    assert_ne!(made["id"], source.id);
    assert_eq!(made["workflow"]["nodes"], json!(source.nodes));
    assert_eq!(made["diagnostics"], json!([]));
    let id = made["id"].as_str().expect("id").to_string();
    // Each time a new one; another workspace gets its own.
    let again = request(
        &state,
        "POST",
        "/api/v1/examples/branch_on_error_code/workflows",
        common::BOB_TOKEN,
        None,
    )
    .await;
    assert_eq!(again.0, StatusCode::CREATED);
    assert_ne!(json_of(&again)["id"], made["id"]);

    let unknown = request(&state, "POST", "/api/v1/examples/nope/workflows", t, None).await;
    assert_eq!(unknown.0, StatusCode::NOT_FOUND);
    assert_eq!(json_of(&unknown)["error"]["code"], "NOT_FOUND");
    assert!(
        json_of(&unknown)["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("nope")),
        "{}",
        json_of(&unknown)
    );
    // Without a token, neither route answers.
    let anonymous = request(&state, "GET", "/api/v1/examples", "", None).await;
    assert_eq!(anonymous.0, StatusCode::UNAUTHORIZED);

    // The description is listed, changed by a save, and one line.
    let list = json_of(&request(&state, "GET", "/api/v1/workflows", t, None).await);
    let item = list["workflows"]
        .as_array()
        .and_then(|a| a.iter().find(|w| w["id"] == id.as_str()))
        .expect("listed");
    assert_eq!(item["description"], source.description);
    let mut doc = made["workflow"].clone();
    doc["description"] = json!("Reads a file that is not there.");
    let saved = request(
        &state,
        "PUT",
        &format!("/api/v1/workflows/{id}"),
        t,
        Some(json!({"base_revision": 1, "workflow": doc})),
    )
    .await;
    assert_eq!(saved.0, StatusCode::OK, "{}", json_of(&saved));
    let list = json_of(&request(&state, "GET", "/api/v1/workflows", t, None).await);
    assert!(
        list["workflows"].as_array().expect("list").iter().any(
            |w| w["id"] == id.as_str() && w["description"] == "Reads a file that is not there."
        ),
        "{list}"
    );
    for (bad, why) in [
        (json!("two\nlines"), "one line"),
        (json!("x".repeat(501)), "at most 500"),
        (json!(7), "invalid type"),
    ] {
        doc["description"] = bad;
        let refused = request(
            &state,
            "PUT",
            &format!("/api/v1/workflows/{id}"),
            t,
            Some(json!({"base_revision": 2, "workflow": doc})),
        )
        .await;
        assert_eq!(refused.0, StatusCode::UNPROCESSABLE_ENTITY);
        let e = json_of(&refused);
        assert_eq!(e["error"]["details"]["path"], "description", "{e}");
        assert!(
            e["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(why)),
            "{e}"
        );
    }
    // A document without one keeps no `description` field at all.
    let plain = json_of(
        &request(
            &state,
            "POST",
            "/api/v1/workflows",
            t,
            Some(json!({"format_version": 1, "id": "x", "name": "plain", "nodes": []})),
        )
        .await,
    );
    assert_eq!(plain["description"], "");
    assert!(plain["workflow"].get("description").is_none(), "{plain}");
}

/// A request to the example API from `peer` (none: an in-process call
/// with no connection), with `token` as its bearer if any.
async fn example_api(
    state: &glassbox_server::AppState,
    method: &str,
    path: &str,
    peer: Option<&str>,
    token: Option<&str>,
) -> (StatusCode, Value, Option<String>) {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let mut req = axum::http::Request::builder().method(method).uri(path);
    if let Some(token) = token {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    let mut req = req.body(axum::body::Body::empty()).expect("request");
    if let Some(peer) = peer {
        let peer: SocketAddr = peer.parse().expect("address");
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(peer));
    }
    let res = glassbox_server::app(state.clone())
        .oneshot(req)
        .await
        .expect("infallible");
    let status = res.status();
    let challenge = res
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let bytes = res.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        challenge,
    )
}

#[tokio::test]
async fn the_example_api_answers_loopback_peers_with_the_workspace_token_only() {
    let env = TwoWorkspaces::new(1 << 20).await;
    let state = &env.state;
    let local = Some("127.0.0.1:50000");
    // No token set yet: nothing gets in.
    let (s, body, challenge) = example_api(state, "GET", "/example-api/tickets", local, None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");
    assert_eq!(challenge.as_deref(), Some("Bearer realm=\"example-api\""));
    let (s, ..) = example_api(state, "GET", "/example-api/tickets", local, Some("guess")).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);

    let set = request(
        state,
        "PUT",
        "/api/v1/secrets/workspace/EXAMPLE_API_TOKEN",
        &env.admin_token,
        Some(json!({"value": "tok-123456"})),
    )
    .await;
    assert_eq!(set.0, StatusCode::NO_CONTENT);
    let key = Some("tok-123456");
    let (s, body, _) = example_api(state, "GET", "/example-api/tickets", local, key).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["count"], 4);
    assert!(body["tickets"][0].get("messages").is_none(), "{body}");
    let (s, body, _) =
        example_api(state, "GET", "/example-api/tickets?status=open", local, key).await;
    assert_eq!((s, body["count"].clone()), (StatusCode::OK, json!(3)));
    let (s, body, _) = example_api(state, "GET", "/example-api/tickets/104", local, key).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(body["title"], "Glass jar arrived cracked");
    assert!(body["messages"].is_array(), "{body}");
    for index in ["/example-api", "/example-api/"] {
        let (s, body, _) = example_api(state, "GET", index, local, key).await;
        assert_eq!(s, StatusCode::OK, "{index}: {body}");
        assert_eq!(body["name"], "Glassbox example API", "{index}");
    }
    let (s, ..) = example_api(
        state,
        "GET",
        "/example-api/tickets",
        local,
        Some("tok-12345"),
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "another token");
    // IPv6 loopback, and IPv4 loopback mapped into IPv6, are this machine.
    for peer in ["[::1]:50000", "[::ffff:127.0.0.1]:50000"] {
        let (s, ..) = example_api(state, "GET", "/example-api/tickets", Some(peer), key).await;
        assert_eq!(s, StatusCode::OK, "{peer}");
    }

    // Bad input gets a typed error naming the field; unknown things 404.
    let (s, body, _) = example_api(
        state,
        "GET",
        "/example-api/tickets?status=maybe",
        local,
        key,
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["details"]["path"], "status", "{body}");
    let (s, body, _) = example_api(state, "GET", "/example-api/tickets/999", local, key).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("999")));
    let (s, body, _) = example_api(state, "GET", "/example-api/tickets/abc", local, key).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let (s, body, _) = example_api(state, "GET", "/example-api/orders", local, key).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], "NOT_FOUND");
    let (s, body, _) = example_api(state, "POST", "/example-api/tickets", local, key).await;
    assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED, "read-only: {body}");

    // Another machine, or no known peer, is refused even with the token.
    for peer in [Some("192.168.1.7:50000"), Some("[2001:db8::1]:443"), None] {
        let (s, body, _) = example_api(state, "GET", "/example-api/tickets", peer, key).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{peer:?}");
        assert_eq!(body["error"]["code"], "FORBIDDEN", "{peer:?}");
    }
}
