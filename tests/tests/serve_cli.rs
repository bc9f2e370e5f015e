//! The real `glassbox` binary over a real loopback socket: start-up, the
//! page shown without a built app, and a clear error when the port is taken.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;

use glassbox_tests::harness::{glassbox_bin, http, json, Server};

fn http_get(base: &str, path: &str) -> (u16, String) {
    http(base, "GET", path, None, None)
}

#[test]
fn serves_api_and_not_built_page_without_app() {
    let server = Server::start(None).expect("server starts");
    let (status, body) = http_get(&server.url, "/api/v1/health");
    assert_eq!(status, 200, "{body}");
    let health: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(health["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(health["database"], "sqlite");

    let (status, body) = http_get(&server.url, "/");
    assert_eq!(status, 200);
    assert!(body.contains("app has not been built"), "{body}");

    // The embedded database was created under the data dir on first start.
    assert!(server.data_dir.path().join("glassbox.db").is_file());
}

#[test]
fn taken_port_fails_with_message_naming_port_and_flag() {
    let blocker = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = blocker.local_addr().expect("addr").port();
    let data = tempfile::tempdir().expect("temp dir");
    let output = Command::new(glassbox_bin().expect("binary"))
        .args(["serve", "--port", &port.to_string(), "--data-dir"])
        .arg(data.path())
        .env_remove("GLASSBOX_DATABASE_URL")
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run glassbox");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("port {port}")), "{stderr}");
    assert!(stderr.contains("--port"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.to_lowercase().contains("backtrace"), "{stderr}");
}

#[test]
fn bad_database_url_names_the_setting() {
    let data = tempfile::tempdir().expect("temp dir");
    let output = Command::new(glassbox_bin().expect("binary"))
        .args(["serve", "--port", "0", "--database-url", "mysql://x"])
        .arg("--data-dir")
        .arg(data.path())
        .output()
        .expect("run glassbox");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("GLASSBOX_DATABASE_URL"), "{stderr}");
}

#[test]
fn run_prints_agent_outputs_and_replay_matches() {
    let data = tempfile::tempdir().expect("temp dir");
    let example = glassbox_tests::harness::workspace_root()
        .join("examples")
        .join("hello_agent.json");
    let out = Command::new(glassbox_bin().expect("binary"))
        .arg("run")
        .arg(&example)
        .arg("--data-dir")
        .arg(data.path())
        .env_remove("GLASSBOX_DATABASE_URL")
        .output()
        .expect("run glassbox");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: serde_json::Value = serde_json::from_str(&stdout).expect("JSON on stdout");
    let agent = &printed["agent_outputs"]["agent"];
    for key in [
        "response",
        "tools_by_id",
        "tool_order",
        "last_tool",
        "traces_url",
    ] {
        assert!(
            agent.as_object().is_some_and(|o| o.contains_key(key)),
            "{key} missing: {agent}"
        );
    }
    assert_eq!(printed["outputs"]["product"], 42.0);
    let run_id = printed["run_id"].as_str().expect("run id");
    assert_eq!(
        agent["traces_url"],
        format!("/runs/{run_id}/trace"),
        "by default, the app's trace page"
    );

    // The outputs printed (as the run handed them over) are what it
    // stored: `--json` prints its stored record beside them.
    let out = Command::new(glassbox_bin().expect("binary"))
        .arg("run")
        .arg(&example)
        .arg("--json")
        .arg("--data-dir")
        .arg(data.path())
        .env_remove("GLASSBOX_DATABASE_URL")
        .output()
        .expect("run glassbox --json");
    let whole: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let stored = &whole["record"]["nodes"]["agent"]["outputs"];
    let printed_agent = whole["agent_outputs"]["agent"]
        .as_object()
        .expect("the agent's outputs");
    assert_eq!(printed_agent.len(), 5, "{printed_agent:?}");
    for (key, value) in printed_agent {
        assert_eq!(value, &stored[key], "{key} as stored");
    }
    assert!(!printed_agent["tools_by_id"]
        .as_object()
        .expect("calls")
        .is_empty());

    // A configured template (an external trace UI) replaces it.
    let out = Command::new(glassbox_bin().expect("binary"))
        .arg("run")
        .arg(&example)
        .arg("--data-dir")
        .arg(data.path())
        .env_remove("GLASSBOX_DATABASE_URL")
        .env(
            "GLASSBOX_TRACES_URL",
            "https://traces.example/run/{run_id}?tab=spans",
        )
        .output()
        .expect("run glassbox");
    let other: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(
        other["agent_outputs"]["agent"]["traces_url"],
        format!(
            "https://traces.example/run/{}?tab=spans",
            other["run_id"].as_str().expect("run id")
        )
    );
    let out = Command::new(glassbox_bin().expect("binary"))
        .arg("run")
        .arg(&example)
        .arg("--data-dir")
        .arg(data.path())
        .env(
            "GLASSBOX_TRACES_URL",
            "https://traces.example/no-placeholder",
        )
        .output()
        .expect("run glassbox");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("GLASSBOX_TRACES_URL"));

    let out = Command::new(glassbox_bin().expect("binary"))
        .args(["replay", run_id, "--data-dir"])
        .arg(data.path())
        .env_remove("GLASSBOX_DATABASE_URL")
        .output()
        .expect("replay");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdict: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(verdict["match"], true);

    // A reader that goes away (`glassbox replay ID | head -c 1`) ends the
    // command as SIGPIPE ends a Unix tool: status 141, no panic.
    let mut child = Command::new(glassbox_bin().expect("binary"))
        .args(["replay", run_id, "--data-dir"])
        .arg(data.path())
        .env_remove("GLASSBOX_DATABASE_URL")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("replay");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("replay ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let out = Command::new(glassbox_bin().expect("binary"))
        .args(["replay", "no-such-run", "--data-dir"])
        .arg(data.path())
        .output()
        .expect("replay");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-run"));
}

/// Reads a finished run's SSE stream over a real socket: the event ids.
fn sse_ids(base: &str, path: &str, token: &str, last_event_id: Option<i64>) -> Vec<i64> {
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).expect("connect");
    let resume = last_event_id
        .map(|id| format!("Last-Event-ID: {id}\r\n"))
        .unwrap_or_default();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: text/event-stream\r\nAuthorization: Bearer {token}\r\n{resume}\r\n").expect("send");
    let mut text = String::new();
    stream
        .read_to_string(&mut text)
        .expect("read until the stream ends");
    assert!(
        text.starts_with("HTTP/1.0 200") || text.starts_with("HTTP/1.1 200"),
        "{text}"
    );
    assert!(
        text.to_lowercase()
            .contains("content-type: text/event-stream"),
        "{text}"
    );
    text.lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|v| v.trim().parse().expect("numeric id"))
        .collect()
}

