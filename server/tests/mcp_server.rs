//! Glassbox as an MCP server: the official Rust SDK's client (`rmcp`)
//! lists the workspace's workflows at `/mcp` over streamable HTTP and runs
//! one (a run that waits for an approval answers with its pending state);
//! without a token the endpoint answers 401 in the API's error shape,
//! and another workspace's token does not see the workflow.

mod common;

use common::{request, TwoWorkspaces, BOB_TOKEN};
use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Value};

fn shout_workflow() -> Value {
    json!({
        "format_version": 1, "id": "shout", "name": "Shout it", "revision": 0,
        "description": "Answers the word in capitals.",
        "nodes": [
            {"id": "in", "kind": "input", "config": {"schema": {"type": "object",
                "properties": {"word": {"type": "string", "description": "what to shout"}},
                "required": ["word"]}}},
            {"id": "t", "kind": "template", "config": {"template": "{{ word | upper }}!"}},
            {"id": "out", "kind": "output", "config": {"fields": ["loud"]}}
        ],
        "edges": [
            {"id": "e1", "source": {"node": "in", "handle": "word"}, "target": {"node": "t", "handle": "word"}},
            {"id": "e2", "source": {"node": "t", "handle": "text"}, "target": {"node": "out", "handle": "loud"}}
        ]
    })
}

async fn client(url: &str, token: &str) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.auth_header = Some(token.to_string());
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    ().serve(transport)
        .await
        .expect("the MCP handshake succeeds")
}

#[tokio::test]
async fn an_mcp_client_lists_and_runs_workflows_of_its_workspace_only() {
    let w = TwoWorkspaces::new(1 << 20).await;
    let (s, _, body) = request(
        &w.state,
        "POST",
        "/api/v1/workflows",
        &w.admin_token,
        Some(shout_workflow()),
    )
    .await;
    assert_eq!(s, 201, "{}", String::from_utf8_lossy(&body));

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = glassbox_server::app(w.state.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let url = format!("http://{addr}/mcp");

    // The workspace's admin sees the workflow as a tool and runs it.
    let admin = client(&url, &w.admin_token).await;
    let info = admin.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|s| s.name.as_str()),
        Some("glassbox")
    );
    let tools = admin.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["shout-it"], "{tools:?}");
    assert_eq!(
        tools[0].description.as_deref(),
        Some("Runs the Glassbox workflow \"Shout it\": Answers the word in capitals.")
    );
    assert_eq!(
        tools[0].input_schema.get("required"),
        Some(&json!(["word"]))
    );
    assert_eq!(
        tools[0].input_schema.get("properties"),
        Some(&json!({"word": {"type": "string", "description": "what to shout"}}))
    );
    let args = json!({"word": "hello"})
        .as_object()
        .cloned()
        .expect("object");
    let result = admin
        .call_tool(CallToolRequestParams::new("shout-it").with_arguments(args))
        .await
        .expect("tools/call");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let out = result.structured_content.expect("structured content");
    assert_eq!(out["status"], "succeeded", "{out}");
    assert_eq!(out["outputs"]["loud"], "HELLO!", "{out}");
    let run_id = out["run_id"].as_str().expect("run id");
    // The call is a real run of the workspace, on record like any other.
    let (s, _, body) = request(
        &w.state,
        "GET",
        &format!("/api/v1/runs/{run_id}"),
        &w.admin_token,
        None,
    )
    .await;
    assert_eq!(s, 200, "{}", String::from_utf8_lossy(&body));
    let run: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(run["status"], "succeeded");

    // A run that stops for an approval answers with its pending state and
    // the link where it is decided.
    let mut writer = common::approval_workflow();
    writer["nodes"].as_array_mut().expect("nodes").push(json!(
        {"id": "in", "kind": "input", "config": {"schema": {"type": "object", "properties": {}}}}
    ));
    let (s, _, body) = request(
        &w.state,
        "POST",
        "/api/v1/workflows",
        &w.admin_token,
        Some(writer),
    )
    .await;
    assert_eq!(s, 201, "{}", String::from_utf8_lossy(&body));
    let result = admin
        .call_tool(CallToolRequestParams::new("writes-a-note"))
        .await
        .expect("tools/call");
    let out = result.structured_content.expect("structured content");
    assert_eq!(out["status"], "waiting_for_approval", "{out}");
    assert!(
        out["message"]
            .as_str()
            .is_some_and(|m| m.contains("/runs/")),
        "{out}"
    );

    // A wrong argument is the caller's mistake, answered as such.
    let bad = admin
        .call_tool(CallToolRequestParams::new("no-such-workflow"))
        .await;
    assert!(bad.is_err(), "{bad:?}");
    admin.cancel().await.expect("close");

    // Another workspace's token lists nothing of this one.
    let bob = client(&url, BOB_TOKEN).await;
    let tools = bob.list_all_tools().await.expect("tools/list");
    assert!(tools.is_empty(), "{tools:?}");
    let denied = bob
        .call_tool(
            CallToolRequestParams::new("shout-it")
                .with_arguments(json!({"word": "x"}).as_object().cloned().expect("object")),
        )
        .await;
    assert!(denied.is_err(), "{denied:?}");
    bob.cancel().await.expect("close");

    // No token: 401 in the API's error shape, before any MCP handling.
    let res = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), 401);
    let body: Value = res.json().await.expect("json error");
    assert_eq!(body["error"]["code"], "UNAUTHORIZED", "{body}");
}
