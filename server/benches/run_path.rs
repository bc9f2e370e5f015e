//! The run path as a user runs it (issue #30): the real `glassbox run`
//! (the bench profile's binary), a scripted Agent Node making N sequential
//! `json_query` calls with a 1 KB argument, stored durably in a fresh
//! SQLite data directory per run.
//!
//! - per call: (wall time of N calls - wall time of 0 calls) / N, median of
//!   11 runs each, at N = 100 and 400 (target <= 100 us at 100, and the
//!   cost at 400 within 1.2x of that at 100), and at 100 again with the
//!   process confined to one CPU (`taskset`), the "one core";
//! - stored bytes: the data directory (database, WAL and files) after the
//!   run, minus a 0-call run's, at 50 / 100 / 200 turns (target <= 1 MB at
//!   200).
//!
//!   cargo bench -p glassbox-server --bench run_path
//!   GLASSBOX_BENCH_QUICK=1 (5 runs instead of 11)
//!   GLASSBOX_BENCH_INSTRUCTIONS=1 (also: instructions per call at 100,
//!   counted by callgrind, medians of 3; steady where time is not, to
//!   compare two builds on a busy or noisy machine)

mod common;

use common::{glassbox_instructions, glassbox_run, glassbox_run_on, median, quick, report};
use serde_json::{json, Value};

/// 1 KB of letters and digits drawn by a fixed xorshift from `seed`: text
/// no compressor shrinks much (about 5.2 bits per byte).
fn incompressible_kilobyte(seed: u64) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(ALPHABET[(x % ALPHABET.len() as u64) as usize])
        })
        .collect()
}

/// `N` turns, each one `json_query` call whose data is a 1 KB string: the
/// same `x`s every time, or a different incompressible one per call.
fn workflow(calls: usize, incompressible: bool) -> Value {
    let kilobyte = "x".repeat(1024);
    let mut turns: Vec<Value> = (0..calls)
        .map(|i| {
            let note = if incompressible {
                incompressible_kilobyte(i as u64)
            } else {
                kilobyte.clone()
            };
            json!({"tool_calls": [{"name": "json_query", "arguments": {
                "program": ".note | length", "data": {"i": i, "note": note}}}]})
        })
        .collect();
    turns.push(json!({"text": "done"}));
    json!({
        "format_version": 1, "id": "seq", "name": "sequential calls", "revision": 0,
        "nodes": [{"id": "agent", "kind": "agent", "config": {"prompt": "go",
            "tools": [{"tool": "json_query@1.0.0"}],
            "policy": {"max_tool_calls": calls.max(1), "max_iterations": calls + 1},
            "provider": {"kind": "scripted", "script": {"turns": turns}}}}],
        "edges": []
    })
}

