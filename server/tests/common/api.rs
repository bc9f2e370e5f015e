//! The server's API in-process, as the tests call it: one request as
//! someone, `(status, JSON body)`, and the steps the tests share (polling a
//! run to its end, saving and running a workflow, suites, forks).

use std::sync::Arc;
use std::time::{Duration, Instant};

use node_runtime::wire::SuiteRunView;
use serde_json::{json, Value};

/// The output cap of the servers the tests start.
pub const MAX_OUTPUT_BYTES: usize = 2 * 1024 * 1024;

/// Someone calling the API: their token (empty: none sent) and the
/// workspace they send (`X-Glassbox-Workspace`; None: their first).
#[derive(Clone)]
pub struct User {
    pub token: String,
    pub ws: Option<String>,
}

impl User {
    pub fn new(token: &str) -> Self {
        Self {
            token: token.into(),
            ws: None,
        }
    }

    /// The same user sending `X-Glassbox-Workspace: ws`.
    pub fn r#in(&self, ws: &str) -> Self {
        Self {
            token: self.token.clone(),
            ws: Some(ws.into()),
        }
    }
}

/// The API of a server state (in-process), signed in as its admin.
#[derive(Clone)]
pub struct Api {
    pub state: glassbox_server::AppState,
    pub db: glassbox_server::Store,
    /// The bootstrapped local admin.
    pub admin: User,
    /// The data dir (the CLI's `--data-dir`).
    pub dir: std::path::PathBuf,
    _dir: Option<Arc<tempfile::TempDir>>,
}

impl Api {
    /// A server on a fresh SQLite data dir with two workspaces
    /// ([`super::TwoWorkspaces`]).
    pub async fn start() -> Api {
        Self::start_on(None).await
    }

    /// The same on `database_url` (None: a SQLite file in a new data dir).
    pub async fn start_on(database_url: Option<&str>) -> Api {
        let w = super::TwoWorkspaces::on(database_url, MAX_OUTPUT_BYTES).await;
        Api {
            state: w.state,
            db: w.db,
            admin: User::new(&w.admin_token),
            dir: w.dir.path().to_path_buf(),
            _dir: Some(Arc::new(w.dir)),
        }
    }

    /// A server on `database_url` (its files in `dir`); `token`: a session
    /// of an earlier server on it, else the first start's admin signs in.
    pub async fn open(dir: &std::path::Path, database_url: &str, token: Option<String>) -> Api {
        use glassbox_server::auth::{bootstrap, exchange};
        let db = glassbox_server::Store::open(database_url)
            .await
            .expect("open");
        let token = match token {
            Some(t) => t,
            None => {
                let signin = bootstrap(&db).await.expect("bootstrap");
                exchange(&db, &signin).await.expect("session").0
            }
        };
        let config = glassbox_server::Config {
            database_url: database_url.into(),
            ..super::TwoWorkspaces::config(dir, MAX_OUTPUT_BYTES)
        };
        Api {
            state: glassbox_server::AppState::new(db.clone(), config).expect("state"),
            db,
            admin: User::new(&token),
            dir: dir.to_path_buf(),
            _dir: None,
        }
    }

