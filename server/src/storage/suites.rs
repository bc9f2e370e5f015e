//! Regression suites (issue 33) and their runs: one row per suite (its
//! cases and options as JSON), one per suite run (its verdict as JSON when
//! it ends). A suite's runs are deleted with it. Every statement but the
//! start's look for interrupted suite runs filters by workspace.

use super::*;

/// A suite as stored: `cases` is the JSON of `Vec<wire::SuiteCase>`,
/// `options` of `wire::SuiteOptions`.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct SuiteRow {
    pub id: String,
    pub workspace_id: String,
    pub workflow_id: String,
    pub name: String,
    pub description: String,
    pub cases: String,
    pub options: String,
    pub created_at: String,
    pub updated_at: String,
}

/// A suite run as stored, with its suite's name; `result` (the JSON of its
/// `Vec<wire::CaseResult>`) is only read by [`Store::get_suite_run`].
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct SuiteRunRow {
    pub id: String,
    pub workspace_id: String,
    pub suite_id: String,
    pub suite_name: String,
    pub workflow_id: String,
    pub revision: i64,
    /// running | passed | failed | error
    pub status: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub passed: i64,
    pub failed: i64,
    pub result: Option<String>,
    pub error: Option<String>,
    /// The instance executing it (see `runs::suites`).
    pub instance: String,
}

const SUITE_COLUMNS: &str =
    "id, workspace_id, workflow_id, name, description, cases, options, created_at, updated_at";

/// A suite run's columns, `result` as given (the list leaves it out).
fn run_columns(result: &str) -> String {
    format!("r.id, r.workspace_id, r.suite_id, s.name AS suite_name, r.workflow_id, r.revision, r.status, r.started_at, r.finished_at, r.passed, r.failed, {result} AS result, r.error, r.instance")
}

/// Whether `e` is a unique constraint's refusal (a suite name taken by a
/// concurrent write).
fn unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.is_unique_violation())
}

impl Store {
    /// Adds a suite; false when its name is taken in the workspace.
    pub async fn insert_suite(&self, suite: &SuiteRow) -> Result<bool, StoreError> {
        let n = sqlx::query("INSERT INTO suites (id, workspace_id, workflow_id, name, description, cases, options, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (workspace_id, name) DO NOTHING")
            .bind(&suite.id)
            .bind(&suite.workspace_id)
            .bind(&suite.workflow_id)
            .bind(&suite.name)
            .bind(&suite.description)
            .bind(&suite.cases)
            .bind(&suite.options)
            .bind(&suite.created_at)
            .bind(&suite.updated_at)
            .execute(self.writer())
            .await?
            .rows_affected();
        Ok(n == 1)
    }

