//! The trace page's model: the spans of a run (from
//! `GET /api/v1/runs/{id}/trace`) laid out as a timeline tree. Plain Rust,
//! tested natively; `pages::trace` only draws the rows.

use std::collections::HashMap;

use serde_json::Value;

/// The API's answer and its spans.
pub use node_runtime::wire::{Span, Trace};

/// One row of the timeline: a span at its depth in the tree, with its bar
/// placed on the run's time axis (percentages of the whole trace).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub depth: usize,
    pub name: String,
    /// What the span is about: the node, the tool, the iteration number.
    pub label: String,
    pub duration_ms: f64,
    pub offset_pct: f64,
    pub width_pct: f64,
    /// The error code or message recorded on the span, if any.
    pub error: Option<String>,
}

/// Microseconds since the epoch of an RFC 3339 UTC time
/// (`YYYY-MM-DDTHH:MM:SS[.ffffff]Z`); None when it is not one.
pub fn micros(t: &str) -> Option<i64> {
    let t = t.strip_suffix('Z')?;
    let (date, time) = t.split_once('T')?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut h = hms.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (hh, mm, ss) = (h.next()??, h.next()??, h.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || frac.len() > 9 {
        return None;
    }
    let frac_us = if frac.is_empty() {
        0
    } else {
        let digits: String = frac.chars().chain(std::iter::repeat('0')).take(6).collect();
        digits.parse::<i64>().ok()?
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hh) * 60 + mm) * 60_000_000 + ss * 1_000_000 + frac_us)
}

fn label(span: &Span) -> String {
    let text = |k: &str| {
        span.fields.get(k).and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        })
    };
    match span.name.as_str() {
        "run" => text("run_id").unwrap_or_default(),
        "node" => match (text("node_id"), text("kind")) {
            (Some(id), Some(kind)) => format!("{id} ({kind})"),
            (id, _) => id.unwrap_or_default(),
        },
        "iteration" => text("iteration")
            .map(|i| format!("#{i}"))
            .unwrap_or_default(),
        "model_call" => {
            let provider = text("provider").unwrap_or_default();
            match text("tool_calls") {
                Some(n) => format!("{provider}, {n} tool call(s)"),
                None => provider,
            }
        }
        "tool_call" => match (text("tool"), text("call_id")) {
            (Some(tool), Some(id)) => format!("{tool} {id}"),
            (tool, _) => tool.unwrap_or_default(),
        },
        _ => String::new(),
    }
}

/// The spans as rows: depth-first from the roots, children in start order;
/// a span whose parent is missing (still open, or lost) is shown as a root.
pub fn layout(spans: &[Span]) -> Vec<Row> {
    let ids: HashMap<&str, usize> = spans
        .iter()
        .enumerate()
        .map(|(i, s)| (s.span_id.as_str(), i))
        .collect();
    let start = |s: &Span| micros(&s.started_at).unwrap_or(0);
    let mut children: HashMap<Option<usize>, Vec<usize>> = HashMap::new();
    for (i, s) in spans.iter().enumerate() {
        let parent = s
            .parent_id
            .as_deref()
            .and_then(|p| ids.get(p).copied())
            .filter(|&p| p != i);
        children.entry(parent).or_default().push(i);
    }
    for list in children.values_mut() {
        list.sort_by_key(|&i| (start(&spans[i]), i));
    }
    let t0 = spans.iter().map(start).min().unwrap_or(0);
    let t1 = spans
        .iter()
        .map(|s| start(s) + (s.duration_ms * 1000.0) as i64)
        .max()
        .unwrap_or(t0);
    let total = (t1 - t0).max(1) as f64;
    let mut rows = Vec::with_capacity(spans.len());
    let mut seen = vec![false; spans.len()];
    let mut stack: Vec<(usize, usize)> = children
        .get(&None)
        .map(|r| r.iter().rev().map(|&i| (i, 0)).collect())
        .unwrap_or_default();
    while let Some((i, depth)) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        let s = &spans[i];
        let offset = (start(s) - t0) as f64 / total * 100.0;
        let width = (s.duration_ms * 1000.0 / total * 100.0).clamp(0.0, 100.0 - offset);
        rows.push(Row {
            depth,
            name: s.name.clone(),
            label: label(s),
            duration_ms: s.duration_ms,
            offset_pct: offset,
            width_pct: width,
            error: s
                .fields
                .get("error")
                .and_then(|e| e.as_str())
                .map(str::to_string),
        });
        if let Some(kids) = children.get(&Some(i)) {
            stack.extend(kids.iter().rev().map(|&k| (k, depth + 1)));
        }
    }
    rows
}

