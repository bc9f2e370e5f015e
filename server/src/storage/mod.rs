//! Storage: the embedded SQLite database (default, WAL, a file under the
//! data dir) or Postgres (scale-out).
//!
//! Each backend has its own migrations (`server/migrations/sqlite`,
//! `server/migrations/postgres`), applied with its typed driver on open.
//! After that, [`Store`] runs one set of SQL statements on either backend
//! through sqlx's `Any` driver: the schema keeps to types both share (text
//! timestamps and JSON, BIGINT, REAL), and `$1` placeholders work on both.
//! The conformance suite (`server/tests/store_conformance.rs`) runs the same
//! tests against both.
//!
//! Every query that reads tenant data filters by `workspace_id`: a caller
//! from workspace A gets "not found" for anything of workspace B.

//!
//! Layout: `rows` (the row structs), one module per table group with its
//! statements as `impl Store` methods (`tenancy`, `workflows`, `runs`,
//! `approvals`, `invocations`, `secrets`, `connections`, `mcp`, `blobs`,
//! `bundles`, `durable`, `payloads`, `instances`, `suites`),
//! `values` (multi-row statements) and `group` (the group-commit worker,
//! which only uses the others).

mod approvals;
mod audit;
mod blobs;
mod bundles;
mod connections;
mod durable;
mod group;
mod instances;
mod invocations;
mod mcp;
mod payloads;
mod rows;
mod runs;
mod secrets;
mod suites;
mod teams;
mod tenancy;
mod values;
mod workflows;

use std::str::FromStr;
use std::time::Duration;

use sqlx::pool::PoolOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::AnyPool;

pub use audit::{AuditEntry, AuditRow};
pub use group::{BlobRef, GroupWriter, RunEnd, RunWrite, FORK_CHECKPOINT};
pub use instances::{now_plus, InstanceLock, InstanceRow, CANCELS_CHANNEL, EVENTS_CHANNEL};
pub use payloads::{hash_of, Dehydrated, KeySet, Known, PayloadSet, TopPayload, MIN_PAYLOAD};
pub use rows::*;
pub use suites::{SuiteRow, SuiteRunRow};
pub use teams::{
    Acceptance, InvitationOffer, InvitationRow, Joiner, MemberRefusal, MemberRow, UserWorkspaceRow,
};
pub use tenancy::session_id;

// What the table modules share (they `use super::*`).
use node_runtime::graph::Workflow;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::AnyConnection;
use values::*;

type Q<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

/// A list's page size when none is asked for.
pub const PAGE_DEFAULT: i64 = 50;
/// The largest page a list answers.
pub const PAGE_MAX: i64 = 200;

/// A list's page size: [`PAGE_DEFAULT`] unless asked, at most [`PAGE_MAX`].
fn limit(l: i64) -> i64 {
    if l <= 0 {
        PAGE_DEFAULT
    } else {
        l.min(PAGE_MAX)
    }
}

/// Where a page of a newest-first list begins: after the row with this
/// creation time and id (the last row of the page before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub created_at: String,
    pub id: String,
}

impl Cursor {
    /// The opaque text a client passes back as `cursor`.
    pub fn encode(&self) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(format!("{}\n{}", self.created_at, self.id))
    }

    /// `None` for text this server did not give.
    pub fn decode(text: &str) -> Option<Self> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .ok()?;
        let (created_at, id) = std::str::from_utf8(&bytes).ok()?.split_once('\n')?;
        Some(Self {
            created_at: created_at.to_string(),
            id: id.to_string(),
        })
    }
}

/// One page of a list, and where the next begins (`None`: the last page).
#[derive(Debug)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<Cursor>,
}

impl<T> Page<T> {
    /// `rows` fetched with one more than `size` asked for: that one says
    /// there is a next page.
    fn of(mut rows: Vec<T>, size: i64, key: impl Fn(&T) -> Cursor) -> Self {
        let size = usize::try_from(size).unwrap_or(0);
        let more = rows.len() > size;
        rows.truncate(size);
        let next = if more { rows.last().map(key) } else { None };
        Self { items: rows, next }
    }
}

