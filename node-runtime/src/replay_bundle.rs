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

#[cfg(feature = "runtime")]
use std::collections::HashMap;

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

/// A value's canonical JSON text.
#[cfg(feature = "runtime")] // for `ReplayBundle::of_finished`
fn canonical_text<T: Serialize>(value: &T) -> Result<String, serde_json::Error> {
    // Straight from the value where it can (no `Value` tree), else through one.
    match crate::canonical_ser::to_string(value) {
        Some(text) => Ok(text),
        None => Ok(canonical_json(&serde_json::to_value(value)?)),
    }
}

/// Canonical JSON written into a BLAKE3 hasher piece by piece, through a
/// buffer: BLAKE3 hashes a long input many chunks at a time (SIMD lanes),
/// but short updates one 64-byte block at a time, several times slower;
/// the pieces here are a few bytes to a few KB (issue #30: this hash was
/// 10 us of a sequential 1 KB call's 125).
#[cfg(feature = "runtime")] // for `ReplayBundle::of_finished`
struct CanonicalHasher {
    hasher: blake3::Hasher,
    buffer: Vec<u8>,
    /// Whether the open object has had a key yet.
    first: bool,
}

/// How much canonical text [`CanonicalHasher`] gathers before hashing it:
/// 64 BLAKE3 chunks, enough for its widest SIMD path.
#[cfg(feature = "runtime")]
const HASH_BUFFER: usize = 64 * 1024;

#[cfg(feature = "runtime")]
impl CanonicalHasher {
    fn new() -> Self {
        Self {
            hasher: blake3::Hasher::new(),
            buffer: Vec::with_capacity(HASH_BUFFER),
            first: true,
        }
    }

    fn raw(&mut self, text: &str) {
        if text.len() >= HASH_BUFFER {
            // Long enough by itself: hashed in place, not copied.
            self.hasher.update(&self.buffer);
            self.buffer.clear();
            self.hasher.update(text.as_bytes());
            return;
        }
        self.buffer.extend_from_slice(text.as_bytes());
        if self.buffer.len() >= HASH_BUFFER {
            self.hasher.update(&self.buffer);
            self.buffer.clear();
        }
    }

    fn finalize(mut self) -> blake3::Hash {
        self.hasher.update(&self.buffer);
        self.hasher.finalize()
    }

    fn value<T: Serialize>(&mut self, value: &T) -> Result<(), serde_json::Error> {
        self.raw(&canonical_text(value)?);
        Ok(())
    }

    /// `"key":` of the open object; keys must come in RFC 8785 order.
    fn key(&mut self, key: &str) {
        let open = std::mem::take(&mut self.first);
        self.raw(if open { "{\"" } else { ",\"" });
        self.raw(key);
        self.raw("\":");
    }

    /// A list one element at a time: the canonical text of a list is its
    /// elements' canonical texts, comma-separated, in brackets.
    fn list<T: Serialize>(&mut self, key: &str, items: &[T]) -> Result<(), serde_json::Error> {
        self.list_with(key, items, |out, item| out.value(item))
    }

    /// [`Self::list`] with each element written by `write`.
    fn list_with<'a, T>(
        &mut self,
        key: &str,
        items: &'a [T],
        mut write: impl FnMut(&mut Self, &'a T) -> Result<(), serde_json::Error>,
    ) -> Result<(), serde_json::Error> {
        self.key(key);
        self.raw("[");
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.raw(",");
            }
            write(self, item)?;
        }
        self.raw("]");
        Ok(())
    }

    fn field<T: Serialize>(&mut self, key: &str, value: &T) -> Result<(), serde_json::Error> {
        self.key(key);
        self.value(value)
    }

    /// A map one entry at a time when its keys are ASCII (then `BTreeMap`
    /// order is RFC 8785 order), each value written by `write`; else whole.
    fn map<T: Serialize>(
        &mut self,
        key: &str,
        map: &std::collections::BTreeMap<String, T>,
        mut write: impl FnMut(&mut Self, &T) -> Result<(), serde_json::Error>,
    ) -> Result<(), serde_json::Error> {
        if !map.keys().all(|k| k.is_ascii()) {
            return self.field(key, map);
        }
        self.key(key);
        self.raw("{");
        for (i, (k, v)) in map.iter().enumerate() {
            if i > 0 {
                self.raw(",");
            }
            self.raw(&serde_json::to_string(k)?);
            self.raw(":");
            write(self, v)?;
        }
        self.raw("}");
        Ok(())
    }

    /// A non-empty object under `key`, its fields written by `fields`.
    fn object(
        &mut self,
        key: &str,
        fields: impl FnOnce(&mut Self) -> Result<(), serde_json::Error>,
    ) -> Result<(), serde_json::Error> {
        self.key(key);
        self.first = true;
        fields(self)?;
        self.raw("}");
        self.first = false;
        Ok(())
    }
}

/// [`integrity_of`] the bundle's `Value`, hashed as it is written: one
/// element of its lists at a time, so the end of a long run no longer
/// holds the whole bundle again as a `Value` and as one text (issue #30:
/// that was the largest allocation of a run's end); it keeps only the
/// envelopes' canonical texts, to write them again where the outputs
/// repeat them. The same bytes; a test checks it.
#[cfg(feature = "runtime")]
pub(crate) fn integrity_of_bundle(bundle: &ReplayBundle) -> Result<String, serde_json::Error> {
    // Every field by name, so a new field does not compile until it is
    // hashed here too.
    let ReplayBundle {
        format_version,
        run_id,
        config,
        tool_definitions,
        tool_schemas,
        exchanges,
        envelopes,
        approvals,
        call_map,
        outputs,
        started_at,
        finished_at,
        integrity: _,
    } = bundle;
    let mut out = CanonicalHasher::new();
    // RFC 8785 order: these keys are ASCII, so byte order.
    out.list("approvals", approvals)?;
    out.list("call_map", call_map)?;
    out.field("config", config)?;
    // The envelopes' texts, written again where the outputs repeat an
    // envelope (`tools_by_id`, `last_tool`) instead of being made again.
    let mut texts: HashMap<&str, (&ToolEnvelope, String)> = HashMap::with_capacity(envelopes.len());
    out.list_with("envelopes", envelopes, |out, envelope| {
        let text = canonical_text(envelope)?;
        out.raw(&text);
        texts.insert(&envelope.call_id, (envelope, text));
        Ok(())
    })?;
    let envelope = |out: &mut CanonicalHasher, e: &ToolEnvelope| match texts.get(e.call_id.as_str())
    {
        Some((same, text)) if *same == e => {
            out.raw(text);
            Ok(())
        }
        _ => out.value(e),
    };
    out.list("exchanges", exchanges)?;
    out.field("finished_at", finished_at)?;
    out.field("format_version", format_version)?;
    let AgentOutputs {
        response,
        tools_by_id,
        tool_order,
        last_tool,
        traces_url,
        limit_reached,
        usage,
    } = outputs;
    out.object("outputs", |out| {
        out.key("last_tool");
        match last_tool {
            Some(e) => envelope(out, e)?,
            None => out.raw("null"),
        }
        out.field("limit_reached", limit_reached)?;
        out.field("response", response)?;
        out.field("tool_order", tool_order)?;
        out.map("tools_by_id", tools_by_id, envelope)?;
        out.field("traces_url", traces_url)?;
        out.field("usage", usage)
    })?;
    out.field("run_id", run_id)?;
    out.field("started_at", started_at)?;
    out.list("tool_definitions", tool_definitions)?;
    out.list("tool_schemas", tool_schemas)?;
    out.raw("}");
    Ok(out.finalize().to_hex().to_string())
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
