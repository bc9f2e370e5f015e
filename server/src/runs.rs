//! Runs: starting workflow runs in the background, persisting and
//! broadcasting their events, keeping seed 001's invocation records, and
//! connecting approval decisions to the runs waiting for them.
//!
//! Each run has one writer task. The engine's events go through a channel
//! to that task, which gives each a sequence number, stores it, updates the
//! invocation records, and then broadcasts it; so the stored order is the
//! broadcast order, and an SSE subscriber can read stored events first and
//! then follow the broadcast without gaps or duplicates.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future::{BoxFuture, FutureExt, Shared};
use node_runtime::agent::approval::{ApprovalRequest, Decision};
use node_runtime::agent::{AgentEvent, AgentRuntime};
use node_runtime::agent::{AgentRun, JournalEntry, WriteJournal};
use node_runtime::blob::FsBlobStore;
use node_runtime::envelope::ToolEnvelope;
use node_runtime::executor::ToolCall;
use node_runtime::executor::{Executor, ExecutorConfig};
use node_runtime::graph::engine::{
    resume_workflow, ApprovalGate, Checkpoints, EngineServices, MemoryPinHistory, NodeRecord,
    PinHistory, PlainModels, ResumeState, RunOutcome, WorkflowEvent, WorkflowSink,
};
use node_runtime::graph::{NodeKind, Workflow};
use node_runtime::secrets::SecretOwner;
use node_runtime::tool::{ToolEnv, ToolRegistry};
use serde_json::{json, Map, Value};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::storage::{
    new_id, now, ApprovalRow, BlobRef, GroupWriter, InvocationRow, NodeRunRow, RunEnd, RunRow,
    RunWrite, Store, StoreError,
};

/// A stored run event as broadcast live: its sequence number and JSON text.
pub type LiveEvent = (i64, Arc<str>);

/// A run in progress.
struct LiveRun {
    cancel: CancellationToken,
    events: broadcast::Sender<LiveEvent>,
    created: Created,
}

/// A new run of `workflow`: queued, from the API, no inputs, nothing
/// recorded yet.
fn new_run_row(run_id: &str, workspace_id: &str, workflow: &Workflow) -> RunRow {
    RunRow {
        workflow_id: Some(workflow.id.clone()),
        workflow_revision: Some(workflow.revision as i64),
        trace_id: Some(crate::trace::trace_id(run_id)),
        ..RunRow::queued(run_id, workspace_id)
    }
}

/// Where a spawned run starts: from scratch, or from a stopped server's
/// checkpoints with the events it stored.
struct StartFrom {
    resume: ResumeState,
    last_seq: i64,
    created: Created,
}

/// Whether a run's record is committed. A new run starts while its record
/// is still queued on the group writer (its own writes queue behind it);
/// the writes that bypass the writer (the write journal, an agent's
/// checkpoint) wait for this first.
#[derive(Clone)]
struct Created(Shared<BoxFuture<'static, Result<(), String>>>);

impl Created {
    /// A run whose record is already stored (a resumed run).
    fn stored() -> Self {
        Created(futures::future::ready(Ok(())).boxed().shared())
    }

    /// The queued creation, as the group writer reports it.
    fn queued(
        commit: impl std::future::Future<Output = Result<(), StoreError>> + Send + 'static,
    ) -> Self {
        Created(
            commit
                .map(|r| {
                    r.map_err(|e| match e {
                        // Kept bare: it becomes an `Unavailable` again.
                        StoreError::Unavailable(why) => why,
                        other => other.to_string(),
                    })
                })
                .boxed()
                .shared(),
        )
    }

    async fn wait(&self) -> Result<(), String> {
        self.0.clone().await
    }
}

/// What `execute` needs of one spawned run.
struct Run<'a> {
    /// The run's workspace and organization: the secret scopes it reads.
    owner: &'a SecretOwner,
    id: &'a str,
    live: Arc<LiveRun>,
    /// The run span; it closes when the engine is done.
    span: tracing::Span,
    /// Where the run's closed spans wait for its next write.
    spans: crate::trace::SpanBuffer,
}

/// Shared by every run of the server.
pub struct Runs {
    store: Store,
    /// Group commit for every run's events and ends.
    writer: GroupWriter,
    registry: Arc<ToolRegistry>,
    executor: Arc<Executor>,
    blobs: FsBlobStore,
    agents: Arc<AgentRuntime>,
    data_dir: PathBuf,
    traces_url: Option<String>,
    live: Mutex<HashMap<String, Arc<LiveRun>>>,
    waiters: Mutex<HashMap<String, oneshot::Sender<Decision>>>,
    /// Fault injection for the crash tests (`GLASSBOX_TEST_CRASH_AT`): the
    /// process aborts at that point of an approved write.
    crash_at: Option<String>,
    /// Hosts (`host` or `host:port`) the http_request tool may reach even
    /// on loopback or private addresses: GLASSBOX_HTTP_ALLOW_HOSTS,
    /// comma-separated (for internal services; empty by default).
    http_allow_hosts: Vec<String>,
}

