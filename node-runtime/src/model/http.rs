//! The HTTP exchange shared by the remote providers: bounded retries for
//! 429 (honouring Retry-After) and 5xx, the provider's own message for other
//! 4xx, and a clear error for a body that is not JSON.

use std::time::Duration;

use serde_json::Value;

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

/// POSTs `body` and returns the JSON answer, retrying as the policy says.
pub async fn post_json(
    provider: &'static str,
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, String)],
    body: &Value,
    retry: RetryPolicy,
) -> Result<Value, ModelError> {
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
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|s| Duration::from_secs_f64(s.max(0.0)).min(retry.max_delay));
        let text = response.text().await.map_err(|e| ModelError::Network {
            provider,
            message: e.to_string(),
        })?;
        match status {
            200..=299 => {
                return serde_json::from_str(&text).map_err(|e| ModelError::Malformed {
                    provider,
                    message: format!(
                        "body is not JSON ({e}): {}",
                        text.chars().take(200).collect::<String>()
                    ),
                })
            }
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

pub fn client(timeout: Duration) -> Result<reqwest::Client, ModelError> {
    reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| ModelError::Config(format!("cannot build HTTP client: {e}")))
}
