//! Forks (issue 33): a recorded run run again with changes.
//!
//! The fork runs live for its model (or scripted), but a tool call whose
//! deterministic call id the origin recorded is answered from the
//! recording: the envelope comes back as recorded with `replayed: true`,
//! the tool does not run and no approval is asked, since nothing can
//! happen. The fork's policy still holds for it (a tool switched off, a
//! lower limit). A call the origin never made is new: a pure one
//! (`side_effects: none`) runs; a new read runs only when the fork allows
//! live reads (otherwise it fails with POLICY_DENIED, reason
//! `LIVE_READS_OFF`); a new write goes through the normal approval gate and
//! runs only once approved, unless the fork refuses writes (a suite's:
//! `SUITE_NO_WRITES`).
//!
//! Agent nodes get this through [`ForkTools`], a [`ToolRunner`] layered over
//! the live one; Tool nodes ask [`ForkRecording::decide`] (as `ForkTools`
//! does) before their own approval and executor.

use std::collections::{HashMap, HashSet};

use futures::future::BoxFuture;
use serde_json::json;

use crate::agent::replay::RecordedCalls;
use crate::agent::{AgentError, AgentRun, BatchItem, LiveTools, ToolRunner};
use crate::envelope::ToolEnvelope;
use crate::error::{ErrorCode, ToolError};
use crate::executor::{error_envelope, ToolCall};
use crate::graph::record::WorkflowRun;
use crate::policy::{check_tool_call, Usage};
use crate::tool_spec::SideEffects;

/// What a fork answers from: its origin's recorded calls, by node and call
/// id, and whether new reads may run live.
#[derive(Debug, Clone, Default)]
pub struct ForkRecording {
    calls: HashMap<String, RecordedCalls>,
    /// New read calls run live (default: they fail, POLICY_DENIED).
    pub live_reads: bool,
    /// New write calls are refused instead of waiting for an approval (a
    /// suite's forks: a suite never sends a write, `SUITE_NO_WRITES`).
    pub refuse_writes: bool,
}

impl ForkRecording {
    /// The calls `origin` recorded: every Agent node's bundle envelopes and
    /// every Tool node's envelope. A node that ended without a bundle (its
    /// loop failed) recorded nothing to answer from. A refusal is no
    /// answer: a call the policy or a human refused (POLICY_DENIED: not
    /// enabled, a limit, `LIVE_READS_OFF`, denied, revision asked) did not
    /// run, so a fork under other rules decides it again. A real tool
    /// error and a write of unknown outcome are answers and are kept.
    pub fn from_run(origin: &WorkflowRun, live_reads: bool) -> Self {
        let calls = origin
            .nodes
            .iter()
            .map(|(node_id, record)| {
                let envelopes = record
                    .bundle
                    .iter()
                    .flat_map(|b| b.envelopes.iter())
                    .chain(record.envelope.iter());
                let answers = envelopes.filter(|e| !refused(e)).cloned().collect();
                (node_id.clone(), answers)
            })
            .collect();
        Self {
            calls,
            live_reads,
            refuse_writes: false,
        }
    }

    /// The same recording with new writes refused (a suite's fork).
    pub fn refusing_writes(self) -> Self {
        Self {
            refuse_writes: true,
            ..self
        }
    }

