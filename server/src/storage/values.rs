//! Multi-row statements: the bound values a write carries ([`Arg`]), the
//! tables' column lists ([`Values`]), and [`execute_values`], which sends
//! many rows as few statements. Shared by the group writer and the
//! table modules' own batched writes.

use super::*;

/// A bound value of a multi-row statement.
pub(super) enum Arg {
    Text(Option<String>),
    Int(Option<i64>),
    Real(f64),
    Blob(Option<Vec<u8>>),
}

impl From<&str> for Arg {
    fn from(v: &str) -> Self {
        Arg::Text(Some(v.to_string()))
    }
}
impl From<&String> for Arg {
    fn from(v: &String) -> Self {
        Arg::Text(Some(v.clone()))
    }
}
impl From<String> for Arg {
    fn from(v: String) -> Self {
        Arg::Text(Some(v))
    }
}
impl From<Option<String>> for Arg {
    fn from(v: Option<String>) -> Self {
        Arg::Text(v)
    }
}
impl From<&Option<String>> for Arg {
    fn from(v: &Option<String>) -> Self {
        Arg::Text(v.clone())
    }
}
impl From<i64> for Arg {
    fn from(v: i64) -> Self {
        Arg::Int(Some(v))
    }
}
impl From<Option<i64>> for Arg {
    fn from(v: Option<i64>) -> Self {
        Arg::Int(v)
    }
}
impl From<f64> for Arg {
    fn from(v: f64) -> Self {
        Arg::Real(v)
    }
}

impl rusqlite::ToSql for Arg {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Arg::Text(Some(v)) => ValueRef::Text(v.as_bytes()),
            Arg::Int(Some(v)) => ValueRef::Integer(*v),
            Arg::Real(v) => ValueRef::Real(*v),
            Arg::Blob(Some(v)) => ValueRef::Blob(v),
            Arg::Text(None) | Arg::Int(None) | Arg::Blob(None) => ValueRef::Null,
        }))
    }
}

/// A `head VALUES (..) tail` statement (see [`execute_values`]). Every
/// run write, single (the `Store` methods) or grouped, uses these, so each
/// statement is written once.
pub(super) struct Values {
    pub head: &'static str,
    pub tail: &'static str,
}

impl Values {
    /// The statement for one row of `width` values (`?` placeholders).
    pub(super) fn single_row(&self, width: usize) -> String {
        let marks = vec!["?"; width].join(", ");
        format!("{} VALUES ({marks}) {}", self.head, self.tail)
    }
}

pub(super) const RUNS: Values = Values {
    head: "INSERT INTO runs (id, workspace_id, workflow_id, workflow_revision, kind, replay_of, status, trigger_kind, inputs, outputs, error, record, created_at, finished_at, trace_id, started_by)",
    tail: "",
};
/// A run's payloads (see `payloads`): a payload is stored once.
pub(super) const PAYLOADS: Values = Values {
    head: "INSERT INTO payloads (run_id, hash, codec, size, data, refs)",
    tail: "ON CONFLICT (run_id, hash) DO NOTHING",
};
/// Postgres: announces the runs whose events (or end) a batch stores, at
/// its commit (`NOTIFY` inside the transaction is delivered on commit), so
/// an event stream on another instance reads them at once (see
/// `runs::notices`).
pub(super) const EVENTS_NOTIFY: Values = Values {
    head: "WITH v(id) AS (",
    tail: ") SELECT pg_notify('glassbox_run_events', v.id) FROM v",
};
/// A started run: `queued` becomes `running`, nothing else changes.
pub(super) const RUN_STARTED: Values = Values {
    head: "WITH v(id) AS (",
    tail: ") UPDATE runs SET status = 'running' FROM v WHERE runs.id = v.id AND runs.status = 'queued'",
};
pub(super) const RUN_STATUS: Values = Values {
    head: "WITH v(id, status) AS (",
    tail: ") UPDATE runs SET status = v.status FROM v WHERE runs.id = v.id",
};
pub(super) const RUN_END: Values = Values {
    head: "WITH v(id, status, outputs, error, record, record_refs, finished_at) AS (",
    tail: ") UPDATE runs SET status = v.status, outputs = v.outputs, error = v.error, record = v.record, record_refs = v.record_refs, finished_at = v.finished_at FROM v WHERE runs.id = v.id",
};
pub(super) const EVENTS: Values = Values {
    head: "INSERT INTO run_events (run_id, seq, event, created_at, refs)",
    tail: "",
};
pub(super) const CLEAR_NODE_RUNS: Values = Values {
    head: "DELETE FROM node_runs WHERE run_id IN (",
    tail: ")",
};
pub(super) const NODE_RUNS: Values = Values {
    head:
        "INSERT INTO node_runs (run_id, node_id, status, error, outputs, started_at, finished_at, trace_id, outputs_refs)",
    tail: "",
};
pub(super) const BUNDLES: Values = Values {
    head: "INSERT INTO replay_bundles (run_id, node_id, bundle, refs)",
    tail:
        "ON CONFLICT (run_id, node_id) DO UPDATE SET bundle = excluded.bundle, refs = excluded.refs",
};
pub(super) const PINS: Values = Values {
    head: "INSERT INTO pin_history (workflow_id, node_id, pin, value, updated_at)",
    tail: "ON CONFLICT (workflow_id, node_id, pin) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
};
pub(super) const BLOBS: Values = Values {
    head: "INSERT INTO blobs (hash, workspace_id, content_type, bytes, created_at)",
    tail: "ON CONFLICT (hash, workspace_id) DO NOTHING",
};
/// A run that ended closes its pending approvals: nothing waits for them,
/// and a decision on one is refused.
pub(super) const CLOSE_APPROVALS: Values = Values {
    head: "UPDATE approvals SET status = 'closed', decided_by = 'glassbox', note = 'the run ended before a decision' WHERE status = 'pending' AND run_id IN (",
    tail: ")",
};
/// A run that ended needs no checkpoints: they only serve to resume it.
pub(super) const CLEAR_CHECKPOINTS: Values = Values {
    head: "DELETE FROM run_checkpoints WHERE run_id IN (",
    tail: ")",
};
pub(super) const CHECKPOINTS: Values = Values {
    head: "INSERT INTO run_checkpoints (run_id, node_id, kind, state, updated_at, refs)",
    tail: "ON CONFLICT (run_id, node_id, kind) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at, refs = excluded.refs",
};
pub(super) const SPANS: Values = Values {
    head: "INSERT INTO run_spans (run_id, span_id, parent_id, trace_id, name, started_at, duration_us, fields)",
    tail: "ON CONFLICT (run_id, span_id) DO NOTHING",
};
pub(super) const AUDIT: Values = Values {
    head:
        "INSERT INTO audit_events (id, workspace_id, actor_id, action, target, detail, created_at)",
    tail: "",
};
pub(super) const INVOCATIONS: Values = Values {
    head: INVOCATION_INSERT_HEAD,
    tail: INVOCATION_UPSERT_TAIL,
};

