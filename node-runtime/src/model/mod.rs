//! Model providers: one request and one response type for every provider
//! (plain data in `crate::chat`, re-exported here), the [`ChatModel`]
//! trait, one file per provider and one factory ([`build_model`]).
//!
//! Each adapter owns its `tool_schemas()` normalizer for its API's
//! strictness (seed 002) and its own message format; the provider's tool-call
//! id round-trips in that format, while our `call_id` keys the envelope.

pub mod anthropic;
pub mod check;
pub mod egress;
mod http;
pub mod openai;
pub mod schema;
pub mod scripted;

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::agent_config::ProviderConfig;
use crate::secrets::SecretValue;

pub use crate::chat::{
    ChatRequest, ChatResponse, Message, ModelUsage, ProviderToolCall, StopReason, TokenUsage,
    ToolDefinition,
};
pub use egress::Egress;
pub use http::RetryPolicy;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("{provider} answered HTTP {status}: {message}")]
    Provider {
        provider: &'static str,
        status: u16,
        message: String,
    },
    #[error("{provider} could not be reached: {message}")]
    Network {
        provider: &'static str,
        message: String,
    },
    #[error("{provider} returned a malformed response: {message}")]
    Malformed {
        provider: &'static str,
        message: String,
    },
    #[error("{provider} still failing after {attempts} attempts: {last}")]
    RetriesExhausted {
        provider: &'static str,
        attempts: u32,
        last: String,
    },
    /// The egress guard refused the provider's URL: nothing was sent.
    #[error("{provider} was not contacted: {message}")]
    Refused {
        provider: &'static str,
        message: String,
    },
    #[error("model configuration error: {0}")]
    Config(String),
    #[error("scripted model: {0}")]
    Script(String),
    /// A replayed run asked for something the bundle does not hold.
    #[error("REPLAY_DIVERGED at step {step}: {message}")]
    ReplayDiverged { step: usize, message: String },
}

/// A chat model with tool calling.
pub trait ChatModel: Send + Sync {
    fn provider(&self) -> &'static str;
    /// The tool list in this provider's wire format, normalized for its API.
    fn tool_schemas(&self, tools: &[ToolDefinition]) -> Vec<Value>;
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>>;

    /// Like [`complete`](Self::complete), and hands each piece of the
    /// answer's text to `on_text` as it arrives when the provider streams
    /// (the config's `stream`). The answer returned is the whole one, the
    /// same as without streaming; the others never stream.
    fn complete_streaming<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_text: &'a TextSink<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        let _ = on_text;
        self.complete(request)
    }
}

/// Where streamed text goes as it arrives.
pub type TextSink<'a> = dyn Fn(&str) + Send + Sync + 'a;

/// How the remote providers reach the network: retries and the egress
/// guard. The host builds it from its configuration (the allow-list of
/// loopback and private hosts, e.g. a local Ollama).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelEnv {
    pub retry: RetryPolicy,
    pub egress: Egress,
}

/// The one factory: builds the provider a config names. `api_key` is the
/// resolved secret named by the config, when it names one.
pub fn build_model(
    config: &ProviderConfig,
    api_key: Option<SecretValue>,
    env: &ModelEnv,
) -> Result<Arc<dyn ChatModel>, ModelError> {
    Ok(match config {
        ProviderConfig::Scripted { script } => {
            Arc::new(scripted::ScriptedModel::from_json(script)?)
        }
        ProviderConfig::Openai {
            base_url,
            model,
            price,
            stream,
            ..
        } => Arc::new(
            openai::OpenAiModel::new(base_url, model, api_key, env)?
                .with_price(crate::pricing::price_for(model, *price))
                .streaming(*stream),
        ),
        ProviderConfig::Azure {
            endpoint,
            deployment,
            api_version,
            price,
            stream,
            ..
        } => {
            let key = api_key.ok_or_else(|| {
                ModelError::Config("the Azure OpenAI provider needs an API key secret".into())
            })?;
            Arc::new(
                openai::OpenAiModel::azure(endpoint, deployment, api_version, key, env)?
                    .with_price(crate::pricing::price_for(config.model_name(), *price))
                    .streaming(*stream),
            )
        }
        ProviderConfig::Anthropic {
            base_url,
            model,
            price,
            stream,
            ..
        } => {
            let key = api_key.ok_or_else(|| {
                ModelError::Config("the Anthropic provider needs an API key secret".into())
            })?;
            Arc::new(
                anthropic::AnthropicModel::new(base_url, model, key, env)?
                    .with_price(crate::pricing::price_for(model, *price))
                    .streaming(*stream),
            )
        }
    })
}
