//! `sql_query@1.0.0`: one read-only SELECT against a named connection.
//!
//! The statement is parsed with `sqlparser` in the connection's dialect;
//! anything but a single query (no INSERT, UPDATE, DDL, PRAGMA, ATTACH, no
//! second statement, no `SELECT ... INTO`, no locking clause) is
//! POLICY_DENIED before it reaches a database. The query is wrapped so at
//! most `limit` rows come back, and the backend runs it read-only under a
//! statement timeout.
//!
//! Functions that reach past the query's tables are refused by name in any
//! position (a call or a table function), whatever the schema prefix:
//! reading the server's files (`pg_read_file`, `pg_read_binary_file`,
//! `pg_stat_file`, `pg_ls_*`, `lo_*`), reaching other servers (`dblink*`),
//! reading or changing settings (`current_setting`, `set_config`),
//! running SQL text (`query_to_xml*`, `cursor_to_xml*`), signalling
//! backends (`pg_terminate_backend`, `pg_cancel_backend`, `pg_reload_conf`)
//! and SQLite's file and extension functions (`load_extension`, `readfile`,
//! `writefile`). The database role should still be read-only (README).
//!
//! The connection itself is a [`SqlBackend`] supplied by the host through
//! the tool context (`crate::tool::context`; the server implements it over
//! its SQL driver): node-runtime parses SQL but never opens a database.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};
use sqlparser::ast::{SetExpr, Statement};
use sqlparser::dialect::{Dialect, PostgreSqlDialect, SQLiteDialect};
use sqlparser::parser::Parser;

use crate::error::ToolError;
use crate::tool::{Tool, ToolContext};
use crate::tool_spec::{SideEffects, ToolCategory, ToolMetadata, ToolSpec};

pub use crate::tool::context::{backend_error, SqlBackend, SqlDialect};

pub const DEFAULT_LIMIT: u64 = 100;
pub const MAX_LIMIT: u64 = 1000;
pub const STATEMENT_TIMEOUT_MS: u64 = 5_000;

pub struct SqlQuery;

#[derive(Debug, Deserialize)]
pub struct SqlQueryInput {
    pub connection: String,
    pub query: String,
    #[serde(default)]
    pub limit: Option<u64>,
}

impl Tool for SqlQuery {
    type Input = SqlQueryInput;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        let mut metadata = ToolMetadata::new(ToolCategory::Data);
        metadata.side_effects = SideEffects::Reads;
        metadata.timeout_ms = STATEMENT_TIMEOUT_MS + 1_000;
        ToolSpec {
            name: "sql_query".into(),
            version: "1.0.0".into(),
            description:
                "Runs one read-only SELECT against a configured SQLite or Postgres connection."
                    .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "connection": {"type": "string", "minLength": 1},
                    "query": {"type": "string", "minLength": 1, "maxLength": 20000},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}
                },
                "required": ["connection", "query"],
                "additionalProperties": false
            }),
            output_schema: json!({
                "type": "object",
                "properties": {"rows": {"type": "array"}, "row_count": {"type": "integer"}, "limit": {"type": "integer"}},
                "required": ["rows", "row_count", "limit"]
            }),
            metadata,
        }
    }

    async fn execute(&self, input: SqlQueryInput, ctx: &ToolContext) -> Result<Value, ToolError> {
        let backend: Arc<dyn SqlBackend> = ctx
            .env
            .sql
            .iter()
            .find(|(name, _)| *name == input.connection)
            .map(|(_, b)| b.clone())
            .ok_or_else(|| {
                let names: Vec<&str> = ctx.env.sql.iter().map(|(n, _)| n.as_str()).collect();
                ctx.env.connection_error(&input.connection, "SQL", &names)
            })?;
        let limit = input.limit.unwrap_or(DEFAULT_LIMIT).min(MAX_LIMIT);
        let sql = checked_select(&input.query, backend.dialect(), limit)?;
        let rows = backend.query(&sql, STATEMENT_TIMEOUT_MS).await?;
        Ok(json!({ "row_count": rows.len(), "rows": rows, "limit": limit }))
    }
}

