//! `/api/v1/examples`: the example workflows this server read at start
//! (`crate::examples`), and a new workflow made from one ("New from
//! example").

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use node_runtime::graph::validate::validate;
use node_runtime::wire::{ExampleItem, ExampleList, WorkflowSaved};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::views;
use crate::auth::Caller;
use crate::error::ApiPath;
use crate::storage::new_id;
use crate::{ApiError, AppState};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(create_from))
}

#[utoipa::path(get, path = "/examples", extensions(("x-required-role" = json!("viewer"))), tag = "examples", responses((status = 200, body = ExampleList, description = "the example workflows, by file name")))]
async fn list(State(state): State<AppState>, _caller: Caller) -> Json<ExampleList> {
    Json(ExampleList {
        examples: state
            .examples()
            .iter()
            .map(|wf| ExampleItem {
                id: wf.id.clone(),
                name: wf.name.clone(),
                description: wf.description.clone(),
            })
            .collect(),
    })
}

#[utoipa::path(post, path = "/examples/{id}/workflows", extensions(("x-required-role" = json!("editor"))), tag = "examples", params(("id" = String, Path, description = "the example's id")), responses((status = 201, body = WorkflowSaved, description = "a new workflow of the caller's workspace: the example's document under a fresh id, with its diagnostics"), (status = 404, description = "no such example")))]
async fn create_from(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<(StatusCode, Json<WorkflowSaved>), ApiError> {
    let mut wf = state
        .examples()
        .iter()
        .find(|wf| wf.id == id)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("there is no example `{id}`")))?;
    wf.id = new_id();
    let row = state
        .db()
        .create_workflow(&caller.workspace_id, &wf)
        .await?;
    let diagnostics = validate(
        &wf,
        &super::workflows::catalog(&state, &caller.workspace_id).await?,
    );
    Ok((
        StatusCode::CREATED,
        Json(WorkflowSaved {
            view: views::workflow_view(&row)?,
            diagnostics,
        }),
    ))
}
