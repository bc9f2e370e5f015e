//! The scripted provider: deterministic turns from a JSON script. It powers
//! the examples, tests and benchmarks, and is the offline default.
//!
//! ```json
//! {"turns": [
//!    {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
//!    {"text": "The answer is 42."}],
//!  "final_answer": "used when a limit forces an answer without tools"}
//! ```
//!
//! The turn played is the number of assistant messages already in the
//! request, so the model is stateless: a resumed or replayed run gets the
//! same turn for the same history. Each turn may add `latency_ms`, `usage`
//! and `cost`.

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::script::Script;

use super::{
    ChatModel, ChatRequest, ChatResponse, Message, ModelError, ProviderToolCall, StopReason,
    TokenUsage, ToolDefinition,
};

#[derive(Debug, Clone)]
pub struct ScriptedModel {
    script: Script,
}

impl ScriptedModel {
    /// Parses a script; a bad script names the field that is wrong.
    pub fn from_json(script: &Value) -> Result<Self, ModelError> {
        let script = Script::parse(script).map_err(ModelError::Config)?;
        Ok(Self { script })
    }
}

impl ChatModel for ScriptedModel {
    fn provider(&self) -> &'static str {
        "scripted"
    }

    fn tool_schemas(&self, tools: &[ToolDefinition]) -> Vec<Value> {
        tools
            .iter()
            .map(|t| serde_json::json!({"name": t.name, "description": t.description,
                "input_schema": super::schema::normalize(&t.input_schema, super::schema::Strictness::default())}))
            .collect()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        Box::pin(async move {
            let index = request
                .messages
                .iter()
                .filter(|m| matches!(m, Message::Assistant { .. }))
                .count();
            if request.tools.is_empty() {
                // A forced final answer: no tools may be called.
                let text = self
                    .script
                    .turns
                    .get(index)
                    .filter(|t| t.tool_calls.is_empty() && !t.text.is_empty())
                    .map(|t| t.text.clone())
                    .or_else(|| self.script.final_answer.clone())
                    .unwrap_or_else(|| {
                        format!("I had to stop after {index} steps; this is what I found so far.")
                    });
                return Ok(ChatResponse {
                    text,
                    tool_calls: vec![],
                    usage: TokenUsage::default(),
                    cost: 0.0,
                    stop_reason: StopReason::EndTurn,
                });
            }
            let turn = self.script.turns.get(index).ok_or_else(|| {
                ModelError::Script(format!(
                    "the script has {} turns; turn {} was requested",
                    self.script.turns.len(),
                    index + 1
                ))
            })?;
            if turn.latency_ms > 0 {
                wait(Duration::from_millis(turn.latency_ms)).await;
            }
            let tool_calls: Vec<ProviderToolCall> = turn
                .tool_calls
                .iter()
                .enumerate()
                .map(|(i, c)| ProviderToolCall {
                    id: c
                        .id
                        .clone()
                        .unwrap_or_else(|| format!("script_{index}_{i}")),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })
                .collect();
            let stop_reason = if tool_calls.is_empty() {
                StopReason::EndTurn
            } else {
                StopReason::ToolUse
            };
            Ok(ChatResponse {
                text: turn.text.clone(),
                tool_calls,
                usage: turn.usage.unwrap_or_default(),
                cost: turn.cost,
                stop_reason,
            })
        })
    }
}

/// Waits out a turn's `latency_ms`. On Linux the wait is a timerfd read
/// through tokio's reactor, so the turn's reply wakes the run as a reply on
/// a socket would, within microseconds of the deadline; tokio's own timer
/// rounds every deadline up to its next 1 ms tick and wakes on 1 ms epoll
/// timeouts, which adds 1-2 ms to every scripted turn. Elsewhere, or when
/// no timerfd can be made (no file descriptors left), tokio's timer. (On
/// Linux a paused tokio test clock does not shorten the wait.)
pub async fn wait(latency: Duration) {
    let deadline = std::time::Instant::now() + latency;
    #[cfg(target_os = "linux")]
    if let Ok(delay) = tokio_timerfd::Delay::new(deadline) {
        if delay.await.is_ok() {
            return;
        }
    }
    tokio::time::sleep_until(deadline.into()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_turn_never_arrives_before_its_latency() {
        for ms in [1, 7, 20] {
            let t = std::time::Instant::now();
            wait(Duration::from_millis(ms)).await;
            assert!(
                t.elapsed() >= Duration::from_millis(ms),
                "{ms} ms: {:?}",
                t.elapsed()
            );
        }
    }
}
