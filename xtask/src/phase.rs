//! Phases: named steps with timings, and running commands with clear errors.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// Records the duration of each phase for the final summary.
#[derive(Default)]
pub struct Phases {
    done: Vec<(String, Duration)>,
}

impl Phases {
    /// Runs `f` as a phase named `name`, printing its start and end.
    pub fn run<T>(
        &mut self,
        name: &str,
        f: impl FnOnce() -> Result<T, String>,
    ) -> Result<T, String> {
        println!("==> {name}");
        let start = Instant::now();
        let result = f();
        let took = start.elapsed();
        match &result {
            Ok(_) => println!("<== {name}: ok in {}", fmt_duration(took)),
            Err(_) => println!("<== {name}: FAILED after {}", fmt_duration(took)),
        }
        self.done.push((name.to_string(), took));
        result
    }

    /// One line per phase, then the total.
    pub fn print_summary(&self) {
        let mut total = Duration::ZERO;
        println!("phase timings:");
        for (name, took) in &self.done {
            println!("  {:<34} {:>9}", name, fmt_duration(*took));
            total += *took;
        }
        println!("  {:<34} {:>9}", "total", fmt_duration(total));
    }
}

pub fn fmt_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        format!("{}m{:02}s", d.as_secs() / 60, d.as_secs() % 60)
    }
}

/// The workspace root (xtask lives one level below it).
pub fn workspace_root() -> PathBuf {
    // Found at run time, from where `cargo xtask` was started: several
    // checkouts may share one CARGO_TARGET_DIR (a CI clone beside a working
    // tree), and cargo does not rebuild this binary for each, so a path
    // baked in at compile time (`env!("CARGO_MANIFEST_DIR")`) could name
    // another checkout and test the wrong tree.
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            let manifest = dir.join("Cargo.toml");
            if std::fs::read_to_string(&manifest).is_ok_and(|t| t.contains("[workspace]"))
                && dir.join("xtask").is_dir()
            {
                return dir.to_path_buf();
            }
        }
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

/// Runs a command to completion with inherited output; non-zero is an error
/// naming the command.
pub fn run_cmd(cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|err| format!("cannot start `{}`: {err}", describe(cmd)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", describe(cmd)))
    }
}

/// Runs a command and returns its stdout (stderr is inherited).
pub fn capture(cmd: &mut Command) -> Option<String> {
    let out = cmd.stderr(std::process::Stdio::null()).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        s.push(' ');
        s.push_str(&arg.to_string_lossy());
    }
    s
}

/// `cargo` as invoked by the user (cargo sets CARGO for its subprocesses).
pub fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}
