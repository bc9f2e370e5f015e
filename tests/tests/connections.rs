//! Connections through the real server and its API: an `http` connection
//! whose bearer secret reaches a loopback mock (allowed by the connection,
//! with no global allow-list) and nowhere else (no answer, event, bundle,
//! log line or file; not carried by a redirect to another origin), a
//! `sqlite` connection to a file of the workspace (a runaway query is
//! interrupted and the next one works), and a `postgres` connection that
//! reads rows and refuses writes, second statements and file reads.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use glassbox_tests::harness::{http, json, Server};
use glassbox_tests::leaks::{files, find_leaks};
use serde_json::{json, Value};

const TOKEN: &str = "api-cnry-2b7e \"t/\\ k";

/// A loopback API recording each request's head: `/redirect` answers 302
/// to `elsewhere`, anything else 200 with a JSON body.
fn api(elsewhere: Option<String>) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            s.lock().expect("lock").push(head.clone());
            let mut stream = stream;
            let answer = match (&elsewhere, head.starts_with("GET /redirect")) {
                (Some(to), true) => format!(
                    "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                ),
                _ => {
                    let body = r#"{"items":[1,2,3]}"#;
                    format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
                }
            };
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (port, seen)
}

/// An Agent whose scripted model makes `calls` (tool, arguments) in one
/// turn, then answers.
fn agent_workflow(tools: &[&str], calls: Value) -> Value {
    let tools: Vec<Value> = tools.iter().map(|t| json!({"tool": t})).collect();
    json!({
        "format_version": 1, "id": "conn", "name": "connections", "revision": 0,
        "nodes": [
            {"id": "agent", "kind": "agent", "config": {"prompt": "go", "tools": tools,
                "provider": {"kind": "scripted", "script": {"turns": [
                    {"tool_calls": calls}, {"text": "done"}]}}}},
            {"id": "out", "kind": "output", "config": {"fields": ["answer"]}}
        ],
        "edges": [{"id": "e", "source": {"node": "agent", "handle": "response"},
                   "target": {"node": "out", "handle": "answer"}}]
    })
}

/// The run's envelopes in tool order.
fn envelopes(run: &Value) -> Vec<Value> {
    let outputs = &run["agent_outputs"]["agent"];
    outputs["tool_order"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|id| outputs["tools_by_id"][id.as_str().unwrap_or_default()].clone())
        .collect()
}

