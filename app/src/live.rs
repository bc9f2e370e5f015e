//! A run watched live: the run's events (as `GET /runs/{id}/events` streams
//! them) folded into each node's state and each Agent node's tool timeline.
//! Events carry their sequence number; one seen twice (a reconnect that
//! overlaps) is ignored, so the view never shows a duplicate. Events are
//! decoded into node-runtime's `WorkflowEvent` and folded by an exhaustive
//! match: a new event kind fails to compile here until it is handled.

use std::collections::BTreeMap;

use node_runtime::agent_event::{AgentEvent, Decision};
use node_runtime::chat::ModelUsage;
use node_runtime::envelope::{AgentOutputs, ToolEnvelope};
use node_runtime::graph::pins::PinnedHandle;
use node_runtime::graph::record::{NodeStatus, RunOutcome, WorkflowEvent};
use serde::Deserialize;
use serde_json::Value;

/// One row of an Agent node's tool timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRow {
    pub call_id: String,
    /// `name@version` once the call ended; the name before.
    pub tool: String,
    /// `running`, `waiting for approval`, `done`, `failed` or `outcome
    /// unknown` (an approved write interrupted by a crash).
    pub state: String,
    pub latency_ms: Option<f64>,
    pub cached: bool,
    pub truncated: bool,
    pub error_code: Option<String>,
    /// The result (or error message) on one line, shortened.
    pub preview: String,
    pub envelope: Option<ToolEnvelope>,
    /// A write waiting for a human: the approval token and what it does.
    pub approval: Option<Approval>,
}

/// A running call's progress in words: `3 of 5`, `40%` or `3`, then the
/// tool's message.
pub fn progress_text(progress: f64, total: Option<f64>, message: Option<&str>) -> String {
    let amount = match total {
        Some(t)
            if t > 0.0
                && (t - t.round()).abs() < f64::EPSILON
                && (progress - progress.round()).abs() < f64::EPSILON =>
        {
            format!("{progress} of {t}")
        }
        Some(t) if t > 0.0 => format!("{:.0}%", progress / t * 100.0),
        _ => format!("{progress}"),
    };
    match message {
        Some(m) if !m.is_empty() => format!("{amount}: {m}"),
        _ => amount,
    }
}

/// A pending write as the timeline shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    pub token: String,
    pub effect: String,
    /// `approve`, `deny` or `revise` once decided (here or elsewhere).
    pub decision: Option<String>,
}

/// An Agent node's model calls so far, and the answer being written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelProgress {
    pub calls: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost: f64,
    /// The streamed text of the call in progress (cleared when it ends).
    pub writing: String,
}

impl ModelProgress {
    /// "2 model calls · 220 tokens (200 in, 20 out) · cost 0.000150".
    pub fn summary(&self) -> String {
        usage_summary(&ModelUsage {
            model_calls: self.calls,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cost: self.cost,
        })
    }
}

/// A node's or a run's model usage on one line.
pub fn usage_summary(usage: &ModelUsage) -> String {
    let tokens = usage.input_tokens + usage.output_tokens;
    let calls = if usage.model_calls == 1 {
        "call"
    } else {
        "calls"
    };
    format!(
        "{} model {calls} · {tokens} tokens ({} in, {} out) · cost {}",
        usage.model_calls,
        usage.input_tokens,
        usage.output_tokens,
        format_cost(usage.cost)
    )
}

/// A cost with enough digits for a fraction of a cent.
pub fn format_cost(cost: f64) -> String {
    if cost == 0.0 {
        "0".into()
    } else if cost < 0.01 {
        format!("{cost:.6}")
    } else {
        format!("{cost:.4}")
    }
}

/// What the live view knows of a run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LiveRun {
    /// The last event applied (resume with `Last-Event-ID` from here).
    pub last_seq: i64,
    /// Node id -> `running`, `waiting for approval`, `done`, `failed` or
    /// `skipped` (absent: queued).
    pub nodes: BTreeMap<String, String>,
    /// Agent node id -> its tool calls in the order they started.
    pub timeline: BTreeMap<String, Vec<ToolRow>>,
    /// Agent node id -> its final outputs.
    pub outputs: BTreeMap<String, Value>,
    /// Agent node id -> its model calls' usage and the text being streamed.
    pub models: BTreeMap<String, ModelProgress>,
    /// The run's outcome once it finished.
    pub finished: Option<String>,
    /// Why it failed, once it did.
    pub error: Option<String>,
    /// Once it finished: every node's record as `GET /runs/{id}` gives it
    /// (status, outputs with each pinned handle's value).
    pub results: Option<BTreeMap<String, node_runtime::wire::NodeRun>>,
}

