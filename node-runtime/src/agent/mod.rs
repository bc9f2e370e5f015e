//! The Agent Node: an LLM tool-calling loop whose every step is visible,
//! stoppable and reproducible.
//!
//! Each iteration: policy check -> model call -> tool calls -> executor
//! batch -> envelopes -> tool results back to the model in its provider's
//! format (failures as code and message; the model decides what to do). It
//! ends at a text answer. When `max_iterations`, `max_tool_calls` or the
//! budget is hit, one last model call without tools asks for a final answer,
//! and `limit_reached` says why.
//!
//! The whole run is an [`AgentRun`] value that serializes: a run suspended
//! for approval is persisted by the host and resumed later with
//! [`AgentRuntime::decide`] and [`AgentRuntime::drive`]. Tools run only
//! through a [`ToolRunner`]: live ([`LiveTools`], the executor) or replayed
//! ([`replay`]), so a replay never makes a live call.
//!
//! Layout: the loop itself is here; the run's state is `state`, the tool
//! runners and the write journal are `tools`, approvals `approval`, event
//! sinks `events`, replay `replay`.

pub mod approval;
pub mod events;
pub mod replay;
mod state;
mod tools;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde_json::json;
use tracing::Instrument;

use crate::agent_config::AgentConfig;
use crate::call_id::CallIdAllocator;
use crate::envelope::AgentOutputs;
use crate::error::ToolError;
use crate::executor::{now_rfc3339, ToolCall};
use crate::model::{
    ChatModel, ChatRequest, ChatResponse, Message, ModelError, ProviderToolCall, ToolDefinition,
};
use crate::payload::Payload;
use crate::policy::{check_tool_call, Clearance, Usage};
use crate::tool::{RegisteredTool, ToolRegistry};
use crate::tool_spec::split_tool_ref;

pub use crate::replay_bundle::{ApprovalRecord, CallMapping, RecordedExchange};
pub use approval::{ApprovalError, ApprovalRequest, Decision};
pub use events::{AgentEvent, EventSink, NullSink, VecSink};
pub use state::{AgentError, AgentRun, PendingCall, RunStatus, Step};
pub use tools::{
    outcome_unknown_envelope, BatchItem, JournalEntry, LiveTools, ToolRunner, WriteJournal,
};

/// The batch item of a call a human denied or sent back for revision: the
/// model receives POLICY_DENIED with the reason code and the note.
fn refused_by_human(
    p: &PendingCall,
    tool_ref: &str,
    input: Payload,
    message: String,
    reason: &str,
    note: &str,
) -> BatchItem {
    let (name, version) = split_tool_ref(tool_ref).unwrap_or((tool_ref, ""));
    BatchItem::Fail {
        call_id: p.call_id.clone(),
        name: name.into(),
        version: version.into(),
        input,
        error: ToolError::policy_denied(message)
            .with_details(json!({ "reason": reason, "note": note })),
    }
}

/// What drives runs: the tools that exist and the key approvals are bound with.
pub struct AgentRuntime {
    pub registry: Arc<ToolRegistry>,
    pub approval_key: [u8; 32],
}

/// Tool name -> ref, by the name and by its provider-safe form
/// (`chat::wire_tool_name`), which is what a real model answers with.
fn tool_name_map(run: &AgentRun) -> HashMap<String, String> {
    let mut names = HashMap::new();
    for r in &run.config.tools {
        if let Some((n, _)) = split_tool_ref(r) {
            names.insert(crate::chat::wire_tool_name(n), r.clone());
            names.insert(n.to_string(), r.clone());
        }
    }
    names
}

impl AgentRuntime {
    /// A new run of `config` (nothing is called yet).
    pub fn start(
        &self,
        run_id: &str,
        workspace_id: &str,
        config: AgentConfig,
    ) -> Result<AgentRun, AgentError> {
        let mut definitions = Vec::new();
        let mut names = HashSet::new();
        for reference in &config.tools {
            let (name, version) = split_tool_ref(reference).ok_or_else(|| {
                AgentError::Config(format!("`{reference}` is not a name@version tool ref"))
            })?;
            if !names.insert(name.to_string()) {
                return Err(AgentError::Config(format!(
                    "tool {name} is enabled in two versions"
                )));
            }
            let tool = self
                .registry
                .get(name, version)
                .map_err(|e| AgentError::Config(e.to_string()))?;
            definitions.push(ToolDefinition::from_spec(&tool.spec));
        }
        Ok(Self::new_run(run_id, workspace_id, config, definitions))
    }

