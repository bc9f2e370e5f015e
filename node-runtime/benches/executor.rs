//! Executor benchmarks (issue 3 targets):
//! - `hot_path/*`: canonicalize + call id hash + validate with the cached
//!   validator, at 100 B, 1 KB and 10 KB of input (target <= 5 us at 1 KB);
//! - `executor_overhead/noop`: a no-op tool through the whole stage stack
//!   (target <= 40 us median);
//! - `fan_out/K`: K calls that each sleep 100 ms in one batch; the figure
//!   reported is makespan minus 100 ms (targets <= 1 ms at K=64, <= 5 ms at K=256).

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use node_runtime::blob::FsBlobStore;
use node_runtime::call_id::{call_id, canonical_json};
use node_runtime::executor::{CallScope, Executor, ExecutorConfig, ToolCall};
use node_runtime::policy::{Policy, Usage};
use node_runtime::secrets::MemorySecrets;
use node_runtime::tool::{Tool, ToolContext, ToolRegistry};
use node_runtime::tool_spec::{SideEffects, ToolCategory, ToolMetadata, ToolSpec};
use node_runtime::ToolError;
use serde_json::{json, Value};

struct Bench(&'static str);

impl Tool for Bench {
    type Input = Value;
    type Output = Value;
    fn spec(&self) -> ToolSpec {
        let mut metadata = ToolMetadata::new(ToolCategory::Utility);
        metadata.side_effects = SideEffects::None;
        ToolSpec {
            name: self.0.into(),
            version: "1.0.0".into(),
            description: "benchmark tool".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "ms": {"type": "integer"}
                },
                "required": ["query"]
            }),
            output_schema: json!({"type": "object"}),
            metadata,
        }
    }
    async fn execute(&self, input: Value, _ctx: &ToolContext) -> Result<Value, ToolError> {
        if self.0 == "sleep" {
            tokio::time::sleep(Duration::from_millis(input["ms"].as_u64().unwrap_or(100))).await;
        }
        Ok(json!({"ok": true}))
    }
}

/// An input of about `bytes` bytes of JSON.
fn input_of(bytes: usize) -> Value {
    let tag = "abcdefghij";
    let n = bytes.saturating_sub(40) / (tag.len() + 3);
    json!({"query": "weather in paris", "limit": 5, "tags": vec![tag; n]})
}

fn hot_path(c: &mut Criterion) {
    let mut registry = ToolRegistry::new();
    let tool = registry.register(Bench("noop")).expect("register");
    let mut group = c.benchmark_group("hot_path");
    for size in [100usize, 1024, 10 * 1024] {
        let input = input_of(size);
        let actual = serde_json::to_vec(&input).expect("ser").len();
        group.throughput(Throughput::Bytes(actual as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(format!("{size}B")),
            &input,
            |b, input| {
                b.iter(|| {
                    let canonical = canonical_json(input);
                    let id = call_id("noop", "1.0.0", &canonical, 0);
                    assert!(tool.input_validator.is_valid(input));
                    id
                })
            },
        );
    }
    group.finish();
    // The three pieces separately at 1 KB, to see where the time goes.
    let input = input_of(1024);
    let canonical = canonical_json(&input);
    let mut parts = c.benchmark_group("hot_path_parts_1KB");
    parts.bench_function("canonicalize", |b| b.iter(|| canonical_json(&input)));
    parts.bench_function("hash", |b| {
        b.iter(|| call_id("noop", "1.0.0", &canonical, 0))
    });
    parts.bench_function("validate", |b| {
        b.iter(|| tool.input_validator.is_valid(&input))
    });
    parts.bench_function("serde_json_to_string", |b| {
        b.iter(|| serde_json::to_string(&input))
    });
    parts.finish();
}

fn executor_with(max_concurrency: usize) -> (Arc<Executor>, ToolRegistry, tempfile::TempDir) {
    let mut registry = ToolRegistry::new();
    registry.register(Bench("noop")).expect("register");
    registry.register(Bench("sleep")).expect("register");
    let dir = tempfile::tempdir().expect("tmp");
    let config = ExecutorConfig {
        max_concurrency,
        ..ExecutorConfig::default()
    };
    let executor = Arc::new(Executor::new(
        config,
        Arc::new(MemorySecrets::new()),
        Arc::new(FsBlobStore::new(dir.path())),
    ));
    (executor, registry, dir)
}

fn scope() -> Arc<CallScope> {
    Arc::new(CallScope::new(
        "bench",
        Policy {
            enabled_tools: vec!["noop".into(), "sleep".into()],
            max_tool_calls: u32::MAX,
            ..Policy::default()
        },
    ))
}

fn executor_overhead(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    let (executor, registry, _dir) = executor_with(8);
    let tool = registry.get("noop", "1.0.0").expect("noop");
    let input = input_of(1024);
    let call = ToolCall {
        call_id: call_id("noop", "1.0.0", &canonical_json(&input), 0),
        tool,
        input: input.into(),
    };
    let scope = scope();
    c.bench_function("executor_overhead/noop", |b| {
        b.to_async(&rt)
            .iter(|| executor.execute(scope.clone(), call.clone(), Usage::default()))
    });
}

fn fan_out(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    let (executor, registry, _dir) = executor_with(256);
    let tool = registry.get("sleep", "1.0.0").expect("sleep");
    let mut group = c.benchmark_group("fan_out_minus_100ms");
    group.sample_size(10);
    // Peer: one bare tokio sleep of 100 ms on the same runtime, no executor.
    group.bench_function("bare_tokio_sleep", |b| {
        b.iter_custom(|iters| {
            let mut overhead = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                rt.block_on(async { tokio::time::sleep(Duration::from_millis(100)).await });
                overhead += start.elapsed().saturating_sub(Duration::from_millis(100));
            }
            overhead
        })
    });
    for k in [8usize, 64, 256] {
        let calls: Vec<ToolCall> = (0..k)
            .map(|i| {
                let input = json!({"query": format!("q{i}"), "ms": 100});
                ToolCall {
                    call_id: call_id("sleep", "1.0.0", &canonical_json(&input), 0),
                    tool: tool.clone(),
                    input: input.into(),
                }
            })
            .collect();
        group.bench_function(BenchmarkId::from_parameter(k), |b| {
            b.iter_custom(|iters| {
                let mut overhead = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    let out = rt.block_on(executor.execute_batch(
                        scope(),
                        calls.clone(),
                        Usage::default(),
                    ));
                    overhead += start.elapsed().saturating_sub(Duration::from_millis(100));
                    assert!(out.iter().all(|e| e.is_success()));
                }
                overhead
            })
        });
    }
    group.finish();
}

criterion_group!(benches, hot_path, executor_overhead, fan_out);
criterion_main!(benches);