const PREVIEW_CHARS: usize = 80;

/// A value on one line, at most [`PREVIEW_CHARS`] characters.
pub fn preview(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > PREVIEW_CHARS {
        format!(
            "{}…",
            line.chars().take(PREVIEW_CHARS - 1).collect::<String>()
        )
    } else {
        line
    }
}

/// Seconds since midnight and the date of an RFC 3339 UTC timestamp.
fn clock(t: &str) -> Option<(&str, f64)> {
    let (date, time) = t.split_once('T')?;
    let time = time.trim_end_matches('Z');
    let mut parts = time.splitn(3, ':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some((date, h * 3600.0 + m * 60.0 + s))
}

/// Milliseconds between two timestamps of the same day (None otherwise).
pub fn latency_ms(start: &str, end: &str) -> Option<f64> {
    let ((d1, a), (d2, b)) = (clock(start)?, clock(end)?);
    (d1 == d2 && b >= a).then_some((b - a) * 1000.0)
}

/// A node's end as the view names it (its wire name).
fn node_status(status: NodeStatus) -> &'static str {
    match status {
        NodeStatus::Done => "done",
        NodeStatus::Failed => "failed",
        NodeStatus::Skipped => "skipped",
    }
}

/// A run's end as the view names it (its wire name).
fn run_outcome(outcome: RunOutcome) -> &'static str {
    match outcome {
        RunOutcome::Succeeded => "succeeded",
        RunOutcome::Failed => "failed",
        RunOutcome::Cancelled => "cancelled",
    }
}

/// The row of `call_id`, added at the end when the call is new.
fn row_for<'a>(rows: &'a mut Vec<ToolRow>, call_id: &str) -> &'a mut ToolRow {
    let index = match rows.iter().position(|r| r.call_id == call_id) {
        Some(i) => i,
        None => {
            rows.push(ToolRow {
                call_id: call_id.into(),
                tool: String::new(),
                state: String::new(),
                latency_ms: None,
                cached: false,
                truncated: false,
                error_code: None,
                preview: String::new(),
                envelope: None,
                approval: None,
            });
            rows.len() - 1
        }
    };
    &mut rows[index]
}

impl LiveRun {
    /// The tool calls that ended in an error (denied ones included) or
    /// with an unknown outcome, over every Agent node.
    pub fn failed_calls(&self) -> usize {
        self.timeline
            .values()
            .flatten()
            .filter(|r| matches!(r.state.as_str(), "failed" | "outcome unknown"))
            .count()
    }

    /// The call a pinned handle of `agent` selected, once the run finished
    /// (what "Materialize as node" on the pin ejects).
    pub fn pin_call(&self, agent: &str, pin: &PinnedHandle) -> Option<ToolEnvelope> {
        let outputs = &self.results.as_ref()?.get(agent)?.outputs;
        let outputs: AgentOutputs =
            serde_json::from_value(Value::Object(outputs.clone().into_iter().collect())).ok()?;
        node_runtime::graph::pins::select(pin, &outputs).cloned()
    }

    /// Applies event `seq` as the event stream carries it (JSON); false
    /// (and nothing changes) when it was seen. An event this app cannot
    /// decode moves the sequence on and changes nothing else.
    pub fn apply(&mut self, seq: i64, event: &Value) -> bool {
        if seq <= self.last_seq {
            return false;
        }
        match WorkflowEvent::deserialize(event) {
            Ok(event) => self.apply_event(seq, event),
            Err(_) => {
                self.last_seq = seq;
                true
            }
        }
    }

    /// Applies the decoded event `seq`; false (and nothing changes) when it
    /// was seen. Every variant is matched by name, so a new event kind
    /// does not compile until the live view decides what it shows.
    pub fn apply_event(&mut self, seq: i64, event: WorkflowEvent) -> bool {
        if seq <= self.last_seq {
            return false;
        }
        self.last_seq = seq;
        match event {
            WorkflowEvent::NodeStarted { node_id } => {
                self.nodes.insert(node_id, "running".into());
            }
            WorkflowEvent::NodeFinished {
                node_id, status, ..
            } => {
                self.nodes.insert(node_id, node_status(status).into());
            }
            WorkflowEvent::RunFinished { outcome, error } => {
                self.finished = Some(run_outcome(outcome).into());
                self.error = error;
            }
            WorkflowEvent::Agent { node_id, event } => self.apply_agent(node_id, *event),
        }
        true
    }

