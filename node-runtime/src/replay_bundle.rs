//! Replay bundles as data: everything needed to re-run an Agent Node
//! hermetically (format_version 1), the records it is made of, and loading
//! one with its checks (JSON, version, shape, integrity). Plain data and
//! pure functions (wasm-safe), so the app can read a bundle; making one
//! from a run and replaying it is `crate::agent::replay` (runtime feature).
//!
//! A bundle holds the node config (tool versions, prompts, policy, provider
//! config: names of secrets only, never values), the tools as offered and
//! as sent, every model exchange (request messages stored once, as the
//! messages appended since the previous exchange, plus the response), every
//! ToolEnvelope, the approvals, the provider-id mapping and timings, and an
//! `integrity` hash over all of it. Its JSON is hashed: field order and
//! names are part of the format.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent_config::AgentConfig;
use crate::agent_event::Decision;
use crate::call_id::canonical_json;
use crate::chat::{ChatResponse, Message, ToolDefinition};
use crate::envelope::{AgentOutputs, ToolEnvelope};

/// One model exchange as recorded for replay: only the messages appended
/// since the previous exchange, not counting the assistant message that
/// repeats the previous response, so every message is stored once and a
/// bundle grows linearly with the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecordedExchange {
    pub step: usize,
    pub appended: Vec<Message>,
    pub tools_offered: bool,
    pub response: ChatResponse,
    pub t_start: String,
    pub t_end: String,
}

/// A decision as recorded for replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalRecord {
    pub call_id: String,
    pub token: String,
    pub decision: Decision,
    pub decided_at: String,
}

/// Provider tool-call id <-> our call id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CallMapping {
    pub provider_call_id: String,
    pub call_id: String,
}

/// The bundle format this Glassbox writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// One Agent Node run, recorded for hermetic replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReplayBundle {
    pub format_version: u32,
    pub run_id: String,
    pub config: AgentConfig,
    pub tool_definitions: Vec<ToolDefinition>,
    /// The tool list exactly as the provider adapter sent it.
    pub tool_schemas: Vec<Value>,
    pub exchanges: Vec<RecordedExchange>,
    pub envelopes: Vec<ToolEnvelope>,
    pub approvals: Vec<ApprovalRecord>,
    pub call_map: Vec<CallMapping>,
    pub outputs: AgentOutputs,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// Lowercase hex BLAKE3 of the canonical JSON of every other field.
    pub integrity: String,
}

/// Why a bundle could not be made or loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BundleError {
    #[error("the bundle is not valid JSON (truncated or corrupted?): {0}")]
    NotJson(String),
    #[error("the bundle has no format_version")]
    MissingVersion,
    #[error("unknown bundle format_version {found}; this Glassbox reads version {FORMAT_VERSION}")]
    UnknownVersion { found: Value },
    #[error("the bundle does not match the format at `{path}`: {message}")]
    Shape { path: String, message: String },
    #[error("the bundle was modified: its contents no longer match its integrity hash")]
    Tampered,
    #[error("the run has not finished; only finished runs make a bundle")]
    NotFinished,
}

/// BLAKE3 of a bundle's canonical JSON without its `integrity` key.
pub(crate) fn integrity_of(mut value: Value) -> String {
    if let Value::Object(map) = &mut value {
        map.remove("integrity");
    }
    blake3::hash(canonical_json(&value).as_bytes())
        .to_hex()
        .to_string()
}

impl ReplayBundle {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a bundle is plain data and always serializes")
    }

    /// Loads and checks a bundle: JSON, version, shape, integrity.
    pub fn from_json(text: &str) -> Result<Self, BundleError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| BundleError::NotJson(e.to_string()))?;
        match value.get("format_version") {
            None => return Err(BundleError::MissingVersion),
            Some(v) if v.as_u64() == Some(u64::from(FORMAT_VERSION)) => {}
            Some(other) => {
                return Err(BundleError::UnknownVersion {
                    found: other.clone(),
                })
            }
        }
        let bundle: Self =
            serde_path_to_error::deserialize(&value).map_err(|e| BundleError::Shape {
                path: e.path().to_string(),
                message: e.inner().to_string(),
            })?;
        if integrity_of(value) != bundle.integrity {
            return Err(BundleError::Tampered);
        }
        Ok(bundle)
    }
}
