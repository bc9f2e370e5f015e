//! `cargo xtask run` and `cargo xtask test`: the only two commands a new user
//! needs. Each one installs what is missing on a fresh machine, prints what it
//! does per phase, and reports timings.

mod install;
mod phase;
mod run;
mod test;

use std::process::ExitCode;

/// Pinned tool versions (see ../shared/TOOLCHAIN.md). `WASM_BINDGEN_VERSION`
/// must equal the `wasm-bindgen` crate pinned in `app/Cargo.toml`.
pub const TRUNK_VERSION: &str = "0.21.14";
pub const WASM_BINDGEN_VERSION: &str = "0.2.130";
/// The `wasm-opt` crate's version and the Binaryen release it builds; Trunk.toml
/// names the same release (`[tools] wasm_opt`).
pub const WASM_OPT_CRATE_VERSION: &str = "0.116.1";
pub const WASM_OPT_VERSION: &str = "116";

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  run  [--port N] [--bind ADDR] [--data-dir DIR]
       install what is missing, build the app and start Glassbox
       (default http://127.0.0.1:8080/, data in ./data)
  test [--skip-browser]
       install what is missing and run every check: fmt, clippy, all tests,
       the wasm build of the app and the browser tests
";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let command = args.next();
    let rest: Vec<String> = args.collect();
    let result = match command.as_deref() {
        Some("run") => run::run(&rest),
        Some("test") => test::test(&rest),
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
    /// Trunk runs the wasm-opt xtask installs only when Trunk.toml names the
    /// same Binaryen release.
    #[test]
    fn trunk_toml_names_the_installed_wasm_opt() {
        let toml = include_str!("../../Trunk.toml");
        let want = format!("wasm_opt = \"version_{}\"", super::WASM_OPT_VERSION);
        assert!(toml.contains(&want), "Trunk.toml must say {want}");
        let html = include_str!("../../app/index.html");
        assert!(
            html.contains("data-wasm-opt=\"z\""),
            "app/index.html runs wasm-opt -Oz"
        );
    }
}
