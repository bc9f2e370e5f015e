//! Node evaluation as pure functions: templates, the nodes whose outputs
//! follow from their inputs alone, a Tool node's input and handles, an
//! Agent node's handles with its pins resolved, and the workflow's
//! outputs. Shared by the live run and the replay.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::envelope::{AgentOutputs, ToolEnvelope};
use crate::graph::pins::{resolve, PinValue};
use crate::graph::record::NodeRecord;
use crate::graph::{
    AgentNodeConfig, FieldSource, Node, NodeKind, ToolNodeConfig, Workflow, AGENT_OUTPUTS,
};

pub use crate::graph::render;
use crate::graph::RenderError;

/// Steps a rendering may take on an async worker thread: a template that
/// interpolates a few values renders within them (microseconds); one that
/// needs more (a loop) starts again on the blocking pool. At most about
/// 0.15 ms of a worker's time goes to a template.
const INLINE_FUEL: u64 = 10_000;

/// Renders a template ([`render`]): within [`INLINE_FUEL`] steps in place,
/// else on tokio's blocking pool, off the async worker threads, so a
/// caller that stops waiting (a cancelled run drops the node's future) is
/// not held up: the rendering ends there within its bounds and its result
/// is dropped.
pub(super) async fn render_bounded(
    template: &str,
    inputs: &BTreeMap<String, Value>,
) -> Result<String, String> {
    match crate::graph::render_within(template, inputs, INLINE_FUEL) {
        Err(RenderError::OutOfFuel(_)) => {
            let (template, inputs) = (template.to_string(), inputs.clone());
            tokio::task::spawn_blocking(move || render(&template, &inputs))
                .await
                .map_err(|e| format!("template rendering stopped: {e}"))?
        }
        done => done.map_err(|e| e.to_string()),
    }
}

/// [`compute_pure`], with a Template node rendered by [`render_bounded`].
pub(super) async fn compute(
    node: &Node,
    inputs: &BTreeMap<String, Value>,
    workflow_inputs: &Map<String, Value>,
) -> Result<BTreeMap<String, Value>, String> {
    match &node.kind {
        NodeKind::Template(c) => Ok(BTreeMap::from([(
            "text".to_string(),
            Value::String(render_bounded(&c.template, inputs).await?),
        )])),
        _ => compute_pure(node, inputs, workflow_inputs),
    }
}

/// Branch, Template, Output and Input: the nodes whose outputs are a pure
/// function of their inputs (and the workflow inputs).
fn compute_pure(
    node: &Node,
    inputs: &BTreeMap<String, Value>,
    workflow_inputs: &Map<String, Value>,
) -> Result<BTreeMap<String, Value>, String> {
    Ok(match &node.kind {
        NodeKind::Input(c) => node
            .outputs()
            .into_iter()
            .map(|field| {
                let value = workflow_inputs
                    .get(&field)
                    .cloned()
                    .or_else(|| {
                        c.schema
                            .pointer(&format!("/properties/{field}/default"))
                            .cloned()
                    })
                    .unwrap_or(Value::Null);
                (field, value)
            })
            .collect(),
        NodeKind::Template(c) => BTreeMap::from([(
            "text".to_string(),
            Value::String(render(&c.template, inputs)?),
        )]),
        NodeKind::Branch(c) => {
            let value = inputs.get("value").cloned().unwrap_or(Value::Null);
            let side = if c.evaluate(&value) { "true" } else { "false" };
            BTreeMap::from([(side.to_string(), value)])
        }
        NodeKind::Output(c) => c
            .fields
            .iter()
            .map(|f| (f.clone(), inputs.get(f).cloned().unwrap_or(Value::Null)))
            .collect(),
        NodeKind::Agent(_) | NodeKind::Tool(_) => return Err("not a pure node".into()),
    })
}

pub(super) fn tool_input(config: &ToolNodeConfig, inputs: &BTreeMap<String, Value>) -> Value {
    let mut object = Map::new();
    for (field, source) in &config.inputs {
        let value = match source {
            FieldSource::Fixed { value } => value.clone(),
            FieldSource::Wired => inputs.get(field).cloned().unwrap_or(Value::Null),
        };
        object.insert(field.clone(), value);
    }
    Value::Object(object)
}

pub(super) fn tool_outputs(
    config: &ToolNodeConfig,
    envelope: &ToolEnvelope,
) -> BTreeMap<String, Value> {
    let output = match &config.output_path {
        Some(p) if !p.is_empty() => envelope.output.pointer(p).cloned().unwrap_or(Value::Null),
        _ => envelope.output.value().clone(),
    };
    BTreeMap::from([
        ("output".to_string(), output),
        (
            "error".to_string(),
            envelope
                .error
                .as_ref()
                .map(|e| json!(e))
                .unwrap_or(Value::Null),
        ),
        ("envelope".to_string(), json!(envelope)),
    ])
}

/// An Agent node's handle values, the pins that fell back to an earlier
/// run's value, and the pins that resolved in this run (for the history).
pub(super) struct AgentHandles {
    pub(super) handles: BTreeMap<String, Value>,
    pub(super) fallbacks: BTreeMap<String, Value>,
    pub(super) resolved: Vec<(String, Value)>,
}