    fn apply_agent(&mut self, node: String, event: AgentEvent) {
        let rows = self.timeline.entry(node.clone()).or_default();
        match event {
            AgentEvent::ToolCallStarted { call_id, tool, .. } => {
                let row = row_for(rows, &call_id);
                row.tool = tool;
                row.state = "running".into();
            }
            // While it runs, the row's preview says how far it has come.
            AgentEvent::ToolProgress {
                call_id,
                progress,
                total,
                message,
            } => {
                let row = row_for(rows, &call_id);
                if row.envelope.is_none() {
                    row.preview = progress_text(progress, total, message.as_deref());
                }
            }
            AgentEvent::ToolCallFinished { envelope } => {
                let row = row_for(rows, &envelope.call_id);
                row.tool = envelope.tool_ref();
                row.latency_ms = latency_ms(&envelope.t_start, &envelope.t_end);
                row.cached = envelope.cached;
                row.truncated = envelope.truncated;
                match &envelope.error {
                    // An approved write cut off by a crash: not retried;
                    // what is known (input, approval) stays for the operator.
                    Some(e) if e.details.get("outcome") == Some(&Value::from("unknown")) => {
                        row.state = "outcome unknown".into();
                        row.error_code = Some("OUTCOME_UNKNOWN".into());
                        row.preview = preview(&Value::String(e.message.clone()));
                    }
                    Some(e) => {
                        row.state = "failed".into();
                        row.error_code = Some(e.code.as_str().into());
                        row.preview = preview(&Value::String(e.message.clone()));
                    }
                    None => {
                        row.state = "done".into();
                        row.preview = preview(&envelope.output);
                    }
                }
                row.envelope = Some(envelope);
            }
            AgentEvent::ApprovalRequested { request } => {
                let row = row_for(rows, &request.call_id);
                row.tool = request.tool;
                row.state = "waiting for approval".into();
                row.preview = request.args_summary;
                row.approval = Some(Approval {
                    token: request.token,
                    effect: request.effect_description,
                    decision: None,
                });
                self.nodes.insert(node, "waiting for approval".into());
            }
            AgentEvent::ApprovalDecided { call_id, decision } => {
                let (decision, state) = match decision {
                    Decision::Approve => ("approve", "approved"),
                    Decision::Deny { .. } => ("deny", "denied"),
                    Decision::Revise { .. } => ("revise", "revision requested"),
                };
                if let Some(row) = rows.iter_mut().find(|r| r.call_id == call_id) {
                    if let Some(a) = row.approval.as_mut() {
                        a.decision = Some(decision.into());
                    }
                    if row.state == "waiting for approval" {
                        row.state = state.into();
                    }
                }
                if self.nodes.get(&node).map(String::as_str) == Some("waiting for approval") {
                    self.nodes.insert(node, "running".into());
                }
            }
            AgentEvent::Finished { outputs } => {
                let outputs = serde_json::to_value(&outputs).unwrap_or(Value::Null);
                self.outputs.insert(node, outputs);
            }
            AgentEvent::TextDelta { text, .. } => {
                self.models.entry(node).or_default().writing.push_str(&text);
            }
            AgentEvent::ModelCalled { usage, cost, .. } => {
                let model = self.models.entry(node).or_default();
                model.calls += 1;
                model.input_tokens += usage.input_tokens;
                model.output_tokens += usage.output_tokens;
                model.cost += cost;
                model.writing.clear();
            }
            // The loop's own progress: the node's state already says it runs,
            // and its end arrives as `NodeFinished`.
            AgentEvent::IterationStarted { .. }
            | AgentEvent::LimitReached { .. }
            | AgentEvent::Failed { .. } => {}
        }
    }

