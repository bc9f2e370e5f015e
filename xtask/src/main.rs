//! `cargo xtask run` and `cargo xtask test`: the only two commands a new user
//! needs. Each one installs what is missing on a fresh machine, prints what it
//! does per phase, and reports timings.

mod app;
mod bench;
mod install;
mod phase;
mod run;
mod split;
mod test;

use std::process::ExitCode;

/// Pinned tool versions (see ../shared/TOOLCHAIN.md). `WASM_BINDGEN_VERSION`
/// must equal the `wasm-bindgen` crate pinned in `app/Cargo.toml`. Trunk
/// (0.21.14, for `trunk serve`) is not needed by `run` or `test`: `app.rs`
/// builds the app.
pub const WASM_BINDGEN_VERSION: &str = "0.2.130";
/// The Binaryen release whose wasm-opt optimises the app's modules, and the
/// npm `binaryen` package that ships it.
pub const WASM_OPT_NPM_VERSION: &str = "132.0.0";
pub const WASM_OPT_VERSION: &str = "132";
/// The `wasm_split_cli_support` crate, whose `wasm-split-cli` splits the
/// app's wasm at its lazy routes (`split.rs`).
pub const WASM_SPLIT_VERSION: &str = "0.2.4";

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  run  [--port N] [--bind ADDR] [--data-dir DIR]
       install what is missing, build the app and start Glassbox
       (default http://127.0.0.1:8080/, data in ./data)
  test [--skip-browser]
       install what is missing and run every check: fmt, clippy, all tests,
       the wasm build of the app and the browser tests
  bench [--smoke]
       the product's speed: the black-box scenarios through the glassbox
       binary and the criterion benches, as a table of figure vs target;
       --smoke: quick, checked against server/benches/baseline.txt (CI)
  split-wasm
       Trunk's post-build hook (Trunk.toml): splits the app's wasm at its
       lazy routes; not run by hand
";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let command = args.next();
    let rest: Vec<String> = args.collect();
    let result = match command.as_deref() {
        Some("run") => run::run(&rest),
        Some("test") => test::test(&rest),
        Some("bench") => bench::bench(&rest),
        Some("split-wasm") => split::split_wasm(),
        Some("-h" | "--help" | "help") | None => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: error: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod pins {
    /// Trunk leaves the app's wasm to the split hook (`split.rs`), which
    /// replaces Trunk's files: Trunk must not optimise them first or pin
    /// their hashes.
    #[test]
    fn trunk_hands_the_wasm_to_the_split_hook() {
        let toml = include_str!("../../Trunk.toml");
        assert!(toml.contains("command_arguments = [\"xtask\", \"split-wasm\"]"));
        let html = include_str!("../../app/index.html");
        assert!(
            html.contains("data-wasm-opt=\"0\""),
            "the hook runs wasm-opt"
        );
        assert!(
            html.contains("data-integrity=\"none\""),
            "the hook replaces the files"
        );
    }
}
