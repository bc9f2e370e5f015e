//! Stage 4: the result cache.
//!
//! Only tools with side effects `none` or `reads` and a cache policy other
//! than `none`. Key = BLAKE3(workspace, tool@version, canonical input), so
//! a result is never shared across workspaces. Errors are never cached;
//! `ttl` entries expire after `cache_ttl_s`. A hit answers with `cached: true`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use super::{CallState, Next, Stage, StageOutput, StageResult};
use crate::call_id::canonical_of;
use crate::tool_spec::{CachePolicy, SideEffects};

struct Entry {
    output: StageOutput,
    expires: Option<Instant>,
}

pub struct CacheStage {
    entries: moka::sync::Cache<[u8; 32], Arc<Entry>>,
}

impl CacheStage {
    pub fn new(capacity: u64) -> Self {
        Self {
            entries: moka::sync::Cache::new(capacity),
        }
    }
}

/// The cache key of a call.
pub fn cache_key(workspace_id: &str, tool_key: &str, input: &crate::payload::Payload) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"glassbox.cache.v1\0");
    h.update(workspace_id.as_bytes());
    h.update(&[0]);
    h.update(tool_key.as_bytes());
    h.update(&[0]);
    h.update(canonical_of(input).as_bytes());
    *h.finalize().as_bytes()
}

impl Stage for CacheStage {
    fn handle<'a>(&'a self, state: CallState, next: Next<'a>) -> BoxFuture<'a, StageResult> {
        Box::pin(async move {
            let meta = &state.call.tool.spec.metadata;
            let cacheable =
                meta.cache != CachePolicy::None && state.side_effects <= SideEffects::Reads;
            if !cacheable {
                return next.run(state).await;
            }
            let ttl = match meta.cache {
                CachePolicy::Ttl => Some(Duration::from_secs(meta.cache_ttl_s.unwrap_or(300))),
                _ => None,
            };
            let key = cache_key(
                &state.scope.owner.workspace_id,
                &state.call.tool.spec.key(),
                &state.call.input,
            );
            if let Some(entry) = self.entries.get(&key) {
                if entry.expires.is_none_or(|at| Instant::now() < at) {
                    let mut out = entry.output.clone();
                    out.cached = true;
                    return Ok(out);
                }
                self.entries.invalidate(&key);
            }
            let result = next.run(state).await;
            if let Ok(out) = &result {
                let expires = ttl.map(|t| Instant::now() + t);
                self.entries.insert(
                    key,
                    Arc::new(Entry {
                        output: out.clone(),
                        expires,
                    }),
                );
            }
            result
        })
    }
}
