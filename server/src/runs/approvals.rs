//! The approval gate a waiting run asks: pending writes stored, decisions
//! delivered by notification, never by polling each approval: the API
//! hands its decisions over in process, and the decisions watcher
//! delivers those stored by another process (a `NOTIFY` on Postgres, from
//! any server or the CLI; on SQLite a sweep for the CLI's, only while a
//! run waits).

use super::*;

/// Approvals for one run: each request is stored, then the run waits until
/// someone decides it through the API.
pub(super) struct StoreGate {
    pub(super) runs: Arc<Runs>,
    pub(super) workspace_id: String,
    pub(super) run_id: String,
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
                    status: RunStatus::WaitingForApproval.as_str().into(),
                })
                .await;
            let mut pending = Vec::new();
            for r in requests {
                let (tx, rx) = oneshot::channel();
                self.runs
                    .waiters
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(r.token.clone())
                    .or_default()
                    .push(tx);
                let row = ApprovalRow {
                    token: r.token.clone(),
                    workspace_id: self.workspace_id.clone(),
                    run_id: self.run_id.clone(),
                    node_id: node_id.into(),
                    call_id: r.call_id.clone(),
                    tool: r.tool.clone(),
                    args_summary: r.args_summary.clone(),
                    effect_description: r.effect_description.clone(),
                    status: ApprovalStatus::Pending.as_str().into(),
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
            for (token, rx) in pending {
                // Decided already (before a restart, say): no need to wait.
                let stored = self
                    .runs
                    .store
                    .get_approval(&self.workspace_id, &token)
                    .await
                    .ok()
                    .and_then(|row| stored_decision(&row));
                let decision = match stored {
                    Some(d) => {
                        drop(rx);
                        self.runs.forget_closed_waiters(&token);
                        d
                    }
                    // Handed over by the API, or by the decisions watcher
                    // for a decision stored elsewhere. The sender goes only
                    // with the server, which stops this run too.
                    None => match rx.await {
                        Ok(d) => d,
                        Err(_) => std::future::pending().await,
                    },
                };
                decisions.push((token, decision));
            }
            // Through the group writer, behind the run's earlier writes.
            let _ = self
                .runs
                .writer
                .write(RunWrite::Status {
                    run_id: self.run_id.clone(),
                    status: RunStatus::Running.as_str().into(),
                })
                .await;
            decisions
        })
    }
}

/// The decision a stored approval row holds, if it was decided.
pub fn stored_decision(row: &ApprovalRow) -> Option<Decision> {
    let note = row.note.clone().unwrap_or_default();
    match row.status.parse::<ApprovalStatus>().ok()? {
        ApprovalStatus::Approved => Some(Decision::Approve),
        ApprovalStatus::Denied => Some(Decision::Deny { reason: note }),
        ApprovalStatus::RevisionRequested => Some(Decision::Revise { note }),
        ApprovalStatus::Pending | ApprovalStatus::Closed => None,
    }
}

/// How often a SQLite server looks for decisions another process (the
/// CLI) stored, while some run waits for one. One query for all waiting
/// approvals; the API's own decisions never wait for it.
const SWEEP: std::time::Duration = std::time::Duration::from_secs(2);

impl Runs {
    /// Drops the waiters under `token` that no longer wait (a run that
    /// found its decision stored); another run waiting under the same
    /// token keeps its place.
    fn forget_closed_waiters(&self, token: &str) {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(list) = waiters.get_mut(token) {
            list.retain(|tx| !tx.is_closed());
            if list.is_empty() {
                waiters.remove(token);
            }
        }
    }

    fn has_waiters(&self) -> bool {
        !self
            .waiters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// Delivers each stored decision in `rows` to the runs waiting here.
    fn deliver_rows(&self, rows: impl IntoIterator<Item = ApprovalRow>) {
        for row in rows {
            if let Some(d) = stored_decision(&row) {
                self.deliver(&row.token, d);
            }
        }
    }
}

/// Delivers decisions stored by other processes to this server's waiting
/// runs, until the server (the last `Runs`) goes: on Postgres each
/// announced token, and after a lost connection every decision since
/// shortly before it was lost; on SQLite a sweep every [`SWEEP`] while a
/// run waits.
pub(super) async fn watch_decisions(runs: std::sync::Weak<Runs>, store: Store) {
    let mut listener = match store.decisions_listener().await {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for approval decisions; looking for them every {} s instead", SWEEP.as_secs());
            None
        }
    };
    // Decisions are looked for from a little before the last look, so a
    // clock step or a slow commit does not hide one; delivering one twice
    // is harmless (the first delivery removes its waiters). The first look
    // is at once: a decision stored while the listener was being set up
    // is not missed.
    let mut since = now();
    let mut sweep = true;
    loop {
        let Some(runs_now) = runs.upgrade() else {
            return;
        };
        if sweep && runs_now.has_waiters() {
            let from = earlier(&since, SWEEP * 2);
            since = now();
            if let Ok(rows) = store.decided_since(&from).await {
                runs_now.deliver_rows(rows);
            }
        }
        drop(runs_now);
        sweep = match listener.as_mut() {
            Some(l) => match l.try_recv().await {
                Ok(Some(n)) => {
                    let Some(runs) = runs.upgrade() else { return };
                    if let Ok(Some(row)) = store.approval_by_token(n.payload()).await {
                        runs.deliver_rows([row]);
                    }
                    false
                }
                // The connection was lost and is back: look for what was
                // announced meanwhile.
                Ok(None) => true,
                Err(e) => {
                    tracing::warn!(error = %e, "the approval decisions listener failed; retrying");
                    tokio::time::sleep(SWEEP).await;
                    true
                }
            },
            None => {
                tokio::time::sleep(SWEEP).await;
                true
            }
        };
    }
}

/// `at` (RFC 3339) moved back by `by`.
fn earlier(at: &str, by: std::time::Duration) -> String {
    chrono::DateTime::parse_from_rfc3339(at)
        .map(|t| {
            (t - chrono::Duration::from_std(by).unwrap_or_default())
                .to_utc()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        })
        .unwrap_or_else(|_| at.to_string())
}
