//! Acceptance tests of the executor: every error code from a real
//! scenario, secret redaction, the output cap boundary, parallel batches,
//! caching, approvals and file confinement.

mod common;

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{code, fixture, Fixture, CANARY};
use node_runtime::executor::{CallScope, ExecutorConfig};
use node_runtime::policy::{Policy, Usage};
use node_runtime::secrets::MemorySecrets;
use node_runtime::{AttachmentKind, ErrorCode};
use serde_json::{json, Value};

/// A loopback HTTP server that answers every request with `status`.
fn http_server(status: u16) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let handle = std::thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "{\"error\":\"boom\"}";
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (addr, handle)
}

fn scope_allowing(f: &Fixture, hosts: &[String]) -> Arc<CallScope> {
    let mut scope = f.scope();
    let mut env = (*scope.env).clone();
    env.http_allow_hosts = hosts.to_vec();
    scope.env = Arc::new(env);
    Arc::new(scope)
}

#[tokio::test]
async fn every_error_code_comes_from_a_real_scenario() {
    let mut f = fixture();
    let scope = Arc::new(f.scope());
    let mut seen = HashSet::new();

    // VALIDATION_ERROR: the input breaks the schema, with the path in details.
    let e = f.run(&scope, "calculator", json!({"expression": 5})).await;
    assert_eq!(code(&e), Some(ErrorCode::ValidationError));
    let err = e.error.as_ref().expect("error");
    assert_eq!(err.details["errors"][0]["path"], "/expression");
    seen.insert(ErrorCode::ValidationError);

    // TIMEOUT: a 50 ms tool that sleeps for 10 s.
    let e = f.run(&scope, "sleep_short", json!({"ms": 10_000})).await;
    assert_eq!(code(&e), Some(ErrorCode::Timeout));
    seen.insert(ErrorCode::Timeout);

    // RATE_LIMIT: 2 per 60 s, third call refused with retry_after_s.
    for n in 0..2 {
        assert!(f.run(&scope, "limited", json!({"n": n})).await.is_success());
    }
    let e = f.run(&scope, "limited", json!({"n": 3})).await;
    assert_eq!(code(&e), Some(ErrorCode::RateLimit));
    assert!(e
        .error
        .as_ref()
        .and_then(|e| e.retry_after_s)
        .is_some_and(|s| s >= 1));
    seen.insert(ErrorCode::RateLimit);

    // POLICY_DENIED: not on the allow-list, and never executed.
    let narrow = Arc::new(CallScope::new(
        "ws",
        Policy {
            enabled_tools: vec!["noop".into()],
            ..Policy::default()
        },
    ));
    let e = f
        .run(&narrow, "calculator", json!({"expression": "1+1"}))
        .await;
    assert_eq!(code(&e), Some(ErrorCode::PolicyDenied));
    assert_eq!(
        e.error.as_ref().expect("error").details["reason"],
        "NOT_ENABLED"
    );
    seen.insert(ErrorCode::PolicyDenied);

    // AUTH_REQUIRED: the declared secret is not set in another workspace.
    let mut other = f.scope();
    other.owner.workspace_id = "ws-without-secrets".into();
    let e = f.run(&Arc::new(other), "leak", json!({})).await;
    assert_eq!(code(&e), Some(ErrorCode::AuthRequired));
    let err = e.error.as_ref().expect("error");
    assert_eq!(err.details["missing_secret"], "CANARY");
    assert!(err.message.contains("CANARY"));
    seen.insert(ErrorCode::AuthRequired);

    // PROVIDER_ERROR: the upstream answers 503.
    let (addr, server) = http_server(503);
    let allowed = scope_allowing(&f, std::slice::from_ref(&addr));
    let e = f
        .run(
            &allowed,
            "http_request",
            json!({"url": format!("http://{addr}/x")}),
        )
        .await;
    assert_eq!(code(&e), Some(ErrorCode::ProviderError), "{e:?}");
    server.join().expect("server thread");
    seen.insert(ErrorCode::ProviderError);

    // NETWORK_ERROR: nothing listens on the (allowed) port.
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").to_string()
    };
    let allowed = scope_allowing(&f, std::slice::from_ref(&closed));
    let e = f
        .run(
            &allowed,
            "http_request",
            json!({"url": format!("http://{closed}/")}),
        )
        .await;
    assert_eq!(code(&e), Some(ErrorCode::NetworkError), "{e:?}");
    seen.insert(ErrorCode::NetworkError);

    // SANDBOX_ERROR: the file tools' sandbox directory cannot be created.
    let mut broken = f.scope();
    let file = f.files_dir.path().join("not-a-dir");
    std::fs::write(&file, "x").expect("write");
    let mut env = (*broken.env).clone();
    env.files_root = Some(file.join("sandbox"));
    broken.env = Arc::new(env);
    let e = f
        .run(&Arc::new(broken), "read_file", json!({"path": "a.txt"}))
        .await;
    assert_eq!(code(&e), Some(ErrorCode::SandboxError), "{e:?}");
    seen.insert(ErrorCode::SandboxError);

    // UNKNOWN: the tool panics; the executor survives.
    let e = f.run(&scope, "panic", json!({})).await;
    assert_eq!(code(&e), Some(ErrorCode::Unknown));
    assert!(e
        .error
        .as_ref()
        .expect("error")
        .message
        .contains("panicked"));
    seen.insert(ErrorCode::Unknown);

    assert_eq!(seen.len(), 9, "all nine codes: {seen:?}");
    // And the executor still works after all that.
    assert!(f.run(&scope, "noop", json!({})).await.is_success());
}