    /// One request to `/api/v1{path}` as `who`: (status, JSON body or null).
    pub async fn call_as(
        &self,
        who: &User,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let token = (!who.token.is_empty()).then_some(who.token.as_str());
        let (status, _, bytes) = super::request_as(
            &self.state,
            method,
            &format!("/api/v1{path}"),
            token,
            who.ws.as_deref(),
            body,
        )
        .await;
        (
            status.as_u16(),
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// One request as the admin.
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        self.call_as(&self.admin, method, path, body).await
    }

    /// Polls `path` until `done` says so (60 s at most).
    pub async fn wait_for(&self, path: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (s, item) = self.call("GET", path, None).await;
            assert_eq!(s, 200, "{item}");
            if done(&item) {
                return item;
            }
            assert!(Instant::now() < deadline, "{path} stuck: {item}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Polls the run until `done` says so (60 s at most).
    pub async fn wait_for_run(&self, run_id: &str, done: impl Fn(&Value) -> bool) -> Value {
        self.wait_for(&format!("/runs/{run_id}"), done).await
    }

    /// Polls the run until it has ended (succeeded, failed or cancelled).
    pub async fn finished(&self, run_id: &str) -> Value {
        self.wait_for_run(run_id, |r| {
            matches!(
                r["status"].as_str(),
                Some("succeeded" | "failed" | "cancelled")
            )
        })
        .await
    }

    /// The connection `counter`: http, to the loopback endpoint on `port`
    /// (the tests' counting endpoint).
    pub async fn add_counter(&self, port: u16) {
        let (s, created) = self
            .call(
                "POST",
                "/connections",
                Some(json!({"name": "counter", "config": {"kind": "http", "base_url": format!("http://127.0.0.1:{port}")}})),
            )
            .await;
        assert_eq!(s, 201, "{created}");
    }

    /// Saves a workflow; returns its id.
    pub async fn workflow(&self, workflow: Value) -> String {
        let (s, created) = self.call("POST", "/workflows", Some(workflow)).await;
        assert_eq!(s, 201, "{created}");
        created["id"].as_str().expect("workflow id").to_string()
    }

    /// Saves `workflow` as the next revision of `id` (based on `base`).
    pub async fn revise(&self, id: &str, base: i64, mut workflow: Value) {
        workflow["id"] = json!(id);
        let (s, saved) = self
            .call(
                "PUT",
                &format!("/workflows/{id}"),
                Some(json!({"base_revision": base, "workflow": workflow})),
            )
            .await;
        assert_eq!(s, 200, "{saved}");
    }

    /// Runs a saved workflow with `inputs` to its end, which must be a
    /// success; returns the run id.
    pub async fn recorded_run(&self, workflow_id: &str, inputs: Value) -> String {
        let (s, started) = self
            .call(
                "POST",
                "/runs",
                Some(json!({"workflow_id": workflow_id, "inputs": inputs})),
            )
            .await;
        assert_eq!(s, 202, "{started}");
        let run_id = started["run_id"].as_str().expect("run id").to_string();
        let run = self.finished(&run_id).await;
        assert_eq!(run["status"], "succeeded", "{run}");
        run_id
    }

    /// Forks `origin` with `body`; returns the fork's id.
    pub async fn fork(&self, origin: &str, body: Value) -> String {
        let (s, started) = self
            .call("POST", &format!("/runs/{origin}/fork"), Some(body))
            .await;
        assert_eq!(s, 202, "{started}");
        assert_eq!(started["fork_of"], origin);
        started["run_id"].as_str().expect("fork id").to_string()
    }

    /// The diff of `run` and `other`.
    pub async fn diff(&self, run: &str, other: &str) -> Value {
        let (s, diff) = self
            .call("GET", &format!("/runs/{run}/diff/{other}"), None)
            .await;
        assert_eq!(s, 200, "{diff}");
        diff
    }

    /// Creates a suite; returns its id.
    pub async fn suite(&self, body: Value) -> String {
        let (s, created) = self.call("POST", "/suites", Some(body)).await;
        assert_eq!(s, 201, "{created}");
        created["id"].as_str().expect("suite id").to_string()
    }

    /// Runs a suite through the API to its end; returns the suite run.
    pub async fn run_suite(&self, suite_id: &str, body: Value) -> SuiteRunView {
        let (s, started) = self
            .call("POST", &format!("/suites/{suite_id}/runs"), Some(body))
            .await;
        assert_eq!(s, 202, "{started}");
        assert_eq!(started["status"], "running", "{started}");
        let id = started["id"].as_str().expect("suite run id").to_string();
        let done = self
            .wait_for(&format!("/suite-runs/{id}"), |r| r["status"] != "running")
            .await;
        serde_json::from_value(done).expect("a SuiteRunView")
    }
}

/// A scripted turn reading `path` of the connection `counter`.
pub fn read(path: &str) -> Value {
    json!({"tool_calls": [{"name": "http_request", "arguments": {"connection": "counter", "url": path}}]})
}

/// A scripted turn POSTing to `path` of the connection `counter` (a write).
pub fn write(path: &str) -> Value {
    json!({"tool_calls": [{"name": "http_request", "arguments": {"connection": "counter", "url": path, "method": "POST", "body": {"note": "hi"}}}]})
}

/// A scripted turn answering `answer`.
pub fn text(answer: &str) -> Value {
    json!({"text": answer})
}
