//! The approval gate a waiting run asks: pending writes stored, decisions
//! delivered by the API directly or read back from the approvals table.

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
