//! What the provider tests share: an in-process mock HTTP server on
//! loopback that records each request and answers with canned responses,
//! and a model environment with quick retries whose egress guard admits
//! only that loopback address.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use node_runtime::model::{Egress, ModelEnv, RetryPolicy};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A canned answer: status, extra headers, body.
pub type Canned = (u16, Vec<(&'static str, &'static str)>, String);

/// Answers each request with the next canned answer.
pub struct MockServer {
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl MockServer {
    pub async fn start(responses: Vec<Canned>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let queue = Arc::new(Mutex::new(VecDeque::from(responses)));
        let recorded = requests.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                let (head_end, content_length) = loop {
                    let n = stream.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break (None, 0);
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..pos]).to_lowercase();
                        let len = head
                            .lines()
                            .find_map(|l| {
                                l.strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        break (Some(pos + 4), len);
                    }
                };
                let Some(head_end) = head_end else { continue };
                while buf.len() < head_end + content_length {
                    let n = stream.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let mut lines = head.lines();
                let path = lines
                    .next()
                    .and_then(|l| l.split_whitespace().nth(1))
                    .unwrap_or_default()
                    .to_string();
                let headers = lines
                    .filter_map(|l| {
                        l.split_once(':')
                            .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string()))
                    })
                    .collect();
                let body = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
                recorded.lock().expect("lock").push(Recorded {
                    path,
                    headers,
                    body,
                });
                let (status, extra, body) =
                    queue
                        .lock()
                        .expect("lock")
                        .pop_front()
                        .unwrap_or((500, vec![], "{}".into()));
                let mut response = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n",
                    body.len()
                );
                if !extra
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
                {
                    response.push_str("content-type: application/json\r\n");
                }
                for (k, v) in extra {
                    response.push_str(&format!("{k}: {v}\r\n"));
                }
                response.push_str("\r\n");
                response.push_str(&body);
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            }
        });
        Self { url, requests }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }
}

/// Quick retries, and the egress guard opened for the loopback mocks only.
pub fn fast_env() -> ModelEnv {
    ModelEnv {
        retry: RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(5),
        },
        egress: Egress::with_allow_hosts(vec!["127.0.0.1".into()]),
    }
}
