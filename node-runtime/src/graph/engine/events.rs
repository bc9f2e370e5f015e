//! Where a workflow run's events go: the [`WorkflowSink`] the host
//! supplies, and the adapter that tags an Agent node's loop events with
//! its node.

use std::sync::Mutex;

use crate::agent::{AgentEvent, EventSink};
use crate::graph::record::WorkflowEvent;

pub trait WorkflowSink: Send + Sync {
    fn emit(&self, event: WorkflowEvent);
}

/// Keeps every event (tests, CLI).
#[derive(Default)]
pub struct VecWorkflowSink(pub Mutex<Vec<WorkflowEvent>>);

impl WorkflowSink for VecWorkflowSink {
    fn emit(&self, event: WorkflowEvent) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(event);
    }
}

/// Passes an agent's events on, tagged with its node.
pub(super) struct AgentSink<'a> {
    pub(super) node_id: String,
    pub(super) inner: &'a dyn WorkflowSink,
}

impl EventSink for AgentSink<'_> {
    fn emit(&self, event: AgentEvent) {
        self.inner.emit(WorkflowEvent::Agent {
            node_id: self.node_id.clone(),
            event: Box::new(event),
        });
    }
}
