//! Secrets: list names per scope, set and delete. A value goes in, is
//! encrypted before it is stored, and never comes back out of any route.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use node_runtime::wire::{Role, SecretList, SecretName};
use serde::Deserialize;
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiJson, ApiPath};
use crate::{ApiError, AppState};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(set, remove))
}

/// The owner of a scope for this caller, for a change: user secrets are
/// the caller's own; workspace and org secrets take the workspace's admin
/// role (an org secret reaches every workspace of the org).
fn owner(caller: &Caller, scope: &str) -> Result<String, ApiError> {
    let admin = || {
        if caller.role == Role::Admin {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "changing {scope} secrets takes the admin role in this workspace"
            )))
        }
    };
    match scope {
        "user" => Ok(caller.user_id.clone()),
        "workspace" => admin().map(|()| caller.workspace_id.clone()),
        "org" => {
            let org = caller.org_id.clone().ok_or_else(|| {
                ApiError::unprocessable(
                    "this workspace belongs to no organization, so it has no org secrets",
                    json!({"path": "scope"}),
                )
            })?;
            admin().map(|()| org)
        }
        other => Err(ApiError::unprocessable(
            format!("scope `{other}` is not user, workspace or org"),
            json!({"path": "scope"}),
        )),
    }
}

fn check_name(name: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::unprocessable(
            "a secret name is 1-128 characters of A-Z, a-z, 0-9, _ - .",
            json!({"path": "name"}),
        ))
    }
}

#[utoipa::path(get, path = "/secrets", extensions(("x-required-role" = json!("viewer"))), tag = "secrets", responses((status = 200, body = SecretList, description = "names and scopes, never values; a viewer gets only the total")))]
async fn list(State(state): State<AppState>, caller: Caller) -> Result<Json<SecretList>, ApiError> {
    let rows = state
        .db()
        .list_secrets(
            &caller.workspace_id,
            &caller.user_id,
            caller.org_id.as_deref(),
        )
        .await?;
    let total = rows.len();
    // A viewer learns how many there are, not their names.
    let secrets = if caller.role.allows(Role::Editor) {
        rows.into_iter()
            .map(|(name, scope, created_at)| SecretName {
                name,
                scope,
                created_at,
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Json(SecretList { secrets, total }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetBody {
    value: String,
}

#[utoipa::path(put, path = "/secrets/{scope}/{name}", extensions(("x-required-role" = json!("editor"))), tag = "secrets", params(("scope" = String, Path, description = "user, workspace or org"), ("name" = String, Path)), responses((status = 204, description = "stored, encrypted"), (status = 403, description = "workspace and org secrets take the admin role"), (status = 422, description = "bad scope, name or value")))]
async fn set(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((scope, name)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<SetBody>,
) -> Result<StatusCode, ApiError> {
    let owner = owner(&caller, &scope)?;
    check_name(&name)?;
    if let Err(why) = node_runtime::secrets::check_value(&body.value) {
        return Err(ApiError::unprocessable(why, json!({"path": "value"})));
    }
    let ciphertext = state.cipher().encrypt(&scope, &owner, &name, &body.value);
    state
        .db()
        .put_secret(&caller.workspace_id, &scope, &owner, &name, &ciphertext)
        .await?;
    let target = format!("{scope}/{name}");
    crate::audit::queue(state.runs(), &caller, "secret.set", &target, json!({}));
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(delete, path = "/secrets/{scope}/{name}", extensions(("x-required-role" = json!("editor"))), tag = "secrets", params(("scope" = String, Path), ("name" = String, Path)), responses((status = 204, description = "deleted"), (status = 404, description = "no such secret")))]
async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((scope, name)): ApiPath<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let owner = owner(&caller, &scope)?;
    state
        .db()
        .delete_secret(&caller.workspace_id, &scope, &owner, &name)
        .await?;
    let target = format!("{scope}/{name}");
    crate::audit::queue(state.runs(), &caller, "secret.deleted", &target, json!({}));
    Ok(StatusCode::NO_CONTENT)
}
