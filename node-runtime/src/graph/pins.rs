//! Pinned handles (seed 003 §4.2): a named output of an Agent node that
//! carries one tool call's result. A pin never disappears: when its tool is
//! disabled or was not called, `on_missing` decides what it outputs.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::envelope::{AgentOutputs, ToolEnvelope};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PinStrategy {
    /// The last call to the tool (its output; null if that call failed).
    #[default]
    Latest,
    /// The first successful call.
    FirstSuccess,
    /// One specific call.
    ByCallId,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnMissing {
    /// Output null (the default, safest).
    #[default]
    Null,
    /// Fail the node, naming the pin.
    Error,
    /// The value from the latest earlier run of this workflow in which the
    /// pin resolved.
    StaleLastSuccess,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinSelector {
    /// The tool name to listen for.
    pub tool: String,
    #[serde(default)]
    pub strategy: PinStrategy,
    #[serde(default)]
    pub call_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedHandle {
    /// The handle's name on the node, e.g. `weather_report`.
    pub name: String,
    pub selector: PinSelector,
    #[serde(default)]
    pub on_missing: OnMissing,
    /// Optional JSON Pointer into the selected output.
    #[serde(default)]
    pub path: Option<String>,
}

/// A resolved pin.
#[derive(Debug, Clone, PartialEq)]
pub enum PinValue {
    /// The selected call's value (null when that call failed).
    Found(Value),
    /// Nothing selected; `on_missing` applied.
    Missing(Value),
}

impl PinValue {
    pub fn value(&self) -> &Value {
        match self {
            Self::Found(v) | Self::Missing(v) => v,
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("pinned handle `{pin}` found no {tool} call ({strategy:?}) and its on_missing is error")]
pub struct PinError {
    pub pin: String,
    pub tool: String,
    pub strategy: PinStrategy,
}

/// Whether the call never ran because its tool was not enabled (the model
/// asked for it anyway). Such a call is not a call "to that tool" for a pin:
/// a disabled tool leaves its pins missing, so `on_missing` applies.
fn never_ran_because_disabled(envelope: &ToolEnvelope) -> bool {
    envelope.error.as_ref().is_some_and(|e| {
        e.code == crate::error::ErrorCode::PolicyDenied
            && e.details.get("reason").and_then(Value::as_str) == Some("NOT_ENABLED")
    })
}

/// Picks the envelope a pin selects, if any.
pub fn select<'a>(pin: &PinnedHandle, outputs: &'a AgentOutputs) -> Option<&'a ToolEnvelope> {
    let calls = || {
        outputs
            .tool_order
            .iter()
            .filter_map(|id| outputs.tools_by_id.get(id))
            .filter(|e| e.name == pin.selector.tool && !never_ran_because_disabled(e))
    };
    match pin.selector.strategy {
        PinStrategy::Latest => calls().next_back(),
        PinStrategy::FirstSuccess => calls().find(|e| e.is_success()),
        PinStrategy::ByCallId => pin
            .selector
            .call_id
            .as_ref()
            .and_then(|id| outputs.tools_by_id.get(id))
            .filter(|e| e.name == pin.selector.tool),
    }
}

/// Resolves a pin against an agent's outputs. `stale` is the value from the
/// latest earlier run in which the pin resolved (asked of the run store only
/// for `stale_last_success`).
pub fn resolve(
    pin: &PinnedHandle,
    outputs: &AgentOutputs,
    stale: impl FnOnce() -> Option<Value>,
) -> Result<PinValue, PinError> {
    let found = select(pin, outputs).and_then(|envelope| {
        if !envelope.is_success() {
            return Some(Value::Null);
        }
        match &pin.path {
            None => Some(envelope.output.clone()),
            Some(p) if p.is_empty() => Some(envelope.output.clone()),
            Some(p) => envelope.output.pointer(p).cloned(),
        }
    });
    match found {
        Some(v) => Ok(PinValue::Found(v)),
        None => match pin.on_missing {
            OnMissing::Null => Ok(PinValue::Missing(Value::Null)),
            OnMissing::StaleLastSuccess => Ok(PinValue::Missing(stale().unwrap_or(Value::Null))),
            OnMissing::Error => Err(PinError {
                pin: pin.name.clone(),
                tool: pin.selector.tool.clone(),
                strategy: pin.selector.strategy,
            }),
        },
    }
}
