//! Group commit for the writes of running workflows.
//!
//! Every run produces a stream of small writes (its events with the
//! invocation records they move, its status, its end). With a hundred runs
//! at once, a transaction each would queue behind SQLite's single writer.
//! Instead each write goes to one [`GroupWriter`] (a thread of its own on
//! SQLite, a task on Postgres), which takes
//! everything queued, applies it in one transaction and commits once; each
//! caller then learns its own result. A write that fails does not sink the
//! others: the batch is rolled back and replayed one write per transaction.
//!
//! The order of one run's writes is kept (one queue, applied in order), so
//! stored events keep their sequence.

use std::collections::HashMap;

use tokio::sync::{mpsc, oneshot};

use super::payloads::{Known, PayloadSet};
use super::*;
/// The most writes one transaction takes.
const MAX_BATCH: usize = 512;

/// The most bound values of a batch script kept prepared (see
/// [`apply_sqlite`]): a run's usual batch binds a few dozen; bigger ones
/// (many runs at once) rarely repeat their exact shape, and SQLite's
/// statement cache holds a hundred scripts per connection.
const CACHED_SCRIPT_PARAMS: usize = 1_000;

/// The kind of a fork's checkpoint (what it runs; see `runs::fork`): no
/// node, written with the fork's row (`RunWrite::Create`).
pub const FORK_CHECKPOINT: &str = "fork";

/// A blob a run's output was moved to (metadata only).
#[derive(Debug, Clone)]
pub struct BlobRef {
    pub hash: String,
    pub content_type: String,
    pub bytes: i64,
}

/// The end of a run: its node rows, bundles, pin values and final status,
/// stored together.
#[derive(Debug, Clone, Default)]
///
/// JSON arrives serialized: the runs serialize in parallel, the one writer
/// only stores.
pub struct RunEnd {
    pub run_id: String,
    pub status: String,
    /// JSON.
    pub outputs: Option<String>,
    pub error: Option<String>,
    /// JSON, or a skeleton when `record_refs` is set (see `payloads`).
    pub record: Option<String>,
    pub record_refs: Option<String>,
    pub nodes: Vec<NodeRunRow>,
    /// `(node_id, bundle JSON or skeleton, refs)`.
    pub bundles: Vec<(String, String, Option<String>)>,
    /// The payloads the record, node outputs and bundles refer to.
    pub payloads: Vec<PayloadRow>,
    /// `(workflow_id, node_id, pin, value JSON)`.
    pub pins: Vec<(String, String, String, String)>,
    /// The run's spans that closed since its last write.
    pub spans: Vec<SpanRow>,
}

/// One write of a running workflow.
#[derive(Debug, Clone)]
pub enum RunWrite {
    /// A new run's record. Queued ahead of the run's own writes, so the
    /// run can start before it is committed (see `Runs::start`). `fork`:
    /// what a fork runs, its checkpoint of kind `fork`, stored in the same
    /// transaction as its row (a fork never exists without it, and its
    /// end, always later, drops it).
    Create {
        run: Box<RunRow>,
        fork: Option<String>,
    },
    Status {
        run_id: String,
        status: String,
    },
    /// A batch of events with the invocation records and blobs they touch,
    /// and the run's spans that closed meanwhile (see `trace`).
    Events {
        run_id: String,
        workspace_id: String,
        /// The run's first write since it started: a `queued` run becomes
        /// `running` (any other status stays; it was set on purpose).
        started: bool,
        /// `(seq, event JSON or skeleton, refs)` (see `payloads`).
        events: Vec<(i64, String, Option<String>)>,
        /// The payloads the events refer to that no committed write of the
        /// run stored (so a write that fails alone leaves no ref behind).
        payloads: Vec<PayloadRow>,
        invocations: Vec<InvocationRow>,
        blobs: Vec<BlobRef>,
        spans: Vec<SpanRow>,
    },
    End(Box<RunEnd>),
    /// An ended node's record, for resuming the run after a crash
    /// (made by [`RunWrite::node_checkpoint`]).
    NodeCheckpoint {
        run_id: String,
        node_id: String,
        /// The `NodeRecord`, as JSON, or a skeleton when `refs` is set.
        record: String,
        refs: Option<String>,
        /// The payloads `refs` names.
        payloads: Vec<PayloadRow>,
    },
    /// Closed spans of runs (a span arrives once; a repeat is ignored).
    Spans(Vec<SpanRow>),
    /// An entry of a workspace's audit log (see `crate::audit`): one more
    /// row in the batch's transaction instead of a commit of its own
    /// contending with the batches for SQLite's one writer.
    Audit(Box<AuditEntry>),
}

