//! Forks and diffs (issue 33): `POST /runs/{id}/fork` runs a finished run
//! again with changes (a run of kind `fork`, answered from the origin's
//! recording where it can; see `runs::fork`), and `GET
//! /runs/{id}/diff/{other}` compares two runs call by call.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use node_runtime::wire::{diff_runs, ForkRequest, ForkStarted, RunDiff, RunStatus};
use serde_json::{json, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiJson, ApiPath};
use crate::runs::ForkError;
use crate::{ApiError, AppState};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(fork))
        .routes(routes!(diff))
}

fn fork_error(e: ForkError) -> ApiError {
    match e {
        ForkError::Invalid { path, message } => ApiError::invalid_at(&path, message),
        ForkError::NoRecording(message) => ApiError::Conflict {
            message,
            details: Value::Null,
        },
        ForkError::Store(e) => e.into(),
    }
}

#[utoipa::path(post, path = "/runs/{id}/fork", extensions(("x-required-role" = json!("editor"))), tag = "runs", params(("id" = String, Path, description = "the origin's run id")), request_body = ForkRequest, responses((status = 202, body = ForkStarted, description = "the fork's run id; it runs in the background as a run of kind fork, every call its origin recorded answered from the recording"), (status = 409, description = "the origin has not finished, or is a replay"), (status = 422, description = "a change that cannot be applied; `details.path` names it"), (status = 429, description = "the workspace has its maximum of runs in progress")))]
async fn fork(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<ForkRequest>,
) -> Result<(StatusCode, Json<ForkStarted>), ApiError> {
    let origin = state.db().get_run(&caller.workspace_id, &id).await?;
    let record = state.db().run_record(&origin).await?;
    if let Err(running) = state.runs().may_start(&caller.workspace_id) {
        return Err(ApiError::TooManyRequests {
            message: format!(
                "this workspace has {running} runs in progress, its limit; fork when one ends"
            ),
            retry_after_s: 5,
        });
    }
    let (run_id, recorded_calls) = state
        .runs()
        .fork(caller.secret_owner(), &origin, record.as_ref(), &request)
        .await
        .map_err(fork_error)?;
    let detail = serde_json::json!({"kind": "fork", "fork_of": origin.id});
    crate::audit::queue(state.runs(), &caller, "run.started", &run_id, detail);
    Ok((
        StatusCode::ACCEPTED,
        Json(ForkStarted {
            run_id,
            fork_of: origin.id,
            status: RunStatus::Queued,
            recorded_calls,
        }),
    ))
}

#[utoipa::path(get, path = "/runs/{id}/diff/{other}", extensions(("x-required-role" = json!("viewer"))), tag = "runs", params(("id" = String, Path, description = "run id"), ("other" = String, Path, description = "the run to compare it with, e.g. its fork")), responses((status = 200, body = RunDiff, description = "per Agent and Tool node, the two runs' calls aligned by call id (same, changed, new, missing) and their answers and outputs compared"), (status = 409, description = "one of the runs has not finished")))]
async fn diff(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((id, other)): ApiPath<(String, String)>,
) -> Result<Json<RunDiff>, ApiError> {
    let mut details = Vec::with_capacity(2);
    for run_id in [&id, &other] {
        details.push(
            crate::run_details::run_detail_of(state.db(), &caller.workspace_id, run_id).await?,
        );
    }
    // Both found first (a run of another workspace is 404 whatever the
    // other's state). An unfinished run's calls are not all recorded yet:
    // compared now, they would read as missing.
    if let Some(active) = details.iter().find(|d| d.is_active()) {
        return Err(ApiError::Conflict {
            message: format!(
                "run {} has not finished ({}): compare it when it has",
                active.id, active.status
            ),
            details: json!({"run_id": active.id, "status": active.status}),
        });
    }
    Ok(Json(diff_runs(&details[0], &details[1])))
}