#[test]
fn a_cli_decision_reaches_a_run_waiting_in_the_server() {
    let server = Server::start(None).expect("server starts");
    let signin = server
        .signin_url
        .split("token=")
        .nth(1)
        .expect("token in link")
        .to_string();
    let (s, body) = http(
        &server.url,
        "POST",
        "/api/v1/auth/exchange",
        None,
        Some(&serde_json::json!({"token": signin})),
    );
    assert_eq!(s, 200, "{body}");
    let session = json(&body)["session_token"]
        .as_str()
        .expect("session")
        .to_string();
    let t = Some(session.as_str());
    let workflow = serde_json::json!({
        "format_version": 1, "id": "w", "name": "writes", "revision": 0,
        "nodes": [{"id": "agent", "kind": "agent", "config": {"prompt": "go", "tools": [{"tool": "write_file@1.0.0"}],
            "provider": {"kind": "scripted", "script": {"turns": [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "cli.txt", "content": "approved by cli"}}]},
                {"text": "done"}]}}}}],
        "edges": []
    });
    let (s, body) = http(&server.url, "POST", "/api/v1/workflows", t, Some(&workflow));
    assert_eq!(s, 201, "{body}");
    let wf = json(&body)["id"].as_str().expect("id").to_string();
    let (s, body) = http(
        &server.url,
        "POST",
        "/api/v1/runs",
        t,
        Some(&serde_json::json!({"workflow_id": wf})),
    );
    assert_eq!(s, 202, "{body}");
    let run_id = json(&body)["run_id"].as_str().expect("run").to_string();
    let mut token = String::new();
    for _ in 0..200 {
        let (_, body) = http(&server.url, "GET", "/api/v1/approvals", t, None);
        if let Some(tok) = json(&body)["pending"][0]["token"].as_str() {
            token = tok.to_string();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(!token.is_empty(), "the run waits for approval");

    let out = Command::new(glassbox_bin().expect("binary"))
        .args(["tool", "approve", &token, "--data-dir"])
        .arg(server.data_dir.path())
        .env_remove("GLASSBOX_DATABASE_URL")
        .output()
        .expect("cli");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut status = String::new();
    for _ in 0..200 {
        let (_, body) = http(
            &server.url,
            "GET",
            &format!("/api/v1/runs/{run_id}"),
            t,
            None,
        );
        status = json(&body)["status"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if status == "succeeded" || status == "failed" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(status, "succeeded");
    // The run's events over a real socket: all, in order; then resumed.
    let events_path = format!("/api/v1/runs/{run_id}/events");
    let all = sse_ids(&server.url, &events_path, &session, None);
    assert!(all.len() > 5, "{all:?}");
    assert_eq!(all, (1..=all.len() as i64).collect::<Vec<_>>());
    assert_eq!(
        sse_ids(&server.url, &events_path, &session, Some(4)),
        all[4..].to_vec()
    );
    let written = server
        .data_dir
        .path()
        .join("files")
        .join("default")
        .join("cli.txt");
    assert_eq!(
        std::fs::read_to_string(written).expect("the write ran"),
        "approved by cli"
    );

    let out = Command::new(glassbox_bin().expect("binary"))
        .args(["tool", "list"])
        .output()
        .expect("cli");
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("calculator@1.0.0") && listing.contains("write_file@1.0.0"),
        "{listing}"
    );
    let out = Command::new(glassbox_bin().expect("binary"))
        .args(["tool", "invocations", "--tool", "write_file", "--data-dir"])
        .arg(server.data_dir.path())
        .env_remove("GLASSBOX_DATABASE_URL")
        .output()
        .expect("cli");
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("completed") && listing.contains("approval=approved"),
        "{listing}"
    );
}

#[test]
fn a_too_small_output_cap_names_the_setting() {
    let data = tempfile::tempdir().expect("temp dir");
    let output = Command::new(glassbox_bin().expect("binary"))
        .args([
            "serve",
            "--port",
            "0",
            "--max-output-bytes",
            "10",
            "--data-dir",
        ])
        .arg(data.path())
        .output()
        .expect("run glassbox");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("GLASSBOX_MAX_OUTPUT_BYTES"), "{stderr}");
}

