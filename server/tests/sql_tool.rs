//! `sql_query` end to end through the executor against real databases:
//! a SQLite file and the machine's Postgres (GLASSBOX_TEST_POSTGRES_URL).

mod common;

use std::sync::Arc;

use glassbox_server::sql_tool::SqlxBackend;
use node_runtime::blob::FsBlobStore;
use node_runtime::builtins::register_builtins;
use node_runtime::call_id::CallIdAllocator;
use node_runtime::executor::{CallScope, Executor, ExecutorConfig, ToolCall};
use node_runtime::policy::{Policy, Usage};
use node_runtime::secrets::MemorySecrets;
use node_runtime::tool::ToolRegistry;
use node_runtime::{ErrorCode, ToolEnvelope};
use serde_json::json;
use sqlx::Connection;

struct Harness {
    executor: Arc<Executor>,
    registry: ToolRegistry,
    scope: Arc<CallScope>,
    ids: CallIdAllocator,
    _blobs: tempfile::TempDir,
}

impl Harness {
    fn new(backend: SqlxBackend) -> Self {
        let mut registry = ToolRegistry::new();
        register_builtins(&mut registry).expect("builtins");
        let blobs = tempfile::tempdir().expect("tmp");
        let executor = Arc::new(Executor::new(
            ExecutorConfig::default(),
            Arc::new(MemorySecrets::new()),
            Arc::new(FsBlobStore::new(blobs.path())),
        ));
        let mut scope = CallScope::new(
            "ws",
            Policy {
                enabled_tools: vec!["sql_query".into()],
                ..Policy::default()
            },
        );
        let mut env = (*scope.env).clone();
        env.sql = vec![("main".into(), Arc::new(backend))];
        scope.env = Arc::new(env);
        Self {
            executor,
            registry,
            scope: Arc::new(scope),
            ids: CallIdAllocator::new(),
            _blobs: blobs,
        }
    }

    async fn query(&mut self, sql: &str, limit: Option<u64>) -> ToolEnvelope {
        let tool = self.registry.get("sql_query", "1.0.0").expect("tool");
        let mut input = json!({"connection": "main", "query": sql});
        if let Some(l) = limit {
            input["limit"] = json!(l);
        }
        let input = node_runtime::Payload::from(input);
        let call_id = self.ids.next("sql_query", "1.0.0", &input);
        self.executor
            .execute(
                self.scope.clone(),
                ToolCall {
                    call_id,
                    tool,
                    input,
                },
                Usage::default(),
            )
            .await
    }
}

async fn check_backend(h: &mut Harness) {
    let e = h
        .query("SELECT id, name FROM items ORDER BY id", None)
        .await;
    assert!(e.is_success(), "{e:?}");
    assert_eq!(e.output["row_count"], 3);
    assert_eq!(e.output["rows"][0], json!({"id": 1, "name": "alpha"}));

    let e = h.query("SELECT id FROM items ORDER BY id", Some(2)).await;
    assert_eq!(e.output["row_count"], 2, "LIMIT enforced: {e:?}");

    for sql in [
        "DELETE FROM items",
        "UPDATE items SET name = 'x'",
        "DROP TABLE items",
        "SELECT 1; DELETE FROM items",
    ] {
        let e = h.query(sql, None).await;
        assert_eq!(
            e.error.as_ref().map(|e| e.code),
            Some(ErrorCode::PolicyDenied),
            "{sql}: {e:?}"
        );
    }
    let e = h.query("SELECT count(*) AS n FROM items", None).await;
    assert_eq!(e.output["rows"][0]["n"], 3, "nothing was deleted: {e:?}");

    let e = h.query("SELECT * FROM no_such_table", None).await;
    assert_eq!(
        e.error.as_ref().map(|e| e.code),
        Some(ErrorCode::ProviderError),
        "{e:?}"
    );
}

#[tokio::test]
async fn sql_query_on_sqlite() {
    let dir = tempfile::tempdir().expect("tmp");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("data.db").display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("create");
    sqlx::query("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO items VALUES (1,'alpha'),(2,'beta'),(3,'gamma');")
        .execute(&mut conn)
        .await
        .expect("seed");
    conn.close().await.expect("close");
    let backend = SqlxBackend::connect(&format!(
        "sqlite://{}",
        dir.path().join("data.db").display()
    ))
    .await
    .expect("connect");
    let mut h = Harness::new(backend);
    check_backend(&mut h).await;
}

#[tokio::test]
async fn sql_query_on_postgres() {
    let Some(temp) = common::TempPgDatabase::create("glassbox_sqltool").await else {
        return;
    };
    let url = temp.url.clone();
    let outcome = async {
        let mut conn = sqlx::PgConnection::connect(&url).await.map_err(|e| e.to_string())?;
        sqlx::raw_sql("CREATE TABLE items (id INT PRIMARY KEY, name TEXT); INSERT INTO items VALUES (1,'alpha'),(2,'beta'),(3,'gamma');")
            .execute(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        conn.close().await.map_err(|e| e.to_string())?;
        let backend = SqlxBackend::connect(&url).await.map_err(|e| e.to_string())?;
        let mut h = Harness::new(backend.clone());
        check_backend(&mut h).await;
        // The statement timeout holds.
        let slow = node_runtime::builtins::sql_query::SqlBackend::query(&backend, "SELECT pg_sleep(3)", 200).await;
        let err = slow.expect_err("times out");
        if let SqlxBackend::Postgres(pool) = backend {
            pool.close().await;
        }
        Ok::<_, String>(err)
    }
    .await;
    temp.drop_now().await;
    let err = outcome.expect("postgres scenario");
    assert_eq!(err.code, ErrorCode::Timeout, "{err:?}");
}
