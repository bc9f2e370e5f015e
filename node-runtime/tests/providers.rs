//! Provider adapters against an in-process mock HTTP server that speaks
//! each API, with request/response shapes from the providers' public API
//! docs: parallel tool calls, tool-result round trips, 429 then success,
//! 5xx retries, 4xx messages and malformed bodies. Plus the registry-wide
//! normalizer contract test.

use std::sync::Arc;
use std::time::{Duration, Instant};

use node_runtime::agent::{AgentRuntime, LiveTools, NullSink, Step};
use node_runtime::agent_config::{AgentConfig, ModelParams, ProviderConfig};
use node_runtime::blob::FsBlobStore;
use node_runtime::executor::{Executor, ExecutorConfig};
use node_runtime::model::anthropic::AnthropicModel;
use node_runtime::model::openai::OpenAiModel;
use node_runtime::model::schema::{violations, Strictness};
use node_runtime::model::{
    build_model, ChatModel, ChatRequest, Message, ModelEnv, ModelError, StopReason, ToolDefinition,
};
use node_runtime::policy::Policy;
use node_runtime::secrets::{MemorySecrets, SecretOwner, SecretValue};
use node_runtime::tool::{ToolEnv, ToolRegistry};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

mod common;
use common::mock_http::{fast_env, MockServer};

fn calc_tool() -> ToolDefinition {
    ToolDefinition {
        name: "calculator".into(),
        description: "Evaluates arithmetic.".into(),
        input_schema: json!({"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}),
    }
}

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        system: "Be brief.".into(),
        messages,
        tools: vec![calc_tool()],
        params: ModelParams::default(),
    }
}

/// From the Chat Completions docs: an assistant message with two parallel tool calls.
fn openai_parallel() -> String {
    json!({
        "id": "chatcmpl-abc123", "object": "chat.completion", "created": 1_700_000_000, "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [
                {"id": "call_A", "type": "function", "function": {"name": "calculator", "arguments": "{\"expression\":\"1+1\"}"}},
                {"id": "call_B", "type": "function", "function": {"name": "calculator", "arguments": "{\"expression\":\"2+2\"}"}}]}}],
        "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99}
    })
    .to_string()
}

fn openai_text(text: &str) -> String {
    json!({"id": "chatcmpl-2", "object": "chat.completion", "model": "gpt-4o",
           "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
           "usage": {"prompt_tokens": 120, "completion_tokens": 5, "total_tokens": 125}})
    .to_string()
}

#[tokio::test]
async fn openai_parallel_calls_and_tool_result_round_trip() {
    let server = MockServer::start(vec![(200, vec![], openai_parallel())]).await;
    let model = OpenAiModel::new(
        &format!("{}/v1", server.url),
        "gpt-4o",
        Some(SecretValue::new("sk-test")),
        &fast_env(),
    )
    .expect("model");
    let first = model
        .complete(&request(vec![Message::User { text: "sum".into() }]))
        .await
        .expect("response");
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    assert_eq!(
        first
            .tool_calls
            .iter()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>(),
        vec!["call_A", "call_B"]
    );
    assert_eq!(first.tool_calls[1].arguments, json!({"expression": "2+2"}));
    assert_eq!(first.usage.input_tokens, 82);
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(req.body["tools"][0]["type"], "function");
    assert_eq!(
        req.body["tools"][0]["function"]["parameters"]["additionalProperties"],
        false
    );
    assert_eq!(
        req.body["messages"][0],
        json!({"role": "system", "content": "Be brief."})
    );

    // The follow-up request carries the provider ids in OpenAI's format.
    let body = model.body(&request(vec![
        Message::User { text: "sum".into() },
        Message::Assistant {
            text: String::new(),
            tool_calls: first.tool_calls.clone(),
        },
        Message::ToolResult {
            provider_call_id: "call_A".into(),
            name: "calculator".into(),
            content: json!({"result": 2.0}).into(),
            is_error: false,
        },
        Message::ToolResult {
            provider_call_id: "call_B".into(),
            name: "calculator".into(),
            content: json!({"result": 4.0}).into(),
            is_error: false,
        },
    ]));
    assert_eq!(body["messages"][2]["tool_calls"][0]["id"], "call_A");
    assert_eq!(
        body["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{\"expression\":\"1+1\"}"
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_A", "content": "{\"result\":2.0}"})
    );
    assert_eq!(body["messages"][4]["tool_call_id"], "call_B");
}

