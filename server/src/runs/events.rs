//! The run's event task: numbers, stores, indexes into invocation records
//! and broadcasts each event, in order, then the run's end.

use crate::storage::{Dehydrated, Known, PayloadSet};

use super::*;

pub(super) struct ChannelSink(pub(super) mpsc::UnboundedSender<WorkflowEvent>);

impl WorkflowSink for ChannelSink {
    fn emit(&self, event: WorkflowEvent) {
        let _ = self.0.send(event);
    }
}

pub(super) fn invocation_id(run_id: &str, node_id: &str, call_id: &str) -> String {
    format!("{run_id}/{node_id}/{call_id}")
}

/// A run's live broadcast of its stored events. [`LiveBroadcast::cut`]
/// ends every subscription made so far (their channel closes, so their
/// streams end and a client resumes from the table with `Last-Event-ID`);
/// later subscribers follow a new channel.
///
/// The channel is made by the first subscription, not with the run (issue
/// #30): a run nobody follows (every `glassbox run`, an API run nobody
/// watches) never allocates and fills its slots (about 1.6% of a server's
/// CPU profile with 100 runs in flight, all followed, at 1024 slots).
#[derive(Clone, Default)]
pub(super) struct LiveBroadcast(Arc<Mutex<Option<broadcast::Sender<LiveEvent>>>>);

/// How many events a subscription may fall behind before it lags: a lagging
/// one refills the gap from the table (`api::runs::follow`), so this only
/// bounds memory, never loses an event.
const LIVE_CAPACITY: usize = 256;

impl LiveBroadcast {
    /// The current channel's sender, if a subscription made one.
    fn sender(&self) -> std::sync::MutexGuard<'_, Option<broadcast::Sender<LiveEvent>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn subscribe(&self) -> broadcast::Receiver<LiveEvent> {
        self.sender()
            .get_or_insert_with(|| broadcast::channel(LIVE_CAPACITY).0)
            .subscribe()
    }

    /// Sends stored event `seq` to the subscriptions: its text is written
    /// only when there is one (a run nobody follows, e.g. every `glassbox
    /// run`, never writes its events' whole texts: they are stored cut;
    /// issue #30). A subscriber that comes after this look reads the event
    /// from the table, where it is already.
    fn send(&self, seq: i64, event: &WorkflowEvent) {
        let sender = self.sender();
        let Some(sender) = sender.as_ref().filter(|s| s.receiver_count() > 0) else {
            return;
        };
        let text = serde_json::to_string(event).unwrap_or_else(|_| "null".into());
        let _ = sender.send((seq, Arc::from(text)));
    }

    /// Ends the current subscriptions: the old channel's one sender is
    /// dropped here (the next subscription makes a new one).
    fn cut(&self) {
        *self.sender() = None;
    }
}

/// What a run's writes know of its payloads, shared by its event task and
/// its nodes' checkpoints (issue #30): the payloads its committed writes
/// stored, which a later write refers to instead of cutting, compressing
/// and carrying them again (only committed ones: a write still in flight
/// may fail), and the hashes of the payload texts met so far.
#[derive(Clone, Default)]
pub(super) struct Committed(Arc<Mutex<Known>>);

