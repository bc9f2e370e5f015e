//! What instances tell each other through Postgres (issue 32), never
//! directly: the group writer announces at commit the runs whose events it
//! stored (`EVENTS_CHANNEL`), and a cancel asked on an instance that does
//! not execute the run is announced to the one that does
//! (`CANCELS_CHANNEL`). An event stream of a run executing elsewhere
//! ([`Runs::follow_stored`]) reads the table when its run is announced, and
//! once a second besides, so a lost notification (or SQLite, which has
//! none) delays an event by a second at most and never loses it.

use std::time::Duration;

use futures::Stream;

use super::*;

/// How often a stream of a run executing elsewhere reads the table without
/// an announcement.
const POLL: Duration = Duration::from_secs(1);

/// How long a cancel of a run held elsewhere waits, at most, for the run to
/// end or its holder to be seen gone: `CANCEL_WAIT_TRIES` looks, each after
/// `CANCEL_WAIT_STEP`.
const CANCEL_WAIT_STEP: Duration = Duration::from_millis(50);
const CANCEL_WAIT_TRIES: u32 = 40;

/// Hands the announcements to this process's followers and runs, until the
/// last `Runs` goes.
pub(super) async fn watch_notices(runs: std::sync::Weak<Runs>, store: Store) {
    let mut listener = match store.notices_listener().await {
        Ok(Some(l)) => l,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for other instances' run notices; streams of runs executing elsewhere read the table every second");
            return;
        }
    };
    loop {
        let notice = listener.try_recv().await;
        let Some(runs) = runs.upgrade() else {
            return;
        };
        match notice {
            Ok(Some(n)) if n.channel() == crate::storage::CANCELS_CHANNEL => {
                runs.cancel(n.payload());
            }
            Ok(Some(n)) => {
                let _ = runs.announced.send(Arc::from(n.payload()));
            }
            // Reconnected: streams catch up by their own reads.
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(error = %e, "the run notices listener failed; retrying");
                tokio::time::sleep(POLL).await;
            }
        }
    }
}

impl Runs {
    /// Cancels a run wherever it executes: here, or by announcing it to the
    /// instance that holds it (Postgres); a run whose holder is gone (and
    /// not yet taken over) is claimed here and ended cancelled at once, so
    /// the cancel is not lost with it. The cancel is also recorded on the
    /// run: a holder that missed the announcement sees it at its next
    /// heartbeat, and whoever claims the run next ends it cancelled rather
    /// than resuming it. Whether a cancel was sent.
    pub async fn cancel_anywhere(&self, run: &RunRow) -> Result<bool, StoreError> {
        if self.cancel(&run.id) {
            return Ok(true);
        }
        if run.finished_at.is_some() || self.store.is_sqlite() {
            return Ok(false);
        }
        self.store.request_cancel(&run.id).await?;
        if self.end_if_free(run).await? {
            return Ok(true);
        }
        self.store.notify_cancel(&run.id).await?;
        // A holder killed a moment ago may still look alive (Postgres has
        // not yet seen its connection close and released its lock): while
        // the run has not ended, it is claimed here once that holder is
        // seen gone. A live holder ends it within this wait.
        for _ in 0..CANCEL_WAIT_TRIES {
            tokio::time::sleep(CANCEL_WAIT_STEP).await;
            if self.end_if_free(run).await? {
                break;
            }
        }
        Ok(true)
    }

    /// Claims `run` if no live instance holds it and ends it cancelled:
    /// whether the run has ended (here now, or already).
    async fn end_if_free(&self, run: &RunRow) -> Result<bool, StoreError> {
        match self.claim_if_free(run).await? {
            None => Ok(true),
            Some(false) => Ok(false),
            Some(true) => {
                self.end_cancelled_unexecuted(&run.id).await?;
                Ok(true)
            }
        }
    }

    /// Ends a run claimed here, which does not execute, cancelled.
    pub(super) async fn end_cancelled_unexecuted(&self, run_id: &str) -> Result<(), StoreError> {
        self.writer
            .write(RunWrite::End(Box::new(RunEnd {
                run_id: run_id.to_string(),
                status: RunStatus::Cancelled.as_str().into(),
                error: Some("cancelled while no instance executed it".into()),
                ..RunEnd::default()
            })))
            .await
    }

    /// The events of a run executing elsewhere (another instance, or a
    /// process that stopped) after `after`, read from the table in order,
    /// until the run has ended and its last event is sent.
    pub fn follow_stored(
        &self,
        workspace_id: &str,
        run_id: &str,
        after: i64,
    ) -> impl Stream<Item = LiveEvent> + Send + 'static {
        let (tx, rx) = mpsc::channel::<LiveEvent>(64);
        let store = self.store.clone();
        let mut notes = self.announced.subscribe();
        let (ws, run) = (workspace_id.to_string(), run_id.to_string());
        tokio::spawn(async move {
            let mut last = after;
            loop {
                // Ended before the read: the read has the last event.
                let ended = match store.get_run(&ws, &run).await {
                    Ok(row) => row.finished_at.is_some(),
                    Err(StoreError::NotFound(_)) => true,
                    Err(_) => false,
                };
                if let Ok(events) = store.events_after(&ws, &run, last).await {
                    for e in events {
                        last = e.seq;
                        if tx.send((e.seq, Arc::from(e.event))).await.is_err() {
                            return;
                        }
                    }
                    if ended {
                        return;
                    }
                }
                let announced = async {
                    loop {
                        match notes.recv().await {
                            Ok(id) if *id == *run => return,
                            Ok(_) => {}
                            Err(broadcast::error::RecvError::Lagged(_)) => return,
                            Err(broadcast::error::RecvError::Closed) => {
                                std::future::pending::<()>().await
                            }
                        }
                    }
                };
                tokio::select! {
                    () = announced => {}
                    () = tokio::time::sleep(POLL) => {}
                    () = tx.closed() => return,
                }
            }
        });
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) })
    }
}
