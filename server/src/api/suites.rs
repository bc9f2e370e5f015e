//! Regression suites (issue 33): `POST/GET /suites`, `GET/PUT/DELETE
//! /suites/{id}`, `POST /suites/{id}/cases`, `POST/GET /suites/{id}/runs`
//! and `GET /suite-runs/{id}`.
//! What a suite is and how it runs lives in `crate::suites`; a suite run
//! started here executes in a task of this process (202 at once, then
//! followed with `GET /suite-runs/{id}`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use node_runtime::wire::{
    NewSuite, SuiteCase, SuiteList, SuiteRunList, SuiteRunRequest, SuiteRunView, SuiteView,
};
use serde::Deserialize;
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiJson, ApiPath, ApiQuery};
use crate::storage::{new_id, now};
use crate::suites::{self, SuiteError};
use crate::{ApiError, AppState};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(get_one, replace, remove))
        .routes(routes!(add_case))
        .routes(routes!(start_run, runs))
        .routes(routes!(get_run))
}

fn suite_error(e: SuiteError) -> ApiError {
    match e {
        SuiteError::Invalid { path, message } => ApiError::invalid_at(&path, message),
        SuiteError::NameTaken(_) => ApiError::Conflict {
            message: e.to_string(),
            details: json!({ "path": "name" }),
        },
        SuiteError::CaseNameTaken(_) => ApiError::Conflict {
            message: e.to_string(),
            details: json!({ "path": "case.name" }),
        },
        SuiteError::Store(e) => e.into(),
    }
}

fn start_error(e: suites::StartError) -> ApiError {
    match e {
        suites::StartError::Busy(_) => ApiError::TooManyRequests {
            message: e.to_string(),
            retry_after_s: 5,
        },
        suites::StartError::Store(e) => e.into(),
    }
}

#[derive(Deserialize)]
struct ListQuery {
    workflow_id: Option<String>,
}