    /// The timeline of `node` in `tool_order` once the node finished (the
    /// contract's order); in start order while it runs.
    pub fn rows(&self, node: &str) -> Vec<ToolRow> {
        let mut rows = self.timeline.get(node).cloned().unwrap_or_default();
        if let Some(order) = self
            .outputs
            .get(node)
            .and_then(|o| o["tool_order"].as_array())
        {
            let rank = |id: &str| {
                order
                    .iter()
                    .position(|v| v.as_str() == Some(id))
                    .unwrap_or(usize::MAX)
            };
            rows.sort_by_key(|r| rank(&r.call_id));
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn progress_reads_as_steps_or_a_share() {
        assert_eq!(progress_text(3.0, Some(5.0), None), "3 of 5");
        assert_eq!(
            progress_text(0.25, Some(1.0), Some("halfway")),
            "25%: halfway"
        );
        assert_eq!(progress_text(7.0, None, None), "7");
    }

    use super::*;
    use serde_json::json;

    fn envelope(call_id: &str, output: Value, error: Option<Value>) -> Value {
        json!({"call_id": call_id, "name": "calculator", "version": "1.0.0", "input": {},
               "output": output, "error": error, "t_start": "2026-11-22T10:00:00.100Z",
               "t_end": "2026-11-22T10:00:00.350Z", "cached": false, "truncated": false})
    }

    #[test]
    fn streamed_text_shows_until_its_call_ends_and_usage_adds_up() {
        let mut live = LiveRun::default();
        let agent = |event: Value| json!({"type": "Agent", "node_id": "agent", "event": event});
        live.apply(
            1,
            &agent(json!({"type": "TextDelta", "iteration": 1, "text": "The sum "})),
        );
        live.apply(
            2,
            &agent(json!({"type": "TextDelta", "iteration": 1, "text": "is 2."})),
        );
        assert_eq!(live.models["agent"].writing, "The sum is 2.");
        let called = json!({"type": "ModelCalled", "iteration": 1, "stop_reason": "end_turn",
            "usage": {"input_tokens": 100, "output_tokens": 10}, "cost": 0.00015,
            "tool_calls": 0, "tools_offered": true});
        live.apply(3, &agent(called.clone()));
        live.apply(4, &agent(called));
        let model = &live.models["agent"];
        assert_eq!(model.writing, "", "the whole answer replaces the stream");
        assert_eq!(
            model.summary(),
            "2 model calls · 220 tokens (200 in, 20 out) · cost 0.000300"
        );
        assert!(!live.apply(
            2,
            &agent(json!({"type": "TextDelta", "iteration": 1, "text": "x"}))
        ));
    }

    #[test]
    fn events_fold_into_node_states_and_a_timeline_without_duplicates() {
        let mut live = LiveRun::default();
        let events = [
            json!({"type": "NodeStarted", "node_id": "agent"}),
            json!({"type": "Agent", "node_id": "agent", "event": {"type": "ToolCallStarted", "call_id": "b", "tool": "calculator", "input": {}}}),
            json!({"type": "Agent", "node_id": "agent", "event": {"type": "ToolCallStarted", "call_id": "a", "tool": "calculator", "input": {}}}),
            json!({"type": "Agent", "node_id": "agent", "event": {"type": "ToolCallFinished", "envelope": envelope("a", json!(4), None)}}),
            json!({"type": "Agent", "node_id": "agent", "event": {"type": "ToolCallFinished", "envelope": envelope("b", Value::Null, Some(json!({"code": "VALIDATION_ERROR", "message": "bad\nexpression"})))}}),
            json!({"type": "Agent", "node_id": "agent", "event": {"type": "Finished", "outputs": {"response": "4", "tools_by_id": {}, "tool_order": ["a", "b"]}}}),
            json!({"type": "NodeFinished", "node_id": "agent", "status": "done", "error": null}),
            json!({"type": "RunFinished", "outcome": "succeeded"}),
        ];
        for (i, e) in events.iter().enumerate() {
            assert!(live.apply(i as i64 + 1, e));
        }
        assert!(!live.apply(3, &events[2]), "a replayed event is ignored");
        assert_eq!(live.nodes["agent"], "done");
        assert_eq!(live.finished.as_deref(), Some("succeeded"));
        let rows = live.rows("agent");
        let ids: Vec<&str> = rows.iter().map(|r| r.call_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"], "tool_order once finished");
        assert_eq!(rows.len(), 2, "no duplicate rows");
        assert_eq!(
            (rows[0].state.as_str(), rows[0].preview.as_str()),
            ("done", "4")
        );
        assert_eq!(rows[0].tool, "calculator@1.0.0");
        assert_eq!(rows[0].latency_ms.map(|l| l.round()), Some(250.0));
        assert_eq!(rows[1].state, "failed");
        assert_eq!(rows[1].error_code.as_deref(), Some("VALIDATION_ERROR"));
        assert_eq!(rows[1].preview, "bad expression");
    }

    #[test]
    fn a_write_waiting_for_approval_shows_on_the_row_and_the_node() {
        let mut live = LiveRun::default();
        live.apply(1, &json!({"type": "NodeStarted", "node_id": "agent"}));
        live.apply(2, &json!({"type": "Agent", "node_id": "agent", "event": {"type": "ApprovalRequested", "request": {"call_id": "w", "tool": "file_write", "args_summary": "path=a.txt", "effect_description": "writes a.txt", "token": "t1"}}}));
        assert_eq!(live.nodes["agent"], "waiting for approval");
        assert_eq!(live.rows("agent")[0].state, "waiting for approval");
        assert_eq!(live.rows("agent")[0].preview, "path=a.txt");
        live.apply(3, &json!({"type": "Agent", "node_id": "agent", "event": {"type": "ToolCallStarted", "call_id": "w", "tool": "file_write", "input": {}}}));
        assert_eq!(live.rows("agent").len(), 1, "the same row moves on");
        let pending = live.rows("agent")[0].approval.clone().expect("approval");
        assert_eq!(
            (
                pending.token.as_str(),
                pending.effect.as_str(),
                pending.decision
            ),
            ("t1", "writes a.txt", None)
        );
        live.apply(4, &json!({"type": "Agent", "node_id": "agent", "event": {"type": "ApprovalDecided", "call_id": "w", "decision": {"decision": "deny", "reason": "no"}}}));
        assert_eq!(live.nodes["agent"], "running");
        let row = &live.rows("agent")[0];
        assert_eq!(
            row.approval.as_ref().and_then(|a| a.decision.as_deref()),
            Some("deny")
        );
    }

    #[test]
    fn a_pin_selects_its_call_from_the_finished_run() {
        let mut live = LiveRun::default();
        let pin: PinnedHandle = serde_json::from_value(json!({
            "name": "calc_result", "selector": {"tool": "calculator", "strategy": "latest"}
        }))
        .expect("pin");
        assert_eq!(
            live.pin_call("agent", &pin),
            None,
            "nothing before the run ends"
        );
        live.results = Some(serde_json::from_value(json!({"agent": {"node_id": "agent", "status": "done",
            "error": null, "started_at": "t0", "finished_at": "t1", "outputs": {
            "response": "6", "tool_order": ["a", "b"], "last_tool": null, "traces_url": null,
            "tools_by_id": {"a": envelope("a", json!(2), None), "b": envelope("b", json!(6), None)},
            "calc_result": 6
        }}})).expect("node records"));
        let call = live.pin_call("agent", &pin).expect("the latest call");
        assert_eq!(
            (call.call_id.as_str(), call.output.value()),
            ("b", &json!(6))
        );
        assert_eq!(live.pin_call("other", &pin), None);
    }

    #[test]
    fn an_interrupted_write_shows_its_outcome_as_unknown() {
        let mut live = LiveRun::default();
        let error = json!({"code": "UNKNOWN", "message": "outcome unknown: reconcile it", "details": {"outcome": "unknown"}});
        live.apply(1, &json!({"type": "Agent", "node_id": "agent", "event": {"type": "ToolCallFinished", "envelope": envelope("w", Value::Null, Some(error))}}));
        let row = &live.rows("agent")[0];
        assert_eq!(row.state, "outcome unknown");
        assert_eq!(row.error_code.as_deref(), Some("OUTCOME_UNKNOWN"));
        assert!(row.preview.contains("reconcile"), "{}", row.preview);
    }

    #[test]
    fn an_event_it_cannot_decode_moves_the_sequence_on_and_changes_nothing() {
        let mut live = LiveRun::default();
        assert!(live.apply(1, &json!({"type": "SomethingNew", "node_id": "agent"})));
        assert_eq!(live.last_seq, 1);
        assert_eq!(
            live,
            LiveRun {
                last_seq: 1,
                ..LiveRun::default()
            }
        );
        assert!(!live.apply(1, &json!({"type": "NodeStarted", "node_id": "agent"})));
    }

    #[test]
    fn previews_are_one_short_line_and_latency_needs_one_day() {
        assert_eq!(preview(&json!("a\n  b")), "a b");
        assert_eq!(preview(&json!("x".repeat(200))).chars().count(), 80);
        assert_eq!(
            latency_ms("2026-01-01T00:00:01Z", "2026-01-01T00:00:02.5Z"),
            Some(1500.0)
        );
        assert_eq!(
            latency_ms("2026-01-01T23:59:59Z", "2026-01-02T00:00:01Z"),
            None
        );
    }
}
