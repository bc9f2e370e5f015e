//! The binary a user builds (`cargo build --release`, what `cargo xtask run`
//! serves) has no test-only tool: `secret_probe` and crash injection exist
//! only with the `test-hooks` feature, and no environment variable turns
//! them on. The end-to-end tests' binary, built with the feature, shows the
//! same check failing when the tool is there.

use std::process::Command;

use glassbox_tests::harness::glassbox_bin;

/// `glassbox tool list --include-deprecated` with GLASSBOX_TEST_TOOLS=1, as
/// lines of tool refs.
fn listed_tools(bin: &std::path::Path) -> Vec<String> {
    let out = Command::new(bin)
        .args(["tool", "list", "--include-deprecated"])
        .env("GLASSBOX_TEST_TOOLS", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
    assert!(
        out.status.success(),
        "{} tool list failed: {}",
        bin.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn the_release_binary_has_no_test_tool() {
    let bin = std::env::var("GLASSBOX_RELEASE_BIN").unwrap_or_else(|_| {
        panic!(
            "GLASSBOX_RELEASE_BIN is not set: build `cargo build --release -p glassbox-server \
             --bin glassbox` and point it at target/release/glassbox (`cargo xtask test` does both)"
        )
    });
    let tools = listed_tools(std::path::Path::new(&bin));
    assert!(tools.iter().any(|t| t == "calculator@1.0.0"), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t.starts_with("secret_probe@")),
        "the release binary lists a test-only tool: {tools:?}"
    );
}

#[test]
fn the_test_binary_lists_the_test_tool_so_the_check_can_fail() {
    let bin = glassbox_bin().expect("the e2e binary");
    let tools = listed_tools(&bin);
    assert!(
        tools.iter().any(|t| t == "secret_probe@1.0.0"),
        "the e2e binary (built with --features test-hooks) should list secret_probe: {tools:?}"
    );
}
