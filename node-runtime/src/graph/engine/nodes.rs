//! Runs one node of a live run: Tool nodes through the executor (asking
//! the approval gate first when the call writes), Agent nodes through the
//! agent loop (suspending at approvals and checkpointing there), the rest
//! through [`super::eval`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::eval::{agent_handles, compute, render_bounded, tool_input, tool_outputs, AgentHandles};
use super::events::{AgentSink, WorkflowSink};
use super::fork::ForkTools;
use super::host::EngineServices;
use crate::agent::approval::{ApprovalRequest, Decision};
use crate::agent::replay::ReplayBundle;
use crate::agent::{
    outcome_unknown_envelope, AgentEvent, AgentRun, EventSink, JournalEntry, LiveTools, Step,
    ToolRunner,
};
use crate::agent_config::AgentConfig;
use crate::call_id::CallIdAllocator;
use crate::envelope::ToolEnvelope;
use crate::executor::{CallScope, ToolCall};
use crate::graph::record::WorkflowEvent;
use crate::graph::{AgentNodeConfig, Node, NodeKind, ToolNodeConfig, Workflow};
use crate::payload::Payload;
use crate::policy::{Policy, Usage};
use crate::tool_spec::{split_tool_ref, SideEffects};

/// What a node's work produced.
pub(super) struct NodeResult {
    pub(super) outputs: BTreeMap<String, Value>,
    pub(super) bundle: Option<ReplayBundle>,
    pub(super) envelope: Option<ToolEnvelope>,
    pub(super) pin_fallbacks: BTreeMap<String, Value>,
}

impl NodeResult {
    fn outputs(outputs: BTreeMap<String, Value>) -> Self {
        Self {
            outputs,
            bundle: None,
            envelope: None,
            pin_fallbacks: BTreeMap::new(),
        }
    }
}

pub(super) struct Runner<'a> {
    pub(super) services: &'a EngineServices,
    pub(super) workflow: &'a Workflow,
    pub(super) run_id: &'a str,
    pub(super) sink: &'a dyn WorkflowSink,
    pub(super) cancel: CancellationToken,
    /// Suspended agents of a resumed run, taken by their node when it runs.
    pub(super) resumed_agents: Mutex<HashMap<String, AgentRun>>,
    /// The providers' API keys, resolved at run start (`keys.rs`).
    pub(super) keys: std::collections::BTreeMap<String, crate::secrets::SecretValue>,
}

