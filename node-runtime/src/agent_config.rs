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
        #[cfg_attr(feature = "runtime", serde(serialize_with = "crate::fast_json::value"))]
        script: serde_json::Value,
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
