//! `POST /api/v1/providers/test`: the Agent panel's "Test connection". The
//! server makes one cheap call to the provider with the caller's secrets,
//! through the same egress guard as runs, and answers what happened.

use axum::extract::State;
use axum::Json;
use node_runtime::wire::{ProviderTest, ProviderTestResult};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::ApiJson;
use crate::{ApiError, AppState};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(test))
}

#[utoipa::path(post, path = "/providers/test", extensions(("x-required-role" = json!("editor"))), tag = "providers", request_body = ProviderTest, responses((status = 200, body = ProviderTestResult, description = "whether the provider answered; when not, its reason in words"), (status = 422, description = "the provider config is not valid")))]
async fn test(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<ProviderTest>,
) -> Result<Json<ProviderTestResult>, ApiError> {
    let owner = caller.secret_owner();
    Ok(Json(
        state.runs().test_provider(&owner, &body.provider).await,
    ))
}