impl Runner<'_> {
    pub(super) async fn run_node(
        &self,
        node: &Node,
        inputs: &BTreeMap<String, Value>,
        workflow_inputs: &Map<String, Value>,
    ) -> Result<NodeResult, String> {
        match &node.kind {
            NodeKind::Tool(c) => self.run_tool_node(node, c, inputs).await,
            NodeKind::Agent(c) => self.run_agent_node(node, c, inputs).await,
            _ => compute(node, inputs, workflow_inputs)
                .await
                .map(NodeResult::outputs),
        }
    }

    async fn run_tool_node(
        &self,
        node: &Node,
        config: &ToolNodeConfig,
        inputs: &BTreeMap<String, Value>,
    ) -> Result<NodeResult, String> {
        let (name, version) = split_tool_ref(&config.tool)
            .ok_or_else(|| format!("`{}` is not a tool ref", config.tool))?;
        let tool = self
            .services
            .registry
            .get(name, version)
            .map_err(|e| e.to_string())?;
        let input = Payload::from(tool_input(config, inputs));
        let call_id = CallIdAllocator::new().next(name, version, &input);
        // A fork answers a recorded call from the recording and refuses a
        // new read it may not make, before any approval or execution.
        let forked = self.services.fork.as_ref().and_then(|fork| {
            let call = ToolCall {
                call_id: call_id.clone(),
                tool: tool.clone(),
                input: input.clone(),
            };
            fork.decide(&node.id, &call).envelope()
        });
        if let Some(envelope) = forked {
            for event in [
                AgentEvent::ToolCallStarted {
                    call_id,
                    tool: config.tool.clone(),
                    input,
                },
                AgentEvent::ToolCallFinished {
                    envelope: envelope.clone(),
                },
            ] {
                self.sink.emit(WorkflowEvent::Agent {
                    node_id: node.id.clone(),
                    event: Box::new(event),
                });
            }
            return Ok(NodeResult {
                outputs: tool_outputs(config, &envelope),
                bundle: None,
                envelope: Some(envelope),
                pin_fallbacks: BTreeMap::new(),
            });
        }
        let mut approved = HashSet::new();
        if tool.side_effects_for(&input) == SideEffects::Writes {
            let token = crate::agent::approval::approval_token(
                &self.services.agents.approval_key,
                self.run_id,
                &call_id,
                &config.tool,
                &input,
            );
            let request = ApprovalRequest {
                call_id: call_id.clone(),
                tool: config.tool.clone(),
                args_summary: crate::agent::approval::summarize_args(&input),
                effect_description: tool
                    .spec
                    .metadata
                    .effect_description
                    .clone()
                    .unwrap_or_else(|| format!("{} changes external state.", tool.spec.name)),
                token: token.clone(),
            };
            self.sink.emit(WorkflowEvent::Agent {
                node_id: node.id.clone(),
                event: Box::new(AgentEvent::ApprovalRequested {
                    request: request.clone(),
                }),
            });
            let decisions = self
                .services
                .approvals
                .decide(&node.id, vec![request])
                .await;
            if matches!(
                decisions.iter().find(|(t, _)| *t == token),
                Some((_, Decision::Approve))
            ) {
                approved.insert(call_id.clone());
            }
        }
        let scope = Arc::new(CallScope {
            owner: self.services.owner.clone(),
            policy: Policy {
                enabled_tools: vec![config.tool.clone()],
                ..Policy::default()
            },
            approved,
            cancel: self.cancel.child_token(),
            env: self.services.env.clone(),
            progress: None,
        });
        self.sink.emit(WorkflowEvent::Agent {
            node_id: node.id.clone(),
            event: Box::new(AgentEvent::ToolCallStarted {
                call_id: call_id.clone(),
                tool: config.tool.clone(),
                input: input.clone(),
            }),
        });
        let call = ToolCall {
            call_id,
            tool,
            input,
        };
        // An approved write goes through the write journal, as an Agent
        // node's does: its intent is stored before it runs and its result
        // after, so a restart never runs it twice (an intent without a
        // result is `outcome_unknown`).
        let journal = self
            .services
            .journal
            .as_ref()
            .filter(|_| scope.approved.contains(&call.call_id));
        let envelope = match journal {
            Some(journal) => {
                let key = format!("{}/{}", self.run_id, node.id);
                match journal.begin(&key, &call).await {
                    JournalEntry::Fresh => {
                        let envelope = self
                            .services
                            .executor
                            .execute(scope, call, Usage::default())
                            .await;
                        journal.finish(&key, &envelope).await;
                        envelope
                    }
                    JournalEntry::Done(envelope) => *envelope,
                    JournalEntry::Unknown => outcome_unknown_envelope(&call),
                }
            }
            None => {
                self.services
                    .executor
                    .execute(scope, call, Usage::default())
                    .await
            }
        };
        self.sink.emit(WorkflowEvent::Agent {
            node_id: node.id.clone(),
            event: Box::new(AgentEvent::ToolCallFinished {
                envelope: envelope.clone(),
            }),
        });
        Ok(NodeResult {
            outputs: tool_outputs(config, &envelope),
            bundle: None,
            envelope: Some(envelope),
            pin_fallbacks: BTreeMap::new(),
        })
    }

    async fn run_agent_node(
        &self,
        node: &Node,
        config: &AgentNodeConfig,
        inputs: &BTreeMap<String, Value>,
    ) -> Result<NodeResult, String> {
        let agent_config = AgentConfig {
            system_prompt: config.system_prompt.clone(),
            user_prompt: render_bounded(&config.prompt, inputs).await?,
            tools: config.enabled_tools(),
            policy: config.policy.clone(),
            provider: config.provider.clone(),
            params: config.params.clone(),
            traces_url: self
                .services
                .traces_url
                .as_ref()
                .map(|t| t.replace("{run_id}", self.run_id)),
        };
        let model = self
            .services
            .models
            .model(
                &config.provider,
                config
                    .provider
                    .api_key_secret()
                    .and_then(|name| self.keys.get(name).cloned()),
            )
            .map_err(|e| e.to_string())?;
        let runtime = &self.services.agents;
        let resumed = self
            .resumed_agents
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&node.id);
        let mut run = match resumed {
            Some(run) => run,
            None => runtime
                .start(
                    &format!("{}/{}", self.run_id, node.id),
                    &self.services.owner.workspace_id,
                    agent_config,
                )
                .map_err(|e| e.to_string())?,
        };
        // Calls report progress from their own tasks; it reaches the node's
        // events here, beside the loop.
        let (progress_tx, mut progress_rx) = tokio::sync::mpsc::unbounded_channel();
        let live = LiveTools {
            executor: self.services.executor.clone(),
            owner: self.services.owner.clone(),
            env: self.services.env.clone(),
            cancel: self.cancel.child_token(),
            journal: self.services.journal.clone(),
            progress: Some(progress_tx),
        };
        let tools: Box<dyn ToolRunner + '_> = match &self.services.fork {
            Some(fork) => Box::new(ForkTools {
                inner: live,
                node_id: &node.id,
                fork,
            }),
            None => Box::new(live),
        };
        let sink = AgentSink {
            node_id: node.id.clone(),
            inner: self.sink,
        };
        let forward = async {
            while let Some(p) = progress_rx.recv().await {
                sink.emit(AgentEvent::ToolProgress {
                    call_id: p.call_id,
                    progress: p.progress,
                    total: p.total,
                    message: p.message,
                });
            }
        };
        let drive = async {
            loop {
                match runtime
                    .drive(&mut run, model.as_ref(), tools.as_ref(), &sink)
                    .await
                    .map_err(|e| e.to_string())?
                {
                    Step::Finished => break Ok::<_, String>(()),
                    Step::Suspended(requests) => {
                        if let Some(checkpoints) = &self.services.checkpoints {
                            checkpoints.agent_suspended(&node.id, &run).await;
                        }
                        for (token, decision) in
                            self.services.approvals.decide(&node.id, requests).await
                        {
                            runtime
                                .decide(&mut run, &token, decision, &sink)
                                .map_err(|e| e.to_string())?;
                        }
                    }
                }
            }
        };
        // `tools` holds the sender until the loop is done, so `forward`
        // cannot end first.
        tokio::select! {
            done = drive => done?,
            () = forward => return Err("the progress channel closed early".into()),
        };
        let history = &self.services.pin_history;
        let wf = &self.workflow.id;
        let AgentHandles {
            handles,
            fallbacks: pin_fallbacks,
            resolved,
        } = agent_handles(config, &run.outputs, &|pin| {
            history.last_resolved(wf, &node.id, pin)
        })?;
        for (pin, value) in resolved {
            history.record(wf, &node.id, &pin, &value);
        }
        let tool_schemas = model.tool_schemas(&run.tool_definitions);
        let bundle = ReplayBundle::of_finished(run, tool_schemas).ok();
        Ok(NodeResult {
            outputs: handles,
            bundle,
            envelope: None,
            pin_fallbacks,
        })
    }
}