/// Runs `cmd` with `input` on its standard input; its output.
fn with_stdin(cmd: &mut Command, input: &[u8]) -> std::process::Output {
    use std::io::Write as _;
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write");
    child.wait_with_output().expect("wait")
}

#[test]
fn secrets_from_the_cli_are_encrypted_and_listed_by_name() {
    let data = tempfile::tempdir().expect("temp dir");
    // `glassbox secret <args> --data-dir <data>`.
    let secret_cmd = |args: &[&str]| {
        let mut c = Command::new(glassbox_bin().expect("binary"));
        c.env_remove("GLASSBOX_DATABASE_URL")
            .env_remove("GLASSBOX_SECRET_KEY")
            .arg("secret")
            .args(args)
            .arg("--data-dir")
            .arg(data.path());
        c
    };
    let secret = |args: &[&str]| secret_cmd(args).output().expect("glassbox secret");
    let out = with_stdin(
        &mut secret_cmd(&["set", "SERVICE_TOKEN"]),
        b"cli-canary-77f1\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = secret(&["list"]);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("SERVICE_TOKEN") && listing.contains("workspace"),
        "{listing}"
    );
    assert!(!listing.contains("cli-canary-77f1"));
    let db = std::fs::read(data.path().join("glassbox.db")).expect("db");
    let wal = std::fs::read(data.path().join("glassbox.db-wal")).unwrap_or_default();
    for bytes in [db, wal] {
        assert!(
            !bytes.windows(15).any(|w| w == b"cli-canary-77f1"),
            "the value is stored in the clear"
        );
    }

    let out = secret(&["delete", "SERVICE_TOKEN"]);
    assert!(out.status.success());
    let out = secret(&["delete", "SERVICE_TOKEN"]);
    assert_eq!(out.status.code(), Some(2));
    // The org scope: the default workspace's organization.
    let out = with_stdin(
        &mut secret_cmd(&["set", "ORG_TOKEN", "--scope", "org"]),
        b"org-canary-9c2e\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = secret(&["list"]);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("ORG_TOKEN") && listing.contains("org"),
        "{listing}"
    );
    assert!(!listing.contains("org-canary-9c2e"));
    let out = secret(&["delete", "ORG_TOKEN", "--scope", "org"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = secret(&["set", "X", "--scope", "team"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--scope"));
}

#[test]
fn key_and_database_files_are_private_and_a_damaged_approval_key_stops_the_start() {
    use std::os::unix::fs::PermissionsExt;
    let server = glassbox_tests::harness::Server::start(None).expect("server starts");
    let dir = server.data_dir.path().to_path_buf();
    for file in ["secret.key", "approval.key", "glassbox.db"] {
        let mode = std::fs::metadata(dir.join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file} is {:o}", mode & 0o777);
    }
    let data = server.kill9();
    std::fs::write(data.path().join("approval.key"), b"not a key").expect("write");
    let out = Command::new(glassbox_bin().expect("binary"))
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(data.path())
        .env_remove("GLASSBOX_DATABASE_URL")
        .output()
        .expect("run glassbox");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("approval.key") && stderr.contains("not a 32-byte key"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(data.path().join("approval.key")).expect("read"),
        b"not a key",
        "the file is left as it was"
    );
}

#[test]
fn sigterm_stops_the_server_within_seconds_while_an_event_stream_is_open() {
    let endpoint = glassbox_tests::writes::Endpoint::start(false);
    let allow = format!("127.0.0.1:{}", endpoint.port);
    let mut server = Server::start_in(
        tempfile::tempdir().expect("tmp"),
        None,
        &[("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str())],
    )
    .expect("server starts");
    let token = server.sign_in();
    // A run that waits for an approval, and a client following its events.
    let run = glassbox_tests::writes::create_tool_writer(&server, &token, endpoint.port);
    glassbox_tests::writes::pending_tokens(&server, &token, 1);
    let addr = server.url.trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(&addr).expect("connect");
    write!(
        stream,
        "GET /api/v1/runs/{run}/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .expect("request");
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).expect("answer");
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"));
    let stopped_at = std::time::Instant::now();
    server.terminate();
    assert!(
        server.wait_for_exit(std::time::Duration::from_secs(8)),
        "the server still runs 8 s after SIGTERM"
    );
    assert!(stopped_at.elapsed() < std::time::Duration::from_secs(8));
}

/// One raw request; the whole answer head and body as text.
fn raw(addr: &str, request: &str) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(request.as_bytes()).expect("request");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .expect("timeout");
    let mut buf = vec![0u8; 8192];
    let n = stream.read(&mut buf).expect("answer");
    (stream, String::from_utf8_lossy(&buf[..n]).into_owned())
}

#[test]
fn a_workspace_at_its_run_or_stream_cap_gets_429_with_retry_after() {
    let endpoint = glassbox_tests::writes::Endpoint::start(false);
    let allow = format!("127.0.0.1:{}", endpoint.port);
    let server = Server::start_in(
        tempfile::tempdir().expect("tmp"),
        None,
        &[
            ("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str()),
            ("GLASSBOX_MAX_RUNS_PER_WORKSPACE", "1"),
            ("GLASSBOX_MAX_STREAMS_PER_WORKSPACE", "1"),
        ],
    )
    .expect("server starts");
    let token = server.sign_in();
    let run = glassbox_tests::writes::create_tool_writer(&server, &token, endpoint.port);
    glassbox_tests::writes::pending_tokens(&server, &token, 1);
    let addr = server.url.trim_start_matches("http://").to_string();

    // A second run while the first waits: 429, Retry-After, the error shape.
    let (_, body) = http(
        &server.url,
        "GET",
        &format!("/api/v1/runs/{run}"),
        Some(&token),
        None,
    );
    let workflow_id = json(&body)["workflow_id"]
        .as_str()
        .expect("workflow")
        .to_string();
    let start = format!("{{\"workflow_id\":\"{workflow_id}\"}}");
    let (_, answer) = raw(
        &addr,
        &format!(
            "POST /api/v1/runs HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{start}",
            start.len()
        ),
    );
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    assert!(answer.to_lowercase().contains("retry-after: 5"), "{answer}");
    assert!(answer.contains("\"RATE_LIMIT\""), "{answer}");

    // One event stream open: a second is refused until the first closes.
    let stream_request = format!(
        "GET /api/v1/runs/{run}/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    );
    let (first, answer) = raw(&addr, &stream_request);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (_, answer) = raw(&addr, &stream_request);
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    drop(first);
    let mut reopened = false;
    for _ in 0..100 {
        let (_, answer) = raw(&addr, &stream_request);
        if answer.starts_with("HTTP/1.1 200") {
            reopened = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(reopened, "a closed stream frees its slot");
}

#[test]
fn a_bad_workspace_cap_stops_the_start_naming_the_variable() {
    let data = tempfile::tempdir().expect("tmp");
    let out = Command::new(glassbox_bin().expect("binary"))
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(data.path())
        .env("GLASSBOX_MAX_RUNS_PER_WORKSPACE", "lots")
        .output()
        .expect("run glassbox");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("GLASSBOX_MAX_RUNS_PER_WORKSPACE"),
        "{stderr}"
    );
}

#[test]
fn half_sent_requests_are_closed_when_idle_and_connections_are_capped() {
    let server = Server::start_in(
        tempfile::tempdir().expect("tmp"),
        None,
        &[
            ("GLASSBOX_IDLE_TIMEOUT_S", "1"),
            ("GLASSBOX_MAX_CONNECTIONS", "2"),
        ],
    )
    .expect("server starts");
    let addr = server.url.trim_start_matches("http://").to_string();
    // Half a request head, then nothing: the server closes it.
    let mut half = TcpStream::connect(&addr).expect("connect");
    half.write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")
        .expect("half a head");
    half.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    let started = std::time::Instant::now();
    let mut buf = [0u8; 256];
    let n = half.read(&mut buf).unwrap_or(0);
    assert_eq!(
        n,
        0,
        "closed without an answer: {}",
        String::from_utf8_lossy(&buf[..n])
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(8),
        "closed by the idle timeout, not the test's"
    );

    // Two connections held open: a third is answered only when one closes.
    let first = TcpStream::connect(&addr).expect("connect");
    let second = TcpStream::connect(&addr).expect("connect");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mut third = TcpStream::connect(&addr).expect("the kernel accepts it");
    third
        .write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("request");
    third
        .set_read_timeout(Some(std::time::Duration::from_millis(300)))
        .expect("timeout");
    assert!(
        third.read(&mut buf).is_err(),
        "no answer while two connections hold the slots"
    );
    drop(first);
    drop(second);
    third
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    let n = third.read(&mut buf).expect("answered once a slot frees");
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
}

#[test]
fn a_request_head_trickled_byte_by_byte_is_closed_at_the_header_timeout() {
    let server = Server::start_in(
        tempfile::tempdir().expect("tmp"),
        None,
        &[
            ("GLASSBOX_HEADER_TIMEOUT_S", "1"),
            ("GLASSBOX_IDLE_TIMEOUT_S", "60"),
        ],
    )
    .expect("server starts");
    let addr = server.url.trim_start_matches("http://").to_string();
    let mut slow = TcpStream::connect(&addr).expect("connect");
    slow.write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")
        .expect("the head begins");
    // A header line every 200 ms: never idle, never done.
    let mut writer = slow.try_clone().expect("clone");
    let trickle = std::thread::spawn(move || {
        for _ in 0..50 {
            std::thread::sleep(std::time::Duration::from_millis(200));
            if writer.write_all(b"X-Slow: 1\r\n").is_err() {
                return true;
            }
        }
        false
    });
    slow.set_read_timeout(Some(std::time::Duration::from_secs(8)))
        .expect("timeout");
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    let _ = slow.read_to_end(&mut answer);
    let elapsed = started.elapsed();
    let answer = String::from_utf8_lossy(&answer).to_string();
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "closed, or told 408, never served: {answer}"
    );
    assert!(
        elapsed < std::time::Duration::from_secs(5),
        "closed by the 1 s header timeout while the idle timeout is 60 s: {elapsed:?}"
    );
    assert!(
        trickle.join().expect("writer"),
        "the server stopped reading"
    );
}
