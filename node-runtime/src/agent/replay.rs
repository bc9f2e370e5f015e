//! Replay bundles: everything needed to re-run an Agent Node hermetically.
//!
//! A bundle (`format_version` 1) holds the node config (tool versions,
//! prompts, policy, provider config: names of secrets only, never values),
//! the tools as offered and as sent, every model exchange (request messages
//! stored once, as the messages appended since the previous exchange, plus
//! the response), every ToolEnvelope, the approvals, the provider-id mapping
//! and timings, and an `integrity` hash over all of it.
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
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    AgentError, AgentRun, ApprovalRecord, BatchItem, CallMapping, EventSink, RecordedExchange,
    Step, ToolRunner,
};
use crate::agent_config::AgentConfig;
use crate::call_id::canonical_json;
use crate::envelope::{AgentOutputs, ToolEnvelope};
use crate::model::{ChatModel, ChatRequest, ChatResponse, Message, ModelError, ToolDefinition};

pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayBundle {
    pub format_version: u32,
    pub run_id: String,
    pub config: AgentConfig,
    pub tool_definitions: Vec<ToolDefinition>,
    /// The tool list exactly as the provider adapter sent it.
    pub tool_schemas: Vec<Value>,
    pub exchanges: Vec<RecordedExchange>,
    pub envelopes: Vec<ToolEnvelope>,
    pub approvals: Vec<ApprovalRecord>,
    pub call_map: Vec<CallMapping>,
    pub outputs: AgentOutputs,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// Lowercase hex BLAKE3 of the canonical JSON of every other field.
    pub integrity: String,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BundleError {
    #[error("the bundle is not valid JSON (truncated or corrupted?): {0}")]
    NotJson(String),
    #[error("the bundle has no format_version")]
    MissingVersion,
    #[error("unknown bundle format_version {found}; this Glassbox reads version {FORMAT_VERSION}")]
    UnknownVersion { found: Value },
    #[error("the bundle does not match the format at `{path}`: {message}")]
    Shape { path: String, message: String },
    #[error("the bundle was modified: its contents no longer match its integrity hash")]
    Tampered,
    #[error("the run has not finished; only finished runs make a bundle")]
    NotFinished,
}

/// BLAKE3 of a bundle's canonical JSON without its `integrity` key.
fn integrity_of(mut value: Value) -> String {
    if let Value::Object(map) = &mut value {
        map.remove("integrity");
    }
    blake3::hash(canonical_json(&value).as_bytes())
        .to_hex()
        .to_string()
}

impl ReplayBundle {
    /// The bundle of a finished run; `tool_schemas` is what the adapter sent.
    pub fn from_run(run: &AgentRun, tool_schemas: Vec<Value>) -> Result<Self, BundleError> {
        if !matches!(run.status, super::RunStatus::Finished) {
            return Err(BundleError::NotFinished);
        }
        let mut bundle = Self {
            format_version: FORMAT_VERSION,
            run_id: run.run_id.clone(),
            config: run.config.clone(),
            tool_definitions: run.tool_definitions.clone(),
            tool_schemas,
            exchanges: run.exchanges.clone(),
            envelopes: run.envelopes.clone(),
            approvals: run.approvals.clone(),
            call_map: run.call_map.clone(),
            outputs: run.outputs.clone(),
            started_at: run.started_at.clone(),
            finished_at: run.finished_at.clone(),
            integrity: String::new(),
        };
        let value = serde_json::to_value(&bundle).map_err(|e| BundleError::Shape {
            path: String::new(),
            message: e.to_string(),
        })?;
        bundle.integrity = integrity_of(value);
        Ok(bundle)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a bundle is plain data and always serializes")
    }

    /// Loads and checks a bundle: JSON, version, shape, integrity.
    pub fn from_json(text: &str) -> Result<Self, BundleError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| BundleError::NotJson(e.to_string()))?;
        match value.get("format_version") {
            None => return Err(BundleError::MissingVersion),
            Some(v) if v.as_u64() == Some(u64::from(FORMAT_VERSION)) => {}
            Some(other) => {
                return Err(BundleError::UnknownVersion {
                    found: other.clone(),
                })
            }
        }
        let bundle: Self =
            serde_path_to_error::deserialize(&value).map_err(|e| BundleError::Shape {
                path: e.path().to_string(),
                message: e.inner().to_string(),
            })?;
        if integrity_of(value) != bundle.integrity {
            return Err(BundleError::Tampered);
        }
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
            if exchange.tools_offered == request.tools.is_empty() {
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

/// Answers tool calls from the recorded envelopes by call_id.
struct ReplayTools<'a> {
    by_call_id: HashMap<&'a str, &'a ToolEnvelope>,
    step: Mutex<usize>,
}

impl ToolRunner for ReplayTools<'_> {
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
                    self.by_call_id
                        .get(call_id)
                        .map(|e| (*e).clone())
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
        by_call_id: bundle
            .envelopes
            .iter()
            .map(|e| (e.call_id.as_str(), e))
            .collect(),
        step: Mutex::new(0),
    };
    let mut decisions = bundle.approvals.iter();
    loop {
        match runtime.drive(&mut run, &model, &tools, sink).await? {
            Step::Finished(outputs) => return Ok(outputs),
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
