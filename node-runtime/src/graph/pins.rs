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
            .calls()
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

/// Checks a pin's `path`: a JSON Pointer (RFC 6901), empty (the whole
/// output) or `/`-separated keys and indexes, where `~` is written `~0` and
/// `/` inside a key `~1`. A path that fails this could never select anything.
pub fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Ok(());
    }
    if !path.starts_with('/') {
        return Err(format!(
            "`{path}` is not a JSON Pointer: it starts with `/`, like /items/0/name"
        ));
    }
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(format!(
                "`{path}` is not a JSON Pointer: `~` is written ~0 and a `/` inside a key ~1"
            ));
        }
    }
    Ok(())
}

/// Checks a pin's handle name: letters, digits and `_`, not starting with a
/// digit, at most 64 characters (so templates can use it as a variable).
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a handle name: use letters, digits and _, not starting with a digit (at most 64)"
        ))
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
            None => Some(envelope.output.value().clone()),
            Some(p) if p.is_empty() => Some(envelope.output.value().clone()),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_json_pointers() {
        for ok in ["", "/", "/items/0/name", "/a~1b", "/m~0n"] {
            assert_eq!(check_path(ok), Ok(()), "{ok}");
        }
        for bad in ["items", "/a~", "/a~2"] {
            let err = check_path(bad).expect_err(bad);
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn names_are_identifiers() {
        for ok in ["weather", "calc_result_2", "_x"] {
            assert_eq!(check_name(ok), Ok(()), "{ok}");
        }
        for bad in ["", "2x", "has space", "dash-ed", &"a".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
