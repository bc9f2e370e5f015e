//! The Anthropic Messages API with `tool_use` / `tool_result` blocks.
//! `base_url` ends before `/v1/messages` (e.g. `https://api.anthropic.com`).
//!
//! Normalizer: the common rules (single `type`, typed `items`, no
//! `$ref`/`nullable`, object at the top); objects stay open.

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

const PROVIDER: &str = "anthropic";
const API_VERSION: &str = "2023-06-01";

pub const STRICTNESS: Strictness = Strictness {
    close_objects: false,
};

pub struct AnthropicModel {
    model: String,
    api_key: SecretValue,
    retry: RetryPolicy,
    endpoint: Endpoint,
    /// What a call costs; `None`: unknown, charged 0.
    price: Option<Price>,
}

impl AnthropicModel {
    pub fn new(
        base_url: &str,
        model: &str,
        api_key: SecretValue,
        env: &ModelEnv,
    ) -> Result<Self, ModelError> {
        let base = url::Url::parse(base_url)
            .map_err(|e| ModelError::Config(format!("base_url `{base_url}`: {e}")))?;
        let url = format!("{}/v1/messages", base.as_str().trim_end_matches('/'));
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

    /// The request body this adapter sends. Consecutive tool results are
    /// merged into one user turn, as the API requires.
    pub fn body(&self, request: &ChatRequest) -> Value {
        let mut messages: Vec<Value> = Vec::new();
        for m in &request.messages {
            match m {
                Message::User { text } => messages
                    .push(json!({"role": "user", "content": [{"type": "text", "text": text}]})),
                Message::Assistant { text, tool_calls } => {
                    let mut content = Vec::new();
                    if !text.is_empty() {
                        content.push(json!({"type": "text", "text": text}));
                    }
                    for c in tool_calls {
                        content.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}));
                    }
                    messages.push(json!({"role": "assistant", "content": content}));
                }
                Message::ToolResult {
                    provider_call_id,
                    content,
                    is_error,
                    ..
                } => {
                    let block = json!({"type": "tool_result", "tool_use_id": provider_call_id,
                                       "content": content.to_string(), "is_error": is_error});
                    let merge = messages.last().is_some_and(|last| {
                        last["role"] == "user"
                            && last["content"]
                                .as_array()
                                .is_some_and(|c| c.iter().all(|b| b["type"] == "tool_result"))
                    });
                    if merge {
                        if let Some(Value::Array(c)) =
                            messages.last_mut().and_then(|l| l.get_mut("content"))
                        {
                            c.push(block);
                        }
                    } else {
                        messages.push(json!({"role": "user", "content": [block]}));
                    }
                }
            }
        }
        let mut body = json!({"model": self.model, "max_tokens": request.params.max_tokens, "messages": messages});
        if !request.system.is_empty() {
            body["system"] = json!(request.system);
        }
        if let Some(t) = request.params.temperature {
            body["temperature"] = json!(t);
        }
        if !request.tools.is_empty() {
            body["tools"] = Value::Array(self.tool_schemas(&request.tools));
        }
        body
    }
}

/// Parses a Messages API response.
pub fn parse_response(v: &Value) -> Result<ChatResponse, ModelError> {
    let malformed = |message: &str| ModelError::Malformed {
        provider: PROVIDER,
        message: message.to_string(),
    };
    let blocks = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no content array"))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                text.push_str(b.get("text").and_then(Value::as_str).unwrap_or_default())
            }
            Some("tool_use") => {
                let id = b
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed("tool_use block without id"))?;
                let name = b
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed("tool_use block without name"))?;
                tool_calls.push(ProviderToolCall {
                    id: id.into(),
                    name: name.into(),
                    arguments: b.get("input").cloned().unwrap_or(json!({})),
                });
            }
            _ => {}
        }
    }
    let stop_reason = match v.get("stop_reason").and_then(Value::as_str) {
        Some("end_turn") | Some("stop_sequence") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        _ => StopReason::Other,
    };
    let usage = TokenUsage {
        input_tokens: v
            .pointer("/usage/input_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        output_tokens: v
            .pointer("/usage/output_tokens")
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

impl ChatModel for AnthropicModel {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn tool_schemas(&self, tools: &[ToolDefinition]) -> Vec<Value> {
        tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": normalize(&t.input_schema, STRICTNESS)}))
            .collect()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        Box::pin(async move {
            let headers = vec![
                ("x-api-key", self.api_key.expose().to_string()),
                ("anthropic-version", API_VERSION.to_string()),
            ];
            let v = post_json(&self.endpoint, &headers, &self.body(request), self.retry).await?;
            let mut response = parse_response(&v)?;
            if let Some(price) = &self.price {
                response.cost = price.cost(&response.usage);
            }
            Ok(response)
        })
    }
}
