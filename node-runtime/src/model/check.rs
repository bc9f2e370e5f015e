//! The connection test of an Agent node's provider: one short call, and
//! what happened in words a person can act on.

use std::time::Instant;

use super::{build_model, ChatRequest, Message, ModelEnv, ModelError};
use crate::agent_config::{ModelParams, ProviderConfig};
use crate::secrets::SecretValue;
use crate::wire::ProviderTestResult;

/// Asks the provider for a one-word answer with `api_key` (the secret the
/// config names, already resolved; none when it names none).
pub async fn test_connection(
    config: &ProviderConfig,
    api_key: Option<SecretValue>,
    env: &ModelEnv,
) -> ProviderTestResult {
    let provider = config.kind().to_string();
    let model_name = config.model_name().to_string();
    let started = Instant::now();
    let outcome = async {
        let model = build_model(config, api_key, env)?;
        let request = ChatRequest {
            system: String::new(),
            messages: vec![Message::User {
                text: "Reply with the single word: ok".into(),
            }],
            tools: Vec::new(),
            params: ModelParams {
                temperature: None,
                max_tokens: 16,
            },
        };
        model.complete(&request).await
    }
    .await;
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    match outcome {
        Ok(response) => ProviderTestResult {
            ok: true,
            message: format!("{model_name} answered in {latency_ms:.0} ms"),
            provider,
            model: model_name,
            usage: Some(response.usage),
            latency_ms,
        },
        Err(e) => ProviderTestResult {
            ok: false,
            message: explain(config, &e),
            provider,
            model: model_name,
            usage: None,
            latency_ms,
        },
    }
}

/// A failed test in words: a refused key names its secret.
fn explain(config: &ProviderConfig, error: &ModelError) -> String {
    match (error, config.api_key_secret()) {
        (
            ModelError::Provider {
                status, message, ..
            },
            Some(secret),
        ) if matches!(status, 401 | 403) => {
            format!("the key in secret {secret} was refused ({status}): {message}")
        }
        (
            ModelError::Provider {
                status, message, ..
            },
            None,
        ) if matches!(status, 401 | 403) => {
            format!(
                "the provider wants a key ({status}: {message}); name the secret that holds it \
                 in the node's API key secret"
            )
        }
        (
            ModelError::Provider {
                status: 404,
                message,
                ..
            },
            _,
        ) => format!(
            "the provider has no model `{}` or no such URL (404): {message}",
            config.model_name()
        ),
        (other, _) => other.to_string(),
    }
}
