//! `cargo xtask run`/`test` build the browser app into `dist/` themselves,
//! without Trunk (which took 10 minutes to install on a fresh machine and
//! only wrapped these steps): cargo links the app for wasm32, `split.rs`
//! splits, binds and optimises it, and `dist/index.html` is written from
//! `app/index.html` the way Trunk writes it, with content-hashed names.
//! `Trunk.toml` stays for `trunk serve` during development; both produce
//! the same `dist/`.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

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
    std::fs::write(stage.join(&css_name), &css).map_err(|e| format!("{css_name}: {e}"))?;
    std::fs::write(stage.join("index.html"), html).map_err(|e| format!("index.html: {e}"))?;
    gzip_assets(&stage)?;
    let _ = std::fs::remove_dir_all(&dist);
    std::fs::rename(&stage, &dist).map_err(|e| format!("{} -> dist: {e}", stage.display()))
}

/// Writes a gzipped copy (`<name>.gz`) beside every module, script and
/// stylesheet, which the server sends to browsers that accept gzip
/// (`server/src/spa.rs`). Zopfli writes standard gzip about 4% smaller
/// than `gzip -9` (the editor's load: 479 -> 458 KiB of wasm); one
/// iteration gets nearly all of that (15 gain 0.2% more, at several times
/// the time). The files are shared between the machine's cores.
fn gzip_assets(dir: &Path) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files: Vec<(u64, PathBuf)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "wasm" || e == "js" || e == "css")
        })
        .map(|p| (std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0), p))
        .collect();
    // Biggest first, dealt round the threads: each gets a similar share.
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|k| {
                let mine: Vec<&Path> = files
                    .iter()
                    .skip(k)
                    .step_by(threads)
                    .map(|(_, p)| p.as_path())
                    .collect();
                scope.spawn(move || mine.into_iter().try_for_each(gzip_file))
            })
            .collect();
        workers.into_iter().try_for_each(|w| {
            w.join()
                .map_err(|_| "a compression thread panicked".to_string())?
        })
    })
}

/// `path` compressed to `<path>.gz`.
fn gzip_file(path: &Path) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::with_capacity(bytes.len() / 3);
    let options = zopfli::Options {
        iteration_count: std::num::NonZeroU64::MIN,
        ..zopfli::Options::default()
    };
    zopfli::compress(options, zopfli::Format::Gzip, bytes.as_slice(), &mut out)
        .map_err(|e| format!("compressing {}: {e}", path.display()))?;
    let mut name = path.as_os_str().to_owned();
    name.push(".gz");
    std::fs::write(&name, out).map_err(|e| format!("{}: {e}", Path::new(&name).display()))
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
    fn the_gzipped_copies_are_standard_gzip_of_each_asset() {
        let dir = std::env::temp_dir().join(format!("xtask-gzip-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let text = "function f() { return 1; }\n".repeat(200);
        std::fs::write(dir.join("a.js"), &text).expect("a.js");
        std::fs::write(dir.join("b.wasm"), [0u8, 97, 115, 109, 1, 0, 0, 0]).expect("b.wasm");
        std::fs::write(dir.join("c.txt"), "not an asset").expect("c.txt");
        gzip_assets(&dir).expect("compressed");
        let unzipped = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(dir.join("a.js.gz"))
            .output()
            .expect("gzip -dc");
        assert!(unzipped.status.success());
        assert_eq!(unzipped.stdout, text.as_bytes());
        assert!(
            std::fs::metadata(dir.join("a.js.gz"))
                .expect("a.js.gz")
                .len()
                < 200
        );
        assert!(dir.join("b.wasm.gz").is_file());
        assert!(!dir.join("c.txt.gz").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn names_follow_the_content() {
        assert_eq!(short_hash(b"a"), short_hash(b"a"));
        assert_ne!(short_hash(b"a"), short_hash(b"b"));
        assert_eq!(short_hash(b"a").len(), 16);
    }
}
