//! Workflows: create, list, get, update (a new revision; a stale base is
//! refused with 409), delete, revisions, validate, and the variables of
//! templates (the browser app's input handles). A workflow's name and
//! one-line description live in its document and are kept beside it for
//! the list.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use node_runtime::graph::validate::validate;
use node_runtime::graph::{Workflow, WorkflowError};
use node_runtime::tool::ToolRegistry;
use node_runtime::wire::{
    Diagnostics, Revision, RevisionList, TemplateVariablesAnswer, TemplateVariablesOf,
    TemplateVariablesRequest, WorkflowList, WorkflowSaved, WorkflowView, MAX_TEMPLATES_PER_REQUEST,
};
use serde::Deserialize;
use serde_json::{json, Value};

use super::views;
use crate::auth::Caller;
use crate::error::{ApiJson, ApiPath};
use crate::storage::new_id;
use crate::{ApiError, AppState};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(validate_unsaved))
        .routes(routes!(template_variables))
        .routes(routes!(get_one, update, remove))
        .routes(routes!(revisions))
        .routes(routes!(validate_saved))
}

/// The longest description a workflow may have, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

/// A workflow document from a request body, or a 422 naming the path.
fn parse(value: &Value) -> Result<Workflow, ApiError> {
    let wf = Workflow::from_value(value).map_err(|e| match e {
        WorkflowError::Invalid { path, message } => ApiError::unprocessable(
            format!("invalid workflow at `{path}`: {message}"),
            json!({"path": path}),
        ),
        other => ApiError::unprocessable(other.to_string(), json!({"path": "format_version"})),
    })?;
    check_description(&wf.description)?;
    Ok(wf)
}

/// A description is one line of at most [`MAX_DESCRIPTION_CHARS`]
/// characters (it is shown under the name in the list).
pub fn check_description(description: &str) -> Result<(), ApiError> {
    if description.contains(['\n', '\r']) {
        return Err(ApiError::unprocessable(
            "a workflow's description is one line: remove the line breaks",
            json!({"path": "description"}),
        ));
    }
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(ApiError::unprocessable(
            format!(
                "a workflow's description is at most {MAX_DESCRIPTION_CHARS} characters, not {chars}"
            ),
            json!({"path": "description"}),
        ));
    }
    Ok(())
}

/// The workspace's tools: the built-ins and its MCP tools.
pub(super) async fn catalog(
    state: &AppState,
    workspace_id: &str,
) -> Result<ToolRegistry, ApiError> {
    let (registry, _) = state.runs().workspace_tools(workspace_id).await?;
    Ok(registry)
}

#[utoipa::path(post, path = "/workflows", extensions(("x-required-role" = json!("editor"))), tag = "workflows", responses((status = 201, body = WorkflowSaved, description = "created, with its diagnostics"), (status = 422, description = "invalid document, path named")))]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<Value>,
) -> Result<(StatusCode, Json<WorkflowSaved>), ApiError> {
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
    let diagnostics = validate(&wf, &catalog(&state, &caller.workspace_id).await?);
    Ok((
        StatusCode::CREATED,
        Json(WorkflowSaved {
            view: views::workflow_view(&row)?,
            diagnostics,
        }),
    ))
}

#[utoipa::path(get, path = "/workflows", extensions(("x-required-role" = json!("viewer"))), tag = "workflows", responses((status = 200, body = WorkflowList, description = "workflows of the workspace")))]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<WorkflowList>, ApiError> {
    let rows = state.db().list_workflows(&caller.workspace_id).await?;
    Ok(Json(WorkflowList {
        workflows: rows
            .iter()
            .map(views::workflow_item)
            .collect::<Result<_, _>>()?,
    }))
}

