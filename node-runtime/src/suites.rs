//! A suite case's assertions checked on its fork (issue 33; the data is in
//! `wire::suites`). Pure: the host forks, waits, and hands the two finished
//! runs' details here.
//!
//! Paths are JSONPath (RFC 9535, `serde_json_path`) over the fork's result
//! document ([`result_document`]); schemas are JSON Schema (`jsonschema`).

use serde_json::{json, Map, Value};
use serde_json_path::JsonPath;

use crate::envelope::ToolEnvelope;
use crate::error::ErrorCode;
use crate::wire::{Assertion, AssertionResult, RunDetail};

/// Checks that an assertion can be evaluated (its path parses, its schema
/// compiles, its numbers make sense); the error says what is wrong.
pub fn validate(assertion: &Assertion) -> Result<(), String> {
    match assertion {
        Assertion::PathEquals { path, .. } | Assertion::PathContains { path, .. } => {
            parse_path(path).map(|_| ())
        }
        Assertion::MatchesSchema { path, schema } => {
            if let Some(path) = path {
                parse_path(path)?;
            }
            jsonschema::validator_for(schema)
                .map(|_| ())
                .map_err(|e| format!("`schema` is not a valid JSON Schema: {e}"))
        }
        Assertion::ToolCalled { tool, .. } | Assertion::ToolNotCalled { tool, .. }
            if tool.trim().is_empty() =>
        {
            Err("`tool` is empty".into())
        }
        Assertion::CostBelow { max } if !max.is_finite() || *max < 0.0 => {
            Err(format!("`max` must be a number of 0 or more, not {max}"))
        }
        _ => Ok(()),
    }
}

fn parse_path(path: &str) -> Result<JsonPath, String> {
    JsonPath::parse(path).map_err(|e| format!("`path` {path:?} is not a JSONPath: {e}"))
}

/// What paths are evaluated over: `{"status", "outputs", "nodes": {<id>:
/// an Agent node's outputs or a Tool node's envelope}}`.
pub fn result_document(run: &RunDetail) -> Value {
    let mut nodes: Map<String, Value> = run.agent_outputs.clone();
    for (id, node) in run.nodes.iter().flatten() {
        if !nodes.contains_key(id) && !node.envelope.is_null() {
            nodes.insert(id.clone(), node.envelope.clone());
        }
    }
    json!({
        "status": run.status,
        "outputs": run.outputs,
        "nodes": nodes,
    })
}

/// Whether a call was refused before it ran (policy or a human).
fn refused(call: &ToolEnvelope) -> bool {
    call.error
        .as_ref()
        .is_some_and(|e| e.code == ErrorCode::PolicyDenied)
}

/// The values `path` selects in `document`: one value as itself, several
/// as an array, none as `None`.
fn select(document: &Value, path: &str) -> Result<Option<Value>, String> {
    let found = parse_path(path)?.query(document).all();
    Ok(match found.len() {
        0 => None,
        1 => Some(found[0].clone()),
        _ => Some(Value::Array(found.into_iter().cloned().collect())),
    })
}

/// Whether `haystack` contains `needle` (substring, element, or the keys
/// and values of an object, recursively).
fn contains(haystack: &Value, needle: &Value) -> bool {
    match (haystack, needle) {
        (Value::String(h), Value::String(n)) => h.contains(n.as_str()),
        (Value::Array(items), _) => items.iter().any(|i| i == needle),
        (Value::Object(h), Value::Object(n)) => n
            .iter()
            .all(|(k, v)| h.get(k).is_some_and(|hv| hv == v || contains(hv, v))),
        _ => false,
    }
}

/// Shortens a value's text for a message.
fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 200 {
        return text;
    }
    let cut: String = text.chars().take(200).collect();
    format!("{cut}…")
}

/// Checks one assertion on `fork`, the case's fork of `origin`.
pub fn check(assertion: &Assertion, origin: &RunDetail, fork: &RunDetail) -> AssertionResult {
    let (passed, message) = verdict(assertion, origin, fork);
    AssertionResult {
        assertion: assertion.clone(),
        passed,
        message,
    }
}

