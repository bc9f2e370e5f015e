//! Stage 3: per-workspace rate limits declared by each tool version
//! (token buckets from the `governor` crate).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde_json::json;

use super::{CallState, Next, Stage, StageResult};
use crate::error::{ErrorCode, ToolError};
use crate::tool_spec::RateLimit;

#[derive(Default)]
pub struct RateLimitStage {
    /// One keyed limiter (key: workspace) per tool@version.
    limiters: Mutex<HashMap<String, Arc<DefaultKeyedRateLimiter<String>>>>,
}

fn quota(limit: RateLimit) -> Option<Quota> {
    let burst = NonZeroU32::new(limit.requests)?;
    let period = Duration::from_secs(u64::from(limit.per_seconds.max(1))) / limit.requests;
    Quota::with_period(period).map(|q| q.allow_burst(burst))
}

impl RateLimitStage {
    fn limiter(&self, key: &str, limit: RateLimit) -> Option<Arc<DefaultKeyedRateLimiter<String>>> {
        let mut map = self.limiters.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = map.get(key) {
            return Some(l.clone());
        }
        let limiter = Arc::new(RateLimiter::keyed(quota(limit)?));
        map.insert(key.to_string(), limiter.clone());
        Some(limiter)
    }
}

impl Stage for RateLimitStage {
    fn handle<'a>(&'a self, state: CallState, next: Next<'a>) -> BoxFuture<'a, StageResult> {
        Box::pin(async move {
            if let Some(limit) = state.call.tool.spec.metadata.rate_limit {
                let key = state.call.tool.spec.key();
                if let Some(limiter) = self.limiter(&key, limit) {
                    if let Err(not_until) = limiter.check_key(&state.scope.owner.workspace_id) {
                        let wait = not_until.wait_time_from(DefaultClock::default().now());
                        let retry_after = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                        return Err(ToolError::new(
                            ErrorCode::RateLimit,
                            format!(
                                "rate limit of {key} ({} per {} s) exceeded; retry in {retry_after} s",
                                limit.requests, limit.per_seconds
                            ),
                        )
                        .with_details(json!({ "requests": limit.requests, "per_seconds": limit.per_seconds }))
                        .with_retry_after(retry_after.max(1)));
                    }
                }
            }
            next.run(state).await
        })
    }
}
