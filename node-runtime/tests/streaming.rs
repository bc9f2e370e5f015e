//! Streamed answers, Azure OpenAI and the connection test, against the
//! loopback mock server (`common`): the streamed shapes are those of the
//! providers' API docs (Chat Completions chunks ending in `[DONE]`;
//! Anthropic's `message_start` .. `message_stop` events).

use std::sync::Mutex;

use node_runtime::agent_config::{ModelParams, ProviderConfig};
use node_runtime::model::check::test_connection;
use node_runtime::model::{build_model, ChatRequest, Message, StopReason, ToolDefinition};
use node_runtime::secrets::SecretValue;
use serde_json::{json, Value};

mod common;
use common::mock_http::{fast_env, MockServer};

fn request() -> ChatRequest {
    ChatRequest {
        system: "Be brief.".into(),
        messages: vec![Message::User { text: "sum".into() }],
        tools: vec![ToolDefinition {
            name: "calculator".into(),
            description: "Evaluates arithmetic.".into(),
            input_schema: json!({"type": "object", "properties": {"expression": {"type": "string"}}}),
        }],
        params: ModelParams::default(),
    }
}

fn sse(events: &[(Option<&str>, Value)]) -> String {
    let mut body = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            body.push_str(&format!("event: {name}\n"));
        }
        body.push_str(&format!("data: {data}\n\n"));
    }
    body
}

const SSE: (&str, &str) = ("content-type", "text/event-stream");

fn openai(stream: bool, base_url: &str) -> ProviderConfig {
    ProviderConfig::Openai {
        base_url: base_url.into(),
        model: "gpt-4o-mini".into(),
        api_key_secret: Some("OPENAI_API_KEY".into()),
        price: None,
        stream,
    }
}

#[tokio::test]
async fn an_openai_stream_hands_on_its_text_and_folds_into_the_whole_answer() {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut body = sse(&[
        (
            None,
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        ),
        (None, chunk(json!({"content": "Let me "}), Value::Null)),
        (None, chunk(json!({"content": "add."}), Value::Null)),
        (
            None,
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_A", "type": "function",
            "function": {"name": "calculator", "arguments": ""}}]}),
                Value::Null,
            ),
        ),
        (
            None,
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"expression\":"}}]}),
                Value::Null,
            ),
        ),
        (
            None,
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"1+1\"}"}}]}),
                Value::Null,
            ),
        ),
        (None, chunk(json!({}), json!("tool_calls"))),
        (
            None,
            json!({"id": "c", "object": "chat.completion.chunk", "choices": [],
                      "usage": {"prompt_tokens": 1000, "completion_tokens": 200}}),
        ),
    ]);
    body.push_str("data: [DONE]\n\n");
    let server = MockServer::start(vec![(200, vec![SSE], body)]).await;
    let model = build_model(
        &openai(true, &server.url),
        Some(SecretValue::new("sk-live")),
        &fast_env(),
    )
    .expect("model");
    let deltas = Mutex::new(Vec::new());
    let on_text = |t: &str| deltas.lock().expect("lock").push(t.to_string());
    let response = model
        .complete_streaming(&request(), &on_text)
        .await
        .expect("streamed answer");
    assert_eq!(*deltas.lock().expect("lock"), ["Let me ", "add."]);
    assert_eq!(response.text, "Let me add.");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.tool_calls.len(), 1);
    assert_eq!(response.tool_calls[0].id, "call_A");
    assert_eq!(
        response.tool_calls[0].arguments,
        json!({"expression": "1+1"})
    );
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (1000, 200)
    );
    // gpt-4o-mini: $0.15 in, $0.60 out per million.
    assert!((response.cost - (1000.0 * 0.15 + 200.0 * 0.60) / 1e6).abs() < 1e-12);
    let sent = &server.requests()[0];
    assert_eq!(sent.body["stream"], json!(true));
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(sent.header("authorization"), Some("Bearer sk-live"));
}

#[tokio::test]
async fn without_stream_the_same_adapter_asks_for_a_whole_answer() {
    let whole = json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "hi"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}});
    let server = MockServer::start(vec![(200, vec![], whole.to_string())]).await;
    let model = build_model(&openai(false, &server.url), None, &fast_env()).expect("model");
    let deltas = Mutex::new(Vec::<String>::new());
    let on_text = |t: &str| deltas.lock().expect("lock").push(t.to_string());
    let response = model
        .complete_streaming(&request(), &on_text)
        .await
        .expect("answer");
    assert_eq!(response.text, "hi");
    assert!(deltas.lock().expect("lock").is_empty());
    assert_eq!(server.requests()[0].body.get("stream"), None);
}