impl RunEnd {
    /// Cuts the payloads out of the node rows' outputs and the bundles
    /// (their texts were whole), into [`RunEnd::payloads`] (the record was
    /// cut as it was written: [`Self::write_record`]). A node's outputs and
    /// a bundle are each one payload, the very ones the record and the
    /// node's checkpoint refer to. Call it on the run's task.
    /// Payloads `known` has stored (committed by the run's earlier writes)
    /// are referred to without being stored again, and the texts whose
    /// hashes it took are not hashed again: the record repeats every tool
    /// input the run's events carried (issue #30).
    /// Node rows and bundles already given as refs (see
    /// [`Self::refer_stored`]) stay as they are.
    pub fn dehydrate(&mut self, known: Known) {
        let mut set = PayloadSet::known(known);
        for n in self.nodes.iter_mut().filter(|n| n.outputs_refs.is_none()) {
            let d = set.dehydrate_whole(&n.outputs);
            n.outputs = d.text;
            n.outputs_refs = d.refs;
        }
        for (_, bundle, refs) in self.bundles.iter_mut().filter(|(_, _, r)| r.is_none()) {
            let d = set.dehydrate_whole(bundle);
            *bundle = d.text;
            *refs = d.refs;
        }
        self.payloads.extend(set.into_rows());
        // The record's rows, the checkpoints' and these may name one
        // payload twice (each set keeps its own once).
        let mut seen = std::collections::HashSet::new();
        self.payloads.retain(|p| seen.insert(p.hash.clone()));
    }

    /// The run's record, written cut (see `PayloadSet::serialize`) with
    /// what the run's writes know: it repeats every tool input and the
    /// nodes' outputs, which it refers to. Its new rows go with the end,
    /// and until then are pending for the run's last events (see
    /// [`Known::pend`]).
    pub fn write_record<T: serde::Serialize + ?Sized>(&mut self, record: &T, known: &mut Known) {
        let mut set = PayloadSet::known(std::mem::take(known));
        // A record is plain data and always serializes.
        if let Ok(d) = set.serialize(record) {
            self.record = Some(d.text);
            self.record_refs = d.refs;
        }
        let (rows, back) = set.into_known();
        *known = back;
        known.pend(&rows);
        self.payloads.extend(rows);
    }

    /// Gives `node`'s outputs (`key` "outputs") or bundle ("bundle") as the
    /// payload `hash`, which this write or a committed one of the run
    /// stores: the text is not hashed, cut or compressed again. The caller
    /// vouches that the payload is that very text.
    pub fn refer_stored(&mut self, node: &str, key: &str, hash: &str) {
        let d = PayloadSet::stored_whole(hash);
        match key {
            "outputs" => {
                if let Some(n) = self.nodes.iter_mut().find(|n| n.node_id == node) {
                    (n.outputs, n.outputs_refs) = (d.text, d.refs);
                }
            }
            "bundle" => {
                if let Some((_, bundle, refs)) =
                    self.bundles.iter_mut().find(|(id, _, _)| id == node)
                {
                    (*bundle, *refs) = (d.text, d.refs);
                }
            }
            _ => {}
        }
    }
}

