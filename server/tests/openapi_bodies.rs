//! Every answer body is documented, and documented truly: each 2xx
//! response of `/api/v1/openapi.json` names its content and schema, and a
//! real request to every route answers with a body that validates against
//! that schema (JSON Schema 2020-12, which OpenAPI 3.1's schemas are). The
//! routes to check come from the document itself, so a new route without a
//! request here fails this test.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use axum::http::StatusCode;
use common::request;
use serde_json::{json, Value};

/// A method and a path template of the document, e.g. `("get", "/runs/{id}")`.
type Operation = (String, String);

/// The statuses that carry no body.
fn bodiless(status: &str) -> bool {
    status == "204"
}

/// The documented operations, each with its 2xx responses.
fn operations(doc: &Value) -> Vec<(Operation, Vec<(String, Value)>)> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            let ok: Vec<(String, Value)> = op["responses"]
                .as_object()
                .expect("responses")
                .iter()
                .filter(|(status, _)| status.starts_with('2'))
                .map(|(s, r)| (s.clone(), r.clone()))
                .collect();
            ops.push(((method.clone(), path.clone()), ok));
        }
    }
    ops
}

/// A validator of one schema of the document, its `#/components/...`
/// references resolved against the document's components.
fn validator(doc: &Value, schema: &Value) -> jsonschema::Validator {
    let mut schema = schema.clone();
    schema["components"] = doc["components"].clone();
    jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("bad schema {schema}: {e}"))
}

/// The checker of one operation's answers, built from the document.
struct Checks {
    doc: Value,
    exercised: BTreeSet<Operation>,
}

impl Checks {
    /// Checks one real answer of `(method, template)` against the schema
    /// the document gives for its status and content type.
    fn check(
        &mut self,
        method: &str,
        template: &str,
        answer: &(StatusCode, Option<String>, Vec<u8>),
    ) {
        let (status, content_type, body) = answer;
        let text = String::from_utf8_lossy(body);
        assert!(status.is_success(), "{method} {template}: {status} {text}");
        let response = &self.doc["paths"][template][method]["responses"][status.as_str()];
        assert!(
            response.is_object(),
            "{method} {template} answered {status}, which the document does not list"
        );
        self.exercised
            .insert((method.to_string(), template.to_string()));
        if bodiless(status.as_str()) {
            assert!(body.is_empty(), "{method} {template}: {status} has a body");
            return;
        }
        let content_type = content_type.as_deref().unwrap_or_default();
        let content = response["content"].as_object().expect("content");
        let (documented_type, media) = content
            .iter()
            .find(|(ct, _)| content_type.starts_with(ct.as_str()))
            .unwrap_or_else(|| {
                panic!("{method} {template}: answered {content_type}, documented {content:?}")
            });
        let instances: Vec<Value> = match documented_type.as_str() {
            "application/json" => vec![serde_json::from_slice(body)
                .unwrap_or_else(|e| panic!("{method} {template}: not JSON ({e}): {text}"))],
            // Server-Sent Events: each event's `data` is one documented body.
            "text/event-stream" => {
                let events: Vec<Value> = text
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(|d| {
                        serde_json::from_str(d.trim()).unwrap_or_else(|e| {
                            panic!("{method} {template}: event data is not JSON ({e}): {d}")
                        })
                    })
                    .collect();
                assert!(
                    !events.is_empty(),
                    "{method} {template}: no event in {text}"
                );
                events
            }
            _ => vec![Value::String(text.to_string())],
        };
        let validator = validator(&self.doc, &media["schema"]);
        for instance in &instances {
            let errors: Vec<String> = validator
                .iter_errors(instance)
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "{method} {template}: the answer does not match its schema: {errors:#?}\n{instance:#}"
            );
        }
    }
}

fn json_of(answer: &(StatusCode, Option<String>, Vec<u8>)) -> Value {
    serde_json::from_slice(&answer.2).unwrap_or(Value::Null)
}

