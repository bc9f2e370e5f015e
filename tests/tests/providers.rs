//! Real model providers through the real server: loopback mocks of OpenAI
//! (also as Azure OpenAI) and Anthropic that require the key in their own
//! header (`glassbox_tests::mock_provider`), reached only because the test
//! allow-lists 127.0.0.1 (`GLASSBOX_HTTP_ALLOW_HOSTS`). The key is a
//! workspace secret set through the API; afterwards no answer, stream,
//! bundle, trace, log line or file of the data dir holds it in any form.
//! Without the allow-list, loopback base URLs in every notation are
//! refused and the mock sees no connection. (Private and link-local
//! addresses are refused by the same guard; that is checked on the guard's
//! decision in node-runtime, never by sending a packet.)

use std::process::Stdio;

use glassbox_tests::harness::{http, json, Server};
use glassbox_tests::leaks::{files, find_leaks};
use glassbox_tests::mock_provider::{Api, MockProvider, FINAL_PIECES, INPUT_TOKENS, OUTPUT_TOKENS};
use serde_json::{json, Value};

/// Characters JSON and URLs escape, so every form of it differs.
const KEY: &str = "sk-cnry-7f3a \"k/\\ y";
const SECRET: &str = "PROVIDER_KEY";

/// The provider config of an Agent node talking to `mock`.
fn provider(mock: &MockProvider, stream: bool, price: Option<(f64, f64)>) -> Value {
    let mut p = match mock.api {
        Api::OpenAi => {
            json!({"kind": "openai", "base_url": mock.base_url(), "model": "gpt-4o-mini",
                              "api_key_secret": SECRET})
        }
        Api::Azure => json!({"kind": "azure", "endpoint": mock.base_url(), "deployment": "prod-4o",
                             "api_version": "2024-10-21", "api_key_secret": SECRET, "model": "gpt-4o"}),
        Api::Anthropic => json!({"kind": "anthropic", "base_url": mock.base_url(),
                                 "model": "claude-sonnet-4-20250514", "api_key_secret": SECRET}),
    };
    if stream {
        p["stream"] = json!(true);
    }
    if let Some((input, output)) = price {
        p["price"] = json!({"input_per_million": input, "output_per_million": output});
    }
    p
}

/// An Agent node with the calculator, feeding an Output node.
fn workflow(provider: Value, policy: Value) -> Value {
    json!({
        "format_version": 1, "id": "real-model", "name": "real model", "revision": 0,
        "nodes": [
            {"id": "agent", "kind": "agent", "config": {"prompt": "What is 1+1?",
                "tools": [{"tool": "calculator@1.0.0"}], "provider": provider, "policy": policy}},
            {"id": "out", "kind": "output", "config": {"fields": ["answer"]}}
        ],
        "edges": [{"id": "e", "source": {"node": "agent", "handle": "response"},
                   "target": {"node": "out", "handle": "answer"}}]
    })
}

fn run(server: &Server, token: &str, workflow: &Value) -> (String, Value) {
    let id = server.create_workflow(token, workflow);
    let run = server.start_run(token, &id);
    let detail = server.finished_run(token, &run);
    (run, detail)
}

fn allow_loopback() -> [(&'static str, &'static str); 1] {
    [("GLASSBOX_HTTP_ALLOW_HOSTS", "127.0.0.1")]
}

