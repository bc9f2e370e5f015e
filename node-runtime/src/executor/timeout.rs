//! Stage 7: the call's deadline (`timeout_ms`) and run cancellation. On
//! either, the tool's cancellation token fires and its future is dropped.

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::json;

use super::{CallState, Next, Stage, StageResult};
use crate::error::{ErrorCode, ToolError};

pub struct TimeoutStage;

impl Stage for TimeoutStage {
    fn handle<'a>(&'a self, state: CallState, next: Next<'a>) -> BoxFuture<'a, StageResult> {
        Box::pin(async move {
            let limit = Duration::from_millis(state.call.tool.spec.metadata.timeout_ms.max(1));
            let key = state.call.tool.spec.key();
            let cancel = state.cancel.clone();
            let run_cancel = state.scope.cancel.clone();
            let result = tokio::select! {
                r = tokio::time::timeout(limit, next.run(state)) => r,
                () = run_cancel.cancelled() => {
                    cancel.cancel();
                    return Err(ToolError::unknown(format!("call to {key} cancelled: the run was aborted"))
                        .with_details(json!({ "reason": "CANCELLED" })));
                }
            };
            match result {
                Ok(r) => r,
                Err(_) => {
                    cancel.cancel();
                    Err(ToolError::new(
                        ErrorCode::Timeout,
                        format!("{key} did not finish within {} ms", limit.as_millis()),
                    )
                    .with_details(json!({ "timeout_ms": limit.as_millis() as u64 })))
                }
            }
        })
    }
}