/// Where the crash tests stop the process, around an approved write.
pub const CRASH_POINTS: [&str; 3] = ["after_intent", "after_response", "before_result"];

/// The approval key: a random key kept in the data dir, so tokens stay
/// valid across restarts and cannot be forged without the file.
fn approval_key(data_dir: &std::path::Path) -> [u8; 32] {
    let path = data_dir.join("approval.key");
    if let Ok(bytes) = std::fs::read(&path) {
        if let Ok(key) = <[u8; 32]>::try_from(bytes.as_slice()) {
            return key;
        }
    }
    let mut key = [0u8; 32];
    key[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    key[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    let _ = std::fs::create_dir_all(data_dir);
    if let Err(e) = std::fs::write(&path, key) {
        tracing::warn!(error = %e, "cannot keep the approval key; approvals will not survive a restart");
    }
    key
}

impl Runs {
    pub fn new(
        store: Store,
        data_dir: PathBuf,
        traces_url: Option<String>,
        max_output_bytes: usize,
        cipher: Arc<crate::secrets::SecretCipher>,
    ) -> Arc<Self> {
        let mut registry = ToolRegistry::new();
        node_runtime::builtins::register_builtins(&mut registry)
            .expect("the built-in tools have valid schemas and unique versions");
        if std::env::var(crate::test_tools::ENV).as_deref() == Ok("1") {
            registry
                .register(crate::test_tools::SecretProbe)
                .expect("the test tool has a valid schema");
            registry
                .register(crate::test_tools::OldSecretProbe)
                .expect("the test tool has a valid schema");
        }
        let registry = Arc::new(registry);
        let blobs = FsBlobStore::new(data_dir.join("blobs"));
        let executor = Arc::new(Executor::new(
            ExecutorConfig {
                max_output_bytes,
                ..ExecutorConfig::default()
            },
            Arc::new(crate::secrets::StoreSecrets {
                store: store.clone(),
                cipher,
            }),
            Arc::new(blobs.clone()),
        ));
        let agents = Arc::new(AgentRuntime {
            registry: registry.clone(),
            approval_key: approval_key(&data_dir),
        });
        Arc::new(Self {
            writer: GroupWriter::start(store.clone()),
            store,
            registry,
            executor,
            blobs,
            agents,
            data_dir,
            traces_url,
            live: Mutex::new(HashMap::new()),
            waiters: Mutex::new(HashMap::new()),
            crash_at: std::env::var("GLASSBOX_TEST_CRASH_AT").ok(),
            http_allow_hosts: std::env::var("GLASSBOX_HTTP_ALLOW_HOSTS")
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .map(str::to_string)
                .collect(),
        })
    }

    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }

    /// The blob store truncated outputs go to.
    pub fn blobs(&self) -> &FsBlobStore {
        &self.blobs
    }

    pub fn agents(&self) -> &Arc<AgentRuntime> {
        &self.agents
    }

    /// Creates the run record and starts it in the background.
    ///
    /// The record is queued on the group writer and the run starts at
    /// once, so its first model call overlaps the commit (the run's own
    /// writes queue behind its record). The id is returned once the record
    /// is committed; a run whose record cannot be stored is cancelled.
    ///
    /// `owner` is the run's workspace with its organization, the secret
    /// scopes its tools read (the API caller carries both, so a run reads
    /// nothing to learn them; see [`crate::auth::Caller::secret_owner`]).
    pub async fn start(
        self: &Arc<Self>,
        owner: SecretOwner,
        workflow: Workflow,
        inputs: Map<String, Value>,
        trigger: &str,
    ) -> Result<String, StoreError> {
        let run_id = new_id();
        let created = Created::queued(self.writer.submit(RunWrite::Create(Box::new(RunRow {
            trigger_kind: trigger.into(),
            inputs: Value::Object(inputs.clone()).to_string(),
            ..new_run_row(&run_id, &owner.workspace_id, &workflow)
        }))));
        let from = StartFrom {
            resume: ResumeState::default(),
            last_seq: 0,
            created: created.clone(),
        };
        self.spawn(owner, &run_id, workflow, inputs, from);
        if let Err(e) = created.wait().await {
            self.cancel(&run_id);
            return Err(StoreError::Unavailable(e));
        }
        Ok(run_id)
    }

    /// A workspace as the owner of a run, its organization read from the
    /// store (for callers that do not carry it: the CLI, recovery).
    async fn workspace_owner(&self, workspace_id: &str) -> Result<SecretOwner, StoreError> {
        Ok(SecretOwner {
            user_id: None,
            workspace_id: workspace_id.into(),
            org_id: self.store.workspace_org(workspace_id).await?,
        })
    }

    fn spawn(
        self: &Arc<Self>,
        owner: SecretOwner,
        run_id: &str,
        workflow: Workflow,
        inputs: Map<String, Value>,
        from: StartFrom,
    ) {
        let StartFrom {
            resume,
            last_seq,
            created,
        } = from;
        let (events, _) = broadcast::channel(1024);
        let live = Arc::new(LiveRun {
            cancel: CancellationToken::new(),
            events,
            created,
        });
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(run_id.to_string(), live.clone());
        let this = self.clone();
        let id = run_id.to_string();
        tokio::spawn(async move {
            // Everything the run does is inside its span (see `trace`).
            let (span, route) = crate::trace::run_span(&id, &this.writer);
            let run = Run {
                owner: &owner,
                id: &id,
                live,
                span,
                spans: route.spans(),
            };
            this.execute(run, workflow, inputs, resume, last_seq).await;
            drop(route);
            this.live
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
        });
    }

    /// Picks up the runs a stopped server left unfinished: each continues
    /// from its checkpoints (ended nodes stay ended, an agent waiting for
    /// approval waits again with the same approvals, approved writes go
    /// through the journal). A run that cannot continue is marked failed
    /// with the reason. Returns how many were resumed.
    pub async fn recover(self: &Arc<Self>) -> Result<usize, StoreError> {
        let mut resumed = 0;
        for run in self.store.interrupted_runs().await? {
            match self.resume_state(&run).await {
                Ok((workflow, inputs, state)) => {
                    let last_seq = self.store.last_event_seq(&run.id).await?;
                    let owner = self.workspace_owner(&run.workspace_id).await?;
                    tracing::info!(run_id = %run.id, nodes_done = state.records.len(), agents_waiting = state.agents.len(), "resuming an interrupted run");
                    let from = StartFrom {
                        resume: state,
                        last_seq,
                        created: Created::stored(),
                    };
                    self.spawn(owner, &run.id, workflow, inputs, from);
                    resumed += 1;
                }
                Err(reason) => {
                    tracing::warn!(run_id = %run.id, %reason, "an interrupted run cannot continue");
                    self.writer
                        .write(RunWrite::End(Box::new(RunEnd {
                            run_id: run.id.clone(),
                            status: "failed".into(),
                            error: Some(format!(
                                "interrupted by a server stop and not resumable: {reason}"
                            )),
                            ..RunEnd::default()
                        })))
                        .await?;
                }
            }
        }
        Ok(resumed)
    }

    async fn resume_state(
        &self,
        run: &RunRow,
    ) -> Result<(Workflow, Map<String, Value>, ResumeState), String> {
        let (Some(workflow_id), Some(revision)) = (&run.workflow_id, run.workflow_revision) else {
            return Err("the run names no workflow revision".into());
        };
        let row = self
            .store
            .revision(workflow_id, revision)
            .await
            .map_err(|e| e.to_string())?;
        let workflow = Workflow::from_json(&row.document).map_err(|e| e.to_string())?;
        let inputs: Map<String, Value> =
            serde_json::from_str(&run.inputs).map_err(|e| format!("inputs: {e}"))?;
        let mut state = ResumeState::default();
        for (node_id, kind, text) in self
            .store
            .checkpoints(&run.id)
            .await
            .map_err(|e| e.to_string())?
        {
            match kind.as_str() {
                "node" => {
                    let record: NodeRecord = serde_json::from_str(&text)
                        .map_err(|e| format!("checkpoint of node {node_id}: {e}"))?;
                    state.records.insert(node_id, record);
                }
                _ => {
                    let agent: AgentRun = serde_json::from_str(&text)
                        .map_err(|e| format!("checkpoint of agent {node_id}: {e}"))?;
                    state.agents.insert(node_id, agent);
                }
            }
        }
        // An agent that ended has nothing to resume.
        state.agents.retain(|id, _| !state.records.contains_key(id));
        Ok((workflow, inputs, state))
    }

    /// Runs a workflow to its end, in this task (the CLI uses this directly).
    pub async fn run_to_end(
        self: &Arc<Self>,
        workspace_id: &str,
        workflow: Workflow,
        inputs: Map<String, Value>,
        trigger: &str,
    ) -> Result<RunRow, StoreError> {
        let owner = self.workspace_owner(workspace_id).await?;
        let run_id = self.start(owner, workflow, inputs, trigger).await?;
        loop {
            if !self
                .live
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains_key(&run_id)
            {
                return self.store.get_run(workspace_id, &run_id).await;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    async fn execute(
        self: &Arc<Self>,
        run: Run<'_>,
        workflow: Workflow,
        inputs: Map<String, Value>,
        resume: ResumeState,
        last_seq: i64,
    ) {
        let Run {
            owner,
            id: run_id,
            live,
            span,
            spans,
        } = run;
        let (tx, rx) = mpsc::unbounded_channel::<WorkflowEvent>();
        let (end_tx, end_rx) = oneshot::channel::<RunEnd>();
        // Its first write marks the run running.
        let out = EventOut {
            writer: self.writer.clone(),
            ws: owner.workspace_id.clone(),
            run_id: run_id.to_string(),
            tx: live.events.clone(),
            last_seq,
            spans,
        };
        let writer = tokio::spawn(write_events(out, rx, end_rx));
        let (result, pins) = self
            .run_engine(owner, run_id, &workflow, inputs, &live, resume, tx)
            .instrument(span)
            .await;
        // The run span has closed by now: its row goes with the end.
        let end = end_of(run_id, &workflow, result, &pins);
        let _ = end_tx.send(end);
        match writer.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(run_id, error = %e, "cannot record the end of a run"),
            Err(e) => tracing::error!(run_id, error = %e, "the event writer of a run failed"),
        }
    }

    /// The engine part of a run, inside the run span.
    #[allow(clippy::too_many_arguments)]
    async fn run_engine(
        self: &Arc<Self>,
        owner: &SecretOwner,
        run_id: &str,
        workflow: &Workflow,
        inputs: Map<String, Value>,
        live: &LiveRun,
        resume: ResumeState,
        tx: mpsc::UnboundedSender<WorkflowEvent>,
    ) -> (
        Result<node_runtime::graph::engine::WorkflowRun, node_runtime::graph::engine::EngineError>,
        Arc<MemoryPinHistory>,
    ) {
        // Pins: the history of this workflow, loaded before and saved after.
        let pins = Arc::new(MemoryPinHistory::default());
        for node in &workflow.nodes {
            if let NodeKind::Agent(c) = &node.kind {
                for pin in &c.pins {
                    if let Ok(Some(v)) = self
                        .store
                        .pin_value(&workflow.id, &node.id, &pin.name)
                        .await
                    {
                        pins.record(&workflow.id, &node.id, &pin.name, &v);
                    }
                }
            }
        }
        let ws = owner.workspace_id.as_str();
        let files = self.data_dir.join("files").join(ws);
        let services = EngineServices {
            registry: self.registry.clone(),
            executor: self.executor.clone(),
            agents: self.agents.clone(),
            models: Arc::new(PlainModels),
            approvals: Arc::new(StoreGate {
                runs: self.clone(),
                workspace_id: ws.into(),
                run_id: run_id.into(),
            }),
            pin_history: pins.clone(),
            owner: owner.clone(),
            env: Arc::new(ToolEnv {
                files_root: Some(files),
                http_allow_hosts: self.http_allow_hosts.clone(),
                ..ToolEnv::default()
            }),
            traces_url: self.traces_url.clone(),
            checkpoints: Some(Arc::new(StoreCheckpoints {
                store: self.store.clone(),
                writer: self.writer.clone(),
                run_id: run_id.into(),
                created: live.created.clone(),
            })),
            journal: Some(Arc::new(StoreJournal {
                store: self.store.clone(),
                run_id: run_id.into(),
                created: live.created.clone(),
                crash_at: self.crash_at.clone(),
            })),
        };
        let sink = ChannelSink(tx);
        let result = resume_workflow(
            &services,
            workflow,
            run_id,
            inputs,
            &sink,
            live.cancel.clone(),
            resume,
        )
        .await;
        (result, pins)
    }

    /// Subscribes to a live run's events (None when it is not running here).
    pub fn subscribe(&self, run_id: &str) -> Option<broadcast::Receiver<LiveEvent>> {
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(run_id)
            .map(|l| l.events.subscribe())
    }

    pub fn cancel(&self, run_id: &str) -> bool {
        match self
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(run_id)
        {
            Some(l) => {
                l.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Hands a recorded decision to the run waiting for it.
    pub fn deliver(&self, token: &str, decision: Decision) -> bool {
        match self
            .waiters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(token)
        {
            Some(tx) => tx.send(decision).is_ok(),
            None => false,
        }
    }
}

pub use node_runtime::wire::{ReplayOutcome, ReplayTimeline};

/// The recorded Agent nodes' envelopes in tool order, and the replayed
/// ones as their events came.
fn replay_timelines(
    recorded: &node_runtime::graph::engine::WorkflowRun,
    events: Vec<WorkflowEvent>,
) -> BTreeMap<String, ReplayTimeline> {
    let mut timelines: BTreeMap<String, ReplayTimeline> = BTreeMap::new();
    for (id, node) in &recorded.nodes {
        // Agent nodes' handles hold their AgentOutputs (pins beside them).
        let Ok(outputs) =
            serde_json::from_value::<node_runtime::envelope::AgentOutputs>(json!(node.outputs))
        else {
            continue;
        };
        timelines.entry(id.clone()).or_default().recorded = outputs.calls().cloned().collect();
    }
    for event in events {
        if let WorkflowEvent::Agent { node_id, event } = event {
            if let AgentEvent::ToolCallFinished { envelope } = *event {
                timelines
                    .entry(node_id)
                    .or_default()
                    .replayed
                    .push(envelope);
            }
        }
    }
    timelines
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("the bundle is not usable: {0}")]
    BadBundle(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Runs {
    /// Replays a recorded run (`record` as stored, with its workflow)
    /// hermetically, records the replay as a run of kind `replay`, and says
    /// whether it reproduced the outputs.
    pub async fn replay_record(
        &self,
        workspace_id: &str,
        record: &Value,
        replay_of: Option<&str>,
    ) -> Result<ReplayOutcome, ReplayError> {
        let workflow = node_runtime::graph::Workflow::from_value(
            record.get("workflow").unwrap_or(&Value::Null),
        )
        .map_err(|e| ReplayError::BadBundle(format!("workflow: {e}")))?;
        let recorded: node_runtime::graph::engine::WorkflowRun =
            serde_path_to_error::deserialize(record)
                .map_err(|e| ReplayError::BadBundle(format!("at `{}`: {}", e.path(), e.inner())))?;
        let sink = node_runtime::graph::engine::VecWorkflowSink::default();
        let result =
            node_runtime::graph::engine::replay_workflow(&self.agents, &workflow, &recorded, &sink)
                .await;
        let mut diverged_node = None;
        let (matches, divergence, outputs) = match result {
            Ok(outputs) if outputs == recorded.outputs => (true, None, json!(outputs)),
            Ok(outputs) => (
                false,
                Some(format!(
                    "the outputs differ: recorded {} but replayed {}",
                    json!(recorded.outputs),
                    json!(outputs)
                )),
                json!(outputs),
            ),
            Err(e) => {
                if let node_runtime::graph::engine::EngineError::ReplayDiverged { node, .. } = &e {
                    diverged_node = Some(node.clone());
                }
                (false, Some(e.to_string()), Value::Null)
            }
        };
        let events = std::mem::take(&mut *sink.0.lock().unwrap_or_else(|p| p.into_inner()));
        let timelines = replay_timelines(&recorded, events);
        let run_id = new_id();
        self.store
            .create_run(&RunRow {
                kind: "replay".into(),
                replay_of: replay_of.map(str::to_string),
                status: "running".into(),
                trigger_kind: "replay".into(),
                ..new_run_row(&run_id, workspace_id, &workflow)
            })
            .await?;
        let status = if matches { "succeeded" } else { "failed" };
        self.store
            .finish_run(&run_id, status, Some(&outputs), divergence.as_deref(), None)
            .await?;
        Ok(ReplayOutcome {
            run_id,
            replay_of: replay_of.map(str::to_string),
            matches,
            divergence,
            diverged_node,
            outputs,
            timelines,
        })
    }
}

/// A serde unit enum as its wire word (`done`, `failed`, ...).
fn word(v: impl serde::Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

struct ChannelSink(mpsc::UnboundedSender<WorkflowEvent>);

impl WorkflowSink for ChannelSink {
    fn emit(&self, event: WorkflowEvent) {
        let _ = self.0.send(event);
    }
}

/// Approvals for one run: each request is stored, then the run waits until
/// someone decides it through the API.
struct StoreGate {
    runs: Arc<Runs>,
    workspace_id: String,
    run_id: String,
}

impl ApprovalGate for StoreGate {
    fn decide<'a>(
        &'a self,
        node_id: &'a str,
        requests: Vec<ApprovalRequest>,
    ) -> BoxFuture<'a, Vec<(String, Decision)>> {
        Box::pin(async move {
            // Through the group writer, behind the run's earlier writes.
            let _ = self
                .runs
                .writer
                .write(RunWrite::Status {
                    run_id: self.run_id.clone(),
                    status: "waiting_for_approval".into(),
                })
                .await;
            let mut pending = Vec::new();
            for r in requests {
                let (tx, rx) = oneshot::channel();
                self.runs
                    .waiters
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(r.token.clone(), tx);
                let row = ApprovalRow {
                    token: r.token.clone(),
                    workspace_id: self.workspace_id.clone(),
                    run_id: self.run_id.clone(),
                    node_id: node_id.into(),
                    call_id: r.call_id.clone(),
                    tool: r.tool.clone(),
                    args_summary: r.args_summary.clone(),
                    effect_description: r.effect_description.clone(),
                    status: "pending".into(),
                    decided_by: None,
                    note: None,
                    created_at: now(),
                    decided_at: None,
                };
                if let Err(e) = self.runs.store.insert_approval(&row).await {
                    tracing::error!(error = %e, "cannot store an approval request");
                }
                pending.push((r.token, rx));
            }
            let mut decisions = Vec::new();
            for (token, mut rx) in pending {
                // The API hands decisions over directly; a decision stored by
                // someone else (the CLI, another server) is picked up by
                // watching the approval row.
                let mut tick = tokio::time::interval(std::time::Duration::from_millis(250));
                let mut handed_over = true;
                let decision = loop {
                    tokio::select! {
                        // A dropped sender (the server stopping, or another
                        // waiter registered under the same token) is no
                        // decision: the run keeps watching the approval row,
                        // and a restarted server resumes it. A finished
                        // receiver is never polled again.
                        r = &mut rx, if handed_over => match r {
                            Ok(d) => break d,
                            Err(_) => handed_over = false,
                        },
                        _ = tick.tick() => {
                            if let Ok(row) = self.runs.store.get_approval(&self.workspace_id, &token).await {
                                if let Some(d) = stored_decision(&row) {
                                    self.runs.waiters.lock().unwrap_or_else(|e| e.into_inner()).remove(&token);
                                    break d;
                                }
                            }
                        }
                    }
                };
                decisions.push((token, decision));
            }
            // Through the group writer, behind the run's earlier writes.
            let _ = self
                .runs
                .writer
                .write(RunWrite::Status {
                    run_id: self.run_id.clone(),
                    status: "running".into(),
                })
                .await;
            decisions
        })
    }
}

/// The decision a stored approval row holds, if it was decided.
pub fn stored_decision(row: &ApprovalRow) -> Option<Decision> {
    let note = row.note.clone().unwrap_or_default();
    match row.status.as_str() {
        "approved" => Some(Decision::Approve),
        "denied" => Some(Decision::Deny { reason: note }),
        "revision_requested" => Some(Decision::Revise { note }),
        _ => None,
    }
}

/// A run's stored record: the engine's account of the run and the
/// workflow it ran.
#[derive(serde::Serialize)]
struct RunRecord<'a> {
    #[serde(flatten)]
    run: &'a node_runtime::graph::engine::WorkflowRun,
    workflow: &'a Workflow,
}

/// The end of a run to store, from what the engine returned.
fn end_of(
    run_id: &str,
    workflow: &Workflow,
    result: Result<
        node_runtime::graph::engine::WorkflowRun,
        node_runtime::graph::engine::EngineError,
    >,
    pins: &MemoryPinHistory,
) -> RunEnd {
    match result {
        Ok(mut run) => {
            let trace_id = crate::trace::trace_id(run_id);
            let nodes = run
                .nodes
                .values()
                .map(|n| NodeRunRow {
                    run_id: run_id.to_string(),
                    node_id: n.node_id.clone(),
                    status: word(n.status),
                    error: n.error.clone(),
                    outputs: serde_json::to_string(&n.outputs).unwrap_or_default(),
                    started_at: n.started_at.clone(),
                    finished_at: n.finished_at.clone(),
                    trace_id: Some(trace_id.clone()),
                })
                .collect();
            // Each agent bundle is stored once, in `replay_bundles`; the
            // record goes without them (`Store::run_record` puts them back).
            let bundles = run
                .nodes
                .iter_mut()
                .filter_map(|(id, r)| r.bundle.take().map(|b| (id.clone(), b.to_json())))
                .collect();
            let mut pin_values = Vec::new();
            for node in &workflow.nodes {
                if let NodeKind::Agent(c) = &node.kind {
                    for pin in &c.pins {
                        if let Some(v) = pins.last_resolved(&workflow.id, &node.id, &pin.name) {
                            pin_values.push((
                                workflow.id.clone(),
                                node.id.clone(),
                                pin.name.clone(),
                                v.to_string(),
                            ));
                        }
                    }
                }
            }
            let status = match run.outcome {
                RunOutcome::Succeeded => "succeeded",
                RunOutcome::Failed => "failed",
                RunOutcome::Cancelled => "cancelled",
            };
            // The record carries the workflow it ran, so a replay needs
            // nothing else; written straight to text, with no `Value` tree.
            let record = serde_json::to_string(&RunRecord {
                run: &run,
                workflow,
            })
            .ok();
            let error = run.nodes.values().find_map(|n| {
                n.error
                    .clone()
                    .filter(|_| n.status == node_runtime::graph::engine::NodeStatus::Failed)
            });
            RunEnd {
                run_id: run_id.into(),
                status: status.into(),
                outputs: serde_json::to_string(&run.outputs).ok(),
                error,
                record,
                nodes,
                bundles,
                pins: pin_values,
                spans: Vec::new(),
            }
        }
        Err(e) => RunEnd {
            run_id: run_id.into(),
            status: "failed".into(),
            error: Some(e.to_string()),
            ..RunEnd::default()
        },
    }
}

fn invocation_id(run_id: &str, node_id: &str, call_id: &str) -> String {
    format!("{run_id}/{node_id}/{call_id}")
}

/// Where one run's event task writes and broadcasts.
struct EventOut {
    writer: GroupWriter,
    ws: String,
    run_id: String,
    /// The live broadcast.
    tx: broadcast::Sender<LiveEvent>,
    /// The last stored sequence number (0, or more on resume).
    last_seq: i64,
    /// The run's closed spans, taken along with each write.
    spans: crate::trace::SpanBuffer,
}

/// Persists, indexes and broadcasts a run's events, in order, then its end.
///
/// Batches are handed to the group writer as soon as they arrive, without
/// waiting for the previous commit; each batch is broadcast once it is
/// committed, in order, so a subscriber never sees an event the store does
/// not have. The run's end goes right behind its last events.
async fn write_events(
    out: EventOut,
    mut rx: mpsc::UnboundedReceiver<WorkflowEvent>,
    end: oneshot::Receiver<RunEnd>,
) -> Result<(), StoreError> {
    use futures::stream::{FuturesOrdered, StreamExt};
    let EventOut {
        writer,
        ws,
        run_id,
        tx,
        last_seq,
        spans,
    } = out;
    let mut started = true;
    let mut seq = last_seq;
    let mut tools: HashMap<String, (String, String, String)> = HashMap::new();
    let trace_id = crate::trace::trace_id(&run_id);
    let mut in_flight = FuturesOrdered::new();
    let broadcast = |(committed, events): (Result<(), StoreError>, Vec<LiveEvent>)| {
        if let Err(e) = committed {
            tracing::error!(run_id, error = %e, "cannot store run events");
        }
        for event in events {
            let _ = tx.send(event);
        }
    };
    loop {
        tokio::select! {
            biased;
            Some(done) = in_flight.next(), if !in_flight.is_empty() => broadcast(done),
            next = rx.recv() => {
                let Some(first) = next else { break };
                let mut batch = vec![first];
                while let Ok(more) = rx.try_recv() {
                    batch.push(more);
                }
                let mut events = Vec::with_capacity(batch.len());
                let mut numbered = Vec::with_capacity(batch.len());
                let mut invocations = Vec::new();
                let mut blobs = Vec::new();
                for event in &batch {
                    seq += 1;
                    let text = serde_json::to_string(event).unwrap_or_else(|_| "null".into());
                    numbered.push((seq, Arc::from(text.as_str())));
                    events.push((seq, text));
                    invocations.extend(index_event(&ws, &run_id, &trace_id, &mut tools, event));
                    blobs.extend(event_blobs(event));
                }
                let committed = writer.submit(RunWrite::Events {
                    run_id: run_id.clone(),
                    workspace_id: ws.clone(),
                    started: std::mem::take(&mut started),
                    events,
                    invocations,
                    blobs,
                    spans: spans.take(),
                });
                in_flight.push_back(async move { (committed.await, numbered) });
            }
        }
    }
    let ended = match end.await {
        Ok(mut end) => {
            end.spans = spans.take();
            Some(writer.submit(RunWrite::End(Box::new(end))))
        }
        Err(_) => None,
    };
    while let Some(done) = in_flight.next().await {
        broadcast(done);
    }
    match ended {
        Some(ended) => ended.await,
        None => Ok(()),
    }
}

/// The blobs a truncated tool output was moved to; they belong to the
/// run's workspace.
fn event_blobs(event: &WorkflowEvent) -> Vec<BlobRef> {
    let WorkflowEvent::Agent { event, .. } = event else {
        return Vec::new();
    };
    let AgentEvent::ToolCallFinished { envelope } = event.as_ref() else {
        return Vec::new();
    };
    envelope
        .attachments
        .iter()
        .filter(|a| a.kind == node_runtime::AttachmentKind::Blob)
        .map(|a| BlobRef {
            hash: a.url.rsplit('/').next().unwrap_or_default().to_string(),
            content_type: a
                .content_type
                .clone()
                .unwrap_or_else(|| "application/octet-stream".into()),
            bytes: a.bytes.unwrap_or(0) as i64,
        })
        .collect()
}

/// The invocation record one event creates or moves along, if any.
fn index_event(
    ws: &str,
    run_id: &str,
    trace_id: &str,
    tools: &mut HashMap<String, (String, String, String)>,
    event: &WorkflowEvent,
) -> Option<InvocationRow> {
    if let WorkflowEvent::Agent { node_id, event } = event {
        let base = |call_id: &str, tool: &str, input: String| {
            let (name, version) = tool.rsplit_once('@').unwrap_or((tool, ""));
            InvocationRow {
                id: invocation_id(run_id, node_id, call_id),
                workspace_id: ws.to_string(),
                run_id: run_id.to_string(),
                node_id: node_id.clone(),
                call_id: call_id.into(),
                tool_name: name.into(),
                tool_version: version.into(),
                status: String::new(),
                approval_required: 0,
                approval_status: None,
                decided_by: None,
                reason: None,
                input,
                output: None,
                error: None,
                cost: 0.0,
                created_at: now(),
                started_at: None,
                completed_at: None,
                trace_id: Some(trace_id.to_string()),
            }
        };
        let row = match event.as_ref() {
            AgentEvent::ApprovalRequested { request } => {
                tools.insert(
                    request.call_id.clone(),
                    (
                        request.tool.clone(),
                        request.args_summary.clone(),
                        node_id.clone(),
                    ),
                );
                let mut r = base(
                    &request.call_id,
                    &request.tool,
                    request.args_summary.clone(),
                );
                r.status = "pending".into();
                r.approval_required = 1;
                r.approval_status = Some("pending".into());
                Some(r)
            }
            AgentEvent::ApprovalDecided { call_id, decision } => {
                let (tool, input, _) = tools.get(call_id).cloned().unwrap_or_default();
                let mut r = base(call_id, &tool, input);
                r.approval_required = 1;
                let (status, approval, reason) = match decision {
                    Decision::Approve => ("approved", "approved", None),
                    // Seed 001's words: a denial and a request for revision
                    // both reject this call; the reason says which.
                    Decision::Deny { reason } => ("rejected", "rejected", Some(reason.clone())),
                    Decision::Revise { note } => (
                        "rejected",
                        "rejected",
                        Some(format!("revision requested: {note}")),
                    ),
                };
                r.status = status.into();
                r.approval_status = Some(approval.into());
                r.reason = reason;
                Some(r)
            }
            AgentEvent::ToolCallStarted {
                call_id,
                tool,
                input,
            } => {
                let mut r = base(call_id, tool, input.to_string());
                r.status = "running".into();
                r.started_at = Some(now());
                Some(r)
            }
            AgentEvent::ToolCallFinished { envelope } => {
                let mut r = base(
                    &envelope.call_id,
                    &envelope.tool_ref(),
                    envelope.input.to_string(),
                );
                r.status = if envelope.is_success() {
                    "completed"
                } else if envelope
                    .error
                    .as_ref()
                    .is_some_and(|e| e.details.get("outcome") == Some(&json!("unknown")))
                {
                    // An approved write interrupted by a crash: the operator
                    // reconciles it; it is never retried.
                    "outcome_unknown"
                } else {
                    "failed"
                }
                .into();
                r.output = Some(envelope.output.to_string());
                r.error = envelope.error.as_ref().map(|e| json!(e).to_string());
                r.started_at = Some(envelope.t_start.clone());
                r.completed_at = Some(envelope.t_end.clone());
                Some(r)
            }
            _ => None,
        };
        return row;
    }
    None
}

/// The run's checkpoints: ended nodes queued on the group writer (every
/// node of every run writes one), a suspended agent's state synced on its
/// own before the run waits.
struct StoreCheckpoints {
    store: Store,
    writer: GroupWriter,
    run_id: String,
    created: Created,
}

impl Checkpoints for StoreCheckpoints {
    fn node_ended<'a>(&'a self, record: &'a NodeRecord) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let write = RunWrite::NodeCheckpoint {
                run_id: self.run_id.clone(),
                node_id: record.node_id.clone(),
                record: serde_json::to_string(record).unwrap_or_default(),
            };
            // Queued, not awaited: the group writer keeps the run's order,
            // and a checkpoint lost to a crash only means that node runs
            // again on resume (an approved write still runs once: the
            // journal has it).
            drop(self.writer.submit(write));
        })
    }

    fn agent_suspended<'a>(&'a self, node_id: &'a str, run: &'a AgentRun) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let state = serde_json::to_string(run).unwrap_or_default();
            let stored = match self.created.wait().await {
                Ok(()) => {
                    self.store
                        .put_agent_checkpoint(&self.run_id, node_id, &state)
                        .await
                }
                Err(e) => Err(StoreError::Unavailable(e)),
            };
            if let Err(e) = stored {
                tracing::error!(run_id = %self.run_id, error = %e, "cannot store an agent checkpoint");
            }
        })
    }
}

