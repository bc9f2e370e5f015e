//! What the suite runner (`crate::suites`, issue 33) needs of the run
//! manager: waiting for a run's end (told by the runs' ends), a run slot
//! reserved for each case's fork, which suite runs this process executes
//! (at most [`MAX_SUITE_RUNS_PER_WORKSPACE`] per workspace), and the
//! start's look for interrupted suite runs.
//!
//! A suite run is not resumed after a stop: it is a batch of forks whose
//! verdict is only whole at its end. A clean stop (`Runs::stop`) ends the
//! suite runs executing here `error` ([`SUITE_STOPPED`]). One that no live
//! process executes ends `error` ([`SUITE_INTERRUPTED`]) at a start: on
//! SQLite its row names its process's owner lock file
//! (`<data dir>/suite-owners/<token>.lock`, held with `flock` while the
//! process lives, so a `glassbox suite run` beside `glassbox serve` is
//! told apart from a killed one); on Postgres its instance's name from
//! before this start, or an instance whose advisory lock is free, as
//! `claims` tells a gone holder. On Postgres a serving instance's
//! takeover also ends those of other gone instances.

use std::collections::HashSet;

use super::*;

/// Why a suite run ends `error` when its process is gone.
pub const SUITE_INTERRUPTED: &str =
    "the server running it stopped before the suite run ended; run the suite again";

/// Why a suite run ends `error` when its process stops cleanly.
pub const SUITE_STOPPED: &str = "the server stopped during the suite run; run the suite again";

/// The most suite runs of one workspace this process executes at once.
pub const MAX_SUITE_RUNS_PER_WORKSPACE: usize = 4;

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

/// A run slot of a workspace reserved for one run (`Runs::wait_slot`):
/// counted against the limit until the run it starts is live, or given
/// back when dropped unused.
pub struct RunSlot {
    runs: Arc<Runs>,
    workspace_id: String,
    held: bool,
}

impl RunSlot {
    /// The run started: it counts as live now.
    pub(super) fn taken(mut self) {
        self.release();
    }

    fn release(&mut self) {
        if !std::mem::take(&mut self.held) {
            return;
        }
        let mut reserved = self.runs.reserved.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = reserved.get_mut(&self.workspace_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                reserved.remove(&self.workspace_id);
            }
        }
    }
}

impl Drop for RunSlot {
    fn drop(&mut self) {
        if self.held {
            self.release();
            // Unused: another waiter may have it.
            self.runs.ended.notify_waiters();
        }
    }
}

