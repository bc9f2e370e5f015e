//! Process guards, the server launcher and the WebDriver session.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A child process (and its process group) killed on drop.
pub struct ProcessGuard {
    name: &'static str,
    child: Child,
}

impl ProcessGuard {
    /// Spawns `cmd` as the leader of a new process group.
    pub fn spawn(name: &'static str, cmd: &mut Command) -> Result<Self, String> {
        cmd.process_group(0);
        let child = cmd
            .spawn()
            .map_err(|err| format!("cannot start {name} ({cmd:?}): {err}"))?;
        Ok(Self { name, child })
    }

    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Fails if the process has already exited.
    pub fn check_alive(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Err(format!("{} exited early: {status}", self.name)),
            Ok(None) => Ok(()),
            Err(err) => Err(format!("cannot query {}: {err}", self.name)),
        }
    }
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: kill(2) with a negative pid signals the process group we
        // created in `spawn`; it touches no memory of ours.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// The workspace root (the parent of this crate's directory). Cargo sets
/// `CARGO_MANIFEST_DIR` when it runs a test, which is right even when the
/// binary was built from another checkout sharing the target dir; the
/// compile-time value is the fallback.
pub fn workspace_root() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest.parent().map(Path::to_path_buf).unwrap_or(manifest)
}

/// Where tests put screenshots and other artifacts: `<workspace>/target/test-artifacts`.
pub fn artifacts_dir() -> PathBuf {
    let dir = workspace_root().join("target").join("test-artifacts");
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// The `glassbox` binary: `GLASSBOX_BIN`, else next to this test executable's
/// `deps/` directory (where `cargo test --workspace` builds it).
pub fn glassbox_bin() -> Result<PathBuf, String> {
    if let Ok(path) = std::env::var("GLASSBOX_BIN") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("test executable has no profile directory")?;
    let bin = profile_dir.join("glassbox");
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!(
            "the glassbox binary is not at {}; build it with `cargo build -p glassbox-server` \
             or set GLASSBOX_BIN (cargo xtask test does both)",
            bin.display()
        ))
    }
}

/// A free loopback port (bound once, then released for the child to take).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("loopback bind for a free port");
    listener
        .local_addr()
        .expect("bound socket has an address")
        .port()
}

/// A running `glassbox serve` with its own temporary data directory.
pub struct Server {
    pub url: String,
    /// The one-time sign-in link the server printed.
    pub signin_url: String,
    pub data_dir: tempfile::TempDir,
    _process: ProcessGuard,
}

impl Server {
    /// Starts the server on a free port and waits for its "ready" line.
    /// `static_dir` is the built app (`dist/`), or `None` for the API only.
    pub fn start(static_dir: Option<&Path>) -> Result<Self, String> {
        let data_dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        Self::start_in(data_dir, static_dir, &[])
    }

    /// Starts the server on an existing data dir (a restart) with extra
    /// environment variables.
    pub fn start_in(
        data_dir: tempfile::TempDir,
        static_dir: Option<&Path>,
        env: &[(&str, &str)],
    ) -> Result<Self, String> {
        Self::start_with_stderr(data_dir, static_dir, env, Stdio::inherit())
    }

    /// Like [`Server::start_in`], with the server's log (stderr) going to
    /// `stderr` (a file, for tests that read the log). `env` comes last, so
    /// it may override RUST_LOG.
    pub fn start_with_stderr(
        data_dir: tempfile::TempDir,
        static_dir: Option<&Path>,
        env: &[(&str, &str)],
        stderr: Stdio,
    ) -> Result<Self, String> {
        Self::launch(data_dir, static_dir, env, stderr, 0)
    }

