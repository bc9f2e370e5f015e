//! The API keys a run's model providers need, resolved once at run start
//! through the executor's secret source (user -> workspace -> org, as the
//! tools' secrets are). A secret no scope has fails the run before any
//! node runs, with its name and the scopes searched; values stay in memory
//! and go only to the provider adapters.

use std::collections::BTreeMap;

use super::host::EngineServices;
use super::schedule::EngineError;
use crate::graph::{NodeKind, Workflow};
use crate::secrets::{resolve, SecretScope, SecretValue};

/// Secret name -> value, for every secret an Agent node's provider names.
pub(super) async fn provider_keys(
    services: &EngineServices,
    workflow: &Workflow,
) -> Result<BTreeMap<String, SecretValue>, EngineError> {
    let mut keys = BTreeMap::new();
    for node in &workflow.nodes {
        let NodeKind::Agent(config) = &node.kind else {
            continue;
        };
        let Some(name) = config.provider.api_key_secret() else {
            continue;
        };
        if keys.contains_key(name) {
            continue;
        }
        let owner = &services.owner;
        let names = [name.to_string()];
        match resolve(services.executor.secret_source().as_ref(), owner, &names).await {
            Ok(resolved) => {
                if let Some(value) = resolved.get(name) {
                    keys.insert(name.to_string(), value.clone());
                }
            }
            Err(_) => {
                let searched: Vec<&str> = SecretScope::ORDER
                    .iter()
                    .filter(|s| match s {
                        SecretScope::User => owner.user_id.is_some(),
                        SecretScope::Org => owner.org_id.is_some(),
                        SecretScope::Workspace => true,
                    })
                    .map(|s| match s {
                        SecretScope::User => "user",
                        SecretScope::Workspace => "workspace",
                        SecretScope::Org => "org",
                    })
                    .collect();
                return Err(EngineError::AuthRequired {
                    node: node.id.clone(),
                    secret: name.to_string(),
                    searched: searched.join(", "),
                });
            }
        }
    }
    Ok(keys)
}
