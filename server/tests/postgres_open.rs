//! The Postgres backend opens and migrates a fresh database.
//!
//! Runs when GLASSBOX_TEST_POSTGRES_URL points at a server (`cargo xtask test`
//! and CI set it); each run creates its own database and drops it after.

use glassbox_server::Database;
use sqlx::Connection;

#[tokio::test]
async fn postgres_opens_and_migrates_fresh_database() {
    let Ok(admin_url) = std::env::var("GLASSBOX_TEST_POSTGRES_URL") else {
        eprintln!("GLASSBOX_TEST_POSTGRES_URL is not set: Postgres test not run (cargo xtask test sets it)");
        return;
    };
    let name = format!(
        "glassbox_test_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_nanos()
    );
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
    let url = format!("{base}/{name}");
    let result = async {
        let db = Database::open(&url).await.map_err(|e| e.to_string())?;
        let backend = db.backend();
        let version = db.schema_version().await.map_err(|e| e.to_string())?;
        db.close().await;
        // Opening again applies nothing new.
        let db = Database::open(&url).await.map_err(|e| e.to_string())?;
        let again = db.schema_version().await.map_err(|e| e.to_string())?;
        db.close().await;
        Ok::<_, String>((backend, version, again))
    }
    .await;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut admin)
        .await
        .expect("drop test database");

    let (backend, version, again) = result.expect("postgres backend works");
    assert_eq!(backend, "postgres");
    assert!(version >= 1);
    assert_eq!(version, again);
}