/// Why the database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot open database `{url}`: {source}")]
    Connect { url: String, source: sqlx::Error },
    #[error("cannot migrate database `{url}`: {source}")]
    Migrate {
        url: String,
        source: sqlx::migrate::MigrateError,
    },
}

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(String),
    #[error(
        "stale revision: the request is based on revision {expected}, the stored one is {actual}"
    )]
    Conflict { expected: i64, actual: i64 },
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The store cannot take writes right now (the server is stopping).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    /// From the group writer's own SQLite connection (`group.rs`).
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// An open, migrated database.
#[derive(Clone, Debug)]
pub struct Store {
    pool: AnyPool,
    /// Writes. On SQLite a pool of one connection: SQLite has one writer
    /// at a time, and queueing for this connection is fair and async,
    /// where contending connections would sleep in SQLite's busy handler
    /// (up to 100 ms a try). On Postgres the same pool as reads.
    writer: AnyPool,
    backend: Backend,
    /// Where it was opened; never shown (it may hold a password). Postgres
    /// uses it for the approvals listener's own connection.
    url: Unshown,
    /// The group writer's own connection to the SQLite file (see
    /// [`Store::with_direct`]).
    direct: std::sync::Arc<std::sync::Mutex<DirectSlot>>,
    /// The store's own read connections to the SQLite file (see
    /// [`Store::read_direct`]).
    readers: std::sync::Arc<std::sync::Mutex<ReadSlots>>,
    /// When the WAL is started again from its beginning (SQLite), shared
    /// by the group writer and the background checkpoint.
    wal: std::sync::Arc<WalState>,
}

/// The WAL's bound and file, and whether the background checkpoint has
/// just caught up with a WAL beyond it (see [`WalCheck::AfterBackground`]).
#[derive(Debug)]
struct WalState {
    bound: std::sync::Mutex<WalBound>,
    /// The SQLite file's WAL (`<file>-wal`), whose size is looked at; none
    /// for Postgres or an in-memory database.
    file: Option<std::path::PathBuf>,
    /// Set by the background checkpoint, taken by the group writer.
    due: std::sync::atomic::AtomicBool,
}

impl WalState {
    fn bound(&self) -> WalBound {
        *self.bound.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the WAL file is larger than `bytes`.
    fn beyond(&self, bytes: u64) -> bool {
        self.file
            .as_ref()
            .and_then(|f| std::fs::metadata(f).ok())
            .is_some_and(|m| m.len() > bytes)
    }
}

/// The read connections of [`Store::read_direct`]: the idle ones, how
/// many are open in all, and whether the store is closed (or a file
/// could not be opened), when reads go through the pool.
#[derive(Debug, Default)]
struct ReadSlots {
    idle: Vec<rusqlite::Connection>,
    open: usize,
    done: bool,
}

/// At most this many read connections of [`Store::read_direct`]; a read
/// beyond them goes through the pool.
const MAX_DIRECT_READERS: usize = 4;

/// How long a read of [`Store::read_direct`] waits for a lock before it
/// goes through the pool.
const DIRECT_READ_BUSY_WAIT: Duration = Duration::from_millis(20);

/// The group writer's own connection to a SQLite file: opened on its
/// first batch, closed by [`Store::close`] before the pools (SQLite moves
/// the WAL into the file and removes it when its last connection closes).
#[derive(Debug, Default)]
struct DirectSlot {
    conn: Option<rusqlite::Connection>,
    /// Closed, or could not be opened: the writer goes through the pool.
    done: bool,
}

/// 128 MiB, written once for [`WalBound::SERVER`] and the pragma's text.
macro_rules! wal_restart_bytes {
    () => {
        134217728
    };
}

/// Every SQLite connection of a store, the pools' and the group writer's
/// own: WAL with `synchronous = NORMAL` (see [`Store::open`]), SQLite's
/// busy handler for up to 5 s, foreign keys, and no automatic checkpoint
/// (checkpoints run in the background, see `checkpoint_in_background`,
/// not inside a commit).
const SQLITE_CONNECTION_PRAGMAS: &str = concat!(
    "PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = ",
    wal_restart_bytes!(),
    ";"
);

/// When the WAL is started again from its beginning, so that it stays
/// within `bytes` on disk (also SQLite's `journal_size_limit`, the size a
/// restarted WAL file is cut back to, for [`WalBound::SERVER`]). The
/// background checkpoint (PASSIVE, see `checkpoint_in_background`) only
/// lets the next commit start it again when it caught up with the last
/// commit, which a steady stream of commits never lets it do: the group
/// writer then checkpoints it itself, between two batches (see
/// [`Store::restart_large_wal`]), and `check` says when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalBound {
    pub bytes: u64,
    pub check: WalCheck,
}

