//! OpenAI Chat Completions with tools (parallel tool calls included),
//! against any OpenAI-compatible base URL: OpenAI, Ollama, vLLM, llama.cpp
//! server, LM Studio, OpenRouter, Groq. `base_url` ends before
//! `/chat/completions` (e.g. `https://api.openai.com/v1`). Azure OpenAI
//! speaks the same API on a deployment's URL with an `api-key` header
//! ([`OpenAiModel::azure`]).
//!
//! Streamed answers (`stream: true`) arrive as server-sent chunks; they are
//! folded back into the shape of a whole answer ([`StreamFold`]) and parsed
//! by the same [`parse_response`], so a streamed and a whole answer are the
//! same `ChatResponse`.
//!
//! Normalizer: the strictest of our adapters. Besides the common rules it
//! closes every object (`additionalProperties: false`), as strict function
//! calling requires.

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

const PROVIDER: &str = "openai";

pub const STRICTNESS: Strictness = Strictness {
    close_objects: true,
};

/// How a request proves its key.
enum Auth {
    /// `Authorization: Bearer <key>`; none for keyless local servers.
    Bearer(Option<SecretValue>),
    /// Azure's `api-key: <key>`.
    AzureKey(SecretValue),
}

pub struct OpenAiModel {
    provider: &'static str,
    model: String,
    auth: Auth,
    retry: RetryPolicy,
    endpoint: Endpoint,
    /// What a call costs; `None`: unknown, charged 0.
    price: Option<Price>,
    stream: bool,
}

/// A URL path segment a user typed (an Azure deployment or API version):
/// letters, digits, `.`, `_` and `-` only, so it cannot change the URL.
fn path_segment(field: &str, value: &str) -> Result<(), ModelError> {
    let ok = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(ModelError::Config(format!(
            "{field} `{value}` must be letters, digits, `.`, `_` or `-`"
        )))
    }
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
            provider: PROVIDER,
            model: model.to_string(),
            auth: Auth::Bearer(api_key),
            retry: env.retry,
            endpoint: Endpoint::new(PROVIDER, url, env.egress.clone()),
            price: None,
            stream: false,
        })
    }

    /// Azure OpenAI: `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...`.
    pub fn azure(
        endpoint: &str,
        deployment: &str,
        api_version: &str,
        api_key: SecretValue,
        env: &ModelEnv,
    ) -> Result<Self, ModelError> {
        let base = url::Url::parse(endpoint)
            .map_err(|e| ModelError::Config(format!("endpoint `{endpoint}`: {e}")))?;
        path_segment("deployment", deployment)?;
        path_segment("api_version", api_version)?;
        let url = format!(
            "{}/openai/deployments/{deployment}/chat/completions?api-version={api_version}",
            base.as_str().trim_end_matches('/')
        );
        Ok(Self {
            provider: "azure",
            model: deployment.to_string(),
            auth: Auth::AzureKey(api_key),
            retry: env.retry,
            endpoint: Endpoint::new("azure", url, env.egress.clone()),
            price: None,
            stream: false,
        })
    }

    /// Charges each call at `price` (none: the call's cost is 0).
    pub fn with_price(mut self, price: Option<Price>) -> Self {
        self.price = price;
        self
    }

    /// Asks for streamed answers.
    pub fn streaming(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        match &self.auth {
            Auth::Bearer(Some(key)) => vec![("authorization", format!("Bearer {}", key.expose()))],
            Auth::Bearer(None) => Vec::new(),
            Auth::AzureKey(key) => vec![("api-key", key.expose().to_string())],
        }
    }

    async fn call(
        &self,
        request: &ChatRequest,
        on_text: Option<&TextSink<'_>>,
    ) -> Result<ChatResponse, ModelError> {
        let headers = self.headers();
        let mut body = self.body(request);
        let v = match on_text {
            Some(on_text) if self.stream => {
                body["stream"] = json!(true);
                body["stream_options"] = json!({"include_usage": true});
                let mut fold = StreamFold::new(self.provider);
                post_stream(
                    &self.endpoint,
                    &headers,
                    &body,
                    self.retry,
                    &mut |_, data| fold.chunk(data, on_text),
                )
                .await?;
                fold.finish()
            }
            _ => post_json(&self.endpoint, &headers, &body, self.retry).await?,
        };
        let mut response = parse(self.provider, &v)?;
        if let Some(price) = &self.price {
            response.cost = price.cost(&response.usage);
        }
        Ok(response)
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
                                            "function": {"name": wire_tool_name(&c.name), "arguments": c.arguments.to_string()}}))
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
    parse(PROVIDER, v)
}