#[test]
fn openai_azure_and_anthropic_run_with_a_workspace_secret_and_it_leaks_nowhere() {
    let data = tempfile::tempdir().expect("tmp");
    let log_path = data.path().with_extension("log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let mut env = allow_loopback().to_vec();
    env.push(("RUST_LOG", "debug"));
    let server =
        Server::start_with_stderr(data, None, &env, Stdio::from(log)).expect("server starts");
    let token = server.sign_in();
    server.set_secret(&token, "workspace", SECRET, KEY);
    let mut seen = Vec::new();
    for api in [Api::OpenAi, Api::Azure, Api::Anthropic] {
        let mock = MockProvider::start(api, KEY);
        let (run, detail) = run(
            &server,
            &token,
            &workflow(provider(&mock, false, None), json!({})),
        );
        assert_eq!(detail["status"], "succeeded", "{api:?}: {detail}");
        let outputs = &detail["agent_outputs"]["agent"];
        assert_eq!(
            outputs["response"],
            FINAL_PIECES.concat(),
            "{api:?}: {detail}"
        );
        assert_eq!(
            outputs["tool_order"].as_array().map(Vec::len),
            Some(1),
            "{api:?}"
        );
        let call = &outputs["last_tool"];
        assert_eq!(
            (call["name"].as_str(), &call["output"]),
            (Some("calculator"), &json!({"result": 2.0})),
            "{api:?}: {call}"
        );
        // Usage and cost in the run record: two calls at the shipped price.
        let usage = &detail["usage"];
        assert_eq!(usage["model_calls"], 2, "{api:?}: {usage}");
        assert_eq!(usage["input_tokens"], 2 * INPUT_TOKENS, "{api:?}");
        assert_eq!(usage["output_tokens"], 2 * OUTPUT_TOKENS, "{api:?}");
        let (input, output) = match api {
            Api::OpenAi => (0.15, 0.60),
            Api::Azure => (2.50, 10.0),
            Api::Anthropic => (3.0, 15.0),
        };
        let want = 2.0 * (INPUT_TOKENS as f64 * input + OUTPUT_TOKENS as f64 * output) / 1e6;
        let cost = usage["cost"].as_f64().expect("cost");
        assert!((cost - want).abs() < 1e-12, "{api:?}: {cost} != {want}");
        assert_eq!(
            outputs["usage"], *usage,
            "one Agent node: its usage is the run's"
        );
        // The mock saw the key on every call, in its provider's header.
        let requests = mock.seen();
        assert_eq!(requests.len(), 2, "{api:?}");
        assert!(
            requests.iter().all(|r| r.authorized),
            "{api:?}: {requests:?}"
        );
        for path in [
            format!("/api/v1/runs/{run}"),
            format!("/api/v1/runs/{run}/events"),
            format!("/api/v1/runs/{run}/bundle"),
            format!("/api/v1/runs/{run}/trace"),
        ] {
            let (_, body) = http(&server.url, "GET", &path, Some(&token), None);
            seen.push((path, body));
        }
        seen.extend(server.invocation_records(&token, &run));
        let (s, body) = http(
            &server.url,
            "POST",
            &format!("/api/v1/runs/{run}/replay"),
            Some(&token),
            None,
        );
        assert_eq!(s, 200, "{body}");
        assert_eq!(json(&body)["match"], true, "{api:?}: {body}");
        seen.push((format!("replay of {run}"), body));
    }
    for path in ["/api/v1/secrets", "/api/v1/runs", "/api/v1/workflows"] {
        let (_, body) = http(&server.url, "GET", path, Some(&token), None);
        seen.push((path.to_string(), body));
    }
    let data = server.kill9();
    let secrets = [("provider key", KEY)];
    let mut found = Vec::new();
    for (place, body) in &seen {
        found.extend(find_leaks(place, body.as_bytes(), &secrets));
    }
    let mut all = Vec::new();
    files(data.path(), &mut all);
    assert!(all.iter().any(|p| p.ends_with("glassbox.db")), "{all:?}");
    for path in &all {
        let bytes = std::fs::read(path).expect("read");
        found.extend(find_leaks(&path.display().to_string(), &bytes, &secrets));
    }
    let log = std::fs::read(&log_path).expect("log");
    assert!(!log.is_empty(), "the debug log was written");
    found.extend(find_leaks("the server log", &log, &secrets));
    assert!(found.is_empty(), "the key was found:\n{}", found.join("\n"));
}

#[test]
fn a_missing_secret_fails_the_run_before_any_model_call() {
    let server = Server::start_in(tempfile::tempdir().expect("tmp"), None, &allow_loopback())
        .expect("server starts");
    let token = server.sign_in();
    let mock = MockProvider::start(Api::OpenAi, KEY);
    let (_, detail) = run(
        &server,
        &token,
        &workflow(provider(&mock, false, None), json!({})),
    );
    assert_eq!(detail["status"], "failed", "{detail}");
    let error = detail["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("AUTH_REQUIRED") && error.contains(SECRET),
        "{error}"
    );
    assert!(
        error.contains("workspace"),
        "names the scopes searched: {error}"
    );
    assert_eq!(mock.connections(), 0, "no model call");
}

#[test]
fn loopback_base_urls_in_every_notation_are_refused_without_the_allow_list() {
    let server = Server::start(None).expect("server starts");
    let token = server.sign_in();
    server.set_secret(&token, "workspace", SECRET, KEY);
    let mock = MockProvider::start(Api::OpenAi, KEY);
    for host in ["127.0.0.1", "[::ffff:127.0.0.1]", "2130706433", "localhost"] {
        let base = format!("http://{host}:{}/v1", mock.port);
        let p = json!({"kind": "openai", "base_url": base, "model": "gpt-4o-mini", "api_key_secret": SECRET});
        let (_, detail) = run(&server, &token, &workflow(p.clone(), json!({})));
        assert_eq!(detail["status"], "failed", "{host}: {detail}");
        let error = detail["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("was not contacted") && error.contains("refused"),
            "{host}: {error}"
        );
        // The connection test goes through the same guard.
        let (s, body) = http(
            &server.url,
            "POST",
            "/api/v1/providers/test",
            Some(&token),
            Some(&json!({"provider": p})),
        );
        assert_eq!(s, 200, "{body}");
        let result = json(&body);
        assert_eq!(result["ok"], false, "{host}: {body}");
        assert!(
            result["message"]
                .as_str()
                .unwrap_or_default()
                .contains("refused"),
            "{body}"
        );
    }
    assert_eq!(mock.connections(), 0, "nothing reached the listener");
}

#[test]
fn a_budget_below_the_second_calls_cost_ends_the_run_with_limit_reached() {
    let server = Server::start_in(tempfile::tempdir().expect("tmp"), None, &allow_loopback())
        .expect("server starts");
    let token = server.sign_in();
    server.set_secret(&token, "workspace", SECRET, KEY);
    let mock = MockProvider::start(Api::OpenAi, KEY);
    // $10,000 per million input tokens: each call costs 100 x 0.01 = $1,
    // so after the first call $1 is spent, above the budget of $0.50.
    let p = provider(&mock, false, Some((10_000.0, 0.0)));
    let (_, detail) = run(&server, &token, &workflow(p, json!({"max_budget": 0.5})));
    assert_eq!(detail["status"], "succeeded", "{detail}");
    let bundle_outputs = &detail["nodes"]["agent"]["bundle"]["outputs"];
    assert_eq!(bundle_outputs["limit_reached"], "max_budget", "{detail}");
    // Tool call, then (spent $1 < $1.50) the tool's result, then the second
    // call ($2 spent) answers with a tool call's result; the third call is
    // the forced final answer, offered no tools.
    let requests = mock.seen();
    assert!(requests.len() >= 2, "{requests:?}");
    let last = requests.last().expect("a call");
    assert!(
        last.body.get("tools").is_none(),
        "the forced final answer offers no tools: {}",
        last.body
    );
    assert_eq!(
        detail["agent_outputs"]["agent"]["response"],
        "Final answer without tools."
    );
    let cost = detail["usage"]["cost"].as_f64().expect("cost");
    assert!(
        cost >= 1.5,
        "stopped only once the budget was spent: {cost}"
    );
}

#[test]
fn streamed_text_reaches_the_event_stream_and_the_replay_is_identical() {
    let server = Server::start_in(tempfile::tempdir().expect("tmp"), None, &allow_loopback())
        .expect("server starts");
    let token = server.sign_in();
    server.set_secret(&token, "workspace", SECRET, KEY);
    for api in [Api::OpenAi, Api::Anthropic] {
        let mock = MockProvider::start(api, KEY);
        let (run, detail) = run(
            &server,
            &token,
            &workflow(provider(&mock, true, None), json!({})),
        );
        assert_eq!(detail["status"], "succeeded", "{api:?}: {detail}");
        assert_eq!(
            detail["agent_outputs"]["agent"]["response"],
            FINAL_PIECES.concat()
        );
        assert!(
            mock.seen().iter().all(|r| r.body["stream"] == true),
            "{api:?}"
        );
        let (_, events) = http(
            &server.url,
            "GET",
            &format!("/api/v1/runs/{run}/events"),
            Some(&token),
            None,
        );
        let types: Vec<Value> = events
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| json(d.trim()))
            .collect();
        let deltas: Vec<&str> = types
            .iter()
            .filter(|e| e["event"]["type"] == "TextDelta")
            .filter_map(|e| e["event"]["text"].as_str())
            .collect();
        assert_eq!(deltas, FINAL_PIECES, "{api:?}: {events}");
        let first_delta = types.iter().position(|e| e["event"]["type"] == "TextDelta");
        let finished = types.iter().position(|e| e["event"]["type"] == "Finished");
        assert!(
            first_delta < finished && finished.is_some(),
            "{api:?}: deltas come before the answer"
        );
        let (s, body) = http(
            &server.url,
            "POST",
            &format!("/api/v1/runs/{run}/replay"),
            Some(&token),
            None,
        );
        assert_eq!(s, 200, "{body}");
        assert_eq!(json(&body)["match"], true, "{api:?}: {body}");
        assert_eq!(mock.seen().len(), 2, "{api:?}: the replay called no model");
    }
}

