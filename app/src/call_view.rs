//! The invocation drawer's model, free of the DOM: what is known of one
//! tool call, put together from its envelope (live timeline) or its
//! invocation record (Tools page), and the helpers its JSON viewer needs.

use serde_json::Value;

use crate::api::{Invocation, InvocationSummary};
use node_runtime::envelope::ToolEnvelope;

/// Everything the drawer shows about one call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallFacts {
    /// `name@version`.
    pub tool: String,
    pub call_id: String,
    /// The record's lifecycle status (`pending` ... `completed`, `failed`,
    /// `outcome_unknown`), or the live row's state while no record is known.
    pub status: String,
    pub approval_status: Option<String>,
    pub side_effects: Option<String>,
    pub cost: Option<f64>,
    /// A denial's reason or a revision's note.
    pub reason: Option<String>,
    /// (run id, node id) when known.
    pub run: Option<(String, String)>,
    pub input: Value,
    pub output: Value,
    /// The structured error when the call failed.
    pub error: Option<Value>,
    pub latency_ms: Option<f64>,
    pub cached: bool,
    pub truncated: bool,
}

/// JSON text as a value: null when absent, a string when not JSON.
fn parse(text: &Option<String>) -> Value {
    match text.as_deref() {
        None | Some("") => Value::Null,
        Some(t) => serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_string())),
    }
}

impl CallFacts {
    /// From a finished call's envelope and the row's state.
    pub fn from_envelope(e: &ToolEnvelope, state: &str) -> Self {
        Self {
            tool: e.tool_ref(),
            call_id: e.call_id.clone(),
            status: state.to_string(),
            input: e.input.clone().into(),
            output: e.output.clone().into(),
            error: e.error.as_ref().map(|err| serde_json::json!(err)),
            latency_ms: crate::live::latency_ms(&e.t_start, &e.t_end),
            cached: e.cached,
            truncated: e.truncated,
            ..Self::default()
        }
    }

    /// From an invocation record (seed 001's fields).
    pub fn from_invocation(whole: &Invocation) -> Self {
        let i = &whole.record;
        let output = parse(&whole.output);
        let error = Some(parse(&i.error)).filter(|e| !e.is_null());
        let latency_ms = match (&i.started_at, &i.completed_at) {
            (Some(a), Some(b)) => crate::live::latency_ms(a, b),
            _ => None,
        };
        Self {
            tool: node_runtime::tool_spec::tool_key(&i.tool_name, &i.tool_version),
            call_id: i.call_id.clone(),
            status: i.status.to_string(),
            approval_status: i.approval_status.map(|a| a.to_string()),
            cost: Some(i.cost),
            reason: i.reason.clone(),
            run: Some((i.run_id.clone(), i.node_id.clone())),
            input: parse(&Some(whole.input.clone())),
            truncated: truncated_blob(&output).is_some(),
            output,
            error,
            latency_ms,
            ..Self::default()
        }
    }

    /// The record's facts laid over the live ones: its lifecycle status,
    /// approval, cost and reason are the durable truth.
    pub fn with_record(mut self, i: &InvocationSummary) -> Self {
        self.status = i.status.to_string();
        self.approval_status = i.approval_status.map(|a| a.to_string());
        self.cost = Some(i.cost);
        self.reason = i.reason.clone();
        self.run = Some((i.run_id.clone(), i.node_id.clone()));
        self
    }
}

/// The blob holding a truncated output whole: its hash and size, read
/// from the preview the output cap leaves in `output`.
pub fn truncated_blob(output: &Value) -> Option<(String, Option<u64>)> {
    if output.get("truncated") != Some(&Value::Bool(true)) {
        return None;
    }
    let hash = output.get("blob")?.as_str()?.to_string();
    Some((hash, output.get("bytes").and_then(Value::as_u64)))
}

/// A collapsed object or array in words: `{3 keys}`, `[1 item]`.
pub fn summary(value: &Value) -> String {
    match value {
        Value::Object(m) => format!("{{{} {}}}", m.len(), plural(m.len(), "key")),
        Value::Array(a) => format!("[{} {}]", a.len(), plural(a.len(), "item")),
        other => other.to_string(),
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

/// The CSS class of a scalar by its JSON type.
pub fn scalar_class(value: &Value) -> &'static str {
    match value {
        Value::Null => "json-null",
        Value::Bool(_) => "json-bool",
        Value::Number(_) => "json-number",
        Value::String(_) => "json-string",
        _ => "json-tree",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn invocation() -> Invocation {
        serde_json::from_value(json!({
            "id": "i", "workspace_id": "w", "run_id": "r", "node_id": "agent", "call_id": "c", "tool_name": "write_file",
            "tool_version": "1.0.0", "status": "completed", "approval_required": 1,
            "approval_status": "approved", "decided_by": "u", "reason": null,
            "input": "{\"path\":\"a.txt\"}", "output": "{\"truncated\":true,\"bytes\":9000,\"blob\":\"abc\",\"preview\":\"x\"}",
            "error": null, "cost": 0.5, "created_at": "2026-01-01T00:00:00Z",
            "started_at": "2026-01-01T00:00:00.000Z", "completed_at": "2026-01-01T00:00:00.250Z",
            "trace_id": null
        }))
        .expect("invocation")
    }

    #[test]
    fn a_record_gives_status_approval_cost_and_the_blob() {
        let f = CallFacts::from_invocation(&invocation());
        assert_eq!(f.tool, "write_file@1.0.0");
        assert_eq!(f.approval_status.as_deref(), Some("approved"));
        assert_eq!(f.cost, Some(0.5));
        assert_eq!(f.input, json!({"path": "a.txt"}));
        assert_eq!(f.error, None);
        assert!(f.truncated);
        assert_eq!(f.latency_ms, Some(250.0));
        assert_eq!(truncated_blob(&f.output), Some(("abc".into(), Some(9000))));
    }

    #[test]
    fn the_record_overrides_the_live_state() {
        let e: ToolEnvelope = serde_json::from_value(json!({
            "call_id": "c", "name": "write_file", "version": "1.0.0", "input": {"path": "a.txt"},
            "output": {"ok": true}, "error": null, "t_start": "2026-01-01T00:00:00.000Z",
            "t_end": "2026-01-01T00:00:00.100Z", "cached": true, "truncated": false, "attachments": []
        }))
        .expect("envelope");
        let live = CallFacts::from_envelope(&e, "done");
        assert_eq!((live.status.as_str(), live.cached), ("done", true));
        let merged = live.with_record(&invocation().record);
        assert_eq!(merged.status, "completed");
        assert_eq!(merged.approval_status.as_deref(), Some("approved"));
        assert_eq!(
            merged.output,
            json!({"ok": true}),
            "the envelope's output stays"
        );
        assert_eq!(merged.run, Some(("r".into(), "agent".into())));
    }

    #[test]
    fn summaries_and_blobs() {
        assert_eq!(summary(&json!({"a": 1, "b": 2})), "{2 keys}");
        assert_eq!(summary(&json!([1])), "[1 item]");
        assert_eq!(summary(&json!("s")), "\"s\"");
        assert_eq!(
            truncated_blob(&json!({"truncated": false, "blob": "x"})),
            None
        );
        assert_eq!(truncated_blob(&json!("text")), None);
        assert_eq!(scalar_class(&json!(1)), "json-number");
    }
}
