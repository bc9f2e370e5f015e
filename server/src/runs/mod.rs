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
    resume_workflow, ApprovalGate, Checkpoints, EngineServices, ForkRecording, MemoryPinHistory,
    NodeRecord, PinHistory, ProviderModels, ResumeState, RunOutcome, WorkflowEvent, WorkflowSink,
};
use node_runtime::graph::{NodeKind, Workflow};
use node_runtime::secrets::SecretOwner;
use node_runtime::tool::{ToolEnv, ToolRegistry};
use node_runtime::wire::{
    ApprovalStatus, InvocationApproval, InvocationStatus, RunKind, RunStatus,
};
use serde_json::{json, Map, Value};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::storage::{
    new_id, now, ApprovalRow, BlobRef, GroupWriter, InvocationRow, NodeRunRow, PayloadRow, RunEnd,
    RunRow, RunWrite, Store, StoreError, TopPayload,
};

mod approvals;
mod claims;
mod durable;
mod end;
mod events;
mod fork;
mod notices;
mod providers;
mod replay;
mod suites;

pub use approvals::stored_decision;
use approvals::*;
use durable::*;
use end::*;
use events::*;
pub use fork::{ForkBase, ForkError};
pub use replay::{ReplayError, ReplayOutcome, ReplayTimeline};
pub use suites::{
    RunSlot, SuiteHere, MAX_SUITE_RUNS_PER_WORKSPACE, SUITE_INTERRUPTED, SUITE_STOPPED,
};

/// What an interrupted run continues with: its graph, inputs, checkpoints
/// and, for a fork, its origin's recording.
type Resumed = (
    Workflow,
    Map<String, Value>,
    ResumeState,
    Option<Arc<ForkRecording>>,
);

/// A stored run event as broadcast live: its sequence number and JSON text.
pub type LiveEvent = (i64, Arc<str>);

/// A run in progress.
struct LiveRun {
    workspace_id: String,
    /// A fork's origin recording (see `fork`).
    fork: Option<Arc<ForkRecording>>,
    cancel: CancellationToken,
    events: LiveBroadcast,
    created: Created,
    /// The run's task, aborted when this instance lost its claim (see
    /// `claims`).
    task: std::sync::OnceLock<tokio::task::AbortHandle>,
    /// Set when this instance lost its claim: nothing more of the run is
    /// written here (its events, checkpoints, end), and no approved write
    /// starts here.
    abandoned: Abandoned,
}

/// Whether a run was given up here for another instance (see `LiveRun`).
#[derive(Clone, Default)]
pub(super) struct Abandoned(Arc<std::sync::atomic::AtomicBool>);