pub(super) fn run_args(r: &RunRow) -> Vec<Arg> {
    vec![
        (&r.id).into(),
        (&r.workspace_id).into(),
        (&r.workflow_id).into(),
        r.workflow_revision.into(),
        (&r.kind).into(),
        (&r.replay_of).into(),
        (&r.status).into(),
        (&r.trigger_kind).into(),
        (&r.inputs).into(),
        (&r.outputs).into(),
        (&r.error).into(),
        (&r.record).into(),
        (&r.created_at).into(),
        (&r.finished_at).into(),
        (&r.trace_id).into(),
        (&r.started_by).into(),
    ]
}

pub(super) fn node_run_args(run_id: &str, n: &NodeRunRow) -> Vec<Arg> {
    vec![
        run_id.into(),
        (&n.node_id).into(),
        (&n.status).into(),
        (&n.error).into(),
        (&n.outputs).into(),
        (&n.started_at).into(),
        (&n.finished_at).into(),
        (&n.trace_id).into(),
        (&n.outputs_refs).into(),
    ]
}

pub(super) fn payload_args(run_id: &str, p: &PayloadRow) -> Vec<Arg> {
    vec![
        run_id.into(),
        (&p.hash).into(),
        p.codec.into(),
        p.size.into(),
        Arg::Blob(Some(p.data.clone())),
        (&p.refs).into(),
    ]
}

pub(super) fn audit_args(e: &AuditEntry) -> Vec<Arg> {
    vec![
        (&e.id).into(),
        (&e.workspace_id).into(),
        (&e.actor_id).into(),
        (&e.action).into(),
        (&e.target).into(),
        (&e.detail).into(),
        (&e.created_at).into(),
    ]
}

pub(super) fn span_args(r: &SpanRow) -> Vec<Arg> {
    vec![
        (&r.run_id).into(),
        (&r.span_id).into(),
        (&r.parent_id).into(),
        (&r.trace_id).into(),
        (&r.name).into(),
        (&r.started_at).into(),
        r.duration_us.into(),
        (&r.fields).into(),
    ]
}

/// Bound parameters per statement, under both SQLite's and Postgres's limits.
pub(super) const MAX_PARAMS: usize = 8_000;

/// Bound parameters per SQLite script: its `$n` are numbered across all of
/// its statements, and SQLite allows `$1` to `$32766`.
pub(super) const MAX_SCRIPT_PARAMS: usize = 30_000;

/// One or more statements and their bound values: `$n` numbered from 1
/// across the whole script, or with `positional`, plain `?` in order (for
/// SQLite, where looking up a numbered parameter's name is a linear scan,
/// so binding thousands of `$n` takes quadratic time).
#[derive(Default)]
pub(super) struct Script {
    pub(super) sql: String,
    pub(super) args: Vec<Arg>,
    pub(super) positional: bool,
}

