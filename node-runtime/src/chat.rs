//! The provider-neutral conversation with a model: messages, tool
//! definitions as offered, one request and one response type. Plain data
//! (wasm-safe): replay bundles record them and the app reads them; the
//! adapters that speak each provider's format are `crate::model` (runtime
//! feature).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent_config::ModelParams;
use crate::payload::Payload;
use crate::tool_spec::ToolSpec;

/// A tool call the model asked for, with the provider's own id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProviderToolCall {
    pub id: String,
    pub name: String,
    #[cfg_attr(feature = "openapi", schema(value_type = Value))]
    pub arguments: Payload,
}

/// One message of the conversation, provider-neutral.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
        #[cfg_attr(feature = "openapi", schema(value_type = Value))]
        content: Payload,
        is_error: bool,
    },
}

/// The model-facing description of a tool (before normalization).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// A tool's name as a provider's API accepts it: OpenAI and Anthropic
/// take `^[a-zA-Z0-9_-]{1,64}$`, so every other character (the dots of
/// `mcp.<connection>.<tool>`) becomes `_`, and a longer name keeps 55
/// characters and a hash of the whole. Names that already fit are kept;
/// the agent resolves a call by either form.
pub fn wire_tool_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.len() > 64 {
        let hash = blake3::hash(name.as_bytes()).to_hex();
        out.truncate(55);
        out.push('_');
        out.push_str(&hash[..8]);
    }
    out
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

/// One model call: the system prompt, the conversation so far, the tools
/// offered and the sampling parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChatRequest {
    pub system: String,
    pub messages: Vec<Message>,
    /// Empty: the model must answer in text (used for the forced final answer).
    pub tools: Vec<ToolDefinition>,
    pub params: ModelParams,
}

/// Tokens one model call consumed, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// What an Agent Node's model calls consumed in all: the sum of every
/// answer's usage and cost (`crate::pricing`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ModelUsage {
    pub model_calls: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// US dollars for the real providers (0 where the price is unknown),
    /// the script's own unit for the scripted model.
    pub cost: f64,
}

impl ModelUsage {
    /// Adds one answer.
    pub fn add(&mut self, response: &ChatResponse) {
        self.model_calls += 1;
        self.input_tokens += response.usage.input_tokens;
        self.output_tokens += response.usage.output_tokens;
        self.cost += response.cost;
    }

    /// Adds another node's usage.
    pub fn merge(&mut self, other: &ModelUsage) {
        self.model_calls += other.model_calls;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost += other.cost;
    }
}

/// Why the model stopped answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    Other,
}

/// A model's answer: text and/or tool calls, usage, cost, stop reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChatResponse {
    pub text: String,
    pub tool_calls: Vec<ProviderToolCall>,
    pub usage: TokenUsage,
    /// Credits spent by this call (0 when the provider reports none).
    pub cost: f64,
    pub stop_reason: StopReason,
}

#[cfg(test)]
mod wire_name_tests {
    use super::wire_tool_name;

    #[test]
    fn names_fit_the_providers_pattern() {
        assert_eq!(wire_tool_name("http_request"), "http_request");
        assert_eq!(
            wire_tool_name("mcp.everything.get-sum"),
            "mcp_everything_get-sum"
        );
        let long = format!("mcp.{}.tool", "x".repeat(80));
        let wire = wire_tool_name(&long);
        assert_eq!(wire.len(), 64);
        assert_eq!(wire, wire_tool_name(&long));
        assert_ne!(
            wire,
            wire_tool_name(&format!("mcp.{}.tool2", "x".repeat(80)))
        );
    }
}
