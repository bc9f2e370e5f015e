//! The HTTP exchange shared by the remote providers: every request through
//! the egress guard ([`Endpoint`], `egress.rs`), bounded retries for 429
//! (honouring Retry-After in both its forms) and 5xx, the provider's own
//! message for other 4xx, a capped answer, and a clear error for a body
//! that is not JSON.

use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::egress::{read_capped, retry_after, Egress};
use super::ModelError;

/// How often and how long to retry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all (first try included).
    pub max_attempts: u32,
    /// First backoff; doubles per attempt.
    pub base_delay: Duration,
    /// No wait (Retry-After included) is longer than this.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

/// The provider's error message from a JSON error body, else the raw text.
fn error_message(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("message"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| body.chars().take(300).collect())
}

/// One provider URL behind the egress guard. The URL is checked, and its
/// client (pinned to the checked address) built, on first use; later calls
/// reuse both, so a name is resolved once per model.
pub struct Endpoint {
    provider: &'static str,
    pub url: String,
    egress: Egress,
    client: tokio::sync::OnceCell<reqwest::Client>,
}

impl Endpoint {
    pub fn new(provider: &'static str, url: String, egress: Egress) -> Self {
        Self {
            provider,
            url,
            egress,
            client: tokio::sync::OnceCell::new(),
        }
    }

    async fn client(&self) -> Result<&reqwest::Client, ModelError> {
        self.client
            .get_or_try_init(|| self.egress.client_for(self.provider, &self.url))
            .await
    }
}

/// POSTs `body` to the endpoint and returns the JSON answer, retrying as
/// the policy says.
pub async fn post_json(
    endpoint: &Endpoint,
    headers: &[(&str, String)],
    body: &Value,
    retry: RetryPolicy,
) -> Result<Value, ModelError> {
    let provider = endpoint.provider;
    let response = send(endpoint, headers, body, retry).await?;
    let text = read_capped(provider, response, endpoint.egress.max_response_bytes).await?;
    serde_json::from_str(&text).map_err(|e| ModelError::Malformed {
        provider,
        message: format!(
            "body is not JSON ({e}): {}",
            text.chars().take(200).collect::<String>()
        ),
    })
}

/// POSTs `body` (a streaming request) and hands each server-sent event's
/// name and data to `on_event` as it arrives, until the stream ends or
/// `on_event` says it is done. The stream as a whole is capped like any
/// answer.
pub async fn post_stream(
    endpoint: &Endpoint,
    headers: &[(&str, String)],
    body: &Value,
    retry: RetryPolicy,
    on_event: &mut (dyn FnMut(&str, &str) -> Result<bool, ModelError> + Send),
) -> Result<(), ModelError> {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;
    let provider = endpoint.provider;
    let max = endpoint.egress.max_response_bytes;
    let response = send(endpoint, headers, body, retry).await?;
    // The byte stream fails itself once past the cap.
    enum Broke {
        TooLarge,
        Network(String),
    }
    impl std::fmt::Display for Broke {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self {
                Broke::TooLarge => f.write_str("too large"),
                Broke::Network(e) => f.write_str(e),
            }
        }
    }
    let mut read = 0usize;
    let bytes = response.bytes_stream().map(move |chunk| match chunk {
        Ok(chunk) => {
            read += chunk.len();
            if read > max {
                Err(Broke::TooLarge)
            } else {
                Ok(chunk)
            }
        }
        Err(e) => Err(Broke::Network(e.to_string())),
    });
    let mut events = Box::pin(bytes.eventsource());
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| match e {
            eventsource_stream::EventStreamError::Transport(Broke::TooLarge) => {
                super::egress::too_large(provider, max)
            }
            eventsource_stream::EventStreamError::Transport(Broke::Network(message)) => {
                ModelError::Network { provider, message }
            }
            other => ModelError::Malformed {
                provider,
                message: format!("the answer's event stream is not SSE: {other}"),
            },
        })?;
        if on_event(&event.event, &event.data)? {
            return Ok(());
        }
    }
    Ok(())
}

/// Sends the request, retrying 429, 5xx and failed connections as the
/// policy says, and returns the first successful answer unread. Any other
/// status fails with the provider's own message.
async fn send(
    endpoint: &Endpoint,
    headers: &[(&str, String)],
    body: &Value,
    retry: RetryPolicy,
) -> Result<reqwest::Response, ModelError> {
    let provider = endpoint.provider;
    let client = endpoint.client().await?;
    let url = endpoint.url.as_str();
    let mut last = String::new();
    for attempt in 0..retry.max_attempts.max(1) {
        let mut req = client.post(url).json(body);
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let backoff = retry
            .base_delay
            .saturating_mul(2u32.saturating_pow(attempt))
            .min(retry.max_delay);
        let response = match req.send().await {
            Ok(r) => r,
            Err(e) => {
                last = e.to_string();
                if e.is_connect() || e.is_timeout() {
                    tokio::time::sleep(backoff).await;
                    continue;
                }
                return Err(ModelError::Network {
                    provider,
                    message: e.to_string(),
                });
            }
        };
        let status = response.status().as_u16();
        if (200..=299).contains(&status) {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| retry_after(v, SystemTime::now()))
            .map(|d| d.min(retry.max_delay));
        let text = read_capped(provider, response, endpoint.egress.max_response_bytes).await?;
        match status {
            429 => {
                last = format!("HTTP 429: {}", error_message(&text));
                tokio::time::sleep(retry_after.unwrap_or(backoff)).await;
            }
            500..=599 => {
                last = format!("HTTP {status}: {}", error_message(&text));
                tokio::time::sleep(retry_after.unwrap_or(backoff)).await;
            }
            _ => {
                return Err(ModelError::Provider {
                    provider,
                    status,
                    message: error_message(&text),
                })
            }
        }
    }
    Err(ModelError::RetriesExhausted {
        provider,
        attempts: retry.max_attempts,
        last,
    })
}