    /// A run with the given tool definitions (replay uses the recorded ones,
    /// so it needs no tool version to be registered here).
    pub fn new_run(
        run_id: &str,
        workspace_id: &str,
        config: AgentConfig,
        definitions: Vec<ToolDefinition>,
    ) -> AgentRun {
        let messages = vec![Message::User {
            text: config.user_prompt.clone(),
        }];
        let outputs = AgentOutputs {
            traces_url: config.traces_url.clone(),
            ..AgentOutputs::default()
        };
        AgentRun {
            run_id: run_id.to_string(),
            workspace_id: workspace_id.to_string(),
            config,
            status: RunStatus::Running,
            messages,
            outputs,
            usage: Usage::default(),
            ids: CallIdAllocator::new(),
            pending: Vec::new(),
            used_tokens: BTreeSet::new(),
            tool_definitions: definitions,
            exchanges: Vec::new(),
            envelopes: Vec::new(),
            approvals: Vec::new(),
            call_map: Vec::new(),
            recorded_messages: 0,
            started_at: now_rfc3339(),
            finished_at: None,
        }
    }

    fn registered(&self, tool_ref: &str) -> Option<Arc<RegisteredTool>> {
        let (name, version) = split_tool_ref(tool_ref)?;
        self.registry.get(name, version).ok()
    }

    /// Records an operator's decision on one pending write.
    pub fn decide(
        &self,
        run: &mut AgentRun,
        token: &str,
        decision: Decision,
        sink: &dyn EventSink,
    ) -> Result<(), AgentError> {
        if run.used_tokens.contains(token) {
            return Err(ApprovalError::AlreadyUsed.into());
        }
        let run_id = run.run_id.clone();
        let pending = run
            .pending
            .iter_mut()
            .find(|p| p.approval.as_ref().is_some_and(|a| a.token == token) && p.decision.is_none())
            .ok_or(ApprovalError::UnknownToken)?;
        let tool_ref = pending.tool_ref.clone().unwrap_or_default();
        let expected = approval::approval_token(
            &self.approval_key,
            &run_id,
            &pending.call_id,
            &tool_ref,
            &pending.provider_call.arguments,
        );
        if expected != token {
            return Err(ApprovalError::Tampered.into());
        }
        if let Decision::Deny { reason } = &decision {
            if reason.trim().is_empty() {
                return Err(ApprovalError::ReasonRequired.into());
            }
        }
        pending.decision = Some(decision.clone());
        let call_id = pending.call_id.clone();
        run.used_tokens.insert(token.to_string());
        run.approvals.push(ApprovalRecord {
            call_id: call_id.clone(),
            token: token.to_string(),
            decision: decision.clone(),
            decided_at: now_rfc3339(),
        });
        sink.emit(AgentEvent::ApprovalDecided { call_id, decision });
        Ok(())
    }

    /// Runs until the run finishes or waits for approvals.
    pub async fn drive(
        &self,
        run: &mut AgentRun,
        model: &dyn ChatModel,
        tools: &dyn ToolRunner,
        sink: &dyn EventSink,
    ) -> Result<Step, AgentError> {
        match self.drive_inner(run, model, tools, sink).await {
            Ok(step) => Ok(step),
            Err(err) => {
                run.status = RunStatus::Failed {
                    message: err.to_string(),
                };
                sink.emit(AgentEvent::Failed {
                    message: err.to_string(),
                });
                Err(err)
            }
        }
    }

