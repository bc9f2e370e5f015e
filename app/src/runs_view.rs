//! The runs pages' model, free of the DOM: the filter the runs list
//! offers, durations in words, and one row per node of a run's record
//! (runs themselves are `node_runtime::wire`'s `RunItem` and `RunDetail`).

use std::collections::BTreeMap;

use crate::trace_view::human_ms;
use node_runtime::envelope::ToolEnvelope;
use node_runtime::wire::{NodeRun, RunStatus};
use serde_json::Value;

pub use node_runtime::wire::{RunDetail, RunItem};

/// The run statuses the list filter offers, in lifecycle order.
pub const STATUSES: [&str; 6] = [
    "queued",
    "running",
    "waiting_for_approval",
    "succeeded",
    "failed",
    "cancelled",
];

/// A run id as lists show it: its last eight characters (the random end of
/// a UUIDv7, distinct where the time-ordered start is not).
pub fn short_id(id: &str) -> &str {
    let start = id.char_indices().rev().nth(7).map_or(0, |(i, _)| i);
    &id[start..]
}

/// The graph a run ran, when its record holds one.
pub fn run_graph(run: &RunDetail) -> Option<node_runtime::graph::Workflow> {
    node_runtime::graph::Workflow::from_value(&run.workflow).ok()
}

/// Whether a run in `status` may still change.
pub fn is_active(status: RunStatus) -> bool {
    !status.is_final()
}

/// A run's duration in words ([`human_ms`]); "running" while it has not
/// ended.
pub fn format_duration(ms: Option<f64>) -> String {
    ms.map_or_else(|| "running".into(), human_ms)
}

/// A timestamp as the list shows it: date and time to the second, without
/// the zone and fraction ("2026-11-22 10:04:05").
pub fn short_time(rfc3339: &str) -> String {
    let trimmed = rfc3339.split('.').next().unwrap_or(rfc3339);
    let trimmed = trimmed.trim_end_matches('Z');
    trimmed.replacen('T', " ", 1).chars().take(19).collect()
}

/// One node of a run's record, as the run page lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeResult {
    pub node_id: String,
    pub status: String,
    pub error: Option<String>,
    /// The node's outputs, pretty-printed.
    pub outputs: String,
    /// Agent nodes: the number of tool calls in the loop.
    pub tool_calls: Option<usize>,
}

/// The nodes of a run's record (none while it runs), in the order they
/// finished.
pub fn node_results(nodes: Option<&BTreeMap<String, NodeRun>>) -> Vec<NodeResult> {
    let Some(map) = nodes else {
        return Vec::new();
    };
    let mut rows: Vec<(String, NodeResult)> = map
        .iter()
        .map(|(id, n)| {
            let tool_calls = n
                .outputs
                .get("tool_order")
                .and_then(Value::as_array)
                .map(Vec::len);
            (
                n.finished_at.clone(),
                NodeResult {
                    node_id: id.clone(),
                    status: n.status.as_str().to_string(),
                    error: n.error.clone(),
                    outputs: serde_json::to_string_pretty(&n.outputs).unwrap_or_default(),
                    tool_calls,
                },
            )
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.node_id.cmp(&b.1.node_id)));
    rows.into_iter().map(|(_, r)| r).collect()
}

/// The query string of the runs list for a status and workflow filter.
pub fn list_query(status: &str, workflow_id: &str, cursor: Option<&str>) -> String {
    let mut parts = vec!["limit=200".to_string()];
    if !status.is_empty() {
        parts.push(format!("status={status}"));
    }
    if !workflow_id.is_empty() {
        parts.push(format!("workflow_id={workflow_id}"));
    }
    if let Some(c) = cursor {
        parts.push(format!("cursor={c}"));
    }
    format!("?{}", parts.join("&"))
}

/// One call as a replay comparison shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSummary {
    pub call_id: String,
    /// `name@version`.
    pub tool: String,
    /// The error code, when the call failed.
    pub error_code: Option<String>,
    /// The result (or error message) on one line.
    pub preview: String,
}

impl CallSummary {
    pub fn of(e: &ToolEnvelope) -> Self {
        let (error_code, preview) = match &e.error {
            Some(err) => (
                serde_json::to_value(err.code)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string)),
                crate::live::preview(&Value::String(err.message.clone())),
            ),
            None => (None, crate::live::preview(&e.output)),
        };
        Self {
            call_id: e.call_id.clone(),
            tool: e.tool_ref(),
            error_code,
            preview,
        }
    }
}

/// One line of a recorded and a replayed timeline set side by side.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparedCall {
    pub recorded: Option<CallSummary>,
    pub replayed: Option<CallSummary>,
    /// The two calls are the same call with the same result (timings do
    /// not count: a replay returns the recorded envelopes).
    pub same: bool,
}

/// Whether two envelopes are the same call with the same outcome.
fn same_call(a: &ToolEnvelope, b: &ToolEnvelope) -> bool {
    a.call_id == b.call_id
        && a.name == b.name
        && a.version == b.version
        && a.input == b.input
        && a.output == b.output
        && a.error == b.error
        && a.truncated == b.truncated
}

