//! The Postgres backend opens and migrates a fresh database.
//!
//! Runs when GLASSBOX_TEST_POSTGRES_URL points at a server (`cargo xtask test`
//! and CI set it); each run creates its own database and drops it after.

mod common;

use glassbox_server::Store;

#[tokio::test]
async fn postgres_opens_and_migrates_fresh_database() {
    let Some(temp) = common::TempPgDatabase::create("glassbox_test").await else {
        return;
    };
    let url = temp.url.clone();
    let result = async {
        let db = Store::open(&url).await.map_err(|e| e.to_string())?;
        let backend = db.backend();
        let version = db.schema_version().await.map_err(|e| e.to_string())?;
        db.close().await;
        // Opening again applies nothing new.
        let db = Store::open(&url).await.map_err(|e| e.to_string())?;
        let again = db.schema_version().await.map_err(|e| e.to_string())?;
        db.close().await;
        Ok::<_, String>((backend, version, again))
    }
    .await;
    temp.drop_now().await;

    let (backend, version, again) = result.expect("postgres backend works");
    assert_eq!(backend, "postgres");
    assert!(version >= 1);
    assert_eq!(version, again);
}
