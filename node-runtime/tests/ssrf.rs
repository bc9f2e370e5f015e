//! SSRF: a corpus of address forms and redirect tricks.
//!
//! Tests send traffic to loopback only. Forms that denote a loopback address
//! (127.0.0.0/8, ::1, and IPv4-mapped loopback) go through the live executor
//! against a loopback listener that counts connections: every one must be
//! refused and the listener must see no connection. Every other form
//! (private, link-local, cloud metadata, NAT64, 6to4, multicast, other
//! schemes) is checked on the guard's decision (`check_target`), which
//! connects to nothing: a regression in the guard must not send a packet
//! off this machine. `live_forms` asserts the split before anything runs.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{code, fixture};
use node_runtime::builtins::http_request::{check_target, redirect_target};
use node_runtime::{ErrorCode, ToolError};
use serde_json::json;

/// Counts connections on 127.0.0.1 until dropped.
struct HitCounter {
    port: u16,
    hits: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl HitCounter {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let hits = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, s) = (hits.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        h.fetch_add(1, Ordering::SeqCst);
                        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi");
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Self { port, hits, stop }
    }
}

impl Drop for HitCounter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Answers `/r/<i>` with a 302 to `targets[i]`.
fn redirector(targets: Vec<String>) -> (u16, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    std::thread::spawn(move || {
        while !s.load(Ordering::SeqCst) {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    let mut buf = [0u8; 2048];
                    let n = stream.read(&mut buf).unwrap_or(0);
                    let req = String::from_utf8_lossy(&buf[..n]);
                    let index: usize = req
                        .split_whitespace()
                        .nth(1)
                        .and_then(|p| p.strip_prefix("/r/"))
                        .and_then(|i| i.parse().ok())
                        .unwrap_or(0);
                    let location = targets.get(index).cloned().unwrap_or_default();
                    let _ = write!(
                        stream,
                        "HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    );
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    (port, stop)
}

fn corpus(p: u16) -> Vec<String> {
    [
        "http://127.0.0.1:{p}/",
        "http://localhost:{p}/",
        "http://LOCALHOST:{p}/",
        "http://localhost.:{p}/",
        "http://127.1:{p}/",
        "http://127.0.1:{p}/",
        "http://2130706433:{p}/",
        "http://0x7f000001:{p}/",
        "http://0x7f.0x0.0x0.0x1:{p}/",
        "http://0177.0.0.1:{p}/",
        "http://017700000001:{p}/",
        "http://0x7f.1:{p}/",
        "http://127.0.0.1.:{p}/",
        "http://%31%32%37.0.0.1:{p}/",
        "http://user:pass@127.0.0.1:{p}/",
        "http://127.0.0.1:{p}#@example.com/",
        "http://0.0.0.0:{p}/",
        "http://0:{p}/",
        "http://[::1]:{p}/",
        "http://[0:0:0:0:0:0:0:1]:{p}/",
        "http://[::ffff:127.0.0.1]:{p}/",
        "http://[::ffff:7f00:1]:{p}/",
        "http://[0:0:0:0:0:ffff:127.0.0.1]:{p}/",
        "http://[::127.0.0.1]:{p}/",
        "http://[::]:{p}/",
        "http://[2002:7f00:1::1]:{p}/",
        "http://[64:ff9b::7f00:1]:{p}/",
        "http://10.0.0.1:{p}/",
        "http://172.16.0.1:{p}/",
        "http://192.168.1.1:{p}/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://100.64.0.1:{p}/",
        "http://100.100.100.200/latest/meta-data/",
        "http://224.0.0.1:{p}/",
        "http://255.255.255.255:{p}/",
        "http://[fe80::1]:{p}/",
        "http://[fc00::1]:{p}/",
        "file:///etc/passwd",
        "gopher://127.0.0.1:{p}/",
        "ftp://127.0.0.1:{p}/",
    ]
    .iter()
    .map(|t| t.replace("{p}", &p.to_string()))
    .collect()
}

/// True when `raw` is an http(s) URL whose host is a loopback address or a
/// name that resolves only to loopback here (`localhost`): the only URLs a
/// test may hand to the live executor.
fn is_loopback_url(raw: &str) -> bool {
    let Ok(url) = url::Url::parse(raw) else {
        return false;
    };
    if !matches!(url.scheme(), "http" | "https") {
        return false;
    }
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Some(url::Host::Domain(d)) => d.trim_end_matches('.').eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// The corpus split into forms the live executor may try (loopback) and
/// forms only the guard's decision may see.
fn live_forms(forms: &[String]) -> (Vec<&String>, Vec<&String>) {
    let (live, decided): (Vec<&String>, Vec<&String>) =
        forms.iter().partition(|u| is_loopback_url(u));
    for url in &live {
        assert!(is_loopback_url(url), "{url} is not loopback");
    }
    (live, decided)
}

fn assert_refused(url: &str, err: &ToolError) {
    assert_eq!(err.code, ErrorCode::PolicyDenied, "{url}: {err:?}");
    assert!(
        matches!(err.details["reason"].as_str(), Some("SSRF" | "SCHEME")),
        "{url}: {err:?}"
    );
}

#[test]
fn the_live_split_keeps_every_non_loopback_form_off_the_network() {
    let forms = corpus(9);
    let (live, decided) = live_forms(&forms);
    for url in [
        "http://10.0.0.1:9/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://[64:ff9b::7f00:1]:9/",
        "http://[2002:7f00:1::1]:9/",
        "http://[::127.0.0.1]:9/",
        "http://0.0.0.0:9/",
        "http://[::]:9/",
        "file:///etc/passwd",
    ] {
        assert!(
            decided.iter().any(|u| u.as_str() == url),
            "{url} would go live"
        );
    }
    assert!(live.iter().any(|u| u.contains("localhost")));
    assert!(live.iter().any(|u| u.contains("[::1]")));
    assert!(
        live.len() >= 15 && decided.len() >= 15,
        "{live:?} {decided:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_forms_are_refused_by_the_executor_and_never_connect() {
    let counter = HitCounter::start();
    let mut f = fixture();
    let scope = Arc::new(f.scope());
    let forms = corpus(counter.port);
    let (live, _) = live_forms(&forms);
    for url in live {
        let e = f.run(&scope, "http_request", json!({ "url": url })).await;
        let err = e
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("{url} was not refused: {e:?}"));
        assert_refused(url, err);
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        counter.hits.load(Ordering::SeqCst),
        0,
        "the loopback listener saw a connection"
    );
}

#[tokio::test]
async fn every_other_form_is_refused_by_the_guard_decision() {
    let forms = corpus(9);
    let (_, decided) = live_forms(&forms);
    for url in decided {
        let err = check_target(url, &[])
            .await
            .err()
            .unwrap_or_else(|| panic!("{url} was not refused"));
        assert_refused(url, &err);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_to_loopback_are_checked_again_and_never_connect() {
    let counter = HitCounter::start();
    let p = counter.port;
    let targets = vec![
        format!("http://127.0.0.1:{p}/"),
        format!("http://localhost:{p}/"),
        format!("http://[::1]:{p}/"),
        format!("http://0x7f000001:{p}/"),
        format!("//127.0.0.1:{p}/protocol-relative"),
    ];
    let n = targets.len();
    let (port, stop) = redirector(targets.clone());
    let base = url::Url::parse(&format!("http://127.0.0.1:{port}/r/0")).expect("url");
    for t in &targets {
        let next = redirect_target(&base, t).expect("joins");
        assert!(is_loopback_url(next.as_str()), "{next} is not loopback");
    }
    let mut f = fixture();
    // Only the redirector itself is opened; where it points is checked again.
    let mut scope = f.scope();
    let mut env = (*scope.env).clone();
    env.http_allow_hosts = vec![format!("127.0.0.1:{port}")];
    scope.env = Arc::new(env);
    let scope = Arc::new(scope);
    for i in 0..n {
        let e = f
            .run(
                &scope,
                "http_request",
                json!({ "url": format!("http://127.0.0.1:{port}/r/{i}") }),
            )
            .await;
        assert_eq!(
            code(&e),
            Some(ErrorCode::PolicyDenied),
            "redirect {i}: {e:?}"
        );
    }
    stop.store(true, Ordering::SeqCst);
    assert_eq!(counter.hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn redirects_elsewhere_are_refused_by_the_guard_decision() {
    // The executor resolves a Location with `redirect_target` and checks the
    // result with `check_target` before connecting: the same two steps here,
    // with nothing sent.
    let base = url::Url::parse("https://api.example.com/start").expect("url");
    for location in [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://[fd00:ec2::254]/",
        "http://[64:ff9b::a00:1]/",
        "http://100.100.100.200/latest/meta-data/",
        "file:///etc/passwd",
        "gopher://10.0.0.1/",
        "//192.168.1.1/protocol-relative",
    ] {
        let next = redirect_target(&base, location).expect("joins");
        assert!(!is_loopback_url(next.as_str()));
        let err = check_target(next.as_str(), &[])
            .await
            .err()
            .unwrap_or_else(|| panic!("redirect to {location} was not refused"));
        assert_refused(location, &err);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_listed_host_is_reached_with_idempotency_key_on_writes() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        let mut buf = [0u8; 4096];
        let n = stream.read(&mut buf).expect("read");
        let req = String::from_utf8_lossy(&buf[..n]).to_string();
        let body = "{\"created\":true}";
        write!(
            stream,
            "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("write");
        req
    });
    let mut f = fixture();
    let call = f.call(
        "http_request",
        json!({"url": format!("http://{addr}/items"), "method": "POST", "body": {"a": 1}}),
    );
    let mut scope = f.scope();
    let mut env = (*scope.env).clone();
    env.http_allow_hosts = vec![addr.clone()];
    scope.env = Arc::new(env);
    scope.approved.insert(call.call_id.clone());
    let call_id = call.call_id.clone();
    let e = f
        .executor
        .execute(Arc::new(scope), call, Default::default())
        .await;
    assert!(e.is_success(), "{e:?}");
    assert_eq!(e.output["status"], 201);
    assert_eq!(e.output["body"], json!({"created": true}));
    let request = server.join().expect("server");
    assert!(
        request
            .to_lowercase()
            .contains(&format!("idempotency-key: {call_id}")),
        "{request}"
    );
}

/// Records each request's head on 127.0.0.1; `/hop` redirects to `/final`
/// on itself (same origin), anything else answers 200.
fn recorder() -> (u16, Arc<std::sync::Mutex<Vec<String>>>, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let (r, s) = (seen.clone(), stop.clone());
    std::thread::spawn(move || {
        while !s.load(Ordering::SeqCst) {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    let mut buf = [0u8; 4096];
                    let n = stream.read(&mut buf).unwrap_or(0);
                    let head = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
                    let answer = if head.starts_with("get /hop") {
                        "HTTP/1.1 302 Found\r\nlocation: /final\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    } else {
                        r.lock().expect("lock").push(head);
                        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"
                    };
                    let _ = stream.write_all(answer.as_bytes());
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    (port, seen, stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_do_not_follow_a_redirect_to_another_origin() {
    let (target, seen, stop_target) = recorder();
    let (port, stop) = redirector(vec![format!("http://127.0.0.1:{target}/final")]);
    let mut f = fixture();
    let mut scope = f.scope();
    let mut env = (*scope.env).clone();
    env.http_allow_hosts = vec!["127.0.0.1".into()];
    scope.env = Arc::new(env);
    let scope = Arc::new(scope);
    let headers = json!({"Authorization": "Bearer sk-secret", "Cookie": "s=1",
                         "Proxy-Authorization": "Basic eA==", "X-Trace": "t1"});
    // Same origin: the credentials go along.
    let same = f
        .run(
            &scope,
            "http_request",
            json!({"url": format!("http://127.0.0.1:{target}/hop"), "headers": headers}),
        )
        .await;
    assert!(same.is_success(), "{same:?}");
    // Another origin (another port): they are dropped, the rest is kept.
    let other = f
        .run(
            &scope,
            "http_request",
            json!({"url": format!("http://127.0.0.1:{port}/r/0"), "headers": headers}),
        )
        .await;
    assert!(other.is_success(), "{other:?}");
    stop.store(true, Ordering::SeqCst);
    stop_target.store(true, Ordering::SeqCst);
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(
        seen[0].contains("authorization: bearer sk-secret") && seen[0].contains("cookie: s=1"),
        "{}",
        seen[0]
    );
    assert!(
        !seen[1].contains("authorization") && !seen[1].contains("cookie"),
        "{}",
        seen[1]
    );
    assert!(seen[1].contains("x-trace: t1"), "{}", seen[1]);
}
