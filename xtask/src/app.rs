//! `cargo xtask run`/`test` build the browser app into `dist/` themselves,
//! without Trunk (which took 10 minutes to install on a fresh machine and
//! only wrapped these steps): cargo links the app for wasm32, `split.rs`
//! splits, binds and optimises it, and `dist/index.html` is written from
//! `app/index.html` the way Trunk writes it, with content-hashed names.
//! `Trunk.toml` stays for `trunk serve` during development; both produce
//! the same `dist/`.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::phase::{cargo, run_cmd};
use crate::split::{linked_module, split_into};

/// A short content hash for a file name (cache busting; not security).
fn short_hash(bytes: &[u8]) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    format!("{:016x}", h.finish())
}

/// The `<link data-trunk ...>` lines of `app/index.html` replaced by what
/// they build: the stylesheet and the module that starts the app.
fn index_html(template: &str, css: &str, stem: &str) -> Result<String, String> {
    let mut out = String::new();
    let (mut saw_css, mut saw_rust) = (false, false);
    for line in template.lines() {
        if line.contains("data-trunk") && line.contains("rel=\"css\"") {
            saw_css = true;
            out.push_str(&format!(
                "    <link rel=\"stylesheet\" href=\"/{css}\" />\n"
            ));
        } else if line.contains("data-trunk") && line.contains("rel=\"rust\"") {
            saw_rust = true;
            out.push_str(&format!(
                "    <script type=\"module\">\n\
                 import init, * as bindings from '/{stem}.js';\n\
                 const wasm = await init({{ module_or_path: '/{stem}_bg.wasm' }});\n\
                 window.wasmBindings = bindings;\n\
                 dispatchEvent(new CustomEvent(\"TrunkApplicationStarted\", {{detail: {{wasm}}}}));\n\
                 </script>\n\
                 <link rel=\"modulepreload\" href=\"/{stem}.js\" crossorigin=\"anonymous\">\n\
                 <link rel=\"preload\" href=\"/{stem}_bg.wasm\" crossorigin=\"anonymous\" as=\"fetch\" type=\"application/wasm\">\n"
            ));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    if saw_css && saw_rust {
        Ok(out)
    } else {
        Err("app/index.html must have a `data-trunk rel=\"css\"` and a `data-trunk rel=\"rust\"` link".into())
    }
}

/// Builds the app (size-tuned release profile) into `dist/`, replacing it
/// only once the new one is complete.
pub fn build(root: &Path) -> Result<(), String> {
    run_cmd(
        cargo()
            .args([
                "build",
                "--release",
                "--target",
                "wasm32-unknown-unknown",
                "-p",
                "glassbox-app",
                "--bin",
                "glassbox-app",
            ])
            .current_dir(root)
            .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "z")
            .env("CARGO_PROFILE_RELEASE_LTO", "true")
            .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
            .env("CARGO_PROFILE_RELEASE_PANIC", "abort"),
    )?;
    let linked = linked_module(root, true);
    let bytes = std::fs::read(&linked).map_err(|e| format!("{}: {e}", linked.display()))?;
    let stem = format!("glassbox-app-{}", short_hash(&bytes));
    let style = root.join("style").join("main.css");
    let css = std::fs::read(&style).map_err(|e| format!("{}: {e}", style.display()))?;
    let css_name = format!("main-{}.css", short_hash(&css));
    let template = root.join("app").join("index.html");
    let template =
        std::fs::read_to_string(&template).map_err(|e| format!("{}: {e}", template.display()))?;
    let html = index_html(&template, &css_name, &stem)?;
    // The same module, stylesheet and page as the dist/ there: nothing to
    // redo (the split and wasm-opt take most of a minute).
    let dist = root.join("dist");
    if std::fs::read_to_string(dist.join("index.html")).is_ok_and(|h| h == html)
        && dist.join(format!("{stem}_bg.wasm")).is_file()
        && dist.join(&css_name).is_file()
    {
        println!("    the app is unchanged since the last build");
        return Ok(());
    }
    let stage = root.join("dist.stage");
    let _ = std::fs::remove_dir_all(&stage);
    std::fs::create_dir_all(&stage).map_err(|e| format!("{}: {e}", stage.display()))?;
    split_into(root, &stage, &stem, true)?;
    let style = root.join("style").join("main.css");
    let css = std::fs::read(&style).map_err(|e| format!("{}: {e}", style.display()))?;
    let css_name = format!("main-{}.css", short_hash(&css));
    std::fs::write(stage.join(&css_name), &css).map_err(|e| format!("{css_name}: {e}"))?;
    let template = root.join("app").join("index.html");
    let template =
        std::fs::read_to_string(&template).map_err(|e| format!("{}: {e}", template.display()))?;
    std::fs::write(
        stage.join("index.html"),
        index_html(&template, &css_name, &stem)?,
    )
    .map_err(|e| format!("index.html: {e}"))?;
    gzip_assets(&stage);
    let dist = root.join("dist");
    let _ = std::fs::remove_dir_all(&dist);
    std::fs::rename(&stage, &dist).map_err(|e| format!("{} -> dist: {e}", stage.display()))
}

/// Writes a gzipped copy (`<name>.gz`, `gzip -9`) beside every module,
/// script and stylesheet, which the server sends to browsers that accept
/// gzip (`server/src/spa.rs`): about a third of the bytes. Without `gzip`
/// the files are served as they are.
fn gzip_assets(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "wasm" || e == "js" || e == "css")
        })
        .collect();
    let compressed = Command::new("gzip")
        .args(["-9", "-k", "-f", "-n"])
        .args(&files)
        .status()
        .is_ok_and(|s| s.success());
    if !compressed {
        println!("    gzip is not available: the app is served uncompressed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trunk_links_become_the_stylesheet_and_the_start_module() {
        let html = index_html(
            include_str!("../../app/index.html"),
            "main-1.css",
            "glassbox-app-2",
        )
        .expect("both links");
        assert!(html.contains("<link rel=\"stylesheet\" href=\"/main-1.css\" />"));
        assert!(html.contains("import init, * as bindings from '/glassbox-app-2.js';"));
        assert!(html.contains("module_or_path: '/glassbox-app-2_bg.wasm'"));
        assert!(!html.contains("data-trunk"));
        assert!(html.contains("<title>Glassbox</title>"));
        assert!(index_html("<html></html>", "a", "b").is_err());
    }

    #[test]
    fn names_follow_the_content() {
        assert_eq!(short_hash(b"a"), short_hash(b"a"));
        assert_ne!(short_hash(b"a"), short_hash(b"b"));
        assert_eq!(short_hash(b"a").len(), 16);
    }
}