/// A duration for people: microseconds, milliseconds or seconds.
pub fn human_ms(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.0} µs", ms * 1000.0)
    } else if ms < 1000.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{:.2} s", ms / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn span(
        id: &str,
        parent: Option<&str>,
        name: &str,
        at_us: u32,
        ms: f64,
        fields: Value,
    ) -> Span {
        Span {
            span_id: id.into(),
            parent_id: parent.map(str::to_string),
            name: name.into(),
            started_at: format!("2026-11-22T10:00:00.{at_us:06}Z"),
            duration_ms: ms,
            fields,
        }
    }

    #[test]
    fn rfc3339_times_become_micros() {
        assert_eq!(micros("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(micros("1970-01-01T00:00:01.5Z"), Some(1_500_000));
        assert_eq!(
            micros("2000-03-01T00:00:00.000001Z"),
            Some(951_868_800_000_001)
        );
        assert_eq!(micros("2026-11-22 10:00:00"), None);
        assert_eq!(micros("2026-13-01T00:00:00Z"), None);
    }

    #[test]
    fn spans_are_laid_out_as_a_tree_on_one_time_axis() {
        let spans = vec![
            span(
                "t2",
                Some("i"),
                "tool_call",
                500_000,
                100.0,
                json!({"tool": "calculator@1.0.0", "call_id": "c2", "error": "VALIDATION_ERROR"}),
            ),
            span("r", None, "run", 0, 1000.0, json!({"run_id": "R"})),
            span(
                "n",
                Some("r"),
                "node",
                100_000,
                800.0,
                json!({"node_id": "agent", "kind": "agent"}),
            ),
            span(
                "i",
                Some("n"),
                "iteration",
                100_000,
                600.0,
                json!({"iteration": 1}),
            ),
            span(
                "m",
                Some("i"),
                "model_call",
                100_000,
                400.0,
                json!({"provider": "scripted", "tool_calls": 2}),
            ),
            span(
                "t1",
                Some("i"),
                "tool_call",
                500_000,
                50.0,
                json!({"tool": "calculator@1.0.0", "call_id": "c1"}),
            ),
            span("x", Some("gone"), "tool_call", 900_000, 10.0, json!({})),
        ];
        let rows = layout(&spans);
        let names: Vec<(usize, &str)> = rows.iter().map(|r| (r.depth, r.name.as_str())).collect();
        assert_eq!(
            names,
            [
                (0, "run"),
                (1, "node"),
                (2, "iteration"),
                (3, "model_call"),
                (3, "tool_call"),
                (3, "tool_call"),
                (0, "tool_call")
            ]
        );
        assert_eq!(rows[0].label, "R");
        assert_eq!(rows[1].label, "agent (agent)");
        assert_eq!(rows[2].label, "#1");
        assert_eq!(rows[3].label, "scripted, 2 tool call(s)");
        assert_eq!(rows[4].label, "calculator@1.0.0 c2");
        assert_eq!(rows[4].error.as_deref(), Some("VALIDATION_ERROR"));
        assert!(
            (rows[0].offset_pct - 0.0).abs() < 1e-9 && (rows[0].width_pct - 100.0).abs() < 1e-9
        );
        assert!(
            (rows[1].offset_pct - 10.0).abs() < 1e-9 && (rows[1].width_pct - 80.0).abs() < 1e-9
        );
        assert!(rows
            .iter()
            .all(|r| r.offset_pct + r.width_pct <= 100.0 + 1e-9));
    }

    #[test]
    fn a_cycle_or_an_empty_trace_does_not_hang() {
        assert!(layout(&[]).is_empty());
        let spans = vec![
            span("a", Some("b"), "node", 0, 1.0, json!({})),
            span("b", Some("a"), "node", 0, 1.0, json!({})),
        ];
        assert!(layout(&spans).len() <= 2);
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human_ms(0.25), "250 µs");
        assert_eq!(human_ms(12.34), "12.3 ms");
        assert_eq!(human_ms(2500.0), "2.50 s");
    }
}