/// Approved writes' intent and result records (see `WriteJournal`).
struct StoreJournal {
    store: Store,
    run_id: String,
    created: Created,
    crash_at: Option<String>,
}

impl StoreJournal {
    /// Fault injection for the crash tests: abort here, like `kill -9`.
    fn crash_point(&self, point: &str) {
        if self.crash_at.as_deref() == Some(point) {
            eprintln!("glassbox: GLASSBOX_TEST_CRASH_AT={point}: aborting");
            std::process::abort();
        }
    }
}

impl WriteJournal for StoreJournal {
    fn begin<'a>(&'a self, agent_run: &'a str, call: &'a ToolCall) -> BoxFuture<'a, JournalEntry> {
        Box::pin(async move {
            let tool = format!("{}@{}", call.tool.spec.name, call.tool.spec.version);
            let begun = match self.created.wait().await {
                Ok(()) => {
                    self.store
                        .journal_begin(agent_run, &call.call_id, &self.run_id, &tool)
                        .await
                }
                Err(e) => Err(StoreError::Unavailable(e)),
            };
            let entry = match begun {
                Ok(None) => JournalEntry::Fresh,
                Ok(Some(Some(text))) => match serde_json::from_str::<ToolEnvelope>(&text) {
                    Ok(envelope) => JournalEntry::Done(Box::new(envelope)),
                    Err(_) => JournalEntry::Unknown,
                },
                Ok(Some(None)) => JournalEntry::Unknown,
                // Without a durable intent the write must not run.
                Err(e) => {
                    tracing::error!(run_id = %self.run_id, error = %e, "cannot record a write intent; the write does not run");
                    JournalEntry::Unknown
                }
            };
            if entry == JournalEntry::Fresh {
                self.crash_point("after_intent");
            }
            entry
        })
    }

    fn finish<'a>(&'a self, agent_run: &'a str, envelope: &'a ToolEnvelope) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.crash_point("after_response");
            let text = serde_json::to_string(envelope).unwrap_or_default();
            self.crash_point("before_result");
            if let Err(e) = self
                .store
                .journal_finish(agent_run, &envelope.call_id, &text)
                .await
            {
                tracing::error!(run_id = %self.run_id, error = %e, "cannot record a write result");
            }
        })
    }
}