/// The token of a SQLite suite-run owner (`<instance>#<token>`).
fn owner_token(owner: &str) -> Option<&str> {
    let token = owner.rsplit_once('#')?.1;
    (!token.is_empty() && token.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        .then_some(token)
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

    /// The live runs and reserved slots of `workspace_id` (`reserved`
    /// locked by the caller, so a count and a reservation are one step).
    pub(super) fn taken_slots(
        &self,
        reserved: &HashMap<String, usize>,
        workspace_id: &str,
    ) -> usize {
        let live = self
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|l| l.workspace_id == workspace_id)
            .count();
        live + reserved.get(workspace_id).copied().unwrap_or(0)
    }

    /// Reserves a run slot of `workspace_id` when one is free (its runs in
    /// progress and reserved slots below its limit), in one step.
    pub fn try_slot(self: &Arc<Self>, workspace_id: &str) -> Option<RunSlot> {
        let mut reserved = self.reserved.lock().unwrap_or_else(|e| e.into_inner());
        if self.taken_slots(&reserved, workspace_id) >= self.limits.runs_per_workspace {
            return None;
        }
        *reserved.entry(workspace_id.to_string()).or_default() += 1;
        Some(RunSlot {
            runs: self.clone(),
            workspace_id: workspace_id.to_string(),
            held: true,
        })
    }

    /// Waits until a run slot of `workspace_id` is reserved for the
    /// caller (see [`Runs::try_slot`]); `None` once this process's runs
    /// are stopped.
    pub async fn wait_slot(self: &Arc<Self>, workspace_id: &str) -> Option<RunSlot> {
        loop {
            let notified = self.ended.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.stopping() {
                return None;
            }
            if let Some(slot) = self.try_slot(workspace_id) {
                return Some(slot);
            }
            notified.await;
        }
    }

    /// Where a run that no longer executes here is held (Postgres): the
    /// other live instance holding it, or `None` when none does (it
    /// ended, or its holder is gone, or this process). Always `None` on
    /// SQLite, whose runs all execute in the one serving process.
    pub async fn live_holder_elsewhere(&self, run_id: &str) -> Result<Option<String>, StoreError> {
        if self.store.is_sqlite() {
            return Ok(None);
        }
        let (holder, finished) = self.store.run_holder(run_id).await?;
        let Some(holder) = holder.filter(|h| !finished && *h != self.instance.name) else {
            return Ok(None);
        };
        let dead = self.dead_instances(std::slice::from_ref(&holder)).await?;
        Ok((!dead.contains(&holder)).then_some(holder))
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

    /// Notes that this process executes the suite run `id` of
    /// `workspace_id` until the guard drops; `Err(running)` when the
    /// workspace has [`MAX_SUITE_RUNS_PER_WORKSPACE`] executing here.
    pub fn suite_here(self: &Arc<Self>, id: &str, workspace_id: &str) -> Result<SuiteHere, usize> {
        let mut here = self.suites_here.lock().unwrap_or_else(|e| e.into_inner());
        let running = here.values().filter(|ws| *ws == workspace_id).count();
        if running >= MAX_SUITE_RUNS_PER_WORKSPACE {
            return Err(running);
        }
        here.insert(id.to_string(), workspace_id.to_string());
        Ok(SuiteHere {
            runs: self.clone(),
            id: id.to_string(),
        })
    }

    /// What a suite run's row names as the process executing it: on
    /// Postgres this instance's name, held by its advisory lock (an error
    /// when it cannot be held: others would take the suite run for gone);
    /// on SQLite `<instance>#<token>`, the token naming the owner lock
    /// file this process holds from its first suite run on (see the
    /// module's doc).
    pub async fn suite_owner(&self) -> Result<String, StoreError> {
        if !self.store.is_sqlite() {
            return match self.hold_instance_name().await? {
                true => Ok(self.instance.name.clone()),
                false => Err(StoreError::Unavailable(format!(
                    "another live process holds this process's instance name `{}`",
                    self.instance.name
                ))),
            };
        }
        let mut owner = self.suite_owner.lock().await;
        if let Some((_, token)) = owner.as_ref() {
            return Ok(format!("{}#{token}", self.instance.name));
        }
        let token = new_id();
        let dir = self.data_dir.join("suite-owners");
        let io = |e: std::io::Error| {
            StoreError::Unavailable(format!(
                "cannot hold the suite owner lock in `{}`: {e}",
                dir.display()
            ))
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let file = std::fs::File::create(dir.join(format!("{token}.lock"))).map_err(io)?;
        file.try_lock()
            .map_err(|e| io(std::io::Error::other(e.to_string())))?;
        *owner = Some((file, token.clone()));
        Ok(format!("{}#{token}", self.instance.name))
    }

    /// SQLite: whether the process named by a suite run's owner lives (it
    /// holds its owner lock file). A gone one's file is removed.
    fn sqlite_owner_lives(&self, owner: &str) -> bool {
        let Some(token) = owner_token(owner) else {
            // Stored before owners had a lock: not told alive.
            return false;
        };
        let path = self
            .data_dir
            .join("suite-owners")
            .join(format!("{token}.lock"));
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
        else {
            return false;
        };
        match file.try_lock() {
            Ok(()) => {
                let _ = std::fs::remove_file(&path);
                false
            }
            Err(std::fs::TryLockError::WouldBlock) => true,
            // Cannot tell: taken for alive, so a live run is not ended.
            Err(std::fs::TryLockError::Error(_)) => true,
        }
    }

    /// Ends `error` ([`SUITE_STOPPED`]) the suite runs executing here (a
    /// clean stop).
    pub(super) async fn end_suite_runs_here(&self) {
        let here: Vec<(String, String)> = self
            .suites_here
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(id, ws)| (id.clone(), ws.clone()))
            .collect();
        for (id, ws) in here {
            if let Err(e) = self.store.abort_suite_run(&ws, &id, SUITE_STOPPED).await {
                tracing::warn!(suite_run_id = %id, error = %e, "cannot end a suite run at a stop");
            }
        }
    }

    /// Ends `error` every `running` suite run that no live process
    /// executes (see the module's doc); returns how many. `at_start`: this
    /// instance's name counts as gone too (its earlier process's), as at a
    /// start; later (a Postgres heartbeat's takeover) only other names
    /// whose lock is free do.
    pub async fn end_interrupted_suite_runs(&self, at_start: bool) -> Result<usize, StoreError> {
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
            .filter(|(id, _, _)| !here.contains_key(id))
            .collect();
        if running.is_empty() {
            return Ok(0);
        }
        let gone: HashSet<String> = if self.store.is_sqlite() {
            // Gone: its owner lock is free (see the module's doc).
            let owners: HashSet<&String> = running.iter().map(|(_, _, owner)| owner).collect();
            owners
                .into_iter()
                .filter(|owner| !self.sqlite_owner_lives(owner))
                .cloned()
                .collect()
        } else {
            let others: Vec<String> = running
                .iter()
                .map(|(_, _, instance)| instance.clone())
                .filter(|name| *name != self.instance.name)
                .collect::<HashSet<_>>()
                .into_iter()
                .collect();
            let mut gone: HashSet<String> =
                self.dead_instances(&others).await?.into_iter().collect();
            // This name's earlier process: it held the name's lock, which
            // this one holds now.
            if at_start {
                gone.insert(self.instance.name.clone());
            }
            gone
        };
        let mut ended = 0;
        for (id, workspace_id, instance) in running {
            if !gone.contains(&instance) {
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
