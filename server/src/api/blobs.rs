//! `GET /api/v1/blobs/{hash}`: the full payload of a truncated tool output,
//! with its content type, for members of the workspace that owns it only
//! (everyone else gets 404, as for anything of another workspace).

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use node_runtime::blob::BlobStore;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::ApiPath;
use crate::{ApiError, AppState};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(download))
}

#[utoipa::path(get, path = "/blobs/{hash}", extensions(("x-required-role" = json!("viewer"))), tag = "blobs", params(("hash" = String, Path, description = "BLAKE3 of the payload")), responses((status = 200, body = serde_json::Value, content_type = "application/json", description = "the payload (a tool output, JSON), with the content type it was stored with"), (status = 404, description = "no such blob in this workspace")))]
async fn download(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(hash): ApiPath<String>,
) -> Result<Response, ApiError> {
    let content_type = state
        .db()
        .blob_content_type(&caller.workspace_id, &hash)
        .await?;
    let bytes = state
        .runs()
        .blobs()
        .get(&hash)
        .await
        .map_err(|e| ApiError::Internal(e.into()))?
        .ok_or_else(|| ApiError::not_found("blob not found"))?;
    Ok(([(header::CONTENT_TYPE, content_type)], bytes).into_response())
}