/// Folds a streamed answer's chunks into the shape of a whole answer,
/// handing each piece of text on as it arrives.
pub struct StreamFold {
    provider: &'static str,
    text: String,
    /// Tool calls by their `index`: id, name and the arguments' text.
    calls: std::collections::BTreeMap<u64, (String, String, String)>,
    finish_reason: Value,
    usage: Value,
}

impl StreamFold {
    pub fn new(provider: &'static str) -> Self {
        Self {
            provider,
            text: String::new(),
            calls: Default::default(),
            finish_reason: Value::Null,
            usage: Value::Null,
        }
    }

    /// One event's data; true once the stream says it is done.
    pub fn chunk(&mut self, data: &str, on_text: &TextSink<'_>) -> Result<bool, ModelError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| ModelError::Malformed {
            provider: self.provider,
            message: format!("a streamed chunk is not JSON ({e})"),
        })?;
        if let Some(error) = v.get("error") {
            return Err(ModelError::Provider {
                provider: self.provider,
                status: 200,
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("the stream reported an error")
                    .to_string(),
            });
        }
        if v.get("usage").is_some_and(|u| !u.is_null()) {
            self.usage = v["usage"].clone();
        }
        let Some(choice) = v.pointer("/choices/0") else {
            return Ok(false);
        };
        if let Some(text) = choice.pointer("/delta/content").and_then(Value::as_str) {
            if !text.is_empty() {
                self.text.push_str(text);
                on_text(text);
            }
        }
        if let Some(calls) = choice
            .pointer("/delta/tool_calls")
            .and_then(Value::as_array)
        {
            for (i, call) in calls.iter().enumerate() {
                let index = call
                    .get("index")
                    .and_then(Value::as_u64)
                    .unwrap_or(i as u64);
                let entry = self.calls.entry(index).or_default();
                if let Some(id) = call.get("id").and_then(Value::as_str) {
                    entry.0 = id.to_string();
                }
                if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                    entry.1.push_str(name);
                }
                if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
                    entry.2.push_str(args);
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").filter(|r| !r.is_null()) {
            self.finish_reason = reason.clone();
        }
        Ok(false)
    }

    /// The whole answer, as a non-streamed response would have been.
    pub fn finish(self) -> Value {
        let mut message = json!({"role": "assistant", "content": self.text});
        if !self.calls.is_empty() {
            message["tool_calls"] = self
                .calls
                .into_values()
                .map(|(id, name, arguments)| {
                    json!({"id": id, "type": "function",
                           "function": {"name": name, "arguments": arguments}})
                })
                .collect();
        }
        json!({
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
            "usage": self.usage,
        })
    }
}

fn parse(provider: &'static str, v: &Value) -> Result<ChatResponse, ModelError> {
    let malformed = |message: &str| ModelError::Malformed {
        provider,
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
                arguments: arguments.into(),
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
        self.provider
    }

    fn tool_schemas(&self, tools: &[ToolDefinition]) -> Vec<Value> {
        tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                "name": wire_tool_name(&t.name), "description": t.description,
                "parameters": normalize(&t.input_schema, STRICTNESS)}})
            })
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
