//! What the suite runner (`crate::suites`, issue 33) needs of the run
//! manager: waiting for a run's end and for a free run slot (told by the
//! runs' ends, no polling), which suite runs this process executes, and
//! the start's look for interrupted suite runs.
//!
//! A suite run is not resumed after a stop: it is a batch of forks whose
//! verdict is only whole at its end. One that no live process executes
//! (on SQLite: not this one, the database's one instance, at its start; on
//! Postgres: this instance's name from before its start, or an instance
//! whose advisory lock is free, as `claims` tells a gone holder) ends
//! `error`, saying that the server running it stopped. On Postgres a
//! serving instance's takeover also ends those of other gone instances.

use std::collections::HashSet;

use super::*;

/// Why a suite run ends `error` when its process is gone.
pub const SUITE_INTERRUPTED: &str =
    "the server running it stopped before the suite run ended; run the suite again";

/// A suite run executing in this process, for as long as it lives.
pub struct SuiteHere {
    runs: Arc<Runs>,
    id: String,
}

impl Drop for SuiteHere {
    fn drop(&mut self) {
        self.runs
            .suites_here
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

impl Runs {
    /// Waits until `run_id` no longer executes in this process: it ended,
    /// or it was given up to another instance (then it continues there).
    /// At once when it does not execute here.
    pub async fn wait_end(&self, run_id: &str) {
        loop {
            let notified = self.ended.notified();
            tokio::pin!(notified);
            // Registered before the look, so an end in between is not lost.
            notified.as_mut().enable();
            if !self
                .live
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains_key(run_id)
            {
                return;
            }
            notified.await;
        }
    }

    /// Waits until `workspace_id` may start another run here (its runs in
    /// progress below its limit, see [`Runs::may_start`]).
    pub async fn wait_for_slot(&self, workspace_id: &str) {
        loop {
            let notified = self.ended.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.may_start(workspace_id).is_ok() {
                return;
            }
            notified.await;
        }
    }

    /// A workspace as the owner of the runs it starts (its organization
    /// read from the store), for callers without an API caller: the CLI.
    pub async fn owner_of(&self, workspace_id: &str) -> Result<SecretOwner, StoreError> {
        self.workspace_owner(workspace_id).await
    }

    /// Whether this process's runs were stopped (`Runs::stop`): a fork
    /// it gave up does not end here.
    pub fn stopping(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Notes that this process executes the suite run `id` until the
    /// guard drops.
    pub fn suite_here(self: &Arc<Self>, id: &str) -> SuiteHere {
        self.suites_here
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string());
        SuiteHere {
            runs: self.clone(),
            id: id.to_string(),
        }
    }

    /// Ends `error` every `running` suite run that no live process
    /// executes (see the module's doc); returns how many. `at_start`: this
    /// instance's name counts as gone too (its earlier process's), as at a
    /// start; later (a Postgres heartbeat's takeover) only other names
    /// whose lock is free do.
    pub(super) async fn end_interrupted_suite_runs(
        &self,
        at_start: bool,
    ) -> Result<usize, StoreError> {
        let running = self.store.running_suite_runs().await?;
        // Read after the rows: a suite run is noted here before its row is
        // stored, so none of this process's is missed.
        let here = self
            .suites_here
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let running: Vec<(String, String, String)> = running
            .into_iter()
            .filter(|(id, _, _)| !here.contains(id))
            .collect();
        if running.is_empty() {
            return Ok(0);
        }
        let gone: Option<HashSet<String>> = if self.store.is_sqlite() {
            // One instance per database file: none but this one executes.
            None
        } else {
            let others: Vec<String> = running
                .iter()
                .map(|(_, _, instance)| instance.clone())
                .filter(|name| *name != self.instance.name)
                .collect::<HashSet<_>>()
                .into_iter()
                .collect();
            let mut gone: HashSet<String> = match self.instance_lock.lock().await.as_mut() {
                Some(lock) if !others.is_empty() => lock.dead(&others).await?.into_iter().collect(),
                // Without this instance's lock, no other's can be told gone.
                _ => HashSet::new(),
            };
            // This name's earlier process: it held the name's lock, which
            // this one holds now.
            if at_start {
                gone.insert(self.instance.name.clone());
            }
            Some(gone)
        };
        let mut ended = 0;
        for (id, workspace_id, instance) in running {
            if gone.as_ref().is_some_and(|g| !g.contains(&instance)) {
                continue;
            }
            if self
                .store
                .abort_suite_run(&workspace_id, &id, SUITE_INTERRUPTED)
                .await?
            {
                tracing::warn!(suite_run_id = %id, %instance, "a suite run was interrupted by a server stop");
                ended += 1;
            }
        }
        Ok(ended)
    }
}