/// When the group writer of a [`WalBound`] looks at the WAL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalCheck {
    /// Before every batch (a `stat`); the writer checkpoints all the
    /// background checkpoint left.
    EveryBatch,
    /// The background checkpoint runs every `every` and first looks at
    /// the WAL's size. Beyond the bound it checkpoints until it has caught
    /// up with nearly every commit, beside the writer (no commit waits for
    /// it), and then asks the writer to finish: before its next batch the
    /// writer checkpoints only the frames committed meanwhile, a short
    /// wait for the commits behind it.
    AfterBackground { every: Duration },
}

impl WalBound {
    /// A server's: 128 MiB, looked at by the background checkpoint, which
    /// runs every 200 ms. Commits wait for the writer's part of the
    /// checkpoint, and a server's concurrent runs wait with them, so the
    /// writer only finishes what the background one did. Checkpointing all
    /// that was left itself (up to a second of commits, about 40 MB with
    /// 100 runs in flight), the writer held them up for 50-65 ms each time
    /// the WAL passed the bound: the full socket bench's p99 of 50 ms
    /// against the smoke's 3-5 ms, whose WAL never got that far; now it
    /// waits 0.1-10 ms (issue #30). Every 200 ms rather than every second,
    /// each background checkpoint copies less at once (a second's commits
    /// of 100 runs in flight took it 27-65 ms of a core, beside the runs
    /// on two): p99 6.3-7.2 ms instead of 7.3-10.2 over three rounds each,
    /// the same CPU a run. Without a bound, 100 runs in flight grew the
    /// WAL by about 40 MB a second, without end, every frame appended to a
    /// longer file and the WAL's index growing with it.
    pub const SERVER: WalBound = WalBound {
        bytes: wal_restart_bytes!(),
        check: WalCheck::AfterBackground {
            every: Duration::from_millis(200),
        },
    };

    /// A command that runs workflows in its own process and exits
    /// (`glassbox run`, `glassbox suite run`): 4 MiB, looked at by the
    /// writer before every batch. Nothing waits on one commit there but
    /// the run's end, while all the WAL holds when the store closes is
    /// flushed, copied and deleted on the way out: a 400-call run left a
    /// 14 MB WAL, whose `fsync` and removal took 30 ms of the command's
    /// time (75 us a call, issue #30). Checkpointed during the run
    /// instead, its I/O overlaps the run's work, and the close has at most
    /// 4 MiB left.
    pub const COMMAND: WalBound = WalBound {
        bytes: 4 << 20,
        check: WalCheck::EveryBatch,
    };
}

/// Opens `file` for the group writer with the pools' settings (the
/// store created and migrated it, in WAL mode, which the file keeps).
fn open_direct(file: &std::path::Path) -> rusqlite::Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open_with_flags(
        file,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.execute_batch(SQLITE_CONNECTION_PRAGMAS)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// A database URL kept for reconnecting, shown by `Debug` only redacted.
#[derive(Clone)]
struct Unshown(std::sync::Arc<str>);

impl std::fmt::Debug for Unshown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&redact_url(&self.0))
    }
}

/// Creates an empty file with mode 0600 when there is none (an existing
/// file keeps its mode; SQLite fills an empty file on first open).
fn create_private(path: &std::path::Path) {
    if path.as_os_str().is_empty() || path.to_str() == Some(":memory:") || path.exists() {
        return;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
    }
}