    async fn drive_inner(
        &self,
        run: &mut AgentRun,
        model: &dyn ChatModel,
        tools: &dyn ToolRunner,
        sink: &dyn EventSink,
    ) -> Result<Step, AgentError> {
        // One span per iteration, open from its model call to the end of its
        // tool calls (a resumed run's first batch runs under the node's span).
        let mut iteration_span = tracing::Span::current();
        loop {
            if let RunStatus::Finished = run.status {
                return Ok(Step::Finished);
            }
            if !run.pending.is_empty() {
                let waiting: Vec<ApprovalRequest> = run
                    .pending
                    .iter()
                    .filter(|p| p.decision.is_none())
                    .filter_map(|p| p.approval.clone())
                    .collect();
                if !waiting.is_empty() {
                    run.status = RunStatus::WaitingForApproval;
                    return Ok(Step::Suspended(waiting));
                }
                run.status = RunStatus::Running;
                self.execute_pending(run, tools, sink)
                    .instrument(iteration_span.clone())
                    .await?;
                continue;
            }
            let policy = &run.config.policy;
            let limit = if run.usage.iterations >= policy.max_iterations {
                Some("max_iterations")
            } else if run.usage.tool_calls >= policy.max_tool_calls {
                Some("max_tool_calls")
            } else if policy.max_budget.is_some_and(|b| run.usage.cost >= b) {
                Some("max_budget")
            } else {
                None
            };
            if let Some(limit) = limit {
                return self.forced_final(run, model, sink, limit).await;
            }
            run.usage.iterations += 1;
            // An iteration whose model and tools answer at once never
            // waits, so nothing else would run on this worker until the
            // whole loop ends: on one worker the run's events would pile
            // up unwritten, and its live timeline show nothing, until then.
            // Taking a unit of tokio's cooperative budget yields once the
            // task has used its share, as a channel or a socket would
            // (issue #30: a whole 400-call `glassbox run` on one core, 5%
            // less CPU and 11% fewer page faults, medians of 61 paired runs;
            // yielding on every iteration instead costs 15% more: a commit
            // per call).
            tokio::task::consume_budget().await;
            let iteration = run.usage.iterations;
            sink.emit(AgentEvent::IterationStarted { iteration });
            iteration_span = tracing::info_span!("iteration", iteration);
            let response = self
                .call_model(run, model, true, sink)
                .instrument(iteration_span.clone())
                .await?;
            sink.emit(AgentEvent::ModelCalled {
                iteration,
                stop_reason: response.stop_reason,
                usage: response.usage,
                cost: response.cost,
                tool_calls: response.tool_calls.len(),
                tools_offered: true,
            });
            run.messages.push(Message::Assistant {
                text: response.text.clone(),
                tool_calls: response.tool_calls.clone(),
            });
            if response.tool_calls.is_empty() {
                return Ok(self.finish(run, response.text, sink));
            }
            self.plan_batch(run, &response.tool_calls, tools, sink);
        }
    }

    /// Calls the model with the conversation so far and records the exchange.
    async fn call_model(
        &self,
        run: &mut AgentRun,
        model: &dyn ChatModel,
        with_tools: bool,
        sink: &dyn EventSink,
    ) -> Result<ChatResponse, AgentError> {
        // The conversation moves into the request and back: cloning the whole
        // history on every call would make a long run quadratic.
        let request = ChatRequest {
            system: std::mem::take(&mut run.config.system_prompt),
            messages: std::mem::take(&mut run.messages),
            tools: if with_tools {
                std::mem::take(&mut run.tool_definitions)
            } else {
                Vec::new()
            },
            params: run.config.params.clone(),
        };
        let t_start = now_rfc3339();
        let span = tracing::info_span!(
            "model_call",
            provider = run.config.provider.kind(),
            tools_offered = with_tools,
            tool_calls = tracing::field::Empty,
            error = tracing::field::Empty,
        );
        let iteration = run.usage.iterations;
        let on_text = move |text: &str| {
            sink.emit(AgentEvent::TextDelta {
                iteration,
                text: text.to_string(),
            })
        };
        let result = model
            .complete_streaming(&request, &on_text)
            .instrument(span.clone())
            .await;
        match &result {
            Ok(r) => span.record("tool_calls", r.tool_calls.len()),
            Err(e) => span.record("error", tracing::field::display(e)),
        };
        run.config.system_prompt = request.system;
        run.messages = request.messages;
        if with_tools {
            run.tool_definitions = request.tools;
        }
        let response = result.map_err(|e| match e {
            ModelError::ReplayDiverged { step, message } => {
                AgentError::ReplayDiverged { step, message }
            }
            other => AgentError::Model(other),
        })?;
        run.usage.cost += response.cost;
        run.outputs.usage.add(&response);
        // Each message is stored once: the assistant message that follows an
        // exchange is that exchange's response, so the next exchange's delta
        // starts after it (replay rebuilds it from the response).
        let from = if run.exchanges.is_empty() {
            run.recorded_messages
        } else {
            run.recorded_messages + 1
        };
        run.exchanges.push(RecordedExchange {
            step: run.exchanges.len() + 1,
            appended: run.messages[from.min(run.messages.len())..].to_vec(),
            tools_offered: with_tools,
            response: response.clone(),
            t_start,
            t_end: now_rfc3339(),
        });
        run.recorded_messages = run.messages.len();
        Ok(response)
    }

