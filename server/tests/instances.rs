//! Glassbox instances (issue 32), through the real `glassbox serve`:
//! SQLite serves one instance per database file.

mod procs;

use procs::Serve;

/// A second server on the same SQLite file is refused with a message; once
/// the first is killed (SIGKILL, no clean-up), a new one starts.
#[test]
fn a_second_server_on_one_sqlite_file_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let first = Serve::start(dir.path(), &[], &[]).expect("the first server starts");
    let refused = Serve::start(dir.path(), &[], &[])
        .err()
        .expect("the second server is refused");
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("is already served by another `glassbox serve`")
            && refused.stderr.contains("Postgres"),
        "the refusal says why and what to do: {}",
        refused.stderr
    );
    // The refused process changed nothing: the first still answers.
    assert_eq!(procs::get_status(&first.url, "/api/v1/health"), 200);
    first.kill9();
    let again = Serve::start(dir.path(), &[], &[]).expect("starts after a kill -9");
    again.kill9();
}

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Runs a scenario, a failed assertion inside it included, so the test's
/// database is dropped whatever happens (the failure is raised after).
async fn guarded(
    scenario: impl std::future::Future<Output = Result<(), String>>,
) -> Result<(), String> {
    use futures::FutureExt;
    match std::panic::AssertUnwindSafe(scenario).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(panic) => Err(panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the scenario panicked".into())),
    }
}

/// An API client of several instances sharing one session.
struct Api {
    client: reqwest::Client,
    token: String,
}

impl Api {
    async fn call(
        &self,
        base: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self
            .client
            .request(method, format!("{base}/api/v1{path}"))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        match req.send().await {
            Ok(res) => {
                let status = res.status().as_u16();
                let text = res.text().await.unwrap_or_default();
                (status, serde_json::from_str(&text).unwrap_or(Value::Null))
            }
            Err(_) => (0, Value::Null),
        }
    }
}

/// A scripted agent reading `/read/<n>` and, with `write`, POSTing to
/// `/write/<n>` (an approved write) before it answers.
fn reader_writer(port: u16, n: usize, write: bool) -> Value {
    let mut turns = vec![
        json!({"tool_calls": [{"name": "http_request", "arguments": {"url": format!("http://127.0.0.1:{port}/read/{n}")}}]}),
    ];
    if write {
        turns.push(json!({"tool_calls": [{"name": "http_request", "arguments": {"url": format!("http://127.0.0.1:{port}/write/{n}"), "method": "POST", "body": {"n": n}}}]}));
    }
    turns.push(json!({"text": "done"}));
    json!({
        "format_version": 1, "id": format!("w{n}"), "name": format!("rw {n}"), "revision": 0,
        "nodes": [{"id": "agent", "kind": "agent", "config": {"prompt": "go", "tools": [{"tool": "http_request@1.0.0"}],
            "provider": {"kind": "scripted", "script": {"turns": turns}}}}],
        "edges": []
    })
}

/// Three `glassbox serve` processes on one Postgres database (one data
/// dir, so one secret and approval key): 300 runs started round-robin, each
/// reading a counting loopback endpoint and a third of them with an
/// approved write; the first instance is killed with SIGKILL part-way. Every
/// run ends succeeded, every write reached the endpoint exactly once, and
/// the killed instance's runs were claimed within lease + 5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_instances_survive_the_loss_of_one_on_postgres() {
    let Some(db) = common::TempPgDatabase::create("glassbox_scaleout").await else {
        return;
    };
    let outcome = guarded(three_instances(&db.url)).await;
    db.drop_now().await;
    outcome.expect("scale-out scenario");
}

const LEASE_S: u64 = 5;
const RUNS: usize = 300;

