//! What the engine needs from its host: the model factory, durable
//! checkpoints, the approval gate, the pin history, and the bundle of them
//! all ([`EngineServices`]), with the plain implementations tests and the
//! CLI use ([`PlainModels`], [`ApproveAll`], [`MemoryPinHistory`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::Value;

use crate::agent::approval::{ApprovalRequest, Decision};
use crate::agent::{AgentRun, AgentRuntime, WriteJournal};
use crate::agent_config::ProviderConfig;
use crate::executor::Executor;
use crate::graph::record::NodeRecord;
use crate::model::{ChatModel, ModelError};
use crate::secrets::{SecretOwner, SecretValue};
use crate::tool::{ToolEnv, ToolRegistry};

/// Builds the model an Agent node's provider config names (the host
/// resolves the API key secret).
pub trait ModelFactory: Send + Sync {
    /// `api_key`: the value of the secret `config` names, resolved by the
    /// engine at run start (user -> workspace -> org), if it names one.
    fn model(
        &self,
        config: &ProviderConfig,
        api_key: Option<SecretValue>,
    ) -> Result<Arc<dyn ChatModel>, ModelError>;
}

/// Durable progress of a run (see the module docs). `agent_suspended`
/// returns once the host has stored the state; `node_ended` may return as
/// soon as the record is queued in order (a lost node record only means the
/// node runs again on resume).
pub trait Checkpoints: Send + Sync {
    fn node_ended<'a>(&'a self, record: &'a NodeRecord) -> BoxFuture<'a, ()>;
    fn agent_suspended<'a>(&'a self, node_id: &'a str, run: &'a AgentRun) -> BoxFuture<'a, ()>;
}

/// What an interrupted run had done, from its [`Checkpoints`].
#[derive(Debug, Clone, Default)]
pub struct ResumeState {
    /// Nodes that had ended.
    pub records: BTreeMap<String, NodeRecord>,
    /// Agent nodes suspended for approval, by node id.
    pub agents: HashMap<String, AgentRun>,
}

/// Waits for human decisions on pending writes.
pub trait ApprovalGate: Send + Sync {
    fn decide<'a>(
        &'a self,
        node_id: &'a str,
        requests: Vec<ApprovalRequest>,
    ) -> BoxFuture<'a, Vec<(String, Decision)>>;
}

/// Where `stale_last_success` finds values from earlier runs.
pub trait PinHistory: Send + Sync {
    fn last_resolved(&self, workflow_id: &str, node_id: &str, pin: &str) -> Option<Value>;
    fn record(&self, workflow_id: &str, node_id: &str, pin: &str, value: &Value);
}

/// An in-memory pin history.
#[derive(Default)]
pub struct MemoryPinHistory(Mutex<HashMap<(String, String, String), Value>>);

impl PinHistory for MemoryPinHistory {
    fn last_resolved(&self, workflow_id: &str, node_id: &str, pin: &str) -> Option<Value> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(workflow_id.into(), node_id.into(), pin.into()))
            .cloned()
    }
    fn record(&self, workflow_id: &str, node_id: &str, pin: &str, value: &Value) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(
            (workflow_id.into(), node_id.into(), pin.into()),
            value.clone(),
        );
    }
}

/// Everything the engine needs from its host.
pub struct EngineServices {
    pub registry: Arc<ToolRegistry>,
    pub executor: Arc<Executor>,
    pub agents: Arc<AgentRuntime>,
    pub models: Arc<dyn ModelFactory>,
    pub approvals: Arc<dyn ApprovalGate>,
    pub pin_history: Arc<dyn PinHistory>,
    pub owner: SecretOwner,
    pub env: Arc<ToolEnv>,
    /// `traces_url` template; `{run_id}` is replaced.
    pub traces_url: Option<String>,
    /// Durable progress, for hosts that resume runs after a restart.
    pub checkpoints: Option<Arc<dyn Checkpoints>>,
    /// Intent and result records of approved writes.
    pub journal: Option<Arc<dyn WriteJournal>>,
    /// A fork's origin recording (see `fork`); None for any other run.
    pub fork: Option<Arc<super::fork::ForkRecording>>,
}

/// A model factory with no allow-listed hosts: the scripted provider and
/// providers on public addresses.
pub struct PlainModels;

impl ModelFactory for PlainModels {
    fn model(
        &self,
        config: &ProviderConfig,
        api_key: Option<SecretValue>,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        crate::model::build_model(config, api_key, &crate::model::ModelEnv::default())
    }
}

/// The host's model factory: how providers reach the network (retries, the
/// egress guard's allow-list of loopback and private hosts).
pub struct ProviderModels(pub crate::model::ModelEnv);

impl ModelFactory for ProviderModels {
    fn model(
        &self,
        config: &ProviderConfig,
        api_key: Option<SecretValue>,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        crate::model::build_model(config, api_key, &self.0)
    }
}

/// Approves everything (tests and trusted offline examples only).
pub struct ApproveAll;

impl ApprovalGate for ApproveAll {
    fn decide<'a>(
        &'a self,
        _node_id: &'a str,
        requests: Vec<ApprovalRequest>,
    ) -> BoxFuture<'a, Vec<(String, Decision)>> {
        Box::pin(async move {
            requests
                .into_iter()
                .map(|r| (r.token, Decision::Approve))
                .collect()
        })
    }
}
