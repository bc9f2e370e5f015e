//! The Agent Node's configuration as saved in a workflow: prompts, the
//! enabled tool versions, policy and model provider. Plain data, shared with
//! the app's configuration panel; it never holds a secret value, only the
//! name of the secret to use.

use serde::{Deserialize, Serialize};

use crate::policy::Policy;
use crate::pricing::Price;

/// Which model provider an Agent Node talks to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProviderConfig {
    /// Deterministic turns from a script (offline default).
    Scripted {
        /// Shared, not copied, by the workflow, the node's run config and
        /// its bundle, and written from one text by each record that holds
        /// it: a long script is most of a workflow file (issue #30).
        #[cfg_attr(feature = "openapi", schema(value_type = Object))]
        script: crate::payload::Payload,
    },
    /// OpenAI Chat Completions or any compatible server (Ollama, vLLM, ...).
    Openai {
        base_url: String,
        model: String,
        /// Name of the secret holding the API key; none for local servers.
        #[serde(default)]
        api_key_secret: Option<String>,
        /// Overrides the shipped price of `model` (`crate::pricing`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        price: Option<Price>,
        /// Stream the answer: its text reaches the live timeline as it is
        /// written.
        #[serde(default, skip_serializing_if = "is_false")]
        stream: bool,
    },
    /// Azure OpenAI: Chat Completions on one deployment, keyed by the
    /// `api-key` header.
    Azure {
        /// The resource's endpoint, `https://<resource>.openai.azure.com`.
        endpoint: String,
        deployment: String,
        #[serde(default = "default_azure_api_version")]
        api_version: String,
        api_key_secret: String,
        /// The model behind the deployment, for the price table; none:
        /// the deployment's name is looked up.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        price: Option<Price>,
        #[serde(default, skip_serializing_if = "is_false")]
        stream: bool,
    },
    /// Anthropic Messages API.
    Anthropic {
        base_url: String,
        model: String,
        api_key_secret: String,
        /// Overrides the shipped price of `model` (`crate::pricing`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        price: Option<Price>,
        #[serde(default, skip_serializing_if = "is_false")]
        stream: bool,
    },
}

/// `deserialize_with` for a [`ProviderConfig`] field: a scripted provider
/// (`{"kind": "scripted", "script": ...}`) has its script read straight
/// into its [`Value`](serde_json::Value); any other is read as derived. The
/// derived reading of an internally tagged enum buffers the whole object
/// first (serde's `Content`) and builds the script from that copy, which
/// for a script of many turns was a tenth of a run's instructions and a
/// copy of every turn kept until the end of parsing (issue #30). The same
/// config either way. The native build only: the app keeps the derived
/// reading (and its size).
#[cfg(feature = "runtime")]
pub(crate) fn deserialize_provider<'de, D>(deserializer: D) -> Result<ProviderConfig, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let mut value = serde_json::Value::deserialize(deserializer)?;
    if let serde_json::Value::Object(map) = &mut value {
        let scripted = map.len() == 2
            && map.get("kind").and_then(serde_json::Value::as_str) == Some("scripted");
        if let Some(script) = scripted.then(|| map.remove("script")).flatten() {
            return Ok(ProviderConfig::Scripted {
                script: script.into(),
            });
        }
    }
    ProviderConfig::deserialize(value).map_err(serde::de::Error::custom)
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The Azure OpenAI data-plane API version used when a node names none.
pub const AZURE_API_VERSION: &str = "2024-10-21";

fn default_azure_api_version() -> String {
    AZURE_API_VERSION.to_string()
}

impl ProviderConfig {
    /// The name of the secret holding this provider's API key, if any.
    pub fn api_key_secret(&self) -> Option<&str> {
        match self {
            Self::Scripted { .. } => None,
            Self::Openai { api_key_secret, .. } => api_key_secret.as_deref(),
            Self::Azure { api_key_secret, .. } | Self::Anthropic { api_key_secret, .. } => {
                Some(api_key_secret)
            }
        }
    }

    /// The model a call is priced as and a connection test names.
    pub fn model_name(&self) -> &str {
        match self {
            Self::Scripted { .. } => "scripted",
            Self::Openai { model, .. } | Self::Anthropic { model, .. } => model,
            Self::Azure {
                model, deployment, ..
            } => model.as_deref().unwrap_or(deployment),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Self::Scripted { .. } => "scripted",
            Self::Openai { .. } => "openai",
            Self::Azure { .. } => "azure",
            Self::Anthropic { .. } => "anthropic",
        }
    }
}

/// Sampling parameters sent with every model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ModelParams {
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
}

fn default_max_tokens() -> u32 {
    1024
}

impl Default for ModelParams {
    fn default() -> Self {
        Self {
            temperature: None,
            max_tokens: default_max_tokens(),
        }
    }
}

/// Everything an Agent Node run needs besides its inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentConfig {
    #[serde(default)]
    pub system_prompt: String,
    /// The user prompt after the node's inputs were rendered into it.
    pub user_prompt: String,
    /// Enabled tools as exact `name@version` refs (one version per name).
    pub tools: Vec<String>,
    #[serde(default)]
    pub policy: Policy,
    #[cfg_attr(feature = "runtime", serde(deserialize_with = "deserialize_provider"))]
    pub provider: ProviderConfig,
    #[serde(default)]
    pub params: ModelParams,
    /// Written into `AgentOutputs.traces_url`.
    #[serde(default)]
    pub traces_url: Option<String>,
}

impl AgentConfig {
    /// The policy every tool call of the run is checked against: the node's,
    /// with its enabled tools as the allow-list.
    pub fn call_policy(&self) -> Policy {
        Policy {
            enabled_tools: self.tools.clone(),
            ..self.policy.clone()
        }
    }
}

#[cfg(all(test, feature = "runtime"))]
mod tests {
    use super::*;
    use serde_json::json;

    /// A provider field reads what the derived reading reads, and refuses
    /// what it refuses.
    #[test]
    fn a_provider_field_reads_as_derived() {
        #[derive(Debug, PartialEq, Deserialize)]
        struct Field {
            #[serde(deserialize_with = "deserialize_provider")]
            provider: ProviderConfig,
        }
        for provider in [
            json!({"kind": "scripted", "script": {"turns": [{"text": "hi"}]}}),
            json!({"script": [1, 2], "kind": "scripted"}),
            json!({"kind": "scripted", "script": null, "extra": true}),
            json!({"kind": "openai", "base_url": "http://127.0.0.1:1", "model": "m"}),
            json!({"kind": "azure", "endpoint": "e", "deployment": "d", "api_key_secret": "K"}),
            json!({"kind": "anthropic", "base_url": "b", "model": "m", "api_key_secret": "K", "stream": true}),
        ] {
            let text = json!({ "provider": provider }).to_string();
            let field: Field = serde_json::from_str(&text).expect(&text);
            let derived: ProviderConfig = serde_json::from_value(provider).expect("derived");
            assert_eq!(field.provider, derived);
        }
        for bad in [
            json!({"kind": "nope"}),
            json!({"script": {}}),
            json!({"kind": "scripted"}),
            json!({"kind": "openai", "model": "m"}),
            json!("scripted"),
        ] {
            let text = json!({ "provider": bad }).to_string();
            assert!(serde_json::from_str::<Field>(&text).is_err(), "{text}");
            assert!(serde_json::from_value::<ProviderConfig>(bad).is_err());
        }
    }
}