impl Abandoned {
    pub(super) fn set(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub(super) fn is_set(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
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

/// What a new fork starts with (see `fork`): its origin, the origin's
/// recording, and what it runs as stored in its checkpoint.
struct StartFork {
    origin: String,
    recording: Arc<ForkRecording>,
    spec: String,
}

/// Drops a run's `live` entry (if still this run's: a later resume of the
/// same id is not touched), forgets its claim and tells the waiters, when
/// its task ends however it ends.
struct LiveGone {
    runs: Arc<Runs>,
    id: String,
    live: Arc<LiveRun>,
}

impl Drop for LiveGone {
    fn drop(&mut self) {
        let mine = {
            let mut live = self.runs.live.lock().unwrap_or_else(|e| e.into_inner());
            let mine = live
                .get(&self.id)
                .is_some_and(|l| Arc::ptr_eq(l, &self.live));
            if mine {
                live.remove(&self.id);
            }
            mine
        };
        if mine {
            self.runs.forget_claim(&self.id);
        }
        self.runs.ended.notify_waiters();
    }
}

/// Where a spawned run starts: from scratch, or from a stopped server's
/// checkpoints with the events it stored.
struct StartFrom {
    /// A fork's origin recording (see `fork`).
    fork: Option<Arc<ForkRecording>>,
    resume: ResumeState,
    last_seq: i64,
    created: Created,
    /// Where to hand the agents' outputs once the run's end is written
    /// (see [`Runs::run_to_end`]).
    agents: Option<oneshot::Sender<AgentOutputsByNode>>,
}

/// Each Agent node's outputs (its handles), by node id: the nodes that
/// ended with a replay bundle.
pub type AgentOutputsByNode = BTreeMap<String, BTreeMap<String, Value>>;

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
    /// The runs waiting for each approval token's decision.
    waiters: Mutex<HashMap<String, Vec<oneshot::Sender<Decision>>>>,
    /// Fault injection for the crash tests (`GLASSBOX_TEST_CRASH_AT`,
    /// feature `test-hooks`): the process aborts at that point of an
    /// approved write.
    #[cfg(feature = "test-hooks")]
    crash_at: Option<String>,
    /// Hosts `http_request` and the model providers may reach on loopback
    /// or private addresses (`RunsConfig::http_allow_hosts`).
    http_allow_hosts: Vec<String>,
    /// The workspaces' running MCP servers.
    mcp: Arc<crate::mcp::McpHub>,
    /// Per-workspace caps (`RunsConfig`).
    limits: crate::config::Limits,
    /// Open event streams per workspace.
    streams: Arc<Mutex<HashMap<String, usize>>>,
    /// This process as an instance: its name and the lease of its runs.
    instance: crate::config::InstanceConfig,
    /// Postgres: the advisory lock held under the instance's name (see
    /// `claims`).
    instance_lock: tokio::sync::Mutex<Option<crate::storage::InstanceLock>>,
    /// Whether this process serves (its heartbeat keeps its instance row)
    /// and whether the heartbeat claims the runs of gone instances.
    serving: std::sync::atomic::AtomicBool,
    takeover: std::sync::atomic::AtomicBool,
    /// Whether a takeover is under way (see `claims`).
    taking_over: std::sync::atomic::AtomicBool,
    /// Set by a clean stop (see `Runs::stop`): no beat, no takeover more.
    stopped: std::sync::atomic::AtomicBool,
    /// Held by a beat under way, so a stop waits for it.
    beating: tokio::sync::Mutex<()>,
    /// When this process's runs began (its instance's start).
    started_at: String,
    /// The runs this process has claimed and executes (see `claims`).
    claimed: Mutex<std::collections::HashSet<String>>,
    /// Runs whose newly stored events another process announced (see
    /// `notices`).
    announced: broadcast::Sender<Arc<str>>,
    /// Told each time a run stops executing here (see `suites`: a suite
    /// waits for its forks' ends and for a free run slot).
    ended: tokio::sync::Notify,
    /// The suite runs this process executes, with their workspaces (see
    /// `suites`).
    suites_here: Mutex<HashMap<String, String>>,
    /// Run slots reserved (`RunSlot`) and not yet taken by a run, per
    /// workspace; counted with the live runs against the limit. Locked
    /// before `live` when both are.
    reserved: Mutex<HashMap<String, usize>>,
    /// SQLite: the file lock this process holds while it executes suite
    /// runs, and its token (see `suites`).
    suite_owner: tokio::sync::Mutex<Option<(std::fs::File, String)>>,
}

/// One open event stream, counted against its workspace until dropped.
pub struct StreamSlot {
    streams: Arc<Mutex<HashMap<String, usize>>>,
    workspace_id: String,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = streams.get_mut(&self.workspace_id) {
            *n = n.saturating_sub(1);
        }
    }
}

/// Where the crash tests stop the process, around an approved write
/// (feature `test-hooks`).
#[cfg(feature = "test-hooks")]
pub const CRASH_POINTS: [&str; 3] = ["after_intent", "after_response", "before_result"];

/// The tools every run can call: the built-ins and, in test builds
/// (feature `test-hooks`) with GLASSBOX_TEST_TOOLS=1, the leak-test tools.
pub fn tool_registry(config: &crate::config::RunsConfig) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    node_runtime::builtins::register_builtins(&mut registry)
        .expect("the built-in tools have valid schemas and unique versions");
    #[cfg(feature = "test-hooks")]
    if config.test_hooks.tools {
        registry
            .register(crate::test_tools::SecretProbe)
            .expect("the test tool has a valid schema");
        registry
            .register(crate::test_tools::OldSecretProbe)
            .expect("the test tool has a valid schema");
    }
    #[cfg(not(feature = "test-hooks"))]
    let _ = config;
    registry
}

