//! Real `glassbox serve` processes for the instance tests: started on a free
//! loopback port, read up to their ready line, killed (SIGKILL) on drop.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The `glassbox` binary cargo built for this test.
pub fn glassbox() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_glassbox"));
    cmd.env_remove("GLASSBOX_DATABASE_URL")
        .env_remove("GLASSBOX_INSTANCE_NAME")
        .env("RUST_LOG", "warn");
    cmd
}

/// A running `glassbox serve`.
pub struct Serve {
    pub url: String,
    pub signin_token: String,
    child: Child,
    /// Every stdout line after the ready line.
    pub lines: mpsc::Receiver<String>,
    /// The stdout lines before the sign-in line (`Resumed N ...`).
    pub before: Vec<String>,
    /// Its log (stderr) so far.
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

/// What a `glassbox serve` that did not start said.
#[derive(Debug)]
pub struct Refused {
    pub code: Option<i32>,
    pub stderr: String,
}

impl Serve {
    /// `glassbox serve --port 0 --data-dir <dir>` with `args` and `env`;
    /// waits (60 s at most) for the ready line, or returns how it exited.
    pub fn start(data_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Self, Refused> {
        let mut cmd = glassbox();
        cmd.arg("serve")
            .args(["--port", "0", "--bind", "127.0.0.1", "--data-dir"])
            .arg(data_dir)
            .arg("--static-dir")
            .arg(data_dir.join("no-app"))
            .arg("--examples-dir")
            .arg(data_dir.join("no-examples"))
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn glassbox serve");
        let stdout = child.stdout.take().expect("stdout piped");
        let mut stderr = child.stderr.take().expect("stderr piped");
        let pid = child.id();
        let (err_tx, err_rx) = mpsc::channel();
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let log_in = log.clone();
        std::thread::spawn(move || {
            // Kept whole for a refusal; a serving process's log is echoed.
            let mut text = String::new();
            let mut reader = BufReader::new(&mut stderr);
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 {
                eprint!("[serve {pid}] {line}");
                text.push_str(&line);
                log_in.lock().expect("log").push_str(&line);
                line.clear();
            }
            let _ = err_tx.send(text);
        });
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (mut url, mut signin) = (None, None);
        let mut before = Vec::new();
        while url.is_none() || signin.is_none() {
            match rx.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => {
                    if let Some(rest) = line.split(" is ready at ").nth(1) {
                        url = Some(rest.trim().trim_end_matches('/').to_string());
                    } else if let Some(t) = line.split("/signin?token=").nth(1) {
                        signin = Some(t.trim().to_string());
                    } else {
                        before.push(line);
                    }
                }
                Err(_) => {
                    // Killed first: a process that hangs (no ready line,
                    // no exit) would keep `wait` waiting.
                    let _ = child.kill();
                    let status = child.wait().ok();
                    let stderr = err_rx
                        .recv_timeout(Duration::from_secs(5))
                        .unwrap_or_default();
                    return Err(Refused {
                        code: status.and_then(|s| s.code()),
                        stderr,
                    });
                }
            }
        }
        Ok(Self {
            url: url.expect("url"),
            signin_token: signin.expect("signin"),
            child,
            lines: rx,
            before,
            log,
        })
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        self.log.lock().expect("log").clone()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, and wait for the process to be gone.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM (a clean stop); waits `limit` at most for the process to
    /// exit, then kills it. Whether it exited by itself, with success.
    pub fn term(mut self, limit: Duration) -> bool {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Sends `signal` (`STOP`, `CONT`, ...) to the process.
    pub fn signal(&self, signal: &str) {
        let _ = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status();
    }

    /// SIGKILL, keeping the value (to be replaced by a new start).
    pub fn kill9_in_place(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// A session token for the local admin.
    pub async fn sign_in(&self, client: &reqwest::Client) -> String {
        let v: serde_json::Value = client
            .post(format!("{}/api/v1/auth/exchange", self.url))
            .json(&serde_json::json!({"token": self.signin_token}))
            .send()
            .await
            .expect("exchange")
            .json()
            .await
            .expect("exchange body");
        v["session_token"]
            .as_str()
            .expect("session token")
            .to_string()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The status of a plain `GET` (no token), over a blocking loopback socket.
pub fn get_status(base: &str, path: &str) -> u16 {
    use std::io::{Read, Write};
    let host = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(host).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut text = String::new();
    let _ = stream.read_to_string(&mut text);
    text.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// A loopback HTTP endpoint that counts requests per path and answers each
/// after `delay` (so runs are in flight when an instance is killed).
pub struct Counter {
    pub port: u16,
    counts: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
}

impl Counter {
    pub fn start(delay: Duration) -> Self {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let counts = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashMap::new()));
        let c = counts.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let c = c.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                    let mut first = String::new();
                    if reader.read_line(&mut first).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = first.split_whitespace().nth(1).unwrap_or("").to_string();
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    let _ = reader.read_exact(&mut body);
                    *c.lock().expect("lock").entry(path).or_insert(0) += 1;
                    std::thread::sleep(delay);
                    let mut stream = stream;
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{\"ok\":true}",
                    );
                });
            }
        });
        Self { port, counts }
    }

    pub fn counts(&self) -> std::collections::HashMap<String, usize> {
        self.counts.lock().expect("lock").clone()
    }

    /// How many requests reached `path`.
    pub fn count(&self, path: &str) -> usize {
        self.counts().get(path).copied().unwrap_or(0)
    }

    /// A server on SQLite ([`super::common::api::Api::start`]) and a
    /// counting endpoint (answering after `delay`), reachable as the
    /// connection `counter`.
    pub async fn with_api(delay: Duration) -> (Counter, super::common::api::Api) {
        let counter = Counter::start(delay);
        let api = super::common::api::Api::start().await;
        api.add_counter(counter.port).await;
        (counter, api)
    }
}
