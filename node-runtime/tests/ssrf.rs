//! SSRF: a corpus of address forms and redirect tricks against a loopback
//! listener that counts connections. Every one must be refused and the
//! listener must see no connection at all.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{code, fixture};
use node_runtime::ErrorCode;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn address_forms_are_all_refused_and_never_connect() {
    let counter = HitCounter::start();
    let mut f = fixture();
    let scope = Arc::new(f.scope());
    let forms = corpus(counter.port);
    assert!(forms.len() >= 25);
    for url in &forms {
        let e = f.run(&scope, "http_request", json!({ "url": url })).await;
        let err = e
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("{url} was not refused: {e:?}"));
        assert_eq!(err.code, ErrorCode::PolicyDenied, "{url}: {err:?}");
        assert!(
            matches!(err.details["reason"].as_str(), Some("SSRF" | "SCHEME")),
            "{url}: {err:?}"
        );
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        counter.hits.load(Ordering::SeqCst),
        0,
        "the loopback listener saw a connection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_checked_again() {
    let counter = HitCounter::start();
    let p = counter.port;
    let targets = vec![
        format!("http://127.0.0.1:{p}/"),
        format!("http://localhost:{p}/"),
        format!("http://[::1]:{p}/"),
        format!("http://0x7f000001:{p}/"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "file:///etc/passwd".to_string(),
        format!("//127.0.0.1:{p}/protocol-relative"),
    ];
    let n = targets.len();
    let (port, stop) = redirector(targets);
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
