//! Approval tokens against the real binary: a second use, a forged token,
//! tampered arguments and another run's token are all refused, and nothing
//! is executed for them (a loopback endpoint counts every write request).
//! Each suite runs on SQLite and again on Postgres.

use std::collections::HashMap;
use std::time::Duration;

use glassbox_tests::db::TestDb;
use glassbox_tests::harness::{http, json, Server};
use glassbox_tests::writes::{create_writer, Endpoint};
use serde_json::Value;

/// run id -> approval token of every pending approval (waits for `want`).
fn pending_by_run(server: &Server, token: &str, want: usize) -> HashMap<String, String> {
    for _ in 0..400 {
        let (_, body) = http(&server.url, "GET", "/api/v1/approvals", Some(token), None);
        let pending: HashMap<String, String> = json(&body)["pending"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|p| {
                        Some((
                            p["run_id"].as_str()?.to_string(),
                            p["token"].as_str()?.to_string(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default();
        if pending.len() >= want {
            return pending;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("fewer than {want} approvals became pending");
}

fn run_status(server: &Server, token: &str, run_id: &str) -> Value {
    let (_, body) = http(
        &server.url,
        "GET",
        &format!("/api/v1/runs/{run_id}"),
        Some(token),
        None,
    );
    json(&body)
}

/// Rewrites the stored state of `run_id`'s suspended agent (the server is
/// stopped): what an attacker with write access to the database could do.
fn tamper_checkpoint(
    db: &TestDb,
    dir: &std::path::Path,
    run_id: &str,
    edit: impl FnOnce(&mut Value),
) {
    let state = db.fetch_text(
        dir,
        "SELECT state FROM run_checkpoints WHERE run_id = $1 AND kind = 'agent'",
        &[run_id],
    );
    let mut state: Value =
        serde_json::from_str(state.first().expect("the suspended agent's checkpoint"))
            .expect("json");
    edit(&mut state);
    let changed = db.execute(
        dir,
        "UPDATE run_checkpoints SET state = $1 WHERE run_id = $2 AND kind = 'agent'",
        &[&state.to_string(), run_id],
    );
    assert_eq!(changed, 1, "tampered");
}

#[test]
fn reused_forged_tampered_and_foreign_tokens_are_refused_and_run_nothing() {
    refused_tokens(&TestDb::sqlite());
}

#[test]
fn reused_forged_tampered_and_foreign_tokens_are_refused_and_run_nothing_on_postgres() {
    if let Some(db) = TestDb::postgres("approval_tokens") {
        refused_tokens(&db);
    }
}

fn refused_tokens(db: &TestDb) {
    let endpoint = Endpoint::start(false);
    let allow = format!("127.0.0.1:{}", endpoint.port);
    let mut env = db.env();
    env.push(("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str()));
    let server =
        Server::start_in(tempfile::tempdir().expect("tmp"), None, &env).expect("server starts");
    let token = server.sign_in();
    let runs: Vec<String> = (0..3)
        .map(|n| create_writer(&server, &token, endpoint.port, n))
        .collect();
    let (a, b, c) = (&runs[0], &runs[1], &runs[2]);
    let tokens = pending_by_run(&server, &token, 3);

    // A second use of a token: refused with 409; the write ran once.
    let approve = |server: &Server, t: &str| {
        http(
            &server.url,
            "POST",
            &format!("/api/v1/approvals/{t}/approve"),
            Some(&token),
            None,
        )
    };
    let (s, body) = approve(&server, &tokens[a]);
    assert_eq!(s, 200, "{body}");
    let (s, body) = approve(&server, &tokens[a]);
    assert_eq!(s, 409, "{body}");
    assert_eq!(json(&body)["error"]["code"], "CONFLICT", "{body}");
    assert_eq!(server.finished_run(&token, a)["status"], "succeeded");
    assert_eq!(endpoint.counts().values().copied().collect::<Vec<_>>(), [1]);

    // A forged token (one character changed): unknown, 404.
    let mut forged = tokens[b].clone().into_bytes();
    forged[0] = if forged[0] == b'0' { b'1' } else { b'0' };
    let forged = String::from_utf8(forged).expect("hex");
    let (s, body) = approve(&server, &forged);
    assert_eq!(s, 404, "{body}");
    assert_eq!(
        run_status(&server, &token, b)["status"],
        "waiting_for_approval"
    );

    // The database is edited while the server is down: B's pending call now
    // posts other arguments; C's pending call carries B's token.
    let dir = server.kill9();
    tamper_checkpoint(db, dir.path(), b, |state| {
        state["pending"][0]["provider_call"]["arguments"]["body"]["n"] = Value::from(999);
    });
    let token_b = tokens[b].clone();
    tamper_checkpoint(db, dir.path(), c, |state| {
        state["pending"][0]["approval"]["token"] = Value::from(token_b.clone());
    });
    let server = Server::start_in(dir, None, &env).expect("server restarts");

    // Approving B's token reaches B (tampered arguments) and C (another
    // run's token): both refuse it, neither writes.
    let (s, body) = approve(&server, &tokens[b]);
    assert_eq!(s, 200, "{body}");
    for run in [b, c] {
        let v = server.finished_run(&token, run);
        assert_eq!(v["status"], "failed", "{v}");
        assert!(
            v["error"]
                .as_str()
                .unwrap_or_default()
                .contains("no longer match"),
            "refused as tampered: {v}"
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        endpoint.counts().values().copied().collect::<Vec<_>>(),
        [1],
        "only A's approved write reached the endpoint"
    );
}

#[test]
fn after_a_restart_a_waiting_write_can_be_denied_or_sent_back_for_revision() {
    denied_or_revised(&TestDb::sqlite());
}

#[test]
fn after_a_restart_a_waiting_write_can_be_denied_or_sent_back_for_revision_on_postgres() {
    if let Some(db) = TestDb::postgres("approval_decisions") {
        denied_or_revised(&db);
    }
}

fn denied_or_revised(db: &TestDb) {
    let endpoint = Endpoint::start(false);
    let allow = format!("127.0.0.1:{}", endpoint.port);
    let mut env = db.env();
    env.push(("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str()));
    let server =
        Server::start_in(tempfile::tempdir().expect("tmp"), None, &env).expect("server starts");
    let token = server.sign_in();
    let denied = create_writer(&server, &token, endpoint.port, 1);
    let revised = create_writer(&server, &token, endpoint.port, 2);
    pending_by_run(&server, &token, 2);
    let server = Server::start_in(server.kill9(), None, &env).expect("server restarts");
    let tokens = pending_by_run(&server, &token, 2);

    let (s, body) = http(
        &server.url,
        "POST",
        &format!("/api/v1/approvals/{}/deny", tokens[&denied]),
        Some(&token),
        Some(&serde_json::json!({"reason": "not today"})),
    );
    assert_eq!(s, 200, "{body}");
    let (s, body) = http(
        &server.url,
        "POST",
        &format!("/api/v1/approvals/{}/revise", tokens[&revised]),
        Some(&token),
        Some(&serde_json::json!({"note": "post n=3 instead"})),
    );
    assert_eq!(s, 200, "{body}");
    for run in [&denied, &revised] {
        let v = server.finished_run(&token, run);
        assert_eq!(
            v["status"], "succeeded",
            "the model got the decision and answered: {v}"
        );
    }
    let (_, body) = http(
        &server.url,
        "GET",
        &format!("/api/v1/invocations?run_id={denied}"),
        Some(&token),
        None,
    );
    let inv = &json(&body)["invocations"][0];
    assert_eq!(inv["approval_status"], "rejected", "{inv}");
    assert!(
        inv["error"]
            .as_str()
            .unwrap_or_default()
            .contains("POLICY_DENIED")
            || inv["reason"] == "not today",
        "{inv}"
    );
    let (_, body) = http(&server.url, "GET", "/api/v1/approvals", Some(&token), None);
    assert_eq!(json(&body)["count"], 0, "{body}");
    assert!(
        endpoint.counts().is_empty(),
        "neither write ran: {:?}",
        endpoint.counts()
    );
}

/// A decision stored by another process (the CLI, on the same database)
/// reaches the run waiting in the server: on Postgres by `NOTIFY` alone
/// (the server does not poll there), on SQLite by the server's sweep.
#[test]
fn a_decision_stored_by_another_process_reaches_the_waiting_run() {
    decided_elsewhere(&TestDb::sqlite());
}

#[test]
fn a_decision_stored_by_another_process_reaches_the_waiting_run_on_postgres() {
    if let Some(db) = TestDb::postgres("approval_elsewhere") {
        decided_elsewhere(&db);
    }
}

fn decided_elsewhere(db: &TestDb) {
    let endpoint = Endpoint::start(false);
    let allow = format!("127.0.0.1:{}", endpoint.port);
    let mut env = db.env();
    env.push(("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str()));
    let server =
        Server::start_in(tempfile::tempdir().expect("tmp"), None, &env).expect("server starts");
    let token = server.sign_in();
    let run = create_writer(&server, &token, endpoint.port, 1);
    let approval = pending_by_run(&server, &token, 1)
        .remove(&run)
        .expect("pending");
    let mut cli =
        std::process::Command::new(glassbox_tests::harness::glassbox_bin().expect("binary"));
    cli.args(["tool", "approve", &approval, "--data-dir"])
        .arg(server.data_dir.path())
        .env_remove("GLASSBOX_DATABASE_URL")
        .envs(db.env());
    let out = cli.output().expect("the CLI runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = server.finished_run(&token, &run);
    assert_eq!(v["status"], "succeeded", "{v}");
    assert_eq!(endpoint.counts().values().sum::<usize>(), 1);
}

/// Waiting runs cost no query per approval: decisions come by
/// notification. The server's own query log (sqlx's, at debug) over 3 s of
/// five runs waiting shows at most the SQLite sweep (every 2 s, one query
/// for all of them) and nothing on Postgres, where polling each approval
/// every 250 ms made sixty.
#[test]
fn waiting_approvals_are_not_polled() {
    not_polled(&TestDb::sqlite(), 2);
}

#[test]
fn waiting_approvals_are_not_polled_on_postgres() {
    if let Some(db) = TestDb::postgres("approval_quiet") {
        not_polled(&db, 0);
    }
}

fn not_polled(db: &TestDb, sweeps: usize) {
    let endpoint = Endpoint::start(false);
    let allow = format!("127.0.0.1:{}", endpoint.port);
    let mut env = db.env();
    env.push(("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str()));
    env.push(("RUST_LOG", "warn,sqlx::query=debug"));
    let data = tempfile::tempdir().expect("tmp");
    let log_path = data.path().with_extension("log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let server = Server::start_with_stderr(data, None, &env, std::process::Stdio::from(log))
        .expect("server starts");
    let token = server.sign_in();
    for n in 0..5 {
        create_writer(&server, &token, endpoint.port, n);
    }
    pending_by_run(&server, &token, 5);
    // Let the runs reach their wait, then count the queries of a quiet
    // stretch with nothing asked of the server.
    std::thread::sleep(Duration::from_millis(500));
    let before = std::fs::read(&log_path).expect("log").len();
    std::thread::sleep(Duration::from_secs(3));
    let log = std::fs::read(&log_path).expect("log");
    let quiet = String::from_utf8_lossy(&log[before..]);
    let log = String::from_utf8_lossy(&log);
    let queries = quiet
        .lines()
        .filter(|l| l.contains("FROM approvals"))
        .count();
    assert!(
        queries <= sweeps,
        "{queries} approval queries in 3 s of waiting (at most {sweeps}):\n{quiet}"
    );
    assert!(
        log.contains("FROM approvals"),
        "the query log is on (the approvals list was read)"
    );
}
