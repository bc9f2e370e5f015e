//! Stage 1: the policy guard, before anything else touches the call.

use futures::future::BoxFuture;
use serde_json::json;

use super::{CallState, Next, Stage, StageResult};
use crate::error::ToolError;
use crate::policy::{check_tool_call, Clearance};

pub struct PolicyStage;

impl Stage for PolicyStage {
    fn handle<'a>(&'a self, state: CallState, next: Next<'a>) -> BoxFuture<'a, StageResult> {
        Box::pin(async move {
            let clearance = check_tool_call(
                &state.scope.policy,
                &state.call.tool.spec,
                state.side_effects,
                &state.usage,
            )?;
            // A deprecated tool still runs; the diagnostic goes to the log
            // (and graph validation shows it on the node).
            if let Clearance::Allowed { warning: Some(w) }
            | Clearance::NeedsApproval { warning: Some(w) } = &clearance
            {
                tracing::warn!(call_id = %state.call.call_id, "{w}");
            }
            if let Clearance::NeedsApproval { .. } = clearance {
                if !state.scope.approved.contains(&state.call.call_id) {
                    return Err(ToolError::policy_denied(format!(
                        "tool {} writes and this call has no human approval",
                        state.call.tool.spec.key()
                    ))
                    .with_details(
                        json!({ "reason": "APPROVAL_REQUIRED", "call_id": state.call.call_id }),
                    ));
                }
            }
            next.run(state).await
        })
    }
}
