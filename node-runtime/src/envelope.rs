//! The `ToolEnvelope`: the receipt of one tool call (seed 003 §3.2), and
//! `AgentOutputs`, the Agent Node's fixed output contract (§3.1).
//!
//! Every key is always present in JSON: absent values are null, false or []
//! (but a fork's `replayed`, written only when true).
//! Fields may be added, never renamed or dropped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::ToolError;
use crate::payload::Payload;

/// What an attachment holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    Blob,
    Image,
    Table,
}

/// A rich attachment of a call: a blob holding an oversized payload, an
/// image or a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Attachment {
    pub kind: AttachmentKind,
    pub url: String,
    #[serde(default)]
    pub content_type: Option<String>,
    #[serde(default)]
    pub bytes: Option<u64>,
}

/// The receipt of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolEnvelope {
    /// Deterministic id; see [`crate::call_id`].
    pub call_id: String,
    pub name: String,
    pub version: String,
    /// The arguments as sent to the tool.
    #[cfg_attr(feature = "openapi", schema(value_type = Value))]
    pub input: Payload,
    /// The tool's result; null when the call failed.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Value))]
    pub output: Payload,
    /// The failure; null when the call succeeded.
    #[serde(default)]
    pub error: Option<ToolError>,
    /// RFC 3339 UTC with milliseconds, e.g. `2026-11-22T10:00:00.123Z`.
    pub t_start: String,
    pub t_end: String,
    #[serde(default)]
    pub cached: bool,
    #[serde(default)]
    pub truncated: bool,
    #[serde(default)]
    pub attachments: Vec<Attachment>,
    /// True when a fork answered this call from its origin's recording:
    /// the tool did not run (issue 33). Written only when true, so
    /// recordings made before it read, hash and compare as they were.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
}

impl ToolEnvelope {
    /// The envelope of a failed call: no output, the error, no attachments.
    pub fn failed(
        call_id: String,
        name: String,
        version: String,
        input: impl Into<Payload>,
        error: ToolError,
        t_start: String,
        t_end: String,
    ) -> Self {
        Self {
            call_id,
            name,
            version,
            input: input.into(),
            output: Payload::default(),
            error: Some(error),
            t_start,
            t_end,
            cached: false,
            truncated: false,
            attachments: Vec::new(),
            replayed: false,
        }
    }

    /// The envelope as a JSON value: what `serde_json::to_value` gives,
    /// built directly (its input and output copied as values, not written
    /// out and read back: a long string of a payload goes through its text
    /// there; issue #30).
    pub fn to_value(&self) -> serde_json::Value {
        use serde_json::Value;
        let mut map = serde_json::Map::new();
        map.insert("call_id".into(), Value::String(self.call_id.clone()));
        map.insert("name".into(), Value::String(self.name.clone()));
        map.insert("version".into(), Value::String(self.version.clone()));
        map.insert("input".into(), self.input.value().clone());
        map.insert("output".into(), self.output.value().clone());
        map.insert(
            "error".into(),
            serde_json::to_value(&self.error).unwrap_or(Value::Null),
        );
        map.insert("t_start".into(), Value::String(self.t_start.clone()));
        map.insert("t_end".into(), Value::String(self.t_end.clone()));
        map.insert("cached".into(), Value::Bool(self.cached));
        map.insert("truncated".into(), Value::Bool(self.truncated));
        map.insert(
            "attachments".into(),
            serde_json::to_value(&self.attachments).unwrap_or(Value::Null),
        );
        if self.replayed {
            map.insert("replayed".into(), Value::Bool(true));
        }
        Value::Object(map)
    }

    /// `name@version`.
    pub fn tool_ref(&self) -> String {
        crate::tool_spec::tool_key(&self.name, &self.version)
    }

    pub fn is_success(&self) -> bool {
        self.error.is_none()
    }
}