    /// Allocates call ids and decides which calls need approval (none that
    /// `tools` answers from a recording: nothing runs).
    fn plan_batch(
        &self,
        run: &mut AgentRun,
        calls: &[ProviderToolCall],
        tools: &dyn ToolRunner,
        sink: &dyn EventSink,
    ) {
        let names = tool_name_map(run);
        let policy = run.config.call_policy();
        for (i, call) in calls.iter().enumerate() {
            let tool_ref = names.get(&call.name).cloned();
            let (name, version) = tool_ref
                .as_deref()
                .and_then(split_tool_ref)
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .unwrap_or_else(|| (call.name.clone(), "unknown".to_string()));
            let call_id = run.ids.next(&name, &version, &call.arguments);
            run.call_map.push(CallMapping {
                provider_call_id: call.id.clone(),
                call_id: call_id.clone(),
            });
            let mut approval = None;
            let registered = tool_ref
                .as_deref()
                .filter(|_| !tools.recorded(&call_id))
                .and_then(|r| self.registered(r));
            if let Some(tool) = registered {
                let usage = Usage {
                    tool_calls: run.usage.tool_calls + i as u32,
                    ..run.usage
                };
                let side_effects = tool.side_effects_for(&call.arguments);
                let cleared = check_tool_call(&policy, &tool.spec, side_effects, &usage);
                if matches!(cleared, Ok(Clearance::NeedsApproval { .. }))
                    && !tools.refuses(&call_id, side_effects)
                {
                    let reference = tool.spec.key();
                    let token = approval::approval_token(
                        &self.approval_key,
                        &run.run_id,
                        &call_id,
                        &reference,
                        &call.arguments,
                    );
                    let request = ApprovalRequest {
                        call_id: call_id.clone(),
                        tool: reference,
                        args_summary: approval::summarize_args(&call.arguments),
                        effect_description: tool
                            .spec
                            .metadata
                            .effect_description
                            .clone()
                            .unwrap_or_else(|| {
                                format!("{} changes external state.", tool.spec.name)
                            }),
                        token,
                    };
                    sink.emit(AgentEvent::ApprovalRequested {
                        request: request.clone(),
                    });
                    approval = Some(request);
                }
            }
            run.pending.push(PendingCall {
                provider_call: call.clone(),
                call_id,
                tool_ref,
                approval,
                decision: None,
            });
        }
    }

