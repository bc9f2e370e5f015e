//! Where the agent loop's events go: the [`EventSink`] trait and the sinks
//! tests and the CLI use. The events themselves, a closed enum in the past
//! tense, are plain data in `crate::agent_event` (re-exported here); the
//! server persists and streams them.

use std::sync::Mutex;

pub use crate::agent_event::AgentEvent;

/// Where events go.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: AgentEvent);
}

/// Drops every event.
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&self, _event: AgentEvent) {}
}

/// Keeps every event (tests, the CLI).
#[derive(Default)]
pub struct VecSink(Mutex<Vec<AgentEvent>>);

impl VecSink {
    pub fn events(&self) -> Vec<AgentEvent> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Event type names in order, e.g. `["IterationStarted", "ModelCalled", ...]`.
    pub fn names(&self) -> Vec<String> {
        self.events()
            .iter()
            .map(|e| {
                serde_json::to_value(e)
                    .ok()
                    .and_then(|v| v["type"].as_str().map(str::to_string))
                    .unwrap_or_default()
            })
            .collect()
    }
}

impl EventSink for VecSink {
    fn emit(&self, event: AgentEvent) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(event);
    }
}