/// An Agent node's handles from its outputs, pins resolved.
pub(super) fn agent_handles(
    config: &AgentNodeConfig,
    outputs: &AgentOutputs,
    stale: &dyn Fn(&str) -> Option<Value>,
) -> Result<AgentHandles, String> {
    let mut handles = contract_values(outputs);
    let mut fallbacks = BTreeMap::new();
    let mut resolved = Vec::new();
    for pin in &config.pins {
        match resolve(pin, outputs, || stale(&pin.name)).map_err(|e| e.to_string())? {
            PinValue::Found(v) => {
                if !v.is_null() {
                    resolved.push((pin.name.clone(), v.clone()));
                }
                handles.insert(pin.name.clone(), v);
            }
            PinValue::Missing(v) => {
                if !v.is_null() {
                    fallbacks.insert(pin.name.clone(), v.clone());
                }
                handles.insert(pin.name.clone(), v);
            }
        }
    }
    Ok(AgentHandles {
        handles,
        fallbacks,
        resolved,
    })
}

/// The contract keys of an agent's outputs ([`AGENT_OUTPUTS`]) as values,
/// as `serde_json::to_value` gives them, built directly (issue #30: a
/// long run's `tools_by_id` went through serde, every call's input
/// written out and read back).
fn contract_values(outputs: &AgentOutputs) -> BTreeMap<String, Value> {
    let string_or_null = |s: &Option<String>| s.clone().map_or(Value::Null, Value::String);
    let handles = BTreeMap::from([
        (
            "response".to_string(),
            Value::String(outputs.response.clone()),
        ),
        (
            "tools_by_id".to_string(),
            Value::Object(
                outputs
                    .tools_by_id
                    .iter()
                    .map(|(id, e)| (id.clone(), e.to_value()))
                    .collect(),
            ),
        ),
        (
            "tool_order".to_string(),
            Value::Array(
                outputs
                    .tool_order
                    .iter()
                    .cloned()
                    .map(Value::String)
                    .collect(),
            ),
        ),
        (
            "last_tool".to_string(),
            outputs
                .last_tool
                .as_ref()
                .map_or(Value::Null, ToolEnvelope::to_value),
        ),
        (
            "traces_url".to_string(),
            string_or_null(&outputs.traces_url),
        ),
    ]);
    debug_assert!(AGENT_OUTPUTS.iter().all(|k| handles.contains_key(*k)));
    handles
}

pub(super) fn collect_outputs(
    workflow: &Workflow,
    records: &BTreeMap<String, NodeRecord>,
) -> BTreeMap<String, Value> {
    let mut outputs = BTreeMap::new();
    for node in &workflow.nodes {
        if let (NodeKind::Output(_), Some(r)) = (&node.kind, records.get(&node.id)) {
            outputs.extend(r.outputs.clone());
        }
    }
    outputs
}

#[cfg(test)]
mod bounds_tests {
    use super::*;

    #[test]
    fn templates_are_bounded_in_steps_and_size() {
        let none = BTreeMap::new();
        let runaway =
            "{% for i in range(10000) %}{% for j in range(10000) %}x{% endfor %}{% endfor %}";
        let e = render(runaway, &none).expect_err("a runaway loop stops");
        assert!(e.contains("steps"), "{e}");
        let huge = "{{ 'x' * 2000000 }}";
        let e = render(huge, &none).expect_err("a huge output is refused");
        assert!(e.contains("more than the 1048576 allowed"), "{e}");
        assert_eq!(render("{{ 'ab' * 3 }}", &none).as_deref(), Ok("ababab"));
    }
}

#[cfg(test)]
mod contract_tests {
    use super::*;
    use crate::envelope::{Attachment, AttachmentKind};
    use crate::error::ToolError;

    /// The handles built directly are the outputs' values as serde makes
    /// them, whatever the envelopes hold.
    #[test]
    fn the_contract_values_are_serdes() {
        let ok = ToolEnvelope {
            output: json!({"results": ["x".repeat(300), 1.5, null]}).into(),
            error: None,
            cached: true,
            attachments: vec![Attachment {
                kind: AttachmentKind::Blob,
                url: "blob://h".into(),
                content_type: Some("text/plain".into()),
                bytes: Some(7),
            }],
            ..ToolEnvelope::failed(
                "a".into(),
                "json_query".into(),
                "1.0.0".into(),
                json!({"data": {"note": "y".repeat(1024), "i": 3}, "program": ".note"}),
                ToolError::unknown("x"),
                "t0".into(),
                "t1".into(),
            )
        };
        let failed = ToolEnvelope {
            replayed: true,
            ..ToolEnvelope::failed(
                "b".into(),
                "http_request".into(),
                "1.0.0".into(),
                json!("not an object"),
                ToolError::unknown("boom").with_details(json!({"outcome": "unknown"})),
                "t2".into(),
                "t3".into(),
            )
        };
        let mut outputs = AgentOutputs {
            traces_url: Some("/runs/r/trace".into()),
            limit_reached: Some("max_iterations".into()),
            ..AgentOutputs::default()
        };
        let empty = contract_values(&outputs);
        outputs.record(ok);
        outputs.record(failed);
        outputs.response = "done".into();
        for (outputs, handles) in [
            (
                AgentOutputs::default(),
                contract_values(&AgentOutputs::default()),
            ),
            (outputs.clone(), contract_values(&outputs)),
        ] {
            let Value::Object(mut all) = serde_json::to_value(&outputs).expect("value") else {
                panic!("an object");
            };
            let want: BTreeMap<String, Value> = AGENT_OUTPUTS
                .iter()
                .map(|k| (k.to_string(), all.remove(*k).unwrap_or(Value::Null)))
                .collect();
            assert_eq!(handles, want);
        }
        assert_eq!(empty["traces_url"], json!("/runs/r/trace"));
    }
}