#[tokio::test]
async fn openai_429_is_retried_after_retry_after() {
    let limited = json!({"error": {"message": "Rate limit reached for gpt-4o", "type": "requests", "code": "rate_limit_exceeded"}}).to_string();
    let server = MockServer::start(vec![
        (429, vec![("retry-after", "1")], limited),
        (200, vec![], openai_text("ok")),
    ])
    .await;
    let model = OpenAiModel::new(&server.url, "m", None, &fast_env()).expect("model");
    let start = Instant::now();
    let r = model
        .complete(&request(vec![Message::User { text: "hi".into() }]))
        .await
        .expect("succeeds on retry");
    assert_eq!(r.text, "ok");
    assert!(
        start.elapsed() >= Duration::from_millis(950),
        "honoured Retry-After: {:?}",
        start.elapsed()
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn openai_5xx_retries_are_bounded_and_4xx_carry_the_message() {
    let boom = json!({"error": {"message": "The server had an error"}}).to_string();
    let server = MockServer::start(vec![
        (500, vec![], boom.clone()),
        (503, vec![], boom.clone()),
        (200, vec![], openai_text("fine")),
    ])
    .await;
    let model = OpenAiModel::new(&server.url, "m", None, &fast_env()).expect("model");
    assert_eq!(
        model
            .complete(&request(vec![Message::User { text: "x".into() }]))
            .await
            .expect("third try")
            .text,
        "fine"
    );

    let server = MockServer::start(vec![(500, vec![], boom.clone()); 4]).await;
    let model = OpenAiModel::new(&server.url, "m", None, &fast_env()).expect("model");
    let err = model
        .complete(&request(vec![Message::User { text: "x".into() }]))
        .await
        .expect_err("gives up");
    assert!(
        matches!(err, ModelError::RetriesExhausted { attempts: 4, .. }),
        "{err}"
    );
    assert_eq!(server.requests().len(), 4);

    let bad = json!({"error": {"message": "Invalid schema for function 'calculator'", "type": "invalid_request_error"}}).to_string();
    let server = MockServer::start(vec![(400, vec![], bad)]).await;
    let model = OpenAiModel::new(&server.url, "m", None, &fast_env()).expect("model");
    let err = model
        .complete(&request(vec![Message::User { text: "x".into() }]))
        .await
        .expect_err("4xx");
    assert_eq!(
        err,
        ModelError::Provider {
            provider: "openai",
            status: 400,
            message: "Invalid schema for function 'calculator'".into()
        }
    );
    assert_eq!(server.requests().len(), 1, "4xx is not retried");
}

#[tokio::test]
async fn malformed_bodies_are_clear_errors() {
    for body in [
        "this is not json",
        "{\"choices\": []}",
        "{\"choices\": [{\"message\": {\"tool_calls\": [{\"function\": {}}]}}]}",
    ] {
        let server = MockServer::start(vec![(200, vec![], body.to_string())]).await;
        let model = OpenAiModel::new(&server.url, "m", None, &fast_env()).expect("model");
        let err = model
            .complete(&request(vec![Message::User { text: "x".into() }]))
            .await
            .expect_err("malformed");
        assert!(
            matches!(
                err,
                ModelError::Malformed {
                    provider: "openai",
                    ..
                }
            ),
            "{body}: {err}"
        );
    }
    let server = MockServer::start(vec![(200, vec![], "{\"type\": \"message\"}".into())]).await;
    let model = AnthropicModel::new(&server.url, "claude", SecretValue::new("k"), &fast_env())
        .expect("model");
    let err = model
        .complete(&request(vec![Message::User { text: "x".into() }]))
        .await
        .expect_err("malformed");
    assert!(
        matches!(
            err,
            ModelError::Malformed {
                provider: "anthropic",
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn anthropic_tool_use_and_tool_result_blocks() {
    // From the Messages API docs: text plus two tool_use blocks.
    let response = json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            {"type": "text", "text": "I'll compute both."},
            {"type": "tool_use", "id": "toolu_A", "name": "calculator", "input": {"expression": "1+1"}},
            {"type": "tool_use", "id": "toolu_B", "name": "calculator", "input": {"expression": "2+2"}}],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 40, "output_tokens": 30}
    })
    .to_string();
    let server = MockServer::start(vec![(429, vec![("retry-after", "0")], "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}".into()), (200, vec![], response)]).await;
    let model = AnthropicModel::new(
        &server.url,
        "claude-sonnet-4-5",
        SecretValue::new("sk-ant"),
        &fast_env(),
    )
    .expect("model");
    let r = model
        .complete(&request(vec![Message::User { text: "sum".into() }]))
        .await
        .expect("response");
    assert_eq!(r.text, "I'll compute both.");
    assert_eq!(
        r.tool_calls
            .iter()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>(),
        vec!["toolu_A", "toolu_B"]
    );
    assert_eq!(r.stop_reason, StopReason::ToolUse);
    let req = &server.requests()[1];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some("sk-ant"));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.body["system"], "Be brief.");
    assert_eq!(req.body["tools"][0]["input_schema"]["type"], "object");

    let body = model.body(&request(vec![
        Message::User { text: "sum".into() },
        Message::Assistant {
            text: r.text.clone(),
            tool_calls: r.tool_calls.clone(),
        },
        Message::ToolResult {
            provider_call_id: "toolu_A".into(),
            name: "calculator".into(),
            content: json!({"result": 2.0}).into(),
            is_error: false,
        },
        Message::ToolResult {
            provider_call_id: "toolu_B".into(),
            name: "calculator".into(),
            content: json!({"error": {"code": "TIMEOUT"}}).into(),
            is_error: true,
        },
    ]));
    let msgs = body["messages"].as_array().expect("messages");
    assert_eq!(msgs.len(), 3, "both results share one user turn");
    assert_eq!(
        msgs[1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_A", "name": "calculator", "input": {"expression": "1+1"}})
    );
    assert_eq!(msgs[2]["role"], "user");
    assert_eq!(msgs[2]["content"][0]["tool_use_id"], "toolu_A");
    assert_eq!(msgs[2]["content"][1]["is_error"], true);
}

#[tokio::test]
async fn the_loop_runs_over_the_openai_adapter() {
    let server = MockServer::start(vec![
        (200, vec![], openai_parallel()),
        (200, vec![], openai_text("2 and 4")),
    ])
    .await;
    let mut registry = ToolRegistry::new();
    node_runtime::builtins::register_builtins(&mut registry).expect("builtins");
    let blobs = tempfile::tempdir().expect("tmp");
    let runtime = AgentRuntime {
        registry: Arc::new(registry),
        approval_key: [1; 32],
    };
    let tools = LiveTools {
        executor: Arc::new(Executor::new(
            ExecutorConfig::default(),
            Arc::new(MemorySecrets::new()),
            Arc::new(FsBlobStore::new(blobs.path())),
        )),
        owner: SecretOwner {
            user_id: None,
            workspace_id: "ws".into(),
            org_id: None,
        },
        env: Arc::new(ToolEnv::default()),
        cancel: CancellationToken::new(),
        journal: None,
        progress: None,
    };
    let provider = ProviderConfig::Openai {
        base_url: server.url.clone(),
        model: "gpt-4o".into(),
        api_key_secret: None,
        price: None,
        stream: false,
    };
    let model = build_model(&provider, None, &fast_env()).expect("factory");
    let config = AgentConfig {
        system_prompt: String::new(),
        user_prompt: "1+1 and 2+2?".into(),
        tools: vec!["calculator@1.0.0".into()],
        policy: Policy::default(),
        provider,
        params: ModelParams::default(),
        traces_url: None,
    };
    let mut run = runtime.start("r", "ws", config).expect("start");
    let Step::Finished = runtime
        .drive(&mut run, model.as_ref(), &tools, &NullSink)
        .await
        .expect("drive")
    else {
        panic!("finished")
    };
    let out = &run.outputs;
    assert_eq!(out.response, "2 and 4");
    let outputs: Vec<Value> = out
        .tool_order
        .iter()
        .map(|id| out.tools_by_id[id].output.value().clone())
        .collect();
    assert_eq!(
        outputs,
        vec![json!({"result": 2.0}), json!({"result": 4.0})]
    );
    // The second request answered call_A and call_B with our results.
    let second = &server.requests()[1].body;
    let tool_msgs: Vec<&Value> = second["messages"]
        .as_array()
        .expect("msgs")
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(
        tool_msgs
            .iter()
            .map(|m| m["tool_call_id"].clone())
            .collect::<Vec<_>>(),
        vec![json!("call_A"), json!("call_B")]
    );
    assert_eq!(
        run.call_map
            .iter()
            .map(|m| m.provider_call_id.as_str())
            .collect::<Vec<_>>(),
        vec!["call_A", "call_B"]
    );
}

#[test]
fn every_builtin_schema_passes_every_adapters_normalizer() {
    let mut registry = ToolRegistry::new();
    node_runtime::builtins::register_builtins(&mut registry).expect("builtins");
    let defs: Vec<ToolDefinition> = registry
        .all()
        .map(|t| ToolDefinition::from_spec(&t.spec))
        .collect();
    assert!(defs.len() >= 7);
    let openai = OpenAiModel::new("http://127.0.0.1:9", "m", None, &fast_env()).expect("model");
    let anthropic = AnthropicModel::new(
        "http://127.0.0.1:9",
        "m",
        SecretValue::new("k"),
        &fast_env(),
    )
    .expect("model");
    let scripted = node_runtime::model::scripted::ScriptedModel::from_json(&json!({"turns": []}))
        .expect("model");
    let cases: Vec<(&str, Vec<Value>, &str, Strictness)> = vec![
        (
            "openai",
            openai.tool_schemas(&defs),
            "/function/parameters",
            node_runtime::model::openai::STRICTNESS,
        ),
        (
            "anthropic",
            anthropic.tool_schemas(&defs),
            "/input_schema",
            node_runtime::model::anthropic::STRICTNESS,
        ),
        (
            "scripted",
            scripted.tool_schemas(&defs),
            "/input_schema",
            Strictness::default(),
        ),
    ];
    for (adapter, schemas, pointer, strictness) in cases {
        assert_eq!(schemas.len(), defs.len());
        for (def, sent) in defs.iter().zip(&schemas) {
            let schema = sent
                .pointer(pointer)
                .unwrap_or_else(|| panic!("{adapter}: no {pointer}"));
            let problems = violations(schema, strictness);
            assert!(
                problems.is_empty(),
                "{adapter} / {}: {problems:?}\n{schema:#}",
                def.name
            );
            // Serialized as the adapter sends it, it round-trips.
            let text = serde_json::to_string(sent).expect("ser");
            assert_eq!(&serde_json::from_str::<Value>(&text).expect("parse"), sent);
        }
    }
}

#[tokio::test]
async fn retry_after_as_an_http_date_is_honoured() {
    let server = MockServer::start(vec![
        (
            429,
            vec![("retry-after", "Fri, 31 Dec 2100 23:59:59 GMT")],
            "{}".into(),
        ),
        (200, vec![], openai_text("ok")),
    ])
    .await;
    // The date is far off: the wait is the policy's longest, not the 10 ms
    // backoff.
    let mut env = fast_env();
    env.retry.max_delay = Duration::from_secs(1);
    let model = OpenAiModel::new(&server.url, "m", None, &env).expect("model");
    let start = Instant::now();
    let r = model
        .complete(&request(vec![Message::User { text: "hi".into() }]))
        .await
        .expect("succeeds on retry");
    assert_eq!(r.text, "ok");
    assert!(
        start.elapsed() >= Duration::from_millis(950),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn a_loopback_base_url_is_refused_unless_allow_listed_and_nothing_is_sent() {
    let server = MockServer::start(vec![(200, vec![], openai_text("ok")); 4]).await;
    let port = server.url.rsplit(':').next().expect("port").to_string();
    for url in [
        server.url.clone(),
        format!("http://[::ffff:127.0.0.1]:{port}"),
        format!("http://2130706433:{port}"),
        format!("http://localhost:{port}"),
    ] {
        let model = OpenAiModel::new(&url, "m", None, &ModelEnv::default()).expect("model");
        let err = model
            .complete(&request(vec![Message::User { text: "hi".into() }]))
            .await
            .expect_err("refused");
        assert!(matches!(err, ModelError::Refused { .. }), "{url}: {err:?}");
        assert!(
            err.to_string().contains("refusing to connect"),
            "{url}: {err}"
        );
    }
    assert!(
        server.requests().is_empty(),
        "a refused URL reached the mock"
    );
    // Allow-listed, the same mock answers.
    let model = OpenAiModel::new(&server.url, "m", None, &fast_env()).expect("model");
    assert!(model
        .complete(&request(vec![Message::User { text: "hi".into() }]))
        .await
        .is_ok());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_answer_over_the_size_cap_fails_the_call() {
    let big = openai_text(&"x".repeat(4096));
    let server = MockServer::start(vec![(200, vec![], big)]).await;
    let mut env = fast_env();
    env.egress.max_response_bytes = 1024;
    let model = OpenAiModel::new(&server.url, "m", None, &env).expect("model");
    let err = model
        .complete(&request(vec![Message::User { text: "hi".into() }]))
        .await
        .expect_err("too large");
    assert!(err.to_string().contains("larger than 1024 bytes"), "{err}");
}

#[tokio::test]
async fn usage_is_charged_at_the_shipped_price_or_the_nodes_override() {
    // openai_text reports 120 input and 5 output tokens.
    let server = MockServer::start(vec![(200, vec![], openai_text("ok")); 3]).await;
    let config = |model: &str, price| ProviderConfig::Openai {
        base_url: server.url.clone(),
        model: model.into(),
        api_key_secret: None,
        price,
        stream: false,
    };
    let cost = |config: ProviderConfig| async move {
        let model = build_model(&config, None, &fast_env()).expect("model");
        model
            .complete(&request(vec![Message::User { text: "hi".into() }]))
            .await
            .expect("answer")
            .cost
    };
    // gpt-4o: $2.50 / $10 per million tokens.
    let shipped = cost(config("gpt-4o", None)).await;
    assert!(
        (shipped - (120.0 * 2.5 + 5.0 * 10.0) / 1e6).abs() < 1e-12,
        "{shipped}"
    );
    let overridden = cost(config(
        "gpt-4o",
        Some(node_runtime::pricing::Price::new(1000.0, 2000.0)),
    ))
    .await;
    assert!(
        (overridden - (120.0 * 1000.0 + 5.0 * 2000.0) / 1e6).abs() < 1e-9,
        "{overridden}"
    );
    assert_eq!(cost(config("my-local-model", None)).await, 0.0);
}
