//! `POST /api/v1/providers/test`: one cheap call to an Agent node's model
//! provider, made by the server with the caller's secrets, to tell whether
//! the configuration works before a run depends on it.

use serde::{Deserialize, Serialize};

use crate::agent_config::ProviderConfig;
use crate::chat::TokenUsage;

/// Body of `POST /api/v1/providers/test`: the provider as an Agent node
/// configures it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ProviderTest {
    pub provider: ProviderConfig,
}

/// The answer: whether the provider answered, and in words what happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProviderTestResult {
    pub ok: bool,
    /// `openai`, `azure`, `anthropic` or `scripted`.
    pub provider: String,
    /// The model (or Azure deployment) that was asked.
    pub model: String,
    /// "gpt-4o-mini answered in 312 ms", or the provider's reason: "the key
    /// in secret OPENAI_API_KEY was refused (401): Incorrect API key".
    pub message: String,
    /// Tokens the test call used; null when it failed.
    #[serde(default)]
    pub usage: Option<TokenUsage>,
    /// Milliseconds the call took.
    pub latency_ms: f64,
}
