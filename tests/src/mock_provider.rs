//! A loopback mock of the model providers' HTTP APIs for the end-to-end
//! tests: OpenAI Chat Completions (also as Azure OpenAI, on a deployment's
//! URL) and Anthropic Messages, each requiring its key in its own header
//! (`Authorization: Bearer`, `api-key`, `x-api-key` with
//! `anthropic-version`) and answering a wrong one with 401 and the
//! provider's error shape. Its agent asks for one `calculator` call, then
//! answers with its result; a request without tools (the forced final
//! answer) gets a plain answer. A request with `stream: true` is answered
//! with server-sent events in the provider's streamed shape, the final
//! text in several pieces.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

/// Which API the mock speaks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Api {
    OpenAi,
    Azure,
    Anthropic,
}

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// Whether the key matched.
    pub authorized: bool,
}

pub struct MockProvider {
    pub port: u16,
    pub api: Api,
    seen: Arc<Mutex<Vec<Seen>>>,
    connections: Arc<Mutex<usize>>,
}

/// Tokens each answer reports: 100 in, 10 out.
pub const INPUT_TOKENS: u64 = 100;
pub const OUTPUT_TOKENS: u64 = 10;

/// The final answer's text, and the pieces a streamed one comes in.
pub const FINAL_PIECES: [&str; 3] = ["The sum ", "is ", "2."];

impl MockProvider {
    /// Listens on 127.0.0.1 and accepts `key` only.
    pub fn start(api: Api, key: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(Mutex::new(0));
        let (s, c, key) = (seen.clone(), connections.clone(), key.to_string());
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                *c.lock().expect("lock") += 1;
                let (s, key) = (s.clone(), key.clone());
                std::thread::spawn(move || serve(api, &key, stream, &s));
            }
        });
        Self {
            port,
            api,
            seen,
            connections,
        }
    }

    /// The base URL an Agent node names (`base_url`, or Azure's endpoint).
    pub fn base_url(&self) -> String {
        match self.api {
            Api::OpenAi => format!("http://127.0.0.1:{}/v1", self.port),
            Api::Azure | Api::Anthropic => format!("http://127.0.0.1:{}", self.port),
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        *self.connections.lock().expect("lock")
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn serve(api: Api, key: &str, stream: std::net::TcpStream, seen: &Mutex<Vec<Seen>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let length: usize = header(&headers, "content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut raw = vec![0; length];
    let _ = reader.read_exact(&mut raw);
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    let authorized = match api {
        Api::OpenAi => header(&headers, "authorization") == Some(&format!("Bearer {key}")),
        Api::Azure => {
            header(&headers, "api-key") == Some(key)
                && path.starts_with("/openai/deployments/")
                && path.contains("api-version=")
        }
        Api::Anthropic => {
            header(&headers, "x-api-key") == Some(key)
                && header(&headers, "anthropic-version").is_some()
        }
    };
    seen.lock().expect("lock").push(Seen {
        path,
        headers,
        body: body.clone(),
        authorized,
    });
    let (status, content_type, text) = if !authorized {
        let error = match api {
            Api::Anthropic => {
                json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
            }
            _ => {
                json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}})
            }
        };
        (401, "application/json", error.to_string())
    } else {
        answer(api, &body)
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

/// Whether the conversation already holds a tool result.
fn has_tool_result(api: Api, body: &Value) -> bool {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages.iter().any(|m| match api {
        Api::Anthropic => m["content"]
            .as_array()
            .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result")),
        _ => m["role"] == "tool",
    })
}

fn answer(api: Api, body: &Value) -> (u16, &'static str, String) {
    let offered_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let call_tool = offered_tools && !has_tool_result(api, body);
    let streamed = body["stream"] == json!(true);
    let text = if call_tool {
        String::new()
    } else if offered_tools {
        FINAL_PIECES.concat()
    } else {
        "Final answer without tools.".to_string()
    };
    match (api, streamed) {
        (Api::Anthropic, false) => {
            let content = if call_tool {
                json!([{"type": "tool_use", "id": "toolu_01", "name": "calculator", "input": {"expression": "1+1"}}])
            } else {
                json!([{"type": "text", "text": text}])
            };
            let v = json!({"id": "msg_01", "type": "message", "role": "assistant", "model": body["model"],
                "content": content, "stop_reason": if call_tool { "tool_use" } else { "end_turn" },
                "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS}});
            (200, "application/json", v.to_string())
        }
        (Api::Anthropic, true) => {
            let mut events = vec![
                json!({"type": "message_start", "message": {"id": "msg_01", "type": "message",
                "role": "assistant", "content": [], "model": body["model"], "stop_reason": null,
                "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": 1}}}),
            ];
            if call_tool {
                events.push(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_01", "name": "calculator", "input": {}}}));
                events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"expression\": \"1+1\"}"}}));
            } else {
                events.push(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}));
                for piece in pieces(&text) {
                    events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}));
                }
            }
            events.push(json!({"type": "content_block_stop", "index": 0}));
            events.push(json!({"type": "message_delta", "delta": {"stop_reason": if call_tool { "tool_use" } else { "end_turn" }}, "usage": {"output_tokens": OUTPUT_TOKENS}}));
            events.push(json!({"type": "message_stop"}));
            let sse: String = events
                .iter()
                .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
                .collect();
            (200, "text/event-stream", sse)
        }
        (_, false) => {
            let message = if call_tool {
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_01", "type": "function",
                    "function": {"name": "calculator", "arguments": "{\"expression\":\"1+1\"}"}}]})
            } else {
                json!({"role": "assistant", "content": text})
            };
            let v = json!({"id": "chatcmpl-01", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": if call_tool { "tool_calls" } else { "stop" }}],
                "usage": {"prompt_tokens": INPUT_TOKENS, "completion_tokens": OUTPUT_TOKENS, "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS}});
            (200, "application/json", v.to_string())
        }
        (_, true) => {
            let chunk = |delta: Value, finish: Value| {
                json!({"id": "chatcmpl-01", "object": "chat.completion.chunk", "model": body["model"],
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            };
            let mut chunks = vec![chunk(
                json!({"role": "assistant", "content": ""}),
                Value::Null,
            )];
            if call_tool {
                chunks.push(chunk(
                    json!({"tool_calls": [{"index": 0, "id": "call_01", "type": "function",
                    "function": {"name": "calculator", "arguments": "{\"expression\":"}}]}),
                    Value::Null,
                ));
                chunks.push(chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"1+1\"}"}}]}),
                    Value::Null,
                ));
            } else {
                for piece in pieces(&text) {
                    chunks.push(chunk(json!({"content": piece}), Value::Null));
                }
            }
            chunks.push(chunk(
                json!({}),
                json!(if call_tool { "tool_calls" } else { "stop" }),
            ));
            chunks.push(
                json!({"id": "chatcmpl-01", "object": "chat.completion.chunk", "choices": [],
                "usage": {"prompt_tokens": INPUT_TOKENS, "completion_tokens": OUTPUT_TOKENS}}),
            );
            let mut sse: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
            sse.push_str("data: [DONE]\n\n");
            (200, "text/event-stream", sse)
        }
    }
}

/// The final answer in its pieces; another text in one piece.
fn pieces(text: &str) -> Vec<String> {
    if text == FINAL_PIECES.concat() {
        FINAL_PIECES.iter().map(|p| p.to_string()).collect()
    } else {
        vec![text.to_string()]
    }
}
