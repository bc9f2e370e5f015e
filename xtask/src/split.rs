//! `cargo xtask split-wasm`: Trunk's post-build hook (Trunk.toml), which
//! splits the app's wasm at its lazy routes (`lazy_page!` in
//! app/src/lib.rs), so a first visit downloads the shell and not every page.
//!
//! Trunk has no splitting step (trunk-rs/trunk#1022), so the hook redoes the
//! end of Trunk's Rust pipeline from the module cargo linked, which carries
//! its relocations (`--emit-relocs`, .cargo/config.toml):
//! 1. `wasm-split-cli` cuts it into the main module, a module per lazy route
//!    (and chunks they share) and `__wasm_split.js`, which fetches them;
//! 2. the pinned `wasm-bindgen` binds the main module under Trunk's hashed
//!    name, replacing Trunk's output in the staging dir; it keeps the
//!    function table export the route modules link against;
//! 3. in release builds, `wasm-opt -Oz` on every module, its `producers`
//!    and `target_features` sections stripped (Trunk's own wasm-opt is
//!    off: `data-wasm-opt="0"` in app/index.html).
//!
//! The route modules are named by the split point, not by content, so the
//! server serves them for revalidation, never as immutable.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::install::target_dir;
use crate::phase::{run_cmd, workspace_root};

/// The crate Trunk builds (`data-bin` in app/index.html).
const APP: &str = "glassbox-app";

/// Binaryen features of current rustc output (the flags Trunk passed before).
const WASM_OPT_FEATURES: &[&str] = &[
    "--enable-bulk-memory",
    "--enable-nontrapping-float-to-int",
    "--enable-sign-ext",
    "--enable-reference-types",
    "--enable-multivalue",
    "--enable-mutable-globals",
];

/// Runs one of the pinned tools; a missing one says how to install it.
fn tool(cmd: &mut Command) -> Result<(), String> {
    run_cmd(cmd).map_err(|e| {
        format!("{e} (`cargo xtask run` installs the pinned tools the app's build needs)")
    })
}

fn env_path(name: &str) -> Result<PathBuf, String> {
    std::env::var_os(name).map(PathBuf::from).ok_or_else(|| {
        format!("{name} is not set: `cargo xtask split-wasm` is Trunk's post-build hook (run `trunk build`)")
    })
}

/// Trunk's JS glue in `staging`: `glassbox-app-<hash>.js`.
fn glue_stem(staging: &Path) -> Result<String, String> {
    let entries = std::fs::read_dir(staging)
        .map_err(|e| format!("cannot read the staging dir {}: {e}", staging.display()))?;
    let mut stems: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.starts_with(APP) && name.ends_with(".js"))
        .map(|name| name.trim_end_matches(".js").to_string())
        .collect();
    match stems.len() {
        1 => Ok(stems.remove(0)),
        n => Err(format!(
            "expected one {APP}*.js in {}, found {n}",
            staging.display()
        )),
    }
}

/// Trunk's post-build hook: the module cargo linked for Trunk's profile,
/// split into Trunk's staging dir under Trunk's glue name.
pub fn split_wasm() -> Result<(), String> {
    crate::install::prepend_cargo_bin_to_path();
    let staging = env_path("TRUNK_STAGING_DIR")?;
    let release = std::env::var("TRUNK_PROFILE").as_deref() != Ok("debug");
    let root = workspace_root();
    let stem = glue_stem(&staging)?;
    split_into(&root, &staging, &stem, release)
}

/// The app module cargo linked for `profile`.
pub fn linked_module(root: &Path, release: bool) -> PathBuf {
    target_dir(root)
        .join("wasm32-unknown-unknown")
        .join(if release { "release" } else { "debug" })
        .join(format!("{APP}.wasm"))
}

/// Splits the linked app module into `staging`: the main module bound as
/// `{stem}.js` + `{stem}_bg.wasm`, the loader `__wasm_split.js`, and one
/// module per lazy route and shared chunk, each optimised in release
/// builds.
pub fn split_into(root: &Path, staging: &Path, stem: &str, release: bool) -> Result<(), String> {
    let profile = if release { "release" } else { "debug" };
    let linked = linked_module(root, release);
    if !linked.is_file() {
        return Err(format!("no linked app module at {}", linked.display()));
    }
    // One work dir per profile, so a debug and a release build do not meet.
    let work = target_dir(root).join("wasm-split").join(profile);
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;

    // 1. Split. The loader imports `initSync` from the glue's name.
    tool(
        Command::new("wasm-split-cli")
            .args(["--target", "web", "--out-name", stem])
            .arg(&linked)
            .arg(&work),
    )?;
    // 2. Bind the main module.
    tool(
        Command::new("wasm-bindgen")
            .args(["--target", "web", "--no-typescript", "--keep-lld-exports"])
            .arg("--out-dir")
            .arg(staging)
            .args(["--out-name", stem])
            .arg(work.join(format!("{stem}.wasm"))),
    )?;
    let loader = "__wasm_split.js";
    std::fs::copy(work.join(loader), staging.join(loader))
        .map_err(|e| format!("copying {loader}: {e}"))?;
    // 3. The route modules next to it, each optimised in release builds.
    let mut modules = vec![staging.join(format!("{stem}_bg.wasm"))];
    let entries = std::fs::read_dir(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.ends_with(".wasm") && name != format!("{stem}.wasm") {
            let to = staging.join(&name);
            std::fs::copy(entry.path(), &to).map_err(|e| format!("copying {name}: {e}"))?;
            modules.push(to);
        }
    }
    if release {
        for module in &modules {
            tool(
                Command::new("wasm-opt")
                    .arg("-Oz")
                    .args(WASM_OPT_FEATURES)
                    // Custom sections no browser reads (~200 bytes in each
                    // of ~120 modules an editor's load fetches: 18 KiB
                    // gzipped, each file compressed on its own).
                    .args(["--strip-producers", "--strip-target-features"])
                    .arg("-o")
                    .arg(module)
                    .arg(module),
            )?;
        }
    }
    println!(
        "    split {} into its main module and {} lazily loaded module(s)",
        linked.display(),
        modules.len() - 1
    );
    Ok(())
}
