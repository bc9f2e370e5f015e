//! The Anthropic Messages API with `tool_use` / `tool_result` blocks.
//! `base_url` ends before `/v1/messages` (e.g. `https://api.anthropic.com`).
//!
//! Streamed answers (`stream: true`) are folded back into a whole
//! answer's shape ([`StreamFold`]) and parsed by the same
//! [`parse_response`].
//!
//! Normalizer: the common rules (single `type`, typed `items`, no
//! `$ref`/`nullable`, object at the top); objects stay open.

use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::http::{post_json, post_stream, Endpoint, RetryPolicy};
use super::schema::{normalize, Strictness};
use super::ModelEnv;
use super::{
    ChatModel, ChatRequest, ChatResponse, Message, ModelError, ProviderToolCall, StopReason,
    TextSink, TokenUsage, ToolDefinition,
};
use crate::chat::wire_tool_name;
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
    stream: bool,
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
            stream: false,
        })
    }

    /// Asks for streamed answers.
    pub fn streaming(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    async fn call(
        &self,
        request: &ChatRequest,
        on_text: Option<&TextSink<'_>>,
    ) -> Result<ChatResponse, ModelError> {
        let headers = vec![
            ("x-api-key", self.api_key.expose().to_string()),
            ("anthropic-version", API_VERSION.to_string()),
        ];
        let mut body = self.body(request);
        let v = match on_text {
            Some(on_text) if self.stream => {
                body["stream"] = json!(true);
                let mut fold = StreamFold::default();
                post_stream(
                    &self.endpoint,
                    &headers,
                    &body,
                    self.retry,
                    &mut |_, data| fold.event(data, on_text),
                )
                .await?;
                fold.finish()
            }
            _ => post_json(&self.endpoint, &headers, &body, self.retry).await?,
        };
        let mut response = parse_response(&v)?;
        if let Some(price) = &self.price {
            response.cost = price.cost(&response.usage);
        }
        Ok(response)
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
                        content.push(json!({"type": "tool_use", "id": c.id, "name": wire_tool_name(&c.name), "input": c.arguments}));
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

/// Folds a streamed answer's events (`message_start`,
/// `content_block_start`/`_delta`/`_stop`, `message_delta`,
/// `message_stop`) into the shape of a whole answer, handing each piece of
/// text on as it arrives.
#[derive(Default)]
pub struct StreamFold {
    blocks: std::collections::BTreeMap<u64, Value>,
    /// A tool_use block's input, as its JSON text arrives.
    partial: std::collections::BTreeMap<u64, String>,
    stop_reason: Value,
    input_tokens: u64,
    output_tokens: u64,
}

impl StreamFold {
    /// One event's data; true once the message is complete.
    pub fn event(&mut self, data: &str, on_text: &TextSink<'_>) -> Result<bool, ModelError> {
        let malformed = |message: String| ModelError::Malformed {
            provider: PROVIDER,
            message,
        };
        let v: Value = serde_json::from_str(data)
            .map_err(|e| malformed(format!("a streamed event is not JSON ({e})")))?;
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
        match v.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                let usage = v.pointer("/message/usage");
                let read = |k: &str| usage.and_then(|u| u.get(k)).and_then(Value::as_u64);
                self.input_tokens = read("input_tokens").unwrap_or(0);
                self.output_tokens = read("output_tokens").unwrap_or(0);
            }
            Some("content_block_start") => {
                let block = v
                    .get("content_block")
                    .cloned()
                    .ok_or_else(|| malformed("content_block_start without a block".into()))?;
                self.blocks.insert(index, block);
            }
            Some("content_block_delta") => {
                let delta = v.get("delta").cloned().unwrap_or(Value::Null);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = delta.get("text").and_then(Value::as_str).unwrap_or("");
                        if let Some(block) = self.blocks.get_mut(&index) {
                            let mut whole = block["text"].as_str().unwrap_or("").to_string();
                            whole.push_str(text);
                            block["text"] = json!(whole);
                        }
                        if !text.is_empty() {
                            on_text(text);
                        }
                    }
                    Some("input_json_delta") => {
                        let part = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        self.partial.entry(index).or_default().push_str(part);
                    }
                    _ => {}
                }
            }
            Some("content_block_stop") => {
                if let Some(text) = self.partial.remove(&index) {
                    if !text.trim().is_empty() {
                        let input: Value = serde_json::from_str(&text).map_err(|e| {
                            malformed(format!("a streamed tool input is not JSON ({e})"))
                        })?;
                        if let Some(block) = self.blocks.get_mut(&index) {
                            block["input"] = input;
                        }
                    }
                }
            }
            Some("message_delta") => {
                if let Some(reason) = v.pointer("/delta/stop_reason").filter(|r| !r.is_null()) {
                    self.stop_reason = reason.clone();
                }
                if let Some(n) = v.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.output_tokens = n;
                }
                if let Some(n) = v.pointer("/usage/input_tokens").and_then(Value::as_u64) {
                    self.input_tokens = n;
                }
            }
            Some("message_stop") => return Ok(true),
            Some("error") => {
                return Err(ModelError::Provider {
                    provider: PROVIDER,
                    status: 200,
                    message: v
                        .pointer("/error/message")
                        .and_then(Value::as_str)
                        .unwrap_or("the stream reported an error")
                        .to_string(),
                })
            }
            _ => {}
        }
        Ok(false)
    }

    /// The whole answer, as a non-streamed response would have been.
    pub fn finish(self) -> Value {
        json!({
            "type": "message",
            "role": "assistant",
            "content": self.blocks.into_values().collect::<Vec<_>>(),
            "stop_reason": self.stop_reason,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
        })
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
                    arguments: b.get("input").cloned().unwrap_or(json!({})).into(),
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
            .map(|t| json!({"name": wire_tool_name(&t.name), "description": t.description, "input_schema": normalize(&t.input_schema, STRICTNESS)}))
            .collect()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        Box::pin(self.call(request, None))
    }

    fn complete_streaming<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_text: &'a TextSink<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        Box::pin(self.call(request, Some(on_text)))
    }
}