impl RunWrite {
    /// An ended node's checkpoint, its `NodeRecord` written as JSON
    /// dehydrated (cut as it is written: the whole text of a long run's
    /// record is never made): its outputs and bundle are the payloads the
    /// run's end stores too. With the payloads cut from the record's own
    /// keys (`outputs`, `bundle`, ...), which the run's end can refer to
    /// (see `RunEnd::refer_stored`). Payloads `known` has stored (committed
    /// by the run's earlier writes, e.g. the tool inputs and outputs its
    /// events carried) are referred to without being stored again.
    pub fn node_checkpoint<T: serde::Serialize + ?Sized>(
        run_id: &str,
        node_id: &str,
        record: &T,
        known: &mut Known,
    ) -> (Self, Vec<TopPayload>) {
        let mut set = PayloadSet::known(std::mem::take(known));
        // A record is plain data and always serializes; were it not to, the
        // checkpoint is empty and the node runs again on resume.
        let (d, top) = set.serialize_object(record).unwrap_or_default();
        let (payloads, back) = set.into_known();
        *known = back;
        let write = RunWrite::NodeCheckpoint {
            run_id: run_id.into(),
            node_id: node_id.into(),
            record: d.text,
            refs: d.refs,
            payloads,
        };
        (write, top)
    }

    /// The payload rows this write stores.
    pub fn payloads(&self) -> &[PayloadRow] {
        match self {
            RunWrite::Events { payloads, .. } | RunWrite::NodeCheckpoint { payloads, .. } => {
                payloads
            }
            RunWrite::End(end) => &end.payloads,
            _ => &[],
        }
    }
}

type Job = (RunWrite, oneshot::Sender<Result<(), String>>);

/// The handle of the group-commit task; cheap to clone.
#[derive(Clone, Debug)]
pub struct GroupWriter {
    tx: mpsc::UnboundedSender<Job>,
}

impl GroupWriter {
    /// Starts the writer (it ends when every handle is dropped).
    ///
    /// On SQLite it runs on a thread of its own: its work is mostly
    /// waiting for SQLite's worker thread, and as a task on the runtime
    /// each of its wake-ups would queue behind the runs' tasks (with 100
    /// runs on 2 cores, 0.3 ms at p50 and 0.6 ms at p99 of a run's
    /// latency; see the `api_runs` bench). Postgres connections are
    /// sockets of the runtime that opened them, so there it is a task.
    pub fn start(store: Store) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let as_task = if store.is_sqlite() {
            start_thread(store, rx).err()
        } else {
            Some((store, rx))
        };
        if let Some((store, rx)) = as_task {
            tokio::spawn(run(store, rx, false));
        }
        Self { tx }
    }

    /// Queues a write and waits until it is committed.
    pub async fn write(&self, write: RunWrite) -> Result<(), StoreError> {
        self.submit(write).await
    }

    /// Waits until every write queued before this call is applied (a
    /// reader that must see them, e.g. the audit log's page).
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.submit(RunWrite::Spans(Vec::new())).await
    }

    /// Queues a write at once; the returned future says when it is
    /// committed (dropping it does not cancel the write). Writes submitted
    /// one after another are applied in that order.
    pub fn submit(
        &self,
        write: RunWrite,
    ) -> impl std::future::Future<Output = Result<(), StoreError>> + Send + 'static {
        let (done, wait) = oneshot::channel();
        let sent = self.tx.send((write, done)).is_ok();
        async move {
            if !sent {
                return Err(StoreError::Unavailable("the writer has stopped".into()));
            }
            wait.await
                .map_err(|_| StoreError::Unavailable("the writer has stopped".into()))?
                .map_err(StoreError::Unavailable)
        }
    }
}

/// Runs the writer on a thread of its own with a single-threaded runtime;
/// gives the parts back when either cannot be had.
fn start_thread(
    store: Store,
    rx: mpsc::UnboundedReceiver<Job>,
) -> Result<(), (Store, mpsc::UnboundedReceiver<Job>)> {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::warn!(error = %e, "no runtime for the writer thread; the writer runs as a task");
            return Err((store, rx));
        }
    };
    // The parts go over a channel, so a thread that cannot start leaves
    // them here.
    let (hand, take) = std::sync::mpsc::channel::<(Store, mpsc::UnboundedReceiver<Job>)>();
    let spawned = std::thread::Builder::new()
        .name("glassbox-writer".into())
        .spawn(move || {
            if let Ok((store, rx)) = take.recv() {
                runtime.block_on(run(store, rx, true));
            }
        });
    match spawned {
        Ok(_) => hand
            .send((store, rx))
            .map_err(|std::sync::mpsc::SendError(parts)| parts),
        Err(e) => {
            tracing::warn!(error = %e, "cannot start the writer thread; the writer runs as a task");
            Err((store, rx))
        }
    }
}

