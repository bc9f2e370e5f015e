//! Stage 8: the tool's output against its `output_schema`. A tool that
//! breaks its own contract is a bug in the tool: UNKNOWN, with the
//! violations in details.

use futures::future::BoxFuture;
use serde_json::json;

use super::validate::violations;
use super::{CallState, Next, Stage, StageResult};
use crate::error::ToolError;

pub struct OutputValidation;

impl Stage for OutputValidation {
    fn handle<'a>(&'a self, state: CallState, next: Next<'a>) -> BoxFuture<'a, StageResult> {
        Box::pin(async move {
            let tool = state.call.tool.clone();
            let out = next.run(state).await?;
            if !tool.output_validator.is_valid(&out.output) {
                let errors = violations(&tool.output_validator, &out.output);
                return Err(ToolError::unknown(format!(
                    "{} returned output that does not match its output_schema",
                    tool.spec.key()
                ))
                .with_details(json!({ "stage": "output_validation", "errors": errors })));
            }
            Ok(out)
        })
    }
}
