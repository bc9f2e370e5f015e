//! The example gallery through the real server, as `cargo xtask run` starts
//! it (with `examples/`): a fresh server lists at least eight example
//! workflows, each described, and `GET /examples` offers the same; every
//! offline example runs through the API to its end (the write waits for
//! its approval, and once approved the file is there; the API example
//! reaches the example API the server serves, with the key from the
//! workspace secret, which the API insists on); the real-provider example
//! fails naming the secret it lacks; "New from example" makes a new
//! workflow; and the example API's connection follows the server to a new
//! port, unless someone changed it.

use std::collections::BTreeMap;
use std::time::Duration;

use glassbox_tests::harness::{http, json, workspace_root, Server};
use serde_json::{json, Value};

/// A server on a free port with the shipped examples, on `data_dir`.
fn start(data_dir: tempfile::TempDir) -> Server {
    let examples = workspace_root().join("examples");
    let examples = examples.to_string_lossy().into_owned();
    Server::start_in(
        data_dir,
        None,
        &[("GLASSBOX_EXAMPLES_DIR", examples.as_str())],
    )
    .expect("server starts")
}

/// The port a server listens on.
fn port(server: &Server) -> u16 {
    server
        .url
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {}", server.url))
}

/// Example name -> its workflow's id in the default workspace.
fn workflows_by_name(server: &Server, token: &str) -> (BTreeMap<String, String>, Value) {
    let (s, body) = http(&server.url, "GET", "/api/v1/workflows", Some(token), None);
    assert_eq!(s, 200, "{body}");
    let listed = json(&body);
    let by_name = listed["workflows"]
        .as_array()
        .expect("workflows")
        .iter()
        .map(|w| {
            (
                w["name"].as_str().expect("name").to_string(),
                w["id"].as_str().expect("id").to_string(),
            )
        })
        .collect();
    (by_name, listed)
}

/// The example API's answer to a GET with `token` as bearer, if any.
fn example_api(server: &Server, path: &str, token: Option<&str>) -> (u16, String) {
    http(
        &server.url,
        "GET",
        &format!("/example-api{path}"),
        token,
        None,
    )
}