/// The Agent Node's output contract. No configuration changes this shape.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentOutputs {
    /// The final text answer.
    pub response: String,
    /// Every executed call, keyed by `call_id`.
    pub tools_by_id: BTreeMap<String, ToolEnvelope>,
    /// `call_id`s in execution order.
    pub tool_order: Vec<String>,
    /// The envelope of the last *successful* call, or null.
    #[serde(default)]
    pub last_tool: Option<ToolEnvelope>,
    /// Link to this run's trace, or null.
    #[serde(default)]
    pub traces_url: Option<String>,
    /// Which limit forced the final answer (`max_iterations`,
    /// `max_tool_calls`, `max_budget`), or null. An additive field.
    #[serde(default)]
    pub limit_reached: Option<String>,
    /// What the node's model calls consumed: tokens and cost. An additive
    /// field.
    #[serde(default)]
    pub usage: crate::chat::ModelUsage,
}

impl AgentOutputs {
    /// Adds an envelope at the end of the order and keeps `last_tool` the
    /// last successful call.
    pub fn record(&mut self, envelope: ToolEnvelope) {
        if envelope.is_success() {
            self.last_tool = Some(envelope.clone());
        }
        self.tool_order.push(envelope.call_id.clone());
        self.tools_by_id.insert(envelope.call_id.clone(), envelope);
    }

    /// The calls in `tool_order`.
    pub fn calls(&self) -> impl DoubleEndedIterator<Item = &ToolEnvelope> {
        self.tool_order
            .iter()
            .filter_map(|id| self.tools_by_id.get(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ErrorCode, ToolError};

    fn envelope(id: &str, error: Option<ToolError>) -> ToolEnvelope {
        ToolEnvelope {
            call_id: id.into(),
            name: "calculator".into(),
            version: "1.0.0".into(),
            input: serde_json::json!({"expression": "1+1"}).into(),
            output: if error.is_some() {
                serde_json::Value::Null.into()
            } else {
                serde_json::json!(2).into()
            },
            error,
            t_start: "2026-11-22T10:00:00.000Z".into(),
            t_end: "2026-11-22T10:00:00.001Z".into(),
            cached: false,
            truncated: false,
            attachments: vec![],
            replayed: false,
        }
    }

    #[test]
    fn empty_outputs_have_every_key() {
        let json = serde_json::to_value(AgentOutputs::default()).expect("ser");
        assert_eq!(
            json,
            serde_json::json!({"response": "", "tools_by_id": {}, "tool_order": [], "last_tool": null, "traces_url": null, "limit_reached": null,
                "usage": {"model_calls": 0, "input_tokens": 0, "output_tokens": 0, "cost": 0.0}})
        );
    }

    #[test]
    fn envelope_has_every_key() {
        let json = serde_json::to_value(envelope("a", None)).expect("ser");
        let keys: Vec<&str> = json
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        for key in [
            "call_id",
            "name",
            "version",
            "input",
            "output",
            "error",
            "t_start",
            "t_end",
            "cached",
            "truncated",
            "attachments",
        ] {
            assert!(keys.contains(&key), "missing {key}");
        }
    }

    #[test]
    fn replayed_is_written_only_when_true_and_reads_back() {
        let plain = envelope("a", None);
        let json = serde_json::to_value(&plain).expect("ser");
        assert!(json.get("replayed").is_none(), "{json}");
        let replayed = ToolEnvelope {
            replayed: true,
            ..plain
        };
        let json = serde_json::to_value(&replayed).expect("ser");
        assert_eq!(json["replayed"], serde_json::json!(true));
        let back: ToolEnvelope = serde_json::from_value(json).expect("de");
        assert_eq!(back, replayed);
    }

    #[test]
    fn last_tool_is_last_success() {
        let mut out = AgentOutputs::default();
        out.record(envelope("a", None));
        out.record(envelope(
            "b",
            Some(ToolError::new(ErrorCode::Timeout, "slow")),
        ));
        assert_eq!(out.tool_order, vec!["a", "b"]);
        assert_eq!(
            out.last_tool.as_ref().map(|e| e.call_id.as_str()),
            Some("a")
        );
    }
}