#[test]
fn the_connection_test_says_ok_for_the_right_key_and_the_reason_for_a_wrong_one() {
    let server = Server::start_in(tempfile::tempdir().expect("tmp"), None, &allow_loopback())
        .expect("server starts");
    let token = server.sign_in();
    server.set_secret(&token, "workspace", SECRET, KEY);
    server.set_secret(&token, "workspace", "WRONG_KEY", "sk-wrong");
    for api in [Api::OpenAi, Api::Azure, Api::Anthropic] {
        let mock = MockProvider::start(api, KEY);
        let mut p = provider(&mock, false, None);
        let (s, body) = http(
            &server.url,
            "POST",
            "/api/v1/providers/test",
            Some(&token),
            Some(&json!({"provider": p})),
        );
        assert_eq!(s, 200, "{body}");
        let ok = json(&body);
        assert_eq!(ok["ok"], true, "{api:?}: {body}");
        assert!(
            ok["message"]
                .as_str()
                .unwrap_or_default()
                .contains("answered in"),
            "{body}"
        );
        p["api_key_secret"] = json!("WRONG_KEY");
        let (_, body) = http(
            &server.url,
            "POST",
            "/api/v1/providers/test",
            Some(&token),
            Some(&json!({"provider": p})),
        );
        let wrong = json(&body);
        assert_eq!(wrong["ok"], false, "{api:?}: {body}");
        let message = wrong["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("the key in secret WRONG_KEY was refused (401)"),
            "{api:?}: {message}"
        );
        assert!(
            !body.contains("sk-wrong") && !body.contains("sk-cnry"),
            "{body}"
        );
        p["api_key_secret"] = json!("NOT_SET");
        let (_, body) = http(
            &server.url,
            "POST",
            "/api/v1/providers/test",
            Some(&token),
            Some(&json!({"provider": p})),
        );
        assert!(
            json(&body)["message"]
                .as_str()
                .unwrap_or_default()
                .contains("AUTH_REQUIRED"),
            "{body}"
        );
        assert_eq!(
            mock.seen().len(),
            2,
            "{api:?}: a missing secret makes no call"
        );
    }
    let (s, body) = http(
        &server.url,
        "POST",
        "/api/v1/providers/test",
        Some(&token),
        Some(&json!({"provider": {"kind": "gemini"}})),
    );
    assert_eq!(s, 422, "a bad config is the caller's mistake: {body}");
    assert!(body.contains("provider"), "{body}");
}
