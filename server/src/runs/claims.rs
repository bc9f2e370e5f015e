//! Runs are claimed, not owned (issue 32): the instance that starts a run
//! claims it under a lease, its heartbeat renews the lease, and any
//! serving instance claims (`Store::claim_runs`) and resumes from their
//! checkpoints the runs whose holder is gone: its lease passed, or, on
//! Postgres, its advisory lock is free (the process died). The write
//! journal is shared through the database, so an approved write runs at
//! most once whichever instance resumes its run.

use super::*;

/// How many runs one claim takes at most (the next tick takes more).
const CLAIM_BATCH: i64 = 100;

/// A run no instance claimed is taken after at least this long.
const ORPHAN_AFTER: chrono::TimeDelta = chrono::TimeDelta::seconds(60);

/// Instances not heard of for this long, holding nothing, leave the view.
const FORGET_AFTER: chrono::TimeDelta = chrono::TimeDelta::days(1);

impl Runs {
    /// This process's instance name.
    pub fn instance_name(&self) -> &str {
        &self.instance.name
    }

    /// How many runs of `workspace_id` execute in this process now.
    pub fn running_in(&self, workspace_id: &str) -> usize {
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|l| l.workspace_id == workspace_id)
            .count()
    }

    /// Remembers a run this process claimed, while it executes here.
    fn note_claim(&self, run_id: &str) {
        let live = self
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(run_id);
        if live {
            self.claimed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(run_id.to_string());
        }
    }

    /// Forgets a run that stopped executing here.
    pub(super) fn forget_claim(&self, run_id: &str) {
        self.claimed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(run_id);
    }

    /// Stops executing the runs of `lost`, whose claim this process lost
    /// (another instance claimed them: this one failed to renew their lease
    /// in time, or looked dead), writing nothing more of them: their new
    /// holder continues them from their checkpoints.
    fn abandon(&self, lost: &[String]) {
        for id in lost {
            tracing::warn!(run_id = %id, "another instance claimed this run; it stops here");
        }
        self.stop_here(lost);
    }

    /// Stops executing `ids` here, writing nothing more of them (see
    /// [`Runs::abandon`], [`Runs::stop`]).
    fn stop_here(&self, ids: &[String]) {
        for id in ids {
            self.forget_claim(id);
            let live = self
                .live
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(id);
            if let Some(live) = live {
                // Nothing more is written here; the engine's own tasks (a
                // node waiting for a decision) wind down by the cancel,
                // whose events are not written either.
                live.abandoned.set();
                live.cancel.cancel();
                if let Some(task) = live.task.get() {
                    task.abort();
                }
            }
        }
        // Whoever waits for these runs' ends (a suite) looks again.
        self.ended.notify_waiters();
    }

    /// A clean stop of this process's runs (`glassbox serve` on Ctrl-C or
    /// SIGTERM, once its connections are closed), in this order: the
    /// heartbeat stops (a beat under way and a takeover are waited for),
    /// since a later beat would renew the leases given up below and clear
    /// the instance's stop; the runs executing here stop, writing nothing
    /// more (whoever claims them next continues from their checkpoints,
    /// as after a kill); the writes they queued are committed; and only
    /// then are the suite runs executing here ended `error`, and the
    /// instance marked stopped and its runs' leases given up, so another
    /// instance claims them at once. No run starts here any more.
    pub async fn stop(&self) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering::SeqCst;
        self.stopped.store(true, SeqCst);
        drop(self.beating.lock().await);
        for _ in 0..500 {
            if !self.taking_over.load(SeqCst) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let here: Vec<String> = self
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect();
        if !here.is_empty() {
            tracing::info!(
                runs = here.len(),
                "stopping the runs executing here; they resume from their checkpoints"
            );
        }
        self.stop_here(&here);
        // Writes are applied in order: an empty one is committed after
        // every write queued before it.
        self.writer.write(RunWrite::Spans(Vec::new())).await?;
        // A suite run is not resumed: the ones executing here end `error`
        // (see `suites`).
        self.end_suite_runs_here().await;
        self.store.instance_stopped(&self.instance.name).await
    }

    /// Which of `names` (other instances) are gone: their locks are free.
    /// Without this instance's own lock, none can be told gone.
    pub(super) async fn dead_instances(&self, names: &[String]) -> Result<Vec<String>, StoreError> {
        match self.instance_lock.lock().await.as_mut() {
            Some(lock) if !names.is_empty() => lock.dead(names).await,
            _ => Ok(Vec::new()),
        }
    }

    /// Claims `run` here when no live instance holds it (its holder died
    /// and no instance took it over yet): whether it is now this one's;
    /// `None` when the run has ended.
    pub(super) async fn claim_if_free(&self, run: &RunRow) -> Result<Option<bool>, StoreError> {
        let (holder, finished) = self.store.run_holder(&run.id).await?;
        if finished {
            return Ok(None);
        }
        let dead = match holder {
            Some(h) if h != self.instance.name => self.dead_instances(&[h]).await?.pop(),
            _ => None,
        };
        self.store
            .claim_if_free(
                &run.id,
                &self.instance.name,
                &self.lease_end(),
                &now(),
                &self.orphan_before(),
                dead.as_deref(),
            )
            .await
            .map(Some)
    }

    fn orphan_before(&self) -> String {
        crate::storage::now_plus(-lease_delta(self.instance.lease * 2).max(ORPHAN_AFTER))
    }

    fn lease_end(&self) -> String {
        crate::storage::now_plus(lease_delta(self.instance.lease))
    }

    /// Claims a run this process just created. Not on SQLite: its one
    /// instance executes every run (claimed all at once at its start), so
    /// a run costs no write more there.
    pub(super) fn claim_new(self: &Arc<Self>, run_id: &str) {
        if self.store.is_sqlite() {
            return;
        }
        let this = self.clone();
        let id = run_id.to_string();
        tokio::spawn(async move {
            // Claims only under the name's lock: without it, others would
            // take this process for gone (a serving instance holds it from
            // its start; any other process, `glassbox run`, from its first
            // run).
            match this.hold_instance_name().await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::error!(run_id = %id, name = %this.instance.name, "another live process claims runs under this process's name; this run is not claimed");
                    return;
                }
                Err(e) => {
                    tracing::error!(run_id = %id, error = %e, "cannot hold this process's name; the run is not claimed");
                    return;
                }
            }
            let until = this.lease_end();
            match this.store.claim_run(&id, &this.instance.name, &until).await {
                Ok(true) => this.note_claim(&id),
                // Taken as an orphan by another instance (this claim came
                // very late): that one executes it now.
                Ok(false) => this.abandon(std::slice::from_ref(&id)),
                Err(e) => tracing::error!(run_id = %id, error = %e, "cannot claim a new run"),
            }
        });
    }

    /// On Postgres, holds the instance's advisory lock for the life of the
    /// process; `Ok(false)` when a live process already serves under this
    /// name. On SQLite always `Ok(true)` (the serve lock file guards it).
    /// Held already: `Ok(true)`. Every process that claims runs holds it
    /// (`glassbox run` too, see [`Runs::claim_new`]): a free lock is how
    /// others tell its holder is gone.
    pub async fn hold_instance_name(&self) -> Result<bool, StoreError> {
        if self.store.is_sqlite() {
            return Ok(true);
        }
        let mut held = self.instance_lock.lock().await;
        if held.is_some() {
            return Ok(true);
        }
        match self.store.instance_lock(&self.instance.name).await? {
            Some(lock) => {
                *held = Some(lock);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// From now on this process is a serving instance: its heartbeat keeps
    /// its row in the instances view and, with `takeover` (Postgres),
    /// claims and resumes the runs whose holder is gone. (Any other
    /// process, `glassbox run` say, only renews the leases of its runs.)
    pub async fn serve_as_instance(&self, takeover: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        self.serving.store(true, Relaxed);
        self.takeover.store(takeover, Relaxed);
        if let Err(e) = self
            .store
            .instance_heartbeat(&self.instance.name, &self.started_at)
            .await
        {
            tracing::warn!(error = %e, "cannot record the instance heartbeat");
        }
    }

    /// Beats every third of the lease for as long as the runs live: the
    /// instance's row (a serving instance), the leases of its runs, and the
    /// claim of runs whose holder is gone (see [`Runs::serve_as_instance`]).
    pub(super) fn start_heartbeat(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let every = self.instance.lease / 3;
        let started = self.started_at.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(runs) = weak.upgrade() else {
                    return;
                };
                let _beating = runs.beating.lock().await;
                if runs.stopped.load(std::sync::atomic::Ordering::SeqCst)
                    || runs.store.pool().is_closed()
                {
                    return;
                }
                runs.beat(&started).await;
            }
        });
    }

    async fn beat(self: &Arc<Self>, started: &str) {
        use std::sync::atomic::Ordering::Relaxed;
        let name = &self.instance.name;
        if self.store.is_sqlite() {
            // One instance: nothing to renew or to lose.
            if self.serving.load(Relaxed) {
                if let Err(e) = self.store.instance_heartbeat(name, started).await {
                    tracing::warn!(error = %e, "cannot record the instance heartbeat");
                }
            }
            return;
        }
        // The runs executing here under a claim, the only ones renewed (a
        // run claimed under this name that does not execute here is left
        // to lapse): one of them it does not renew was claimed away (a run
        // claimed during the renewal is not among them, so it is not taken
        // for lost).
        let before: Vec<String> = self
            .claimed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        // A renewal may meet a claim or a run's write on the same rows and
        // lose a deadlock; it is tried again at once.
        let mut renewed = self
            .store
            .renew_leases(name, &before, &self.lease_end())
            .await;
        for _ in 0..2 {
            if renewed.is_ok() {
                break;
            }
            renewed = self
                .store
                .renew_leases(name, &before, &self.lease_end())
                .await;
        }
        match renewed {
            Ok(held) => {
                // A cancel asked elsewhere whose announcement did not
                // reach this process (its listener was reconnecting).
                for (id, _) in held.iter().filter(|(_, asked)| *asked) {
                    self.cancel(id);
                }
                let held: std::collections::HashSet<String> =
                    held.into_iter().map(|(id, _)| id).collect();
                let mut lost = Vec::new();
                for id in before.into_iter().filter(|id| !held.contains(id)) {
                    // Not renewed: ended just now (its task is finishing),
                    // or claimed by another instance.
                    match self.store.run_holder(&id).await {
                        Ok((holder, false)) if holder.as_deref() != Some(name.as_str()) => {
                            lost.push(id)
                        }
                        Ok(_) => {}
                        Err(e) => {
                            tracing::warn!(run_id = %id, error = %e, "cannot read a run's claim")
                        }
                    }
                }
                self.abandon(&lost);
            }
            Err(e) => tracing::warn!(error = %e, "cannot renew the leases of this process's runs"),
        }
        if !self.serving.load(Relaxed) {
            return;
        }
        if let Err(e) = self.store.instance_heartbeat(name, started).await {
            tracing::warn!(error = %e, "cannot record the instance heartbeat");
        }
        let _ = self
            .store
            .forget_instances(&crate::storage::now_plus(-FORGET_AFTER))
            .await;
        // The takeover (resuming many runs takes a while) runs beside the
        // heartbeat, which must keep renewing this instance's own leases;
        // one at a time.
        if self.takeover.load(Relaxed) && !self.taking_over.swap(true, Relaxed) {
            let this = self.clone();
            tokio::spawn(async move {
                match this.take_over(false).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(runs = n, "took over runs of a stopped instance"),
                    Err(e) => tracing::warn!(error = %e, "cannot look for runs to take over"),
                }
                // A suite run is not taken over: a gone instance's ends
                // `error` (see `suites`).
                if let Err(e) = this.end_interrupted_suite_runs(false).await {
                    tracing::warn!(error = %e, "cannot look for interrupted suite runs");
                }
                this.taking_over.store(false, Relaxed);
            });
        }
    }

    /// Claims and resumes the runs no live instance holds (`own`: also the
    /// ones this instance's name held, at start). Returns how many resumed.
    pub(super) async fn take_over(self: &Arc<Self>, own: bool) -> Result<usize, StoreError> {
        let mut resumed = 0;
        // Paged by `(created_at, id)`: a run claimed on an earlier page is
        // still claimable (`own`, SQLite's `everything`), and claiming it
        // again would take the place of the runs after it.
        let mut after = (String::new(), String::new());
        loop {
            if self.stopped.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
            let dead = match self.instance_lock.lock().await.as_mut() {
                Some(lock) => {
                    let holders = self.store.run_holders(&self.instance.name).await?;
                    lock.dead(&holders).await?
                }
                None => Vec::new(),
            };
            // A run nobody claimed: its creator died between storing and
            // claiming it (or its claim is very late: it is never taken
            // from a creator that lives, see `claim_new`).
            let orphan_before = self.orphan_before();
            let claimed = self
                .store
                .claim_runs(
                    &self.instance.name,
                    &self.lease_end(),
                    &now(),
                    &orphan_before,
                    &dead,
                    // SQLite has one instance: at its start every
                    // unfinished run is its own.
                    own && self.store.is_sqlite(),
                    own,
                    (&after.0, &after.1),
                    CLAIM_BATCH,
                )
                .await?;
            let full = claimed.len() as i64 == CLAIM_BATCH;
            if let Some(last) = claimed.last() {
                after = (last.created_at.clone(), last.id.clone());
            }
            for run in claimed {
                let running_here = self
                    .live
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .contains_key(&run.id);
                if running_here || self.stopped.load(std::sync::atomic::Ordering::SeqCst) {
                    continue;
                }
                let id = run.id.clone();
                match self.resume_run(run).await {
                    Ok(true) => {
                        self.note_claim(&id);
                        resumed += 1;
                    }
                    // Ended failed, with the reason.
                    Ok(false) => {}
                    // Claimed but not executing here: its lease is given
                    // up, so it is claimed again (here or elsewhere) rather
                    // than held and renewed by nobody.
                    Err(e) => {
                        tracing::warn!(run_id = %id, error = %e, "cannot resume a claimed run; its lease is given up");
                        if let Err(e) = self.store.release_lease(&id, &self.instance.name).await {
                            tracing::warn!(run_id = %id, error = %e, "cannot give up a run's lease");
                        }
                    }
                }
            }
            if !full {
                break;
            }
        }
        Ok(resumed)
    }
}

fn lease_delta(lease: std::time::Duration) -> chrono::TimeDelta {
    chrono::TimeDelta::from_std(lease).unwrap_or(chrono::TimeDelta::seconds(15))
}
