//! Replay: making a [`ReplayBundle`] from a finished run and re-running an
//! Agent Node from one. The bundle's data and its loading checks are
//! `crate::replay_bundle` (wasm-safe), re-exported here.
//!
//! [`replay`] runs the same loop with a model that answers from the
//! recorded exchanges and a tool runner that answers from the recorded
//! envelopes by call_id: no network, no tool runs. A request that is not in
//! the bundle fails with REPLAY_DIVERGED naming the step; it never becomes a
//! live call.

use std::collections::HashMap;
use std::collections::HashSet;
use std::sync::Mutex;

use futures::future::BoxFuture;
use serde_json::Value;

use super::{AgentError, AgentRun, BatchItem, EventSink, RecordedExchange, Step, ToolRunner};
use crate::call_id::canonical_json;
use crate::envelope::{AgentOutputs, ToolEnvelope};
use crate::model::{ChatModel, ChatRequest, ChatResponse, Message, ModelError, ToolDefinition};
use crate::replay_bundle::integrity_of_bundle;

pub use crate::replay_bundle::{BundleError, ReplayBundle, FORMAT_VERSION};

impl ReplayBundle {
    /// The bundle of a finished run; `tool_schemas` is what the adapter sent.
    pub fn from_run(run: &AgentRun, tool_schemas: Vec<Value>) -> Result<Self, BundleError> {
        Self::of_finished(run.clone(), tool_schemas)
    }

    /// [`Self::from_run`] that takes the run, so its records move into the
    /// bundle instead of being copied (the end of a node's run).
    pub fn of_finished(run: AgentRun, tool_schemas: Vec<Value>) -> Result<Self, BundleError> {
        if !matches!(run.status, super::RunStatus::Finished) {
            return Err(BundleError::NotFinished);
        }
        let mut bundle = Self {
            format_version: FORMAT_VERSION,
            run_id: run.run_id,
            config: run.config,
            tool_definitions: run.tool_definitions,
            tool_schemas,
            exchanges: run.exchanges,
            envelopes: run.envelopes,
            approvals: run.approvals,
            call_map: run.call_map,
            outputs: run.outputs,
            started_at: run.started_at,
            finished_at: run.finished_at,
            integrity: String::new(),
        };
        bundle.integrity = integrity_of_bundle(&bundle).map_err(|e| BundleError::Shape {
            path: String::new(),
            message: e.to_string(),
        })?;
        Ok(bundle)
    }
}

/// Answers model requests from the recorded exchanges.
struct ReplayModel<'a> {
    bundle: &'a ReplayBundle,
    next: Mutex<usize>,
}

impl ChatModel for ReplayModel<'_> {
    fn provider(&self) -> &'static str {
        "replay"
    }

    fn tool_schemas(&self, _tools: &[ToolDefinition]) -> Vec<Value> {
        self.bundle.tool_schemas.clone()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        Box::pin(async move {
            let step = {
                let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
                *next += 1;
                *next
            };
            let diverged = |message: String| ModelError::ReplayDiverged { step, message };
            let Some(exchange) = self.bundle.exchanges.get(step - 1) else {
                return Err(diverged(format!(
                    "the bundle has {} model calls; call {step} is not in it",
                    self.bundle.exchanges.len()
                )));
            };
            let expected = conversation_before(&self.bundle.exchanges[..step]);
            let expected: Vec<&Message> = expected.iter().collect();
            let actual: Vec<&Message> = request.messages.iter().collect();
            if expected != actual {
                let at = expected
                    .iter()
                    .zip(actual.iter())
                    .position(|(a, b)| a != b)
                    .unwrap_or(expected.len().min(actual.len()));
                return Err(diverged(format!(
                    "the conversation differs from the recording at message {} ({} recorded, {} now)",
                    at + 1,
                    expected.len(),
                    actual.len()
                )));
            }
            // With no tools in the bundle a replay can only offer the
            // empty list, whatever the recording says it offered.
            if exchange.tools_offered == request.tools.is_empty()
                && !self.bundle.tool_definitions.is_empty()
            {
                return Err(diverged(
                    "the recorded call and this one differ in whether tools were offered".into(),
                ));
            }
            if request.tools != self.bundle.tool_definitions && !request.tools.is_empty() {
                return Err(diverged(
                    "the tools offered differ from the recording".into(),
                ));
            }
            Ok(exchange.response.clone())
        })
    }
}

/// Rebuilds the request conversation of the last of `exchanges`: each
/// exchange's delta, with the assistant message of every earlier response
/// put back in between.
pub fn conversation_before(exchanges: &[RecordedExchange]) -> Vec<Message> {
    let mut messages = Vec::new();
    for (i, exchange) in exchanges.iter().enumerate() {
        if i > 0 {
            let previous = &exchanges[i - 1].response;
            messages.push(Message::Assistant {
                text: previous.text.clone(),
                tool_calls: previous.tool_calls.clone(),
            });
        }
        messages.extend(exchange.appended.iter().cloned());
    }
    messages
}

