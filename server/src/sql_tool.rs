//! The server's [`SqlBackend`] for the `sql_query` tool: a read-only
//! connection to a SQLite file or a Postgres database, configured per
//! workspace. node-runtime checks the statement; this module runs it.
//!
//! SQLite connections are opened read-only (`mode=ro`); Postgres runs each
//! query in a `READ ONLY` transaction with `statement_timeout` set and
//! rolled back afterwards. Both also sit under a client-side timeout.

use std::str::FromStr;
use std::time::Duration;

use futures::future::BoxFuture;
use node_runtime::tool::context::{backend_error, SqlBackend, SqlDialect};
use node_runtime::ToolError;
use serde_json::{Map, Value};
use sqlx::postgres::PgPool;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};
use sqlx::{Column, Row, TypeInfo, ValueRef};

use crate::storage::pool_options;

/// A read-only connection for `sql_query`.
#[derive(Clone, Debug)]
pub enum SqlxBackend {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl SqlxBackend {
    /// A Postgres pool that connects on first use (nothing is reached when
    /// a run starts); the URL is checked now.
    pub fn postgres_lazy(url: &str) -> Result<Self, sqlx::Error> {
        let pool = pool_options::<sqlx::Postgres>()
            .max_connections(2)
            .acquire_timeout(Duration::from_secs(5))
            .connect_lazy(url)?;
        Ok(Self::Postgres(pool))
    }

    /// A SQLite file opened read-only on first use (never created).
    pub fn sqlite_lazy(path: &std::path::Path) -> Self {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .read_only(true)
            .create_if_missing(false);
        Self::Sqlite(
            pool_options::<sqlx::Sqlite>()
                .max_connections(2)
                .connect_lazy_with(options),
        )
    }

    /// Connects lazily-checked: `sqlite://FILE` (opened read-only) or `postgres://...`.
    pub async fn connect(url: &str) -> Result<Self, sqlx::Error> {
        if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)?.read_only(true);
            let pool = pool_options::<sqlx::Sqlite>()
                .max_connections(2)
                .connect_with(options)
                .await?;
            Ok(Self::Sqlite(pool))
        } else {
            let pool = pool_options::<sqlx::Postgres>()
                .max_connections(2)
                .acquire_timeout(Duration::from_secs(5))
                .connect(url)
                .await?;
            Ok(Self::Postgres(pool))
        }
    }
}

fn sqlite_value(row: &sqlx::sqlite::SqliteRow, i: usize) -> Value {
    let Ok(raw) = row.try_get_raw(i) else {
        return Value::Null;
    };
    if raw.is_null() {
        return Value::Null;
    }
    match raw.type_info().name() {
        "INTEGER" | "BOOLEAN" => row
            .try_get::<i64, _>(i)
            .map(Value::from)
            .unwrap_or(Value::Null),
        "REAL" | "NUMERIC" => row
            .try_get::<f64, _>(i)
            .map(Value::from)
            .unwrap_or(Value::Null),
        "BLOB" => row
            .try_get::<Vec<u8>, _>(i)
            .map(|b| Value::String(b.iter().map(|x| format!("{x:02x}")).collect()))
            .unwrap_or(Value::Null),
        _ => row
            .try_get::<String, _>(i)
            .map(Value::String)
            .unwrap_or(Value::Null),
    }
}

/// Runs the query with a progress handler that interrupts it at its
/// deadline, so a runaway query (a `WITH RECURSIVE` without end) stops
/// inside SQLite and its connection is free for the next one.
async fn run_sqlite(
    pool: &SqlitePool,
    sql: &str,
    timeout_ms: u64,
) -> Result<Vec<Value>, ToolError> {
    let fail = |e: sqlx::Error| backend_error(format!("SQLite query failed: {e}"), false);
    let mut conn = pool.acquire().await.map_err(fail)?;
    let deadline = std::time::Instant::now() + Duration::from_millis(timeout_ms);
    conn.lock_handle()
        .await
        .map_err(fail)?
        .set_progress_handler(1_000, move || std::time::Instant::now() < deadline);
    let result = sqlx::query(sql).fetch_all(&mut *conn).await;
    if let Ok(mut handle) = conn.lock_handle().await {
        handle.remove_progress_handler();
    }
    let rows = result.map_err(|e| {
        let interrupted = e
            .as_database_error()
            .is_some_and(|d| d.message().contains("interrupt"));
        if interrupted {
            backend_error(
                format!("the query ran past its {timeout_ms} ms timeout and was interrupted"),
                true,
            )
        } else {
            fail(e)
        }
    })?;
    Ok(rows
        .iter()
        .map(|row| {
            let mut obj = Map::new();
            for (i, col) in row.columns().iter().enumerate() {
                obj.insert(col.name().to_string(), sqlite_value(row, i));
            }
            Value::Object(obj)
        })
        .collect())
}

async fn run_postgres(pool: &PgPool, sql: &str, timeout_ms: u64) -> Result<Vec<Value>, ToolError> {
    let fail = |e: sqlx::Error| {
        let timed_out = e
            .as_database_error()
            .and_then(|d| d.code())
            .is_some_and(|c| c == "57014");
        backend_error(format!("Postgres query failed: {e}"), timed_out)
    };
    let mut tx = pool.begin().await.map_err(fail)?;
    sqlx::query("SET TRANSACTION READ ONLY")
        .execute(&mut *tx)
        .await
        .map_err(fail)?;
    sqlx::query(&format!("SET LOCAL statement_timeout = {timeout_ms}"))
        .execute(&mut *tx)
        .await
        .map_err(fail)?;
    // row_to_json renders every Postgres type as JSON the way Postgres means it.
    let wrapped = format!("SELECT row_to_json(glassbox_row)::text FROM ({sql}) AS glassbox_row");
    let rows: Vec<String> = sqlx::query_scalar(&wrapped)
        .fetch_all(&mut *tx)
        .await
        .map_err(fail)?;
    tx.rollback().await.map_err(fail)?;
    rows.iter()
        .map(|text| {
            serde_json::from_str(text).map_err(|e| {
                ToolError::unknown(format!("Postgres returned a row that is not JSON: {e}"))
            })
        })
        .collect()
}

impl SqlBackend for SqlxBackend {
    fn dialect(&self) -> SqlDialect {
        match self {
            Self::Sqlite(_) => SqlDialect::Sqlite,
            Self::Postgres(_) => SqlDialect::Postgres,
        }
    }

    fn query<'a>(
        &'a self,
        sql: &'a str,
        timeout_ms: u64,
    ) -> BoxFuture<'a, Result<Vec<Value>, ToolError>> {
        Box::pin(async move {
            let work = async {
                match self {
                    Self::Sqlite(pool) => run_sqlite(pool, sql, timeout_ms).await,
                    Self::Postgres(pool) => run_postgres(pool, sql, timeout_ms).await,
                }
            };
            tokio::time::timeout(Duration::from_millis(timeout_ms + 500), work)
                .await
                .unwrap_or_else(|_| {
                    Err(backend_error(
                        format!("query exceeded its {timeout_ms} ms statement timeout"),
                        true,
                    ))
                })
        })
    }
}
