//! The records and their queries. Every tenant query takes the workspace.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::group::{
    execute_values, node_run_args, run_args, Arg, Values, BLOBS, BUNDLES, CHECKPOINTS,
    CLEAR_NODE_RUNS, EVENTS, INVOCATIONS, NODE_RUNS, PINS, RUNS, RUN_END,
};
use super::{Store, StoreError};
use node_runtime::graph::Workflow;

/// Record timestamps: RFC 3339 UTC with microseconds (text that sorts in
/// time order; the same width on every row).
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// A new id: UUID v7 (time-ordered), lowercase hex with dashes.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct WorkflowRow {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    pub revision: i64,
    pub document: String,
    pub created_at: String,
    pub updated_at: String,
}

impl WorkflowRow {
    pub fn workflow(&self) -> Result<Workflow, StoreError> {
        Workflow::from_json(&self.document)
            .map_err(|e| StoreError::Corrupt(format!("workflow {}: {e}", self.id)))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct RevisionRow {
    pub workflow_id: String,
    pub revision: i64,
    pub document: String,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct RunRow {
    pub id: String,
    pub workspace_id: String,
    pub workflow_id: Option<String>,
    pub workflow_revision: Option<i64>,
    /// `run` or `replay`.
    pub kind: String,
    pub replay_of: Option<String>,
    /// queued | running | waiting_for_approval | succeeded | failed | cancelled
    pub status: String,
    pub trigger_kind: String,
    pub inputs: String,
    pub outputs: Option<String>,
    pub error: Option<String>,
    pub record: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
    /// The run's trace (32 hex digits, the OTLP trace id).
    pub trace_id: Option<String>,
}

impl RunRow {
    /// A run just created: queued, triggered from the API with no inputs,
    /// of no workflow yet, nothing recorded (the caller sets the rest).
    pub fn queued(id: &str, workspace_id: &str) -> Self {
        RunRow {
            id: id.into(),
            workspace_id: workspace_id.into(),
            workflow_id: None,
            workflow_revision: None,
            kind: "run".into(),
            replay_of: None,
            status: "queued".into(),
            trigger_kind: "api".into(),
            inputs: "{}".into(),
            outputs: None,
            error: None,
            record: None,
            created_at: now(),
            finished_at: None,
            trace_id: None,
        }
    }
}

/// One node of a finished run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct NodeRunRow {
    pub run_id: String,
    pub node_id: String,
    pub status: String,
    pub error: Option<String>,
    pub outputs: String,
    pub started_at: String,
    pub finished_at: String,
    pub trace_id: Option<String>,
}

/// One closed `tracing` span of a run (see `crate::trace`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct SpanRow {
    pub run_id: String,
    pub span_id: String,
    pub parent_id: Option<String>,
    pub trace_id: String,
    pub name: String,
    pub started_at: String,
    pub duration_us: i64,
    /// JSON object.
    pub fields: String,
}

#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub workflow_id: Option<String>,
    pub status: Option<String>,
    pub limit: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct EventRow {
    pub run_id: String,
    pub seq: i64,
    pub event: String,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct ApprovalRow {
    pub token: String,
    pub workspace_id: String,
    pub run_id: String,
    pub node_id: String,
    pub call_id: String,
    pub tool: String,
    pub args_summary: String,
    pub effect_description: String,
    /// pending | approved | denied | revision_requested (the approval
    /// row's words; an invocation's `approval_status` is seed 001's
    /// pending | approved | rejected)
    pub status: String,
    pub decided_by: Option<String>,
    pub note: Option<String>,
    pub created_at: String,
    pub decided_at: Option<String>,
}

/// A long-lived API token as listed (the token itself is shown once, at
/// creation, and stored only as its hash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct ApiTokenRow {
    pub id: String,
    pub name: String,
    pub user_id: String,
    pub created_at: String,
    pub expires_at: Option<String>,
}

/// Seed 001's invocation record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct InvocationRow {
    pub id: String,
    pub workspace_id: String,
    pub run_id: String,
    pub node_id: String,
    pub call_id: String,
    pub tool_name: String,
    pub tool_version: String,
    /// pending | approved | rejected | running | completed | failed
    pub status: String,
    pub approval_required: i64,
    pub approval_status: Option<String>,
    pub decided_by: Option<String>,
    pub reason: Option<String>,
    pub input: String,
    pub output: Option<String>,
    pub error: Option<String>,
    pub cost: f64,
    pub created_at: String,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
    pub trace_id: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct InvocationFilter {
    pub status: Option<String>,
    pub tool: Option<String>,
    pub run_id: Option<String>,
    pub since: Option<String>,
    pub until: Option<String>,
    pub limit: i64,
}

/// The upsert of one invocation record (insert, or move it through its lifecycle).
/// The secrets a user (`$2`) sees in a workspace (`$1`) of an org (`$3`,
/// NULL for none).
const VISIBLE_SECRETS: &str = "((scope = 'user' AND owner_id = $2 AND workspace_id = $1) OR (scope = 'workspace' AND owner_id = $1) OR (scope = 'org' AND owner_id = $3))";

pub(super) const INVOCATION_INSERT_HEAD: &str = "INSERT INTO tool_invocations (id, workspace_id, run_id, node_id, call_id, tool_name, tool_version, status, approval_required, approval_status, decided_by, reason, input, output, error, cost, created_at, started_at, completed_at, trace_id)";

/// Seed 001's lifecycle as an upsert: status, output, error, cost and
/// completion follow the newest record; approval fields keep the last value
/// given; the input and the first start time stay.
pub(super) const INVOCATION_UPSERT_TAIL: &str = "ON CONFLICT (id) DO UPDATE SET status = excluded.status, approval_status = COALESCE(excluded.approval_status, tool_invocations.approval_status), decided_by = COALESCE(excluded.decided_by, tool_invocations.decided_by), reason = COALESCE(excluded.reason, tool_invocations.reason), output = excluded.output, error = excluded.error, cost = excluded.cost, started_at = COALESCE(tool_invocations.started_at, excluded.started_at), completed_at = excluded.completed_at";

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
    ]
}

