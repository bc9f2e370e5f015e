//! OpenAI Chat Completions with tools (parallel tool calls included),
//! against any OpenAI-compatible base URL: OpenAI, Ollama, vLLM, llama.cpp
//! server, LM Studio. `base_url` ends before `/chat/completions`
//! (e.g. `https://api.openai.com/v1`).
//!
//! Normalizer: the strictest of our adapters. Besides the common rules it
//! closes every object (`additionalProperties: false`), as strict function
//! calling requires.

use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::http::{post_json, Endpoint, RetryPolicy};
use super::schema::{normalize, Strictness};
use super::ModelEnv;
use super::{
    ChatModel, ChatRequest, ChatResponse, Message, ModelError, ProviderToolCall, StopReason,
    TokenUsage, ToolDefinition,
};
use crate::pricing::Price;
use crate::secrets::SecretValue;

const PROVIDER: &str = "openai";

pub const STRICTNESS: Strictness = Strictness {
    close_objects: true,
};

pub struct OpenAiModel {
    model: String,
    api_key: Option<SecretValue>,
    retry: RetryPolicy,
    endpoint: Endpoint,
    /// What a call costs; `None`: unknown, charged 0.
    price: Option<Price>,
}

impl OpenAiModel {
    pub fn new(
        base_url: &str,
        model: &str,
        api_key: Option<SecretValue>,
        env: &ModelEnv,
    ) -> Result<Self, ModelError> {
        let base = url::Url::parse(base_url)
            .map_err(|e| ModelError::Config(format!("base_url `{base_url}`: {e}")))?;
        let url = format!("{}/chat/completions", base.as_str().trim_end_matches('/'));
        Ok(Self {
            model: model.to_string(),
            api_key,
            retry: env.retry,
            endpoint: Endpoint::new(PROVIDER, url, env.egress.clone()),
            price: None,
        })
    }

    /// Charges each call at `price` (none: the call's cost is 0).
    pub fn with_price(mut self, price: Option<Price>) -> Self {
        self.price = price;
        self
    }

    /// The request body this adapter sends.
    pub fn body(&self, request: &ChatRequest) -> Value {
        let mut messages = Vec::new();
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        for m in &request.messages {
            messages.push(match m {
                Message::User { text } => json!({"role": "user", "content": text}),
                Message::Assistant { text, tool_calls } => {
                    let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                    if !tool_calls.is_empty() {
                        msg["tool_calls"] = tool_calls
                            .iter()
                            .map(|c| json!({"id": c.id, "type": "function",
                                            "function": {"name": c.name, "arguments": c.arguments.to_string()}}))
                            .collect();
                    }
                    msg
                }
                Message::ToolResult { provider_call_id, content, .. } => {
                    json!({"role": "tool", "tool_call_id": provider_call_id, "content": content.to_string()})
                }
            });
        }
        let mut body = json!({"model": self.model, "messages": messages, "max_tokens": request.params.max_tokens});
        if let Some(t) = request.params.temperature {
            body["temperature"] = json!(t);
        }
        if !request.tools.is_empty() {
            body["tools"] = Value::Array(self.tool_schemas(&request.tools));
        }
        body
    }
}

/// Parses a Chat Completions response.
pub fn parse_response(v: &Value) -> Result<ChatResponse, ModelError> {
    let malformed = |message: &str| ModelError::Malformed {
        provider: PROVIDER,
        message: message.to_string(),
    };
    let choice = v
        .pointer("/choices/0")
        .ok_or_else(|| malformed("no choices[0]"))?;
    let message = choice
        .get("message")
        .ok_or_else(|| malformed("choices[0] has no message"))?;
    let text = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls") {
        let calls = calls
            .as_array()
            .ok_or_else(|| malformed("tool_calls is not an array"))?;
        for c in calls {
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed("a tool call has no id"))?;
            let name = c
                .pointer("/function/name")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed("a tool call has no function.name"))?;
            let raw = c
                .pointer("/function/arguments")
                .and_then(Value::as_str)
                .unwrap_or("{}");
            // Arguments that are not JSON go to the tool as a string, so
            // validation reports them to the model instead of failing the run.
            let arguments =
                serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
            tool_calls.push(ProviderToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments,
            });
        }
    }
    let stop_reason = match choice.get("finish_reason").and_then(Value::as_str) {
        Some("stop") => StopReason::EndTurn,
        Some("tool_calls") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        _ if !tool_calls.is_empty() => StopReason::ToolUse,
        _ => StopReason::Other,
    };
    let usage = TokenUsage {
        input_tokens: v
            .pointer("/usage/prompt_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        output_tokens: v
            .pointer("/usage/completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    };
    Ok(ChatResponse {
        text,
        tool_calls,
        usage,
        cost: 0.0,
        stop_reason,
    })
}

impl ChatModel for OpenAiModel {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn tool_schemas(&self, tools: &[ToolDefinition]) -> Vec<Value> {
        tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                "name": t.name, "description": t.description,
                "parameters": normalize(&t.input_schema, STRICTNESS)}})
            })
            .collect()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        Box::pin(async move {
            let mut headers = Vec::new();
            if let Some(key) = &self.api_key {
                headers.push(("authorization", format!("Bearer {}", key.expose())));
            }
            let v = post_json(&self.endpoint, &headers, &self.body(request), self.retry).await?;
            let mut response = parse_response(&v)?;
            if let Some(price) = &self.price {
                response.cost = price.cost(&response.usage);
            }
            Ok(response)
        })
    }
}