/// The pending approval of `run_id`.
fn pending_approval(server: &Server, token: &str, run_id: &str) -> Value {
    for _ in 0..400 {
        let (_, body) = http(&server.url, "GET", "/api/v1/approvals", Some(token), None);
        let found = json(&body)["pending"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["run_id"] == run_id)
            .cloned();
        if let Some(found) = found {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("run {run_id} never waited for an approval");
}

#[test]
fn a_fresh_server_offers_the_examples_and_each_offline_one_runs_to_its_end() {
    let server = start(tempfile::tempdir().expect("tmp"));
    let token = server.sign_in();
    let t = token.as_str();

    // At least eight, each with a one-line description; the gallery offers
    // the same names and descriptions.
    let (ids, listed) = workflows_by_name(&server, t);
    let workflows = listed["workflows"].as_array().expect("workflows");
    assert!(workflows.len() >= 8, "{listed}");
    for w in workflows {
        let d = w["description"].as_str().unwrap_or_default();
        assert!(!d.trim().is_empty() && !d.contains('\n'), "{w}");
    }
    let (s, body) = http(&server.url, "GET", "/api/v1/examples", Some(t), None);
    assert_eq!(s, 200, "{body}");
    let gallery = json(&body);
    let mut offered: Vec<(String, String)> = gallery["examples"]
        .as_array()
        .expect("examples")
        .iter()
        .map(|e| (e["name"].to_string(), e["description"].to_string()))
        .collect();
    let mut stored: Vec<(String, String)> = workflows
        .iter()
        .map(|w| (w["name"].to_string(), w["description"].to_string()))
        .collect();
    offered.sort();
    stored.sort();
    assert_eq!(offered, stored);
    let example_id = |name: &str| {
        gallery["examples"]
            .as_array()
            .and_then(|a| a.iter().find(|e| e["name"] == name))
            .and_then(|e| e["id"].as_str())
            .unwrap_or_else(|| panic!("the example {name} is offered"))
            .to_string()
    };
    let run = |name: &str| {
        let id = ids
            .get(name)
            .unwrap_or_else(|| panic!("{name} is loaded: {listed}"));
        server.finished_run(t, &server.start_run(t, id))
    };

    // Pinned handles.
    let hello = run("Hello agent: pinned handles");
    assert_eq!(hello["status"], "succeeded", "{hello}");
    assert_eq!(hello["outputs"]["product"], 42.0, "{hello}");

    // The materialized call: its Tool node computes what the pin did.
    let materialized = run("Materialize a tool call");
    assert_eq!(materialized["status"], "succeeded", "{materialized}");
    assert_eq!(materialized["outputs"]["product"], 42.0, "{materialized}");
    let tool = &materialized["nodes"]["agent_calculator_88af6694"];
    assert_eq!(tool["status"], "done", "{materialized}");
    assert_eq!(tool["outputs"]["output"], 42.0, "{materialized}");

    // Branch on an error code: the missing file's code takes the true side.
    let branch = run("Branch on an error code");
    assert_eq!(branch["status"], "succeeded", "{branch}");
    let missing = branch["outputs"]["missing"].as_str().unwrap_or_default();
    assert!(
        missing.starts_with("Nothing to read yet (VALIDATION_ERROR)")
            && missing.contains("inbox/today.txt"),
        "{branch}"
    );
    assert_eq!(branch["outputs"]["found"], Value::Null, "{branch}");

    // The database.
    let shop = run("Query a database through a connection");
    assert_eq!(shop["status"], "succeeded", "{shop}");
    assert_eq!(
        shop["outputs"]["best_seller"],
        json!({"name": "Glass jar", "sold": 8})
    );

    // The authenticated API: the example API the server serves, reached
    // through the connection with the key the first start generated.
    let api = run("Call an authenticated API through a connection");
    assert_eq!(api["status"], "succeeded", "{api}");
    let outputs = &api["agent_outputs"]["agent"];
    let call = outputs["last_tool"].clone();
    assert_eq!(call["name"], "http_request", "{api}");
    assert_eq!(call["input"]["connection"], "example_api", "{api}");
    assert_eq!(call["output"]["status"], 200, "{api}");
    assert_eq!(call["output"]["body"]["count"], 3, "{api}");
    let tickets = api["outputs"]["tickets"].as_str().unwrap_or_default();
    assert!(
        tickets.contains("#104 Glass jar arrived cracked (high, Katherine Johnson)"),
        "{api}"
    );
    // Like a real API, it wants the key: none or another is 401.
    let (s, body) = example_api(&server, "/tickets", None);
    assert_eq!(s, 401, "{body}");
    assert_eq!(json(&body)["error"]["code"], "UNAUTHORIZED");
    let (s, _) = example_api(&server, "/tickets", Some("not-the-key"));
    assert_eq!(s, 401);
    // The key is the workspace secret: a new value is the one it takes
    // (the secret is read on each request), and the run uses it too
    // without any of it reaching what the run recorded.
    let key = "example-key-4f2a9c1e";
    server.set_secret(t, "workspace", "EXAMPLE_API_TOKEN", key);
    let (s, body) = example_api(&server, "/tickets/101", Some(key));
    assert_eq!(s, 200, "{body}");
    assert_eq!(json(&body)["customer"], "Ada Lovelace");
    let again = run("Call an authenticated API through a connection");
    assert_eq!(again["status"], "succeeded", "{again}");
    assert_eq!(
        again["agent_outputs"]["agent"]["last_tool"]["output"]["status"],
        200
    );
    assert!(!again.to_string().contains(key), "the key is not recorded");

    // The approval-gated write: it waits, nothing is written until a person
    // approves, then the run ends and the file is there.
    let file = server
        .data_dir
        .path()
        .join("files")
        .join("default")
        .join("welcome.txt");
    let id = ids
        .get("Write a file after your approval")
        .expect("the write example");
    let run_id = server.start_run(t, id);
    let approval = pending_approval(&server, t, &run_id);
    assert_eq!(approval["tool"], "write_file@1.0.0", "{approval}");
    let (_, body) = http(
        &server.url,
        "GET",
        &format!("/api/v1/runs/{run_id}"),
        Some(t),
        None,
    );
    assert_ne!(json(&body)["status"], "succeeded", "{body}");
    assert!(!file.exists(), "nothing is written before the approval");
    server.approve(t, approval["token"].as_str().expect("token"));
    let written = server.finished_run(t, &run_id);
    assert_eq!(written["status"], "succeeded", "{written}");
    assert_eq!(
        written["outputs"]["written"]["path"], "welcome.txt",
        "{written}"
    );
    let text = std::fs::read_to_string(&file).expect("the file is written");
    assert!(text.starts_with("Welcome to Glassbox."), "{text}");

    // The real-provider example needs only its key; without it the run
    // fails before any model call, naming the secret.
    let real = run("A real model: OpenAI and a template");
    assert_eq!(real["status"], "failed", "{real}");
    let error = real["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("AUTH_REQUIRED") && error.contains("`OPENAI_API_KEY`"),
        "{real}"
    );

    // New from example: a new workflow of the workspace, same name.
    let (s, body) = http(
        &server.url,
        "POST",
        &format!(
            "/api/v1/examples/{}/workflows",
            example_id("Branch on an error code")
        ),
        Some(t),
        None,
    );
    assert_eq!(s, 201, "{body}");
    let made = json(&body);
    assert_eq!(made["name"], "Branch on an error code");
    assert_ne!(
        made["id"].as_str(),
        ids.get("Branch on an error code").map(String::as_str)
    );
    let (_, listed_after) = workflows_by_name(&server, t);
    let listed_after = listed_after["workflows"].as_array().expect("workflows");
    assert_eq!(listed_after.len(), workflows.len() + 1);
    assert!(listed_after.iter().any(|w| w["id"] == made["id"]));
    let made_run = server.finished_run(t, &server.start_run(t, made["id"].as_str().expect("id")));
    assert_eq!(made_run["status"], "succeeded", "{made_run}");
    let (s, body) = http(
        &server.url,
        "POST",
        "/api/v1/examples/no_such_example/workflows",
        Some(t),
        None,
    );
    assert_eq!(s, 404, "{body}");
    assert_eq!(json(&body)["error"]["code"], "NOT_FOUND");
}

/// The example connection's base URL.
fn example_base_url(server: &Server, token: &str) -> String {
    let (s, body) = http(&server.url, "GET", "/api/v1/connections", Some(token), None);
    assert_eq!(s, 200, "{body}");
    json(&body)["connections"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == "example_api"))
        .and_then(|c| c["config"]["base_url"].as_str())
        .unwrap_or_else(|| panic!("the connection example_api: {body}"))
        .to_string()
}

#[test]
fn the_example_api_connection_follows_the_server_to_another_port() {
    let server = start(tempfile::tempdir().expect("tmp"));
    let token = server.sign_in();
    let first = port(&server);
    assert_eq!(
        example_base_url(&server, &token),
        format!("http://127.0.0.1:{first}/example-api")
    );
    let (s, body) = http(
        &server.url,
        "POST",
        "/api/v1/connections/example_api/test",
        Some(&token),
        None,
    );
    assert_eq!(s, 200, "{body}");
    assert_eq!(json(&body)["ok"], true, "{body}");

    // Another port on the next start (a free one, as `--port 0` picks):
    // the connection goes along, and the example still runs.
    let server = start(server.kill9());
    let token = server.sign_in();
    let second = port(&server);
    assert_eq!(
        example_base_url(&server, &token),
        format!("http://127.0.0.1:{second}/example-api")
    );
    let (ids, _) = workflows_by_name(&server, &token);
    let id = &ids["Call an authenticated API through a connection"];
    let run = server.finished_run(&token, &server.start_run(&token, id));
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(
        run["agent_outputs"]["agent"]["last_tool"]["output"]["status"],
        200
    );

    // A connection someone changed is theirs: left as it is.
    let mine = json!({"kind": "http", "base_url": "http://127.0.0.1:9/elsewhere",
        "auth": {"scheme": "bearer", "secret": "EXAMPLE_API_TOKEN"}});
    let (s, body) = http(
        &server.url,
        "PUT",
        "/api/v1/connections/example_api",
        Some(&token),
        Some(&json!({"config": mine})),
    );
    assert_eq!(s, 200, "{body}");
    let server = start(server.kill9());
    let token = server.sign_in();
    assert_eq!(
        example_base_url(&server, &token),
        "http://127.0.0.1:9/elsewhere"
    );
}