type Q<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

fn limit(l: i64) -> i64 {
    if l <= 0 {
        100
    } else {
        l.min(1000)
    }
}

impl Store {
    // ---- tenancy -----------------------------------------------------------

    /// Inserts `(id, name, now)` into a table of named things unless the id
    /// exists (`table` is one of ours, never input).
    async fn ensure_named(
        &self,
        table: &'static str,
        id: &str,
        name: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(&format!(
            "INSERT INTO {table} (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING"
        ))
        .bind(id)
        .bind(name)
        .bind(now())
        .execute(self.writer())
        .await?;
        Ok(())
    }

    pub async fn ensure_workspace(&self, id: &str, name: &str) -> Result<(), StoreError> {
        self.ensure_named("workspaces", id, name).await
    }

    pub async fn ensure_org(&self, id: &str, name: &str) -> Result<(), StoreError> {
        self.ensure_named("orgs", id, name).await
    }

    /// Puts a workspace in an organization (or takes it out with `None`).
    pub async fn set_workspace_org(
        &self,
        workspace_id: &str,
        org_id: Option<&str>,
    ) -> Result<(), StoreError> {
        let n = sqlx::query("UPDATE workspaces SET org_id = $1 WHERE id = $2")
            .bind(org_id)
            .bind(workspace_id)
            .execute(self.writer())
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("workspace {workspace_id}")));
        }
        Ok(())
    }

    /// The organization a workspace belongs to, if any.
    pub async fn workspace_org(&self, workspace_id: &str) -> Result<Option<String>, StoreError> {
        let org: Option<Option<String>> =
            sqlx::query_scalar("SELECT org_id FROM workspaces WHERE id = $1")
                .bind(workspace_id)
                .fetch_optional(self.pool())
                .await?;
        Ok(org.flatten())
    }

    pub async fn ensure_user(&self, id: &str, name: &str) -> Result<(), StoreError> {
        self.ensure_named("users", id, name).await
    }

    pub async fn add_membership(
        &self,
        workspace_id: &str,
        user_id: &str,
        role: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO memberships (workspace_id, user_id, role) VALUES ($1, $2, $3) ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = $3")
            .bind(workspace_id)
            .bind(user_id)
            .bind(role)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// (workspace id, role) for each membership of a user.
    /// `(workspace, role, the workspace's org)` for each membership.
    pub async fn memberships(
        &self,
        user_id: &str,
    ) -> Result<Vec<(String, String, Option<String>)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT m.workspace_id, m.role, w.org_id FROM memberships m JOIN workspaces w ON w.id = m.workspace_id WHERE m.user_id = $1 ORDER BY m.workspace_id",
        )
        .bind(user_id)
        .fetch_all(self.pool())
        .await?)
    }

    /// Stores a token by its hash (the token itself is never stored).
    pub async fn insert_token(
        &self,
        token_hash: &str,
        user_id: &str,
        kind: &str,
        expires_at: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO api_tokens (token_hash, user_id, kind, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)")
            .bind(token_hash)
            .bind(user_id)
            .bind(kind)
            .bind(now())
            .bind(expires_at)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// The user of a valid token of `kind`. A `signin` token is single-use:
    /// taking it marks it used in the same statement.
    pub async fn token_user(
        &self,
        token_hash: &str,
        kind: &str,
    ) -> Result<Option<String>, StoreError> {
        let now = now();
        if kind == "signin" {
            let user: Option<String> = sqlx::query_scalar(
                "UPDATE api_tokens SET used_at = $1 WHERE token_hash = $2 AND kind = 'signin' AND used_at IS NULL AND (expires_at IS NULL OR expires_at > $1) RETURNING user_id",
            )
            .bind(&now)
            .bind(token_hash)
            .fetch_optional(self.writer())
            .await?;
            return Ok(user);
        }
        Ok(sqlx::query_scalar("SELECT user_id FROM api_tokens WHERE token_hash = $1 AND kind = $2 AND (expires_at IS NULL OR expires_at > $3)")
            .bind(token_hash)
            .bind(kind)
            .bind(&now)
            .fetch_optional(self.pool())
            .await?)
    }

    /// The user of a valid session or API token with their memberships
    /// `(workspace_id, role, org_id)`, in one query: this runs before every
    /// API request. A user with no membership comes with an empty list.
    pub async fn token_caller(
        &self,
        token_hash: &str,
    ) -> Result<Option<(String, Vec<(String, String, Option<String>)>)>, StoreError> {
        type Row = (String, Option<String>, Option<String>, Option<String>);
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT t.user_id, m.workspace_id, m.role, w.org_id FROM api_tokens t \
             LEFT JOIN memberships m ON m.user_id = t.user_id \
             LEFT JOIN workspaces w ON w.id = m.workspace_id \
             WHERE t.token_hash = $1 AND t.kind IN ('session', 'api') \
             AND (t.expires_at IS NULL OR t.expires_at > $2) ORDER BY m.workspace_id",
        )
        .bind(token_hash)
        .bind(now())
        .fetch_all(self.pool())
        .await?;
        let Some(user) = rows.first().map(|r| r.0.clone()) else {
            return Ok(None);
        };
        let memberships = rows
            .into_iter()
            .filter_map(|(_, ws, role, org)| Some((ws?, role?, org)))
            .collect();
        Ok(Some((user, memberships)))
    }

    /// Stores a named, long-lived API token (by hash) for a user.
    pub async fn insert_api_token(
        &self,
        t: &ApiTokenRow,
        token_hash: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO api_tokens (token_hash, user_id, kind, created_at, expires_at, id, name) VALUES ($1, $2, 'api', $3, $4, $5, $6)")
            .bind(token_hash)
            .bind(&t.user_id)
            .bind(&t.created_at)
            .bind(&t.expires_at)
            .bind(&t.id)
            .bind(&t.name)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// A user's API tokens (never their hashes), newest first.
    pub async fn list_api_tokens(&self, user_id: &str) -> Result<Vec<ApiTokenRow>, StoreError> {
        Ok(sqlx::query_as("SELECT id, name, user_id, created_at, expires_at FROM api_tokens WHERE user_id = $1 AND kind = 'api' ORDER BY created_at DESC, id")
            .bind(user_id)
            .fetch_all(self.pool())
            .await?)
    }

    /// Revokes one of the user's API tokens.
    pub async fn delete_api_token(&self, user_id: &str, id: &str) -> Result<(), StoreError> {
        let done =
            sqlx::query("DELETE FROM api_tokens WHERE user_id = $1 AND id = $2 AND kind = 'api'")
                .bind(user_id)
                .bind(id)
                .execute(self.writer())
                .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("token {id}")));
        }
        Ok(())
    }

    // ---- workflows ---------------------------------------------------------

    /// Creates a workflow at revision 1 (the document's revision is set).
    pub async fn create_workflow(
        &self,
        workspace_id: &str,
        workflow: &Workflow,
    ) -> Result<WorkflowRow, StoreError> {
        let mut wf = workflow.clone();
        wf.revision = 1;
        let document = wf.to_json();
        let t = now();
        let mut tx = self.writer().begin().await?;
        sqlx::query("INSERT INTO workflows (id, workspace_id, name, revision, document, created_at, updated_at) VALUES ($1, $2, $3, 1, $4, $5, $5)")
            .bind(&wf.id)
            .bind(workspace_id)
            .bind(&wf.name)
            .bind(&document)
            .bind(&t)
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO workflow_revisions (workflow_id, revision, document, created_at) VALUES ($1, 1, $2, $3)")
            .bind(&wf.id)
            .bind(&document)
            .bind(&t)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.get_workflow(workspace_id, &wf.id).await
    }

    pub async fn list_workflows(&self, workspace_id: &str) -> Result<Vec<WorkflowRow>, StoreError> {
        Ok(sqlx::query_as("SELECT id, workspace_id, name, revision, document, created_at, updated_at FROM workflows WHERE workspace_id = $1 ORDER BY updated_at DESC, id")
            .bind(workspace_id)
            .fetch_all(self.pool())
            .await?)
    }

    pub async fn get_workflow(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<WorkflowRow, StoreError> {
        sqlx::query_as("SELECT id, workspace_id, name, revision, document, created_at, updated_at FROM workflows WHERE workspace_id = $1 AND id = $2")
            .bind(workspace_id)
            .bind(id)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("workflow {id}")))
    }

    /// Saves a new revision if `base_revision` is the stored one; a stale
    /// base is refused (nothing is overwritten).
    pub async fn update_workflow(
        &self,
        workspace_id: &str,
        id: &str,
        base_revision: i64,
        workflow: &Workflow,
    ) -> Result<WorkflowRow, StoreError> {
        let current = self.get_workflow(workspace_id, id).await?;
        if current.revision != base_revision {
            return Err(StoreError::Conflict {
                expected: base_revision,
                actual: current.revision,
            });
        }
        let next = base_revision + 1;
        let mut wf = workflow.clone();
        wf.id = id.to_string();
        wf.revision = next as u64;
        let document = wf.to_json();
        let t = now();
        let mut tx = self.writer().begin().await?;
        let updated = sqlx::query("UPDATE workflows SET name = $1, revision = $2, document = $3, updated_at = $4 WHERE workspace_id = $5 AND id = $6 AND revision = $7")
            .bind(&wf.name)
            .bind(next)
            .bind(&document)
            .bind(&t)
            .bind(workspace_id)
            .bind(id)
            .bind(base_revision)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if updated != 1 {
            // Someone saved in between: refuse rather than overwrite.
            tx.rollback().await?;
            let actual = self.get_workflow(workspace_id, id).await?.revision;
            return Err(StoreError::Conflict {
                expected: base_revision,
                actual,
            });
        }
        sqlx::query("INSERT INTO workflow_revisions (workflow_id, revision, document, created_at) VALUES ($1, $2, $3, $4)")
            .bind(id)
            .bind(next)
            .bind(&document)
            .bind(&t)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.get_workflow(workspace_id, id).await
    }

    pub async fn delete_workflow(&self, workspace_id: &str, id: &str) -> Result<(), StoreError> {
        let n = sqlx::query("DELETE FROM workflows WHERE workspace_id = $1 AND id = $2")
            .bind(workspace_id)
            .bind(id)
            .execute(self.writer())
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("workflow {id}")));
        }
        Ok(())
    }

    pub async fn list_revisions(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Vec<RevisionRow>, StoreError> {
        self.get_workflow(workspace_id, id).await?;
        Ok(sqlx::query_as("SELECT workflow_id, revision, document, created_at FROM workflow_revisions WHERE workflow_id = $1 ORDER BY revision DESC")
            .bind(id)
            .fetch_all(self.pool())
            .await?)
    }

    // ---- runs and events ---------------------------------------------------

    pub async fn create_run(&self, run: &RunRow) -> Result<(), StoreError> {
        self.write_values(&RUNS, vec![run_args(run)]).await
    }

    pub async fn finish_run(
        &self,
        run_id: &str,
        status: &str,
        outputs: Option<&Value>,
        error: Option<&str>,
        record: Option<&Value>,
    ) -> Result<(), StoreError> {
        let row = vec![
            run_id.into(),
            status.into(),
            outputs.map(Value::to_string).into(),
            error.map(str::to_string).into(),
            record.map(Value::to_string).into(),
            now().into(),
        ];
        self.write_values(&RUN_END, vec![row]).await
    }

    pub async fn get_run(&self, workspace_id: &str, id: &str) -> Result<RunRow, StoreError> {
        sqlx::query_as("SELECT * FROM runs WHERE workspace_id = $1 AND id = $2")
            .bind(workspace_id)
            .bind(id)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("run {id}")))
    }

    pub async fn list_runs(
        &self,
        workspace_id: &str,
        filter: &RunFilter,
    ) -> Result<Vec<RunRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT * FROM runs WHERE workspace_id = $1 AND ($2 IS NULL OR workflow_id = $2) AND ($3 IS NULL OR status = $3) ORDER BY created_at DESC, id DESC LIMIT $4",
        )
        .bind(workspace_id)
        .bind(&filter.workflow_id)
        .bind(&filter.status)
        .bind(limit(filter.limit))
        .fetch_all(self.pool())
        .await?)
    }

    pub async fn append_event(
        &self,
        run_id: &str,
        seq: i64,
        event: &Value,
    ) -> Result<(), StoreError> {
        let row = vec![
            run_id.into(),
            seq.into(),
            event.to_string().into(),
            now().into(),
        ];
        self.write_values(&EVENTS, vec![row]).await
    }

    /// Stores the per-node rows of a finished run (replacing any).
    pub async fn put_node_runs(
        &self,
        run_id: &str,
        nodes: &[NodeRunRow],
    ) -> Result<(), StoreError> {
        let mut tx = self.writer().begin().await?;
        execute_values(&mut tx, &CLEAR_NODE_RUNS, vec![vec![run_id.into()]]).await?;
        let rows = nodes.iter().map(|n| node_run_args(run_id, n)).collect();
        execute_values(&mut tx, &NODE_RUNS, rows).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The nodes of a run (the run must be the caller's).
    pub async fn node_runs(
        &self,
        workspace_id: &str,
        run_id: &str,
    ) -> Result<Vec<NodeRunRow>, StoreError> {
        self.get_run(workspace_id, run_id).await?;
        Ok(sqlx::query_as("SELECT run_id, node_id, status, error, outputs, started_at, finished_at, trace_id FROM node_runs WHERE run_id = $1 ORDER BY started_at, node_id")
            .bind(run_id)
            .fetch_all(self.pool())
            .await?)
    }

    /// The stored spans of a run in start order (the run must be the caller's).
    pub async fn spans(
        &self,
        workspace_id: &str,
        run_id: &str,
    ) -> Result<Vec<SpanRow>, StoreError> {
        self.get_run(workspace_id, run_id).await?;
        Ok(sqlx::query_as("SELECT run_id, span_id, parent_id, trace_id, name, started_at, duration_us, fields FROM run_spans WHERE run_id = $1 ORDER BY started_at, span_id")
            .bind(run_id)
            .fetch_all(self.pool())
            .await?)
    }

    /// Events of a run with `seq > after`, in order (the run must be the caller's).
    pub async fn events_after(
        &self,
        workspace_id: &str,
        run_id: &str,
        after: i64,
    ) -> Result<Vec<EventRow>, StoreError> {
        self.get_run(workspace_id, run_id).await?;
        Ok(sqlx::query_as("SELECT run_id, seq, event, created_at FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq")
            .bind(run_id)
            .bind(after)
            .fetch_all(self.pool())
            .await?)
    }

    // ---- approvals ---------------------------------------------------------

    pub async fn insert_approval(&self, a: &ApprovalRow) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO approvals (token, workspace_id, run_id, node_id, call_id, tool, args_summary, effect_description, status, decided_by, note, created_at, decided_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (token) DO NOTHING")
            .bind(&a.token)
            .bind(&a.workspace_id)
            .bind(&a.run_id)
            .bind(&a.node_id)
            .bind(&a.call_id)
            .bind(&a.tool)
            .bind(&a.args_summary)
            .bind(&a.effect_description)
            .bind(&a.status)
            .bind(&a.decided_by)
            .bind(&a.note)
            .bind(&a.created_at)
            .bind(&a.decided_at)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    pub async fn pending_approvals(
        &self,
        workspace_id: &str,
    ) -> Result<Vec<ApprovalRow>, StoreError> {
        Ok(sqlx::query_as("SELECT * FROM approvals WHERE workspace_id = $1 AND status = 'pending' ORDER BY created_at")
            .bind(workspace_id)
            .fetch_all(self.pool())
            .await?)
    }

    pub async fn get_approval(
        &self,
        workspace_id: &str,
        token: &str,
    ) -> Result<ApprovalRow, StoreError> {
        sqlx::query_as("SELECT * FROM approvals WHERE workspace_id = $1 AND token = $2")
            .bind(workspace_id)
            .bind(token)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound("approval".into()))
    }

    /// Records a decision on a pending approval; a decided one is refused
    /// (`Conflict`), so a token decides once.
    pub async fn decide_approval(
        &self,
        workspace_id: &str,
        token: &str,
        status: &str,
        decided_by: &str,
        note: Option<&str>,
    ) -> Result<ApprovalRow, StoreError> {
        let n = sqlx::query("UPDATE approvals SET status = $1, decided_by = $2, note = $3, decided_at = $4 WHERE workspace_id = $5 AND token = $6 AND status = 'pending'")
            .bind(status)
            .bind(decided_by)
            .bind(note)
            .bind(now())
            .bind(workspace_id)
            .bind(token)
            .execute(self.writer())
            .await?
            .rows_affected();
        let row = self.get_approval(workspace_id, token).await?;
        if n == 0 {
            return Err(StoreError::Conflict {
                expected: 0,
                actual: 1,
            });
        }
        // The call's invocation record names who decided (the decision
        // event that follows carries no user and keeps it).
        sqlx::query("UPDATE tool_invocations SET decided_by = $1 WHERE workspace_id = $2 AND run_id = $3 AND node_id = $4 AND call_id = $5")
            .bind(decided_by)
            .bind(workspace_id)
            .bind(&row.run_id)
            .bind(&row.node_id)
            .bind(&row.call_id)
            .execute(self.writer())
            .await?;
        Ok(row)
    }

    // ---- invocations -------------------------------------------------------

    pub async fn upsert_invocation(&self, i: &InvocationRow) -> Result<(), StoreError> {
        self.write_values(&INVOCATIONS, vec![invocation_args(i)])
            .await
    }

    pub async fn list_invocations(
        &self,
        workspace_id: &str,
        f: &InvocationFilter,
    ) -> Result<Vec<InvocationRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT * FROM tool_invocations WHERE workspace_id = $1 AND ($2 IS NULL OR status = $2) AND ($3 IS NULL OR tool_name = $3) AND ($4 IS NULL OR run_id = $4) AND ($5 IS NULL OR created_at >= $5) AND ($6 IS NULL OR created_at <= $6) ORDER BY created_at DESC, id DESC LIMIT $7",
        )
        .bind(workspace_id)
        .bind(&f.status)
        .bind(&f.tool)
        .bind(&f.run_id)
        .bind(&f.since)
        .bind(&f.until)
        .bind(limit(f.limit))
        .fetch_all(self.pool())
        .await?)
    }

    // ---- secrets (names and scopes; values are encrypted, issue 7) ---------

    /// Records that a secret exists in a scope (`user`, `workspace`, `org`).
    pub async fn put_secret_entry(
        &self,
        workspace_id: &str,
        scope: &str,
        owner_id: &str,
        name: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO secret_entries (workspace_id, scope, owner_id, name, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (scope, owner_id, name) DO NOTHING")
            .bind(workspace_id)
            .bind(scope)
            .bind(owner_id)
            .bind(name)
            .bind(now())
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// Stores (or replaces) an encrypted secret value.
    pub async fn put_secret(
        &self,
        workspace_id: &str,
        scope: &str,
        owner_id: &str,
        name: &str,
        ciphertext: &[u8],
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO secret_entries (workspace_id, scope, owner_id, name, ciphertext, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (scope, owner_id, name) DO UPDATE SET ciphertext = $5, created_at = $6")
            .bind(workspace_id)
            .bind(scope)
            .bind(owner_id)
            .bind(name)
            .bind(ciphertext.to_vec())
            .bind(now())
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// Deletes one secret. An org secret is the org's, whichever of its
    /// workspaces set it; the others belong to this workspace.
    pub async fn delete_secret(
        &self,
        workspace_id: &str,
        scope: &str,
        owner_id: &str,
        name: &str,
    ) -> Result<(), StoreError> {
        let n = sqlx::query("DELETE FROM secret_entries WHERE (scope = 'org' OR workspace_id = $1) AND scope = $2 AND owner_id = $3 AND name = $4")
            .bind(workspace_id)
            .bind(scope)
            .bind(owner_id)
            .bind(name)
            .execute(self.writer())
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("secret {name}")));
        }
        Ok(())
    }

    /// Names and scopes visible to a user in a workspace: their own user
    /// secrets, the workspace's, and those of the workspace's org. Never values.
    pub async fn list_secrets(
        &self,
        workspace_id: &str,
        user_id: &str,
        org_id: Option<&str>,
    ) -> Result<Vec<(String, String, String)>, StoreError> {
        Ok(sqlx::query_as(&format!(
            "SELECT name, scope, created_at FROM secret_entries WHERE {VISIBLE_SECRETS} ORDER BY name, scope"
        ))
        .bind(workspace_id)
        .bind(user_id)
        .bind(org_id)
        .fetch_all(self.pool())
        .await?)
    }

    /// The stored ciphertext of one secret slot.
    pub async fn secret_ciphertext(
        &self,
        workspace_id: &str,
        scope: &str,
        owner_id: &str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let row: Option<Option<Vec<u8>>> = sqlx::query_scalar("SELECT ciphertext FROM secret_entries WHERE (scope = 'org' OR workspace_id = $1) AND scope = $2 AND owner_id = $3 AND name = $4")
            .bind(workspace_id)
            .bind(scope)
            .bind(owner_id)
            .bind(name)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.flatten())
    }

    /// The scope a secret resolves from for this user in this workspace,
    /// in the order user -> workspace -> org.
    pub async fn secret_scope(
        &self,
        workspace_id: &str,
        user_id: &str,
        org_id: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, StoreError> {
        let scopes: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT scope FROM secret_entries WHERE {VISIBLE_SECRETS} AND name = $4"
        ))
        .bind(workspace_id)
        .bind(user_id)
        .bind(org_id)
        .bind(name)
        .fetch_all(self.pool())
        .await?;
        Ok(["user", "workspace", "org"]
            .iter()
            .find(|s| scopes.iter().any(|x| x == *s))
            .map(|s| s.to_string()))
    }

    // ---- blobs (metadata; the bytes live in the blob store) ----------------

    /// Records that a workspace owns a blob (idempotent).
    pub async fn put_blob(
        &self,
        workspace_id: &str,
        hash: &str,
        content_type: &str,
        bytes: i64,
    ) -> Result<(), StoreError> {
        let row = vec![
            hash.into(),
            workspace_id.into(),
            content_type.into(),
            bytes.into(),
            now().into(),
        ];
        self.write_values(&BLOBS, vec![row]).await
    }

    /// The content type of a blob the workspace owns.
    pub async fn blob_content_type(
        &self,
        workspace_id: &str,
        hash: &str,
    ) -> Result<String, StoreError> {
        sqlx::query_scalar("SELECT content_type FROM blobs WHERE workspace_id = $1 AND hash = $2")
            .bind(workspace_id)
            .bind(hash)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound("blob".into()))
    }

    // ---- bundles and pins --------------------------------------------------

    pub async fn put_bundle(
        &self,
        run_id: &str,
        node_id: &str,
        bundle: &str,
    ) -> Result<(), StoreError> {
        let row = vec![run_id.into(), node_id.into(), bundle.into()];
        self.write_values(&BUNDLES, vec![row]).await
    }

    /// A finished run's record as served, downloaded and replayed: the
    /// stored record with each agent node's replay bundle put back from
    /// `replay_bundles`. A run's end stores the record without its bundles,
    /// so each bundle is stored once; records from before that carry them
    /// inline and are returned as they are. None while the run has no
    /// record (it has not finished).
    pub async fn run_record(&self, run: &RunRow) -> Result<Option<Value>, StoreError> {
        let Some(mut record) = run
            .record
            .as_deref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
        else {
            return Ok(None);
        };
        let Some(nodes) = record.get_mut("nodes").and_then(Value::as_object_mut) else {
            return Ok(Some(record));
        };
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT node_id, bundle FROM replay_bundles WHERE run_id = $1")
                .bind(&run.id)
                .fetch_all(self.pool())
                .await?;
        for (node_id, text) in rows {
            let Some(node) = nodes.get_mut(&node_id).and_then(Value::as_object_mut) else {
                continue;
            };
            if node.get("bundle").is_none_or(Value::is_null) {
                let bundle = serde_json::from_str(&text).map_err(|e| {
                    StoreError::Corrupt(format!("the bundle of run {} node {node_id}: {e}", run.id))
                })?;
                node.insert("bundle".into(), bundle);
            }
        }
        Ok(Some(record))
    }

    pub async fn get_bundle(
        &self,
        workspace_id: &str,
        run_id: &str,
        node_id: &str,
    ) -> Result<String, StoreError> {
        self.get_run(workspace_id, run_id).await?;
        sqlx::query_scalar("SELECT bundle FROM replay_bundles WHERE run_id = $1 AND node_id = $2")
            .bind(run_id)
            .bind(node_id)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("bundle of node {node_id}")))
    }

    pub async fn pin_value(
        &self,
        workflow_id: &str,
        node_id: &str,
        pin: &str,
    ) -> Result<Option<Value>, StoreError> {
        let text: Option<String> = sqlx::query_scalar(
            "SELECT value FROM pin_history WHERE workflow_id = $1 AND node_id = $2 AND pin = $3",
        )
        .bind(workflow_id)
        .bind(node_id)
        .bind(pin)
        .fetch_optional(self.pool())
        .await?;
        text.map(|t| serde_json::from_str(&t).map_err(|e| StoreError::Corrupt(e.to_string())))
            .transpose()
    }

    pub async fn set_pin_value(
        &self,
        workflow_id: &str,
        node_id: &str,
        pin: &str,
        value: &Value,
    ) -> Result<(), StoreError> {
        let row = vec![
            workflow_id.into(),
            node_id.into(),
            pin.into(),
            value.to_string().into(),
            now().into(),
        ];
        self.write_values(&PINS, vec![row]).await
    }

    /// One statement of [`super::group`]'s set, on the writer.
    async fn write_values(
        &self,
        statement: &Values,
        rows: Vec<Vec<Arg>>,
    ) -> Result<(), StoreError> {
        let mut conn = self.writer().acquire().await?;
        execute_values(&mut conn, statement, rows).await
    }

    // ---- durable runs ------------------------------------------------------

    /// Runs a write at the strongest durability the backend has: on SQLite
    /// `synchronous=FULL` (the WAL is synced at commit) for this statement;
    /// Postgres commits synchronously by default (`synchronous_commit=on`),
    /// which this asserts for the transaction.
    async fn durable(&self, query: Q<'_>) -> Result<u64, StoreError> {
        let mut conn = self.writer().acquire().await?;
        let sqlite = self.backend() == "sqlite";
        if sqlite {
            sqlx::query("PRAGMA synchronous = FULL")
                .execute(&mut *conn)
                .await?;
            let done = query.execute(&mut *conn).await;
            sqlx::query("PRAGMA synchronous = NORMAL")
                .execute(&mut *conn)
                .await?;
            Ok(done?.rows_affected())
        } else {
            let mut tx = sqlx::Connection::begin(&mut *conn).await?;
            sqlx::query("SET LOCAL synchronous_commit = on")
                .execute(&mut *tx)
                .await?;
            let done = query.execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(done.rows_affected())
        }
    }

    /// Stores a suspended agent's state, synced like the write journal: it
    /// waits for a human, possibly for days. (Ended nodes' records go
    /// through the group writer, `RunWrite::NodeCheckpoint`.)
    pub async fn put_agent_checkpoint(
        &self,
        run_id: &str,
        node_id: &str,
        state: &str,
    ) -> Result<(), StoreError> {
        let sql = format!(
            "{} VALUES ($1, $2, 'agent', $3, $4) {}",
            CHECKPOINTS.head, CHECKPOINTS.tail
        );
        self.durable(
            sqlx::query(&sql)
                .bind(run_id)
                .bind(node_id)
                .bind(state)
                .bind(now()),
        )
        .await?;
        Ok(())
    }

    /// A run's checkpoints: `(node_id, kind, state)`.
    pub async fn checkpoints(
        &self,
        run_id: &str,
    ) -> Result<Vec<(String, String, String)>, StoreError> {
        Ok(sqlx::query_as("SELECT node_id, kind, state FROM run_checkpoints WHERE run_id = $1 ORDER BY node_id, kind")
            .bind(run_id)
            .fetch_all(self.pool())
            .await?)
    }

    /// Runs that were queued, running or waiting when the server stopped.
    pub async fn interrupted_runs(&self) -> Result<Vec<RunRow>, StoreError> {
        Ok(sqlx::query_as("SELECT * FROM runs WHERE kind = 'run' AND finished_at IS NULL AND status IN ('queued', 'running', 'waiting_for_approval') ORDER BY created_at, id")
            .fetch_all(self.pool())
            .await?)
    }

    /// The last stored event number of a run (0 when none).
    pub async fn last_event_seq(&self, run_id: &str) -> Result<i64, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run_id = $1")
                .bind(run_id)
                .fetch_one(self.pool())
                .await?,
        )
    }

    /// One stored revision of a workflow.
    pub async fn revision(
        &self,
        workflow_id: &str,
        revision: i64,
    ) -> Result<RevisionRow, StoreError> {
        sqlx::query_as("SELECT workflow_id, revision, document, created_at FROM workflow_revisions WHERE workflow_id = $1 AND revision = $2")
            .bind(workflow_id)
            .bind(revision)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("revision {revision} of workflow {workflow_id}")))
    }

    /// The journal entry of an approved write: `None` when it is new (the
    /// intent is then recorded, durably, before this returns), else
    /// `Some(envelope)` with the recorded result, `Some(None)` for an
    /// intent without a result.
    pub async fn journal_begin(
        &self,
        agent_run: &str,
        call_id: &str,
        run_id: &str,
        tool: &str,
    ) -> Result<Option<Option<String>>, StoreError> {
        let inserted = self
            .durable(
                sqlx::query("INSERT INTO write_journal (agent_run, call_id, run_id, tool, intent_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (agent_run, call_id) DO NOTHING")
                    .bind(agent_run)
                    .bind(call_id)
                    .bind(run_id)
                    .bind(tool)
                    .bind(now()),
            )
            .await?;
        if inserted == 1 {
            return Ok(None);
        }
        let envelope: Option<String> = sqlx::query_scalar(
            "SELECT envelope FROM write_journal WHERE agent_run = $1 AND call_id = $2",
        )
        .bind(agent_run)
        .bind(call_id)
        .fetch_one(self.writer())
        .await?;
        Ok(Some(envelope))
    }

    /// Records an approved write's result, durably.
    pub async fn journal_finish(
        &self,
        agent_run: &str,
        call_id: &str,
        envelope: &str,
    ) -> Result<(), StoreError> {
        self.durable(
            sqlx::query("UPDATE write_journal SET envelope = $1, result_at = $2 WHERE agent_run = $3 AND call_id = $4")
                .bind(envelope)
                .bind(now())
                .bind(agent_run)
                .bind(call_id),
        )
        .await?;
        Ok(())
    }
}