fn main() {
    let bin = common::glassbox_bin();
    let bin = bin.as_str();
    let runs = if quick() { 5 } else { 11 };
    let dir = tempfile::tempdir().expect("tmp");
    println!("run path through `glassbox run` ({bin}), medians of {runs} runs, SQLite");
    let counts = [0usize, 50, 100, 200, 400];
    let files: Vec<_> = counts
        .iter()
        .map(|calls| {
            let file = dir.path().join(format!("seq-{calls}.json"));
            std::fs::write(&file, workflow(*calls, false).to_string()).expect("write workflow");
            file
        })
        .collect();
    // Rounds of one run of each size, so that whatever else the machine
    // does over the bench weighs on every size alike (the per-call figure
    // is a difference of two of them).
    let mut walls: Vec<Vec<f64>> = vec![Vec::new(); counts.len()];
    let mut sizes: Vec<Vec<f64>> = vec![Vec::new(); counts.len()];
    for _ in 0..runs {
        for (i, (calls, file)) in counts.iter().zip(&files).enumerate() {
            let (w, printed, b) = glassbox_run(bin, file, &[]);
            let done = printed["agent_outputs"]["agent"]["tools_by_id"]
                .as_object()
                .map_or(0, |m| m.len());
            assert_eq!(done, *calls, "every call ran");
            walls[i].push(w);
            sizes[i].push(b as f64);
        }
    }
    let mut wall = std::collections::BTreeMap::new();
    let mut stored = std::collections::BTreeMap::new();
    for ((calls, w), b) in counts.into_iter().zip(walls).zip(sizes) {
        wall.insert(calls, median(w));
        stored.insert(calls, median(b));
    }
    let per_call = |n: usize| (wall[&n] - wall[&0]) / n as f64 * 1000.0;
    let (at100, at400) = (per_call(100), per_call(400));
    println!(
        "sequential 1 KB calls: {at100:.0} us per call at 100 (target <= 100 us: {:.1}x), {at400:.0} us at 400 ({:.2}x the cost at 100; target <= 1.2x); a 0-call run takes {:.0} ms",
        at100 / 100.0,
        at400 / at100,
        wall[&0]
    );
    report("sequential_1kb_calls_at_100", at100, "us/call", Some(100.0));
    report(
        "sequential_cost_400_over_100",
        at400 / at100,
        "x",
        Some(1.2),
    );
    for turns in [50usize, 100, 200] {
        let extra = (stored[&turns] - stored[&0]) / 1_000_000.0;
        report(
            &format!("stored_above_0_calls_at_{turns}_turns"),
            extra,
            "MB",
            (turns == 200).then_some(1.0),
        );
        println!(
            "stored for {turns} turns: {extra:.2} MB above a 0-call run{}",
            if turns == 200 {
                format!(" (target <= 1 MB: {extra:.1}x)")
            } else {
                String::new()
            }
        );
    }
    // The targets are for one core: the same 0- and 100-call runs
    // with the process confined to one CPU, so its agent, event and writer
    // threads take turns instead of overlapping on two cores.
    let cpu = std::thread::available_parallelism().map_or(0, |n| n.get() - 1);
    assert_eq!(
        (counts[0], counts[2]),
        (0, 100),
        "the files of 0 and 100 calls"
    );
    let (zero, hundred) = (&files[0], &files[2]);
    let (mut at0, mut at100) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        at0.push(glassbox_run_on(bin, zero, &[], Some(cpu)).0);
        at100.push(glassbox_run_on(bin, hundred, &[], Some(cpu)).0);
    }
    let (zero, hundred) = (median(at0), median(at100));
    let one_core = (hundred - zero) / 100.0 * 1000.0;
    report(
        "sequential_1kb_calls_at_100_one_core",
        one_core,
        "us/call",
        Some(100.0),
    );
    println!(
        "sequential 1 KB calls on one core (CPU {cpu}): {one_core:.0} us per call at 100 (target <= 100 us: {:.1}x)",
        one_core / 100.0
    );
    if std::env::var_os("GLASSBOX_BENCH_INSTRUCTIONS").is_some() {
        let count = |file| {
            median(
                (0..3)
                    .map(|_| glassbox_instructions(bin, file) as f64)
                    .collect(),
            )
        };
        let (zero, hundred) = (count(&files[0]), count(&files[2]));
        let per_call = (hundred - zero) / 100.0;
        report(
            "instructions_per_call_at_100",
            per_call,
            "instructions",
            None,
        );
        println!(
            "sequential 1 KB calls: {:.0} K instructions per call at 100 (callgrind); a 0-call run executes {:.1} M",
            per_call / 1000.0,
            zero / 1e6
        );
    }
    // The same at 200 turns with arguments that do not compress: the
    // stored-bytes target must not rest on the compressor.
    let file = dir.path().join("seq-200-incompressible.json");
    std::fs::write(&file, workflow(200, true).to_string()).expect("write workflow");
    let sizes: Vec<f64> = (0..runs)
        .map(|_| glassbox_run(bin, &file, &[]).2 as f64)
        .collect();
    let extra = (median(sizes) - stored[&0]) / 1_000_000.0;
    report(
        "stored_above_0_calls_at_200_turns_incompressible",
        extra,
        "MB",
        Some(1.0),
    );
    println!(
        "stored for 200 turns of incompressible 1 KB arguments: {extra:.2} MB above a 0-call run (target <= 1 MB: {extra:.1}x)"
    );
}
