//! Stage 2: the input against the tool's `input_schema`. Errors list every
//! violation with its JSON Pointer path.

use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::{CallState, Next, Stage, StageResult};
use crate::error::ToolError;

pub struct InputValidation;

/// Every violation as `{path, message}`; empty when valid.
pub fn violations(validator: &jsonschema::Validator, instance: &Value) -> Vec<Value> {
    validator
        .iter_errors(instance)
        .take(50)
        .map(|e| json!({ "path": e.instance_path().to_string(), "message": e.to_string() }))
        .collect()
}

impl Stage for InputValidation {
    fn handle<'a>(&'a self, state: CallState, next: Next<'a>) -> BoxFuture<'a, StageResult> {
        Box::pin(async move {
            let tool = &state.call.tool;
            if !tool.input_validator.is_valid(&state.call.input) {
                let errors = violations(&tool.input_validator, &state.call.input);
                let first = errors
                    .first()
                    .and_then(|e| e["message"].as_str())
                    .unwrap_or("invalid input")
                    .to_string();
                return Err(ToolError::validation(format!(
                    "input for {} does not match its schema: {first}",
                    tool.spec.key()
                ))
                .with_details(json!({ "errors": errors })));
            }
            next.run(state).await
        })
    }
}