#[tokio::test]
async fn envelope_records_identity_timing_and_output() {
    let mut f = fixture();
    let scope = Arc::new(f.scope());
    let input = json!({"expression": "6 * 7"});
    let e = f.run(&scope, "calculator", input.clone()).await;
    assert!(e.is_success(), "{e:?}");
    assert_eq!(e.output, json!({"result": 42.0}));
    assert_eq!(
        (e.name.as_str(), e.version.as_str()),
        ("calculator", "1.0.0")
    );
    assert_eq!(e.input, input);
    assert!(
        e.t_start.ends_with('Z') && e.t_start.len() == "2026-11-22T10:00:00.000Z".len(),
        "{}",
        e.t_start
    );
    assert!(e.t_start <= e.t_end);
    assert_eq!(e.call_id.len(), 64);
}

#[tokio::test]
async fn output_validation_failure_is_unknown() {
    let mut f = fixture();
    let scope = Arc::new(f.scope());
    let e = f.run(&scope, "bad_output", json!({})).await;
    assert_eq!(code(&e), Some(ErrorCode::Unknown));
    assert_eq!(
        e.error.as_ref().expect("error").details["stage"],
        "output_validation"
    );
}

#[tokio::test]
async fn canary_secret_never_appears_in_envelopes_or_blobs() {
    let config = ExecutorConfig {
        max_output_bytes: 64,
        ..ExecutorConfig::default()
    };
    let mut secrets = MemorySecrets::new();
    secrets.set(
        node_runtime::secrets::SecretScope::Workspace,
        "ws",
        "CANARY",
        CANARY,
    );
    let mut f = common::fixture_with(config, secrets);
    let scope = Arc::new(f.scope());
    let mut texts = Vec::new();
    for name in ["leak", "leak_error"] {
        let e = f.run(&scope, name, json!({})).await;
        texts.push(serde_json::to_string(&e).expect("ser"));
    }
    // The leaking output is larger than the cap, so it also went to a blob.
    let leak: node_runtime::ToolEnvelope = serde_json::from_str(&texts[0]).expect("parse");
    assert!(
        leak.truncated,
        "the redacted output exceeds 64 bytes and is stored as a blob"
    );
    for entry in walk(f.blobs_dir.path()) {
        texts.push(String::from_utf8_lossy(&std::fs::read(entry).expect("read")).into_owned());
    }
    let all = texts.join("\n");
    assert!(all.contains("[REDACTED:CANARY]"), "{all}");
    for form in encodings(CANARY) {
        assert!(!all.contains(&form), "canary form `{form}` leaked: {all}");
    }
}