    /// How many calls the recording holds.
    pub fn len(&self) -> usize {
        self.calls.values().map(RecordedCalls::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether node `node_id`'s call `call_id` is recorded.
    pub fn has(&self, node_id: &str, call_id: &str) -> bool {
        self.calls.get(node_id).is_some_and(|c| c.contains(call_id))
    }

    /// What this fork does with node `node_id`'s `call`: answer it from the
    /// recording (its envelope marked `replayed`), refuse it (a new read
    /// while live reads are off), or let it run.
    pub fn decide(&self, node_id: &str, call: &ToolCall) -> ForkAnswer {
        if let Some(recorded) = self.calls.get(node_id).and_then(|c| c.get(&call.call_id)) {
            return ForkAnswer::Recorded(ToolEnvelope {
                replayed: true,
                ..recorded.clone()
            });
        }
        let refusal = match call.tool.side_effects_for(&call.input) {
            SideEffects::Reads if !self.live_reads => Some((
                "LIVE_READS_OFF",
                "is a new read this fork's origin did not record, and the fork does not allow live reads (`live_reads`)",
            )),
            SideEffects::Writes if self.refuse_writes => Some((
                "SUITE_NO_WRITES",
                "is a new write this fork's origin did not record, and a suite never sends a write",
            )),
            _ => None,
        };
        if let Some((reason, why)) = refusal {
            let error = ToolError::policy_denied(format!(
                "call {} of {} {why}",
                call.call_id,
                call.tool.spec.key()
            ))
            .with_details(json!({ "reason": reason, "call_id": call.call_id }));
            return ForkAnswer::Refused(error_envelope(
                call.call_id.clone(),
                call.tool.spec.name.clone(),
                call.tool.spec.version.clone(),
                call.input.clone(),
                error,
            ));
        }
        ForkAnswer::New
    }
}

/// What a fork does with a call ([`ForkRecording::decide`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ForkAnswer {
    /// The origin recorded it: its envelope, `replayed`; nothing runs.
    Recorded(ToolEnvelope),
    /// A new call this fork may not make: its POLICY_DENIED envelope.
    Refused(ToolEnvelope),
    /// A new call that runs (a write still needs its approval).
    New,
}

impl ForkAnswer {
    /// The envelope the fork answers with without running the call, if any.
    pub fn envelope(self) -> Option<ToolEnvelope> {
        match self {
            Self::Recorded(envelope) | Self::Refused(envelope) => Some(envelope),
            Self::New => None,
        }
    }
}

/// Whether `envelope` is a refusal: the call was stopped by the policy
/// guard or by a human before it ran.
fn refused(envelope: &ToolEnvelope) -> bool {
    envelope
        .error
        .as_ref()
        .is_some_and(|e| e.code == ErrorCode::PolicyDenied)
}

/// An Agent node's tool runner in a fork: recorded calls answered from the
/// recording, new ones refused or handed to the live runner.
pub(super) struct ForkTools<'a> {
    pub(super) inner: LiveTools,
    pub(super) node_id: &'a str,
    pub(super) fork: &'a ForkRecording,
}

impl ToolRunner for ForkTools<'_> {
    fn recorded(&self, call_id: &str) -> bool {
        self.fork.has(self.node_id, call_id)
    }

    fn refuses(&self, call_id: &str, side_effects: SideEffects) -> bool {
        self.fork.refuse_writes
            && side_effects == SideEffects::Writes
            && !self.fork.has(self.node_id, call_id)
    }

    fn run_batch<'a>(
        &'a self,
        run: &'a AgentRun,
        items: Vec<BatchItem>,
        approved: HashSet<String>,
    ) -> BoxFuture<'a, Result<Vec<ToolEnvelope>, AgentError>> {
        Box::pin(async move {
            let policy = run.config.call_policy();
            let mut slots: Vec<Option<ToolEnvelope>> = Vec::with_capacity(items.len());
            let mut live = Vec::new();
            let mut positions = Vec::new();
            for (i, item) in items.into_iter().enumerate() {
                let BatchItem::Execute(call) = item else {
                    live.push(item);
                    positions.push(i);
                    slots.push(None);
                    continue;
                };
                let failed = |error: ToolError| {
                    error_envelope(
                        call.call_id.clone(),
                        call.tool.spec.name.clone(),
                        call.tool.spec.version.clone(),
                        call.input.clone(),
                        error,
                    )
                };
                // The fork's own policy holds for every call, each counted
                // after all calls before it in the batch, answered from the
                // recording or not (the executor counts only the calls it
                // is handed, so a new call is checked here too).
                let usage = Usage {
                    tool_calls: run.usage.tool_calls + i as u32,
                    ..run.usage
                };
                let side_effects = call.tool.side_effects_for(&call.input);
                let cleared = check_tool_call(&policy, &call.tool.spec, side_effects, &usage);
                match (self.fork.decide(self.node_id, &call), cleared) {
                    // Nothing runs.
                    (ForkAnswer::Recorded(envelope), Ok(_)) => slots.push(Some(envelope)),
                    (ForkAnswer::Refused(envelope), _) => slots.push(Some(envelope)),
                    (ForkAnswer::Recorded(_) | ForkAnswer::New, Err(error)) => {
                        slots.push(Some(failed(error)))
                    }
                    (ForkAnswer::New, Ok(_)) => {
                        live.push(BatchItem::Execute(call));
                        positions.push(i);
                        slots.push(None);
                    }
                }
            }
            if !live.is_empty() {
                let executed = self.inner.run_batch(run, live, approved).await?;
                for (pos, envelope) in positions.into_iter().zip(executed) {
                    slots[pos] = Some(envelope);
                }
            }
            Ok(slots.into_iter().flatten().collect())
        })
    }
}