impl Store {
    /// Opens (creating a SQLite file when missing) and migrates.
    pub async fn open(url: &str) -> Result<Self, OpenError> {
        sqlx::any::install_default_drivers();
        let connect_err = |source| OpenError::Connect {
            url: redact_url(url),
            source,
        };
        let migrate_err = |source| OpenError::Migrate {
            url: redact_url(url),
            source,
        };
        let backend = if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url).map_err(connect_err)?;
            // A new database file is readable by its owner only (SQLite
            // gives its -wal and -shm files the same mode). An in-memory
            // database has no file (sqlx names it `file:sqlx-in-memory-N`).
            if crate::instance::sqlite_file(url).is_some() {
                create_private(options.get_filename());
            }
            let options = options
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Full)
                .foreign_keys(true)
                .busy_timeout(Duration::from_secs(5));
            let pool = pool_options::<sqlx::Sqlite>()
                .max_connections(1)
                .connect_with(options)
                .await
                .map_err(connect_err)?;
            sqlx::migrate!("./migrations/sqlite")
                .run(&pool)
                .await
                .map_err(migrate_err)?;
            pool.close().await;
            Backend::Sqlite
        } else {
            let pool = pool_options::<sqlx::Postgres>()
                .max_connections(2)
                .acquire_timeout(Duration::from_secs(10))
                .connect(url)
                .await
                .map_err(connect_err)?;
            sqlx::migrate!("./migrations/postgres")
                .run(&pool)
                .await
                .map_err(migrate_err)?;
            pool.close().await;
            Backend::Postgres
        };
        // The Any pool. WAL mode is stored in the SQLite file (set above).
        // With WAL, synchronous=NORMAL never corrupts the database; it may
        // lose the last commits on power loss, which is acceptable for run
        // events. Rows that must survive a crash (approval intents, issue 7)
        // are written on a connection of their own with synchronous=FULL.
        let is_sqlite = backend == Backend::Sqlite;
        let options = |max: u32| {
            pool_options::<sqlx::Any>()
                .max_connections(max)
                // A SQLite file connection does not go stale, and a ping
                // before every use is one more wait on its worker thread.
                .test_before_acquire(!is_sqlite)
                .acquire_timeout(Duration::from_secs(30))
                .after_connect(move |conn, _meta| {
                    Box::pin(async move {
                        if is_sqlite {
                            sqlx::query(SQLITE_CONNECTION_PRAGMAS)
                                .execute(&mut *conn)
                                .await?;
                        }
                        Ok(())
                    })
                })
        };
        let (pool, writer) = match backend {
            Backend::Sqlite => {
                let pool = options(8).connect(url).await.map_err(connect_err)?;
                let writer = options(1).connect(url).await.map_err(connect_err)?;
                (pool, writer)
            }
            Backend::Postgres => {
                let pool = options(16).connect(url).await.map_err(connect_err)?;
                (pool.clone(), pool)
            }
        };
        let wal = std::sync::Arc::new(WalState {
            bound: std::sync::Mutex::new(WalBound::SERVER),
            file: crate::instance::sqlite_file(url).map(|file| {
                let mut wal = file.into_os_string();
                wal.push("-wal");
                wal.into()
            }),
            due: Default::default(),
        });
        if is_sqlite {
            checkpoint_in_background(pool.clone(), wal.clone());
        }
        Ok(Self {
            pool,
            writer,
            backend,
            url: Unshown(url.into()),
            direct: Default::default(),
            readers: Default::default(),
            wal,
        })
    }

    /// The store with another [`WalBound`] (the bound of every clone of it
    /// and of its background checkpoint, so set it before it is cloned).
    pub fn with_wal_bound(self, bound: WalBound) -> Self {
        *self.wal.bound.lock().unwrap_or_else(|e| e.into_inner()) = bound;
        self
    }

    /// The pool for reads.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// The pool for writes (see [`Store`]).
    pub fn writer(&self) -> &AnyPool {
        &self.writer
    }

    pub fn is_sqlite(&self) -> bool {
        self.backend == Backend::Sqlite
    }

    /// The SQLite database file (None on Postgres and for an in-memory
    /// database, which another connection would not share).
    pub fn sqlite_file(&self) -> Option<std::path::PathBuf> {
        crate::instance::sqlite_file(&self.url.0)
    }

    /// `"sqlite"` or `"postgres"`.
    pub fn backend(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }

    /// The newest applied migration; also proves the database answers.
    pub async fn schema_version(&self) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar(
            "SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success = $1",
        )
        .bind(true)
        .fetch_one(&self.pool)
        .await
    }

    /// Runs `f` on the group writer's own connection to the SQLite file,
    /// opened on first use; None on Postgres, for an in-memory database,
    /// once closed, or when the file cannot be opened (the writer then
    /// goes through the pool). Called on the writer's thread only: the
    /// lock is never contended but by [`Store::close`].
    pub(crate) fn with_direct<R>(
        &self,
        f: impl FnOnce(&mut rusqlite::Connection) -> R,
    ) -> Option<R> {
        let mut slot = self.direct.lock().unwrap_or_else(|e| e.into_inner());
        if slot.conn.is_none() && !slot.done {
            slot.done = true;
            if let Some(file) = self.sqlite_file() {
                match open_direct(&file) {
                    Ok(conn) => (slot.conn, slot.done) = (Some(conn), false),
                    Err(e) => {
                        tracing::warn!(error = %e, "the run writer cannot open the database file itself; it writes through the pool")
                    }
                }
            }
        }
        slot.conn.as_mut().map(f)
    }

    /// Runs the read `f` on one of the store's own connections to the
    /// SQLite file, on the calling thread; None on Postgres, for an
    /// in-memory database, once closed, when the file cannot be opened,
    /// or when [`MAX_DIRECT_READERS`] are busy: the caller then reads
    /// through the pool. For the reads every run makes (its caller's
    /// token, its workflow, its events, the workspace's connections and
    /// MCP tools): through sqlx's pool each one is a
    /// round trip to the connection's worker thread, and one more when the
    /// connection comes back (sqlx pings every connection it takes back),
    /// four thread switches around a read of a few microseconds (issue
    /// #30). A read in WAL mode never waits for the writer.
    pub(crate) fn read_direct<R>(
        &self,
        f: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<R>,
    ) -> Option<Result<R, StoreError>> {
        if self.backend != Backend::Sqlite {
            return None;
        }
        let conn = {
            let mut slots = self.readers.lock().unwrap_or_else(|e| e.into_inner());
            if slots.done {
                return None;
            }
            match slots.idle.pop() {
                Some(conn) => conn,
                None if slots.open < MAX_DIRECT_READERS => {
                    let file = self.sqlite_file()?;
                    let opened = open_direct(&file).and_then(|conn| {
                        // A read waits for a lock only in SQLite's rare
                        // moments (a WAL being recovered or restarted), and
                        // it must not hold a runtime thread for long: after
                        // this wait it goes through the pool instead.
                        conn.busy_timeout(DIRECT_READ_BUSY_WAIT)?;
                        Ok(conn)
                    });
                    match opened {
                        Ok(conn) => {
                            slots.open += 1;
                            conn
                        }
                        Err(e) => {
                            slots.done = true;
                            tracing::warn!(error = %e, "cannot open the database file for reads; reads go through the pool");
                            return None;
                        }
                    }
                }
                None => return None,
            }
        };
        let result = f(&conn);
        let mut slots = self.readers.lock().unwrap_or_else(|e| e.into_inner());
        if slots.done {
            slots.open -= 1;
        } else {
            slots.idle.push(conn);
        }
        match result {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy =>
            {
                None
            }
            result => Some(result.map_err(StoreError::from)),
        }
    }

    /// On the group writer's thread, between batches (no write in
    /// flight): when the WAL file has grown beyond the store's
    /// [`WalBound`], checkpoints it on the writer's own connection. With no commit
    /// landing meanwhile it catches up with the last one (a reader still
    /// on an older snapshot holds it back; reads are short, and it waits
    /// for none), so the next commit writes from the WAL's beginning again.
    /// Commits wait for it: it copies and `fsync`s what the background
    /// checkpoint left (measured: 0.05 ms when that had copied everything;
    /// 23-25 ms for a second's frames). Busy when the background
    /// checkpoint is running: the next check retries.
    /// When it looks is the bound's [`WalCheck`]: before every batch, or
    /// once the background checkpoint has asked.
    pub(crate) fn restart_large_wal(&self) {
        let bound = self.wal.bound();
        let due = match bound.check {
            WalCheck::EveryBatch => true,
            WalCheck::AfterBackground { .. } => self
                .wal
                .due
                .swap(false, std::sync::atomic::Ordering::Relaxed),
        };
        if due {
            self.restart_wal_beyond(bound.bytes);
        }
    }

    /// [`Store::restart_large_wal`] with the size it waits for.
    fn restart_wal_beyond(&self, bytes: u64) {
        if !self.wal.beyond(bytes) {
            return;
        }
        let started = std::time::Instant::now();
        let done = self.with_direct(|conn| {
            conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })
        });
        match done {
            Some(Ok((busy, frames, copied))) => {
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                tracing::debug!(
                    busy,
                    frames,
                    copied,
                    ms,
                    "the writer checkpointed a large WAL"
                )
            }
            Some(Err(e)) => {
                tracing::warn!(error = %e, "cannot checkpoint the WAL; the next check retries")
            }
            None => {}
        }
    }

    /// Every row of `sql`, whose one parameter is `workspace_id`: on
    /// SQLite read through [`Store::read_direct`] with `row` (the columns
    /// in the order `sql` selects them), through the pool otherwise.
    pub(crate) async fn workspace_rows<R>(
        &self,
        sql: &str,
        workspace_id: &str,
        row: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<R>,
    ) -> Result<Vec<R>, StoreError>
    where
        R: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
    {
        let direct = self.read_direct(|conn| {
            conn.prepare_cached(sql)?
                .query_map([workspace_id], row)?
                .collect()
        });
        match direct {
            Some(rows) => rows,
            None => Ok(sqlx::query_as(sql)
                .bind(workspace_id)
                .fetch_all(self.pool())
                .await?),
        }
    }

    pub async fn close(&self) {
        // The store's own connections first, so that the pools' last
        // connection is the file's last and removes the WAL.
        {
            let mut slot = self.direct.lock().unwrap_or_else(|e| e.into_inner());
            slot.conn = None;
            slot.done = true;
        }
        {
            let mut slots = self.readers.lock().unwrap_or_else(|e| e.into_inner());
            slots.done = true;
            slots.open -= slots.idle.len();
            slots.idle.clear();
        }
        self.writer.close().await;
        self.pool.close().await;
    }
}