#[utoipa::path(get, path = "/workflows/{id}", extensions(("x-required-role" = json!("viewer"))), tag = "workflows", params(("id" = String, Path, description = "workflow id")), responses((status = 200, body = WorkflowView, description = "the workflow"), (status = 404, description = "not found")))]
async fn get_one(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<WorkflowView>, ApiError> {
    Ok(Json(views::workflow_view(
        &state.db().get_workflow(&caller.workspace_id, &id).await?,
    )?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateBody {
    base_revision: i64,
    workflow: Value,
}

#[utoipa::path(put, path = "/workflows/{id}", extensions(("x-required-role" = json!("editor"))), tag = "workflows", params(("id" = String, Path, description = "workflow id")), responses((status = 200, body = WorkflowSaved, description = "a new revision, with its diagnostics"), (status = 409, description = "stale base revision")))]
async fn update(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<UpdateBody>,
) -> Result<Json<WorkflowSaved>, ApiError> {
    let wf = parse(&body.workflow)?;
    let row = state
        .db()
        .update_workflow(&caller.workspace_id, &id, body.base_revision, &wf)
        .await?;
    let view = views::workflow_view(&row)?;
    let diagnostics = validate(
        &view.workflow,
        &catalog(&state, &caller.workspace_id).await?,
    );
    Ok(Json(WorkflowSaved { view, diagnostics }))
}

#[utoipa::path(delete, path = "/workflows/{id}", extensions(("x-required-role" = json!("editor"))), tag = "workflows", params(("id" = String, Path, description = "workflow id")), responses((status = 204, description = "deleted")))]
async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    state
        .db()
        .delete_workflow(&caller.workspace_id, &id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/workflows/{id}/revisions", extensions(("x-required-role" = json!("viewer"))), tag = "workflows", params(("id" = String, Path, description = "workflow id")), responses((status = 200, body = RevisionList, description = "revisions, newest first")))]
async fn revisions(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<RevisionList>, ApiError> {
    let revs = state.db().list_revisions(&caller.workspace_id, &id).await?;
    let revisions = revs
        .into_iter()
        .map(|r| {
            Ok(Revision {
                revision: views::revision(r.revision)?,
                created_at: r.created_at,
            })
        })
        .collect::<Result<_, ApiError>>()?;
    Ok(Json(RevisionList { revisions }))
}

#[utoipa::path(post, path = "/workflows/{id}/validate", extensions(("x-required-role" = json!("viewer"))), tag = "workflows", params(("id" = String, Path, description = "workflow id")), responses((status = 200, body = Diagnostics, description = "diagnostics")))]
async fn validate_saved(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Diagnostics>, ApiError> {
    let wf = state
        .db()
        .get_workflow(&caller.workspace_id, &id)
        .await?
        .workflow()?;
    Ok(Json(Diagnostics {
        diagnostics: validate(&wf, &catalog(&state, &caller.workspace_id).await?),
    }))
}

#[utoipa::path(post, path = "/workflows/validate", extensions(("x-required-role" = json!("viewer"))), tag = "workflows", responses((status = 200, body = Diagnostics, description = "diagnostics")))]
async fn validate_unsaved(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<Value>,
) -> Result<Json<Diagnostics>, ApiError> {
    let wf = parse(&body)?;
    Ok(Json(Diagnostics {
        diagnostics: validate(&wf, &catalog(&state, &caller.workspace_id).await?),
    }))
}

/// The variables of each template (an Agent Node's prompt or a Template
/// node's text): the input handles the editor draws. The browser app has no
/// template parser of its own (it is most of the editor's code), so it asks
/// here for the templates it has not seen.
#[utoipa::path(post, path = "/workflows/template-variables", extensions(("x-required-role" = json!("viewer"))), tag = "workflows", request_body = TemplateVariablesRequest, responses((status = 200, body = TemplateVariablesAnswer, description = "one entry per template, in order"), (status = 422, description = "too many templates")))]
async fn template_variables(
    _caller: Caller,
    ApiJson(body): ApiJson<TemplateVariablesRequest>,
) -> Result<Json<TemplateVariablesAnswer>, ApiError> {
    if body.templates.len() > MAX_TEMPLATES_PER_REQUEST {
        return Err(ApiError::unprocessable(
            format!(
                "{} templates asked about, more than the {MAX_TEMPLATES_PER_REQUEST} one request may",
                body.templates.len()
            ),
            json!({"path": "templates"}),
        ));
    }
    let variables = body
        .templates
        .iter()
        .map(|t| TemplateVariablesOf::of(node_runtime::graph::template_variables(t)))
        .collect();
    Ok(Json(TemplateVariablesAnswer { variables }))
}