#[tokio::test]
async fn an_anthropic_stream_hands_on_its_text_and_folds_into_the_whole_answer() {
    let body = sse(&[
        (
            Some("message_start"),
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "content": [], "model": "claude-sonnet-4-20250514", "stop_reason": null,
            "usage": {"input_tokens": 500, "output_tokens": 1}}}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        ),
        (Some("ping"), json!({"type": "ping"})),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "Adding "}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "now."}}),
        ),
        (
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {}}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "{\"expression\": \"2"}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "+2\"}"}}),
        ),
        (
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": 1}),
        ),
        (
            Some("message_delta"),
            json!({"type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 40}}),
        ),
        (Some("message_stop"), json!({"type": "message_stop"})),
    ]);
    let server = MockServer::start(vec![(200, vec![SSE], body)]).await;
    let config = ProviderConfig::Anthropic {
        base_url: server.url.clone(),
        model: "claude-sonnet-4-20250514".into(),
        api_key_secret: "ANTHROPIC_API_KEY".into(),
        price: None,
        stream: true,
    };
    let model = build_model(&config, Some(SecretValue::new("sk-ant")), &fast_env()).expect("model");
    let deltas = Mutex::new(Vec::new());
    let on_text = |t: &str| deltas.lock().expect("lock").push(t.to_string());
    let response = model
        .complete_streaming(&request(), &on_text)
        .await
        .expect("streamed answer");
    assert_eq!(*deltas.lock().expect("lock"), ["Adding ", "now."]);
    assert_eq!(response.text, "Adding now.");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.tool_calls[0].id, "toolu_1");
    assert_eq!(
        response.tool_calls[0].arguments,
        json!({"expression": "2+2"})
    );
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (500, 40)
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.body["stream"], json!(true));
    assert_eq!(sent.header("x-api-key"), Some("sk-ant"));
}

#[tokio::test]
async fn an_error_event_in_a_stream_fails_the_call_with_the_providers_words() {
    let body = sse(&[(
        Some("error"),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    )]);
    let server = MockServer::start(vec![(200, vec![SSE], body)]).await;
    let config = ProviderConfig::Anthropic {
        base_url: server.url.clone(),
        model: "claude-3-5-haiku-latest".into(),
        api_key_secret: "K".into(),
        price: None,
        stream: true,
    };
    let model = build_model(&config, Some(SecretValue::new("k")), &fast_env()).expect("model");
    let err = model
        .complete_streaming(&request(), &|_| {})
        .await
        .expect_err("the stream said error");
    assert!(err.to_string().contains("Overloaded"), "{err}");
}

#[tokio::test]
async fn azure_posts_to_the_deployment_with_its_api_key_header() {
    let whole = json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "hello"}}], "usage": {"prompt_tokens": 10, "completion_tokens": 2}});
    let server = MockServer::start(vec![(200, vec![], whole.to_string())]).await;
    let config = ProviderConfig::Azure {
        endpoint: server.url.clone(),
        deployment: "prod-4o".into(),
        api_version: "2024-10-21".into(),
        api_key_secret: "AZURE_OPENAI_API_KEY".into(),
        model: Some("gpt-4o".into()),
        price: None,
        stream: false,
    };
    let model = build_model(&config, Some(SecretValue::new("az-key")), &fast_env()).expect("model");
    assert_eq!(model.provider(), "azure");
    let response = model.complete(&request()).await.expect("answer");
    assert_eq!(response.text, "hello");
    // gpt-4o: $2.50 in, $10 out per million.
    assert!((response.cost - (10.0 * 2.5 + 2.0 * 10.0) / 1e6).abs() < 1e-12);
    let sent = &server.requests()[0];
    assert_eq!(
        sent.path,
        "/openai/deployments/prod-4o/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(sent.header("api-key"), Some("az-key"));
    assert_eq!(sent.header("authorization"), None);
    // A deployment that would change the URL is refused before anything is sent.
    let bad = ProviderConfig::Azure {
        endpoint: server.url.clone(),
        deployment: "x/../../admin".into(),
        api_version: "2024-10-21".into(),
        api_key_secret: "K".into(),
        model: None,
        price: None,
        stream: false,
    };
    let err = build_model(&bad, Some(SecretValue::new("k")), &fast_env())
        .err()
        .expect("refused");
    assert!(err.to_string().contains("deployment"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn the_connection_test_says_ok_or_the_providers_reason() {
    let ok = json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "ok"}}], "usage": {"prompt_tokens": 12, "completion_tokens": 1}});
    let refused = json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}});
    let server = MockServer::start(vec![
        (200, vec![], ok.to_string()),
        (401, vec![], refused.to_string()),
    ])
    .await;
    let config = openai(false, &server.url);
    let good = test_connection(&config, Some(SecretValue::new("right")), &fast_env()).await;
    assert!(good.ok, "{good:?}");
    assert!(
        good.message.starts_with("gpt-4o-mini answered in"),
        "{}",
        good.message
    );
    assert_eq!(good.usage.map(|u| u.input_tokens), Some(12));
    let bad = test_connection(&config, Some(SecretValue::new("wrong")), &fast_env()).await;
    assert!(!bad.ok);
    assert_eq!(
        bad.message,
        "the key in secret OPENAI_API_KEY was refused (401): Incorrect API key provided"
    );
    assert!(!bad.message.contains("wrong"));
    let sent = server.requests();
    assert_eq!(sent[0].body["max_tokens"], json!(16));
    assert_eq!(sent[1].header("authorization"), Some("Bearer wrong"));
}
