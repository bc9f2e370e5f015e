//! Provider egress: every request to a model provider goes out through the
//! same address guard as the `http_request` tool
//! ([`check_target`](crate::builtins::http_request::check_target)): http(s)
//! only, public addresses only in every notation, loopback and private
//! addresses only when allow-listed (`GLASSBOX_HTTP_ALLOW_HOSTS`, for a local
//! Ollama or vLLM), and the client connects to exactly the address that was
//! checked. No redirect is followed, no proxy is taken from the environment,
//! connect and total time are bounded, and an answer larger than
//! `max_response_bytes` is cut off and refused.

use std::time::{Duration, SystemTime};

use futures::StreamExt;

use super::ModelError;
use crate::builtins::http_request::{check_target, tls};

/// The limits of one provider's traffic.
#[derive(Debug, Clone, PartialEq)]
pub struct Egress {
    /// `host` or `host:port` entries that may be loopback or private.
    pub allow_hosts: Vec<String>,
    pub connect_timeout: Duration,
    /// One request, from connect to the last byte of the answer.
    pub timeout: Duration,
    /// The largest answer read; a larger one fails the call.
    pub max_response_bytes: usize,
}

impl Default for Egress {
    fn default() -> Self {
        Self {
            allow_hosts: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(120),
            max_response_bytes: 8 * 1024 * 1024,
        }
    }
}

impl Egress {
    pub fn with_allow_hosts(allow_hosts: Vec<String>) -> Self {
        Self {
            allow_hosts,
            ..Self::default()
        }
    }

    /// Checks `url` with the guard and builds a client that can reach only
    /// the address that was checked. Nothing is sent.
    pub async fn client_for(
        &self,
        provider: &'static str,
        url: &str,
    ) -> Result<reqwest::Client, ModelError> {
        let target =
            check_target(url, &self.allow_hosts)
                .await
                .map_err(|e| ModelError::Refused {
                    provider,
                    message: format!("base URL refused: {}", e.message),
                })?;
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(self.connect_timeout)
            .timeout(self.timeout);
        // The process's shared TLS configuration: each model (a run's Agent
        // Node) and MCP session builds its own client, and one building its
        // own TLS configuration would load the system's roots again.
        if let Some(tls) = tls() {
            builder = builder.use_preconfigured_tls(tls);
        }
        if let Some((host, addr)) = &target.pin {
            builder = builder.resolve(host, *addr);
        }
        builder
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build HTTP client: {e}")))
    }
}

/// Reads an answer's body, refusing one larger than `max` bytes.
pub async fn read_capped(
    provider: &'static str,
    response: reqwest::Response,
    max: usize,
) -> Result<String, ModelError> {
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(too_large(provider, max));
    }
    let mut bytes = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| ModelError::Network {
            provider,
            message: e.to_string(),
        })?;
        if bytes.len() + chunk.len() > max {
            return Err(too_large(provider, max));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

pub fn too_large(provider: &'static str, max: usize) -> ModelError {
    ModelError::Malformed {
        provider,
        message: format!("the answer is larger than {max} bytes"),
    }
}

/// A `Retry-After` value in either of its forms: delay seconds (`120`) or
/// an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT`, a date in the past meaning
/// now).
pub fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").expect("date");
        assert_eq!(retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(retry_after(" 1.5 ", now), Some(Duration::from_millis(1500)));
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after("-3", now), None);
        assert_eq!(retry_after("soon", now), None);
    }

    #[tokio::test]
    async fn refused_addresses_are_refused_before_any_connection() {
        // The guard's decision only: nothing here connects anywhere.
        let egress = Egress::default();
        for url in [
            "http://10.0.0.1/v1",
            "http://169.254.169.254/v1",
            "http://[fd00::1]/v1",
            "http://2130706433/v1",
            "http://[::ffff:127.0.0.1]/v1",
            "file:///etc/passwd",
        ] {
            let err = egress.client_for("openai", url).await.err();
            assert!(
                matches!(err, Some(ModelError::Refused { .. })),
                "{url}: {err:?}"
            );
        }
        let allowed = Egress::with_allow_hosts(vec!["127.0.0.1".into()]);
        assert!(allowed
            .client_for("openai", "http://127.0.0.1:1/v1")
            .await
            .is_ok());
    }
}
