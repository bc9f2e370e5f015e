//! Shared helpers of the server's integration tests.

#![allow(dead_code)]

use sqlx::Connection;

pub mod api;

/// A fresh Postgres database on GLASSBOX_TEST_POSTGRES_URL's server, made
/// for one test and dropped by [`TempPgDatabase::drop_now`].
pub struct TempPgDatabase {
    pub url: String,
    name: String,
    admin: sqlx::PgConnection,
}

impl TempPgDatabase {
    /// `None` (with a note on stderr) when GLASSBOX_TEST_POSTGRES_URL is not
    /// set; `cargo xtask test` and CI always set it.
    pub async fn create(prefix: &str) -> Option<Self> {
        let Ok(admin_url) = std::env::var("GLASSBOX_TEST_POSTGRES_URL") else {
            eprintln!("GLASSBOX_TEST_POSTGRES_URL is not set: Postgres test not run (cargo xtask test sets it)");
            return None;
        };
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_nanos();
        let name = format!("{prefix}_{}_{nanos}", std::process::id());
        let mut admin = sqlx::PgConnection::connect(&admin_url)
            .await
            .expect("admin connection to GLASSBOX_TEST_POSTGRES_URL");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await
            .expect("create test database");
        let base = admin_url
            .rsplit_once('/')
            .map(|(base, _)| base.to_string())
            .expect("URL has a database path");
        Some(Self {
            url: format!("{base}/{name}"),
            name,
            admin,
        })
    }

    /// Drops the database (closing any connection still open to it).
    pub async fn drop_now(mut self) {
        sqlx::query(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ))
        .execute(&mut self.admin)
        .await
        .expect("drop test database");
    }
}

/// A server state on a fresh SQLite data dir with two workspaces: the
/// bootstrapped `default` (admin, signed in: `admin_token`) and `other`
/// (user bob, token `bob-token`).
pub struct TwoWorkspaces {
    pub state: glassbox_server::AppState,
    pub db: glassbox_server::Store,
    pub admin_token: String,
    pub admin_user: String,
    pub dir: tempfile::TempDir,
}

pub const BOB_TOKEN: &str = "bob-token";

impl TwoWorkspaces {
    pub async fn new(max_output_bytes: usize) -> Self {
        Self::on(None, max_output_bytes).await
    }

    /// The same on `database_url` (None: a SQLite file in the new data
    /// dir).
    pub async fn on(database_url: Option<&str>, max_output_bytes: usize) -> Self {
        use glassbox_server::auth::{bootstrap, exchange};
        let dir = tempfile::tempdir().expect("tmp");
        let url = database_url.map_or_else(
            || glassbox_server::Config::default_database_url(dir.path()),
            str::to_string,
        );
        let db = glassbox_server::Store::open(&url).await.expect("open");
        let signin = bootstrap(&db).await.expect("bootstrap");
        let (admin_token, admin_user) = exchange(&db, &signin).await.expect("session");
        db.ensure_workspace("other", "Other").await.expect("ws");
        add_member(&db, "other", "bob", "Bob", "admin", BOB_TOKEN).await;
        let config = glassbox_server::Config {
            database_url: url,
            ..Self::config(dir.path(), max_output_bytes)
        };
        let state = glassbox_server::AppState::new(db.clone(), config).expect("state");
        Self {
            state,
            db,
            admin_token,
            admin_user,
            dir,
        }
    }

    /// `user` made a member of `default` with `role`, signed in: their
    /// session token (`{user}-token`).
    pub async fn member(&self, user: &str, role: &str) -> String {
        let token = format!("{user}-token");
        add_member(&self.db, "default", user, user, role, &token).await;
        token
    }

    pub fn config(dir: &std::path::Path, max_output_bytes: usize) -> glassbox_server::Config {
        glassbox_server::Config {
            bind: [127, 0, 0, 1].into(),
            port: 0,
            data_dir: dir.to_path_buf(),
            database_url: glassbox_server::Config::default_database_url(dir),
            static_dir: None,
            max_output_bytes,
            secret_key: None,
            traces_url: glassbox_server::config::DEFAULT_TRACES_URL.into(),
        }
    }
}

/// `user` (named `name`) made a member of `workspace` with `role`, signed
/// in with the session `token`.
pub async fn add_member(
    db: &glassbox_server::Store,
    workspace: &str,
    user: &str,
    name: &str,
    role: &str,
    token: &str,
) {
    use glassbox_server::auth::hash_token;
    db.ensure_user(user, name).await.expect("user");
    db.add_membership(workspace, user, role)
        .await
        .expect("member");
    db.insert_token(&hash_token(token), user, "session", None)
        .await
        .expect("token");
}

