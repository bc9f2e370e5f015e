//! `cargo xtask test`: every check, in the order CI runs them. All phases
//! run even when one fails, so one run shows every problem; the exit code is
//! non-zero if any failed. The last line counts the tests.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::install;
use crate::phase::{cargo, describe, run_cmd, workspace_root, Phases};

/// Default Postgres for the storage conformance tests (TOOLCHAIN.md); each
/// test creates and drops its own database on it.
const DEFAULT_TEST_POSTGRES: &str = "postgres://postgres@127.0.0.1:5432/postgres";

#[derive(Default, Debug, PartialEq)]
pub struct Counts {
    pub passed: u64,
    pub failed: u64,
    pub ignored: u64,
}

impl Counts {
    /// Adds one libtest summary line
    /// (`test result: ok. 5 passed; 0 failed; 1 ignored; ...`).
    pub fn add_line(&mut self, line: &str) {
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            return;
        };
        for part in rest.split(';') {
            let words: Vec<&str> = part.split_whitespace().collect();
            let (num, label) = match words.as_slice() {
                [_, n, label] | [n, label] => (n, label),
                _ => continue,
            };
            let Ok(n) = num.parse::<u64>() else { continue };
            match *label {
                "passed" => self.passed += n,
                "failed" => self.failed += n,
                "ignored" => self.ignored += n,
                _ => {}
            }
        }
    }
}

pub fn test(args: &[String]) -> Result<(), String> {
    let mut browser = true;
    for arg in args {
        match arg.as_str() {
            "--skip-browser" => browser = false,
            other => return Err(format!("unknown option `{other}` for `cargo xtask test`")),
        }
    }
    let root = workspace_root();
    let mut phases = Phases::default();
    let mut failures: Vec<String> = Vec::new();
    let mut counts = Counts::default();

    install::prepend_cargo_bin_to_path();
    phases.run("install: wasm32 target", install::ensure_wasm_target)?;
    phases.run("install: wasm-bindgen-cli", install::ensure_wasm_bindgen)?;
    phases.run("install: wasm-opt", install::ensure_wasm_opt)?;
    phases.run("install: wasm-split-cli", install::ensure_wasm_split)?;
    if browser {
        phases.run("install: chromium + chromedriver", install::ensure_chromium)?;
    }

    let mut check = |phases: &mut Phases, name: &str, f: &mut dyn FnMut() -> Result<(), String>| {
        if let Err(err) = phases.run(name, f) {
            eprintln!("xtask: {name} failed: {err}");
            failures.push(name.to_string());
        }
    };

    check(&mut phases, "cargo fmt --check", &mut || {
        run_cmd(cargo().args(["fmt", "--all", "--check"]).current_dir(&root))
    });
    check(
        &mut phases,
        "cargo clippy -D warnings (workspace; app as wasm32)",
        &mut || {
            run_cmd(
                cargo()
                    .args([
                        "clippy",
                        "--workspace",
                        "--all-targets",
                        "--",
                        "-D",
                        "warnings",
                    ])
                    .current_dir(&root),
            )?;
            // The app as the browser gets it: node-runtime without its
            // `runtime` feature, and the wasm-only code.
            run_cmd(
                cargo()
                    .args([
                        "clippy",
                        "-p",
                        "glassbox-app",
                        "--target",
                        "wasm32-unknown-unknown",
                        "--",
                        "-D",
                        "warnings",
                    ])
                    .current_dir(&root),
            )
        },
    );
    check(
        &mut phases,
        "build app (wasm32 release, split, wasm-opt)",
        &mut || install::build_app(&root),
    );
    let dist = root.join("dist");
    check(
        &mut phases,
        "app main module within 250 KiB gzipped",
        &mut || {
            within_budget(
                "the main module",
                install::main_module_gz(&dist),
                install::MAIN_MODULE_BUDGET_GZ,
                "move a page behind a lazy route (`lazy_page!` in app/src/lib.rs)",
            )
        },
    );
    check(
        &mut phases,
        "opening the editor within its budget",
        &mut || {
            within_budget(
                "what opening the editor fetches of the app",
                install::editor_load_gz(&dist),
                install::EDITOR_LOAD_BUDGET_GZ,
                "move what the editor does not draw at once behind a lazy split (`wasm_split` in app/src/pages/editor.rs)",
            )
        },
    );
    // The end-to-end tests' binary carries the test hooks (the leak-test
    // tool, crash injection); the release binary, as users build it, does not,
    // and a test checks that on it. It is copied out of target/debug, where
    // `cargo test` builds the server's own binary again without the hooks.
    let bin = install::target_dir(&root).join("e2e").join("glassbox");
    check(
        &mut phases,
        "build glassbox binary (test hooks)",
        &mut || {
            run_cmd(
                cargo()
                    .args([
                        "build",
                        "-p",
                        "glassbox-server",
                        "--bin",
                        "glassbox",
                        "--features",
                        "test-hooks",
                    ])
                    .current_dir(&root),
            )?;
            let built = install::target_dir(&root).join("debug").join("glassbox");
            std::fs::create_dir_all(bin.parent().unwrap_or(&root))
                .map_err(|e| format!("{}: {e}", bin.display()))?;
            std::fs::copy(&built, &bin)
                .map(|_| ())
                .map_err(|e| format!("copying {} to {}: {e}", built.display(), bin.display()))
        },
    );
    check(
        &mut phases,
        "build glassbox binary (as cargo xtask run serves it)",
        &mut || install::build_server(&root),
    );
    let release_bin = install::server_bin(&root);
    check(&mut phases, "cargo test --workspace", &mut || {
        let mut cmd = cargo();
        cmd.args(["test", "--workspace", "--no-fail-fast"])
            .current_dir(&root)
            .env("GLASSBOX_BIN", &bin)
            .env("GLASSBOX_RELEASE_BIN", &release_bin)
            .env("GLASSBOX_STATIC_DIR", root.join("dist"))
            .env("CHROMIUM", install::CHROMIUM)
            .env("CHROMEDRIVER", install::CHROMEDRIVER);
        if std::env::var_os("GLASSBOX_TEST_POSTGRES_URL").is_none() {
            cmd.env("GLASSBOX_TEST_POSTGRES_URL", DEFAULT_TEST_POSTGRES);
        }
        if !browser {
            cmd.env("GLASSBOX_SKIP_BROWSER", "1");
        }
        run_counting(&mut cmd, &mut counts)
    });
    check(
        &mut phases,
        "bench smoke (within 3x of the baseline)",
        &mut || crate::bench::bench(&["--smoke".to_string()]),
    );

    phases.print_summary();
    if !failures.is_empty() {
        println!("failed phases: {}", failures.join(", "));
    }
    println!(
        "xtask: {} passed, {} failed, {} skipped",
        counts.passed, counts.failed, counts.ignored
    );
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{} phase(s) failed", failures.len()))
    }
}