#[test]
fn an_http_connection_adds_its_credential_where_only_the_api_sees_it() {
    let (other, other_seen) = api(None);
    let (port, seen) = api(Some(format!("http://127.0.0.1:{other}/landed")));
    let data = tempfile::tempdir().expect("tmp");
    let log_path = data.path().with_extension("log");
    let log = std::fs::File::create(&log_path).expect("log");
    // No GLASSBOX_HTTP_ALLOW_HOSTS: the connection is what allows the host.
    let server = Server::start_with_stderr(data, None, &[("RUST_LOG", "debug")], Stdio::from(log))
        .expect("server starts");
    let token = server.sign_in();
    server.set_secret(&token, "workspace", "API_TOKEN", TOKEN);
    server.add_connection(
        &token,
        "api",
        json!({"kind": "http", "base_url": format!("http://127.0.0.1:{port}/v1"),
               "allowed_hosts": [format!("127.0.0.1:{other}")],
               "auth": {"scheme": "bearer", "secret": "API_TOKEN"},
               "default_headers": {"X-Client": "glassbox"}}),
    );
    let (s, body) = http(
        &server.url,
        "POST",
        "/api/v1/connections/api/test",
        Some(&token),
        None,
    );
    assert_eq!(s, 200, "{body}");
    assert_eq!(json(&body)["ok"], true, "{body}");
    let calls = json!([
        {"name": "http_request", "arguments": {"connection": "api", "url": "/items"}},
        {"name": "http_request", "arguments": {"connection": "api", "url": format!("http://127.0.0.1:{port}/redirect")}},
        {"name": "http_request", "arguments": {"url": format!("http://127.0.0.1:{port}/no-connection")}},
        {"name": "http_request", "arguments": {"connection": "nope", "url": "/x"}}
    ]);
    let id = server.create_workflow(&token, &agent_workflow(&["http_request@1.0.0"], calls));
    let run_id = server.start_run(&token, &id);
    let run = server.finished_run(&token, &run_id);
    assert_eq!(run["status"], "succeeded", "{run}");
    let calls = envelopes(&run);
    assert_eq!(calls.len(), 4, "{run}");
    assert_eq!(calls[0]["output"]["status"], 200, "{}", calls[0]);
    assert_eq!(calls[0]["output"]["body"], json!({"items": [1, 2, 3]}));
    assert_eq!(
        calls[0]["input"],
        json!({"connection": "api", "url": "/items"})
    );
    assert_eq!(
        calls[1]["output"]["final_url"],
        format!("http://127.0.0.1:{other}/landed")
    );
    // Without the connection, loopback stays refused.
    assert_eq!(calls[2]["error"]["code"], "POLICY_DENIED", "{}", calls[2]);
    assert_eq!(
        calls[3]["error"]["code"], "VALIDATION_ERROR",
        "{}",
        calls[3]
    );
    assert!(
        calls[3]["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("api"),
        "{}",
        calls[3]
    );

    let heads = seen.lock().expect("lock").clone();
    let items = heads
        .iter()
        .find(|h| h.starts_with("GET /v1/items"))
        .expect("the API was called");
    assert!(
        items.contains(&format!("authorization: Bearer {TOKEN}"))
            || items.contains(&format!("Authorization: Bearer {TOKEN}")),
        "{items}"
    );
    assert!(
        items.to_ascii_lowercase().contains("x-client: glassbox"),
        "{items}"
    );
    assert!(
        heads.iter().all(|h| !h.contains("/no-connection")),
        "{heads:?}"
    );
    let landed = other_seen.lock().expect("lock").clone();
    assert_eq!(landed.len(), 1, "{landed:?}");
    assert!(
        !landed[0].to_ascii_lowercase().contains("authorization"),
        "{}",
        landed[0]
    );

    let mut found = Vec::new();
    let secrets = [("api token", TOKEN)];
    for path in [
        format!("/api/v1/runs/{run_id}"),
        format!("/api/v1/runs/{run_id}/events"),
        format!("/api/v1/runs/{run_id}/bundle"),
        format!("/api/v1/runs/{run_id}/trace"),
        "/api/v1/connections".to_string(),
    ] {
        let (_, body) = http(&server.url, "GET", &path, Some(&token), None);
        found.extend(find_leaks(&path, body.as_bytes(), &secrets));
    }
    for (path, body) in server.invocation_records(&token, &run_id) {
        found.extend(find_leaks(&path, body.as_bytes(), &secrets));
    }
    let data = server.kill9();
    let mut all = Vec::new();
    files(data.path(), &mut all);
    for path in &all {
        let bytes = std::fs::read(path).expect("read");
        found.extend(find_leaks(&path.display().to_string(), &bytes, &secrets));
    }
    let log = std::fs::read(&log_path).expect("log");
    found.extend(find_leaks("the server log", &log, &secrets));
    assert!(found.is_empty(), "the token leaked:\n{}", found.join("\n"));
}

#[test]
fn a_sqlite_connection_answers_and_a_runaway_query_is_interrupted() {
    let data = tempfile::tempdir().expect("tmp");
    let files_dir = data.path().join("files").join("default");
    std::fs::create_dir_all(&files_dir).expect("files dir");
    let db_path = files_dir.join("shop.db");
    tokio::runtime::Runtime::new().expect("rt").block_on(async {
        use sqlx::Connection;
        let mut conn =
            sqlx::SqliteConnection::connect(&format!("sqlite://{}?mode=rwc", db_path.display()))
                .await
                .expect("create db");
        sqlx::query("CREATE TABLE items (id INTEGER, name TEXT)")
            .execute(&mut conn)
            .await
            .expect("table");
        sqlx::query("INSERT INTO items VALUES (1, 'pen'), (2, 'ink')")
            .execute(&mut conn)
            .await
            .expect("rows");
        conn.close().await.expect("close");
    });
    let server = Server::start_in(data, None, &[]).expect("server starts");
    let token = server.sign_in();
    server.add_connection(&token, "shop", json!({"kind": "sqlite", "path": "shop.db"}));
    let (_, body) = http(
        &server.url,
        "POST",
        "/api/v1/connections/shop/test",
        Some(&token),
        None,
    );
    assert_eq!(json(&body)["ok"], true, "{body}");
    let runaway = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c";
    let calls = json!([
        {"name": "sql_query", "arguments": {"connection": "shop", "query": "SELECT name FROM items ORDER BY id"}}
    ]);
    let id = server.create_workflow(&token, &agent_workflow(&["sql_query@1.0.0"], calls));
    let run = server.finished_run(&token, &server.start_run(&token, &id));
    let first = &envelopes(&run)[0];
    assert_eq!(
        first["output"]["rows"],
        json!([{"name": "pen"}, {"name": "ink"}]),
        "{first}"
    );
    // A runaway, then a normal query on the same connection.
    let calls =
        json!([{"name": "sql_query", "arguments": {"connection": "shop", "query": runaway}}]);
    let id = server.create_workflow(&token, &agent_workflow(&["sql_query@1.0.0"], calls));
    let started = std::time::Instant::now();
    let run = server.finished_run(&token, &server.start_run(&token, &id));
    let took = started.elapsed();
    let call = &envelopes(&run)[0];
    assert_eq!(call["error"]["code"], "TIMEOUT", "{call}");
    assert!(
        took.as_secs_f64() < 8.0,
        "interrupted near its 5 s timeout, took {took:?}"
    );
    let calls = json!([{"name": "sql_query", "arguments": {"connection": "shop", "query": "SELECT count(*) AS n FROM items"}}]);
    let id = server.create_workflow(&token, &agent_workflow(&["sql_query@1.0.0"], calls));
    let run = server.finished_run(&token, &server.start_run(&token, &id));
    assert_eq!(
        envelopes(&run)[0]["output"]["rows"],
        json!([{"n": 2}]),
        "{run}"
    );
}

#[test]
fn a_postgres_connection_reads_rows_and_refuses_writes_and_file_reads() {
    // The shop's own database, which the connection reads.
    let Some(shop) = glassbox_tests::db::TestDb::postgres("conn") else {
        return;
    };
    let nowhere = std::path::Path::new("");
    shop.execute(nowhere, "CREATE TABLE items (id int, name text)", &[]);
    shop.execute(
        nowhere,
        "INSERT INTO items VALUES (1, 'pen'), (2, 'ink')",
        &[],
    );
    let url = shop.url(nowhere);
    let server = Server::start(None).expect("server starts");
    let token = server.sign_in();
    server.set_secret(&token, "workspace", "SHOP_PG_URL", &url);
    server.add_connection(
        &token,
        "pg",
        json!({"kind": "postgres", "url_secret": "SHOP_PG_URL"}),
    );
    let calls = json!([
        {"name": "sql_query", "arguments": {"connection": "pg", "query": "SELECT id, name FROM items ORDER BY id"}},
        {"name": "sql_query", "arguments": {"connection": "pg", "query": "INSERT INTO items VALUES (3, 'cap')"}},
        {"name": "sql_query", "arguments": {"connection": "pg", "query": "SELECT 1; DELETE FROM items"}},
        {"name": "sql_query", "arguments": {"connection": "pg", "query": "select pg_read_file('/etc/passwd')"}}
    ]);
    let id = server.create_workflow(&token, &agent_workflow(&["sql_query@1.0.0"], calls));
    let run = server.finished_run(&token, &server.start_run(&token, &id));
    let calls = envelopes(&run);
    assert_eq!(
        calls[0]["output"]["rows"],
        json!([{"id": 1, "name": "pen"}, {"id": 2, "name": "ink"}]),
        "{run}"
    );
    for c in &calls[1..] {
        assert_eq!(c["error"]["code"], "POLICY_DENIED", "{c}");
    }
    let (_, body) = http(
        &server.url,
        "GET",
        &format!("/api/v1/runs/{}", run["id"].as_str().unwrap_or_default()),
        Some(&token),
        None,
    );
    assert!(!body.contains(&url), "the URL secret is not in the run");
    let count = shop.fetch_text(nowhere, "SELECT count(*)::text FROM items", &[]);
    assert_eq!(count, ["2"], "nothing was written");
}

#[test]
fn members_see_names_and_kinds_and_bad_configs_name_their_field() {
    let server = Server::start(None).expect("server starts");
    let token = server.sign_in();
    let (s, body) = http(
        &server.url,
        "POST",
        "/api/v1/connections",
        Some(&token),
        Some(&json!({"name": "bad", "config": {"kind": "sqlite", "path": "../../etc/passwd"}})),
    );
    assert_eq!(s, 422, "{body}");
    assert_eq!(
        json(&body)["error"]["details"]["path"],
        "/config/path",
        "{body}"
    );
    let (s, body) = http(
        &server.url,
        "POST",
        "/api/v1/connections",
        Some(&token),
        Some(&json!({"name": "x", "config": {"kind": "ftp"}})),
    );
    assert_eq!(s, 422, "{body}");
    server.add_connection(&token, "files", json!({"kind": "sqlite", "path": "a.db"}));
    let (s, _) = http(
        &server.url,
        "POST",
        "/api/v1/connections",
        Some(&token),
        Some(&json!({"name": "files", "config": {"kind": "sqlite", "path": "b.db"}})),
    );
    assert_eq!(s, 409, "a taken name");
    let (_, body) = http(
        &server.url,
        "POST",
        "/api/v1/connections/files/test",
        Some(&token),
        None,
    );
    let result = json(&body);
    assert_eq!(result["ok"], false, "{body}");
    assert!(
        result["message"]
            .as_str()
            .unwrap_or_default()
            .contains("a.db"),
        "{body}"
    );
    let (s, body) = http(
        &server.url,
        "PUT",
        "/api/v1/connections/files",
        Some(&token),
        Some(&json!({"config": {"kind": "sqlite", "path": "b.db"}})),
    );
    assert_eq!(s, 200, "{body}");
    assert_eq!(json(&body)["config"]["path"], "b.db");
    let (_, body) = http(
        &server.url,
        "GET",
        "/api/v1/connections",
        Some(&token),
        None,
    );
    assert_eq!(json(&body)["connections"][0]["kind"], "sqlite", "{body}");
    let (s, _) = http(
        &server.url,
        "DELETE",
        "/api/v1/connections/files",
        Some(&token),
        None,
    );
    assert_eq!(s, 204);
    let (s, _) = http(
        &server.url,
        "DELETE",
        "/api/v1/connections/files",
        Some(&token),
        None,
    );
    assert_eq!(s, 404);
}

#[test]
fn the_cli_adds_tests_lists_and_removes_a_connection() {
    let data = tempfile::tempdir().expect("tmp");
    let files_dir = data.path().join("files").join("default");
    std::fs::create_dir_all(&files_dir).expect("files dir");
    let db_path = files_dir.join("notes.db");
    tokio::runtime::Runtime::new().expect("rt").block_on(async {
        use sqlx::Connection;
        let mut conn =
            sqlx::SqliteConnection::connect(&format!("sqlite://{}?mode=rwc", db_path.display()))
                .await
                .expect("create db");
        sqlx::query("CREATE TABLE notes (t TEXT)")
            .execute(&mut conn)
            .await
            .expect("table");
        conn.close().await.expect("close");
    });
    let glassbox = |args: &[&str]| {
        let out =
            std::process::Command::new(glassbox_tests::harness::glassbox_bin().expect("binary"))
                .args(args)
                .arg("--data-dir")
                .arg(data.path())
                .env_remove("GLASSBOX_DATABASE_URL")
                .output()
                .expect("glassbox runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (ok, out) = glassbox(&[
        "connection",
        "add",
        "notes",
        r#"{"kind":"sqlite","path":"notes.db"}"#,
    ]);
    assert!(ok, "{out}");
    let (ok, out) = glassbox(&[
        "connection",
        "add",
        "bad",
        r#"{"kind":"sqlite","path":"../x.db"}"#,
    ]);
    assert!(!ok && out.contains("path"), "{out}");
    let (ok, out) = glassbox(&["connection", "test", "notes"]);
    assert!(ok && out.starts_with("ok: answered SELECT 1"), "{out}");
    let (ok, out) = glassbox(&["connection", "list"]);
    assert!(
        ok && out.contains("notes") && out.contains("sqlite") && !out.contains("bad"),
        "{out}"
    );
    let (ok, out) = glassbox(&["connection", "remove", "notes"]);
    assert!(ok, "{out}");
    let (ok, out) = glassbox(&["connection", "test", "notes"]);
    assert!(!ok && out.contains("no connection named notes"), "{out}");
}

#[test]
fn the_example_database_workflow_runs_offline_on_first_start() {
    let examples = glassbox_tests::harness::workspace_root().join("examples");
    let examples = examples.to_string_lossy().into_owned();
    let server = Server::start_in(
        tempfile::tempdir().expect("tmp"),
        None,
        &[("GLASSBOX_EXAMPLES_DIR", examples.as_str())],
    )
    .expect("server starts");
    let token = server.sign_in();
    let (_, body) = http(&server.url, "GET", "/api/v1/workflows", Some(&token), None);
    let listed = json(&body);
    let id = listed["workflows"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|w| {
            w["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("Query a database"))
        })
        .and_then(|w| w["id"].as_str())
        .unwrap_or_else(|| panic!("the example is listed: {body}"))
        .to_string();
    let run = server.finished_run(&token, &server.start_run(&token, &id));
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(
        run["outputs"]["best_seller"],
        json!({"name": "Glass jar", "sold": 8}),
        "{run}"
    );
    let calls = envelopes(&run);
    assert_eq!(
        calls[0]["output"]["rows"],
        json!([{"name": "Notebook"}]),
        "{run}"
    );
    let (_, body) = http(
        &server.url,
        "GET",
        "/api/v1/connections",
        Some(&token),
        None,
    );
    // The examples' connections: the shop, the example API, the MCP server.
    let listed = json(&body);
    let names: Vec<&str> = listed["connections"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["everything", "example_api", "shop"], "{body}");
}