/// The repository's `examples/`.
pub fn examples_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// The shipped example workflows, as the server reads them at start.
pub fn shipped_examples() -> Vec<node_runtime::graph::Workflow> {
    glassbox_server::examples::read_dir(&examples_dir())
}

/// One API request in-process: (status, content type, body bytes).
pub async fn request(
    state: &glassbox_server::AppState,
    method: &str,
    path: &str,
    token: &str,
    body: Option<serde_json::Value>,
) -> (axum::http::StatusCode, Option<String>, Vec<u8>) {
    request_as(state, method, path, Some(token), None, body).await
}

/// [`request`] with a choice of headers: the bearer `token` (None: no
/// `Authorization` header) and the `workspace` asked for
/// (`X-Glassbox-Workspace`; None: the caller's first).
pub async fn request_as(
    state: &glassbox_server::AppState,
    method: &str,
    path: &str,
    token: Option<&str>,
    workspace: Option<&str>,
    body: Option<serde_json::Value>,
) -> (axum::http::StatusCode, Option<String>, Vec<u8>) {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let mut req = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json");
    if let Some(token) = token {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    if let Some(workspace) = workspace {
        req = req.header("x-glassbox-workspace", workspace);
    }
    let req = req
        .body(body.map_or_else(axum::body::Body::empty, |b| {
            axum::body::Body::from(b.to_string())
        }))
        .expect("request");
    let res = glassbox_server::app(state.clone())
        .oneshot(req)
        .await
        .expect("infallible");
    let status = res.status();
    let content_type = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let bytes = res.into_body().collect().await.expect("body").to_bytes();
    (status, content_type, bytes.to_vec())
}

/// Creates `workflow` and starts a run of it in-process; returns the run id.
pub async fn start_run(
    state: &glassbox_server::AppState,
    token: &str,
    workflow: serde_json::Value,
) -> String {
    let (s, _, body) = request(state, "POST", "/api/v1/workflows", token, Some(workflow)).await;
    assert_eq!(
        s,
        axum::http::StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let created: serde_json::Value = serde_json::from_slice(&body).expect("json");
    let wf = created["id"].as_str().expect("workflow id").to_string();
    let (s, _, body) = request(
        state,
        "POST",
        "/api/v1/runs",
        token,
        Some(serde_json::json!({"workflow_id": wf})),
    )
    .await;
    assert_eq!(
        s,
        axum::http::StatusCode::ACCEPTED,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let started: serde_json::Value = serde_json::from_slice(&body).expect("json");
    started["run_id"].as_str().expect("run id").to_string()
}

/// A scripted agent that calls the calculator and then `write_file` (a
/// write, so the run waits for approval), feeding an Output node.
pub fn approval_workflow() -> serde_json::Value {
    serde_json::json!({
        "format_version": 1, "id": "ignored", "name": "Writes a note", "revision": 0,
        "nodes": [
            {"id": "agent", "label": "Agent", "position": {"x": 0, "y": 0}, "kind": "agent", "config": {
                "prompt": "Write the note.",
                "tools": [{"tool": "write_file@1.0.0"}, {"tool": "calculator@1.0.0"}],
                "provider": {"kind": "scripted", "script": {"turns": [
                    {"tool_calls": [{"name": "calculator", "arguments": {"expression": "1+1"}}, {"name": "write_file", "arguments": {"path": "note.txt", "content": "hi"}}]},
                    {"text": "Written."}]}}}},
            {"id": "out", "label": "Out", "position": {"x": 300, "y": 0}, "kind": "output", "config": {"fields": ["answer"]}}
        ],
        "edges": [{"id": "e", "source": {"node": "agent", "handle": "response"}, "target": {"node": "out", "handle": "answer"}}]
    })
}

/// A workflow whose Tool node's output is larger than a 1 KiB output cap,
/// so it is stored as a blob.
pub fn big_output_workflow() -> serde_json::Value {
    serde_json::json!({
        "format_version": 1, "id": "big", "name": "big output", "revision": 0,
        "nodes": [
            {"id": "big", "kind": "tool", "config": {"tool": "json_query@1.0.0", "inputs": {
                "program": {"source": "fixed", "value": "[range(1500)]"},
                "data": {"source": "fixed", "value": null}}}},
            {"id": "out", "kind": "output", "config": {"fields": ["x"]}}
        ],
        "edges": [{"id": "e", "source": {"node": "big", "handle": "output"}, "target": {"node": "out", "handle": "x"}}]
    })
}
