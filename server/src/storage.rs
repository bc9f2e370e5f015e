//! Storage: the embedded SQLite database (default) or Postgres.
//!
//! Both backends carry their own migrations under `server/migrations/`; they
//! run on start-up and by `glassbox migrate`.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

/// An open, migrated database.
#[derive(Clone, Debug)]
pub enum Database {
    Sqlite(SqlitePool),
    Postgres(PgPool),
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

impl Database {
    /// Opens (creating a SQLite file when missing) and migrates.
    pub async fn open(url: &str) -> Result<Self, OpenError> {
        let connect_err = |source| OpenError::Connect {
            url: redact_url(url),
            source,
        };
        let migrate_err = |source| OpenError::Migrate {
            url: redact_url(url),
            source,
        };
        if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)
                .map_err(connect_err)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .foreign_keys(true)
                .busy_timeout(Duration::from_secs(5));
            let pool = SqlitePoolOptions::new()
                .max_connections(8)
                .connect_with(options)
                .await
                .map_err(connect_err)?;
            sqlx::migrate!("./migrations/sqlite")
                .run(&pool)
                .await
                .map_err(migrate_err)?;
            Ok(Self::Sqlite(pool))
        } else {
            let pool = PgPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(Duration::from_secs(10))
                .connect(url)
                .await
                .map_err(connect_err)?;
            sqlx::migrate!("./migrations/postgres")
                .run(&pool)
                .await
                .map_err(migrate_err)?;
            Ok(Self::Postgres(pool))
        }
    }

    /// `"sqlite"` or `"postgres"`.
    pub fn backend(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    /// The newest applied migration; also proves the database answers.
    pub async fn schema_version(&self) -> Result<i64, sqlx::Error> {
        const SQL: &str = "SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success";
        match self {
            Self::Sqlite(pool) => sqlx::query_scalar(SQL).fetch_one(pool).await,
            Self::Postgres(pool) => sqlx::query_scalar(SQL).fetch_one(pool).await,
        }
    }

    pub async fn close(&self) {
        match self {
            Self::Sqlite(pool) => pool.close().await,
            Self::Postgres(pool) => pool.close().await,
        }
    }
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
        let db = Database::open(&url).await.expect("opens");
        assert_eq!(db.backend(), "sqlite");
        assert!(db.schema_version().await.expect("query") >= 1);
        db.close().await;
        // A second open of the same file reapplies nothing and still works.
        let db = Database::open(&url).await.expect("reopens");
        assert!(db.schema_version().await.expect("query") >= 1);
    }
}