fn denied(message: impl Into<String>) -> ToolError {
    ToolError::policy_denied(message)
        .with_details(json!({ "reason": "SQL_NOT_READ_ONLY", "path": "/query" }))
}

/// Parses `query` and returns it wrapped with a row limit, or refuses it.
pub fn checked_select(query: &str, dialect: SqlDialect, limit: u64) -> Result<String, ToolError> {
    let d: Box<dyn Dialect> = match dialect {
        SqlDialect::Sqlite => Box::new(SQLiteDialect {}),
        SqlDialect::Postgres => Box::new(PostgreSqlDialect {}),
    };
    let statements = Parser::parse_sql(d.as_ref(), query).map_err(|e| {
        ToolError::validation(format!("the query does not parse: {e}"))
            .with_details(json!({ "path": "/query" }))
    })?;
    let [statement] = statements.as_slice() else {
        return Err(denied(format!(
            "exactly one statement is allowed, found {}",
            statements.len()
        )));
    };
    let Statement::Query(q) = statement else {
        return Err(denied("only a SELECT query is allowed"));
    };
    if !q.locks.is_empty() {
        return Err(denied("locking clauses (FOR UPDATE/SHARE) are not allowed"));
    }
    if q.with.as_ref().is_some_and(|w| {
        w.cte_tables.iter().any(|c| {
            !matches!(
                *c.query.body,
                SetExpr::Select(_)
                    | SetExpr::Query(_)
                    | SetExpr::SetOperation { .. }
                    | SetExpr::Values(_)
            )
        })
    }) {
        return Err(denied("data-modifying WITH clauses are not allowed"));
    }
    if !set_expr_is_read_only(&q.body) {
        return Err(denied(
            "only SELECT is allowed (no INSERT, UPDATE, DELETE or SELECT INTO)",
        ));
    }
    if let Some(name) = refused_function(statement) {
        return Err(ToolError::policy_denied(format!(
            "the function `{name}` is not allowed: it reaches past the query's tables (files, other servers, settings)"
        ))
        .with_details(json!({ "reason": "SQL_FUNCTION_REFUSED", "path": "/query", "function": name })));
    }
    // Re-render the parsed statement: what runs is what was checked.
    Ok(format!(
        "SELECT * FROM ({q}) AS glassbox_limited LIMIT {limit}"
    ))
}

/// Function names refused outright, and name prefixes of refused families.
const REFUSED_FUNCTIONS: &[&str] = &[
    "pg_read_file",
    "pg_read_binary_file",
    "pg_stat_file",
    "current_setting",
    "set_config",
    "query_to_xml",
    "query_to_xml_and_xmlschema",
    "query_to_xmlschema",
    "cursor_to_xml",
    "cursor_to_xmlschema",
    "pg_terminate_backend",
    "pg_cancel_backend",
    "pg_reload_conf",
    "pg_rotate_logfile",
    "pg_logdir_ls",
    "loread",
    "lowrite",
    "load_extension",
    "readfile",
    "writefile",
];
const REFUSED_PREFIXES: &[&str] = &["pg_ls_", "pg_file_", "lo_", "dblink"];

