//! The tool executor: the only way a tool runs.
//!
//! A call passes through a stack of stages, tower-style: each stage gets the
//! call and a [`Next`] for the rest of the stack, and may answer itself
//! (an error, a cache hit) or call `next` and work on what comes back.
//!
//! # Order
//!
//! The stack is built once, in [`Executor::new`], outermost first:
//!
//! | # | stage (module)        | on the way in                          | on the way out                   |
//! |---|-----------------------|----------------------------------------|----------------------------------|
//! | 1 | `policy`              | allow-list, lifecycle, limits, ceiling, approval | -                      |
//! | 2 | `validate`            | input against `input_schema`           | -                                |
//! | 3 | `rate_limit`          | per workspace and tool@version         | -                                |
//! | 4 | `cache`               | hit: answer with `cached: true`        | store successes                  |
//! | 5 | `output_cap`          | -                                      | oversized output -> blob + preview |
//! | 6 | `secrets`             | resolve user -> workspace -> org       | redact values in output and error |
//! | 7 | `timeout`             | deadline and cancellation              | -                                |
//! | 8 | `output_validation`   | -                                      | output against `output_schema`   |
//! | 9 | `run`                 | calls the tool, catches panics         | -                                |
//!
//! Read downwards for the way in and upwards for the way out: policy ->
//! input validation -> rate limit -> cache -> secret resolution ->
//! timeout/cancellation -> run -> output validation -> redaction -> output
//! cap -> envelope. A cache hit therefore returns an output that was
//! validated, redacted and capped when it was stored.
//!
//! Every failure is a [`ToolError`] with its stable code inside the
//! envelope; the executor never fails as a whole and never goes down with a
//! tool.

mod cache;
mod output_cap;
mod output_validation;
mod policy;
mod rate_limit;
mod run;
mod secrets;
mod timeout;
mod validate;

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{SecondsFormat, Utc};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::blob::BlobStore;
use crate::envelope::{Attachment, ToolEnvelope};
use crate::error::ToolError;
use crate::payload::Payload;
use crate::policy::{Policy, Usage};
use crate::secrets::{ResolvedSecrets, SecretOwner, SecretSource};
use crate::tool::{RegisteredTool, ToolEnv};
use crate::tool_spec::SideEffects;

/// Executor-wide settings.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// Outputs whose JSON is larger are stored as a blob and previewed.
    pub max_output_bytes: usize,
    /// At most this many calls of one batch run at once. 64 by default:
    /// tool calls wait on the network or a database far more than they use
    /// a core (a reused HTTP client makes a call cheap), so a model's
    /// fan-out of a few dozen calls runs as one wave; per-tool rate limits
    /// still apply, and the policy's `max_tool_calls` bounds a run.
    pub max_concurrency: usize,
    /// Entries kept by the result cache.
    pub cache_capacity: u64,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        Self {
            max_output_bytes: 2 * 1024 * 1024,
            max_concurrency: crate::policy::MAX_PARALLEL_CALLS as usize,
            cache_capacity: 10_000,
        }
    }
}

/// Everything calls of one Agent Node run share.
pub struct CallScope {
    pub owner: SecretOwner,
    pub policy: Policy,
    /// Call ids a human approved (writes need one).
    pub approved: HashSet<String>,
    /// Cancelled when the run is aborted.
    pub cancel: CancellationToken,
    pub env: Arc<ToolEnv>,
    /// Where the calls' progress reports go (the agent's live events).
    pub progress: Option<tokio::sync::mpsc::UnboundedSender<crate::tool::context::ToolProgress>>,
}

impl CallScope {
    /// A scope for `workspace_id` with this policy and no approvals.
    pub fn new(workspace_id: impl Into<String>, policy: Policy) -> Self {
        Self {
            owner: SecretOwner {
                user_id: None,
                workspace_id: workspace_id.into(),
                org_id: None,
            },
            policy,
            approved: HashSet::new(),
            cancel: CancellationToken::new(),
            env: Arc::new(ToolEnv::default()),
            progress: None,
        }
    }
}

/// One call to execute.
#[derive(Clone)]
pub struct ToolCall {
    pub call_id: String,
    pub tool: Arc<RegisteredTool>,
    pub input: Payload,
}