async fn three_instances(url: &str) -> Result<(), String> {
    let counter = procs::Counter::start(Duration::from_millis(300));
    let allow = format!("127.0.0.1:{}", counter.port);
    let lease = LEASE_S.to_string();
    let env = [
        ("GLASSBOX_DATABASE_URL", url),
        ("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str()),
        ("GLASSBOX_LEASE_S", lease.as_str()),
        ("GLASSBOX_MAX_RUNS_PER_WORKSPACE", "1000"),
    ];
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut servers = Vec::new();
    for name in ["a", "b", "c"] {
        let s = Serve::start(dir.path(), &["--instance-name", name], &env)
            .map_err(|r| format!("instance {name} starts: {r:?}"))?;
        servers.push(s);
    }
    let urls: Vec<String> = servers.iter().map(|s| s.url.clone()).collect();
    let client = reqwest::Client::new();
    let api = Api {
        token: servers[0].sign_in(&client).await,
        client,
    };
    // The instances view lists the three, each the current one on itself.
    for (i, base) in urls.iter().enumerate() {
        let (s, v) = api.call(base, "GET", "/instances", None).await;
        assert_eq!(s, 200, "{v}");
        let names: Vec<&str> = v["instances"]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(names, ["a", "b", "c"], "{v}");
        let current: Vec<&Value> = v["instances"]
            .as_array()
            .map(|a| a.iter().filter(|x| x["current"] == true).collect())
            .unwrap_or_default();
        assert_eq!(current.len(), 1, "{v}");
        assert_eq!(current[0]["name"], ["a", "b", "c"][i]);
    }
    // One workflow per run (each its own URLs).
    let mut workflows = Vec::new();
    for n in 0..RUNS {
        let (s, v) = api
            .call(
                &urls[n % 3],
                "POST",
                "/workflows",
                Some(reader_writer(counter.port, n, n % 3 == 0)),
            )
            .await;
        assert_eq!(s, 201, "{v}");
        workflows.push(v["id"].as_str().expect("workflow id").to_string());
    }
    let mut runs = Vec::new();
    for (n, wf) in workflows.iter().enumerate() {
        let (s, v) = api
            .call(
                &urls[n % 3],
                "POST",
                "/runs",
                Some(json!({"workflow_id": wf})),
            )
            .await;
        assert_eq!(s, 202, "{v}");
        runs.push(v["run_id"].as_str().expect("run id").to_string());
    }
    // Part-way: a's runs are reading, waiting for approval, or done (a
    // tenth of its reads arrived).
    until(
        Duration::from_secs(30),
        "a's runs are under way",
        || async {
            counter
                .counts()
                .keys()
                .filter(|p| {
                    p.strip_prefix("/read/")
                        .and_then(|n| n.parse::<usize>().ok())
                        .is_some_and(|n| n % 3 == 0)
                })
                .count()
                >= RUNS / 30
        },
    )
    .await;
    let (_, before) = api.call(&urls[1], "GET", "/instances", None).await;
    let held_by_a = before["instances"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == "a"))
        .map(|x| x["runs_held"].as_i64().unwrap_or(0))
        .unwrap_or(0);
    assert!(held_by_a > 0, "a holds runs when it is killed: {before}");
    let killed = Instant::now();
    servers.remove(0).kill9();
    let alive = &urls[1..];
    // Takeover: b or c claims every run a held.
    let takeover = loop {
        let (_, v) = api.call(&alive[0], "GET", "/instances", None).await;
        let a_holds = v["instances"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["name"] == "a"))
            .map(|x| x["runs_held"].as_i64().unwrap_or(0))
            .unwrap_or(0);
        if a_holds == 0 {
            break killed.elapsed();
        }
        if killed.elapsed() > Duration::from_secs(60) {
            return Err(format!("a's runs were not claimed within 60 s: {v}"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!(
        "TAKEOVER {} ms ({held_by_a} runs held by the killed instance)",
        takeover.as_millis()
    );
    assert!(
        takeover <= Duration::from_secs(LEASE_S + 5),
        "takeover within lease + 5 s: {takeover:?}"
    );
    // Approve every pending write, alternately through b and c, until every
    // run has ended.
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut turn = 0;
    let mut statuses: HashMap<String, String> = HashMap::new();
    loop {
        let (_, v) = api.call(&alive[turn % 2], "GET", "/approvals", None).await;
        for p in v["pending"].as_array().cloned().unwrap_or_default() {
            let token = p["token"].as_str().unwrap_or_default();
            turn += 1;
            let (s, body) = api
                .call(
                    &alive[turn % 2],
                    "POST",
                    &format!("/approvals/{token}/approve"),
                    None,
                )
                .await;
            assert!(s == 200 || s == 409, "approve: {s} {body}");
        }
        for run in &runs {
            if statuses
                .get(run)
                .is_some_and(|s| s != "running" && s != "queued" && s != "waiting_for_approval")
            {
                continue;
            }
            let (_, v) = api
                .call(&alive[0], "GET", &format!("/runs/{run}"), None)
                .await;
            statuses.insert(run.clone(), v["status"].as_str().unwrap_or("?").to_string());
        }
        let open = statuses
            .values()
            .filter(|s| {
                matches!(
                    s.as_str(),
                    "running" | "queued" | "waiting_for_approval" | "?"
                )
            })
            .count();
        if open == 0 && statuses.len() == RUNS {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("{open} runs still open after 240 s"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let failed: Vec<_> = statuses.iter().filter(|(_, s)| *s != "succeeded").collect();
    assert!(failed.is_empty(), "every run succeeded: {failed:?}");
    let counts = counter.counts();
    let writes: Vec<(&String, &usize)> = counts
        .iter()
        .filter(|(p, _)| p.starts_with("/write/"))
        .collect();
    assert!(
        writes.iter().all(|(_, &n)| n == 1),
        "no write reached the endpoint twice: {writes:?}"
    );
    assert_eq!(
        writes.len(),
        RUNS / 3,
        "every approved write reached the endpoint once"
    );
    // Every run read: those of b and c exactly once; a run of the killed
    // instance may read again where it resumes (a read is not journaled),
    // but once at least.
    for n in 0..RUNS {
        let hits = counts.get(&format!("/read/{n}")).copied().unwrap_or(0);
        if n % 3 == 0 {
            assert!(hits >= 1, "run {n} (on the killed instance) read: {hits}");
        } else {
            assert_eq!(hits, 1, "run {n} (on a live instance) read once");
        }
    }
    assert_eq!(
        counts.keys().filter(|p| p.starts_with("/read/")).count(),
        RUNS,
        "no other read"
    );
    Ok(())
}

/// Polls `check` every 50 ms until it holds; panics naming `what` after
/// `limit`.
async fn until<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How many approvals `base` lists as pending.
async fn pending(api: &Api, base: &str) -> Vec<String> {
    let (_, v) = api.call(base, "GET", "/approvals", None).await;
    v["pending"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p["token"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// SQLite's one instance resumes every interrupted run at its start, not
/// only the first claim's page of them: 150 runs waiting for an approval
/// when the server is killed (SIGKILL) are all resumed by the next start
/// (held by it, in the instances view), and each, once approved, ends
/// succeeded with its write reaching the endpoint once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_interrupted_run_resumes_on_sqlite() {
    const N: usize = 150;
    let dir = tempfile::tempdir().expect("tmp");
    let counter = procs::Counter::start(Duration::ZERO);
    let allow = format!("127.0.0.1:{}", counter.port);
    let env = [
        ("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str()),
        ("GLASSBOX_MAX_RUNS_PER_WORKSPACE", "1000"),
    ];
    let first = Serve::start(dir.path(), &[], &env).expect("starts");
    let client = reqwest::Client::new();
    let api = Api {
        token: first.sign_in(&client).await,
        client,
    };
    let (s, v) = api
        .call(
            &first.url,
            "POST",
            "/workflows",
            Some(reader_writer(counter.port, 1, true)),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let workflow = v["id"].clone();
    let mut runs = Vec::new();
    for _ in 0..N {
        let (s, v) = api
            .call(
                &first.url,
                "POST",
                "/runs",
                Some(json!({"workflow_id": workflow})),
            )
            .await;
        assert_eq!(s, 202, "{v}");
        runs.push(v["run_id"].as_str().expect("run id").to_string());
    }
    until(
        Duration::from_secs(60),
        "every run waits for its approval",
        || async { pending(&api, &first.url).await.len() == N },
    )
    .await;
    first.kill9();
    let second = Serve::start(dir.path(), &[], &env).expect("restarts");
    assert!(
        second
            .before
            .iter()
            .any(|l| l.contains(&format!("Resumed {N} interrupted run(s)."))),
        "every interrupted run resumed: {:?}",
        second.before
    );
    let (_, v) = api.call(&second.url, "GET", "/instances", None).await;
    let current = v["instances"]
        .as_array()
        .and_then(|a| a.iter().find(|i| i["current"] == true))
        .cloned()
        .unwrap_or_default();
    assert_eq!(current["runs_held"], N, "{v}");
    let tokens = pending(&api, &second.url).await;
    assert_eq!(tokens.len(), N, "every run waits again");
    for token in tokens {
        let (s, v) = api
            .call(
                &second.url,
                "POST",
                &format!("/approvals/{token}/approve"),
                None,
            )
            .await;
        assert_eq!(s, 200, "{v}");
    }
    let mut open = runs.clone();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !open.is_empty() {
        assert!(Instant::now() < deadline, "runs still open: {open:?}");
        let mut still = Vec::new();
        for run in open {
            let (_, v) = api
                .call(&second.url, "GET", &format!("/runs/{run}"), None)
                .await;
            match v["status"].as_str() {
                Some("succeeded") => {}
                Some("running" | "queued" | "waiting_for_approval") | None => still.push(run),
                Some(other) => panic!("run {run} ended {other}: {v}"),
            }
        }
        open = still;
        if !open.is_empty() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let counts = counter.counts();
    assert_eq!(
        counts.get("/write/1"),
        Some(&N),
        "each write once: {counts:?}"
    );
    assert_eq!(
        counts.get("/read/1"),
        Some(&N),
        "each read once: {counts:?}"
    );
    second.kill9();
}

/// `GET /instances` counts only the caller's workspace's runs: an admin of
/// another workspace sees the instance (the deployment's) holding none of
/// them. On SQLite (the runs it executes) and on Postgres (its claims).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_instances_view_counts_only_the_callers_runs() {
    let dir = tempfile::tempdir().expect("tmp");
    held_per_workspace(
        dir.path(),
        &glassbox_server::Config::default_database_url(dir.path()),
    )
    .await
    .expect("sqlite");
    let Some(db) = common::TempPgDatabase::create("glassbox_instances_view").await else {
        return;
    };
    let dir = tempfile::tempdir().expect("tmp");
    let outcome = guarded(held_per_workspace(dir.path(), &db.url)).await;
    db.drop_now().await;
    outcome.expect("postgres");
}

async fn held_per_workspace(dir: &std::path::Path, url: &str) -> Result<(), String> {
    use glassbox_server::auth::{bootstrap, exchange, hash_token};
    let db = glassbox_server::Store::open(url)
        .await
        .map_err(|e| e.to_string())?;
    let signin = bootstrap(&db).await.map_err(|e| e.to_string())?;
    let (admin, _) = exchange(&db, &signin).await.map_err(|e| e.to_string())?;
    db.ensure_workspace("other", "Other")
        .await
        .map_err(|e| e.to_string())?;
    db.ensure_user("bob", "Bob")
        .await
        .map_err(|e| e.to_string())?;
    db.add_membership("other", "bob", "admin")
        .await
        .map_err(|e| e.to_string())?;
    db.insert_token(&hash_token(common::BOB_TOKEN), "bob", "session", None)
        .await
        .map_err(|e| e.to_string())?;
    let config = glassbox_server::Config {
        database_url: url.to_string(),
        ..common::TwoWorkspaces::config(dir, 1 << 20)
    };
    let state = glassbox_server::AppState::new_instance(db.clone(), config, Some("solo".into()))
        .map_err(|e| e.to_string())?;
    state.runs().serve_as_instance(false).await;
    common::start_run(&state, &admin, common::approval_workflow()).await;
    let held = |token: &'static str| {
        let state = state.clone();
        async move {
            let (s, _, body) =
                common::request(&state, "GET", "/api/v1/instances", token, None).await;
            assert_eq!(s, 200, "{}", String::from_utf8_lossy(&body));
            let v: Value = serde_json::from_slice(&body).expect("json");
            let solo = v["instances"]
                .as_array()
                .and_then(|a| a.iter().find(|i| i["name"] == "solo"))
                .cloned();
            solo.map(|i| i["runs_held"].as_i64().unwrap_or(-1))
        }
    };
    let admin: &'static str = Box::leak(admin.into_boxed_str());
    // Claimed beside its start (Postgres).
    until(Duration::from_secs(10), "the run is held", || async {
        held(admin).await == Some(1)
    })
    .await;
    assert_eq!(
        held(common::BOB_TOKEN).await,
        Some(0),
        "another workspace's admin sees the instance, none of this workspace's runs"
    );
    db.close().await;
    Ok(())
}

/// A lease out of range (a huge GLASSBOX_LEASE_S would overflow the lease
/// times) stops the start with exit code 2, naming the variable.
#[test]
fn a_lease_out_of_range_stops_the_start() {
    let dir = tempfile::tempdir().expect("tmp");
    for bad in ["100000000000000", "0"] {
        let refused = Serve::start(dir.path(), &[], &[("GLASSBOX_LEASE_S", bad)])
            .err()
            .expect("refused");
        assert_eq!(refused.code, Some(2), "{bad}: {refused:?}");
        assert!(
            refused.stderr.contains("GLASSBOX_LEASE_S"),
            "{}",
            refused.stderr
        );
    }
}

/// `--instance-name` names the instance in `GET /instances` (SQLite: the
/// one instance), a bad name stops the start, and the view takes a token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_instances_view_names_the_serving_instance() {
    let dir = tempfile::tempdir().expect("tmp");
    let bad = Serve::start(dir.path(), &["--instance-name", "two words"], &[])
        .err()
        .expect("a name with a space is refused");
    assert_eq!(bad.code, Some(2), "{bad:?}");
    assert!(bad.stderr.contains("--instance-name"), "{}", bad.stderr);
    let server = Serve::start(dir.path(), &["--instance-name", "solo-1"], &[]).expect("starts");
    let client = reqwest::Client::new();
    let api = Api {
        token: server.sign_in(&client).await,
        client,
    };
    let (s, v) = api.call(&server.url, "GET", "/instances", None).await;
    assert_eq!(s, 200, "{v}");
    let list = v["instances"].as_array().expect("instances");
    assert_eq!(list.len(), 1, "{v}");
    assert_eq!(list[0]["name"], "solo-1");
    assert_eq!(list[0]["current"], true);
    assert_eq!(list[0]["runs_held"], 0);
    // A run waiting for approval is held by the one instance.
    let counter = procs::Counter::start(Duration::ZERO);
    let (s, v) = api
        .call(
            &server.url,
            "POST",
            "/workflows",
            Some(reader_writer(counter.port, 1, true)),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = api
        .call(
            &server.url,
            "POST",
            "/runs",
            Some(json!({"workflow_id": v["id"]})),
        )
        .await;
    assert_eq!(s, 202, "{v}");
    let (_, v) = api.call(&server.url, "GET", "/instances", None).await;
    assert_eq!(v["instances"][0]["runs_held"], 1, "{v}");
    assert!(list[0]["stopped_at"].is_null(), "{v}");
    assert!(
        list[0]["started_at"]
            .as_str()
            .is_some_and(|t| t <= list[0]["last_heartbeat_at"].as_str().unwrap_or("")),
        "{v}"
    );
    let anonymous = Api {
        token: "no-such-token".into(),
        client: api.client.clone(),
    };
    let (s, _) = anonymous.call(&server.url, "GET", "/instances", None).await;
    assert_eq!(s, 401);
    server.kill9();
}

/// On Postgres a second live instance under a name in use is refused; the
/// name is free again once its holder is killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_live_instance_per_name_on_postgres() {
    let Some(db) = common::TempPgDatabase::create("glassbox_names").await else {
        return;
    };
    let dir = tempfile::tempdir().expect("tmp");
    let env = [("GLASSBOX_DATABASE_URL", db.url.as_str())];
    let first = Serve::start(dir.path(), &["--instance-name", "same"], &env).expect("starts");
    let refused = Serve::start(dir.path(), &["--instance-name", "same"], &env).err();
    let other = Serve::start(dir.path(), &["--instance-name", "other"], &env);
    first.kill9();
    let again = Serve::start(dir.path(), &["--instance-name", "same"], &env);
    drop(other);
    let restarted = again.is_ok();
    drop(again);
    db.drop_now().await;
    let refused = refused.expect("a second `same` is refused");
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("another running instance is named `same`"),
        "{}",
        refused.stderr
    );
    assert!(restarted, "the name is free once its holder is gone");
}

/// Reads `GET /runs/{run}/events` on `base` (after `last_id`) until the
/// stream ends, `stop` says so, or `limit` passes: the (id, data) pairs.
async fn read_events(
    api: &Api,
    base: &str,
    run: &str,
    last_id: Option<i64>,
    limit: Duration,
    stop: impl Fn(&[(i64, String)]) -> bool,
    connected: Option<tokio::sync::oneshot::Sender<()>>,
) -> Vec<(i64, String)> {
    let mut req = api
        .client
        .get(format!("{base}/api/v1/runs/{run}/events"))
        .bearer_auth(&api.token)
        .header("accept", "text/event-stream");
    if let Some(id) = last_id {
        req = req.header("last-event-id", id.to_string());
    }
    let mut events = Vec::new();
    let Ok(mut res) = req.send().await else {
        return events;
    };
    // The stream is open: the server follows the run for it from now on.
    if let Some(tx) = connected {
        let _ = tx.send(());
    }
    let deadline = tokio::time::Instant::now() + limit;
    let mut buf = String::new();
    while !stop(&events) {
        let chunk = match tokio::time::timeout_at(deadline, res.chunk()).await {
            Ok(Ok(Some(c))) => c,
            _ => break,
        };
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let (mut id, mut data) = (None, String::new());
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = v.trim().parse::<i64>().ok();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.strip_prefix(' ').unwrap_or(v));
                }
            }
            if let Some(id) = id {
                events.push((id, data));
            }
        }
    }
    events
}

/// Three instances on one Postgres: an event stream on b follows a run
/// executing on a, in order, and resumes with `Last-Event-ID` after b is
/// restarted; an approval decided on c reaches the run waiting on a within
/// 1 s; a cancel asked on c stops a run executing on a.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn events_approvals_and_cancels_reach_across_instances_on_postgres() {
    let Some(db) = common::TempPgDatabase::create("glassbox_across").await else {
        return;
    };
    let outcome = guarded(across(&db.url)).await;
    db.drop_now().await;
    outcome.expect("across instances");
}

async fn across(url: &str) -> Result<(), String> {
    let counter = procs::Counter::start(Duration::ZERO);
    let allow = format!("127.0.0.1:{}", counter.port);
    let env = [
        ("GLASSBOX_DATABASE_URL", url),
        ("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str()),
        ("GLASSBOX_LEASE_S", "3"),
    ];
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let start = |name: &str| {
        Serve::start(dir.path(), &["--instance-name", name], &env)
            .map_err(|r| format!("instance {name} starts: {r:?}"))
    };
    let a = start("a")?;
    let mut b = start("b")?;
    let c = start("c")?;
    let client = reqwest::Client::new();
    let api = Api {
        token: a.sign_in(&client).await,
        client,
    };
    let mut ids = Vec::new();
    for n in [1, 2] {
        let (s, v) = api
            .call(
                &a.url,
                "POST",
                "/workflows",
                Some(reader_writer(counter.port, n, true)),
            )
            .await;
        assert_eq!(s, 201, "{v}");
        ids.push(v["id"].as_str().expect("id").to_string());
    }
    let pending_of = |run: String| {
        let api = &api;
        let base = c.url.clone();
        async move {
            for _ in 0..300 {
                let (_, v) = api.call(&base, "GET", "/approvals", None).await;
                if let Some(p) = v["pending"]
                    .as_array()
                    .and_then(|a| a.iter().find(|p| p["run_id"] == run.as_str()))
                {
                    return p["token"].as_str().expect("token").to_string();
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("run {run} never asked for approval");
        }
    };
    // A run executing on a, followed from b.
    let (s, v) = api
        .call(
            &a.url,
            "POST",
            "/runs",
            Some(json!({"workflow_id": ids[0]})),
        )
        .await;
    assert_eq!(s, 202, "{v}");
    let run = v["run_id"].as_str().expect("run id").to_string();
    let approval = pending_of(run.clone()).await;
    // What a stored so far: up to its request for approval (it waits).
    let first = read_events(
        &api,
        &b.url,
        &run,
        None,
        Duration::from_secs(10),
        |e| e.iter().any(|(_, d)| d.contains("\"ApprovalRequested\"")),
        None,
    )
    .await;
    assert!(!first.is_empty(), "b streams the events a stored so far");
    let k = first.last().map(|e| e.0).unwrap_or(0);
    // b restarts (killed); the stream resumes there after event k.
    b.kill9_in_place();
    b = start("b")?;
    let follower = {
        let api = Api {
            client: api.client.clone(),
            token: api.token.clone(),
        };
        let (base, run) = (b.url.clone(), run.clone());
        let (tx, rx) = tokio::sync::oneshot::channel();
        let follower = tokio::spawn(async move {
            // To the stream's end (the run's end).
            read_events(
                &api,
                &base,
                &run,
                Some(k),
                Duration::from_secs(30),
                |_| false,
                Some(tx),
            )
            .await
        });
        // Following before the decision, so the stream on b is live.
        rx.await.map_err(|_| "the stream on b did not open")?;
        follower
    };
    // The decision on c reaches the run waiting on a: its write arrives.
    let decided = Instant::now();
    let (s, v) = api
        .call(
            &c.url,
            "POST",
            &format!("/approvals/{approval}/approve"),
            None,
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let write = loop {
        if counter.counts().contains_key("/write/1") {
            break decided.elapsed();
        }
        if decided.elapsed() > Duration::from_secs(10) {
            return Err("the approved write never arrived".into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    eprintln!("APPROVAL ACROSS INSTANCES {} ms", write.as_millis());
    assert!(
        write < Duration::from_secs(1),
        "decision to write within 1 s: {write:?}"
    );
    let rest = follower.await.map_err(|e| e.to_string())?;
    // Every event once, in order, as a stored it.
    let all: Vec<(i64, String)> = first.into_iter().chain(rest).collect();
    let stored = read_events(
        &api,
        &a.url,
        &run,
        None,
        Duration::from_secs(10),
        |_| false,
        None,
    )
    .await;
    assert_eq!(
        all.iter().map(|e| e.0).collect::<Vec<_>>(),
        (1..=all.len() as i64).collect::<Vec<_>>(),
        "ids 1..n without gap or repeat"
    );
    assert_eq!(all, stored, "b's stream is a's stored stream");
    assert!(
        all.last().is_some_and(|e| e.1.contains("\"RunFinished\"")),
        "the stream ends with the run's end: {:?}",
        all.last()
    );
    // A cancel asked on c stops a run waiting on a.
    let (s, v) = api
        .call(
            &a.url,
            "POST",
            "/runs",
            Some(json!({"workflow_id": ids[1]})),
        )
        .await;
    assert_eq!(s, 202, "{v}");
    let second = v["run_id"].as_str().expect("run id").to_string();
    pending_of(second.clone()).await;
    let (s, v) = api
        .call(&c.url, "POST", &format!("/runs/{second}/cancel"), None)
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["cancelled"], true, "{v}");
    let asked = Instant::now();
    loop {
        let (_, v) = api
            .call(&a.url, "GET", &format!("/runs/{second}"), None)
            .await;
        if v["status"] == "cancelled" {
            break;
        }
        if asked.elapsed() > Duration::from_secs(5) {
            return Err(format!("the run on a was not cancelled: {v}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("CANCEL ACROSS INSTANCES {} ms", asked.elapsed().as_millis());
    assert!(
        !counter.counts().contains_key("/write/2"),
        "the cancelled run wrote nothing"
    );
    drop((a, c));
    Ok(())
}

/// An instance whose claim on a run was taken (here by an edit of the
/// database, as when its heartbeat stalls past the lease and another
/// instance claims the run) stops executing the run at its next heartbeat
/// and writes nothing more of it; the run, claimed again (its holder is
/// not alive), is finished and its write runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_instance_that_lost_its_claim_stops_the_run_on_postgres() {
    let Some(db) = common::TempPgDatabase::create("glassbox_fence").await else {
        return;
    };
    let outcome = guarded(lost_claim(&db.url)).await;
    db.drop_now().await;
    outcome.expect("lost claim");
}

async fn lost_claim(url: &str) -> Result<(), String> {
    use sqlx::Connection;
    let counter = procs::Counter::start(Duration::ZERO);
    let allow = format!("127.0.0.1:{}", counter.port);
    let env = [
        ("GLASSBOX_DATABASE_URL", url),
        ("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str()),
        ("GLASSBOX_LEASE_S", "3"),
    ];
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let a =
        Serve::start(dir.path(), &["--instance-name", "a"], &env).map_err(|r| format!("{r:?}"))?;
    let b =
        Serve::start(dir.path(), &["--instance-name", "b"], &env).map_err(|r| format!("{r:?}"))?;
    let client = reqwest::Client::new();
    let api = Api {
        token: a.sign_in(&client).await,
        client,
    };
    let (s, v) = api
        .call(
            &a.url,
            "POST",
            "/workflows",
            Some(reader_writer(counter.port, 7, true)),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = api
        .call(
            &a.url,
            "POST",
            "/runs",
            Some(json!({"workflow_id": v["id"]})),
        )
        .await;
    assert_eq!(s, 202, "{v}");
    let run = v["run_id"].as_str().expect("run id").to_string();
    let mut token = None;
    for _ in 0..200 {
        let (_, v) = api.call(&b.url, "GET", "/approvals", None).await;
        token = v["pending"][0]["token"].as_str().map(str::to_string);
        if token.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let token = token.ok_or("the run never asked for approval")?;
    let mut conn = sqlx::PgConnection::connect(url)
        .await
        .map_err(|e| e.to_string())?;
    // Another holder, alive as far as anyone knows (its lease runs on).
    sqlx::query("UPDATE runs SET claimed_by = 'elsewhere' WHERE id = $1")
        .bind(&run)
        .execute(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    let since = Instant::now();
    while !a
        .log()
        .contains("another instance claimed this run; it stops here")
    {
        if since.elapsed() > Duration::from_secs(5) {
            return Err(format!("a did not give the run up: {}", a.log()));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // That holder is not alive (no process holds its name): a or b,
    // whichever beats first, claims the run and resumes it.
    let since = Instant::now();
    loop {
        let (_, v) = api.call(&a.url, "GET", "/instances", None).await;
        let held: i64 = v["instances"]
            .as_array()
            .map(|l| l.iter().map(|i| i["runs_held"].as_i64().unwrap_or(0)).sum())
            .unwrap_or(0);
        if held == 1 {
            break;
        }
        if since.elapsed() > Duration::from_secs(10) {
            return Err(format!("no instance claimed the run: {v}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Decided on a: the run goes on where it is claimed now.
    let (s, v) = api
        .call(&a.url, "POST", &format!("/approvals/{token}/approve"), None)
        .await;
    assert_eq!(s, 200, "{v}");
    let since = Instant::now();
    loop {
        let (_, v) = api.call(&b.url, "GET", &format!("/runs/{run}"), None).await;
        if v["status"] == "succeeded" {
            break;
        }
        if since.elapsed() > Duration::from_secs(20) {
            return Err(format!("the run did not finish: {v}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(counter.counts().get("/write/7"), Some(&1), "one write");
    tokio::time::sleep(Duration::from_millis(500)).await;
    for (name, s) in [("a", &a), ("b", &b)] {
        let log = s.log();
        assert!(
            !log.contains("cannot store") && !log.contains("cannot record"),
            "{name} wrote nothing twice: {log}"
        );
    }
    conn.close().await.map_err(|e| e.to_string())?;
    Ok(())
}

/// `glassbox run` on the Postgres database of a serving instance: its run
/// is claimed under the process's name and lock, so the server does not
/// take it over while the command runs (the slow read it makes is made
/// once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_glassbox_run_beside_a_server_keeps_its_run_on_postgres() {
    let Some(db) = common::TempPgDatabase::create("glassbox_cli_run").await else {
        return;
    };
    let outcome = guarded(cli_run(&db.url)).await;
    db.drop_now().await;
    outcome.expect("glassbox run beside a server");
}

async fn cli_run(url: &str) -> Result<(), String> {
    // Slower than the lease and several heartbeats.
    let counter = procs::Counter::start(Duration::from_millis(4500));
    let allow = format!("127.0.0.1:{}", counter.port);
    let env = [
        ("GLASSBOX_DATABASE_URL", url),
        ("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str()),
        ("GLASSBOX_LEASE_S", "3"),
        ("RUST_LOG", "info,sqlx=warn,tower_http=warn"),
    ];
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let server =
        Serve::start(dir.path(), &["--instance-name", "a"], &env).map_err(|r| format!("{r:?}"))?;
    let file = dir.path().join("reader.json");
    std::fs::write(&file, reader_writer(counter.port, 5, false).to_string())
        .map_err(|e| e.to_string())?;
    let out = tokio::task::spawn_blocking({
        let (file, data) = (file.clone(), dir.path().to_path_buf());
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move || {
            procs::glassbox()
                .arg("run")
                .arg(&file)
                .arg("--data-dir")
                .arg(&data)
                .envs(env)
                .output()
        }
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "glassbox run: {stdout} {stderr}");
    assert_eq!(
        counter.counts().get("/read/5"),
        Some(&1),
        "the read was made once: the server took nothing over ({})",
        server.log()
    );
    assert!(
        !server.log().contains("interrupted run"),
        "the server resumed nothing: {}",
        server.log()
    );
    Ok(())
}

/// A cancel asked while the run's holder is dead and no instance has taken
/// the run over yet (a long lease: the next heartbeat is seconds away) is
/// not lost: the instance asked claims the run and ends it cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_reaches_a_run_whose_holder_died_on_postgres() {
    let Some(db) = common::TempPgDatabase::create("glassbox_orphan_cancel").await else {
        return;
    };
    let outcome = guarded(orphan_cancel(&db.url)).await;
    db.drop_now().await;
    outcome.expect("cancel of a run whose holder died");
}

/// Two instances on `url`, `a` and `b` (runs' leases of `lease_s`), and a
/// run started on `a` that waits for the approval of its write: the
/// instances, a client, the run id and the approval's token.
struct WaitingRun {
    a: Serve,
    b: Serve,
    api: Api,
    counter: procs::Counter,
    run: String,
    token: String,
    _dir: tempfile::TempDir,
}

impl WaitingRun {
    /// Cancels the run on `b`, which answers that a cancel was sent.
    async fn cancel_on_b(&self) {
        let (s, v) = self
            .api
            .call(
                &self.b.url,
                "POST",
                &format!("/runs/{}/cancel", self.run),
                None,
            )
            .await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(v["cancelled"], true, "{v}");
    }

    /// The run's approval closed with it, and its write never ran.
    async fn nothing_written(&self) {
        let (s, v) = self
            .api
            .call(
                &self.b.url,
                "POST",
                &format!("/approvals/{}/approve", self.token),
                None,
            )
            .await;
        assert_eq!(s, 409, "{v}");
        assert!(!self.counter.counts().contains_key("/write/3"), "no write");
    }
}

async fn run_waiting_on_a(url: &str, lease_s: &str) -> Result<WaitingRun, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir_path = dir.path();
    let counter = procs::Counter::start(Duration::ZERO);
    let allow = format!("127.0.0.1:{}", counter.port);
    let env = [
        ("GLASSBOX_DATABASE_URL", url),
        ("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str()),
        ("GLASSBOX_LEASE_S", lease_s),
    ];
    let a =
        Serve::start(dir_path, &["--instance-name", "a"], &env).map_err(|r| format!("{r:?}"))?;
    let b =
        Serve::start(dir_path, &["--instance-name", "b"], &env).map_err(|r| format!("{r:?}"))?;
    let client = reqwest::Client::new();
    let api = Api {
        token: a.sign_in(&client).await,
        client,
    };
    let (s, v) = api
        .call(
            &a.url,
            "POST",
            "/workflows",
            Some(reader_writer(counter.port, 3, true)),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = api
        .call(
            &a.url,
            "POST",
            "/runs",
            Some(json!({"workflow_id": v["id"]})),
        )
        .await;
    assert_eq!(s, 202, "{v}");
    let run = v["run_id"].as_str().expect("run id").to_string();
    let mut token = None;
    for _ in 0..200 {
        let (_, v) = api.call(&b.url, "GET", "/approvals", None).await;
        token = v["pending"][0]["token"].as_str().map(str::to_string);
        if token.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let token = token.ok_or("the run never asked for approval")?;
    Ok(WaitingRun {
        a,
        b,
        api,
        counter,
        run,
        token,
        _dir: dir,
    })
}

async fn orphan_cancel(url: &str) -> Result<(), String> {
    // Heartbeats 10 s apart: no takeover during the test.
    let mut w = run_waiting_on_a(url, "30").await?;
    w.a.kill9_in_place();
    w.cancel_on_b().await;
    let (_, v) = w
        .api
        .call(&w.b.url, "GET", &format!("/runs/{}", w.run), None)
        .await;
    assert_eq!(v["status"], "cancelled", "ended at once: {v}");
    w.nothing_written().await;
    Ok(())
}

/// A cancel asked while the run's holder looks alive but executes nothing
/// (frozen by SIGSTOP: it holds its lock, and the announcement waits unread)
/// is recorded on the run: the instance that takes the run over once its
/// lease passes ends it cancelled instead of resuming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_survives_a_holder_that_never_heard_it_on_postgres() {
    let Some(db) = common::TempPgDatabase::create("glassbox_frozen_cancel").await else {
        return;
    };
    let outcome = guarded(frozen_cancel(&db.url)).await;
    db.drop_now().await;
    outcome.expect("cancel of a run whose holder is frozen");
}

async fn frozen_cancel(url: &str) -> Result<(), String> {
    // Heartbeats 2 s apart: a frozen holder's lease passes in 6 s.
    let mut w = run_waiting_on_a(url, "6").await?;
    w.a.signal("STOP");
    w.cancel_on_b().await;
    let mut ended = Value::Null;
    for _ in 0..300 {
        let (_, v) = w
            .api
            .call(&w.b.url, "GET", &format!("/runs/{}", w.run), None)
            .await;
        ended = v;
        if ended["status"] == "cancelled" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    w.a.kill9_in_place();
    assert_eq!(
        ended["status"], "cancelled",
        "taken over and ended: {ended}"
    );
    assert_eq!(
        ended["error"], "cancelled while no instance executed it",
        "ended at its claim, not resumed: {ended}"
    );
    w.nothing_written().await;
    Ok(())
}

/// A clean stop (SIGTERM) hands the instance's runs over: it exits, its row
/// says it stopped (no later beat clears that), and another instance
/// claims its run well before the 30 s lease would pass, resumes it, and
/// the run's approved write runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_stop_hands_its_runs_over_on_postgres() {
    let Some(db) = common::TempPgDatabase::create("glassbox_clean_stop").await else {
        return;
    };
    let outcome = guarded(clean_stop(&db.url)).await;
    db.drop_now().await;
    outcome.expect("clean stop scenario");
}

async fn clean_stop(url: &str) -> Result<(), String> {
    let counter = procs::Counter::start(Duration::ZERO);
    let allow = format!("127.0.0.1:{}", counter.port);
    let env = [
        ("GLASSBOX_DATABASE_URL", url),
        ("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str()),
        ("GLASSBOX_LEASE_S", "30"),
    ];
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let a =
        Serve::start(dir.path(), &["--instance-name", "a"], &env).map_err(|r| format!("{r:?}"))?;
    let b =
        Serve::start(dir.path(), &["--instance-name", "b"], &env).map_err(|r| format!("{r:?}"))?;
    let client = reqwest::Client::new();
    let api = Api {
        token: a.sign_in(&client).await,
        client,
    };
    let (s, v) = api
        .call(
            &a.url,
            "POST",
            "/workflows",
            Some(reader_writer(counter.port, 4, true)),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = api
        .call(
            &a.url,
            "POST",
            "/runs",
            Some(json!({"workflow_id": v["id"]})),
        )
        .await;
    assert_eq!(s, 202, "{v}");
    let run = v["run_id"].as_str().expect("run id").to_string();
    until(
        Duration::from_secs(10),
        "the run asks for approval",
        || async { pending(&api, &b.url).await.len() == 1 },
    )
    .await;
    let stopped = Instant::now();
    assert!(a.term(Duration::from_secs(15)), "a stops cleanly");
    let instance = |v: &Value, name: &str| {
        v["instances"]
            .as_array()
            .and_then(|l| l.iter().find(|i| i["name"] == name))
            .cloned()
            .unwrap_or_default()
    };
    until(Duration::from_secs(20), "b holds a's run", || async {
        let (_, v) = api.call(&b.url, "GET", "/instances", None).await;
        instance(&v, "b")["runs_held"] == 1
    })
    .await;
    let handover = stopped.elapsed();
    assert!(
        handover < Duration::from_secs(30),
        "before the lease: {handover:?}"
    );
    let (_, v) = api.call(&b.url, "GET", "/instances", None).await;
    assert!(
        instance(&v, "a")["stopped_at"].is_string(),
        "a's stop is kept: {v}"
    );
    assert_eq!(instance(&v, "a")["runs_held"], 0, "{v}");
    let tokens = pending(&api, &b.url).await;
    assert_eq!(tokens.len(), 1, "the run waits again on b");
    let (s, v) = api
        .call(
            &b.url,
            "POST",
            &format!("/approvals/{}/approve", tokens[0]),
            None,
        )
        .await;
    assert_eq!(s, 200, "{v}");
    until(Duration::from_secs(20), "the run succeeds on b", || async {
        let (_, v) = api.call(&b.url, "GET", &format!("/runs/{run}"), None).await;
        v["status"] == "succeeded"
    })
    .await;
    assert_eq!(counter.counts().get("/write/4"), Some(&1), "one write");
    Ok(())
}

/// A run claimed under an instance's name that the instance does not
/// execute (as when its resume failed) is not renewed by its heartbeat:
/// its lease passes, another claim resumes it, and it ends once approved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimed_run_not_executing_is_not_renewed_on_postgres() {
    let Some(db) = common::TempPgDatabase::create("glassbox_not_renewed").await else {
        return;
    };
    let outcome = guarded(not_renewed(&db.url)).await;
    db.drop_now().await;
    outcome.expect("not renewed scenario");
}

async fn not_renewed(url: &str) -> Result<(), String> {
    use sqlx::Connection;
    let counter = procs::Counter::start(Duration::ZERO);
    let allow = format!("127.0.0.1:{}", counter.port);
    let env = [
        ("GLASSBOX_DATABASE_URL", url),
        ("GLASSBOX_HTTP_ALLOW_HOSTS", allow.as_str()),
        ("GLASSBOX_LEASE_S", "3"),
    ];
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let a =
        Serve::start(dir.path(), &["--instance-name", "a"], &env).map_err(|r| format!("{r:?}"))?;
    let b =
        Serve::start(dir.path(), &["--instance-name", "b"], &env).map_err(|r| format!("{r:?}"))?;
    let client = reqwest::Client::new();
    let api = Api {
        token: a.sign_in(&client).await,
        client,
    };
    let (s, v) = api
        .call(
            &b.url,
            "POST",
            "/workflows",
            Some(reader_writer(counter.port, 5, true)),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = api
        .call(
            &b.url,
            "POST",
            "/runs",
            Some(json!({"workflow_id": v["id"]})),
        )
        .await;
    assert_eq!(s, 202, "{v}");
    let run = v["run_id"].as_str().expect("run id").to_string();
    until(
        Duration::from_secs(10),
        "the run asks for approval",
        || async { pending(&api, &a.url).await.len() == 1 },
    )
    .await;
    // a's name claims b's run, which a does not execute (b gives it up at
    // its next beat).
    let mut conn = sqlx::PgConnection::connect(url)
        .await
        .map_err(|e| e.to_string())?;
    sqlx::query("UPDATE runs SET claimed_by = 'a' WHERE id = $1")
        .bind(&run)
        .execute(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    until(Duration::from_secs(10), "b gives the run up", || async {
        b.log().contains("another instance claimed this run")
    })
    .await;
    let token = pending(&api, &a.url).await.remove(0);
    let (s, v) = api
        .call(&a.url, "POST", &format!("/approvals/{token}/approve"), None)
        .await;
    assert_eq!(s, 200, "{v}");
    until(
        Duration::from_secs(30),
        "the run is resumed and succeeds",
        || async {
            let (_, v) = api.call(&a.url, "GET", &format!("/runs/{run}"), None).await;
            v["status"] == "succeeded"
        },
    )
    .await;
    assert_eq!(counter.counts().get("/write/5"), Some(&1), "one write");
    conn.close().await.map_err(|e| e.to_string())?;
    Ok(())
}
