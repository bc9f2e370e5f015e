//! Stage 9, the leaf: calls the tool. A panic inside the tool is caught and
//! becomes UNKNOWN; the executor never goes down with a tool.

use std::panic::AssertUnwindSafe;

use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::json;

use super::{CallState, Next, Stage, StageOutput, StageResult};
use crate::error::ToolError;
use crate::tool::ToolContext;

pub struct RunStage;

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

impl Stage for RunStage {
    fn handle<'a>(&'a self, state: CallState, _next: Next<'a>) -> BoxFuture<'a, StageResult> {
        Box::pin(async move {
            let ctx = ToolContext {
                workspace_id: state.scope.owner.workspace_id.clone(),
                call_id: state.call.call_id.clone(),
                secrets: state.secrets,
                cancel: state.cancel,
                env: state.scope.env.clone(),
            };
            let tool = state.call.tool.tool.clone();
            let key = state.call.tool.spec.key();
            match AssertUnwindSafe(tool.call(state.call.input, &ctx))
                .catch_unwind()
                .await
            {
                Ok(Ok(output)) => Ok(StageOutput::plain(output)),
                Ok(Err(err)) => Err(err),
                Err(payload) => Err(ToolError::unknown(format!(
                    "tool {key} panicked: {}",
                    panic_message(payload.as_ref())
                ))
                .with_details(json!({ "reason": "PANIC" }))),
            }
        })
    }
}