/// Runs `cargo test`, echoing its output and adding up libtest's counts.
fn run_counting(cmd: &mut Command, counts: &mut Counts) -> Result<(), String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot start `{}`: {err}", describe(cmd)))?;
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            println!("{line}");
            counts.add_line(&line);
        }
    }
    let status = child.wait().map_err(|err| err.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", describe(cmd)))
    }
}

/// A size check of the built app: `what` (gzipped bytes, `None` when not
/// built) within `budget`, else the way out in `advice`.
fn within_budget(what: &str, gz: Option<u64>, budget: u64, advice: &str) -> Result<(), String> {
    match gz {
        Some(gz) if gz <= budget => Ok(()),
        Some(gz) => Err(format!(
            "{what} is {} KiB gzipped, over its {} KiB budget: {advice}",
            gz / 1024,
            budget / 1024
        )),
        None => Err(format!("{what}: nothing built in dist/")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(lines: &[&str], expected: Counts) {
        let mut counts = Counts::default();
        for line in lines {
            counts.add_line(line);
        }
        assert_eq!(counts, expected, "lines: {lines:?}");
    }

    #[test]
    fn sums_libtest_summaries() {
        check(
            &[
                "test result: ok. 5 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s",
                "running 2 tests",
                "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out",
            ],
            Counts { passed: 6, failed: 1, ignored: 1 },
        );
    }

    #[test]
    fn ignores_other_lines() {
        check(&["test foo ... ok", "passed", ""], Counts::default());
    }
}