impl Committed {
    /// `f` with what is known, alone (held for one write's dehydrating
    /// only).
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut Known) -> R) -> R {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Where one run's event task writes and broadcasts.
pub(super) struct EventOut {
    pub(super) writer: GroupWriter,
    pub(super) ws: String,
    pub(super) run_id: String,
    /// The live broadcast.
    pub(super) tx: LiveBroadcast,
    /// The last stored sequence number (0, or more on resume).
    pub(super) last_seq: i64,
    /// The run's closed spans, taken along with each write.
    pub(super) spans: crate::trace::SpanBuffer,
    /// Set when another instance claimed the run: nothing more is written.
    pub(super) abandoned: Abandoned,
    /// What the run's writes know of its payloads (see `Committed`).
    pub(super) committed: Committed,
}

/// A batch of events whose write ended: how, the events by sequence
/// number, and the payload rows it carried.
type Committing = (
    Result<(), StoreError>,
    Vec<(i64, WorkflowEvent)>,
    Vec<String>,
);

/// Persists, indexes and broadcasts a run's events, in order, then its end.
///
/// Batches are handed to the group writer as soon as they arrive, without
/// waiting for the previous commit; each batch is broadcast once it is
/// committed, in order, so a subscriber never sees an event the store does
/// not have. A batch that could not be stored is not broadcast at all, and
/// the subscriptions so far end (see [`LiveBroadcast::cut`]): their clients
/// read the table again, which is what every other instance shows (and
/// what a new holder of the run continues from, numbering on from the last
/// stored event). The run's end goes right behind its last events.
pub(super) async fn write_events(
    out: EventOut,
    mut rx: mpsc::UnboundedReceiver<WorkflowEvent>,
    end: oneshot::Receiver<(RunEnd, HashMap<String, Checkpointed>)>,
) -> Result<(), StoreError> {
    use futures::stream::{FuturesOrdered, StreamExt};
    let EventOut {
        writer,
        ws,
        run_id,
        tx,
        last_seq,
        spans,
        abandoned,
        committed,
    } = out;
    let mut started = true;
    let mut seq = last_seq;
    let mut tools: HashMap<String, (String, String, String)> = HashMap::new();
    let trace_id = crate::trace::trace_id(&run_id);
    let mut in_flight = FuturesOrdered::new();
    let broadcast = |(done, events, hashes): Committing| match done {
        Ok(()) => {
            committed.with(|known| known.settled(hashes, true));
            for (seq, event) in &events {
                tx.send(*seq, event);
            }
        }
        Err(e) => {
            committed.with(|known| known.settled(hashes, false));
            tracing::error!(run_id, error = %e, "cannot store run events; their live streams end");
            tx.cut();
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
                if abandoned.is_set() {
                    continue;
                }
                let mut events = Vec::with_capacity(batch.len());
                let mut numbered = Vec::with_capacity(batch.len());
                let mut invocations = Vec::new();
                let mut blobs = Vec::new();
                for event in &batch {
                    invocations.extend(index_event(&ws, &run_id, &trace_id, &mut tools, event));
                    blobs.extend(event_blobs(event));
                }
                // Each payload stored once: events refer to them, and an
                // invocation's input and output are the very payloads its
                // events carry. Each event is written cut (never its whole
                // text: see `LiveBroadcast::send`).
                let payloads = committed.with(|known| {
                    let mut set = PayloadSet::known(std::mem::take(known));
                    for event in batch {
                        seq += 1;
                        // An event is plain data and always serializes.
                        let d = set.serialize(&event).unwrap_or_else(|_| Dehydrated {
                            text: "null".into(),
                            refs: None,
                        });
                        events.push((seq, d.text, d.refs));
                        numbered.push((seq, event));
                    }
                    for i in &mut invocations {
                        set.dehydrate_invocation(i);
                    }
                    let (payloads, back) = set.into_known();
                    *known = back;
                    known.pend(&payloads);
                    payloads
                });
                let hashes: Vec<String> = payloads.iter().map(|p| p.hash.clone()).collect();
                let commit = writer.submit(RunWrite::Events {
                    run_id: run_id.clone(),
                    workspace_id: ws.clone(),
                    started: std::mem::take(&mut started),
                    events,
                    payloads,
                    invocations,
                    blobs,
                    spans: spans.take(),
                });
                in_flight.push_back(async move { (commit.await, numbered, hashes) });
            }
        }
    }
    let ended = match end.await {
        Ok(_) if abandoned.is_set() => None,
        Ok((mut end, checkpointed)) => {
            end.spans = spans.take();
            committed.with(|known| {
                // The nodes' checkpoints, queued ahead of the end, cut and
                // stored their outputs and bundles: the end refers to them.
                for (node, c) in checkpointed {
                    c.lend(&node, &mut end, &mut known.stored);
                }
                // Each payload stored once: the record, node rows and
                // bundles refer to them (dehydrated here, on the run's
                // task).
                end.dehydrate(std::mem::take(known));
            });
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
pub(super) fn event_blobs(event: &WorkflowEvent) -> Vec<BlobRef> {
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
///
/// The matches are exhaustive on purpose: a new event variant does not
/// compile until this fold says what it does to the invocation records.
pub(super) fn index_event(
    ws: &str,
    run_id: &str,
    trace_id: &str,
    tools: &mut HashMap<String, (String, String, String)>,
    event: &WorkflowEvent,
) -> Option<InvocationRow> {
    let (node_id, event) = match event {
        WorkflowEvent::Agent { node_id, event } => (node_id, event),
        WorkflowEvent::NodeStarted { .. }
        | WorkflowEvent::NodeFinished { .. }
        | WorkflowEvent::RunFinished { .. } => return None,
    };
    let base = |call_id: &str, tool: &str, input: String, status: InvocationStatus| {
        let (name, version) = tool.rsplit_once('@').unwrap_or((tool, ""));
        InvocationRow {
            id: invocation_id(run_id, node_id, call_id),
            workspace_id: ws.to_string(),
            run_id: run_id.to_string(),
            node_id: node_id.clone(),
            call_id: call_id.into(),
            tool_name: name.into(),
            tool_version: version.into(),
            status: status.as_str().into(),
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
            input_refs: None,
            output_refs: None,
        }
    };
    match event.as_ref() {
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
                InvocationStatus::Pending,
            );
            r.approval_required = 1;
            r.approval_status = Some(InvocationApproval::Pending.as_str().into());
            Some(r)
        }
        AgentEvent::ApprovalDecided { call_id, decision } => {
            let (tool, input, _) = tools.get(call_id).cloned().unwrap_or_default();
            let (status, approval, reason) = match decision {
                Decision::Approve => (
                    InvocationStatus::Approved,
                    InvocationApproval::Approved,
                    None,
                ),
                // Seed 001's words: a denial and a request for revision
                // both reject this call; the reason says which.
                Decision::Deny { reason } => (
                    InvocationStatus::Rejected,
                    InvocationApproval::Rejected,
                    Some(reason.clone()),
                ),
                Decision::Revise { note } => (
                    InvocationStatus::Rejected,
                    InvocationApproval::Rejected,
                    Some(format!("revision requested: {note}")),
                ),
            };
            let mut r = base(call_id, &tool, input, status);
            r.approval_required = 1;
            r.approval_status = Some(approval.as_str().into());
            r.reason = reason;
            Some(r)
        }
        AgentEvent::ToolCallStarted {
            call_id,
            tool,
            input,
        } => {
            let mut r = base(
                call_id,
                tool,
                input.text().to_owned(),
                InvocationStatus::Running,
            );
            r.started_at = Some(now());
            Some(r)
        }
        AgentEvent::ToolCallFinished { envelope } => {
            let status = if envelope.is_success() {
                InvocationStatus::Completed
            } else if envelope
                .error
                .as_ref()
                .is_some_and(|e| e.details.get("outcome") == Some(&json!("unknown")))
            {
                // An approved write interrupted by a crash: the operator
                // reconciles it; it is never retried.
                InvocationStatus::OutcomeUnknown
            } else {
                InvocationStatus::Failed
            };
            let mut r = base(
                &envelope.call_id,
                &envelope.tool_ref(),
                envelope.input.text().to_owned(),
                status,
            );
            r.output = Some(envelope.output.text().to_owned());
            r.error = envelope.error.as_ref().map(|e| json!(e).to_string());
            r.started_at = Some(envelope.t_start.clone());
            r.completed_at = Some(envelope.t_end.clone());
            Some(r)
        }
        AgentEvent::IterationStarted { .. }
        | AgentEvent::ModelCalled { .. }
        | AgentEvent::TextDelta { .. }
        | AgentEvent::ToolProgress { .. }
        | AgentEvent::LimitReached { .. }
        | AgentEvent::Finished { .. }
        | AgentEvent::Failed { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use node_runtime::{ErrorCode, ToolError};

    /// A batch whose commit failed is not broadcast, and the subscriptions
    /// made before it end: a subscriber only ever sees events as stored.
    /// (Its seq is taken already, as by another holder of the run.)
    #[tokio::test]
    async fn an_event_batch_not_stored_is_not_broadcast() {
        use tokio::sync::broadcast::error::RecvError;
        let dir = tempfile::tempdir().expect("tmp");
        let url = format!("sqlite://{}", dir.path().join("g.db").display());
        let store = Store::open(&url).await.expect("open");
        let workflow = Workflow::from_json(
            r#"{"format_version":1,"id":"w","name":"w","revision":0,"nodes":[],"edges":[]}"#,
        )
        .expect("workflow");
        store
            .create_run(&new_run_row("r", "default", &workflow))
            .await
            .expect("run");
        sqlx::query("INSERT INTO run_events (run_id, seq, event, created_at) VALUES ('r', 2, '{\"taken\":true}', $1)")
            .bind(crate::storage::now())
            .execute(store.writer())
            .await
            .expect("seq 2 taken");
        let live = LiveBroadcast::default();
        let mut first = live.subscribe();
        let (tx, rx) = mpsc::unbounded_channel();
        let (end_tx, end_rx) = oneshot::channel();
        let out = EventOut {
            writer: GroupWriter::start(store.clone()),
            ws: "default".into(),
            run_id: "r".into(),
            tx: live.clone(),
            last_seq: 0,
            spans: Default::default(),
            abandoned: Abandoned::default(),
            committed: Committed::default(),
        };
        let task = tokio::spawn(write_events(out, rx, end_rx));
        let started = |n: &str| WorkflowEvent::NodeStarted { node_id: n.into() };
        tx.send(started("a")).expect("send");
        assert_eq!(first.recv().await.expect("event 1").0, 1);
        // Numbered 2: its commit fails.
        tx.send(started("b")).expect("send");
        match first.recv().await {
            Err(RecvError::Closed) => {}
            other => panic!("the stream ends without the unstored event: {other:?}"),
        }
        let mut second = live.subscribe();
        tx.send(started("c")).expect("send");
        let (seq, text) = second.recv().await.expect("event 3");
        drop((tx, end_tx));
        task.await.expect("task").expect("events task");
        let stored = store.events_after("default", "r", 0).await.expect("events");
        let stored: Vec<(i64, &str)> = stored.iter().map(|e| (e.seq, e.event.as_str())).collect();
        assert_eq!(
            stored,
            [
                (1, r#"{"type":"NodeStarted","node_id":"a"}"#),
                (2, r#"{"taken":true}"#),
                (3, r#"{"type":"NodeStarted","node_id":"c"}"#),
            ]
        );
        assert_eq!((seq, &*text), stored[2]);
    }

    fn envelope(call_id: &str, error: Option<ToolError>) -> ToolEnvelope {
        let mut e = ToolEnvelope::failed(
            call_id.into(),
            "http_request".into(),
            "1.0.0".into(),
            json!({"url": "http://x"}),
            ToolError::unknown("placeholder"),
            "t0".into(),
            "t1".into(),
        );
        e.error = error;
        if e.error.is_none() {
            e.output = json!({"status": 200}).into();
        }
        e
    }

    /// Folds `events` in order; returns each produced row's
    /// (call id, status, approval status, reason).
    fn check(events: Vec<AgentEvent>, expected: &[(&str, &str, Option<&str>, Option<&str>)]) {
        let mut tools = HashMap::new();
        let rows: Vec<(String, String, Option<String>, Option<String>)> = events
            .into_iter()
            .filter_map(|event| {
                index_event(
                    "ws",
                    "run",
                    "trace",
                    &mut tools,
                    &WorkflowEvent::Agent {
                        node_id: "agent".into(),
                        event: Box::new(event),
                    },
                )
            })
            .map(|r| (r.call_id, r.status, r.approval_status, r.reason))
            .collect();
        let expected: Vec<(String, String, Option<String>, Option<String>)> = expected
            .iter()
            .map(|(c, s, a, r)| {
                (
                    c.to_string(),
                    s.to_string(),
                    a.map(str::to_string),
                    r.map(str::to_string),
                )
            })
            .collect();
        assert_eq!(rows, expected);
    }

    fn requested(call_id: &str) -> AgentEvent {
        AgentEvent::ApprovalRequested {
            request: ApprovalRequest {
                call_id: call_id.into(),
                tool: "http_request@1.0.0".into(),
                args_summary: "url=http://x".into(),
                effect_description: "writes".into(),
                token: "t".into(),
            },
        }
    }

    #[test]
    fn each_event_moves_the_invocation_along() {
        check(
            vec![
                AgentEvent::IterationStarted { iteration: 1 },
                AgentEvent::ToolCallStarted {
                    call_id: "a".into(),
                    tool: "http_request@1.0.0".into(),
                    input: json!({}).into(),
                },
                AgentEvent::ToolCallFinished {
                    envelope: envelope("a", None),
                },
                AgentEvent::ToolCallFinished {
                    envelope: envelope("b", Some(ToolError::validation("bad"))),
                },
                AgentEvent::ToolCallFinished {
                    envelope: envelope(
                        "c",
                        Some(
                            ToolError::new(ErrorCode::Unknown, "crashed")
                                .with_details(json!({"outcome": "unknown"})),
                        ),
                    ),
                },
                AgentEvent::LimitReached {
                    limit: "max_iterations".into(),
                },
                AgentEvent::Failed {
                    message: "x".into(),
                },
            ],
            &[
                ("a", "running", None, None),
                ("a", "completed", None, None),
                ("b", "failed", None, None),
                ("c", "outcome_unknown", None, None),
            ],
        );
    }

    #[test]
    fn approvals_are_pending_then_approved_or_rejected_with_the_reason() {
        check(
            vec![
                requested("w1"),
                AgentEvent::ApprovalDecided {
                    call_id: "w1".into(),
                    decision: Decision::Approve,
                },
                requested("w2"),
                AgentEvent::ApprovalDecided {
                    call_id: "w2".into(),
                    decision: Decision::Deny {
                        reason: "not today".into(),
                    },
                },
                requested("w3"),
                AgentEvent::ApprovalDecided {
                    call_id: "w3".into(),
                    decision: Decision::Revise {
                        note: "smaller".into(),
                    },
                },
            ],
            &[
                ("w1", "pending", Some("pending"), None),
                ("w1", "approved", Some("approved"), None),
                ("w2", "pending", Some("pending"), None),
                ("w2", "rejected", Some("rejected"), Some("not today")),
                ("w3", "pending", Some("pending"), None),
                (
                    "w3",
                    "rejected",
                    Some("rejected"),
                    Some("revision requested: smaller"),
                ),
            ],
        );
    }

    #[test]
    fn node_and_run_events_touch_no_invocation() {
        let mut tools = HashMap::new();
        for event in [
            WorkflowEvent::NodeStarted {
                node_id: "n".into(),
            },
            WorkflowEvent::RunFinished {
                outcome: RunOutcome::Succeeded,
                error: None,
            },
        ] {
            assert_eq!(index_event("ws", "run", "t", &mut tools, &event), None);
        }
    }
}
