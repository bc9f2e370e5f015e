//! The graph engine: runs a workflow.
//!
//! Nodes run as soon as every upstream node has ended, so independent
//! branches run concurrently. A node's inputs are its incoming edges'
//! source values. A Branch node emits only the handle it takes; whatever
//! hangs off the other handle is skipped (an Output node still runs and
//! records null for what was skipped). A failed node fails everything
//! downstream of it while unrelated branches finish. Cancelling the run
//! stops in-flight nodes and skips the rest.
//!
//! Tool errors are data, not failures: a Tool node whose call fails ends
//! `done` with the error on its `error` handle, so a Branch can route on the
//! code. A node fails when it cannot produce its outputs at all (a template
//! that does not render, a pin with `on_missing: error`, an agent whose
//! model is unreachable).
//!
//! A host that must survive restarts passes [`Checkpoints`]: every ended
//! node's record and every Agent node's state at an approval suspension are
//! handed over (and awaited) as they happen. [`resume_workflow`] continues
//! an interrupted run from them: ended nodes are not run again, a suspended
//! agent continues from its saved state, and a node that was in flight
//! starts over. Approved writes go through a
//! [`WriteJournal`](crate::agent::WriteJournal), so a write runs at most
//! once.
//!
//! [`replay_workflow`] re-runs every Agent node from its replay bundle and
//! every other node from the recorded run, with no model or tool call, and
//! must reproduce the workflow's outputs exactly.
//!
//! A fork ([`EngineServices::fork`]) runs live but answers every call its
//! origin recorded from the recording (`fork`).
//!
//! Layout: `host` (what the host supplies), `record` (records and events),
//! `events` (where events go), `eval` (pure node evaluation), `nodes`
//! (running one node live), `schedule` (the live run), `replay`, `fork`.

mod eval;
mod events;
mod fork;
mod host;
mod keys;
mod nodes;
mod replay;
mod schedule;

pub use super::record::{NodeRecord, NodeStatus, RunOutcome, WorkflowEvent, WorkflowRun};
pub use eval::render;
pub use events::{VecWorkflowSink, WorkflowSink};
pub use fork::{ForkAnswer, ForkRecording};
pub use host::{
    ApprovalGate, ApproveAll, Checkpoints, EngineServices, MemoryPinHistory, ModelFactory,
    PinHistory, PlainModels, ProviderModels, ResumeState,
};
pub use replay::replay_workflow;
pub use schedule::{resume_workflow, run_workflow, EngineError};
