//! Workflows: create, list, get, update (a new revision; a stale base is
//! refused with 409), delete, revisions, validate.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use node_runtime::graph::validate::validate;
use node_runtime::graph::{Workflow, WorkflowError};
use node_runtime::tool_spec::ToolSpec;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::Caller;
use crate::error::ApiJson;
use crate::storage::{new_id, WorkflowRow};
use crate::{ApiError, AppState};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(validate_unsaved))
        .routes(routes!(get_one, update, remove))
        .routes(routes!(revisions))
        .routes(routes!(validate_saved))
}

/// A workflow document from a request body, or a 422 naming the path.
fn parse(value: &Value) -> Result<Workflow, ApiError> {
    Workflow::from_value(value).map_err(|e| match e {
        WorkflowError::Invalid { path, message } => ApiError::unprocessable(
            format!("invalid workflow at `{path}`: {message}"),
            json!({"path": path}),
        ),
        other => ApiError::unprocessable(other.to_string(), json!({"path": "format_version"})),
    })
}

fn view(row: &WorkflowRow) -> Result<Value, ApiError> {
    let document: Value =
        serde_json::from_str(&row.document).map_err(|e| ApiError::Internal(e.into()))?;
    Ok(json!({
        "id": row.id, "name": row.name, "revision": row.revision,
        "created_at": row.created_at, "updated_at": row.updated_at, "workflow": document
    }))
}

fn catalog(state: &AppState) -> Vec<ToolSpec> {
    state
        .runs()
        .registry()
        .all()
        .map(|t| t.spec.clone())
        .collect()
}

#[utoipa::path(post, path = "/workflows", tag = "workflows", responses((status = 201, description = "created"), (status = 422, description = "invalid document, path named")))]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<Value>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let mut wf = parse(&body)?;
    if wf.name.trim().is_empty() {
        return Err(ApiError::unprocessable(
            "a workflow needs a name",
            json!({"path": "name"}),
        ));
    }
    // Ids are the server's: an imported document never collides or probes.
    wf.id = new_id();
    let row = state
        .db()
        .create_workflow(&caller.workspace_id, &wf)
        .await?;
    let diagnostics = validate(&wf, &catalog(&state));
    let mut v = view(&row)?;
    v["diagnostics"] = json!(diagnostics);
    Ok((StatusCode::CREATED, Json(v)))
}

#[utoipa::path(get, path = "/workflows", tag = "workflows", responses((status = 200, description = "workflows of the workspace")))]
async fn list(State(state): State<AppState>, caller: Caller) -> Result<Json<Value>, ApiError> {
    let rows = state.db().list_workflows(&caller.workspace_id).await?;
    let items: Vec<Value> = rows
        .iter()
        .map(|r| json!({"id": r.id, "name": r.name, "revision": r.revision, "updated_at": r.updated_at}))
        .collect();
    Ok(Json(json!({"workflows": items})))
}

#[utoipa::path(get, path = "/workflows/{id}", tag = "workflows", params(("id" = String, Path, description = "workflow id")), responses((status = 200, description = "the workflow"), (status = 404, description = "not found")))]
async fn get_one(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(view(
        &state.db().get_workflow(&caller.workspace_id, &id).await?,
    )?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateBody {
    base_revision: i64,
    workflow: Value,
}

#[utoipa::path(put, path = "/workflows/{id}", tag = "workflows", params(("id" = String, Path, description = "workflow id")), responses((status = 200, description = "a new revision"), (status = 409, description = "stale base revision")))]
async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<UpdateBody>,
) -> Result<Json<Value>, ApiError> {
    let wf = parse(&body.workflow)?;
    let row = state
        .db()
        .update_workflow(&caller.workspace_id, &id, body.base_revision, &wf)
        .await?;
    let mut v = view(&row)?;
    v["diagnostics"] = json!(validate(&row.workflow()?, &catalog(&state)));
    Ok(Json(v))
}

#[utoipa::path(delete, path = "/workflows/{id}", tag = "workflows", params(("id" = String, Path, description = "workflow id")), responses((status = 204, description = "deleted")))]
async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state
        .db()
        .delete_workflow(&caller.workspace_id, &id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/workflows/{id}/revisions", tag = "workflows", params(("id" = String, Path, description = "workflow id")), responses((status = 200, description = "revisions, newest first")))]
async fn revisions(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let revs = state.db().list_revisions(&caller.workspace_id, &id).await?;
    let items: Vec<Value> = revs
        .iter()
        .map(|r| json!({"revision": r.revision, "created_at": r.created_at}))
        .collect();
    Ok(Json(json!({"revisions": items})))
}

#[utoipa::path(post, path = "/workflows/{id}/validate", tag = "workflows", params(("id" = String, Path, description = "workflow id")), responses((status = 200, description = "diagnostics")))]
async fn validate_saved(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let wf = state
        .db()
        .get_workflow(&caller.workspace_id, &id)
        .await?
        .workflow()?;
    Ok(Json(
        json!({"diagnostics": validate(&wf, &catalog(&state))}),
    ))
}

#[utoipa::path(post, path = "/workflows/validate", tag = "workflows", responses((status = 200, description = "diagnostics")))]
async fn validate_unsaved(
    State(state): State<AppState>,
    _caller: Caller,
    ApiJson(body): ApiJson<Value>,
) -> Result<Json<Value>, ApiError> {
    let wf = parse(&body)?;
    Ok(Json(
        json!({"diagnostics": validate(&wf, &catalog(&state))}),
    ))
}