    /// `kill -9` and start again on the same data dir and the same port
    /// (so a page open in the browser finds it again), with the app served
    /// from `static_dir`.
    pub fn restart_same_port(self, static_dir: Option<&Path>) -> Result<Self, String> {
        let port: u16 = self
            .url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("no port in {}", self.url))?;
        let data_dir = self.kill9();
        Self::launch(data_dir, static_dir, &[], Stdio::inherit(), port)
    }

    fn launch(
        data_dir: tempfile::TempDir,
        static_dir: Option<&Path>,
        env: &[(&str, &str)],
        stderr: Stdio,
        port: u16,
    ) -> Result<Self, String> {
        let mut cmd = Command::new(glassbox_bin()?);
        cmd.arg("serve")
            .arg("--port")
            .arg(port.to_string())
            .arg("--data-dir")
            .arg(data_dir.path())
            .arg("--static-dir")
            .arg(static_dir.map_or_else(|| data_dir.path().join("no-app"), Path::to_path_buf))
            .env_remove("GLASSBOX_DATABASE_URL")
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(stderr);
        let mut process = ProcessGuard::spawn("glassbox serve", &mut cmd)?;
        let stdout = process
            .child_mut()
            .stdout
            .take()
            .ok_or("server stdout was not captured")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(rest) = line.split(" is ready at ").nth(1) {
                    let _ = tx.send(("ready", rest.trim().trim_end_matches('/').to_string()));
                } else if let Some(link) = line
                    .split_whitespace()
                    .find(|w| w.contains("/signin?token="))
                {
                    let _ = tx.send(("signin", link.to_string()));
                }
            }
        });
        let (mut url, mut signin_url) = (None, None);
        while url.is_none() || signin_url.is_none() {
            let (kind, value) = rx.recv_timeout(Duration::from_secs(60)).map_err(|_| {
                "glassbox serve did not print its ready line and sign-in link within 60 s"
                    .to_string()
            })?;
            match kind {
                "ready" => url = Some(value),
                _ => signin_url = Some(value),
            }
        }
        Ok(Self {
            url: url.unwrap_or_default(),
            signin_url: signin_url.unwrap_or_default(),
            data_dir,
            _process: process,
        })
    }

    /// Exchanges the printed one-time sign-in link for a session token.
    pub fn sign_in(&self) -> String {
        let signin = self.signin_url.split("token=").nth(1).expect("token");
        let (s, body) = http(
            &self.url,
            "POST",
            "/api/v1/auth/exchange",
            None,
            Some(&serde_json::json!({"token": signin})),
        );
        assert_eq!(s, 200, "{body}");
        json(&body)["session_token"]
            .as_str()
            .expect("session")
            .to_string()
    }

    /// `PUT /secrets/{scope}/{name}` with `value`.
    pub fn set_secret(&self, token: &str, scope: &str, name: &str, value: &str) {
        let (s, body) = http(
            &self.url,
            "PUT",
            &format!("/api/v1/secrets/{scope}/{name}"),
            Some(token),
            Some(&serde_json::json!({"value": value})),
        );
        assert_eq!(s, 204, "{scope}/{name}: {body}");
    }

    /// `POST /workflows`; returns the new workflow's id.
    pub fn create_workflow(&self, token: &str, workflow: &serde_json::Value) -> String {
        let (s, body) = http(
            &self.url,
            "POST",
            "/api/v1/workflows",
            Some(token),
            Some(workflow),
        );
        assert_eq!(s, 201, "{body}");
        json(&body)["id"].as_str().expect("workflow id").to_string()
    }

    /// `POST /connections` of `config` named `name` (it must be created).
    pub fn add_connection(&self, token: &str, name: &str, config: serde_json::Value) {
        let (s, body) = http(
            &self.url,
            "POST",
            "/api/v1/connections",
            Some(token),
            Some(&serde_json::json!({"name": name, "config": config})),
        );
        assert_eq!(s, 201, "{body}");
    }

    /// `POST /approvals/{token}/approve` (it must be accepted).
    pub fn approve(&self, token: &str, approval: &str) {
        let (s, body) = http(
            &self.url,
            "POST",
            &format!("/api/v1/approvals/{approval}/approve"),
            Some(token),
            None,
        );
        assert_eq!(s, 200, "{body}");
    }

    /// `POST /runs` of a saved workflow; returns the run id.
    pub fn start_run(&self, token: &str, workflow_id: &str) -> String {
        let (s, body) = http(
            &self.url,
            "POST",
            "/api/v1/runs",
            Some(token),
            Some(&serde_json::json!({"workflow_id": workflow_id})),
        );
        assert_eq!(s, 202, "{body}");
        json(&body)["run_id"].as_str().expect("run id").to_string()
    }

    /// Polls `GET /runs/{id}` until the run has ended (30 s at most).
    pub fn finished_run(&self, token: &str, run_id: &str) -> serde_json::Value {
        for _ in 0..600 {
            let (_, body) = http(
                &self.url,
                "GET",
                &format!("/api/v1/runs/{run_id}"),
                Some(token),
                None,
            );
            let v = json(&body);
            if matches!(
                v["status"].as_str(),
                Some("succeeded" | "failed" | "cancelled")
            ) {
                return v;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("run {run_id} did not finish");
    }

    /// Every invocation record of `run_id` with its payloads, as (route,
    /// body) pairs: the list (which has none) and each record's item route.
    pub fn invocation_records(&self, token: &str, run_id: &str) -> Vec<(String, String)> {
        let list = format!("/api/v1/invocations?run_id={run_id}&limit=200");
        let (s, body) = http(&self.url, "GET", &list, Some(token), None);
        assert_eq!(s, 200, "{body}");
        let ids: Vec<String> = json(&body)["invocations"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|i| i["id"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let mut out = vec![(list, body)];
        for id in ids {
            // Ids hold `/`: sent percent-encoded, as one path segment.
            let path = format!("/api/v1/invocations/{}", id.replace('/', "%2F"));
            let (s, body) = http(&self.url, "GET", &path, Some(token), None);
            assert_eq!(s, 200, "{body}");
            out.push((path, body));
        }
        out
    }

    /// `kill -9` and wait; the data dir survives for a restart.
    pub fn kill9(self) -> tempfile::TempDir {
        let Self {
            data_dir, _process, ..
        } = self;
        drop(_process);
        data_dir
    }

    /// Sends SIGTERM (a service manager's stop).
    pub fn terminate(&mut self) {
        let pid = self._process.child_mut().id() as libc::pid_t;
        // SAFETY: kill(2) on our own child's pid; it touches no memory of ours.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }

    /// Waits until the server process exits on its own (e.g. an injected
    /// crash); false if it still runs after `timeout`.
    pub fn wait_for_exit(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self._process.check_alive().is_err() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

/// Chromium flags that keep it quiet on a closed network (TOOLCHAIN.md).
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,800",
];

fn find_program(env: &str, candidates: &[&str]) -> Result<PathBuf, String> {
    if let Ok(path) = std::env::var(env) {
        return Ok(PathBuf::from(path));
    }
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "none of {candidates:?} exists; install Debian's chromium and chromium-driver \
                 (cargo xtask test does) or set {env}"
            )
        })
}

/// chromedriver's command that returns (and clears) the browser's console
/// log, which `goog:loggingPrefs` asks it to keep; W3C WebDriver has none.
#[derive(Debug)]
struct BrowserLog;

impl fantoccini::wd::WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _url: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(r#"{"type":"browser"}"#.into()))
    }
}

/// chromedriver plus one WebDriver session with headless Chromium.
pub struct Browser {
    pub client: fantoccini::Client,
    _user_data: tempfile::TempDir,
    _driver: ProcessGuard,
}

impl Browser {
    pub async fn start() -> Result<Self, String> {
        Self::start_with(&[]).await
    }

    /// [`Browser::start`] with extra Chromium flags.
    pub async fn start_with(extra_flags: &[&str]) -> Result<Self, String> {
        let chromedriver = find_program("CHROMEDRIVER", &["/usr/bin/chromedriver"])?;
        let chromium = find_program(
            "CHROMIUM",
            &["/usr/bin/chromium", "/usr/bin/chromium-browser"],
        )?;
        let port = free_port();
        let mut cmd = Command::new(chromedriver);
        cmd.arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut driver = ProcessGuard::spawn("chromedriver", &mut cmd)?;
        let webdriver_url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            driver.check_alive()?;
            if Instant::now() > deadline {
                return Err("chromedriver did not listen within 30 s".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let user_data = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut args: Vec<String> = CHROMIUM_FLAGS
            .iter()
            .chain(extra_flags)
            .map(|s| s.to_string())
            .collect();
        args.push(format!("--user-data-dir={}", user_data.path().display()));
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({ "binary": chromium, "args": args }),
        );
        // Keep the console, so `close` can check that the app logged no error.
        caps.insert(
            "goog:loggingPrefs".into(),
            serde_json::json!({ "browser": "ALL" }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = fantoccini::ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&webdriver_url)
            .await
            .map_err(|err| format!("cannot open a WebDriver session: {err}"))?;
        Ok(Self {
            client,
            _user_data: user_data,
            _driver: driver,
        })
    }

    /// Navigates to `url`.
    pub async fn open(&self, url: &str) -> Result<(), String> {
        self.client
            .goto(url)
            .await
            .map_err(|e| format!("cannot open {url}: {e}"))
    }

    /// Saves a PNG screenshot under the artifacts directory.
    pub async fn screenshot(&self, name: &str) -> Result<PathBuf, String> {
        let png = self
            .client
            .screenshot()
            .await
            .map_err(|err| format!("screenshot failed: {err}"))?;
        let path = artifacts_dir().join(format!("{name}.png"));
        std::fs::write(&path, png)
            .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
        Ok(path)
    }

    /// Signs in through the server's printed link, as a user would, and
    /// returns the session token the app stored.
    pub async fn sign_in(&self, server: &Server) -> Result<String, String> {
        self.open(&server.signin_url).await?;
        wait_for_text(
            &self.client,
            "[data-testid=signin-ok]",
            Duration::from_secs(30),
        )
        .await?;
        self.client
            .execute("return localStorage.getItem('glassbox.session')", vec![])
            .await
            .map_err(|e| e.to_string())?
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| "no session in localStorage after signing in".to_string())
    }

    /// The errors the pages logged to the console since the last call:
    /// uncaught exceptions, wasm traps, `console.error`. A response with an
    /// error status the app handles (a 409 on a stale save, say) is logged
    /// by Chromium as "Failed to load resource"; those are left out.
    pub async fn console_errors(&self) -> Result<Vec<String>, String> {
        let log = self
            .client
            .issue_cmd(BrowserLog)
            .await
            .map_err(|e| format!("cannot read the browser log: {e}"))?;
        Ok(log
            .as_array()
            .into_iter()
            .flatten()
            .filter(|entry| entry["level"] == "SEVERE")
            .filter_map(|entry| entry["message"].as_str())
            .filter(|message| !message.contains("Failed to load resource"))
            .map(str::to_string)
            .collect())
    }

    /// Ends the WebDriver session (Chromium exits); chromedriver is killed
    /// on drop. Panics if a page logged an error to the console (see
    /// [`Browser::console_errors`]); a test that provokes one on purpose
    /// uses [`Browser::close_after_console_errors`].
    pub async fn close(self) {
        match self.end().await {
            Ok(errors) if !errors.is_empty() => {
                panic!(
                    "the app logged errors to the console:\n{}",
                    errors.join("\n")
                )
            }
            Ok(_) => {}
            Err(e) => panic!("{e}"),
        }
    }

    /// [`Browser::close`] for a test that makes the app log errors on
    /// purpose: returns them.
    pub async fn close_after_console_errors(self) -> Vec<String> {
        self.end().await.unwrap_or_default()
    }

    /// Reads the console errors, then ends the session.
    async fn end(self) -> Result<Vec<String>, String> {
        let errors = self.console_errors().await;
        let _ = self.client.close().await;
        errors
    }
}

/// Waits until the element matched by `css` has non-empty text, and returns it.
pub async fn wait_for_text(
    client: &fantoccini::Client,
    css: &str,
    timeout: Duration,
) -> Result<String, String> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(el) = client.find(fantoccini::Locator::Css(css)).await {
            if let Ok(text) = el.text().await {
                if !text.trim().is_empty() {
                    return Ok(text);
                }
            }
        }
        if Instant::now() > deadline {
            let source = client.source().await.unwrap_or_default();
            return Err(format!(
                "no text in `{css}` after {timeout:?}; page source starts: {}",
                source.chars().take(2000).collect::<String>()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The built app (`dist/`), from `GLASSBOX_STATIC_DIR` or the workspace root.
pub fn built_app_dir() -> Result<PathBuf, String> {
    let dir = std::env::var("GLASSBOX_STATIC_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| workspace_root().join("dist"));
    if dir.join("index.html").is_file() {
        Ok(dir)
    } else {
        Err(format!(
            "the app is not built ({} has no index.html); run `cargo xtask test`, which builds it \
             before the browser tests",
            dir.display()
        ))
    }
}

/// False only when GLASSBOX_SKIP_BROWSER=1 (`cargo xtask test --skip-browser`);
/// says so on stderr, so a skipped browser test is never silent.
pub fn browser_tests_enabled() -> bool {
    let skip = std::env::var("GLASSBOX_SKIP_BROWSER").is_ok_and(|v| v == "1");
    if skip {
        eprintln!("GLASSBOX_SKIP_BROWSER=1: browser test not run");
    }
    !skip
}

/// The built app served by a real `glassbox serve`, and a browser to drive
/// it; `None` (said on stderr) when GLASSBOX_SKIP_BROWSER=1.
pub async fn app_and_browser() -> Option<(Server, Browser)> {
    app_and_browser_with(&[]).await
}

/// [`app_and_browser`] with extra environment variables for the server.
pub async fn app_and_browser_with(env: &[(&str, &str)]) -> Option<(Server, Browser)> {
    app_and_browser_flags(env, &[]).await
}

/// [`app_and_browser_with`] and the browser signed in to the server, with
/// the session token; `None` when browser tests are off. Panics when the
/// sign-in fails (after closing the browser).
pub async fn app_and_browser_signed_in(env: &[(&str, &str)]) -> Option<(Server, Browser, String)> {
    let (server, browser) = app_and_browser_with(env).await?;
    match browser.sign_in(&server).await {
        Ok(token) => Some((server, browser, token)),
        Err(e) => {
            browser.close().await;
            panic!("sign in: {e}");
        }
    }
}

/// [`app_and_browser`] with the repository's example workflows loaded on
/// the server's first start, as `cargo xtask run` does.
pub async fn app_and_browser_with_examples() -> Option<(Server, Browser)> {
    let examples = workspace_root().join("examples");
    let examples = examples.to_string_lossy().into_owned();
    app_and_browser_with(&[("GLASSBOX_EXAMPLES_DIR", examples.as_str())]).await
}

/// [`app_and_browser_with`] with extra Chromium flags.
pub async fn app_and_browser_flags(
    env: &[(&str, &str)],
    flags: &[&str],
) -> Option<(Server, Browser)> {
    if !browser_tests_enabled() {
        return None;
    }
    let dist = built_app_dir().expect("built app");
    let data_dir = tempfile::tempdir().expect("tmp");
    let server = Server::start_in(data_dir, Some(&dist), env).expect("server starts");
    let browser = Browser::start_with(flags).await.expect("browser starts");
    Some((server, browser))
}

/// One HTTP/1.0 request over a real socket.
pub fn http(
    base: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&serde_json::Value>,
) -> (u16, String) {
    try_http(base, method, path, token, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// [`http`], with a server that goes away mid-answer (a crash test's) an
/// error instead of a panic.
pub fn try_http(
    base: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&serde_json::Value>,
) -> Result<(u16, String), String> {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let mut stream =
        std::net::TcpStream::connect(addr).map_err(|e| format!("connect to server: {e}"))?;
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| format!("send request: {e}"))?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .map_err(|e| format!("read response: {e}"))?;
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status line in {response:?}"))?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// A response body as JSON (null when it is not JSON).
pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or(serde_json::Value::Null)
}
