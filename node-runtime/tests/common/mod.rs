//! Shared fixtures: test tools and an executor over a temporary blob store.

#![allow(dead_code)]

pub mod mock_http;

use std::sync::Arc;
use std::time::Duration;

use node_runtime::blob::FsBlobStore;
use node_runtime::call_id::CallIdAllocator;
use node_runtime::executor::{CallScope, Executor, ExecutorConfig, ToolCall};
use node_runtime::policy::{Policy, Usage};
use node_runtime::secrets::{MemorySecrets, SecretScope};
use node_runtime::tool::{RegisteredTool, Tool, ToolContext, ToolRegistry};
use node_runtime::tool_spec::{
    CachePolicy, RateLimit, SideEffects, ToolCategory, ToolMetadata, ToolSpec,
};
use node_runtime::{ErrorCode, ToolEnvelope, ToolError};
use serde_json::{json, Value};

/// A test tool whose behaviour is chosen by its name.
pub struct Probe {
    pub name: &'static str,
    pub metadata: ToolMetadata,
    pub output_schema: Value,
}

impl Probe {
    pub fn new(name: &'static str) -> Self {
        let mut metadata = ToolMetadata::new(ToolCategory::Utility);
        metadata.side_effects = SideEffects::None;
        Self {
            name,
            metadata,
            output_schema: json!({}),
        }
    }
}

impl Tool for Probe {
    type Input = Value;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.into(),
            version: "1.0.0".into(),
            description: format!("test tool {}", self.name),
            input_schema: json!({"type": "object"}),
            output_schema: self.output_schema.clone(),
            metadata: self.metadata.clone(),
        }
    }

    async fn execute(&self, input: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let secret = || {
            ctx.secrets
                .get("CANARY")
                .map(|s| s.expose().to_string())
                .unwrap_or_default()
        };
        match self.name {
            "noop" => Ok(json!({"ok": true})),
            "echo" => Ok(input),
            "sleep" => {
                let ms = input["ms"].as_u64().unwrap_or(100);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(json!({"slept_ms": ms}))
            }
            "panic" => panic!("tool exploded with {}", secret()),
            "leak" => Ok(json!({"token": secret(), "nested": [format!("Bearer {}", secret())]})),
            "leak_error" => Err(ToolError::new(
                ErrorCode::ProviderError,
                format!("upstream said: bad key {}", secret()),
            )
            .with_details(json!({"echo": secret()}))),
            "big" => {
                let len = input["len"].as_u64().unwrap_or(10) as usize;
                Ok(Value::String("x".repeat(len)))
            }
            "counter" => Ok(json!({"n": input["n"].clone()})),
            "bad_output" => Ok(json!({"count": "not a number"})),
            other => Err(ToolError::unknown(format!("unknown probe {other}"))),
        }
    }
}

pub const CANARY: &str = "canary-6f1d2c9e-secret-value";

pub struct Fixture {
    pub registry: ToolRegistry,
    pub executor: Arc<Executor>,
    pub blobs_dir: tempfile::TempDir,
    pub files_dir: tempfile::TempDir,
    pub ids: CallIdAllocator,
}

pub fn fixture_with(config: ExecutorConfig, secrets: MemorySecrets) -> Fixture {
    let mut registry = ToolRegistry::new();
    node_runtime::builtins::register_builtins(&mut registry).expect("builtins register");
    for name in ["noop", "echo", "sleep", "panic", "big", "counter"] {
        registry.register(Probe::new(name)).expect("register");
    }
    let mut leak = Probe::new("leak");
    leak.metadata.secrets = vec!["CANARY".into()];
    registry.register(leak).expect("register");
    let mut leak_error = Probe::new("leak_error");
    leak_error.metadata.secrets = vec!["CANARY".into()];
    registry.register(leak_error).expect("register");
    let mut limited = Probe::new("counter");
    limited.metadata.rate_limit = Some(RateLimit {
        requests: 2,
        per_seconds: 60,
    });
    registry
        .register(RenamedProbe(limited, "limited"))
        .expect("register");
    let mut ttl = Probe::new("counter");
    ttl.metadata.cache = CachePolicy::Ttl;
    ttl.metadata.cache_ttl_s = Some(1);
    registry
        .register(RenamedProbe(ttl, "ttl_counter"))
        .expect("register");
    let mut forever = Probe::new("counter");
    forever.metadata.cache = CachePolicy::Forever;
    registry
        .register(RenamedProbe(forever, "cached_counter"))
        .expect("register");
    let mut short = Probe::new("sleep");
    short.metadata.timeout_ms = 50;
    registry
        .register(RenamedProbe(short, "sleep_short"))
        .expect("register");
    let mut bad = Probe::new("bad_output");
    bad.output_schema = json!({"type": "object", "properties": {"count": {"type": "integer"}}});
    registry.register(bad).expect("register");

    let blobs_dir = tempfile::tempdir().expect("tmp");
    let files_dir = tempfile::tempdir().expect("tmp");
    let executor = Arc::new(Executor::new(
        config,
        Arc::new(secrets),
        Arc::new(FsBlobStore::new(blobs_dir.path())),
    ));
    Fixture {
        registry,
        executor,
        blobs_dir,
        files_dir,
        ids: CallIdAllocator::new(),
    }
}

pub fn fixture() -> Fixture {
    let mut secrets = MemorySecrets::new();
    secrets.set(SecretScope::Workspace, "ws", "CANARY", CANARY);
    fixture_with(ExecutorConfig::default(), secrets)
}

/// A probe registered under another name (behaviour from the inner name).
pub struct RenamedProbe(pub Probe, pub &'static str);

impl Tool for RenamedProbe {
    type Input = Value;
    type Output = Value;
    fn spec(&self) -> ToolSpec {
        let mut s = self.0.spec();
        s.name = self.1.into();
        s
    }
    async fn execute(&self, input: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        self.0.execute(input, ctx).await
    }
}

impl Fixture {
    pub fn tool(&self, name: &str) -> Arc<RegisteredTool> {
        self.registry.get(name, "1.0.0").expect("registered")
    }

    pub fn call(&mut self, name: &str, input: Value) -> ToolCall {
        let tool = self.tool(name);
        let input = node_runtime::Payload::from(input);
        let call_id = self.ids.next(&tool.spec.name, &tool.spec.version, &input);
        ToolCall {
            call_id,
            tool,
            input,
        }
    }

    /// A scope in workspace `ws` that enables every registered tool.
    pub fn scope(&self) -> CallScope {
        let policy = Policy {
            enabled_tools: self.registry.all().map(|t| t.spec.name.clone()).collect(),
            ..Policy::default()
        };
        let mut scope = CallScope::new("ws", policy);
        let mut env = (*scope.env).clone();
        env.files_root = Some(self.files_dir.path().to_path_buf());
        scope.env = Arc::new(env);
        scope
    }

    /// Runs one call in a fresh scope in which a human approved exactly it.
    pub async fn run_approved(&mut self, name: &str, input: Value) -> ToolEnvelope {
        let call = self.call(name, input);
        let mut scope = self.scope();
        scope.approved.insert(call.call_id.clone());
        self.executor
            .execute(Arc::new(scope), call, Usage::default())
            .await
    }

    pub async fn run(&mut self, scope: &Arc<CallScope>, name: &str, input: Value) -> ToolEnvelope {
        let call = self.call(name, input);
        self.executor
            .execute(scope.clone(), call, Usage::default())
            .await
    }
}

pub fn code(envelope: &ToolEnvelope) -> Option<ErrorCode> {
    envelope.error.as_ref().map(|e| e.code)
}
