//! The MCP test peer: the official `@modelcontextprotocol/server-everything`
//! (npm, pinned), installed once per machine (in the temp directory) with the machine's
//! npm, and run with `node` directly, so a test can kill exactly the
//! server process (under `npx` the server would be a grandchild).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::harness::{free_port, ProcessGuard};

/// The pinned package, as the README tells users to add it.
pub const PACKAGE: &str = "@modelcontextprotocol/server-everything@2026.8.31";

static INSTALL: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The server's entry script (`dist/index.js`), installing the package on
/// first use.
pub fn everything_script() -> PathBuf {
    let mut installed = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = installed.as_ref() {
        return p.clone();
    }
    let dir = std::env::temp_dir().join("glassbox-mcp-peer");
    let script = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !script.is_file() {
        std::fs::create_dir_all(&dir).expect("peer dir");
        let status = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(&dir)
            .arg(PACKAGE)
            .status()
            .expect("npm runs");
        assert!(status.success(), "npm install {PACKAGE} failed: {status}");
    }
    assert!(script.is_file(), "{} is missing", script.display());
    *installed = Some(script.clone());
    script
}

/// `server-everything` over streamable HTTP on a free loopback port; the
/// URL of its `/mcp` endpoint.
pub fn everything_http() -> (ProcessGuard, String) {
    let script = everything_script();
    let port = free_port();
    let guard = ProcessGuard::spawn(
        "server-everything",
        Command::new("node")
            .arg(&script)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
    .expect("node starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (guard, format!("http://127.0.0.1:{port}/mcp"))
}

/// Pids of running processes whose command line contains `needle`.
pub fn pids_running(needle: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for e in entries.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) && pid != std::process::id() as i32 {
            pids.push(pid);
        }
    }
    pids
}
