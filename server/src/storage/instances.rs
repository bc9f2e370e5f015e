//! Server instances and run claims (issue 32): every instance's heartbeat
//! row, the lease each holder renews on its unfinished runs, and the claim
//! of runs whose holder is gone (`FOR UPDATE SKIP LOCKED` on Postgres, so
//! two instances never claim one run). On Postgres an instance also holds
//! a session advisory lock named after it for its life: Postgres releases
//! it when the process dies, so a dead holder is seen at once, the lease
//! being the bound when its host vanishes without closing the connection.

use super::*;

/// One instance as the instances view shows it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct InstanceRow {
    pub name: String,
    pub started_at: String,
    pub heartbeat_at: String,
    pub stopped_at: Option<String>,
    pub runs_held: i64,
}

/// An RFC 3339 time `offset` from now, in the stored form of [`now`].
pub fn now_plus(offset: chrono::TimeDelta) -> String {
    (chrono::Utc::now() + offset).to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// The advisory-lock key of an instance name.
fn lock_key(name: &str) -> i64 {
    let hash = blake3::hash(format!("glassbox-instance:{name}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&hash.as_bytes()[..8]);
    i64::from_le_bytes(bytes)
}

/// How many runs one renewal statement names at most.
const RENEW_CHUNK: usize = 1000;

/// The unfinished runs of the `run` kind (what a claim may take).
const UNFINISHED: &str =
    "kind IN ('run', 'fork') AND finished_at IS NULL AND status IN ('queued', 'running', 'waiting_for_approval')";

impl Store {
    /// Records the instance's heartbeat (its row made on the first one).
    pub async fn instance_heartbeat(&self, name: &str, started_at: &str) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO instances (name, started_at, heartbeat_at, stopped_at) VALUES ($1, $2, $3, NULL) ON CONFLICT (name) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, started_at = excluded.started_at, stopped_at = NULL")
            .bind(name)
            .bind(started_at)
            .bind(now())
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// Marks the instance stopped (a clean stop) and gives up its runs'
    /// leases, so another instance claims them at once.
    pub async fn instance_stopped(&self, name: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE instances SET stopped_at = $2 WHERE name = $1")
            .bind(name)
            .bind(now())
            .execute(self.writer())
            .await?;
        sqlx::query(&format!(
            "UPDATE runs SET lease_until = $2 WHERE claimed_by = $1 AND {UNFINISHED}"
        ))
        .bind(name)
        .bind(now())
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// Every instance with the number of unfinished runs of `workspace_id`
    /// it holds (the instances are the deployment's, their runs a
    /// workspace's: no other workspace's runs are counted).
    pub async fn instances(&self, workspace_id: &str) -> Result<Vec<InstanceRow>, StoreError> {
        Ok(sqlx::query_as(&format!(
            "SELECT i.name, i.started_at, i.heartbeat_at, i.stopped_at, (SELECT COUNT(*) FROM runs r WHERE r.claimed_by = i.name AND r.workspace_id = $1 AND r.{}) AS runs_held FROM instances i ORDER BY i.started_at, i.name",
            UNFINISHED.replace(" AND ", " AND r.")
        ))
        .bind(workspace_id)
        .fetch_all(self.pool())
        .await?)
    }

    /// Forgets instances not heard of since `before` that hold no run.
    pub async fn forget_instances(&self, before: &str) -> Result<u64, StoreError> {
        Ok(sqlx::query(&format!("DELETE FROM instances WHERE heartbeat_at < $1 AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.claimed_by = instances.name AND r.{})", UNFINISHED.replace(" AND ", " AND r.")))
            .bind(before)
            .execute(self.writer())
            .await?
            .rows_affected())
    }

    /// Claims one run for `name` (the run it just created), until `until`;
    /// `false` when another instance claimed it first (as an orphan).
    pub async fn claim_run(
        &self,
        run_id: &str,
        name: &str,
        until: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query("UPDATE runs SET claimed_by = $2, lease_until = $3 WHERE id = $1 AND (claimed_by IS NULL OR claimed_by = $2)")
            .bind(run_id)
            .bind(name)
            .bind(until)
            .execute(self.writer())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Claims one unfinished run for `name` if no live instance holds it:
    /// its lease ended before `now`, its holder is `dead`, or nobody
    /// claimed it since before `orphan_before`. Whether it was claimed.
    pub async fn claim_if_free(
        &self,
        run_id: &str,
        name: &str,
        until: &str,
        now: &str,
        orphan_before: &str,
        dead: Option<&str>,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(&format!("UPDATE runs SET claimed_by = $2, lease_until = $3 WHERE id = $1 AND {UNFINISHED} AND (lease_until < $4 OR (claimed_by IS NULL AND created_at < $5) OR claimed_by = $6)"))
            .bind(run_id)
            .bind(name)
            .bind(until)
            .bind(now)
            .bind(orphan_before)
            .bind(dead.unwrap_or(""))
            .execute(self.writer())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Renews the lease of the unfinished runs among `executing` that
    /// `name` holds; returns the ids it still holds (a run claimed away is
    /// no longer among them), each with whether a cancel was asked of it
    /// (see [`Store::request_cancel`]). Only the runs the process
    /// executes: a run claimed under its name that it does not execute (its
    /// resume failed) is not renewed, so its lease passes and another
    /// instance takes it.
    pub async fn renew_leases(
        &self,
        name: &str,
        executing: &[String],
        until: &str,
    ) -> Result<Vec<(String, bool)>, StoreError> {
        let mut held = Vec::new();
        for ids in executing.chunks(RENEW_CHUNK) {
            let list: Vec<String> = (0..ids.len()).map(|i| format!("${}", i + 3)).collect();
            let sql = format!(
                "UPDATE runs SET lease_until = $2 WHERE claimed_by = $1 AND id IN ({}) AND {UNFINISHED} RETURNING id, cancel_requested_at",
                list.join(", ")
            );
            let mut q = sqlx::query_as::<_, (String, Option<String>)>(&sql)
                .bind(name)
                .bind(until);
            for id in ids {
                q = q.bind(id);
            }
            let rows = q.fetch_all(self.writer()).await?;
            held.extend(rows.into_iter().map(|(id, asked)| (id, asked.is_some())));
        }
        Ok(held)
    }

    /// Gives up `name`'s lease on one run (claimed, but it could not be
    /// resumed here): another instance may claim it at once.
    pub async fn release_lease(&self, run_id: &str, name: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE runs SET lease_until = $3 WHERE id = $1 AND claimed_by = $2")
            .bind(run_id)
            .bind(name)
            .bind(now())
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// Who holds a run, and whether it has ended.
    pub async fn run_holder(&self, run_id: &str) -> Result<(Option<String>, bool), StoreError> {
        let (holder, finished): (Option<String>, Option<String>) =
            sqlx::query_as("SELECT claimed_by, finished_at FROM runs WHERE id = $1")
                .bind(run_id)
                .fetch_optional(self.pool())
                .await?
                .unwrap_or((None, Some(String::new())));
        Ok((holder, finished.is_some()))
    }

    /// The instances other than `name` holding unfinished runs.
    pub async fn run_holders(&self, name: &str) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar(&format!(
            "SELECT DISTINCT claimed_by FROM runs WHERE claimed_by IS NOT NULL AND claimed_by <> $1 AND {UNFINISHED}"
        ))
        .bind(name)
        .fetch_all(self.pool())
        .await?)
    }

    /// Claims for `name` (until `until`) up to `limit` unfinished runs that
    /// no live instance holds: those whose lease ended before `now`, those
    /// held by one of `dead`, those of no one created before `orphan_before`
    /// (a process that died between creating a run and claiming it), and,
    /// with `own`, those `name` itself held (a restart under the same name);
    /// with `everything`, every unfinished run (SQLite's one instance, at
    /// its start). Only runs after `after` (a `(created_at, id)` cursor,
    /// `("", "")` for the first page) in that order: a caller paging
    /// through them passes the last run of the previous page, so a run it
    /// claimed already (still claimable by `own` or `everything`) is not
    /// claimed again in place of the next ones.
    /// On Postgres, `FOR UPDATE SKIP LOCKED`: a run another instance is
    /// claiming at the same moment is left to it. Returns the claimed runs.
    #[allow(clippy::too_many_arguments)]
    pub async fn claim_runs(
        &self,
        name: &str,
        until: &str,
        now: &str,
        orphan_before: &str,
        dead: &[String],
        everything: bool,
        own: bool,
        after: (&str, &str),
        limit: i64,
    ) -> Result<Vec<RunRow>, StoreError> {
        let mut held = vec![
            "lease_until < $3".to_string(),
            "(claimed_by IS NULL AND created_at < $4)".to_string(),
        ];
        if own {
            held.push("claimed_by = $1".into());
        }
        if everything {
            held.push("1 = 1".into());
        }
        for i in 0..dead.len() {
            held.push(format!("claimed_by = ${}", i + 8));
        }
        let lock = if self.is_sqlite() {
            ""
        } else {
            "FOR UPDATE SKIP LOCKED"
        };
        let sql = format!(
            "UPDATE runs SET claimed_by = $1, lease_until = $2 WHERE id IN (SELECT id FROM runs WHERE {UNFINISHED} AND (created_at > $6 OR (created_at = $6 AND id > $7)) AND ({}) ORDER BY created_at, id LIMIT $5 {lock}) RETURNING *",
            held.join(" OR ")
        );
        let mut q = sqlx::query_as(&sql)
            .bind(name)
            .bind(until)
            .bind(now)
            .bind(orphan_before)
            .bind(limit)
            .bind(after.0)
            .bind(after.1);
        for d in dead {
            q = q.bind(d);
        }
        let mut rows: Vec<RunRow> = q.fetch_all(self.writer()).await?;
        rows.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
        Ok(rows)
    }

    /// Postgres only: a connection of its own holding the instance's
    /// advisory lock for the life of the process. `Ok(None)` when another
    /// live process holds it (the name is taken); on SQLite `Ok(None)` too
    /// (the serve lock file guards it there).
    pub async fn instance_lock(&self, name: &str) -> Result<Option<InstanceLock>, StoreError> {
        if self.backend != Backend::Postgres {
            return Ok(None);
        }
        let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&self.url.0).await?;
        let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(lock_key(name))
            .fetch_one(&mut conn)
            .await?;
        Ok(got.then_some(InstanceLock { conn }))
    }
}

/// Postgres: the channel announcing runs with newly stored events (their
/// ids; sent by the group writer at commit).
pub const EVENTS_CHANNEL: &str = "glassbox_run_events";
/// Postgres: the channel asking the instance executing a run to cancel it.
pub const CANCELS_CHANNEL: &str = "glassbox_run_cancels";

impl Store {
    /// Asks whichever instance executes `run_id` to cancel it (Postgres;
    /// on SQLite nothing: the one instance cancels in process).
    /// Records on an unfinished run that a cancel was asked: whoever
    /// executes it sees it at its next heartbeat, whoever claims it next
    /// ends it cancelled (see [`Store::cancel_requested`]).
    pub async fn request_cancel(&self, run_id: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE runs SET cancel_requested_at = $2 WHERE id = $1 AND finished_at IS NULL",
        )
        .bind(run_id)
        .bind(now())
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// Whether a cancel was asked of the run (see [`Store::request_cancel`]).
    pub async fn cancel_requested(&self, run_id: &str) -> Result<bool, StoreError> {
        let at: Option<Option<String>> =
            sqlx::query_scalar("SELECT cancel_requested_at FROM runs WHERE id = $1")
                .bind(run_id)
                .fetch_optional(self.pool())
                .await?;
        Ok(at.flatten().is_some())
    }

    pub async fn notify_cancel(&self, run_id: &str) -> Result<(), StoreError> {
        if self.backend != Backend::Postgres {
            return Ok(());
        }
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CANCELS_CHANNEL)
            .bind(run_id)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// On Postgres, a connection listening on [`EVENTS_CHANNEL`] and
    /// [`CANCELS_CHANNEL`]; `None` on SQLite.
    pub async fn notices_listener(&self) -> Result<Option<sqlx::postgres::PgListener>, StoreError> {
        if self.backend != Backend::Postgres {
            return Ok(None);
        }
        let mut listener = sqlx::postgres::PgListener::connect(&self.url.0).await?;
        listener
            .listen_all([EVENTS_CHANNEL, CANCELS_CHANNEL])
            .await?;
        Ok(Some(listener))
    }
}

/// The connection holding an instance's advisory lock (see
/// [`Store::instance_lock`]); it also tells whether other instances live.
pub struct InstanceLock {
    conn: sqlx::PgConnection,
}

impl InstanceLock {
    /// Which of `names` no live process holds: their advisory lock is free
    /// (taken and released at once here).
    pub async fn dead(&mut self, names: &[String]) -> Result<Vec<String>, StoreError> {
        let mut dead = Vec::new();
        for name in names {
            let key = lock_key(name);
            let free: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
                .bind(key)
                .fetch_one(&mut self.conn)
                .await?;
            if free {
                sqlx::query("SELECT pg_advisory_unlock($1)")
                    .bind(key)
                    .execute(&mut self.conn)
                    .await?;
                dead.push(name.clone());
            }
        }
        Ok(dead)
    }
}