/// sqlx pool options without sqlx's background reaper (no idle timeout, no
/// maximum lifetime), for every pool this server opens. sqlx 0.8.6 (and
/// 0.9.0) can wrap its count of idle connections below zero when a
/// connection is returned while another is taken (launchbadge/sqlx#3645);
/// the reaper then loops about 2^64 times inside one poll: a core at 100%
/// and a process that never exits (seen here: one of about 40 `glassbox
/// run`s of 64 parallel calls hung at its end). Without the two settings
/// sqlx starts no reaper. Nothing needs it: a SQLite connection never goes
/// stale, and a Postgres one is pinged before use (`test_before_acquire`)
/// and replaced when it has died.
pub fn pool_options<DB: sqlx::Database>() -> PoolOptions<DB> {
    PoolOptions::new().idle_timeout(None).max_lifetime(None)
}

/// Moves the WAL into the database file with a PASSIVE checkpoint, on a
/// reader connection: it never blocks the writer, and no commit pays for a
/// checkpoint (SQLite's automatic one runs inside the commit that crosses
/// 1,000 pages, a pause of several milliseconds). The first at once, then
/// every second, or with [`WalCheck::AfterBackground`] every `every`, first
/// looking at the WAL's size: beyond the bound it checkpoints again while
/// that took long (the commits meanwhile) and then asks the group writer to
/// start the WAL again (see [`Store::restart_large_wal`]).
fn checkpoint_in_background(pool: AnyPool, wal: std::sync::Arc<WalState>) {
    tokio::spawn(async move {
        loop {
            let bound = wal.bound();
            let every = match bound.check {
                WalCheck::AfterBackground { every } => Some(every),
                WalCheck::EveryBatch => None,
            };
            let large = every.is_some() && wal.beyond(bound.bytes);
            let mut done = Ok(());
            for _ in 0..if large { 3 } else { 1 } {
                let started = std::time::Instant::now();
                done = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                    .execute(&pool)
                    .await
                    .map(drop);
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                tracing::debug!(large, ms, "background WAL checkpoint");
                if done.is_err() || ms < 2.0 {
                    break;
                }
            }
            match done {
                Ok(()) if large => wal.due.store(true, std::sync::atomic::Ordering::Relaxed),
                Ok(()) => {}
                Err(_) if pool.is_closed() => break,
                Err(e) => {
                    tracing::warn!(error = %e, "WAL checkpoint failed; the next one retries")
                }
            }
            if pool.is_closed() {
                break;
            }
            let every = every.unwrap_or(Duration::from_secs(1));
            tokio::time::sleep(every.max(Duration::from_millis(1))).await;
        }
    });
}