/// The state a call carries down the stack.
pub struct CallState {
    pub call: ToolCall,
    pub scope: Arc<CallScope>,
    /// Usage before this call (a batch counts its earlier calls).
    pub usage: Usage,
    pub side_effects: SideEffects,
    /// Filled by the `secrets` stage.
    pub secrets: ResolvedSecrets,
    /// Cancelled on timeout or run abort; handed to the tool.
    pub cancel: CancellationToken,
}

/// What comes back up the stack on success.
#[derive(Debug, Clone, PartialEq)]
pub struct StageOutput {
    pub output: Value,
    pub truncated: bool,
    pub attachments: Vec<Attachment>,
    pub cached: bool,
}

impl StageOutput {
    pub fn plain(output: Value) -> Self {
        Self {
            output,
            truncated: false,
            attachments: Vec::new(),
            cached: false,
        }
    }
}

pub type StageResult = Result<StageOutput, ToolError>;

/// One layer of the executor.
pub trait Stage: Send + Sync {
    fn handle<'a>(&'a self, state: CallState, next: Next<'a>) -> BoxFuture<'a, StageResult>;
}

/// The rest of the stack below a stage.
pub struct Next<'a> {
    rest: &'a [Box<dyn Stage>],
}

impl<'a> Next<'a> {
    pub fn run(self, state: CallState) -> BoxFuture<'a, StageResult> {
        match self.rest.split_first() {
            Some((stage, rest)) => stage.handle(state, Next { rest }),
            None => Box::pin(async { Err(ToolError::unknown("executor stack has no run stage")) }),
        }
    }
}

/// Runs tool calls through the stage stack and returns envelopes.
pub struct Executor {
    stages: Vec<Box<dyn Stage>>,
    config: ExecutorConfig,
    secrets: Arc<dyn SecretSource>,
}

impl Executor {
    /// Builds the stack in the order documented at the top of this module.
    pub fn new(
        config: ExecutorConfig,
        secrets: Arc<dyn SecretSource>,
        blobs: Arc<dyn BlobStore>,
    ) -> Self {
        let stages: Vec<Box<dyn Stage>> = vec![
            Box::new(policy::PolicyStage),
            Box::new(validate::InputValidation),
            Box::new(rate_limit::RateLimitStage::default()),
            Box::new(cache::CacheStage::new(config.cache_capacity)),
            Box::new(output_cap::OutputCap::new(config.max_output_bytes, blobs)),
            Box::new(secrets::SecretsStage::new(secrets.clone())),
            Box::new(timeout::TimeoutStage),
            Box::new(output_validation::OutputValidation),
            Box::new(run::RunStage),
        ];
        Self {
            stages,
            config,
            secrets,
        }
    }

    pub fn config(&self) -> &ExecutorConfig {
        &self.config
    }

    /// Where the secrets stage looks secrets up; the engine resolves model
    /// providers' API keys through the same source.
    pub fn secret_source(&self) -> &Arc<dyn SecretSource> {
        &self.secrets
    }

    /// Executes one call; `usage` counts what the run spent before it.
    pub async fn execute(
        &self,
        scope: Arc<CallScope>,
        call: ToolCall,
        usage: Usage,
    ) -> ToolEnvelope {
        let t_start = now_rfc3339();
        let side_effects = call.tool.side_effects_for(&call.input);
        let cancel = scope.cancel.child_token();
        let envelope_base = (
            call.call_id.clone(),
            call.tool.spec.name.clone(),
            call.tool.spec.version.clone(),
            call.input.clone(),
        );
        let span = tracing::info_span!(
            "tool_call",
            call_id = %envelope_base.0,
            tool = %call.tool.spec.key(),
            cached = tracing::field::Empty,
            error = tracing::field::Empty,
        );
        let state = CallState {
            call,
            scope,
            usage,
            side_effects,
            secrets: ResolvedSecrets::default(),
            cancel,
        };
        let result = Next { rest: &self.stages }
            .run(state)
            .instrument(span.clone())
            .await;
        match &result {
            Ok(out) => span.record("cached", out.cached),
            Err(e) => span.record("error", e.code.as_str()),
        };
        let t_end = now_rfc3339();
        let (call_id, name, version, input) = envelope_base;
        match result {
            Ok(out) => ToolEnvelope {
                call_id,
                name,
                version,
                input,
                output: out.output.into(),
                error: None,
                t_start,
                t_end,
                cached: out.cached,
                truncated: out.truncated,
                attachments: out.attachments,
                replayed: false,
            },
            Err(error) => {
                ToolEnvelope::failed(call_id, name, version, input, error, t_start, t_end)
            }
        }
    }