fn verdict(assertion: &Assertion, origin: &RunDetail, fork: &RunDetail) -> (bool, String) {
    let of_tool = |tool: &str, node: &Option<String>| {
        fork.calls()
            .into_iter()
            .filter(|(id, call)| call.name == tool && node.as_ref().is_none_or(|n| n == id))
            .collect::<Vec<_>>()
    };
    match assertion {
        Assertion::OutputsEqual => {
            if origin.outputs == fork.outputs {
                (true, "the outputs equal the recorded run's".into())
            } else {
                (
                    false,
                    format!(
                        "the outputs are {}, the recorded run's {}",
                        short(&fork.outputs),
                        short(&origin.outputs)
                    ),
                )
            }
        }
        Assertion::Status { equals } => {
            (fork.status == *equals, format!("the run {}", fork.status))
        }
        Assertion::PathEquals { path, value } | Assertion::PathContains { path, value } => {
            let equals = matches!(assertion, Assertion::PathEquals { .. });
            match select(&result_document(fork), path) {
                Err(e) => (false, e),
                Ok(None) => (false, format!("{path} selects nothing")),
                Ok(Some(found)) => {
                    let holds = if equals {
                        &found == value
                    } else {
                        contains(&found, value)
                    };
                    (holds, format!("{path} is {}", short(&found)))
                }
            }
        }
        Assertion::MatchesSchema { path, schema } => {
            let path = path.as_deref().unwrap_or("$.outputs");
            let validator = match jsonschema::validator_for(schema) {
                Ok(v) => v,
                Err(e) => return (false, format!("the schema is not valid: {e}")),
            };
            match select(&result_document(fork), path) {
                Err(e) => (false, e),
                Ok(None) => (false, format!("{path} selects nothing")),
                Ok(Some(found)) => {
                    let errors: Vec<String> = validator
                        .iter_errors(&found)
                        .take(3)
                        .map(|e| format!("at {}: {e}", e.instance_path()))
                        .collect();
                    if errors.is_empty() {
                        (true, format!("{path} matches the schema"))
                    } else {
                        (
                            false,
                            format!("{path} does not match: {}", errors.join("; ")),
                        )
                    }
                }
            }
        }
        Assertion::ToolCalled { tool, node } | Assertion::ToolNotCalled { tool, node } => {
            let all = of_tool(tool, node);
            let ran = all.iter().filter(|(_, c)| !refused(c)).count();
            let refusals = all.len() - ran;
            let mut found = format!("{tool} ran {ran} times");
            if refusals > 0 {
                found.push_str(&format!(", refused {refusals} times"));
                if let Some((_, c)) = all.iter().find(|(_, c)| refused(c)) {
                    if let Some(e) = &c.error {
                        found.push_str(&format!(" ({})", e.message));
                    }
                }
            }
            let want_called = matches!(assertion, Assertion::ToolCalled { .. });
            ((ran > 0) == want_called, found)
        }
        Assertion::MaxCalls { max, tool, node } => {
            let count = fork
                .calls()
                .iter()
                .filter(|(id, call)| {
                    tool.as_ref().is_none_or(|t| &call.name == t)
                        && node.as_ref().is_none_or(|n| n == id)
                })
                .count();
            (count <= *max as usize, format!("{count} calls were made"))
        }
        Assertion::CostBelow { max } => (
            fork.usage.cost < *max,
            format!("the run cost {}", fork.usage.cost),
        ),
    }
}

