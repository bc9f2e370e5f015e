//! MCP tools through the real server, against the official
//! `server-everything` peer (no mock of the protocol): over stdio and over
//! streamable HTTP its tools join `GET /api/v1/tools`; a scripted Agent
//! Node calls them with receipts; read-only tools run at once and the
//! others wait for approval (or not, after an admin's override); the
//! server's environment and the connection's secret stay out of the
//! server's answers; progress notifications reach the run's events;
//! killing the server mid-call is a transient error and the next call
//! starts it again; a run replays with no MCP process.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use glassbox_tests::harness::{http, json, Server};
use glassbox_tests::mcp_peer::{everything_http, everything_script, pids_running};
use serde_json::{json, Value};

const SECRET: &str = "mcp-secret-cnry-5f1d";
const SERVER_ENV: &str = "server-env-cnry-90ab";

fn refresh(server: &Server, token: &str, name: &str) -> Value {
    let (s, body) = http(
        &server.url,
        "POST",
        &format!("/api/v1/connections/{name}/refresh"),
        Some(token),
        None,
    );
    assert_eq!(s, 200, "{body}");
    let v = json(&body);
    assert_eq!(v["ok"], true, "{v}");
    v
}

/// The workspace's MCP tools: registry name -> the tool's view.
fn mcp_tools(server: &Server, token: &str) -> HashMap<String, Value> {
    let (s, body) = http(&server.url, "GET", "/api/v1/tools", Some(token), None);
    assert_eq!(s, 200, "{body}");
    json(&body)["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter(|t| !t["mcp"].is_null())
        .map(|t| (t["name"].as_str().expect("name").to_string(), t.clone()))
        .collect()
}

/// An Agent whose scripted model makes one turn of `calls`, then answers.
fn agent(tools: &[&Value], turns: Value) -> Value {
    let tools: Vec<Value> = tools.iter().map(|t| json!({"tool": t["ref"]})).collect();
    json!({
        "format_version": 1, "id": "mcp", "name": "mcp", "revision": 0,
        "nodes": [
            {"id": "agent", "kind": "agent", "config": {"prompt": "go", "tools": tools,
                "policy": {"max_iterations": 6, "max_tool_calls": 10},
                "provider": {"kind": "scripted", "script": {"turns": turns}}}},
            {"id": "out", "kind": "output", "config": {"fields": ["answer"]}}
        ],
        "edges": [{"id": "e", "source": {"node": "agent", "handle": "response"},
                   "target": {"node": "out", "handle": "answer"}}]
    })
}

fn envelopes(run: &Value) -> Vec<Value> {
    let outputs = &run["agent_outputs"]["agent"];
    outputs["tool_order"]
        .as_array()
        .expect("tool order")
        .iter()
        .map(|id| outputs["tools_by_id"][id.as_str().expect("id")].clone())
        .collect()
}

/// Runs `tool` (a write) from a scripted Agent: the run waits for an
/// approval, which is given; the finished run.
fn approved_write(server: &Server, token: &str, tool: &Value) -> Value {
    let name = tool["name"].as_str().expect("name");
    let wf = agent(
        &[tool],
        json!([
            {"tool_calls": [{"name": name, "arguments": {}}]},
            {"text": "done"}
        ]),
    );
    let id = server.create_workflow(token, &wf);
    let run_id = server.start_run(token, &id);
    let approval = wait_for_approval(server, token, &run_id);
    server.approve(token, &approval);
    let run = server.finished_run(token, &run_id);
    assert_eq!(run["status"], "succeeded", "{run}");
    run
}

fn wait_for_approval(server: &Server, token: &str, run_id: &str) -> String {
    for _ in 0..600 {
        let (_, body) = http(&server.url, "GET", "/api/v1/approvals", Some(token), None);
        if let Some(p) = json(&body)["pending"]
            .as_array()
            .and_then(|a| a.iter().find(|p| p["run_id"] == run_id).cloned())
        {
            return p["token"].as_str().expect("token").to_string();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("run {run_id} did not wait for an approval");
}

#[test]
fn stdio_tools_run_with_receipts_approvals_and_a_replay_without_any_server() {
    let script = everything_script().display().to_string();
    // An argument the server ignores, so this test finds its own processes.
    let marker = "glassbox-test-stdio-replay";
    let server = Server::start_in(
        tempfile::tempdir().expect("tmp"),
        None,
        &[("MCP_CANARY_SERVER_ENV", SERVER_ENV)],
    )
    .expect("server starts");
    let token = server.sign_in();
    server.set_secret(&token, "workspace", "EVERYTHING_TOKEN", SECRET);
    server.add_connection(
        &token,
        "everything",
        json!({"kind": "mcp", "transport": {"type": "stdio", "command": "node",
            "args": [script, "stdio", marker], "env": {"API_TOKEN": "EVERYTHING_TOKEN"}}}),
    );
    let refreshed = refresh(&server, &token, "everything");
    assert!(
        refreshed["message"]
            .as_str()
            .is_some_and(|m| m.contains("mcp-servers/everything 2.0.0 answered over MCP")),
        "{refreshed}"
    );

    // The tools, with the server's name, protocol and the annotations' class.
    let tools = mcp_tools(&server, &token);
    let echo = &tools["mcp.everything.echo"];
    let sum = &tools["mcp.everything.get-sum"];
    let env = &tools["mcp.everything.get-env"];
    let toggle = &tools["mcp.everything.toggle-simulated-logging"];
    assert_eq!(echo["side_effects"], "reads", "{echo}");
    assert_eq!(toggle["side_effects"], "writes", "{toggle}");
    assert_eq!(echo["mcp"]["server_name"], "mcp-servers/everything");
    assert!(echo["mcp"]["protocol_version"]
        .as_str()
        .is_some_and(|p| p.starts_with("20")));
    assert!(
        echo["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("2.0.0+")),
        "{echo}"
    );
    let (_, body) = http(
        &server.url,
        "GET",
        "/api/v1/connections",
        Some(&token),
        None,
    );
    let conn = &json(&body)["connections"][0];
    assert_eq!(
        conn["mcp"]["server_name"], "mcp-servers/everything",
        "{conn}"
    );
    assert!(conn["mcp"]["tools"]
        .as_array()
        .is_some_and(|t| t.contains(&json!("echo"))));

    // Read-only tools run at once, with receipts.
    let weather = &tools["mcp.everything.get-structured-content"];
    let image = &tools["mcp.everything.get-tiny-image"];
    assert!(weather["output_schema"]["properties"]["temperature"].is_object());
    let wf = agent(
        &[echo, sum, env, weather, image],
        json!([
            {"tool_calls": [
                {"name": "mcp.everything.echo", "arguments": {"message": "hi"}},
                {"name": "mcp.everything.get-sum", "arguments": {"a": 2, "b": 3}},
                {"name": "mcp.everything.get-env", "arguments": {}},
                {"name": "mcp.everything.get-structured-content", "arguments": {"location": "Chicago"}},
                {"name": "mcp.everything.get-tiny-image", "arguments": {}}]},
            {"text": "done"}
        ]),
    );
    let id = server.create_workflow(&token, &wf);
    let run_id = server.start_run(&token, &id);
    let run = server.finished_run(&token, &run_id);
    assert_eq!(run["status"], "succeeded", "{run}");
    let calls = envelopes(&run);
    assert_eq!(calls.len(), 5, "{run}");
    // Structured content is the output, checked against the output schema.
    assert!(calls[3]["error"].is_null(), "{}", calls[3]);
    assert!(
        calls[3]["output"]["temperature"].is_number(),
        "{}",
        calls[3]
    );
    // An image is an attachment.
    let attachment = &calls[4]["attachments"][0];
    assert_eq!(attachment["kind"], "image", "{}", calls[4]);
    assert_eq!(attachment["content_type"], "image/png");
    assert!(attachment["url"]
        .as_str()
        .is_some_and(|u| u.starts_with("data:image/png;base64,")));
    assert_eq!(
        calls[0]["output"],
        json!({"text": "Echo: hi"}),
        "{}",
        calls[0]
    );
    assert_eq!(
        calls[1]["output"],
        json!({"text": "The sum of 2 and 3 is 5."}),
        "{}",
        calls[1]
    );
    assert!(calls.iter().all(|c| c["call_id"].as_str().is_some()));
    // The server started without the Glassbox server's environment, with
    // the connection's secret, which never comes back out.
    let env_text = calls[2]["output"]["text"].as_str().expect("env text");
    assert!(env_text.contains("API_TOKEN"), "{env_text}");
    assert!(
        env_text.contains("[REDACTED:EVERYTHING_TOKEN]"),
        "{env_text}"
    );
    assert!(!env_text.contains(SECRET) && !env_text.contains(SERVER_ENV));
    assert!(!env_text.contains("MCP_CANARY_SERVER_ENV"), "{env_text}");
    let (_, body) = http(
        &server.url,
        "GET",
        &format!("/api/v1/runs/{run_id}"),
        Some(&token),
        None,
    );
    assert!(!body.contains(SECRET));

    // A tool without the read-only hint waits for a human.
    let run = approved_write(&server, &token, toggle);
    assert!(envelopes(&run)[0]["error"].is_null(), "{run}");
    let write_run = run["id"].as_str().expect("run id").to_string();
    let write_wf = run["workflow_id"].as_str().expect("workflow").to_string();

    // An admin's override makes it a read, recorded with who and when.
    let (s, body) = http(
        &server.url,
        "PUT",
        "/api/v1/connections/everything/tools/toggle-simulated-logging",
        Some(&token),
        Some(&json!({"side_effects": "reads"})),
    );
    assert_eq!(s, 200, "{body}");
    let toggle = &mcp_tools(&server, &token)["mcp.everything.toggle-simulated-logging"];
    assert_eq!(toggle["side_effects"], "reads", "{toggle}");
    assert!(toggle["mcp"]["side_effects_set_by"].is_string(), "{toggle}");
    let again = server.start_run(&token, &write_wf);
    assert_eq!(server.finished_run(&token, &again)["status"], "succeeded");

    // The replay answers from the bundle: with every server process gone,
    // none is started.
    for pid in pids_running(marker) {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pids_running(marker).is_empty() {
        assert!(Instant::now() < deadline, "the MCP server did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
    for run in [&run_id, &write_run] {
        let (s, body) = http(
            &server.url,
            "POST",
            &format!("/api/v1/runs/{run}/replay"),
            Some(&token),
            None,
        );
        assert_eq!(s, 200, "{body}");
        assert_eq!(json(&body)["match"], true, "{body}");
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        pids_running(marker).is_empty(),
        "a replay started an MCP server"
    );
}

#[test]
fn a_server_killed_mid_call_gives_a_transient_error_and_the_next_call_starts_it_again() {
    let script = everything_script().display().to_string();
    let marker = "glassbox-test-kill";
    let server = Server::start(None).expect("server starts");
    let token = server.sign_in();
    server.add_connection(
        &token,
        "slow",
        json!({"kind": "mcp", "timeout_ms": 20000,
            "transport": {"type": "stdio", "command": "node", "args": [script, "stdio", marker]}}),
    );
    refresh(&server, &token, "slow");
    let tools = mcp_tools(&server, &token);
    let long = &tools["mcp.slow.trigger-long-running-operation"];
    let echo = &tools["mcp.slow.echo"];
    let wf = agent(
        &[long, echo],
        json!([
            {"tool_calls": [{"name": "mcp.slow.trigger-long-running-operation",
                             "arguments": {"duration": 15, "steps": 15}}]},
            {"tool_calls": [{"name": "mcp.slow.echo", "arguments": {"message": "back"}}]},
            {"text": "done"}
        ]),
    );
    let id = server.create_workflow(&token, &wf);
    let run_id = server.start_run(&token, &id);
    // Wait until the long call is in flight, then kill the server.
    std::thread::sleep(Duration::from_secs(2));
    let pids = pids_running(marker);
    assert!(!pids.is_empty(), "the MCP server runs");
    let killed_at = Instant::now();
    for pid in &pids {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    let run = server.finished_run(&token, &run_id);
    assert!(
        killed_at.elapsed() < Duration::from_secs(15),
        "the call ended long after the kill"
    );
    let calls = envelopes(&run);
    assert_eq!(calls.len(), 2, "{run}");
    assert_eq!(calls[0]["error"]["code"], "NETWORK_ERROR", "{}", calls[0]);
    assert_eq!(
        calls[0]["error"]["details"]["reason"], "MCP_SERVER_EXITED",
        "{}",
        calls[0]
    );
    assert!(calls[1]["error"].is_null(), "{}", calls[1]);
    assert_eq!(calls[1]["output"], json!({"text": "Echo: back"}));
    assert!(!pids_running(marker).is_empty(), "started again");
    // Before the kill, the server's progress notifications reached the
    // run's live events.
    let (_, events) = http(
        &server.url,
        "GET",
        &format!("/api/v1/runs/{run_id}/events"),
        Some(&token),
        None,
    );
    assert!(
        events.contains("\"ToolProgress\"") && events.contains("\"total\":15"),
        "{events}"
    );
}

#[test]
fn streamable_http_tools_run_through_the_connection() {
    let (_peer, url) = everything_http();
    let server = Server::start(None).expect("server starts");
    let token = server.sign_in();
    server.add_connection(
        &token,
        "remote",
        json!({"kind": "mcp", "transport": {"type": "http", "url": url}}),
    );
    let refreshed = refresh(&server, &token, "remote");
    assert!(
        refreshed["message"]
            .as_str()
            .is_some_and(|m| m.contains("answered over MCP 20")),
        "{refreshed}"
    );
    let tools = mcp_tools(&server, &token);
    let echo = &tools["mcp.remote.echo"];
    let sum = &tools["mcp.remote.get-sum"];
    assert_eq!(echo["side_effects"], "reads");
    let wf = agent(
        &[echo, sum],
        json!([
            {"tool_calls": [
                {"name": "mcp.remote.echo", "arguments": {"message": "over http"}},
                {"name": "mcp.remote.get-sum", "arguments": {"a": 20, "b": 22}}]},
            {"text": "done"}
        ]),
    );
    let id = server.create_workflow(&token, &wf);
    let run_id = server.start_run(&token, &id);
    let run = server.finished_run(&token, &run_id);
    assert_eq!(run["status"], "succeeded", "{run}");
    let calls = envelopes(&run);
    assert_eq!(calls[0]["output"], json!({"text": "Echo: over http"}));
    assert_eq!(
        calls[1]["output"],
        json!({"text": "The sum of 20 and 22 is 42."})
    );

    // A tool without the read-only hint waits for a human here too.
    let toggle = &tools["mcp.remote.toggle-simulated-logging"];
    assert_eq!(toggle["side_effects"], "writes");
    approved_write(&server, &token, toggle);

    // A call past the connection's deadline ends with TIMEOUT at the
    // deadline (and the server is told to stop it).
    let (s, body) = http(
        &server.url,
        "PUT",
        "/api/v1/connections/remote",
        Some(&token),
        Some(&json!({"config": {"kind": "mcp", "timeout_ms": 1000,
            "transport": {"type": "http", "url": url}}})),
    );
    assert_eq!(s, 200, "{body}");
    refresh(&server, &token, "remote");
    let tools = mcp_tools(&server, &token);
    let long = &tools["mcp.remote.trigger-long-running-operation"];
    assert_eq!(long["timeout_ms"], 1000, "{long}");
    let wf = agent(
        &[long],
        json!([
            {"tool_calls": [{"name": "mcp.remote.trigger-long-running-operation",
                             "arguments": {"duration": 10, "steps": 2}}]},
            {"text": "done"}
        ]),
    );
    let id = server.create_workflow(&token, &wf);
    let started = Instant::now();
    let run_id = server.start_run(&token, &id);
    let run = server.finished_run(&token, &run_id);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "ended at the deadline"
    );
    assert_eq!(envelopes(&run)[0]["error"]["code"], "TIMEOUT", "{run}");
}
