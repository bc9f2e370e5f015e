//! Canary secrets at each scope (user, workspace, org), then runs whose tool
//! puts the secrets in its output, its error and a panic message. Afterwards
//! a scan of the database files, the whole data dir, the server log, SSE
//! streams, bundles and every read endpoint finds no canary in raw, base64,
//! hex, URL-encoded or JSON-escaped form. On SQLite and again on Postgres
//! (whose every table is read back as text for the scan).

use std::process::Stdio;

use glassbox_tests::db::TestDb;
use glassbox_tests::harness::{http, Server};
use glassbox_tests::leaks::{contains, files, find_leaks};
use serde_json::json;

/// Each has characters that JSON and URLs escape, so every form differs.
const CANARIES: [(&str, &str); 3] = [
    ("user", "cnry-user-41d9 \"q/\\ u"),
    ("workspace", "cnry-ws-5e1f \"q/\\ w"),
    ("org", "cnry-org-9b27 \"q/\\ o"),
];

/// (where, form) of every canary found in `bytes`.
fn leaks(place: &str, bytes: &[u8]) -> Vec<String> {
    find_leaks(place, bytes, &CANARIES)
}

#[test]
fn no_canary_secret_leaks_anywhere() {
    canary_scan(&TestDb::sqlite());
}

#[test]
fn no_canary_secret_leaks_anywhere_on_postgres() {
    if let Some(db) = TestDb::postgres("canary") {
        canary_scan(&db);
    }
}

fn canary_scan(db: &TestDb) {
    let data = tempfile::tempdir().expect("tmp");
    let log_path = data.path().with_extension("log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let mut env = db.env();
    env.extend([("GLASSBOX_TEST_TOOLS", "1"), ("RUST_LOG", "debug")]);
    let server =
        Server::start_with_stderr(data, None, &env, Stdio::from(log)).expect("server starts");
    let token = server.sign_in();
    for (scope, canary) in CANARIES {
        let name = format!("CANARY_{}", scope.to_uppercase());
        server.set_secret(&token, scope, &name, canary);
    }

    // An agent whose probe calls echo, fail and panic in one batch, and a
    // tool node whose probe panics; two runs of it.
    let workflow = json!({
        "format_version": 1, "id": "leaky", "name": "leaky", "revision": 0,
        "nodes": [
            {"id": "agent", "kind": "agent", "config": {"prompt": "probe", "tools": [{"tool": "secret_probe@1.0.0"}],
                "provider": {"kind": "scripted", "script": {"turns": [
                    {"tool_calls": [
                        {"name": "secret_probe", "arguments": {"mode": "echo"}},
                        {"name": "secret_probe", "arguments": {"mode": "fail"}},
                        {"name": "secret_probe", "arguments": {"mode": "panic"}}]},
                    {"text": "probed"}]}}}},
            {"id": "direct", "kind": "tool", "config": {"tool": "secret_probe@1.0.0", "inputs": {"mode": {"source": "fixed", "value": "panic"}}}},
            {"id": "out", "kind": "output", "config": {"fields": ["answer"]}}
        ],
        "edges": [{"id": "e", "source": {"node": "agent", "handle": "response"}, "target": {"node": "out", "handle": "answer"}}]
    });
    let wf = server.create_workflow(&token, &workflow);
    let mut seen = Vec::new();
    for _ in 0..2 {
        let run = server.start_run(&token, &wf);
        let v = server.finished_run(&token, &run);
        seen.push((format!("run {run}"), v.to_string()));
        for path in [
            format!("/api/v1/runs/{run}/events"),
            format!("/api/v1/runs/{run}/bundle"),
            format!("/api/v1/runs/{run}/trace"),
        ] {
            let (_, body) = http(&server.url, "GET", &path, Some(&token), None);
            seen.push((path, body));
        }
        seen.extend(server.invocation_records(&token, &run));
        let (_, body) = http(
            &server.url,
            "POST",
            &format!("/api/v1/runs/{run}/replay"),
            Some(&token),
            None,
        );
        seen.push((format!("replay of {run}"), body));
    }
    for path in [
        "/api/v1/secrets",
        "/api/v1/tools",
        "/api/v1/approvals",
        "/api/v1/runs",
    ] {
        let (_, body) = http(&server.url, "GET", path, Some(&token), None);
        seen.push((path.to_string(), body));
    }
    // The probe really held the secrets: redaction markers, not nothing.
    let invocations = &seen
        .iter()
        .filter(|(p, _)| p.starts_with("/api/v1/invocations/"))
        .map(|(_, body)| body.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        invocations.contains("[REDACTED:CANARY_WORKSPACE]"),
        "{invocations}"
    );
    assert!(
        invocations.contains("[REDACTED:CANARY_ORG]"),
        "{invocations}"
    );
    assert!(invocations.contains("panicked"), "{invocations}");
    assert!(invocations.contains("PROVIDER_ERROR"), "{invocations}");

    let data = server.kill9();
    let mut found = Vec::new();
    for (place, body) in &seen {
        found.extend(leaks(place, body.as_bytes()));
    }
    let mut all = Vec::new();
    files(data.path(), &mut all);
    for path in &all {
        let bytes = std::fs::read(path).expect("read");
        found.extend(leaks(&path.display().to_string(), &bytes));
    }
    if db.is_postgres() {
        let tables = db.postgres_tables();
        assert!(
            tables
                .iter()
                .any(|(t, rows)| t == "table secret_entries" && !rows.is_empty()),
            "the secrets are stored (encrypted) in Postgres"
        );
        for (table, rows) in &tables {
            found.extend(leaks(table, rows));
        }
    } else {
        assert!(all.iter().any(|p| p.ends_with("glassbox.db")), "{all:?}");
    }
    let log = std::fs::read(&log_path).expect("log");
    assert!(
        contains(&log, b"a tool panicked"),
        "the panics were logged, without their message"
    );
    found.extend(leaks("the server log", &log));
    assert!(found.is_empty(), "canaries found:\n{}", found.join("\n"));
}