/// The writer's loop. `direct`: on its own thread, where SQLite's calls may
/// block, it writes through the store's own connection to the file (see
/// [`apply_direct`]).
async fn run(store: Store, mut rx: mpsc::UnboundedReceiver<Job>, direct: bool) {
    let mut batch: Vec<Job> = Vec::new();
    while let Some(first) = rx.recv().await {
        if direct {
            store.restart_large_wal();
        }
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        match apply_all(&store, direct, batch.iter().map(|(w, _)| w)).await {
            Ok(()) => {
                for (_, done) in batch.drain(..) {
                    let _ = done.send(Ok(()));
                }
            }
            Err(_) => {
                // Find the culprit: one transaction per write.
                for (write, done) in batch.drain(..) {
                    let result = apply_all(&store, direct, std::iter::once(&write)).await;
                    if let Err(e) = &result {
                        tracing::error!(error = %e, "cannot store a run write");
                    }
                    let _ = done.send(result.map_err(|e| e.to_string()));
                }
            }
        }
    }
}

/// Without the store's connection for the writer (it runs as a task, the
/// store is closed or could not open the file; see [`apply_direct`]): applies statements in one
/// SQLite transaction sent through the writer pool as scripts, `BEGIN`
/// and `COMMIT` included: one round trip to SQLite's worker thread for a
/// whole batch (more only past the parameter limit) instead of one per
/// statement. Under load every round trip waits for a CPU, so this is what
/// keeps a commit short. On failure the transaction is rolled back.
///
/// A batch that fits in one script of at most [`CACHED_SCRIPT_PARAMS`]
/// values is kept prepared on the connection, keyed by its text: a run's
/// batches come in a few shapes (which tables, how many rows each; the
/// statements are always in the same order), so a repeated shape is bound
/// and stepped without SQLite parsing and planning each statement again
/// (issue #30: statement preparation fell from about 210K to 90K
/// instructions per sequential tool call).
/// Bigger or split scripts are one-offs and are not cached.
async fn apply_sqlite(
    conn: &mut AnyConnection,
    statements: Vec<(&Values, Vec<Vec<Arg>>)>,
) -> Result<(), StoreError> {
    let result = async {
        let mut script = Script {
            sql: "BEGIN IMMEDIATE;\n".into(),
            args: Vec::new(),
            positional: true,
        };
        let mut split = false;
        for (statement, rows) in statements {
            let Some(width) = rows.first().map(Vec::len) else {
                continue;
            };
            let per_statement = (MAX_PARAMS / width).max(1);
            let mut rows = rows.into_iter().peekable();
            while rows.peek().is_some() {
                let room = MAX_SCRIPT_PARAMS.saturating_sub(script.args.len()) / width;
                if room == 0 {
                    let full = std::mem::replace(
                        &mut script,
                        Script {
                            positional: true,
                            ..Script::default()
                        },
                    );
                    full.execute(conn).await?;
                    split = true;
                    continue;
                }
                script.push(statement, &mut rows, per_statement.min(room));
            }
        }
        script.sql.push_str("COMMIT;");
        let cache = !split && script.args.len() <= CACHED_SCRIPT_PARAMS;
        script.execute_prepared(conn, cache).await
    }
    .await;
    if result.is_err() {
        // Whatever ran of the transaction is undone; no transaction is fine too.
        let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
    }
    result
}

