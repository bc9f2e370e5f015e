//! Phases: named steps with timings, and running commands with clear errors.
//!
//! With a log dir ([`log_to`], `cargo xtask run`), the commands a phase
//! runs write to `<log dir>/<phase>.log` instead of the terminal, a line
//! every 30 s says the phase is still going, and a failure prints the end
//! of its log: a person sees the phases, not compiler output.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Where phase logs go (unset: commands print to the terminal).
static LOG_DIR: OnceLock<PathBuf> = OnceLock::new();

thread_local! {
    /// The log file of the phase running on this thread.
    static PHASE_LOG: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
}

/// Sends every later phase's command output to a file in `dir`.
pub fn log_to(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let _ = LOG_DIR.set(dir.to_path_buf());
    Ok(())
}

/// `build app (...)` -> `build-app`.
fn slug(name: &str) -> String {
    let words: Vec<String> = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(4)
        .map(str::to_ascii_lowercase)
        .collect();
    words.join("-")
}

/// Runs `f` as phase `name` on this thread: its commands write to the
/// phase's log (when logging), and every 30 s a line says it still runs.
pub fn timed<T>(
    name: &str,
    f: impl FnOnce() -> Result<T, String>,
) -> (Result<T, String>, Duration) {
    let log = LOG_DIR
        .get()
        .map(|dir| dir.join(format!("{}.log", slug(name))));
    if let Some(log) = &log {
        let _ = std::fs::write(log, "");
    }
    PHASE_LOG.with(|l| *l.borrow_mut() = log.clone());
    let (stop, stopped) = mpsc::channel::<()>();
    let ticker = log.as_ref().map(|log| {
        let (name, log) = (name.to_string(), log.clone());
        let start = Instant::now();
        std::thread::spawn(move || {
            while let Err(mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(Duration::from_secs(30))
            {
                println!(
                    "    ... {name}: {} so far (output in {})",
                    fmt_duration(start.elapsed()),
                    log.display()
                );
            }
        })
    });
    let start = Instant::now();
    let result = f();
    let took = start.elapsed();
    drop(stop);
    if let Some(t) = ticker {
        let _ = t.join();
    }
    PHASE_LOG.with(|l| *l.borrow_mut() = None);
    (result, took)
}

/// Records the duration of each phase for the final summary.
pub struct Phases {
    done: Vec<(String, Duration)>,
    started: Instant,
}

impl Default for Phases {
    fn default() -> Self {
        Self {
            done: Vec::new(),
            started: Instant::now(),
        }
    }
}

impl Phases {
    /// Runs `f` as a phase named `name`, printing its start and end.
    pub fn run<T>(
        &mut self,
        name: &str,
        f: impl FnOnce() -> Result<T, String>,
    ) -> Result<T, String> {
        println!("==> {name}");
        let (result, took) = timed(name, f);
        match &result {
            Ok(_) => println!("<== {name}: ok in {}", fmt_duration(took)),
            Err(_) => println!("<== {name}: FAILED after {}", fmt_duration(took)),
        }
        self.done.push((name.to_string(), took));
        result
    }

    /// Records a phase that ran elsewhere (another thread).
    pub fn record(&mut self, name: &str, took: Duration) {
        self.done.push((name.to_string(), took));
    }

    /// One line per phase, then the wall-clock total (phases that ran
    /// side by side overlap, so it can be less than their sum).
    pub fn print_summary(&self) {
        println!("phase timings:");
        for (name, took) in &self.done {
            println!("  {:<34} {:>9}", name, fmt_duration(*took));
        }
        println!(
            "  {:<34} {:>9}",
            "total (wall clock)",
            fmt_duration(self.started.elapsed())
        );
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

/// Runs a command to completion, its output to the phase's log when
/// logging (else inherited); non-zero is an error naming the command and,
/// when logging, carrying the end of the log.
pub fn run_cmd(cmd: &mut Command) -> Result<(), String> {
    let log = PHASE_LOG.with(|l| l.borrow().clone());
    if let Some(log) = &log {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let err = file.try_clone().map_err(|e| e.to_string())?;
        cmd.stdout(Stdio::from(file)).stderr(Stdio::from(err));
    }
    let status = cmd
        .status()
        .map_err(|err| format!("cannot start `{}`: {err}", describe(cmd)))?;
    if status.success() {
        return Ok(());
    }
    let mut message = format!("`{}` failed ({status})", describe(cmd));
    if let Some(log) = &log {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        message.push_str(&format!(
            "\n--- the last lines of {} ---\n{tail}",
            log.display()
        ));
    }
    Err(message)
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