impl Runs {
    /// `approval_key`: [`crate::secrets::load_approval_key`].
    pub fn new(
        store: Store,
        config: crate::config::RunsConfig,
        cipher: Arc<crate::secrets::SecretCipher>,
        approval_key: [u8; 32],
    ) -> Arc<Self> {
        let registry = tool_registry(&config);
        let crate::config::RunsConfig {
            data_dir,
            traces_url,
            max_output_bytes,
            http_allow_hosts,
            mcp_inherit_env,
            limits,
            instance,
            #[cfg(feature = "test-hooks")]
            test_hooks,
        } = config;
        let mcp = Arc::new(crate::mcp::McpHub::new(
            mcp_inherit_env,
            http_allow_hosts.clone(),
        ));
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
            approval_key,
        });
        let runs = Arc::new(Self {
            writer: GroupWriter::start(store.clone()),
            store: store.clone(),
            registry,
            executor,
            blobs,
            agents,
            data_dir,
            traces_url,
            live: Mutex::new(HashMap::new()),
            waiters: Mutex::new(HashMap::new()),
            #[cfg(feature = "test-hooks")]
            crash_at: test_hooks.crash_at,
            http_allow_hosts,
            mcp,
            limits,
            streams: Default::default(),
            instance,
            instance_lock: tokio::sync::Mutex::new(None),
            serving: Default::default(),
            takeover: Default::default(),
            taking_over: Default::default(),
            stopped: Default::default(),
            beating: Default::default(),
            started_at: now(),
            announced: broadcast::channel(1024).0,
            claimed: Default::default(),
            ended: tokio::sync::Notify::new(),
            suites_here: Default::default(),
            reserved: Default::default(),
            suite_owner: Default::default(),
        });
        tokio::spawn(approvals::watch_decisions(
            Arc::downgrade(&runs),
            store.clone(),
        ));
        tokio::spawn(notices::watch_notices(Arc::downgrade(&runs), store));
        runs.start_heartbeat();
        runs
    }

    /// Whether the workspace may start another run now: `Err(running)`
    /// when it has `limits.runs_per_workspace` runs in progress.
    /// Slots reserved by suite runs (`RunSlot`) count as taken.
    pub fn may_start(&self, workspace_id: &str) -> Result<(), usize> {
        let reserved = self.reserved.lock().unwrap_or_else(|e| e.into_inner());
        let running = self.taken_slots(&reserved, workspace_id);
        if running >= self.limits.runs_per_workspace {
            Err(running)
        } else {
            Ok(())
        }
    }

    /// A slot for one more event stream of the workspace, or `Err(open)`
    /// at `limits.streams_per_workspace`.
    pub fn stream_slot(&self, workspace_id: &str) -> Result<StreamSlot, usize> {
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        let open = streams.entry(workspace_id.to_string()).or_default();
        if *open >= self.limits.streams_per_workspace {
            return Err(*open);
        }
        *open += 1;
        Ok(StreamSlot {
            streams: self.streams.clone(),
            workspace_id: workspace_id.to_string(),
        })
    }

    /// The built-in tools (what every workspace has).
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }

    /// The workspaces' running MCP servers.
    pub fn mcp(&self) -> &Arc<crate::mcp::McpHub> {
        &self.mcp
    }

    /// A workspace's tools as listed and validated against: the built-ins
    /// and its discovered MCP tools (nothing is started), with where each
    /// MCP tool comes from.
    pub async fn workspace_tools(
        &self,
        workspace_id: &str,
    ) -> Result<(ToolRegistry, HashMap<String, crate::mcp::McpSource>), StoreError> {
        crate::mcp::registry_for(
            &self.registry,
            &self.store,
            &self.mcp,
            workspace_id,
            &[],
            &[],
        )
        .await
    }

    /// The blob store truncated outputs go to.
    pub fn blobs(&self) -> &FsBlobStore {
        &self.blobs
    }

    pub fn agents(&self) -> &Arc<AgentRuntime> {
        &self.agents
    }

    /// The group writer of this process's runs (see `storage::group`),
    /// which also takes the audit log's entries.
    pub fn writer(&self) -> &GroupWriter {
        &self.writer
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
        self.start_as(owner, workflow, inputs, trigger, None, None, None)
            .await
    }

    /// [`Runs::start`], or with `fork` (its origin's id and recording, and
    /// its checkpoint, written with its row) a run of kind `fork` linked
    /// to its origin; with `slot`, in that reserved run slot. Refused once
    /// this process's runs are stopped (`Runs::stop`).
    #[allow(clippy::too_many_arguments)]
    async fn start_as(
        self: &Arc<Self>,
        owner: SecretOwner,
        workflow: Workflow,
        inputs: Map<String, Value>,
        trigger: &str,
        fork: Option<StartFork>,
        slot: Option<RunSlot>,
        agents: Option<oneshot::Sender<AgentOutputsByNode>>,
    ) -> Result<String, StoreError> {
        if self.stopping() {
            return Err(StoreError::Unavailable(
                "the server is stopping: no run starts".into(),
            ));
        }
        let run_id = new_id();
        let (kind, origin, fork, spec) = match fork {
            Some(f) => (
                RunKind::Fork,
                Some(f.origin),
                Some(f.recording),
                Some(f.spec),
            ),
            None => (RunKind::Run, None, None, None),
        };
        let created = Created::queued(self.writer.submit(RunWrite::Create {
            run: Box::new(RunRow {
                kind: kind.as_str().into(),
                replay_of: origin,
                trigger_kind: trigger.into(),
                inputs: Value::Object(inputs.clone()).to_string(),
                started_by: owner.user_id.clone(),
                ..new_run_row(&run_id, &owner.workspace_id, &workflow)
            }),
            fork: spec,
        }));
        let from = StartFrom {
            fork,
            resume: ResumeState::default(),
            last_seq: 0,
            created: created.clone(),
            agents,
        };
        self.spawn(owner, &run_id, workflow, inputs, from);
        // The run holds its slot as a live run now.
        if let Some(slot) = slot {
            slot.taken();
        }
        if let Err(e) = created.wait().await {
            self.cancel(&run_id);
            return Err(StoreError::Unavailable(e));
        }
        self.claim_new(&run_id);
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
            fork,
            resume,
            last_seq,
            created,
            agents,
        } = from;
        let events = LiveBroadcast::default();
        let live = Arc::new(LiveRun {
            workspace_id: owner.workspace_id.clone(),
            fork,
            cancel: CancellationToken::new(),
            events,
            created,
            task: std::sync::OnceLock::new(),
            abandoned: Abandoned::default(),
        });
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(run_id.to_string(), live.clone());
        let this = self.clone();
        let id = run_id.to_string();
        let slot = live.clone();
        let handle = tokio::spawn(async move {
            // Whatever ends the task (its end, a panic, an abort), the run
            // no longer executes here.
            let _gone = LiveGone {
                runs: this.clone(),
                id: id.clone(),
                live: live.clone(),
            };
            // Everything the run does is inside its span (see `trace`).
            let (span, route) = crate::trace::run_span(&id, &this.writer);
            let run = Run {
                owner: &owner,
                id: &id,
                live,
                span,
                spans: route.spans(),
            };
            // Boxed: the run's whole state machine (tens of KB) inline in
            // this task's future was copied three times as the task was
            // made, about 84K instructions a run through the API
            // (callgrind of `glassbox serve`, issue #30); now the task is
            // small and the run's future is built once, on the heap.
            Box::pin(this.execute(run, workflow, inputs, resume, last_seq, agents)).await;
            drop(route);
        });
        let _ = slot.task.set(handle.abort_handle());
    }

    /// Picks up the runs a stopped server left unfinished (on SQLite every
    /// one; on Postgres those no live instance holds, see `claims`): each
    /// continues from its checkpoints (ended nodes stay ended, an agent
    /// waiting for approval waits again with the same approvals, approved
    /// writes go through the journal). A run that cannot continue is marked
    /// failed with the reason. Returns how many were resumed.
    pub async fn recover(self: &Arc<Self>) -> Result<usize, StoreError> {
        let resumed = self.take_over(true).await?;
        // A suite run is not resumed: one no live process executes ends
        // `error` (see `suites`).
        self.end_interrupted_suite_runs(true).await?;
        Ok(resumed)
    }

    /// Resumes one claimed run; `Ok(false)` when it could not continue
    /// (it is then marked failed with the reason).
    async fn resume_run(self: &Arc<Self>, run: RunRow) -> Result<bool, StoreError> {
        // Cancelled while its holder was gone: it ends, and is not resumed.
        if self.store.cancel_requested(&run.id).await? {
            tracing::info!(run_id = %run.id, "a claimed run was cancelled while no instance executed it");
            self.end_cancelled_unexecuted(&run.id).await?;
            return Ok(false);
        }
        match self.resume_state(&run).await {
            Ok((workflow, inputs, state, fork)) => {
                let last_seq = self.store.last_event_seq(&run.id).await?;
                // The starter's scopes, as when the run started.
                let owner = SecretOwner {
                    user_id: run.started_by.clone(),
                    ..self.workspace_owner(&run.workspace_id).await?
                };
                tracing::info!(run_id = %run.id, nodes_done = state.records.len(), agents_waiting = state.agents.len(), "resuming an interrupted run");
                let from = StartFrom {
                    fork,
                    resume: state,
                    last_seq,
                    created: Created::stored(),
                    agents: None,
                };
                self.spawn(owner, &run.id, workflow, inputs, from);
                Ok(true)
            }
            Err(reason) => {
                tracing::warn!(run_id = %run.id, %reason, "an interrupted run cannot continue");
                self.writer
                    .write(RunWrite::End(Box::new(RunEnd {
                        run_id: run.id.clone(),
                        status: RunStatus::Failed.as_str().into(),
                        error: Some(format!(
                            "interrupted by a server stop and not resumable: {reason}"
                        )),
                        ..RunEnd::default()
                    })))
                    .await?;
                Ok(false)
            }
        }
    }

    async fn resume_state(&self, run: &RunRow) -> Result<Resumed, String> {
        let checkpoints = self
            .store
            .checkpoints(&run.id)
            .await
            .map_err(|e| e.to_string())?;
        // A fork runs its own graph, answered from its origin's recording.
        let (workflow, fork) = if run.kind == RunKind::Fork.as_str() {
            let (workflow, recording) = self.fork_to_resume(run, &checkpoints).await?;
            (workflow, Some(recording))
        } else {
            let (Some(workflow_id), Some(revision)) = (&run.workflow_id, run.workflow_revision)
            else {
                return Err("the run names no workflow revision".into());
            };
            let row = self
                .store
                .revision_in(&run.workspace_id, workflow_id, revision)
                .await
                .map_err(|e| e.to_string())?;
            let workflow = Workflow::from_json(&row.document).map_err(|e| e.to_string())?;
            (workflow, None)
        };
        let inputs: Map<String, Value> =
            serde_json::from_str(&run.inputs).map_err(|e| format!("inputs: {e}"))?;
        let mut state = ResumeState::default();
        for (node_id, kind, text) in checkpoints {
            match kind.as_str() {
                fork::CHECKPOINT => {}
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
        Ok((workflow, inputs, state, fork))
    }

    /// Runs a workflow to its end and waits for it (the CLI uses this):
    /// its row as stored, and its Agent nodes' outputs as the run made
    /// them, handed over once its end is written instead of read back and
    /// parsed again (issue #30: a long run's outputs repeat every call's
    /// input). A run whose end could not be handed over (it failed before
    /// its nodes ran) gives none.
    pub async fn run_to_end(
        self: &Arc<Self>,
        workspace_id: &str,
        workflow: Workflow,
        inputs: Map<String, Value>,
        trigger: &str,
    ) -> Result<(RunRow, AgentOutputsByNode), StoreError> {
        let owner = self.workspace_owner(workspace_id).await?;
        let (tx, rx) = oneshot::channel();
        let run_id = self
            .start_as(owner, workflow, inputs, trigger, None, None, Some(tx))
            .await?;
        self.wait_end(&run_id).await;
        let agents = rx.await.unwrap_or_default();
        Ok((self.store.get_run(workspace_id, &run_id).await?, agents))
    }

    async fn execute(
        self: &Arc<Self>,
        run: Run<'_>,
        workflow: Workflow,
        inputs: Map<String, Value>,
        resume: ResumeState,
        last_seq: i64,
        agents: Option<oneshot::Sender<AgentOutputsByNode>>,
    ) {
        let Run {
            owner,
            id: run_id,
            live,
            span,
            spans,
        } = run;
        let (tx, rx) = mpsc::unbounded_channel::<WorkflowEvent>();
        let (end_tx, end_rx) = oneshot::channel::<(RunEnd, HashMap<String, Checkpointed>)>();
        let ended = EndedCheckpoints::default();
        let committed = Committed::default();
        // Its first write marks the run running.
        let out = EventOut {
            writer: self.writer.clone(),
            ws: owner.workspace_id.clone(),
            run_id: run_id.to_string(),
            tx: live.events.clone(),
            last_seq,
            spans,
            abandoned: live.abandoned.clone(),
            committed: committed.clone(),
        };
        let writer = tokio::spawn(write_events(out, rx, end_rx));
        let last = tx.clone();
        let (mut result, pins) = self
            .run_engine(
                owner, run_id, &workflow, inputs, &live, resume, tx, &ended, &committed,
            )
            .instrument(span)
            .await;
        // A run the engine refused before any node ran (an invalid
        // workflow, bad inputs) still ends its event stream with its last
        // event, so a watcher learns at once that it failed and why.
        if let Err(e) = &result {
            let _ = last.send(WorkflowEvent::RunFinished {
                outcome: RunOutcome::Failed,
                error: Some(e.to_string()),
            });
        }
        drop(last);
        // The run span has closed by now: its row goes with the end.
        // A fork does not write its workflow's pin history (see `end_of`).
        let pins = live.fork.is_none().then_some(pins.as_ref());
        // The nodes' checkpoints wrote their outputs and bundles already.
        let checkpointed = std::mem::take(&mut *ended.lock().unwrap_or_else(|e| e.into_inner()));
        let mut end = end_of(run_id, &workflow, &mut result, pins, &checkpointed);
        // The record carries the workflow it ran, so a replay needs nothing
        // else; written cut, straight from the values (issue #30).
        if let Ok(run) = &result {
            let record = RunRecord {
                run,
                workflow: &workflow,
            };
            committed.with(|known| end.write_record(&record, known));
        }
        // The nodes that ended with a bundle are the agents whose outputs
        // the caller asked for.
        let bundled: Vec<String> = match &agents {
            Some(_) => end.bundles.iter().map(|(id, _, _)| id.clone()).collect(),
            None => Vec::new(),
        };
        let _ = end_tx.send((end, checkpointed));
        match writer.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(run_id, error = %e, "cannot record the end of a run"),
            Err(e) => tracing::error!(run_id, error = %e, "the event writer of a run failed"),
        }
        if let (Some(tx), Ok(run)) = (agents, result.as_mut()) {
            let outputs = bundled
                .into_iter()
                .filter_map(|id| {
                    let outputs = std::mem::take(&mut run.nodes.get_mut(&id)?.outputs);
                    Some((id, outputs))
                })
                .collect();
            let _ = tx.send(outputs);
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
        ended: &EndedCheckpoints,
        committed: &Committed,
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
        // The workspace's connections, their secrets resolved for this run.
        let connections = match crate::connections::for_run(
            &self.store,
            self.executor.secret_source().as_ref(),
            owner,
            &files,
        )
        .await
        {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(run_id, error = %e, "cannot load the workspace's connections");
                Default::default()
            }
        };
        // The built-ins and the workspace's MCP tools, their servers started
        // on first call.
        let registry = match crate::mcp::registry_for(
            &self.registry,
            &self.store,
            &self.mcp,
            ws,
            &connections.mcp,
            &connections.unavailable,
        )
        .await
        {
            Ok((r, _)) => Arc::new(r),
            Err(e) => {
                tracing::error!(run_id, error = %e, "cannot load the workspace's MCP tools");
                self.registry.clone()
            }
        };
        let agents = Arc::new(AgentRuntime {
            registry: registry.clone(),
            approval_key: self.agents.approval_key,
        });
        let services = EngineServices {
            registry,
            executor: self.executor.clone(),
            agents,
            models: Arc::new(ProviderModels(self.model_env())),
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
                sql: connections.sql,
                http: connections.http,
                unavailable: connections.unavailable,
            }),
            traces_url: self.traces_url.clone(),
            fork: live.fork.clone(),
            checkpoints: Some(Arc::new(StoreCheckpoints {
                store: self.store.clone(),
                writer: self.writer.clone(),
                run_id: run_id.into(),
                created: live.created.clone(),
                abandoned: live.abandoned.clone(),
                ended: ended.clone(),
                committed: committed.clone(),
            })),
            journal: Some(Arc::new(StoreJournal {
                store: self.store.clone(),
                run_id: run_id.into(),
                created: live.created.clone(),
                abandoned: live.abandoned.clone(),
                #[cfg(feature = "test-hooks")]
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

    /// Hands a recorded decision to the runs waiting for it.
    pub fn deliver(&self, token: &str, decision: Decision) -> bool {
        let waiting = self
            .waiters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(token)
            .unwrap_or_default();
        let mut delivered = false;
        for tx in waiting {
            delivered |= tx.send(decision.clone()).is_ok();
        }
        delivered
    }
}

/// A serde unit enum as its wire word (`done`, `failed`, ...).
fn word(v: impl serde::Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}