/// The canary in the forms a leak could take.
pub fn encodings(secret: &str) -> Vec<String> {
    vec![
        secret.to_string(),
        secret.bytes().map(|b| format!("{b:02x}")).collect(),
        serde_json::to_string(secret)
            .expect("ser")
            .trim_matches('"')
            .to_string(),
    ]
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Runs in a child process (see `panicking_tool_message_stays_out_of_stderr`).
#[tokio::test]
async fn child_panicking_canary_tool() {
    if std::env::var("GLASSBOX_PANIC_CHILD").is_err() {
        return;
    }
    let mut f = fixture();
    let mut panicky = common::Probe::new("panic");
    panicky.metadata.secrets = vec!["CANARY".into()];
    f.registry
        .register(common::RenamedProbe(panicky, "panic_with_secret"))
        .expect("register");
    let scope = Arc::new(f.scope());
    let e = f.run(&scope, "panic_with_secret", json!({})).await;
    let text = serde_json::to_string(&e).expect("ser");
    println!("ENVELOPE {text}");
}

#[test]
fn panicking_tool_message_stays_out_of_stderr() {
    let out = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args([
            "--exact",
            "child_panicking_canary_tool",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("GLASSBOX_PANIC_CHILD", "1")
        .output()
        .expect("child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed: {stdout}\n{stderr}");
    assert!(stdout.contains("ENVELOPE"), "{stdout}");
    assert!(
        stdout.contains("[REDACTED:CANARY]"),
        "the envelope carries the redacted message: {stdout}"
    );
    assert!(stderr.contains("a tool panicked"), "{stderr}");
    for form in encodings(CANARY) {
        assert!(
            !stderr.contains(&form),
            "stderr leaked the canary: {stderr}"
        );
        assert!(
            !stdout.contains(&form),
            "stdout leaked the canary: {stdout}"
        );
    }
}

#[tokio::test]
async fn output_cap_boundary() {
    const MAX: usize = 1000;
    let config = ExecutorConfig {
        max_output_bytes: MAX,
        ..ExecutorConfig::default()
    };
    let mut f = common::fixture_with(config, MemorySecrets::new());
    let scope = Arc::new(f.scope());
    // The tool returns a JSON string: its serialized size is len + 2 quotes.
    for (size, truncated) in [(MAX - 1, false), (MAX, false), (MAX + 1, true)] {
        let e = f.run(&scope, "big", json!({"len": size - 2})).await;
        assert!(e.is_success(), "{e:?}");
        assert_eq!(e.truncated, truncated, "size {size}");
        if !truncated {
            assert_eq!(serde_json::to_vec(&e.output).expect("ser").len(), size);
            assert!(e.attachments.is_empty());
            continue;
        }
        let [blob] = e.attachments.as_slice() else {
            panic!("one blob attachment: {e:?}")
        };
        assert_eq!(blob.kind, AttachmentKind::Blob);
        assert_eq!(blob.bytes, Some(size as u64));
        let hash = blob.url.rsplit('/').next().expect("hash in url");
        let stored =
            std::fs::read(f.blobs_dir.path().join(&hash[..2]).join(hash)).expect("blob readable");
        assert_eq!(blake3::hash(&stored).to_hex().to_string(), hash);
        let full: Value = serde_json::from_slice(&stored).expect("blob is the full JSON");
        assert_eq!(full.as_str().map(str::len), Some(size - 2));
        assert_eq!(e.output["truncated"], true);
        assert!(
            serde_json::to_vec(&e.output).expect("ser").len() <= MAX,
            "preview fits the cap"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_batch_keeps_order_and_isolates_failures() {
    let mut f = fixture();
    let scope = Arc::new(f.scope());
    let calls = vec![
        f.call("sleep", json!({"ms": 300})),
        f.call("panic", json!({})),
        f.call("sleep_short", json!({"ms": 10_000})),
        f.call("calculator", json!({"expression": "1+"})),
        f.call("noop", json!({})),
    ];
    let ids: Vec<String> = calls.iter().map(|c| c.call_id.clone()).collect();
    let start = Instant::now();
    let envelopes = f
        .executor
        .execute_batch(scope, calls, Usage::default())
        .await;
    let took = start.elapsed();
    assert_eq!(
        envelopes
            .iter()
            .map(|e| e.call_id.clone())
            .collect::<Vec<_>>(),
        ids,
        "model order kept"
    );
    assert!(
        envelopes[0].is_success(),
        "slow call completes: {:?}",
        envelopes[0]
    );
    assert_eq!(code(&envelopes[1]), Some(ErrorCode::Unknown));
    assert_eq!(code(&envelopes[2]), Some(ErrorCode::Timeout));
    assert_eq!(code(&envelopes[3]), Some(ErrorCode::ValidationError));
    assert!(envelopes[4].is_success());
    // Concurrent: the batch takes about as long as its slowest call, not the sum.
    assert!(
        took < Duration::from_millis(300 + 250),
        "batch took {took:?}"
    );
}

/// The node's policy lowers how many calls of a turn run at once: one at
/// a time, three sleeps of 100 ms take at least their sum.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_caps_how_many_calls_run_at_once() {
    let mut f = fixture();
    let mut scope = f.scope();
    scope.policy.max_parallel_calls = 1;
    let calls: Vec<_> = (0..3)
        .map(|i| f.call("sleep", json!({"ms": 100 + i})))
        .collect();
    let start = Instant::now();
    let envelopes = f
        .executor
        .execute_batch(Arc::new(scope), calls, Usage::default())
        .await;
    assert!(envelopes.iter().all(|e| e.is_success()));
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(300),
        "one at a time: {took:?}"
    );
}

#[tokio::test]
async fn aborting_the_run_cancels_calls_in_flight() {
    let mut f = fixture();
    let scope = Arc::new(f.scope());
    let calls = vec![
        f.call("sleep", json!({"ms": 30_000})),
        f.call("sleep", json!({"ms": 30_001})),
    ];
    let cancel = scope.cancel.clone();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let start = Instant::now();
    let envelopes = f
        .executor
        .execute_batch(scope, calls, Usage::default())
        .await;
    canceller.await.expect("canceller");
    assert!(start.elapsed() < Duration::from_secs(5));
    for e in envelopes {
        assert_eq!(code(&e), Some(ErrorCode::Unknown));
        assert_eq!(
            e.error.as_ref().expect("error").details["reason"],
            "CANCELLED"
        );
    }
}

#[tokio::test]
async fn cache_is_per_workspace_skips_errors_and_honours_ttl() {
    let mut f = fixture();
    let scope = Arc::new(f.scope());
    let first = f.run(&scope, "cached_counter", json!({"n": 1})).await;
    let second = f.run(&scope, "cached_counter", json!({"n": 1})).await;
    assert!(!first.cached && second.cached);
    assert_eq!(first.output, second.output);
    assert_ne!(
        first.call_id, second.call_id,
        "repeated identical calls get distinct ids"
    );

    let mut other = f.scope();
    other.owner.workspace_id = "another".into();
    let other_ws = f
        .run(&Arc::new(other), "cached_counter", json!({"n": 1}))
        .await;
    assert!(!other_ws.cached, "never shared across workspaces");

    // Errors are not cached: the same failing input fails fresh each time.
    let bad1 = f
        .run(&scope, "calculator", json!({"expression": "1/0"}))
        .await;
    let bad2 = f
        .run(&scope, "calculator", json!({"expression": "1/0"}))
        .await;
    assert!(!bad1.cached && !bad2.cached && bad2.error.is_some());

    // A calculator success is cached forever.
    f.run(&scope, "calculator", json!({"expression": "2+2"}))
        .await;
    assert!(
        f.run(&scope, "calculator", json!({"expression": "2+2"}))
            .await
            .cached
    );

    // TTL of 1 s.
    f.run(&scope, "ttl_counter", json!({"n": 7})).await;
    assert!(f.run(&scope, "ttl_counter", json!({"n": 7})).await.cached);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(
        !f.run(&scope, "ttl_counter", json!({"n": 7})).await.cached,
        "expired after its TTL"
    );

    // Writes are never cached even if they would be asked to.
    let e = f
        .run_approved("write_file", json!({"path": "w.txt", "content": "a"}))
        .await;
    assert!(e.is_success() && !e.cached, "{e:?}");
}

#[tokio::test]
async fn writes_need_approval_of_that_exact_call() {
    let mut f = fixture();
    let scope = Arc::new(f.scope());
    let e = f
        .run(
            &scope,
            "write_file",
            json!({"path": "a.txt", "content": "hi"}),
        )
        .await;
    assert_eq!(code(&e), Some(ErrorCode::PolicyDenied));
    assert_eq!(
        e.error.as_ref().expect("error").details["reason"],
        "APPROVAL_REQUIRED"
    );
    assert!(!f.files_dir.path().join("a.txt").exists(), "not executed");

    let e = f
        .run_approved("write_file", json!({"path": "a.txt", "content": "hi"}))
        .await;
    assert!(e.is_success(), "{e:?}");
    assert_eq!(
        std::fs::read_to_string(f.files_dir.path().join("a.txt")).expect("written"),
        "hi"
    );

    // A read-only node refuses writes outright, approval or not.
    let mut read_only = f.scope();
    read_only.policy.side_effect_ceiling = node_runtime::tool_spec::SideEffects::Reads;
    let e = f
        .run(
            &Arc::new(read_only),
            "write_file",
            json!({"path": "b.txt", "content": "x"}),
        )
        .await;
    assert_eq!(
        e.error.as_ref().expect("error").details["reason"],
        "SIDE_EFFECTS"
    );
}

#[tokio::test]
async fn max_tool_calls_counts_within_a_batch() {
    let mut f = fixture();
    let mut scope = f.scope();
    scope.policy.max_tool_calls = 2;
    let calls = vec![
        f.call("noop", json!({"a": 1})),
        f.call("noop", json!({"a": 2})),
        f.call("noop", json!({"a": 3})),
    ];
    let envelopes = f
        .executor
        .execute_batch(Arc::new(scope), calls, Usage::default())
        .await;
    assert!(envelopes[0].is_success() && envelopes[1].is_success());
    assert_eq!(
        envelopes[2].error.as_ref().expect("denied").details["reason"],
        "MAX_TOOL_CALLS"
    );
}

#[tokio::test]
async fn file_tools_stay_inside_their_directory() {
    let mut f = fixture();
    let scope = Arc::new(f.scope());
    let root = f.files_dir.path().to_path_buf();
    std::fs::create_dir(root.join("sub")).expect("mkdir");
    std::fs::write(root.join("sub/ok.txt"), "inside").expect("write");
    let outside = tempfile::tempdir().expect("tmp");
    std::fs::write(outside.path().join("secret.txt"), "outside").expect("write");
    std::os::unix::fs::symlink(outside.path(), root.join("escape")).expect("symlink");
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("link.txt"))
        .expect("symlink");
    // A link that stays inside is not followed either: a component that is
    // a link could be swapped for one that leads out between check and use.
    std::os::unix::fs::symlink(root.join("sub"), root.join("alias")).expect("symlink");

    let ok = f
        .run(&scope, "read_file", json!({"path": "sub/ok.txt"}))
        .await;
    assert_eq!(ok.output["content"], "inside");
    let listing = f.run(&scope, "list_dir", json!({"path": "."})).await;
    assert!(listing.is_success(), "{listing:?}");

    for path in [
        "../x",
        "/etc/passwd",
        "sub/../../x",
        "escape/secret.txt",
        "link.txt",
        "alias/ok.txt",
    ] {
        let e = f.run(&scope, "read_file", json!({"path": path})).await;
        assert_eq!(code(&e), Some(ErrorCode::PolicyDenied), "{path}: {e:?}");
        assert!(
            !serde_json::to_string(&e)
                .expect("ser")
                .contains("outside\""),
            "{path}"
        );
    }
    let e = f.run(&scope, "list_dir", json!({"path": "escape"})).await;
    assert_eq!(code(&e), Some(ErrorCode::PolicyDenied));

    for path in ["escape/new.txt", "link.txt", "../new.txt", "alias/new.txt"] {
        let e = f
            .run_approved("write_file", json!({"path": path, "content": "pwned"}))
            .await;
        assert_eq!(code(&e), Some(ErrorCode::PolicyDenied), "{path}: {e:?}");
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).expect("read"),
        "outside"
    );
    assert!(!outside.path().join("new.txt").exists());
    assert!(!root.join("sub/new.txt").exists());
    let written = f
        .run_approved(
            "write_file",
            json!({"path": "sub/new.txt", "content": "fine"}),
        )
        .await;
    assert!(written.is_success(), "{written:?}");
    let read = f
        .run(&scope, "read_file", json!({"path": "sub/new.txt"}))
        .await;
    assert_eq!(read.output["content"], "fine");
}

#[tokio::test]
async fn builtin_tools_reject_bad_input() {
    let mut f = fixture();
    let scope = Arc::new(f.scope());
    let cases = [
        ("calculator", json!({})),
        ("calculator", json!({"expression": "2 +", "extra": 1})),
        ("calculator", json!({"expression": "import os"})),
        ("json_query", json!({"program": ".a"})),
        ("json_query", json!({"program": ".a |", "data": {}})),
        (
            "sql_query",
            json!({"connection": "none", "query": "SELECT 1"}),
        ),
        ("http_request", json!({"url": "not a url"})),
        ("read_file", json!({"path": ""})),
    ];
    for (tool, input) in cases {
        let e = f.run(&scope, tool, input.clone()).await;
        assert_eq!(
            code(&e),
            Some(ErrorCode::ValidationError),
            "{tool} {input}: {e:?}"
        );
    }
    let e = f
        .run(
            &scope,
            "sql_query",
            json!({"connection": "x", "query": "DELETE FROM t"}),
        )
        .await;
    assert!(e.error.is_some());
    // An approved write with bad input still fails validation.
    let e = f.run_approved("write_file", json!({"path": "a.txt"})).await;
    assert_eq!(code(&e), Some(ErrorCode::ValidationError), "{e:?}");
    // An unknown method counts as a write, so the guard stops it first.
    let e = f
        .run(
            &scope,
            "http_request",
            json!({"url": "http://127.0.0.1:9/", "method": "TRACE"}),
        )
        .await;
    assert_eq!(code(&e), Some(ErrorCode::PolicyDenied));
    let e = f
        .run(&scope, "http_request", json!({"url": "file:///etc/passwd"}))
        .await;
    assert_eq!(code(&e), Some(ErrorCode::PolicyDenied));
}