/// Whether every assertion passed.
pub fn all_passed(results: &[AssertionResult]) -> bool {
    results.iter().all(|r| r.passed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::RunStatus;

    fn run(outputs: Value, agent: Value, cost: f64) -> RunDetail {
        serde_json::from_value(json!({
            "id": "r", "workflow_id": "w", "workflow_revision": 1, "kind": "run",
            "replay_of": null, "status": "succeeded", "trigger": "api",
            "outputs": outputs, "error": null, "created_at": "t", "finished_at": "t",
            "duration_ms": 1.0, "nodes": {}, "agent_outputs": {"agent": agent},
            "usage": {"model_calls": 1, "input_tokens": 0, "output_tokens": 0, "cost": cost},
        }))
        .expect("a run detail")
    }

    fn agent(calls: &[(&str, &str, Option<&str>)]) -> Value {
        let mut by_id = Map::new();
        let mut order = Vec::new();
        for (id, name, error) in calls {
            // A refused call, or (no refusal) the same call answered 1.
            let refused = ToolEnvelope::failed(
                id.to_string(),
                name.to_string(),
                "1.0.0".into(),
                json!({}),
                crate::error::ToolError::policy_denied(error.unwrap_or_default()),
                "t".into(),
                "t".into(),
            );
            let envelope = match error {
                Some(_) => refused,
                None => ToolEnvelope {
                    output: json!(1).into(),
                    error: None,
                    ..refused
                },
            };
            let envelope = serde_json::to_value(envelope).expect("an envelope");
            by_id.insert(id.to_string(), envelope);
            order.push(id.to_string());
        }
        json!({"response": "The answer is 42.", "tools_by_id": by_id, "tool_order": order,
               "last_tool": null, "traces_url": null})
    }

    fn passes(assertion: Value, origin: &RunDetail, fork: &RunDetail) -> (bool, String) {
        let assertion: Assertion = serde_json::from_value(assertion).expect("an assertion");
        validate(&assertion).expect("valid");
        let r = check(&assertion, origin, fork);
        (r.passed, r.message)
    }

    #[test]
    fn each_assertion_passes_and_fails_with_what_it_found() {
        let origin = run(
            json!({"answer": "The answer is 42."}),
            agent(&[("c1", "calculator", None)]),
            0.5,
        );
        let same = origin.clone();
        let removed = run(
            json!({"answer": "I could not compute it."}),
            agent(&[("c1", "calculator", Some("calculator is not enabled"))]),
            2.0,
        );
        let cases = [
            (json!({"kind": "outputs_equal"}), true, false),
            (json!({"kind": "status", "equals": "succeeded"}), true, true),
            (
                json!({"kind": "path_equals", "path": "$.outputs.answer", "value": "The answer is 42."}),
                true,
                false,
            ),
            (
                json!({"kind": "path_contains", "path": "$.nodes.agent.response", "value": "42"}),
                true,
                true,
            ),
            (
                json!({"kind": "path_contains", "path": "$.outputs", "value": {"answer": "The answer is 42."}}),
                true,
                false,
            ),
            (
                json!({"kind": "matches_schema", "schema": {"type": "object", "required": ["answer"]}}),
                true,
                true,
            ),
            (
                json!({"kind": "matches_schema", "path": "$.outputs.answer", "schema": {"pattern": "42"}}),
                true,
                false,
            ),
            (
                json!({"kind": "tool_called", "tool": "calculator"}),
                true,
                false,
            ),
            (
                json!({"kind": "tool_called", "tool": "calculator", "node": "other"}),
                false,
                false,
            ),
            (
                json!({"kind": "tool_not_called", "tool": "calculator"}),
                false,
                true,
            ),
            (json!({"kind": "max_calls", "max": 1}), true, true),
            (
                json!({"kind": "max_calls", "max": 0, "tool": "calculator"}),
                false,
                false,
            ),
            (json!({"kind": "cost_below", "max": 1.0}), true, false),
        ];
        for (assertion, on_same, on_removed) in cases {
            assert_eq!(
                passes(assertion.clone(), &origin, &same).0,
                on_same,
                "{assertion} on the same run"
            );
            assert_eq!(
                passes(assertion.clone(), &origin, &removed).0,
                on_removed,
                "{assertion} after the edit"
            );
        }
        let (_, message) = passes(
            json!({"kind": "tool_called", "tool": "calculator"}),
            &origin,
            &removed,
        );
        assert!(
            message.contains("ran 0 times, refused 1 times"),
            "{message}"
        );
        let (_, message) = passes(json!({"kind": "outputs_equal"}), &origin, &removed);
        assert!(message.contains("could not compute"), "{message}");
        let (passed, message) = passes(
            json!({"kind": "path_equals", "path": "$.outputs.nope", "value": 1}),
            &origin,
            &same,
        );
        assert!(!passed && message.contains("selects nothing"), "{message}");
        assert_eq!(same.status, RunStatus::Succeeded);
    }

    #[test]
    fn bad_assertions_are_refused_in_words() {
        for (bad, says) in [
            (
                json!({"kind": "path_equals", "path": "outputs[", "value": 1}),
                "not a JSONPath",
            ),
            (
                json!({"kind": "matches_schema", "schema": {"type": 7}}),
                "not a valid JSON Schema",
            ),
            (
                json!({"kind": "tool_called", "tool": " "}),
                "`tool` is empty",
            ),
            (json!({"kind": "cost_below", "max": -1.0}), "`max`"),
        ] {
            let assertion: Assertion = serde_json::from_value(bad.clone()).expect("parses");
            let error = validate(&assertion).expect_err("refused");
            assert!(error.contains(says), "{bad}: {error}");
        }
        for unknown in [
            // (serde ignores extra fields of a unit variant of an
            // internally tagged enum; a struct variant refuses them.)
            json!({"kind": "status", "equals": "succeeded", "extra": 1}),
            json!({"kind": "nope"}),
        ] {
            assert!(
                serde_json::from_value::<Assertion>(unknown.clone()).is_err(),
                "{unknown}"
            );
        }
    }
}
