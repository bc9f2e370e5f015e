//! Model providers: one request and one response type for every provider,
//! the [`ChatModel`] trait, one file per provider and one factory
//! ([`build_model`]).
//!
//! Each adapter owns its `tool_schemas()` normalizer for its API's
//! strictness (seed 002) and its own message format; the provider's tool-call
//! id round-trips in that format, while our `call_id` keys the envelope.

pub mod anthropic;
mod http;
pub mod openai;
pub mod schema;
pub mod scripted;

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent_config::{ModelParams, ProviderConfig};
use crate::secrets::SecretValue;
use crate::tool_spec::ToolSpec;

pub use http::RetryPolicy;

/// A tool call the model asked for, with the provider's own id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// One message of the conversation, provider-neutral.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    User {
        text: String,
    },
    Assistant {
        #[serde(default)]
        text: String,
        #[serde(default)]
        tool_calls: Vec<ProviderToolCall>,
    },
    /// The result of one tool call, answering `provider_call_id`.
    ToolResult {
        provider_call_id: String,
        name: String,
        /// The output, or `{"error": {code, message, details}}`.
        content: Value,
        is_error: bool,
    },
}

/// The model-facing description of a tool (before normalization).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

impl ToolDefinition {
    pub fn from_spec(spec: &ToolSpec) -> Self {
        Self {
            name: spec.name.clone(),
            description: spec.description.clone(),
            input_schema: spec.input_schema.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub system: String,
    pub messages: Vec<Message>,
    /// Empty: the model must answer in text (used for the forced final answer).
    pub tools: Vec<ToolDefinition>,
    pub params: ModelParams,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    Other,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    pub text: String,
    pub tool_calls: Vec<ProviderToolCall>,
    pub usage: TokenUsage,
    /// Credits spent by this call (0 when the provider reports none).
    pub cost: f64,
    pub stop_reason: StopReason,
}

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
}

/// The one factory: builds the provider a config names. `api_key` is the
/// resolved secret named by the config, when it names one.
pub fn build_model(
    config: &ProviderConfig,
    api_key: Option<SecretValue>,
    retry: RetryPolicy,
) -> Result<Arc<dyn ChatModel>, ModelError> {
    Ok(match config {
        ProviderConfig::Scripted { script } => {
            Arc::new(scripted::ScriptedModel::from_json(script)?)
        }
        ProviderConfig::Openai {
            base_url, model, ..
        } => Arc::new(openai::OpenAiModel::new(base_url, model, api_key, retry)?),
        ProviderConfig::Anthropic {
            base_url, model, ..
        } => {
            let key = api_key.ok_or_else(|| {
                ModelError::Config("the Anthropic provider needs an API key secret".into())
            })?;
            Arc::new(anthropic::AnthropicModel::new(base_url, model, key, retry)?)
        }
    })
}
