//! The outside world's side of runs: how model providers reach the
//! network (the egress guard's allow-list), and the tests of an Agent
//! node's provider and of a workspace connection, with the caller's
//! secrets resolved as a run resolves them.

use node_runtime::agent_config::ProviderConfig;
use node_runtime::model::{Egress, ModelEnv};
use node_runtime::secrets::{resolve, SecretOwner};
use node_runtime::wire::ProviderTestResult;

use super::Runs;

impl Runs {
    /// How every provider call of this server reaches the network: loopback
    /// and private hosts (a local Ollama or vLLM) only when allow-listed,
    /// like `http_request`.
    pub(super) fn model_env(&self) -> ModelEnv {
        ModelEnv {
            egress: Egress::with_allow_hosts(self.http_allow_hosts.clone()),
            ..Default::default()
        }
    }

    /// One cheap call to `provider` with `owner`'s secrets (user ->
    /// workspace -> org). A secret no scope has is answered in words,
    /// without any call.
    pub async fn test_provider(
        &self,
        owner: &SecretOwner,
        provider: &ProviderConfig,
    ) -> ProviderTestResult {
        let key = match provider.api_key_secret() {
            None => None,
            Some(name) => {
                let names = [name.to_string()];
                match resolve(self.executor.secret_source().as_ref(), owner, &names).await {
                    Ok(found) => found.get(name).cloned(),
                    Err(_) => {
                        return ProviderTestResult {
                            ok: false,
                            provider: provider.kind().into(),
                            model: provider.model_name().into(),
                            message: format!(
                                "AUTH_REQUIRED: no secret named {name} in your user, this \
                                 workspace or its organization; set it in Settings -> Secrets"
                            ),
                            usage: None,
                            latency_ms: 0.0,
                        }
                    }
                }
            }
        };
        node_runtime::model::check::test_connection(provider, key, &self.model_env()).await
    }
}

impl Runs {
    /// Tests connection `row` with `owner`'s secrets.
    pub async fn test_connection(
        &self,
        owner: &SecretOwner,
        row: &crate::storage::ConnectionRow,
    ) -> node_runtime::wire::ConnectionTestResult {
        let files = self.data_dir.join("files").join(&owner.workspace_id);
        crate::connections::test(
            row,
            self.executor.secret_source().as_ref(),
            owner,
            &files,
            (&self.mcp, &self.store),
        )
        .await
    }
}