#[utoipa::path(post, path = "/suites", extensions(("x-required-role" = json!("editor"))), tag = "suites", request_body = NewSuite, responses((status = 201, body = SuiteView, description = "created; a case without a name is named after its run"), (status = 409, description = "another suite of the workspace has the name"), (status = 422, description = "a field that is not acceptable (an unfinished run, a replay, a run of another workflow, a bad assertion, ...); `details.path` names it")))]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<NewSuite>,
) -> Result<(StatusCode, Json<SuiteView>), ApiError> {
    let suite = suites::check_suite(state.db(), &caller.workspace_id, body)
        .await
        .map_err(suite_error)?;
    let row = suites::suite_row(&new_id(), &caller.workspace_id, &suite, &now())?;
    if !state.db().insert_suite(&row).await? {
        return Err(suite_error(SuiteError::NameTaken(suite.name)));
    }
    let view = suites::suite_view(state.db(), &row).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[utoipa::path(get, path = "/suites", extensions(("x-required-role" = json!("viewer"))), tag = "suites", params(("workflow_id" = Option<String>, Query, description = "only the suites of this workflow")), responses((status = 200, body = SuiteList, description = "the workspace's suites by name, each with its latest run (without its cases)")))]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<SuiteList>, ApiError> {
    let suites =
        suites::list_views(state.db(), &caller.workspace_id, q.workflow_id.as_deref()).await?;
    Ok(Json(SuiteList { suites }))
}

#[utoipa::path(get, path = "/suites/{id}", extensions(("x-required-role" = json!("viewer"))), tag = "suites", params(("id" = String, Path, description = "suite id")), responses((status = 200, body = SuiteView, description = "the suite with its latest run (without its cases)"), (status = 404, description = "no such suite in this workspace")))]
async fn get_one(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<SuiteView>, ApiError> {
    let row = state.db().get_suite(&caller.workspace_id, &id).await?;
    Ok(Json(suites::suite_view(state.db(), &row).await?))
}

#[utoipa::path(put, path = "/suites/{id}", extensions(("x-required-role" = json!("editor"))), tag = "suites", params(("id" = String, Path, description = "suite id")), request_body = NewSuite, responses((status = 200, body = SuiteView, description = "replaced (its runs are kept)"), (status = 404, description = "no such suite in this workspace"), (status = 409, description = "another suite of the workspace has the name"), (status = 422, description = "a field that is not acceptable; `details.path` names it")))]
async fn replace(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<NewSuite>,
) -> Result<Json<SuiteView>, ApiError> {
    let current = state.db().get_suite(&caller.workspace_id, &id).await?;
    let suite = suites::check_suite(state.db(), &caller.workspace_id, body)
        .await
        .map_err(suite_error)?;
    let row = suites::suite_row(&id, &caller.workspace_id, &suite, &current.created_at)?;
    if !state.db().update_suite(&row).await? {
        return Err(suite_error(SuiteError::NameTaken(suite.name)));
    }
    let row = state.db().get_suite(&caller.workspace_id, &id).await?;
    Ok(Json(suites::suite_view(state.db(), &row).await?))
}

#[utoipa::path(post, path = "/suites/{id}/cases", extensions(("x-required-role" = json!("editor"))), tag = "suites", params(("id" = String, Path, description = "suite id")), request_body = SuiteCase, responses((status = 200, body = SuiteView, description = "the suite with the case appended (atomically: a concurrent edit is not lost); a case without a name is named after its run"), (status = 404, description = "no such suite in this workspace"), (status = 409, description = "the suite has a case of this name; `details.path` is `case.name`"), (status = 422, description = "a field of the case that is not acceptable (an unfinished run, a replay, a run of another workflow, a bad assertion, the suite full); `details.path` names it (`case.run_id`, `case.assertions[0].path`)")))]
async fn add_case(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<SuiteCase>,
) -> Result<Json<SuiteView>, ApiError> {
    let row = suites::add_case(state.db(), &caller.workspace_id, &id, body)
        .await
        .map_err(suite_error)?;
    Ok(Json(suites::suite_view(state.db(), &row).await?))
}

#[utoipa::path(delete, path = "/suites/{id}", extensions(("x-required-role" = json!("editor"))), tag = "suites", params(("id" = String, Path, description = "suite id")), responses((status = 204, description = "deleted with its runs"), (status = 404, description = "no such suite in this workspace")))]
async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    state.db().delete_suite(&caller.workspace_id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/suites/{id}/runs", extensions(("x-required-role" = json!("editor"))), tag = "suites", params(("id" = String, Path, description = "suite id")), request_body = SuiteRunRequest, responses((status = 202, body = SuiteRunView, description = "the suite run, `running`: each case's run is forked against the revision (default: the current one) in the background, never sending a write; follow it with GET /suite-runs/{id}"), (status = 404, description = "no such suite in this workspace"), (status = 422, description = "the workflow has no such `revision`, or the suite's workflow is gone"), (status = 429, description = "the workspace has its maximum of suite runs in progress (4); `Retry-After` says when to try again")))]
async fn start_run(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<SuiteRunRequest>,
) -> Result<(StatusCode, Json<SuiteRunView>), ApiError> {
    let suite = state.db().get_suite(&caller.workspace_id, &id).await?;
    let workflow = suites::suite_graph(state.db(), &suite, body.revision)
        .await
        .map_err(suite_error)?;
    let started = suites::start(state.runs(), state.db(), &suite, &workflow)
        .await
        .map_err(start_error)?;
    let view = suites::run_view(&started.row)?;
    let detail = json!({"kind": "suite", "suite_id": suite.id});
    crate::audit::queue(
        state.runs(),
        &caller,
        "run.started",
        &started.row.id,
        detail,
    );
    suites::spawn(
        state.runs().clone(),
        state.db().clone(),
        caller.secret_owner(),
        suite,
        workflow,
        started,
    );
    Ok((StatusCode::ACCEPTED, Json(view)))
}

#[utoipa::path(get, path = "/suites/{id}/runs", extensions(("x-required-role" = json!("viewer"))), tag = "suites", params(("id" = String, Path, description = "suite id")), responses((status = 200, body = SuiteRunList, description = "the suite's latest runs (at most 200), newest first, without their cases"), (status = 404, description = "no such suite in this workspace")))]
async fn runs(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<SuiteRunList>, ApiError> {
    state.db().get_suite(&caller.workspace_id, &id).await?;
    let rows = state
        .db()
        .list_suite_runs(&caller.workspace_id, &id, crate::storage::PAGE_MAX)
        .await?;
    let runs = rows
        .iter()
        .map(suites::run_view)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Json(SuiteRunList { runs }))
}

#[utoipa::path(get, path = "/suite-runs/{id}", extensions(("x-required-role" = json!("viewer"))), tag = "suites", params(("id" = String, Path, description = "suite run id")), responses((status = 200, body = SuiteRunView, description = "the suite run with each case's verdict once it has ended: its fork, each assertion's result and, for a failed case, the diff of the recorded run against its fork"), (status = 404, description = "no such suite run in this workspace")))]
async fn get_run(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<SuiteRunView>, ApiError> {
    let row = state.db().get_suite_run(&caller.workspace_id, &id).await?;
    Ok(Json(suites::run_view(&row)?))
}
