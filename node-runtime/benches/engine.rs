//! Graph engine benchmark (issue 5 target): a chain of 400 no-op nodes
//! (templates passing their input through); per-node engine overhead
//! = wall time / 400 (target < 100 us). And how long a cancel takes to
//! end a run busy rendering a runaway template (target < 100 ms; the
//! rendering runs on the blocking pool, so the cancel does not wait for
//! it). Plain bench binary:
//! `cargo bench -p glassbox-node-runtime --features runtime --bench engine`.

use std::sync::Arc;
use std::time::Instant;

use node_runtime::agent::AgentRuntime;
use node_runtime::blob::FsBlobStore;
use node_runtime::executor::{Executor, ExecutorConfig};
use node_runtime::graph::engine::*;
use node_runtime::graph::*;
use node_runtime::secrets::{MemorySecrets, SecretOwner};
use node_runtime::tool::{ToolEnv, ToolRegistry};
use serde_json::{json, Map};
use tokio_util::sync::CancellationToken;

const N: usize = 400;

fn chain() -> Workflow {
    let mut nodes = vec![Node {
        id: "in".into(),
        label: "in".into(),
        position: Position::default(),
        kind: NodeKind::Input(InputConfig {
            schema: json!({"type": "object", "properties": {"x": {"type": "string"}}}),
        }),
    }];
    let mut edges = Vec::new();
    let mut prev = ("in".to_string(), "x".to_string());
    for i in 0..N {
        let id = format!("n{i}");
        nodes.push(Node {
            id: id.clone(),
            label: id.clone(),
            position: Position::default(),
            kind: NodeKind::Template(TemplateConfig {
                template: "{{ x }}".into(),
            }),
        });
        edges.push(Edge {
            id: format!("e{i}"),
            source: HandleRef {
                node: prev.0.clone(),
                handle: prev.1.clone(),
            },
            target: HandleRef {
                node: id.clone(),
                handle: "x".into(),
            },
        });
        prev = (id, "text".into());
    }
    Workflow {
        format_version: WORKFLOW_FORMAT_VERSION,
        id: "chain".into(),
        name: "chain".into(),
        description: String::new(),
        revision: 1,
        nodes,
        edges,
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    let registry = Arc::new(ToolRegistry::new());
    let dir = tempfile::tempdir().expect("tmp");
    let services = EngineServices {
        registry: registry.clone(),
        executor: Arc::new(Executor::new(
            ExecutorConfig::default(),
            Arc::new(MemorySecrets::new()),
            Arc::new(FsBlobStore::new(dir.path())),
        )),
        agents: Arc::new(AgentRuntime {
            registry,
            approval_key: [0; 32],
        }),
        models: Arc::new(PlainModels),
        approvals: Arc::new(ApproveAll),
        pin_history: Arc::new(MemoryPinHistory::default()),
        owner: SecretOwner {
            user_id: None,
            workspace_id: "bench".into(),
            org_id: None,
        },
        env: Arc::new(ToolEnv::default()),
        traces_url: None,
        checkpoints: None,
        journal: None,
        fork: None,
    };
    let wf = chain();
    let inputs: Map<String, serde_json::Value> = json!({"x": "hello"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut per_node = Vec::new();
    rt.block_on(async {
        for i in 0..11 {
            let sink = VecWorkflowSink::default();
            let start = Instant::now();
            let run = run_workflow(
                &services,
                &wf,
                "bench",
                inputs.clone(),
                &sink,
                CancellationToken::new(),
            )
            .await
            .expect("runs");
            let wall = start.elapsed();
            assert_eq!(run.outcome, RunOutcome::Succeeded);
            if i > 0 {
                per_node.push(wall.as_secs_f64() * 1e6 / (N + 1) as f64);
            }
        }
    });
    per_node.sort_by(|a, b| a.total_cmp(b));
    println!(
        "engine/chain_of_{N}_noop_nodes: per-node overhead median {:.1} us (min {:.1}, max {:.1}); target < 100 us",
        per_node[per_node.len() / 2],
        per_node[0],
        per_node[per_node.len() - 1]
    );
    // The figure `cargo xtask bench` tabulates (`BENCH <name> <value> <unit> <target>`).
    println!(
        "BENCH engine_per_node_overhead {:.3} us 100",
        per_node[per_node.len() / 2]
    );

    // A cancel 5 ms into a rendering that runs until its fuel is spent.
    let runaway = "{% for i in range(10000) %}{% for j in range(10000) %}x{% endfor %}{% endfor %}";
    let started = Instant::now();
    let _ = render(runaway, &Default::default());
    let whole = started.elapsed();
    let mut wf = chain();
    wf.nodes.truncate(2);
    wf.edges.clear();
    if let NodeKind::Template(t) = &mut wf.nodes[1].kind {
        t.template = runaway.into();
    }
    let mut latencies = Vec::new();
    rt.block_on(async {
        for _ in 0..20 {
            let cancel = CancellationToken::new();
            let c = cancel.clone();
            let stopper = tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                c.cancel();
                Instant::now()
            });
            let run = run_workflow(
                &services,
                &wf,
                "bench",
                inputs.clone(),
                &VecWorkflowSink::default(),
                cancel,
            )
            .await
            .expect("runs");
            let ended = Instant::now();
            assert_eq!(run.outcome, RunOutcome::Cancelled);
            let cancelled_at = stopper.await.expect("stopper");
            latencies.push(ended.saturating_duration_since(cancelled_at).as_secs_f64() * 1e3);
        }
    });
    latencies.sort_by(|a, b| a.total_cmp(b));
    println!(
        "engine/cancel_during_runaway_template: run ended {:.2} ms after the cancel (median; max {:.2}); the whole rendering takes {:.1} ms; target < 100 ms",
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1],
        whole.as_secs_f64() * 1e3
    );
    println!(
        "BENCH engine_cancel_latency {:.3} ms 100",
        latencies[latencies.len() / 2]
    );
}
