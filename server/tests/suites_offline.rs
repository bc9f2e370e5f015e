//! `model: recorded` makes a suite offline for every provider (issue 33):
//! a run recorded through a loopback OpenAI-compatible server passes its
//! suite once that server is gone. Its own test binary: the provider's
//! loopback address is allowed through the environment, read when the
//! server starts.

mod common;

use common::api::Api;
use node_runtime::wire::SuiteRunStatus;
use serde_json::json;

/// A loopback OpenAI-compatible server: the first request of each pair
/// asks for the calculator, the second answers; counts its requests.
struct MockOpenAi {
    port: u16,
    requests: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl MockOpenAi {
    async fn start() -> Self {
        use std::sync::atomic::Ordering;
        use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let requests = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut reader = BufReader::new(stream);
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).await.unwrap_or(0) == 0 || line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    let _ = reader.read_exact(&mut body).await;
                    let n = seen.fetch_add(1, Ordering::SeqCst);
                    let answer = if n.is_multiple_of(2) {
                        json!({"id": "c1", "object": "chat.completion", "model": "gpt-4o",
                            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                                "tool_calls": [{"id": "call_A", "type": "function", "function": {"name": "calculator", "arguments": "{\"expression\":\"6*7\"}"}}]}}],
                            "usage": {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27}})
                    } else {
                        json!({"id": "c2", "object": "chat.completion", "model": "gpt-4o",
                            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "42"}}],
                            "usage": {"prompt_tokens": 30, "completion_tokens": 1, "total_tokens": 31}})
                    }
                    .to_string();
                    let mut stream = reader.into_inner();
                    let _ = stream
                        .write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                                answer.len()
                            )
                            .as_bytes(),
                        )
                        .await;
                });
            }
        });
        Self {
            port,
            requests,
            task,
        }
    }

    fn requests(&self) -> usize {
        self.requests.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// `model: recorded` makes a suite offline for every provider: a run
/// recorded through an OpenAI-compatible server still passes its suite once
/// that server is gone, its model answers given again from the recording;
/// so does a fork with `recorded_answers`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suite_with_recorded_answers_runs_offline_for_a_real_provider() {
    let mut mock = MockOpenAi::start().await;
    // The provider on loopback must be allowed (before the server starts:
    // its runs read the list once). The only test of this binary: no other
    // reads the environment.
    std::env::set_var(
        glassbox_server::config::HTTP_ALLOW_HOSTS_ENV,
        format!("127.0.0.1:{}", mock.port),
    );
    let api = Api::start().await;
    let wf = api
        .workflow(json!({
            "format_version": 1, "id": "openai-suite", "name": "openai suite", "revision": 0,
            "nodes": [
                {"id": "agent", "kind": "agent", "config": {"prompt": "What is 6*7?",
                    "tools": [{"tool": "calculator@1.0.0"}],
                    "provider": {"kind": "openai", "base_url": format!("http://127.0.0.1:{}/v1", mock.port), "model": "gpt-4o"}}},
                {"id": "out", "kind": "output", "config": {"fields": ["answer"]}}
            ],
            "edges": [{"id": "e", "source": {"node": "agent", "handle": "response"}, "target": {"node": "out", "handle": "answer"}}]
        }))
        .await;
    let origin = api.recorded_run(&wf, json!({})).await;
    assert_eq!(mock.requests(), 2);
    // The provider is gone.
    mock.task.abort();
    let _ = (&mut mock.task).await;
    let suite = api
        .suite(json!({
            "name": "offline", "workflow_id": wf, "options": {"model": "recorded"},
            "cases": [{"run_id": origin, "assertions": [
                {"kind": "outputs_equal"},
                {"kind": "tool_called", "tool": "calculator"},
                {"kind": "path_equals", "path": "$.nodes.agent.response", "value": "42"},
                {"kind": "status", "equals": "succeeded"},
            ]}]
        }))
        .await;
    let run = api.run_suite(&suite, json!({})).await;
    assert_eq!(run.status, SuiteRunStatus::Passed, "{run:?}");
    assert_eq!(mock.requests(), 2, "the suite called the provider");
    // The fork ran the recorded answers through the scripted provider.
    let fork = run.cases[0].fork_id.as_deref().expect("fork");
    let (_, detail) = api.call("GET", &format!("/runs/{fork}"), None).await;
    assert_eq!(detail["status"], "succeeded", "{detail}");
    assert_eq!(detail["outputs"]["answer"], "42");

    // A fork of the run with `recorded_answers` is offline too, and the
    // diff says every call is the same, answered from the recording.
    let (s, started) = api
        .call(
            "POST",
            &format!("/runs/{origin}/fork"),
            Some(json!({"recorded_answers": true})),
        )
        .await;
    assert_eq!(s, 202, "{started}");
    let fork = started["run_id"].as_str().expect("fork id").to_string();
    let detail = api.finished(&fork).await;
    assert_eq!(detail["status"], "succeeded", "{detail}");
    assert_eq!(detail["outputs"]["answer"], "42");
    let (s, diff) = api
        .call("GET", &format!("/runs/{origin}/diff/{fork}"), None)
        .await;
    assert_eq!(s, 200, "{diff}");
    assert_eq!(diff["summary"]["same"], 1, "{diff}");
    assert_eq!(diff["summary"]["replayed"], 1, "{diff}");
    assert_eq!(diff["outputs_changed"], false, "{diff}");
    assert_eq!(mock.requests(), 2, "the fork called the provider");
}
