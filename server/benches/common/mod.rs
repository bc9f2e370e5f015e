//! What the product benches share: one `glassbox run` of a workflow file,
//! medians and percentiles, and the machine-readable figure line
//! `cargo xtask bench` collects into its table.

#![allow(dead_code)] // each bench uses a part

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

/// Prints one figure for `cargo xtask bench`: `BENCH <name> <value>
/// <unit> <target>`, where `target` is the most the figure may be (every
/// figure here is "lower is better"), `-` when it has none. The
/// human-readable lines stay as they are.
pub fn report(name: &str, value: f64, unit: &str, target: Option<f64>) {
    let target = target.map_or_else(|| "-".to_string(), |t| t.to_string());
    println!("BENCH {name} {value:.3} {unit} {target}");
}

/// The `glassbox` binary to drive: cargo's, beside the bench, unless
/// `GLASSBOX_BENCH_BIN` names another (to compare two builds with the same
/// bench).
pub fn glassbox_bin() -> String {
    std::env::var("GLASSBOX_BENCH_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_glassbox").to_string())
}

/// The `GLASSBOX_BENCH_QUICK` setting: fewer repetitions (CI's smoke).
pub fn quick() -> bool {
    std::env::var_os("GLASSBOX_BENCH_QUICK").is_some()
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The `p` quantile (0..=1) of a sorted slice.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// One `glassbox run` of `file` in a fresh SQLite data directory, with
/// `env`: (wall ms, what it printed, bytes stored under the data dir).
pub fn glassbox_run(bin: &str, file: &Path, env: &[(&str, String)]) -> (f64, Value, u64) {
    glassbox_run_on(bin, file, env, None)
}

/// [`glassbox_run`], the process confined to CPU `cpu` when given (by
/// util-linux's `taskset`): the "one core" figures, where the
/// run's threads cannot overlap on a second core.
pub fn glassbox_run_on(
    bin: &str,
    file: &Path,
    env: &[(&str, String)],
    cpu: Option<usize>,
) -> (f64, Value, u64) {
    let data = tempfile::tempdir().expect("tmp");
    let wrapper = cpu.map(|cpu| vec!["taskset".to_string(), "-c".into(), cpu.to_string()]);
    let mut command = run_command(wrapper.as_deref().unwrap_or_default(), bin, file, &data);
    let started = Instant::now();
    let out = command
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", command.get_program()));
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    (wall, printed, bytes_under(data.path()))
}

/// The instructions one `glassbox run` of `file` executes, counted by
/// valgrind's callgrind (`valgrind` on the `PATH`), in a fresh SQLite data
/// directory. Unlike time, the count hardly moves with what else the
/// machine does (within about 2%: the run's threads interleave a little
/// differently each time), so two builds compare on a noisy machine.
pub fn glassbox_instructions(bin: &str, file: &Path) -> u64 {
    let data = tempfile::tempdir().expect("tmp");
    let wrapper = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
    ]
    .map(String::from);
    let out = run_command(&wrapper, bin, file, &data)
        .output()
        .unwrap_or_else(|e| panic!("cannot start valgrind: {e}"));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    log.lines()
        .find_map(|l| {
            l.split_once("Collected : ")
                .map(|(_, n)| n.trim().to_string())
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("callgrind printed no count: {log}"))
}

/// `glassbox run <file>` in the data directory `data`, logging errors
/// only and on SQLite whatever the environment says, started by `wrapper`
/// (a program and its arguments: `taskset`, `valgrind`) when it is not
/// empty.
fn run_command(wrapper: &[String], bin: &str, file: &Path, data: &tempfile::TempDir) -> Command {
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    command
        .arg("run")
        .arg(file)
        .arg("--data-dir")
        .arg(data.path())
        .env_remove("GLASSBOX_DATABASE_URL")
        .env("RUST_LOG", "error");
    command
}

/// Bytes under `dir`, recursively.
fn bytes_under(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => bytes_under(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The CPU time (user and system, milliseconds) process `pid` has used so
/// far, from Linux's `/proc/<pid>/stat` (in clock ticks, 100 a second);
/// `None` elsewhere.
pub fn cpu_ms(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's name, which is in parentheses.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    // utime and stime are the 14th and 15th fields: 12th and 13th here.
    Some((ticks(11)? + ticks(12)?) * 10.0)
}