/// Hides a password in a database URL before it goes into a message.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let userinfo = &url[scheme_end + 3..at];
            match userinfo.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &url[..scheme_end + 3],
                    &userinfo[..colon],
                    &url[at..]
                ),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: &str) {
        assert_eq!(redact_url(input), expected, "input: {input}");
    }

    #[test]
    fn redacts_passwords_only() {
        check(
            "postgres://u:secret@h:5432/db",
            "postgres://u:***@h:5432/db",
        );
        check("postgres://u@h/db", "postgres://u@h/db");
        check("sqlite://data/glassbox.db", "sqlite://data/glassbox.db");
    }

    #[tokio::test]
    async fn sqlite_file_is_created_and_migrated() {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("g.db").display());
        let db = Store::open(&url).await.expect("opens");
        assert_eq!(db.backend(), "sqlite");
        // No sqlx reaper (see `pool_options`): it can spin forever.
        let options = db.pool().options();
        assert_eq!(
            (options.get_idle_timeout(), options.get_max_lifetime()),
            (None, None)
        );
        assert!(db.schema_version().await.expect("query") >= 2);
        db.close().await;
        let db = Store::open(&url).await.expect("reopens");
        assert!(db.schema_version().await.expect("query") >= 2);
    }

    /// The WAL file's size.
    fn wal_bytes(dir: &std::path::Path) -> u64 {
        std::fs::metadata(dir.join("g.db-wal")).map_or(0, |m| m.len())
    }

    /// `sql` on the store's own writer connection.
    fn write_direct(db: &Store, sql: &str) {
        db.with_direct(|conn| conn.execute_batch(sql))
            .expect("the writer's connection")
            .expect("writes")
    }

    /// Writes 20 rows of 4 KB to a new table through the writer's
    /// connection; the WAL's size after them.
    fn grow_wal(db: &Store, dir: &std::path::Path) -> u64 {
        write_direct(db, "CREATE TABLE scratch (x TEXT)");
        for _ in 0..20 {
            write_direct(db, "INSERT INTO scratch VALUES (hex(randomblob(2000)))");
        }
        wal_bytes(dir)
    }

    #[tokio::test]
    async fn the_writer_starts_a_large_wal_again_from_its_beginning() {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("g.db").display());
        let db = Store::open(&url).await.expect("opens");
        let write = |sql: &str| write_direct(&db, sql);
        let grown = grow_wal(&db, dir.path());
        // Below the bound nothing happens: the next commit appends.
        db.restart_wal_beyond(grown);
        write("INSERT INTO scratch VALUES ('a')");
        let appended = wal_bytes(dir.path());
        assert!(appended > grown, "{appended} > {grown}");
        // Beyond it the writer checkpoints, and the next commit writes
        // from the WAL's beginning: the file does not grow.
        db.restart_wal_beyond(1);
        write("INSERT INTO scratch VALUES ('b')");
        assert_eq!(wal_bytes(dir.path()), appended);
        db.close().await;
    }

    /// How many frames the WAL's log holds (a checkpoint's answer, so
    /// looked at last).
    fn wal_frames(db: &Store) -> i64 {
        db.with_direct(|conn| conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(1)))
            .expect("the writer's connection")
            .expect("checkpoints")
    }

    /// The group writer restarts the WAL by its store's bound: with
    /// [`WalCheck::EveryBatch`] at its next batch beyond it; with
    /// [`WalCheck::AfterBackground`] only once the background checkpoint
    /// has looked, checkpointed and asked, and then it finishes the frames
    /// committed since; never below the bound.
    #[tokio::test]
    async fn the_group_writer_keeps_the_wal_within_its_stores_bound() {
        let after_background = |bytes, every| WalBound {
            bytes,
            check: WalCheck::AfterBackground { every },
        };
        let (hour, soon) = (Duration::from_secs(3600), Duration::from_millis(300));
        let server_bytes = WalBound::SERVER.bytes;
        for (bound, restarts) in [
            (
                WalBound {
                    bytes: 1,
                    ..WalBound::COMMAND
                },
                true,
            ),
            (after_background(1, hour), false),
            (after_background(1, soon), true),
            (after_background(server_bytes, hour), false),
        ] {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = format!("sqlite://{}", dir.path().join("g.db").display());
            let db = Store::open(&url)
                .await
                .expect("opens")
                .with_wal_bound(bound);
            // The background checkpoint's first one, at once, is over
            // (the next is at least 300 ms away).
            tokio::time::sleep(Duration::from_millis(50)).await;
            let writer = group::GroupWriter::start(db.clone());
            // The writer's first batch opens its connection (and takes
            // the background's first ask, if any).
            writer.flush().await.expect("flush");
            grow_wal(&db, dir.path());
            if bound == after_background(1, soon) {
                // The background's next one looks, checkpoints and asks
                // the writer to finish.
                let asked = std::time::Instant::now();
                while !db.wal.due.load(std::sync::atomic::Ordering::Relaxed) {
                    assert!(
                        asked.elapsed() < Duration::from_secs(5),
                        "the background asked"
                    );
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                // Then, before its next one, commits it did not
                // checkpoint, which the writer must.
                for _ in 0..3 {
                    write_direct(&db, "INSERT INTO scratch VALUES (hex(randomblob(2000)))");
                }
            }
            if bound == after_background(server_bytes, hour) {
                // Asked, but below the bound.
                db.wal.due.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            // A batch: the writer looks at the WAL first.
            writer.flush().await.expect("flush");
            write_direct(&db, "INSERT INTO scratch VALUES ('a')");
            let frames = wal_frames(&db);
            if restarts {
                assert!(
                    frames <= 3,
                    "{bound:?}: written from the WAL's beginning, {frames} frames"
                );
            } else {
                assert!(frames > 20, "{bound:?}: appended, {frames} frames");
            }
            db.close().await;
        }
    }

    /// Reads nested `depth` deep, each on its own direct connection while
    /// the outer ones are busy: how many got one.
    fn nested_direct_reads(db: &Store, depth: usize) -> usize {
        if depth == 0 {
            return 0;
        }
        match db.read_direct(|conn| {
            conn.query_row("SELECT COUNT(*) FROM workspaces", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|_| 1 + nested_direct_reads(db, depth - 1))
        }) {
            Some(got) => got.expect("reads"),
            None => 0,
        }
    }

    #[tokio::test]
    async fn reads_use_the_stores_own_sqlite_connections_up_to_their_cap_and_not_once_closed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("g.db").display());
        let db = Store::open(&url).await.expect("opens");
        assert_eq!(nested_direct_reads(&db, 1), 1);
        // Beyond the cap, a read goes through the pool (None here).
        assert_eq!(
            nested_direct_reads(&db, MAX_DIRECT_READERS + 2),
            MAX_DIRECT_READERS
        );
        // The connections came back: all of them serve again.
        assert_eq!(
            nested_direct_reads(&db, MAX_DIRECT_READERS),
            MAX_DIRECT_READERS
        );
        // A read that could not get its lock in time (SQLite says busy)
        // goes through the pool; another error is the caller's.
        let busy = db.read_direct(|_| -> rusqlite::Result<()> {
            Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                None,
            ))
        });
        assert!(busy.is_none(), "busy: through the pool");
        let other = db.read_direct(|conn| conn.query_row("SELECT nope", [], |_| Ok(())));
        assert!(
            matches!(other, Some(Err(StoreError::Sqlite(_)))),
            "{other:?}"
        );
        assert_eq!(
            nested_direct_reads(&db, MAX_DIRECT_READERS),
            MAX_DIRECT_READERS
        );
        db.close().await;
        assert_eq!(nested_direct_reads(&db, 1), 0, "closed: through the pool");
        // An in-memory database has no file another connection could
        // share (and opening one leaves no file behind).
        let cwd = std::env::current_dir().expect("cwd");
        let memory = Store::open("sqlite::memory:").await.expect("opens");
        assert_eq!(nested_direct_reads(&memory, 1), 0);
        let strays: Vec<_> = std::fs::read_dir(&cwd)
            .expect("cwd")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("sqlx-in-memory"))
            .collect();
        assert!(strays.is_empty(), "{strays:?}");
    }
}