/// Polls `GET /runs/{id}` until the run has ended.
async fn finished(state: &glassbox_server::AppState, token: &str, run_id: &str) -> Value {
    let mut run = Value::Null;
    for _ in 0..500 {
        run = json_of(&request(state, "GET", &format!("/api/v1/runs/{run_id}"), token, None).await);
        if ["succeeded", "failed", "cancelled"].contains(&run["status"].as_str().unwrap_or("")) {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("run {run_id} did not end: {run}");
}

/// Polls `GET /approvals` until `count` writes wait.
async fn pending(state: &glassbox_server::AppState, token: &str, count: usize) -> Vec<String> {
    for _ in 0..500 {
        let p = json_of(&request(state, "GET", "/api/v1/approvals", token, None).await);
        if p["count"] == count {
            return p["pending"]
                .as_array()
                .expect("pending")
                .iter()
                .map(|a| a["token"].as_str().expect("token").to_string())
                .collect();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{count} approvals never waited");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_body_is_documented_and_matches_its_schema() {
    let env = common::TwoWorkspaces::new(1024).await;
    let (state, token) = (env.state.clone(), env.admin_token.clone());
    let t = token.as_str();
    let doc = json_of(&request(&state, "GET", "/api/v1/openapi.json", t, None).await);

    // Every 2xx answer that has a body names its content and schema.
    let documented = operations(&doc);
    for ((method, path), ok) in &documented {
        assert!(!ok.is_empty(), "{method} {path} documents no 2xx answer");
        for (status, response) in ok {
            if bodiless(status) {
                continue;
            }
            let content = response["content"].as_object();
            assert!(
                content.is_some_and(
                    |c| !c.is_empty() && c.values().all(|media| media["schema"].is_object())
                ),
                "{method} {path} {status} has no response schema: {response}"
            );
        }
    }

    let mut checks = Checks {
        doc: doc.clone(),
        exercised: BTreeSet::new(),
    };
    let c = &mut checks;
    let api = |p: &str| format!("/api/v1{p}");

    c.check(
        "get",
        "/health",
        &request(&state, "GET", &api("/health"), t, None).await,
    );
    let signin = glassbox_server::auth::bootstrap(&env.db)
        .await
        .expect("link");
    let exchanged = request(
        &state,
        "POST",
        &api("/auth/exchange"),
        "",
        Some(json!({"token": signin})),
    )
    .await;
    c.check("post", "/auth/exchange", &exchanged);
    let second_session = json_of(&exchanged)["session_token"]
        .as_str()
        .expect("session token")
        .to_string();

    // Workflows.
    let created = request(
        &state,
        "POST",
        &api("/workflows"),
        t,
        Some(common::approval_workflow()),
    )
    .await;
    c.check("post", "/workflows", &created);
    let wf = json_of(&created)["id"].as_str().expect("id").to_string();
    c.check(
        "get",
        "/workflows",
        &request(&state, "GET", &api("/workflows"), t, None).await,
    );
    let one = request(&state, "GET", &api(&format!("/workflows/{wf}")), t, None).await;
    c.check("get", "/workflows/{id}", &one);
    let document = json_of(&one)["workflow"].clone();
    c.check(
        "put",
        "/workflows/{id}",
        &request(
            &state,
            "PUT",
            &api(&format!("/workflows/{wf}")),
            t,
            Some(json!({"base_revision": 1, "workflow": document})),
        )
        .await,
    );
    c.check(
        "get",
        "/workflows/{id}/revisions",
        &request(
            &state,
            "GET",
            &api(&format!("/workflows/{wf}/revisions")),
            t,
            None,
        )
        .await,
    );
    c.check(
        "post",
        "/workflows/{id}/validate",
        &request(
            &state,
            "POST",
            &api(&format!("/workflows/{wf}/validate")),
            t,
            None,
        )
        .await,
    );
    c.check(
        "post",
        "/workflows/validate",
        &request(
            &state,
            "POST",
            &api("/workflows/validate"),
            t,
            Some(common::approval_workflow()),
        )
        .await,
    );
    let answered = request(
        &state,
        "POST",
        &api("/workflows/template-variables"),
        t,
        Some(serde_json::json!({"templates": ["Hi {{ name }}, {{ topic }}", "{{ broken "]})),
    )
    .await;
    c.check("post", "/workflows/template-variables", &answered);
    let answer = json_of(&answered);
    assert_eq!(
        answer["variables"][0]["names"],
        serde_json::json!(["name", "topic"])
    );
    assert!(answer["variables"][1]["error"].is_string(), "{answer}");
    let too_many = request(
        &state,
        "POST",
        &api("/workflows/template-variables"),
        t,
        Some(serde_json::json!({"templates": vec!["{{ a }}"; 1001]})),
    )
    .await;
    assert_eq!(too_many.0, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(json_of(&too_many)["error"]["details"]["path"], "templates");
    // The gallery: the shipped examples, and a workflow made from one.
    let examples = common::shipped_examples();
    let gallery = state.clone().with_examples(examples.clone());
    let listed = request(&gallery, "GET", &api("/examples"), t, None).await;
    c.check("get", "/examples", &listed);
    assert_eq!(
        json_of(&listed)["examples"].as_array().map(Vec::len),
        Some(examples.len())
    );
    let made = request(
        &gallery,
        "POST",
        &api(&format!("/examples/{}/workflows", examples[0].id)),
        t,
        None,
    )
    .await;
    c.check("post", "/examples/{id}/workflows", &made);
    c.check(
        "get",
        "/tools",
        &request(
            &state,
            "GET",
            &api("/tools?include_deprecated=true"),
            t,
            None,
        )
        .await,
    );

    // A run that waits for its write's approval; then two more, denied and
    // sent back for revision.
    let started = request(
        &state,
        "POST",
        &api("/runs"),
        t,
        Some(json!({"workflow_id": wf})),
    )
    .await;
    c.check("post", "/runs", &started);
    let run_id = json_of(&started)["run_id"]
        .as_str()
        .expect("run")
        .to_string();
    let tokens = pending(&state, t, 1).await;
    c.check(
        "get",
        "/approvals",
        &request(&state, "GET", &api("/approvals"), t, None).await,
    );
    c.check(
        "post",
        "/approvals/{token}/approve",
        &request(
            &state,
            "POST",
            &api(&format!("/approvals/{}/approve", tokens[0])),
            t,
            None,
        )
        .await,
    );
    let run = finished(&state, t, &run_id).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    for _ in 0..2 {
        request(
            &state,
            "POST",
            &api("/runs"),
            t,
            Some(json!({"workflow_id": wf})),
        )
        .await;
    }
    let tokens = pending(&state, t, 2).await;
    c.check(
        "post",
        "/approvals/{token}/deny",
        &request(
            &state,
            "POST",
            &api(&format!("/approvals/{}/deny", tokens[0])),
            t,
            Some(json!({"reason": "not today"})),
        )
        .await,
    );
    c.check(
        "post",
        "/approvals/{token}/revise",
        &request(
            &state,
            "POST",
            &api(&format!("/approvals/{}/revise", tokens[1])),
            t,
            Some(json!({"note": "write it elsewhere"})),
        )
        .await,
    );

    // The finished run and what it left.
    let run_path = |p: &str| api(&format!("/runs/{run_id}{p}"));
    c.check(
        "get",
        "/runs/{id}",
        &request(&state, "GET", &run_path(""), t, None).await,
    );
    c.check(
        "get",
        "/runs",
        &request(&state, "GET", &api("/runs"), t, None).await,
    );
    c.check(
        "get",
        "/runs/{id}/events",
        &request(&state, "GET", &run_path("/events"), t, None).await,
    );
    c.check(
        "get",
        "/runs/{id}/trace",
        &request(&state, "GET", &run_path("/trace"), t, None).await,
    );
    let bundle = request(&state, "GET", &run_path("/bundle"), t, None).await;
    c.check("get", "/runs/{id}/bundle", &bundle);
    c.check(
        "post",
        "/runs/{id}/replay",
        &request(&state, "POST", &run_path("/replay"), t, None).await,
    );
    c.check(
        "post",
        "/replays",
        &request(&state, "POST", &api("/replays"), t, Some(json_of(&bundle))).await,
    );
    let forked = request(&state, "POST", &run_path("/fork"), t, Some(json!({}))).await;
    c.check("post", "/runs/{id}/fork", &forked);
    let fork_id = json_of(&forked)["run_id"]
        .as_str()
        .expect("fork id")
        .to_string();
    c.check(
        "get",
        "/runs/{id}/diff/{other}",
        &request(
            &state,
            "GET",
            &run_path(&format!("/diff/{fork_id}")),
            t,
            None,
        )
        .await,
    );
    // A regression suite of the finished run, run once to its end.
    let suite = |name: &str| {
        json!({"name": name, "workflow_id": wf, "cases": [{"run_id": run_id, "assertions": [
            {"kind": "outputs_equal"}, {"kind": "max_calls", "max": 0}]}]})
    };
    let created = request(&state, "POST", &api("/suites"), t, Some(suite("suite"))).await;
    c.check("post", "/suites", &created);
    let suite_id = json_of(&created)["id"]
        .as_str()
        .expect("suite id")
        .to_string();
    let suite_path = |p: &str| api(&format!("/suites/{suite_id}{p}"));
    c.check(
        "put",
        "/suites/{id}",
        &request(&state, "PUT", &suite_path(""), t, Some(suite("the suite"))).await,
    );
    c.check(
        "post",
        "/suites/{id}/cases",
        &request(
            &state,
            "POST",
            &suite_path("/cases"),
            t,
            Some(json!({"name": "again", "run_id": run_id, "assertions": [{"kind": "outputs_equal"}]})),
        )
        .await,
    );
    let started = request(&state, "POST", &suite_path("/runs"), t, Some(json!({}))).await;
    c.check("post", "/suites/{id}/runs", &started);
    let suite_run = json_of(&started)["id"]
        .as_str()
        .expect("suite run id")
        .to_string();
    let mut ended = Value::Null;
    for _ in 0..500 {
        ended = json_of(
            &request(
                &state,
                "GET",
                &api(&format!("/suite-runs/{suite_run}")),
                t,
                None,
            )
            .await,
        );
        if ended["status"] != "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The fork's calls exceed `max_calls: 0`: a failed case, with its diff.
    assert_eq!(ended["status"], "failed", "{ended}");
    c.check(
        "get",
        "/suite-runs/{id}",
        &request(
            &state,
            "GET",
            &api(&format!("/suite-runs/{suite_run}")),
            t,
            None,
        )
        .await,
    );
    c.check(
        "get",
        "/suites/{id}/runs",
        &request(&state, "GET", &suite_path("/runs"), t, None).await,
    );
    c.check(
        "get",
        "/suites/{id}",
        &request(&state, "GET", &suite_path(""), t, None).await,
    );
    c.check(
        "get",
        "/suites",
        &request(&state, "GET", &api("/suites"), t, None).await,
    );
    c.check(
        "delete",
        "/suites/{id}",
        &request(&state, "DELETE", &suite_path(""), t, None).await,
    );
    c.check(
        "post",
        "/runs/{id}/cancel",
        &request(&state, "POST", &run_path("/cancel"), t, None).await,
    );
    let listed = request(
        &state,
        "GET",
        &api(&format!("/invocations?run_id={run_id}")),
        t,
        None,
    )
    .await;
    c.check("get", "/invocations", &listed);
    let invocation_id = json_of(&listed)["invocations"][0]["id"]
        .as_str()
        .expect("an invocation")
        .to_string();
    c.check(
        "get",
        "/invocations/{id}",
        &request(
            &state,
            "GET",
            // Ids hold `/`: sent percent-encoded, as a path segment.
            &api(&format!(
                "/invocations/{}",
                invocation_id.replace('/', "%2F")
            )),
            t,
            None,
        )
        .await,
    );

    // A truncated output's blob.
    let big = common::start_run(&state, t, common::big_output_workflow()).await;
    let run = finished(&state, t, &big).await;
    let url = run["nodes"]["big"]["outputs"]["envelope"]["attachments"][0]["url"]
        .as_str()
        .unwrap_or_else(|| panic!("a blob attachment: {run}"))
        .to_string();
    c.check(
        "get",
        "/blobs/{hash}",
        &request(&state, "GET", &url, t, None).await,
    );

    // Secrets and tokens.
    c.check(
        "put",
        "/secrets/{scope}/{name}",
        &request(
            &state,
            "PUT",
            &api("/secrets/user/API_KEY"),
            t,
            Some(json!({"value": "v-123456"})),
        )
        .await,
    );
    c.check(
        "get",
        "/secrets",
        &request(&state, "GET", &api("/secrets"), t, None).await,
    );
    // Connections: a SQLite file that is not there (no network, and the
    // test says so).
    let sqlite = json!({"kind": "sqlite", "path": "a.db"});
    c.check(
        "post",
        "/connections",
        &request(
            &state,
            "POST",
            &api("/connections"),
            t,
            Some(json!({"name": "files", "config": sqlite})),
        )
        .await,
    );
    c.check(
        "get",
        "/connections",
        &request(&state, "GET", &api("/connections"), t, None).await,
    );
    c.check(
        "put",
        "/connections/{name}",
        &request(
            &state,
            "PUT",
            &api("/connections/files"),
            t,
            Some(json!({"config": {"kind": "sqlite", "path": "b.db"}})),
        )
        .await,
    );
    c.check(
        "post",
        "/connections/{name}/test",
        &request(&state, "POST", &api("/connections/files/test"), t, None).await,
    );
    // An HTTP API (never called here).
    c.check(
        "post",
        "/connections",
        &request(
            &state,
            "POST",
            &api("/connections"),
            t,
            Some(json!({"name": "api", "config": {"kind": "http", "base_url": "https://api.example.com/",
                "auth": {"scheme": "bearer", "secret": "API_TOKEN"}}})),
        )
        .await,
    );
    // An MCP server that cannot start (no such program): the refresh says
    // why; a tool of it (as a refresh would have stored it) gets a class.
    let mcp = json!({"kind": "mcp", "transport": {"type": "stdio", "command": "/nonexistent/glassbox-mcp-test"}});
    let made = request(
        &state,
        "POST",
        &api("/connections"),
        t,
        Some(json!({"name": "tools", "config": mcp})),
    )
    .await;
    c.check("post", "/connections", &made);
    let refreshed = request(&state, "POST", &api("/connections/tools/refresh"), t, None).await;
    c.check("post", "/connections/{name}/refresh", &refreshed);
    assert_eq!(json_of(&refreshed)["ok"], false);
    state
        .db()
        .record_mcp_discovery(
            "default",
            &glassbox_server::storage::McpServerRow {
                connection: "tools".into(),
                server_name: "test".into(),
                server_version: "1.0.0".into(),
                protocol_version: "2025-06-18".into(),
                refreshed_at: "2026-01-01T00:00:00Z".into(),
            },
            &[glassbox_server::storage::McpToolRow {
                connection: "tools".into(),
                tool: "echo".into(),
                version: "1.0.0+000000000000".into(),
                spec: json!({"name": "mcp.tools.echo", "version": "1.0.0+000000000000",
                    "description": "echo", "input_schema": {"type": "object"}, "output_schema": {},
                    "metadata": {"category": "api"}})
                .to_string(),
                annotations: "null".into(),
                current: 1,
                discovered_at: "2026-01-01T00:00:00Z".into(),
            }],
        )
        .await
        .expect("discovery stored");
    c.check(
        "put",
        "/connections/{name}/tools/{tool}",
        &request(
            &state,
            "PUT",
            &api("/connections/tools/tools/echo"),
            t,
            Some(json!({"side_effects": "reads"})),
        )
        .await,
    );
    // Listed with its MCP source and the admin's class.
    let listed = request(&state, "GET", &api("/tools"), t, None).await;
    c.check("get", "/tools", &listed);
    let tools = json_of(&listed);
    let echo = tools["tools"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == "mcp.tools.echo").cloned())
        .expect("the MCP tool is listed");
    assert_eq!(echo["side_effects"], "reads", "{echo}");
    assert_eq!(echo["mcp"]["server_name"], "test", "{echo}");
    c.check(
        "delete",
        "/connections/{name}",
        &request(&state, "DELETE", &api("/connections/files"), t, None).await,
    );
    // The connection test of the offline provider: no network.
    c.check(
        "post",
        "/providers/test",
        &request(
            &state,
            "POST",
            &api("/providers/test"),
            t,
            Some(json!({"provider": {"kind": "scripted", "script": {"turns": [{"text": "ok"}]}}})),
        )
        .await,
    );
    c.check(
        "delete",
        "/secrets/{scope}/{name}",
        &request(&state, "DELETE", &api("/secrets/user/API_KEY"), t, None).await,
    );
    let made = request(
        &state,
        "POST",
        &api("/tokens"),
        t,
        Some(json!({"name": "ci"})),
    )
    .await;
    c.check("post", "/tokens", &made);
    let instances = request(&state, "GET", &api("/instances"), t, None).await;
    c.check("get", "/instances", &instances);
    let audit = request(&state, "GET", &api("/audit"), t, None).await;
    c.check("get", "/audit", &audit);
    c.check(
        "get",
        "/tokens",
        &request(&state, "GET", &api("/tokens"), t, None).await,
    );
    let token_id = json_of(&made)["id"].as_str().expect("token id").to_string();
    c.check(
        "delete",
        "/tokens/{id}",
        &request(
            &state,
            "DELETE",
            &api(&format!("/tokens/{token_id}")),
            t,
            None,
        )
        .await,
    );
    // Teams: a second workspace, the current one renamed, an invitation
    // taken by a new user whose role is changed before removal, and one
    // revoked.
    let made = request(
        &state,
        "POST",
        &api("/workspaces"),
        t,
        Some(json!({"name": "Team"})),
    )
    .await;
    c.check("post", "/workspaces", &made);
    c.check(
        "get",
        "/workspaces",
        &request(&state, "GET", &api("/workspaces"), t, None).await,
    );
    c.check(
        "patch",
        "/workspace",
        &request(
            &state,
            "PATCH",
            &api("/workspace"),
            t,
            Some(json!({"name": "Default workspace"})),
        )
        .await,
    );
    let invited = request(
        &state,
        "POST",
        &api("/invitations"),
        t,
        Some(json!({"role": "viewer"})),
    )
    .await;
    c.check("post", "/invitations", &invited);
    let link = json_of(&invited)["token"]
        .as_str()
        .expect("link")
        .to_string();
    c.check(
        "get",
        "/invite/{token}",
        &request(&state, "GET", &api(&format!("/invite/{link}")), "", None).await,
    );
    let joined = request(
        &state,
        "POST",
        &api(&format!("/invite/{link}/accept")),
        "",
        Some(json!({"display_name": "Vi"})),
    )
    .await;
    c.check("post", "/invite/{token}/accept", &joined);
    let member = json_of(&joined)["user_id"]
        .as_str()
        .expect("user")
        .to_string();
    c.check(
        "get",
        "/members",
        &request(&state, "GET", &api("/members"), t, None).await,
    );
    c.check(
        "patch",
        "/members/{user_id}",
        &request(
            &state,
            "PATCH",
            &api(&format!("/members/{member}")),
            t,
            Some(json!({"role": "editor"})),
        )
        .await,
    );
    c.check(
        "delete",
        "/members/{user_id}",
        &request(
            &state,
            "DELETE",
            &api(&format!("/members/{member}")),
            t,
            None,
        )
        .await,
    );
    let invited = request(
        &state,
        "POST",
        &api("/invitations"),
        t,
        Some(json!({"role": "editor"})),
    )
    .await;
    let invitation = json_of(&invited)["invitation"]["id"]
        .as_str()
        .expect("invitation")
        .to_string();
    c.check(
        "get",
        "/invitations",
        &request(&state, "GET", &api("/invitations"), t, None).await,
    );
    c.check(
        "delete",
        "/invitations/{id}",
        &request(
            &state,
            "DELETE",
            &api(&format!("/invitations/{invitation}")),
            t,
            None,
        )
        .await,
    );
    c.check(
        "delete",
        "/workflows/{id}",
        &request(&state, "DELETE", &api(&format!("/workflows/{wf}")), t, None).await,
    );

    // Sessions: listed, and another one ended.
    let listed = request(&state, "GET", &api("/auth/sessions"), t, None).await;
    c.check("get", "/auth/sessions", &listed);
    let other = json_of(&listed)["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .find(|s| s["current"] == false)
        .and_then(|s| s["id"].as_str())
        .expect("the second session is listed")
        .to_string();
    c.check(
        "delete",
        "/auth/sessions/{id}",
        &request(
            &state,
            "DELETE",
            &api(&format!("/auth/sessions/{other}")),
            t,
            None,
        )
        .await,
    );
    let ended = request(&state, "GET", &api("/workflows"), &second_session, None).await;
    assert_eq!(ended.0, 401, "an ended session no longer works");

    // Last: signing out ends the session this test used.
    c.check(
        "post",
        "/auth/logout",
        &request(&state, "POST", &api("/auth/logout"), t, None).await,
    );
    let after = request(&state, "GET", &api("/workflows"), t, None).await;
    assert_eq!(after.0, 401, "a signed-out session no longer works");

    let unchecked: Vec<&Operation> = documented
        .iter()
        .map(|(op, _)| op)
        .filter(|op| !checks.exercised.contains(*op))
        .collect();
    assert!(
        unchecked.is_empty(),
        "documented routes with no checked answer in this test: {unchecked:?}"
    );
}

#[tokio::test]
async fn documented_schemas_refuse_a_wrong_body() {
    let env = common::TwoWorkspaces::new(1024).await;
    let doc = json_of(
        &request(
            &env.state,
            "GET",
            "/api/v1/openapi.json",
            &env.admin_token,
            None,
        )
        .await,
    );
    let run = validator(
        &doc,
        &doc["paths"]["/runs/{id}"]["get"]["responses"]["200"]["content"]["application/json"]
            ["schema"],
    );
    let good = json!({"id": "r", "kind": "run", "status": "running", "trigger": "api",
        "created_at": "t", "nodes": null, "agent_outputs": {}});
    assert!(run.is_valid(&good));
    for bad in [
        json!({"id": "r", "kind": "run", "status": "done", "trigger": "api", "created_at": "t"}),
        json!({"id": 1, "kind": "run", "status": "running", "trigger": "api", "created_at": "t"}),
        json!({"kind": "run", "status": "running", "trigger": "api", "created_at": "t"}),
        json!({"id": "r", "kind": "run", "status": "running", "trigger": "api", "created_at": "t",
            "nodes": {"a": {"status": "done"}}}),
    ] {
        assert!(!run.is_valid(&bad), "{bad}");
    }
}