    /// Executes the calls of one model turn concurrently (at most
    /// `max_concurrency`, and the policy's `max_parallel_calls`, at a time) and returns their envelopes in the
    /// order given. A slow, failing or panicking call never delays or
    /// corrupts the others; cancelling `scope.cancel` ends calls in flight.
    pub async fn execute_batch(
        self: &Arc<Self>,
        scope: Arc<CallScope>,
        mut calls: Vec<ToolCall>,
        usage: Usage,
    ) -> Vec<ToolEnvelope> {
        // One call (the common turn) runs on the caller's task: a spawned
        // task would cost a wake-up of another worker thread and a hand-off
        // back, about a sixth of a sequential call's time unconfined (issue
        // #30). A panic in the executor's own code still becomes the call's
        // UNKNOWN envelope, as from a spawned task; cancellation is the
        // caller dropping this future, which drops the call's.
        if calls.len() == 1 {
            if let Some(call) = calls.pop() {
                let fallback = (
                    call.call_id.clone(),
                    call.tool.spec.name.clone(),
                    call.tool.spec.version.clone(),
                    call.input.clone(),
                );
                let run = std::panic::AssertUnwindSafe(self.execute(scope, call, usage));
                let envelope = match futures::FutureExt::catch_unwind(run).await {
                    Ok(envelope) => envelope,
                    Err(panic) => {
                        let (call_id, name, version, input) = fallback;
                        let message = run::panic_message(panic.as_ref());
                        error_envelope(
                            call_id,
                            name,
                            version,
                            input,
                            ToolError::unknown(format!("tool call task failed: {message}")),
                        )
                    }
                };
                return vec![envelope];
            }
        }
        // The executor's cap, lowered by the node's policy.
        let parallel = self
            .config
            .max_concurrency
            .min(scope.policy.max_parallel_calls as usize)
            .max(1);
        let semaphore = Arc::new(tokio::sync::Semaphore::new(parallel));
        let mut handles = Vec::with_capacity(calls.len());
        for (i, call) in calls.into_iter().enumerate() {
            let this = self.clone();
            let scope = scope.clone();
            let semaphore = semaphore.clone();
            let fallback = (
                call.call_id.clone(),
                call.tool.spec.name.clone(),
                call.tool.spec.version.clone(),
                call.input.clone(),
            );
            let usage = Usage {
                tool_calls: usage.tool_calls + i as u32,
                ..usage
            };
            // The call's span is a child of the caller's (the agent iteration).
            let handle = tokio::spawn(
                async move {
                    // The semaphore is never closed, so acquire cannot fail.
                    let _permit = semaphore.acquire_owned().await.ok();
                    this.execute(scope, call, usage).await
                }
                .in_current_span(),
            );
            handles.push((AbortOnDrop(handle), fallback));
        }
        let mut envelopes = Vec::with_capacity(handles.len());
        for (mut handle, (call_id, name, version, input)) in handles {
            let envelope = match (&mut handle.0).await {
                Ok(envelope) => envelope,
                // `execute` catches tool panics itself; this covers a panic
                // in the executor's own code or an aborted task.
                Err(join_error) => error_envelope(
                    call_id,
                    name,
                    version,
                    input,
                    ToolError::unknown(format!("tool call task failed: {join_error}")),
                ),
            };
            envelopes.push(envelope);
        }
        envelopes
    }
}

/// Aborts the task if the batch future is dropped (run aborted).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// An envelope for a call that never reached a tool (e.g. the model named a
/// tool that does not exist).
pub fn error_envelope(
    call_id: String,
    name: String,
    version: String,
    input: impl Into<Payload>,
    error: ToolError,
) -> ToolEnvelope {
    let now = now_rfc3339();
    ToolEnvelope::failed(call_id, name, version, input, error, now.clone(), now)
}

/// RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}