fn is_refused(name: &str) -> bool {
    let name = name.rsplit('.').next().unwrap_or(name).trim_matches('"');
    let name = name.to_ascii_lowercase();
    REFUSED_FUNCTIONS.contains(&name.as_str())
        || REFUSED_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The first refused function the statement calls, as a call or as a
/// table function.
fn refused_function(statement: &Statement) -> Option<String> {
    use sqlparser::ast::{visit_expressions, visit_relations, Expr};
    use std::ops::ControlFlow;
    let mut found = None;
    let _ = visit_expressions(statement, |e| {
        if let Expr::Function(f) = e {
            let name = f.name.to_string();
            if is_refused(&name) {
                found = Some(name);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    if found.is_none() {
        let _ = visit_relations(statement, |r| {
            let name = r.to_string();
            if is_refused(&name) {
                found = Some(name);
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        });
    }
    found
}

fn set_expr_is_read_only(body: &SetExpr) -> bool {
    match body {
        SetExpr::Select(s) => s.into.is_none(),
        SetExpr::Query(q) => q.locks.is_empty() && set_expr_is_read_only(&q.body),
        SetExpr::SetOperation { left, right, .. } => {
            set_expr_is_read_only(left) && set_expr_is_read_only(right)
        }
        SetExpr::Values(_) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn check(sql: &str, dialect: SqlDialect, ok: bool) {
        let got = checked_select(sql, dialect, 10);
        assert_eq!(got.is_ok(), ok, "{sql}: {got:?}");
        if let Ok(s) = got {
            assert!(s.ends_with("LIMIT 10"), "{s}");
        }
    }

    #[test]
    fn only_single_selects_pass() {
        use SqlDialect::*;
        for d in [Sqlite, Postgres] {
            check("SELECT 1", d, true);
            check("select a, b from t where a > 1 order by b", d, true);
            check("WITH x AS (SELECT 1 AS n) SELECT n FROM x", d, true);
            check("SELECT 1 UNION SELECT 2", d, true);
            check("SELECT 1; SELECT 2", d, false);
            check("DELETE FROM t", d, false);
            check("UPDATE t SET a = 1", d, false);
            check("INSERT INTO t VALUES (1)", d, false);
            check("DROP TABLE t", d, false);
            check("CREATE TABLE x (a int)", d, false);
            check("SELECT 1; DROP TABLE t", d, false);
            check("not sql at all", d, false);
        }
        check("PRAGMA writable_schema = 1", Sqlite, false);
        check("ATTACH DATABASE 'x.db' AS x", Sqlite, false);
        check("SELECT * INTO newtable FROM t", Postgres, false);
        check("SELECT * FROM t FOR UPDATE", Postgres, false);
        check(
            "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
            Postgres,
            false,
        );
    }

    #[test]
    fn functions_that_reach_past_the_tables_are_refused_anywhere() {
        use SqlDialect::*;
        for sql in [
            "select pg_read_file('/etc/passwd')",
            "SELECT PG_CATALOG.PG_READ_BINARY_FILE('/etc/passwd')",
            "select * from pg_ls_dir('.')",
            "select (select pg_stat_file('x'))",
            "select lo_import('/etc/passwd')",
            "select * from dblink('host=10.0.0.1', 'select 1') as t(a int)",
            "select current_setting('data_directory')",
            "select set_config('x', 'y', false)",
            "select query_to_xml('delete from t', true, true, '')",
            "with x as (select pg_read_file('f') as a) select a from x",
            "select 1 where exists (select pg_terminate_backend(1))",
        ] {
            let e = checked_select(sql, Postgres, 1).expect_err(sql);
            assert_eq!(e.code, ErrorCode::PolicyDenied, "{sql}");
            assert_eq!(e.details["reason"], "SQL_FUNCTION_REFUSED", "{sql}");
        }
        let e = checked_select("select load_extension('x')", Sqlite, 1).expect_err("refused");
        assert_eq!(e.details["reason"], "SQL_FUNCTION_REFUSED");
        check("select count(*), lower(name), now() from t", Postgres, true);
        check("select length(x) from lots", Sqlite, true);
    }

    #[test]
    fn refusals_are_policy_denied_and_parse_errors_validation() {
        let e = checked_select("DELETE FROM t", SqlDialect::Sqlite, 1).expect_err("refused");
        assert_eq!(e.code, ErrorCode::PolicyDenied);
        let e = checked_select("SELEC 1", SqlDialect::Sqlite, 1).expect_err("refused");
        assert_eq!(e.code, ErrorCode::ValidationError);
    }
}