/// The recorded and replayed calls line by line, and the index of the
/// first line where they differ (a call missing on one side counts).
pub fn compare_timelines(
    recorded: &[ToolEnvelope],
    replayed: &[ToolEnvelope],
) -> (Vec<ComparedCall>, Option<usize>) {
    let lines: Vec<ComparedCall> = (0..recorded.len().max(replayed.len()))
        .map(|i| {
            let (a, b) = (recorded.get(i), replayed.get(i));
            ComparedCall {
                recorded: a.map(CallSummary::of),
                replayed: b.map(CallSummary::of),
                same: matches!((a, b), (Some(a), Some(b)) if same_call(a, b)),
            }
        })
        .collect();
    let first = lines.iter().position(|l| !l.same);
    (lines, first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn short_ids_keep_the_last_eight_characters() {
        assert_eq!(short_id("01a205e2-83f1-73d6-a522-9f3550de072b"), "50de072b");
        assert_eq!(short_id("abc"), "abc");
    }

    #[test]
    fn durations_read_as_words_or_running() {
        assert_eq!(format_duration(None), "running");
        assert_eq!(format_duration(Some(412.6)), "412.6 ms");
        assert_eq!(format_duration(Some(2440.0)), "2.44 s");
    }

    #[test]
    fn times_drop_zone_and_fraction() {
        assert_eq!(
            short_time("2026-11-22T10:04:05.123456Z"),
            "2026-11-22 10:04:05"
        );
        assert_eq!(short_time("2026-11-22T10:04:05Z"), "2026-11-22 10:04:05");
    }

    #[test]
    fn node_results_follow_finish_order_and_count_tool_calls() {
        let node = |id: &str, status: &str, error: Value, outputs: Value, at: &str| {
            json!({"node_id": id, "status": status, "error": error, "inputs": {}, "outputs": outputs,
                   "started_at": at, "finished_at": at})
        };
        let nodes: BTreeMap<String, NodeRun> = serde_json::from_value(json!({
            "out": node("out", "done", Value::Null, json!({"answer": "hi"}), "2026-01-01T00:00:02Z"),
            "agent": node("agent", "done", Value::Null, json!({"response": "hi", "tool_order": ["a", "b"]}), "2026-01-01T00:00:01Z"),
            "bad": node("bad", "failed", json!("boom"), json!({}), "2026-01-01T00:00:03Z")
        }))
        .expect("node records");
        let rows = node_results(Some(&nodes));
        let ids: Vec<&str> = rows.iter().map(|r| r.node_id.as_str()).collect();
        assert_eq!(ids, ["agent", "out", "bad"]);
        assert_eq!(rows[0].tool_calls, Some(2));
        assert_eq!(rows[1].tool_calls, None);
        assert_eq!(rows[2].error.as_deref(), Some("boom"));
        assert!(rows[1].outputs.contains("\"answer\": \"hi\""));
        assert!(node_results(None).is_empty());
    }

    #[test]
    fn list_query_carries_only_set_filters() {
        assert_eq!(list_query("", "", None), "?limit=200");
        assert_eq!(
            list_query("failed", "w1", Some("abc")),
            "?limit=200&status=failed&workflow_id=w1&cursor=abc"
        );
    }

    fn call(id: &str, output: Value) -> ToolEnvelope {
        serde_json::from_value(json!({
            "call_id": id, "name": "calculator", "version": "1.0.0", "input": {"expression": "1+1"},
            "output": output, "error": null, "t_start": "2026-01-01T00:00:00.000Z",
            "t_end": "2026-01-01T00:00:00.010Z", "cached": false, "truncated": false, "attachments": []
        }))
        .expect("envelope")
    }

    #[test]
    fn identical_timelines_have_no_divergence_whatever_the_timings() {
        let a = vec![call("a", json!(2)), call("b", json!(3))];
        let mut b = a.clone();
        b[1].t_end = "2026-01-01T00:00:09.000Z".into();
        let (lines, first) = compare_timelines(&a, &b);
        assert_eq!(lines.len(), 2);
        assert!(lines.iter().all(|l| l.same));
        assert_eq!(first, None);
        assert_eq!(
            lines[0].recorded.as_ref().map(|c| c.tool.as_str()),
            Some("calculator@1.0.0")
        );
        assert_eq!(
            lines[1].replayed.as_ref().map(|c| c.preview.as_str()),
            Some("3")
        );
    }

    #[test]
    fn the_first_differing_or_missing_call_is_the_divergence() {
        let a = vec![
            call("a", json!(2)),
            call("b", json!(3)),
            call("c", json!(4)),
        ];
        let changed = vec![call("a", json!(2)), call("b", json!(5))];
        let (lines, first) = compare_timelines(&a, &changed);
        assert_eq!(first, Some(1));
        assert_eq!(lines.len(), 3);
        assert!(lines[2].replayed.is_none() && !lines[2].same);
        let (_, first) = compare_timelines(&a, &a[..1]);
        assert_eq!(
            first,
            Some(1),
            "a replay that stopped early diverges where it stopped"
        );
        let (_, first) = compare_timelines(&[], &a[..1]);
        assert_eq!(first, Some(0));
    }

    #[test]
    fn run_detail_decodes_the_servers_view() {
        let d: RunDetail = serde_json::from_value(json!({
            "id": "r", "workflow_id": "w", "workflow_revision": 2, "kind": "run", "replay_of": null,
            "status": "running", "trigger": "api", "inputs": {}, "outputs": null, "error": null,
            "created_at": "t", "finished_at": null, "trace_id": "x", "duration_ms": null,
            "nodes": null, "agent_outputs": {}
        }))
        .expect("decodes");
        assert!(d.is_active());
    }
}
