//! Shared helpers of the server's integration tests.

#![allow(dead_code)]

use sqlx::Connection;

/// A fresh Postgres database on GLASSBOX_TEST_POSTGRES_URL's server, made
/// for one test and dropped by [`TempPgDatabase::drop_now`].
pub struct TempPgDatabase {
    pub url: String,
    name: String,
    admin: sqlx::PgConnection,
}

impl TempPgDatabase {
    /// `None` (with a note on stderr) when GLASSBOX_TEST_POSTGRES_URL is not
    /// set; `cargo xtask test` and CI always set it.
    pub async fn create(prefix: &str) -> Option<Self> {
        let Ok(admin_url) = std::env::var("GLASSBOX_TEST_POSTGRES_URL") else {
            eprintln!("GLASSBOX_TEST_POSTGRES_URL is not set: Postgres test not run (cargo xtask test sets it)");
            return None;
        };
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_nanos();
        let name = format!("{prefix}_{}_{nanos}", std::process::id());
        let mut admin = sqlx::PgConnection::connect(&admin_url)
            .await
            .expect("admin connection to GLASSBOX_TEST_POSTGRES_URL");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await
            .expect("create test database");
        let base = admin_url
            .rsplit_once('/')
            .map(|(base, _)| base.to_string())
            .expect("URL has a database path");
        Some(Self {
            url: format!("{base}/{name}"),
            name,
            admin,
        })
    }

    /// Drops the database (closing any connection still open to it).
    pub async fn drop_now(mut self) {
        sqlx::query(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ))
        .execute(&mut self.admin)
        .await
        .expect("drop test database");
    }
}