    /// Runs the decided batch and feeds the results back as messages.
    async fn execute_pending(
        &self,
        run: &mut AgentRun,
        tools: &dyn ToolRunner,
        sink: &dyn EventSink,
    ) -> Result<(), AgentError> {
        let pending = std::mem::take(&mut run.pending);
        let mut items = Vec::with_capacity(pending.len());
        let mut approved = HashSet::new();
        for p in &pending {
            let input = p.provider_call.arguments.clone();
            let item = match (&p.tool_ref, &p.decision) {
                (None, _) => BatchItem::Fail {
                    call_id: p.call_id.clone(),
                    name: p.provider_call.name.clone(),
                    version: "unknown".into(),
                    input,
                    error: ToolError::policy_denied(format!(
                        "the model called `{}`, which is not an enabled tool",
                        p.provider_call.name
                    ))
                    .with_details(json!({ "reason": "NOT_ENABLED" })),
                },
                (Some(r), Some(Decision::Deny { reason })) => refused_by_human(
                    p,
                    r,
                    input,
                    format!("a human denied this call: {reason}"),
                    "APPROVAL_DENIED",
                    reason,
                ),
                (Some(r), Some(Decision::Revise { note })) => refused_by_human(
                    p,
                    r,
                    input,
                    format!("a human asked for a revision: {note}"),
                    "REVISION_REQUESTED",
                    note,
                ),
                (Some(r), decision) => {
                    if matches!(decision, Some(Decision::Approve)) {
                        approved.insert(p.call_id.clone());
                    }
                    match self.registered(r) {
                        Some(tool) => BatchItem::Execute(ToolCall {
                            call_id: p.call_id.clone(),
                            tool,
                            input,
                        }),
                        None => BatchItem::Fail {
                            call_id: p.call_id.clone(),
                            name: p.provider_call.name.clone(),
                            version: "unknown".into(),
                            input,
                            error: ToolError::policy_denied(format!("tool {r} is not registered")),
                        },
                    }
                }
            };
            let tool = p
                .tool_ref
                .clone()
                .unwrap_or_else(|| format!("{}@unknown", p.provider_call.name));
            sink.emit(AgentEvent::ToolCallStarted {
                call_id: p.call_id.clone(),
                tool,
                input: p.provider_call.arguments.clone(),
            });
            items.push(item);
        }
        let executed_count = items
            .iter()
            .filter(|i| matches!(i, BatchItem::Execute(_)))
            .count() as u32;
        let envelopes = tools.run_batch(run, items, approved).await?;
        if envelopes.len() != pending.len() {
            return Err(AgentError::Config(format!(
                "tool runner returned {} envelopes for {} calls",
                envelopes.len(),
                pending.len()
            )));
        }
        run.usage.tool_calls += executed_count;
        for (p, envelope) in pending.iter().zip(envelopes) {
            let (content, is_error) = match &envelope.error {
                Some(err) => (json!({ "error": err }).into(), true),
                None => (envelope.output.clone(), false),
            };
            run.messages.push(Message::ToolResult {
                provider_call_id: p.provider_call.id.clone(),
                name: p.provider_call.name.clone(),
                content,
                is_error,
            });
            sink.emit(AgentEvent::ToolCallFinished {
                envelope: envelope.clone(),
            });
            run.envelopes.push(envelope.clone());
            run.outputs.record(envelope);
        }
        Ok(())
    }

    async fn forced_final(
        &self,
        run: &mut AgentRun,
        model: &dyn ChatModel,
        sink: &dyn EventSink,
        limit: &str,
    ) -> Result<Step, AgentError> {
        sink.emit(AgentEvent::LimitReached {
            limit: limit.to_string(),
        });
        run.outputs.limit_reached = Some(limit.to_string());
        run.messages.push(Message::User {
            text: format!("The {limit} limit was reached, so no more tools can be called. Give your final answer now from what you know."),
        });
        let response = self.call_model(run, model, false, sink).await?;
        sink.emit(AgentEvent::ModelCalled {
            iteration: run.usage.iterations,
            stop_reason: response.stop_reason,
            usage: response.usage,
            cost: response.cost,
            tool_calls: 0,
            tools_offered: false,
        });
        run.messages.push(Message::Assistant {
            text: response.text.clone(),
            tool_calls: Vec::new(),
        });
        let text = if response.text.trim().is_empty() {
            format!("Stopped: the {limit} limit was reached before an answer was found.")
        } else {
            response.text
        };
        Ok(self.finish(run, text, sink))
    }

    fn finish(&self, run: &mut AgentRun, response: String, sink: &dyn EventSink) -> Step {
        run.outputs.response = response;
        run.status = RunStatus::Finished;
        run.finished_at = Some(now_rfc3339());
        sink.emit(AgentEvent::Finished {
            outputs: run.outputs.clone(),
        });
        Step::Finished
    }
}
