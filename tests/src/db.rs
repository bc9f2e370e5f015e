//! Where a test server keeps its data: SQLite in its data dir (the
//! default), or a fresh Postgres database on GLASSBOX_TEST_POSTGRES_URL's
//! server, made for one test and dropped after it, so the durability,
//! approval and leak suites run against both stores.

use std::path::Path;

use sqlx::Connection;

/// The store of one test's server.
pub struct TestDb {
    /// The Postgres database, if this is one: its URL, its name and the
    /// admin URL that drops it.
    pg: Option<(String, String, String)>,
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime for the database helper")
        .block_on(f)
}

impl TestDb {
    /// SQLite in the server's data dir.
    pub fn sqlite() -> Self {
        Self { pg: None }
    }

    /// A fresh Postgres database; `None` (with a note) when
    /// GLASSBOX_TEST_POSTGRES_URL is not set (`cargo xtask test` sets it).
    pub fn postgres(prefix: &str) -> Option<Self> {
        let Ok(admin) = std::env::var("GLASSBOX_TEST_POSTGRES_URL") else {
            eprintln!("GLASSBOX_TEST_POSTGRES_URL is not set: Postgres run of this suite skipped (cargo xtask test sets it)");
            return None;
        };
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let name = format!("{prefix}_{}_{nanos}", std::process::id());
        block_on(async {
            let mut conn = sqlx::PgConnection::connect(&admin)
                .await
                .expect("admin connection to GLASSBOX_TEST_POSTGRES_URL");
            sqlx::query(&format!("CREATE DATABASE {name}"))
                .execute(&mut conn)
                .await
                .expect("create the test database");
        });
        let base = admin
            .rsplit_once('/')
            .map(|(b, _)| b.to_string())
            .expect("the admin URL names a database");
        Some(Self {
            pg: Some((format!("{base}/{name}"), name, admin)),
        })
    }

    pub fn is_postgres(&self) -> bool {
        self.pg.is_some()
    }

    /// The server's environment for this store (none for SQLite).
    pub fn env(&self) -> Vec<(&'static str, &str)> {
        self.pg
            .as_ref()
            .map(|(url, _, _)| vec![("GLASSBOX_DATABASE_URL", url.as_str())])
            .unwrap_or_default()
    }

    /// The database's URL, for a test that reads or edits it directly
    /// while the server is stopped.
    pub fn url(&self, data_dir: &Path) -> String {
        match &self.pg {
            Some((url, _, _)) => url.clone(),
            None => format!("sqlite://{}", data_dir.join("glassbox.db").display()),
        }
    }

    /// The first column (text) of each row `sql` selects, with `args`
    /// bound as text in order.
    pub fn fetch_text(&self, data_dir: &Path, sql: &str, args: &[&str]) -> Vec<String> {
        let url = self.url(data_dir);
        block_on(async {
            let mut conn = connect(&url).await;
            let mut q = sqlx::query_as::<_, (String,)>(sql);
            for a in args {
                q = q.bind(*a);
            }
            let rows = q
                .fetch_all(&mut conn)
                .await
                .expect("query the test's database");
            conn.close().await.expect("close");
            rows.into_iter().map(|(t,)| t).collect()
        })
    }

    /// Runs `sql` with `args` bound as text; the rows it changed.
    pub fn execute(&self, data_dir: &Path, sql: &str, args: &[&str]) -> u64 {
        let url = self.url(data_dir);
        block_on(async {
            let mut conn = connect(&url).await;
            let mut q = sqlx::query(sql);
            for a in args {
                q = q.bind(*a);
            }
            let done = q
                .execute(&mut conn)
                .await
                .expect("change the test's database");
            conn.close().await.expect("close");
            done.rows_affected()
        })
    }

    /// Every row of every table of a Postgres database as text, one entry
    /// per table (for the leak scan; a SQLite file is scanned as bytes).
    pub fn postgres_tables(&self) -> Vec<(String, Vec<u8>)> {
        let Some((url, _, _)) = &self.pg else {
            return Vec::new();
        };
        block_on(async {
            let mut conn = sqlx::PgConnection::connect(url).await.expect("connect");
            let tables: Vec<(String,)> = sqlx::query_as(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public'",
            )
            .fetch_all(&mut conn)
            .await
            .expect("tables");
            let mut out = Vec::new();
            for (table,) in tables {
                let rows: Vec<(String,)> =
                    sqlx::query_as(&format!("SELECT t::text FROM \"{table}\" t"))
                        .fetch_all(&mut conn)
                        .await
                        .expect("rows");
                let text: Vec<String> = rows.into_iter().map(|(r,)| r).collect();
                out.push((format!("table {table}"), text.join("\n").into_bytes()));
            }
            out
        })
    }
}

async fn connect(url: &str) -> sqlx::AnyConnection {
    sqlx::any::install_default_drivers();
    sqlx::AnyConnection::connect(url)
        .await
        .expect("open the test's database")
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Some((_, name, admin)) = &self.pg {
            block_on(async {
                if let Ok(mut conn) = sqlx::PgConnection::connect(admin).await {
                    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&mut conn)
                        .await;
                }
            });
        }
    }
}
