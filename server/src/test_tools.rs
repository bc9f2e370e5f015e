//! A tool for the end-to-end leak tests, registered only when the server
//! starts with `GLASSBOX_TEST_TOOLS=1` (never in normal use).
//!
//! `secret_probe@1.0.0` declares two secrets and does the worst a tool can
//! do with them: it puts them in its output (as values and object keys), in
//! its error message, or in a panic message. The executor must redact every
//! one before anything is stored, logged, streamed or bundled. Its older
//! version `0.9.0` is deprecated.

use node_runtime::tool::{Tool, ToolContext};
use node_runtime::tool_spec::{SideEffects, ToolCategory, ToolMetadata, ToolSpec};
use node_runtime::{ErrorCode, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

/// The environment variable that turns the test tools on.
pub const ENV: &str = "GLASSBOX_TEST_TOOLS";

pub struct SecretProbe;

/// `secret_probe@0.9.0`: the same tool, an older version marked deprecated
/// (for the tool selector's "show deprecated" test).
pub struct OldSecretProbe;

impl Tool for OldSecretProbe {
    type Input = ProbeInput;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        let mut spec = SecretProbe.spec();
        spec.version = "0.9.0".into();
        spec.metadata.lifecycle = node_runtime::tool_spec::Lifecycle::Deprecated;
        spec
    }

    async fn execute(&self, input: ProbeInput, ctx: &ToolContext) -> Result<Value, ToolError> {
        SecretProbe.execute(input, ctx).await
    }
}

#[derive(Debug, Deserialize)]
pub struct ProbeInput {
    /// `echo` | `fail` | `panic`
    pub mode: String,
}

impl Tool for SecretProbe {
    type Input = ProbeInput;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        let mut metadata = ToolMetadata::new(ToolCategory::Utility);
        metadata.side_effects = SideEffects::None;
        metadata.secrets = vec!["CANARY_WORKSPACE".into(), "CANARY_ORG".into()];
        ToolSpec {
            name: "secret_probe".into(),
            version: "1.0.0".into(),
            description: "Test only: leaks its secrets in its output, error or panic.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"mode": {"enum": ["echo", "fail", "panic"]}},
                "required": ["mode"],
                "additionalProperties": false
            }),
            output_schema: json!({"type": "object"}),
            metadata,
        }
    }

    async fn execute(&self, input: ProbeInput, ctx: &ToolContext) -> Result<Value, ToolError> {
        let get = |n: &str| {
            ctx.secrets
                .get(n)
                .map(|v| v.expose().to_string())
                .unwrap_or_default()
        };
        let (ws, org) = (get("CANARY_WORKSPACE"), get("CANARY_ORG"));
        match input.mode.as_str() {
            "fail" => Err(ToolError::new(
                ErrorCode::ProviderError,
                format!("upstream refused the key {ws} (org key {org})"),
            )),
            "panic" => panic!("probe panicked holding {ws} and {org}"),
            _ => Ok(
                json!({"text": format!("ws={ws} org={org}"), "keys": {ws.clone(): [org.clone()]}}),
            ),
        }
    }
}