/// Applies statements in one SQLite transaction on the writer thread's own
/// connection: each table's statement is prepared for one row once and kept
/// (a handful in all), then bound and stepped for each row. No SQL text is
/// parsed per batch, and nothing waits on another thread: through the pool
/// a batch of a new shape (which tables, how many rows each) was a new
/// script that SQLite parsed and planned again, about 117K instructions
/// per sequential tool call, and each script was a round trip to the pool
/// connection's worker thread (issue #30). `BEGIN IMMEDIATE` and `COMMIT`
/// are kept prepared too: rusqlite's `Transaction` runs each as a script,
/// parsed again every time, about 25K instructions apiece, some 250K of
/// the 3M a run through the API costs (callgrind of `glassbox serve`).
/// On failure the transaction is rolled back.
fn apply_direct(
    conn: &rusqlite::Connection,
    statements: &[(&Values, Vec<Vec<Arg>>)],
) -> Result<(), StoreError> {
    // A statement without parameters, from the connection's kept ones.
    let step = |sql: &str| conn.prepare_cached(sql)?.execute([]).map(drop);
    step("BEGIN IMMEDIATE")?;
    let written = statements
        .iter()
        .try_for_each(|(statement, rows)| {
            let Some(width) = rows.first().map(Vec::len) else {
                return Ok(());
            };
            let mut prepared = conn.prepare_cached(&statement.single_row(width))?;
            rows.iter()
                .try_for_each(|row| prepared.execute(rusqlite::params_from_iter(row)).map(drop))
        })
        .and_then(|()| step("COMMIT"));
    if written.is_err() && !conn.is_autocommit() {
        // What failed is the error to report; a failed rollback leaves
        // the transaction to SQLite, which rolls it back on close.
        let _ = step("ROLLBACK");
    }
    Ok(written?)
}

/// Folds a later record of the same invocation into an earlier one the way
/// the upsert does (see `INVOCATION_UPSERT_TAIL`), so one statement never
/// touches a row twice.
fn merge_invocation(into: &mut InvocationRow, later: &InvocationRow) {
    into.status = later.status.clone();
    if later.approval_status.is_some() {
        into.approval_status = later.approval_status.clone();
    }
    if later.decided_by.is_some() {
        into.decided_by = later.decided_by.clone();
    }
    if later.reason.is_some() {
        into.reason = later.reason.clone();
    }
    into.output = later.output.clone();
    into.output_refs = later.output_refs.clone();
    into.error = later.error.clone();
    into.cost = later.cost;
    if into.started_at.is_none() {
        into.started_at = later.started_at.clone();
    }
    into.completed_at = later.completed_at.clone();
}

/// A map of one batch's rows by their ids, hashed with foldhash: the keys
/// are ids this server made (run, span, call and payload ids), and a batch
/// holds at most [`MAX_BATCH`] writes; SipHash and its growing tables took
/// about 1% of a sequential tool call's instructions (issue #30).
type BatchMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Spans by `(run_id, span_id)`: a span arrives once, a repeat is ignored.
fn add_spans<'a>(into: &mut BatchMap<(&'a str, &'a str), Vec<Arg>>, rows: &'a [SpanRow]) {
    for r in rows {
        into.insert((&r.run_id, &r.span_id), span_args(r));
    }
}