    /// Replaces a suite's fields (not its id, workspace or creation);
    /// false when its new name is another suite's.
    pub async fn update_suite(&self, suite: &SuiteRow) -> Result<bool, StoreError> {
        let taken: Option<String> = sqlx::query_scalar(
            "SELECT id FROM suites WHERE workspace_id = $1 AND name = $2 AND id <> $3",
        )
        .bind(&suite.workspace_id)
        .bind(&suite.name)
        .bind(&suite.id)
        .fetch_optional(self.pool())
        .await?;
        if taken.is_some() {
            return Ok(false);
        }
        let updated = sqlx::query("UPDATE suites SET workflow_id = $3, name = $4, description = $5, cases = $6, options = $7, updated_at = $8 WHERE workspace_id = $1 AND id = $2")
            .bind(&suite.workspace_id)
            .bind(&suite.id)
            .bind(&suite.workflow_id)
            .bind(&suite.name)
            .bind(&suite.description)
            .bind(&suite.cases)
            .bind(&suite.options)
            .bind(&suite.updated_at)
            .execute(self.writer())
            .await;
        match updated {
            Ok(r) if r.rows_affected() == 0 => {
                Err(StoreError::NotFound(format!("suite {}", suite.id)))
            }
            Ok(_) => Ok(true),
            Err(e) if unique_violation(&e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// A workspace's suites (of `workflow_id` only when given), by name.
    pub async fn list_suites(
        &self,
        workspace_id: &str,
        workflow_id: Option<&str>,
    ) -> Result<Vec<SuiteRow>, StoreError> {
        Ok(sqlx::query_as(&format!(
            "SELECT {SUITE_COLUMNS} FROM suites WHERE workspace_id = $1 AND (CAST($2 AS TEXT) IS NULL OR workflow_id = $2) ORDER BY name"
        ))
        .bind(workspace_id)
        .bind(workflow_id)
        .fetch_all(self.pool())
        .await?)
    }

    pub async fn get_suite(&self, workspace_id: &str, id: &str) -> Result<SuiteRow, StoreError> {
        sqlx::query_as(&format!(
            "SELECT {SUITE_COLUMNS} FROM suites WHERE workspace_id = $1 AND id = $2"
        ))
        .bind(workspace_id)
        .bind(id)
        .fetch_optional(self.pool())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("suite {id}")))
    }

    /// A suite by its name.
    pub async fn suite_named(
        &self,
        workspace_id: &str,
        name: &str,
    ) -> Result<Option<SuiteRow>, StoreError> {
        Ok(sqlx::query_as(&format!(
            "SELECT {SUITE_COLUMNS} FROM suites WHERE workspace_id = $1 AND name = $2"
        ))
        .bind(workspace_id)
        .bind(name)
        .fetch_optional(self.pool())
        .await?)
    }

    /// Deletes a suite and its runs, in one transaction.
    pub async fn delete_suite(&self, workspace_id: &str, id: &str) -> Result<(), StoreError> {
        let mut tx = self.writer().begin().await?;
        sqlx::query("DELETE FROM suite_runs WHERE workspace_id = $1 AND suite_id = $2")
            .bind(workspace_id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let n = sqlx::query("DELETE FROM suites WHERE workspace_id = $1 AND id = $2")
            .bind(workspace_id)
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if n == 0 {
            tx.rollback().await?;
            return Err(StoreError::NotFound(format!("suite {id}")));
        }
        tx.commit().await?;
        Ok(())
    }

    /// Stores a new suite run (`suite_name` is not a column).
    pub async fn insert_suite_run(&self, run: &SuiteRunRow) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO suite_runs (id, workspace_id, suite_id, workflow_id, revision, status, started_at, finished_at, passed, failed, result, error, instance) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)")
            .bind(&run.id)
            .bind(&run.workspace_id)
            .bind(&run.suite_id)
            .bind(&run.workflow_id)
            .bind(run.revision)
            .bind(&run.status)
            .bind(&run.started_at)
            .bind(&run.finished_at)
            .bind(run.passed)
            .bind(run.failed)
            .bind(&run.result)
            .bind(&run.error)
            .bind(&run.instance)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// A suite run's end: its status, counts, verdict and error; false
    /// when it had ended already (a stop or a start's look ended it
    /// `error`: that end stays).
    #[allow(clippy::too_many_arguments)]
    pub async fn finish_suite_run(
        &self,
        workspace_id: &str,
        id: &str,
        status: &str,
        passed: i64,
        failed: i64,
        result: Option<&str>,
        error: Option<&str>,
    ) -> Result<bool, StoreError> {
        let n = sqlx::query("UPDATE suite_runs SET status = $3, passed = $4, failed = $5, result = $6, error = $7, finished_at = $8 WHERE workspace_id = $1 AND id = $2 AND status = 'running'")
            .bind(workspace_id)
            .bind(id)
            .bind(status)
            .bind(passed)
            .bind(failed)
            .bind(result)
            .bind(error)
            .bind(now())
            .execute(self.writer())
            .await?
            .rows_affected();
        Ok(n == 1)
    }

    /// A running suite run's counts so far; false when it has ended.
    pub async fn suite_run_progress(
        &self,
        workspace_id: &str,
        id: &str,
        passed: i64,
        failed: i64,
    ) -> Result<bool, StoreError> {
        let n = sqlx::query("UPDATE suite_runs SET passed = $3, failed = $4 WHERE workspace_id = $1 AND id = $2 AND status = 'running'")
            .bind(workspace_id)
            .bind(id)
            .bind(passed)
            .bind(failed)
            .execute(self.writer())
            .await?
            .rows_affected();
        Ok(n == 1)
    }

    /// Replaces a suite's cases if they are still `before` (the text read):
    /// false when a concurrent write changed them (read again and retry).
    pub async fn replace_suite_cases(
        &self,
        workspace_id: &str,
        id: &str,
        before: &str,
        cases: &str,
    ) -> Result<bool, StoreError> {
        let n = sqlx::query("UPDATE suites SET cases = $4, updated_at = $5 WHERE workspace_id = $1 AND id = $2 AND cases = $3")
            .bind(workspace_id)
            .bind(id)
            .bind(before)
            .bind(cases)
            .bind(now())
            .execute(self.writer())
            .await?
            .rows_affected();
        Ok(n == 1)
    }

    /// One suite run with its verdict.
    pub async fn get_suite_run(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<SuiteRunRow, StoreError> {
        sqlx::query_as(&format!(
            "SELECT {} FROM suite_runs r JOIN suites s ON s.id = r.suite_id WHERE r.workspace_id = $1 AND r.id = $2",
            run_columns("r.result")
        ))
        .bind(workspace_id)
        .bind(id)
        .fetch_optional(self.pool())
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("suite run {id}")))
    }

    /// A suite's latest `limit` runs, newest first, without their verdicts.
    pub async fn list_suite_runs(
        &self,
        workspace_id: &str,
        suite_id: &str,
        limit_to: i64,
    ) -> Result<Vec<SuiteRunRow>, StoreError> {
        Ok(sqlx::query_as(&format!(
            "SELECT {} FROM suite_runs r JOIN suites s ON s.id = r.suite_id WHERE r.workspace_id = $1 AND r.suite_id = $2 ORDER BY r.started_at DESC, r.id DESC LIMIT $3",
            run_columns("CAST(NULL AS TEXT)")
        ))
        .bind(workspace_id)
        .bind(suite_id)
        .bind(limit(limit_to))
        .fetch_all(self.pool())
        .await?)
    }

    /// Every suite run still `running`, of any workspace, with the
    /// instance executing it (the start's look for interrupted ones).
    pub async fn running_suite_runs(&self) -> Result<Vec<(String, String, String)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT id, workspace_id, instance FROM suite_runs WHERE status = 'running'",
        )
        .fetch_all(self.pool())
        .await?)
    }

    /// Ends a suite run still `running` as `error` with `why`; false when
    /// it had ended already.
    pub async fn abort_suite_run(
        &self,
        workspace_id: &str,
        id: &str,
        why: &str,
    ) -> Result<bool, StoreError> {
        let n = sqlx::query("UPDATE suite_runs SET status = 'error', error = $3, finished_at = $4 WHERE workspace_id = $1 AND id = $2 AND status = 'running'")
            .bind(workspace_id)
            .bind(id)
            .bind(why)
            .bind(now())
            .execute(self.writer())
            .await?
            .rows_affected();
        Ok(n == 1)
    }
}