impl Script {
    /// Appends `head VALUES (..), (..) tail` over at most `max_rows` of
    /// `rows` (the rest stay in the iterator).
    pub(super) fn push(
        &mut self,
        statement: &Values,
        rows: &mut dyn Iterator<Item = Vec<Arg>>,
        max_rows: usize,
    ) {
        self.sql.push_str(statement.head);
        self.sql.push_str(" VALUES ");
        for (i, row) in rows.take(max_rows).enumerate() {
            if i > 0 {
                self.sql.push_str(", ");
            }
            self.sql.push('(');
            for (j, arg) in row.into_iter().enumerate() {
                if j > 0 {
                    self.sql.push_str(", ");
                }
                self.args.push(arg);
                if self.positional {
                    self.sql.push('?');
                } else {
                    self.sql.push('$');
                    self.sql.push_str(&self.args.len().to_string());
                }
            }
            self.sql.push(')');
        }
        self.sql.push(' ');
        self.sql.push_str(statement.tail);
        self.sql.push_str(";\n");
    }

    pub(super) async fn execute(self, conn: &mut AnyConnection) -> Result<(), StoreError> {
        // Each script is new text: not worth a slot in the statement cache.
        self.execute_prepared(conn, false).await
    }

    /// Executes the script; with `cache`, its prepared statements stay in
    /// the connection's statement cache under its text, so the same text
    /// later is only bound and run, not parsed again.
    pub(super) async fn execute_prepared(
        self,
        conn: &mut AnyConnection,
        cache: bool,
    ) -> Result<(), StoreError> {
        if self.sql.is_empty() {
            return Ok(());
        }
        let mut query = sqlx::query(&self.sql).persistent(cache);
        for arg in self.args {
            query = match arg {
                Arg::Text(v) => query.bind(v),
                Arg::Int(v) => query.bind(v),
                Arg::Real(v) => query.bind(v),
                Arg::Blob(v) => query.bind(v),
            };
        }
        query.execute(&mut *conn).await?;
        Ok(())
    }
}

/// Runs `head VALUES (..), (..) tail` over `rows`, in as few statements as
/// the parameter limit allows: multi-row inserts, `IN (VALUES ..)` and
/// `WITH v(..) AS (VALUES ..) UPDATE .. FROM v`, which SQLite and Postgres
/// both accept. Every row has the same width.
pub(super) async fn execute_values(
    conn: &mut AnyConnection,
    statement: &Values,
    rows: Vec<Vec<Arg>>,
) -> Result<(), StoreError> {
    let Some(width) = rows.first().map(Vec::len) else {
        return Ok(());
    };
    let per_statement = (MAX_PARAMS / width).max(1);
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let mut script = Script::default();
        script.push(statement, &mut rows, per_statement);
        script.execute(conn).await?;
    }
    Ok(())
}

pub(super) const INVOCATION_INSERT_HEAD: &str = "INSERT INTO tool_invocations (id, workspace_id, run_id, node_id, call_id, tool_name, tool_version, status, approval_required, approval_status, decided_by, reason, input, output, error, cost, created_at, started_at, completed_at, trace_id, input_refs, output_refs)";

/// Seed 001's lifecycle as an upsert: status, output, error, cost and
/// completion follow the newest record; approval fields keep the last value
/// given; the input and the first start time stay. A text's refs follow
/// the text (see `payloads`).
pub(super) const INVOCATION_UPSERT_TAIL: &str = "ON CONFLICT (id) DO UPDATE SET status = excluded.status, approval_status = COALESCE(excluded.approval_status, tool_invocations.approval_status), decided_by = COALESCE(excluded.decided_by, tool_invocations.decided_by), reason = COALESCE(excluded.reason, tool_invocations.reason), output = excluded.output, output_refs = excluded.output_refs, error = excluded.error, cost = excluded.cost, started_at = COALESCE(tool_invocations.started_at, excluded.started_at), completed_at = excluded.completed_at";

pub(super) fn invocation_args(i: &InvocationRow) -> Vec<Arg> {
    vec![
        (&i.id).into(),
        (&i.workspace_id).into(),
        (&i.run_id).into(),
        (&i.node_id).into(),
        (&i.call_id).into(),
        (&i.tool_name).into(),
        (&i.tool_version).into(),
        (&i.status).into(),
        i.approval_required.into(),
        (&i.approval_status).into(),
        (&i.decided_by).into(),
        (&i.reason).into(),
        (&i.input).into(),
        (&i.output).into(),
        (&i.error).into(),
        i.cost.into(),
        (&i.created_at).into(),
        (&i.started_at).into(),
        (&i.completed_at).into(),
        (&i.trace_id).into(),
        (&i.input_refs).into(),
        (&i.output_refs).into(),
    ]
}