/// Applies writes in one transaction, with one multi-row statement per
/// table and kind: a statement costs a round trip to SQLite's worker
/// thread, which dominates under load. A run's status writes come before
/// its end (a run is never both started and ended in one batch the other
/// way round).
async fn apply_all<'a>(
    store: &Store,
    direct: bool,
    writes: impl Iterator<Item = &'a RunWrite>,
) -> Result<(), StoreError> {
    let at = now();
    let mut statuses: Vec<Vec<Arg>> = Vec::new();
    let mut status_at: BatchMap<&str, usize> = BatchMap::default();
    let mut events = Vec::new();
    let mut invocations: Vec<InvocationRow> = Vec::new();
    let mut invocation_at: BatchMap<&str, usize> = BatchMap::default();
    let mut blobs: BatchMap<(&str, &str), Vec<Arg>> = BatchMap::default();
    // Runs that end in this batch.
    let mut ended: Vec<&str> = Vec::new();
    let mut finished = Vec::new();
    let mut nodes = Vec::new();
    let mut bundles = Vec::new();
    let mut pins: BatchMap<(&str, &str, &str), Vec<Arg>> = BatchMap::default();
    let mut checkpoints: BatchMap<(&str, &str), Vec<Arg>> = BatchMap::default();
    // Each write carries every payload it refers to (so a write that
    // fails alone leaves no ref behind); a payload is stored once.
    let mut payloads: BatchMap<(&str, &str), Vec<Arg>> = BatchMap::default();
    let mut add_payloads = |run_id: &'a str, rows: &'a [PayloadRow]| {
        for p in rows {
            payloads
                .entry((run_id, &p.hash))
                .or_insert_with(|| payload_args(run_id, p));
        }
    };
    let mut spans: BatchMap<(&str, &str), Vec<Arg>> = BatchMap::default();
    let mut audits = Vec::new();
    let mut started = Vec::new();
    let mut created = Vec::new();
    // Runs with events or an end in this batch (announced on Postgres).
    let mut announced: std::collections::BTreeSet<&str> = Default::default();
    for w in writes {
        match w {
            RunWrite::Create { run, fork } => {
                created.push(run_args(run));
                if let Some(spec) = fork {
                    checkpoints.insert(
                        (&run.id, ""),
                        vec![
                            (&run.id).into(),
                            "".into(),
                            FORK_CHECKPOINT.into(),
                            spec.into(),
                            at.as_str().into(),
                            None::<String>.into(),
                        ],
                    );
                }
            }
            // The last status of a run wins (one statement touches a row once).
            RunWrite::Status { run_id, status } => match status_at.get(run_id.as_str()) {
                Some(&k) => statuses[k] = vec![run_id.into(), status.into()],
                None => {
                    status_at.insert(run_id, statuses.len());
                    statuses.push(vec![run_id.into(), status.into()]);
                }
            },
            RunWrite::Events {
                run_id,
                workspace_id,
                started: first,
                events: evs,
                payloads: pls,
                invocations: invs,
                blobs: bls,
                spans: sps,
            } => {
                if *first {
                    started.push(vec![run_id.into()]);
                }
                announced.insert(run_id.as_str());
                add_spans(&mut spans, sps);
                add_payloads(run_id, pls);
                for (seq, event, refs) in evs {
                    events.push(vec![
                        run_id.into(),
                        (*seq).into(),
                        event.into(),
                        at.as_str().into(),
                        refs.into(),
                    ]);
                }
                for i in invs {
                    match invocation_at.get(i.id.as_str()) {
                        Some(&k) => merge_invocation(&mut invocations[k], i),
                        None => {
                            invocation_at.insert(&i.id, invocations.len());
                            invocations.push(i.clone());
                        }
                    }
                }
                for b in bls {
                    blobs.insert(
                        (&b.hash, workspace_id),
                        vec![
                            (&b.hash).into(),
                            workspace_id.into(),
                            (&b.content_type).into(),
                            b.bytes.into(),
                            at.as_str().into(),
                        ],
                    );
                }
            }
            RunWrite::NodeCheckpoint {
                run_id,
                node_id,
                record,
                refs,
                payloads: rows,
            } => {
                add_payloads(run_id, rows);
                checkpoints.insert(
                    (run_id, node_id),
                    vec![
                        run_id.into(),
                        node_id.into(),
                        "node".into(),
                        record.into(),
                        at.as_str().into(),
                        refs.into(),
                    ],
                );
            }
            RunWrite::Spans(rows) => add_spans(&mut spans, rows),
            RunWrite::Audit(a) => audits.push(audit_args(a)),
            RunWrite::End(end) => {
                add_spans(&mut spans, &end.spans);
                add_payloads(&end.run_id, &end.payloads);
                for n in &end.nodes {
                    nodes.push(node_run_args(&end.run_id, n));
                }
                for (node_id, bundle, refs) in &end.bundles {
                    bundles.push(vec![
                        (&end.run_id).into(),
                        node_id.into(),
                        bundle.into(),
                        refs.into(),
                    ]);
                }
                for (workflow_id, node_id, pin, value) in &end.pins {
                    pins.insert(
                        (workflow_id, node_id, pin),
                        vec![
                            workflow_id.into(),
                            node_id.into(),
                            pin.into(),
                            value.into(),
                            at.as_str().into(),
                        ],
                    );
                }
                ended.push(&end.run_id);
                announced.insert(&end.run_id);
                finished.push(vec![
                    (&end.run_id).into(),
                    (&end.status).into(),
                    (&end.outputs).into(),
                    (&end.error).into(),
                    (&end.record).into(),
                    (&end.record_refs).into(),
                    at.as_str().into(),
                ]);
            }
        }
    }
    // A run that ends in this batch skips its last checkpoints and drops
    // the stored ones.
    checkpoints.retain(|(run_id, _), _| !ended.contains(run_id));
    let ended_rows = || ended.iter().map(|id| vec![(*id).into()]).collect();
    // In this order: a run's record before anything of it, its status
    // before its end, its node rows cleared before they are written.
    let statements = vec![
        (&RUNS, created),
        (&PAYLOADS, payloads.into_values().collect()),
        (&RUN_STARTED, started),
        (&RUN_STATUS, statuses),
        (&EVENTS, events),
        (&CHECKPOINTS, checkpoints.into_values().collect()),
        (&CLEAR_CHECKPOINTS, ended_rows()),
        (
            &INVOCATIONS,
            invocations.iter().map(invocation_args).collect(),
        ),
        (&BLOBS, blobs.into_values().collect()),
        (&CLEAR_NODE_RUNS, ended_rows()),
        (&NODE_RUNS, nodes),
        (&BUNDLES, bundles),
        (&PINS, pins.into_values().collect()),
        (&RUN_END, finished),
        (&CLOSE_APPROVALS, ended_rows()),
        (&SPANS, spans.into_values().collect()),
        (&AUDIT, audits),
    ];
    if direct {
        if let Some(applied) = store.with_direct(|conn| apply_direct(conn, &statements)) {
            return applied;
        }
    }
    if store.is_sqlite() {
        let mut conn = store.writer().acquire().await?;
        return apply_sqlite(&mut conn, statements).await;
    }
    // Postgres prepares one command at a time.
    let mut tx = store.writer().begin().await?;
    for (statement, rows) in statements {
        execute_values(&mut tx, statement, rows).await?;
    }
    let announced = announced.into_iter().map(|id| vec![id.into()]).collect();
    execute_values(&mut tx, &EVENTS_NOTIFY, announced).await?;
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ITEMS: Values = Values {
        head: "INSERT INTO items (id, name)",
        tail: "",
    };

    fn items(conn: &rusqlite::Connection) -> Vec<(i64, String)> {
        let mut read = conn
            .prepare("SELECT id, name FROM items ORDER BY id")
            .unwrap();
        read.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    fn row(id: i64, name: &str) -> Vec<Arg> {
        vec![id.into(), name.into()]
    }

    /// A batch is one transaction: a failing row leaves nothing of the
    /// batch behind, and the connection takes the next batch (the kept
    /// `BEGIN`, `COMMIT` and `ROLLBACK` statements are reused).
    #[test]
    fn a_batch_commits_whole_or_not_at_all() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
            .unwrap();
        apply_direct(&conn, &[(&ITEMS, vec![row(1, "a"), row(2, "b")])]).unwrap();
        // Row 3 is new, row 2 is taken: the batch fails and row 3 is gone.
        let failed = apply_direct(&conn, &[(&ITEMS, vec![row(3, "c"), row(2, "again")])]);
        assert!(failed.is_err(), "a duplicate key fails the batch");
        assert!(conn.is_autocommit(), "the failed batch was rolled back");
        assert_eq!(items(&conn), vec![(1, "a".into()), (2, "b".into())]);
        apply_direct(&conn, &[(&ITEMS, vec![row(3, "c")]), (&ITEMS, vec![])]).unwrap();
        assert_eq!(items(&conn).len(), 3);
    }
}