/// Recorded tool envelopes by call id: what a replay answers its tool
/// calls from, and a fork each node's (`graph::engine::ForkRecording`).
#[derive(Debug, Clone, Default)]
pub struct RecordedCalls {
    by_call_id: HashMap<String, ToolEnvelope>,
}

impl RecordedCalls {
    /// Records `envelope` under its call id (a later one of the same id
    /// replaces it).
    pub fn insert(&mut self, envelope: ToolEnvelope) {
        self.by_call_id.insert(envelope.call_id.clone(), envelope);
    }

    /// The envelope recorded for `call_id`.
    pub fn get(&self, call_id: &str) -> Option<&ToolEnvelope> {
        self.by_call_id.get(call_id)
    }

    pub fn contains(&self, call_id: &str) -> bool {
        self.by_call_id.contains_key(call_id)
    }

    pub fn len(&self) -> usize {
        self.by_call_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_call_id.is_empty()
    }
}

impl FromIterator<ToolEnvelope> for RecordedCalls {
    fn from_iter<I: IntoIterator<Item = ToolEnvelope>>(envelopes: I) -> Self {
        let mut calls = Self::default();
        for envelope in envelopes {
            calls.insert(envelope);
        }
        calls
    }
}

/// Answers tool calls from the recorded envelopes by call_id.
struct ReplayTools {
    calls: RecordedCalls,
    step: Mutex<usize>,
}

impl ToolRunner for ReplayTools {
    /// A call the recorded run (a fork) answered from its own recording
    /// asked no approval, so its replay asks none either.
    fn recorded(&self, call_id: &str) -> bool {
        self.calls.get(call_id).is_some_and(|e| e.replayed)
    }

    fn run_batch<'a>(
        &'a self,
        _run: &'a AgentRun,
        items: Vec<BatchItem>,
        _approved: HashSet<String>,
    ) -> BoxFuture<'a, Result<Vec<ToolEnvelope>, AgentError>> {
        Box::pin(async move {
            let step = {
                let mut s = self.step.lock().unwrap_or_else(|e| e.into_inner());
                *s += 1;
                *s
            };
            items
                .iter()
                .map(|item| {
                    let call_id = match item {
                        BatchItem::Execute(c) => c.call_id.as_str(),
                        BatchItem::Fail { call_id, .. } => call_id.as_str(),
                    };
                    self.calls
                        .get(call_id)
                        .cloned()
                        .ok_or_else(|| AgentError::ReplayDiverged {
                            step,
                            message: format!(
                                "tool batch {step}: call {call_id} is not in the bundle"
                            ),
                        })
                })
                .collect()
        })
    }
}

/// Re-runs the bundle's Agent Node hermetically and returns its outputs.
/// Recorded approval decisions are applied as they were made.
pub async fn replay(
    runtime: &super::AgentRuntime,
    bundle: &ReplayBundle,
    sink: &dyn EventSink,
) -> Result<AgentOutputs, AgentError> {
    let mut run = super::AgentRuntime::new_run(
        &bundle.run_id,
        "replay",
        bundle.config.clone(),
        bundle.tool_definitions.clone(),
    );
    let model = ReplayModel {
        bundle,
        next: Mutex::new(0),
    };
    let tools = ReplayTools {
        calls: bundle.envelopes.iter().cloned().collect(),
        step: Mutex::new(0),
    };
    let mut decisions = bundle.approvals.iter();
    loop {
        match runtime.drive(&mut run, &model, &tools, sink).await? {
            Step::Finished => return Ok(run.outputs),
            Step::Suspended(requests) => {
                for request in requests {
                    let record = decisions
                        .find(|d| d.call_id == request.call_id)
                        .ok_or_else(|| AgentError::ReplayDiverged {
                            step: run.exchanges.len(),
                            message: format!(
                                "call {} waits for an approval the bundle does not hold",
                                request.call_id
                            ),
                        })?;
                    runtime.decide(&mut run, &request.token, record.decision.clone(), sink)?;
                }
            }
        }
    }
}

/// Whether a replay reproduced the original outputs byte for byte.
pub fn outputs_match(a: &AgentOutputs, b: &AgentOutputs) -> bool {
    let ca = serde_json::to_value(a).map(|v| canonical_json(&v));
    let cb = serde_json::to_value(b).map(|v| canonical_json(&v));
    matches!((ca, cb), (Ok(x), Ok(y)) if x == y)
}
