//! Stage 6: secret resolution on the way in, redaction on the way out.
//!
//! A tool receives only the secrets it declares. A missing one is
//! AUTH_REQUIRED naming the secret (never a value). Any resolved value that
//! shows up in the output or the error becomes `[REDACTED:<name>]` before
//! the envelope exists.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::json;

use super::{CallState, Next, Stage, StageResult};
use crate::error::{ErrorCode, ToolError};
use crate::secrets::{resolve, SecretSource};

pub struct SecretsStage {
    source: Arc<dyn SecretSource>,
}

impl SecretsStage {
    pub fn new(source: Arc<dyn SecretSource>) -> Self {
        Self { source }
    }
}

impl Stage for SecretsStage {
    fn handle<'a>(&'a self, mut state: CallState, next: Next<'a>) -> BoxFuture<'a, StageResult> {
        Box::pin(async move {
            let names = &state.call.tool.spec.metadata.secrets;
            if names.is_empty() {
                return next.run(state).await;
            }
            let resolved = resolve(self.source.as_ref(), &state.scope.owner, names)
                .await
                .map_err(|missing| {
                    ToolError::new(
                        ErrorCode::AuthRequired,
                        format!(
                            "tool {} needs the secret {}, which is not set for this user, workspace or org",
                            state.call.tool.spec.key(),
                            missing.0
                        ),
                    )
                    .with_details(json!({ "missing_secret": missing.0 }))
                })?;
            state.secrets = resolved.clone();
            match next.run(state).await {
                Ok(mut out) => {
                    resolved.redact_value(&mut out.output);
                    Ok(out)
                }
                Err(mut err) => {
                    if let Some(m) = resolved.redact_str(&err.message) {
                        err.message = m;
                    }
                    resolved.redact_value(&mut err.details);
                    Err(err)
                }
            }
        })
    }
}
