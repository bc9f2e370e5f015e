//! `GET /api/v1/instances`: the server instances on this database (issue
//! 32), each with its start, its last heartbeat and the unfinished runs of
//! the caller's workspace it holds (the instances are the deployment's and
//! shown to every workspace's admins; runs of other workspaces are not
//! counted). Instance names carry host names: the admin role only.

use axum::extract::State;
use axum::Json;
use node_runtime::wire::{InstanceList, InstanceView};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::{ApiError, AppState};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
}

#[utoipa::path(get, path = "/instances", extensions(("x-required-role" = json!("admin"))), tag = "instances", responses((status = 200, body = InstanceList, description = "the server instances on this database, each with the unfinished runs of the caller's workspace it holds"), (status = 403, description = "not an admin")))]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<InstanceList>, ApiError> {
    let current = state.runs().instance_name();
    // SQLite's one instance claims no run as it starts it: what it holds
    // is what it executes.
    let sqlite = state.db().is_sqlite();
    let instances = state
        .db()
        .instances(&caller.workspace_id)
        .await?
        .into_iter()
        .map(|r| {
            let is_current = r.name == current;
            InstanceView {
                runs_held: if sqlite && is_current {
                    state.runs().running_in(&caller.workspace_id) as i64
                } else {
                    r.runs_held
                },
                current: is_current,
                name: r.name,
                started_at: r.started_at,
                last_heartbeat_at: r.heartbeat_at,
                stopped_at: r.stopped_at,
            }
        })
        .collect();
    Ok(Json(InstanceList { instances }))
}
