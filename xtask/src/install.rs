//! Installs what a fresh machine lacks: the wasm32 target, the pinned
//! wasm-bindgen CLI and Trunk, and (for the browser tests) Debian's Chromium
//! and ChromeDriver. Every check is cheap, so a second run reinstalls nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::phase::{capture, cargo, run_cmd};
use crate::{TRUNK_VERSION, WASM_BINDGEN_VERSION};

/// `$CARGO_HOME/bin`, where `cargo install` puts binaries.
pub fn cargo_bin_dir() -> PathBuf {
    if let Ok(home) = std::env::var("CARGO_HOME") {
        return PathBuf::from(home).join("bin");
    }
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    PathBuf::from(home).join(".cargo").join("bin")
}

/// Puts `$CARGO_HOME/bin` first on PATH for every child process, so Trunk
/// finds the wasm-bindgen we installed (offline mode uses the one on PATH).
pub fn prepend_cargo_bin_to_path() {
    let bin = cargo_bin_dir();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut parts: Vec<PathBuf> = std::env::split_paths(&path).collect();
    if !parts.iter().any(|p| p == &bin) {
        parts.insert(0, bin);
        if let Ok(joined) = std::env::join_paths(parts) {
            std::env::set_var("PATH", joined);
        }
    }
}

fn version_of(program: &str) -> Option<String> {
    capture(Command::new(program).arg("--version")).map(|s| s.trim().to_string())
}

pub fn ensure_wasm_target() -> Result<(), String> {
    let installed =
        capture(Command::new("rustup").args(["target", "list", "--installed"])).unwrap_or_default();
    if installed
        .lines()
        .any(|l| l.trim() == "wasm32-unknown-unknown")
    {
        println!("    wasm32-unknown-unknown target: present");
        return Ok(());
    }
    println!("    installing the wasm32-unknown-unknown target (rustup)");
    run_cmd(Command::new("rustup").args(["target", "add", "wasm32-unknown-unknown"]))
}

pub fn ensure_wasm_bindgen() -> Result<(), String> {
    let want = format!("wasm-bindgen {WASM_BINDGEN_VERSION}");
    match version_of("wasm-bindgen") {
        Some(v) if v == want => {
            println!("    {v}: present");
            return Ok(());
        }
        Some(v) => println!("    found `{v}`, need `{want}`: installing"),
        None => println!(
            "    wasm-bindgen-cli {WASM_BINDGEN_VERSION}: installing (about 4 minutes on 2 cores)"
        ),
    }
    // No --locked: the CLI's lock file pins a crate version the registry
    // here does not serve (TOOLCHAIN.md).
    run_cmd(cargo().args([
        "install",
        "wasm-bindgen-cli",
        "--version",
        WASM_BINDGEN_VERSION,
        "--force",
    ]))
}

pub fn ensure_trunk() -> Result<(), String> {
    let want = format!("trunk {TRUNK_VERSION}");
    match version_of("trunk") {
        Some(v) if v == want => {
            println!("    {v}: present");
            return Ok(());
        }
        Some(v) => println!("    found `{v}`, need `{want}`: installing"),
        None => println!("    trunk {TRUNK_VERSION}: installing (about 9 minutes on 2 cores)"),
    }
    run_cmd(cargo().args([
        "install",
        "trunk",
        "--version",
        TRUNK_VERSION,
        "--locked",
        "--force",
    ]))
}

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

pub fn ensure_chromium() -> Result<(), String> {
    if Path::new(CHROMIUM).is_file() && Path::new(CHROMEDRIVER).is_file() {
        println!("    chromium and chromedriver: present");
        return Ok(());
    }
    println!("    installing Debian's chromium and chromium-driver (apt-get)");
    let is_root = capture(Command::new("id").arg("-u")).is_some_and(|s| s.trim() == "0");
    let apt = |args: &[&str]| {
        let mut cmd = if is_root {
            Command::new("apt-get")
        } else {
            let mut c = Command::new("sudo");
            c.args(["-n", "apt-get"]);
            c
        };
        cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        run_cmd(&mut cmd)
    };
    apt(&["update", "-q"])?;
    apt(&["install", "-y", "-q", "chromium", "chromium-driver"]).map_err(|err| {
        format!(
            "{err}; install the Debian packages chromium and chromium-driver as root, then rerun"
        )
    })
}

/// `trunk build --release --offline` from the workspace root (Trunk.toml),
/// with size-optimised settings for the wasm only.
pub fn build_app(root: &Path) -> Result<(), String> {
    run_cmd(
        Command::new("trunk")
            .args(["build", "--release", "--offline"])
            .current_dir(root)
            .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "z")
            .env("CARGO_PROFILE_RELEASE_LTO", "true")
            .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
            .env("CARGO_PROFILE_RELEASE_PANIC", "abort"),
    )?;
    report_wasm_size(&root.join("dist"));
    Ok(())
}

/// Prints the size of the app's wasm, raw and gzipped.
fn report_wasm_size(dist: &Path) {
    let Ok(entries) = std::fs::read_dir(dist) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "wasm") {
            let raw = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let gz = capture(
                Command::new("sh")
                    .arg("-c")
                    .arg(format!("gzip -9 -c '{}' | wc -c", path.display())),
            )
            .and_then(|s| s.trim().parse::<u64>().ok());
            match gz {
                Some(gz) => println!(
                    "    app wasm: {} KiB ({} KiB gzipped)",
                    raw / 1024,
                    gz / 1024
                ),
                None => println!("    app wasm: {} KiB", raw / 1024),
            }
        }
    }
}

/// The cargo target directory (CARGO_TARGET_DIR or `<root>/target`).
pub fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root.join(p) })
        .unwrap_or_else(|| root.join("target"))
}
