//! How the loop's tool calls run: a [`ToolRunner`] takes a batch and
//! returns one envelope per call, in order. [`LiveTools`] runs them through
//! the executor, with approved writes recorded in a [`WriteJournal`] so each
//! runs at most once; the replay runner (`replay`) only returns recorded
//! envelopes.

use std::collections::HashSet;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::state::{AgentError, AgentRun};
use crate::envelope::ToolEnvelope;
use crate::error::ToolError;
use crate::executor::{error_envelope, CallScope, Executor, ToolCall};
use crate::secrets::SecretOwner;
use crate::tool::ToolEnv;

/// A batch entry: a call for the executor, or one that fails without running.
pub enum BatchItem {
    Execute(ToolCall),
    Fail {
        call_id: String,
        name: String,
        version: String,
        input: crate::payload::Payload,
        error: ToolError,
    },
}

/// Runs a batch of calls and returns one envelope per item, in order.
pub trait ToolRunner: Send + Sync {
    fn run_batch<'a>(
        &'a self,
        run: &'a AgentRun,
        items: Vec<BatchItem>,
        approved: HashSet<String>,
    ) -> BoxFuture<'a, Result<Vec<ToolEnvelope>, AgentError>>;

    /// Whether this runner answers `call_id` from a recording without
    /// running anything (a fork's recorded calls): such a call asks no
    /// approval, since no side effect can happen.
    fn recorded(&self, _call_id: &str) -> bool {
        false
    }

    /// Whether this runner refuses a new call of these side effects
    /// without running anything (a suite's fork refuses new writes,
    /// `SUITE_NO_WRITES`): such a call asks no approval either.
    fn refuses(&self, _call_id: &str, _side_effects: crate::tool_spec::SideEffects) -> bool {
        false
    }
}

/// The live runner: the executor, in the run's workspace.
pub struct LiveTools {
    pub executor: Arc<Executor>,
    pub owner: SecretOwner,
    pub env: Arc<ToolEnv>,
    pub cancel: CancellationToken,
    /// Where approved writes record their intent and result, so a write
    /// runs at most once per approval even across a crash (None: no host
    /// durability, e.g. tests and the CLI's in-memory runs).
    pub journal: Option<Arc<dyn WriteJournal>>,
    /// Where calls report progress (`AgentEvent::ToolProgress`), if
    /// anyone watches.
    pub progress: Option<tokio::sync::mpsc::UnboundedSender<crate::tool::context::ToolProgress>>,
}

/// What the journal knows about an approved write before it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum JournalEntry {
    /// Never started: the intent is now recorded durably; run it.
    Fresh,
    /// It ran and its result was recorded: use that, do not run it again.
    Done(Box<ToolEnvelope>),
    /// An intent without a result: a crash came between the two. Whether
    /// the write happened is unknown; it is never retried.
    Unknown,
}

/// The durable record of approved writes (exactly-once): the intent is
/// stored before the call, the result after.
pub trait WriteJournal: Send + Sync {
    /// Looks the call up and, when it is new, records the intent before
    /// returning (durably: the host's strongest commit).
    fn begin<'a>(&'a self, agent_run: &'a str, call: &'a ToolCall) -> BoxFuture<'a, JournalEntry>;
    /// Records the call's result.
    fn finish<'a>(&'a self, agent_run: &'a str, envelope: &'a ToolEnvelope) -> BoxFuture<'a, ()>;
}

/// The envelope of an approved write whose outcome is unknown: the model
/// and the operator learn it was interrupted and not retried.
pub fn outcome_unknown_envelope(call: &ToolCall) -> ToolEnvelope {
    error_envelope(
        call.call_id.clone(),
        call.tool.spec.name.clone(),
        call.tool.spec.version.to_string(),
        call.input.clone(),
        ToolError::new(
            crate::error::ErrorCode::Unknown,
            "outcome unknown: the server stopped while this approved write was running; it was not retried, and an operator must reconcile it",
        )
        .with_details(json!({ "outcome": "unknown" })),
    )
}

impl ToolRunner for LiveTools {
    fn run_batch<'a>(
        &'a self,
        run: &'a AgentRun,
        items: Vec<BatchItem>,
        approved: HashSet<String>,
    ) -> BoxFuture<'a, Result<Vec<ToolEnvelope>, AgentError>> {
        Box::pin(async move {
            let policy = run.config.call_policy();
            let scope = Arc::new(CallScope {
                owner: self.owner.clone(),
                policy,
                approved,
                cancel: self.cancel.clone(),
                env: self.env.clone(),
                progress: self.progress.clone(),
            });
            let mut slots: Vec<Option<ToolEnvelope>> = Vec::with_capacity(items.len());
            let mut calls = Vec::new();
            let mut positions = Vec::new();
            let mut journaled = Vec::new();
            for (i, item) in items.into_iter().enumerate() {
                match item {
                    // An approved write: intent first, and never twice.
                    BatchItem::Execute(call)
                        if scope.approved.contains(&call.call_id) && self.journal.is_some() =>
                    {
                        let journal = self.journal.as_ref().expect("checked above");
                        match journal.begin(&run.run_id, &call).await {
                            JournalEntry::Fresh => {
                                journaled.push(call.call_id.clone());
                                calls.push(call);
                                positions.push(i);
                                slots.push(None);
                            }
                            JournalEntry::Done(envelope) => slots.push(Some(*envelope)),
                            JournalEntry::Unknown => {
                                slots.push(Some(outcome_unknown_envelope(&call)))
                            }
                        }
                    }
                    BatchItem::Execute(call) => {
                        calls.push(call);
                        positions.push(i);
                        slots.push(None);
                    }
                    BatchItem::Fail {
                        call_id,
                        name,
                        version,
                        input,
                        error,
                    } => {
                        slots.push(Some(error_envelope(call_id, name, version, input, error)));
                    }
                }
            }
            let executed = self.executor.execute_batch(scope, calls, run.usage).await;
            for (pos, envelope) in positions.into_iter().zip(executed) {
                if let Some(journal) = &self.journal {
                    if journaled.contains(&envelope.call_id) {
                        journal.finish(&run.run_id, &envelope).await;
                    }
                }
                slots[pos] = Some(envelope);
            }
            Ok(slots.into_iter().flatten().collect())
        })
    }
}
