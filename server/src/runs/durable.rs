//! Durable runs: checkpoints (ended nodes, suspended agents) and the write
//! journal of approved writes (intent before, result after), with the
//! crash points of the test builds.

use crate::storage::KeySet;

use super::*;

/// The run's checkpoints: ended nodes queued on the group writer (every
/// node of every run writes one), a suspended agent's state synced on its
/// own before the run waits.
pub(super) struct StoreCheckpoints {
    pub(super) store: Store,
    pub(super) writer: GroupWriter,
    pub(super) run_id: String,
    pub(super) created: Created,
    pub(super) abandoned: Abandoned,
    /// What each ended node's checkpoint wrote, for the run's end.
    pub(super) ended: EndedCheckpoints,
    /// What the run's writes know of its payloads (see `Committed`).
    pub(super) committed: Committed,
}

/// What an ended node's checkpoint wrote, kept for the run's end (issue
/// #30): the payloads cut from the record's own keys and the payload rows
/// it stores. The end refers to those payloads for the node's outputs and
/// bundle instead of serializing, hashing, cutting and compressing them
/// again (or copying the record's text to that end).
pub(super) struct Checkpointed {
    top: Vec<TopPayload>,
    rows: Vec<PayloadRow>,
}

impl Checkpointed {
    /// Whether the record's `key` (`outputs`, `bundle`) was cut out as a
    /// payload (a short one stays in the record).
    pub(super) fn cut(&self, key: &str) -> bool {
        self.top.iter().any(|t| t.key == key)
    }

    /// The end refers to the node's outputs and bundle as the checkpoint
    /// cut them (`end_of` leaves their texts empty), and carries
    /// the checkpoint's rows the run has not stored yet. A row stored twice
    /// is kept once, so the refs hold whether the checkpoint's own commit,
    /// queued just before, went through or not; nothing waits for it.
    pub(super) fn lend(self, node: &str, end: &mut RunEnd, stored: &mut KeySet) {
        for row in self.rows {
            if stored.insert(row.hash.clone()) {
                end.payloads.push(row);
            }
        }
        for t in &self.top {
            end.refer_stored(node, &t.key, &t.hash);
        }
    }
}

/// The checkpoints of a run's ended nodes, by node id.
pub(super) type EndedCheckpoints = Arc<Mutex<HashMap<String, Checkpointed>>>;

impl Checkpoints for StoreCheckpoints {
    fn node_ended<'a>(&'a self, record: &'a NodeRecord) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if self.abandoned.is_set() {
                return;
            }
            let (write, top) = self.committed.with(|known| {
                let (write, top) =
                    RunWrite::node_checkpoint(&self.run_id, &record.node_id, record, known);
                // Events still queued behind the run (its event task may
                // lag its loop) carry these rows as encoded here.
                known.pend(write.payloads());
                (write, top)
            });
            let rows = write.payloads().to_vec();
            let hashes = rows.iter().map(|r| r.hash.clone()).collect();
            // Queued, not awaited: the group writer keeps the run's order,
            // and a checkpoint lost to a crash only means that node runs
            // again on resume (an approved write still runs once: the
            // journal has it). Its outcome settles its rows.
            let commit = self.writer.submit(write);
            let committed = self.committed.clone();
            tokio::spawn(async move {
                let done = commit.await.is_ok();
                committed.with(|known| known.settled(hashes, done));
            });
            self.ended
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(record.node_id.clone(), Checkpointed { top, rows });
        })
    }

    fn agent_suspended<'a>(&'a self, node_id: &'a str, run: &'a AgentRun) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if self.abandoned.is_set() {
                return;
            }
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
pub(super) struct StoreJournal {
    pub(super) store: Store,
    pub(super) run_id: String,
    pub(super) created: Created,
    pub(super) abandoned: Abandoned,
    #[cfg(feature = "test-hooks")]
    pub(super) crash_at: Option<String>,
}

impl StoreJournal {
    /// Fault injection for the crash tests: abort here, like `kill -9`.
    /// Only test builds (feature `test-hooks`) have it.
    #[cfg(feature = "test-hooks")]
    fn crash_point(&self, point: &str) {
        if self.crash_at.as_deref() == Some(point) {
            eprintln!("glassbox: GLASSBOX_TEST_CRASH_AT={point}: aborting");
            std::process::abort();
        }
    }

    #[cfg(not(feature = "test-hooks"))]
    fn crash_point(&self, _point: &str) {}
}

impl WriteJournal for StoreJournal {
    fn begin<'a>(&'a self, agent_run: &'a str, call: &'a ToolCall) -> BoxFuture<'a, JournalEntry> {
        Box::pin(async move {
            let tool = call.tool.spec.key();
            // A run given up here for another instance starts no write.
            if self.abandoned.is_set() {
                return JournalEntry::Unknown;
            }
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
