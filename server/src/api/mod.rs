//! The JSON API under `/api/v1`. One module per route group, each with its
//! own `router()`. Every route but the public ones (`health`,
//! `auth/exchange`, the two `invite/{token}` routes and `openapi.json`)
//! needs a bearer token and sees only the caller's current workspace.
//!
//! Routes are registered through `utoipa_axum::OpenApiRouter`, so the
//! OpenAPI document served at `/api/v1/openapi.json` is built from the very
//! routes the server answers: the two cannot drift apart. Each route states
//! the role it takes there (`x-required-role`), and [`roles::guard`]
//! enforces what the document states.

mod approvals;
mod audit;
mod auth;
mod blobs;
mod connections;
mod examples;
mod forks;
mod health;
mod instances;
pub(crate) mod invitations;
pub(crate) mod members;
mod providers;
pub mod roles;
mod runs;
mod secrets;
mod suites;
mod tokens;
mod tools;
pub(crate) mod views;
mod workflows;
pub(crate) mod workspaces;

use std::sync::OnceLock;

use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use axum::{Json, Router};
use utoipa::openapi::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::{ApiError, AppState};

/// The largest request body accepted on any route.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The API's routes and the OpenAPI document describing exactly them.
pub fn router_and_spec() -> (Router<AppState>, OpenApi) {
    let (router, mut spec) = OpenApiRouter::new()
        .merge(health::router())
        .merge(auth::router())
        .merge(workflows::router())
        .merge(examples::router())
        .merge(tools::router())
        .merge(runs::router())
        .merge(forks::router())
        .merge(suites::router())
        .merge(providers::router())
        .merge(approvals::router())
        .merge(audit::router())
        .merge(blobs::router())
        .merge(secrets::router())
        .merge(connections::router())
        .merge(tokens::router())
        .merge(instances::router())
        .merge(workspaces::router())
        .merge(members::router())
        .merge(invitations::router())
        .split_for_parts();
    spec.info.title = "Glassbox API".into();
    spec.info.version = crate::VERSION.into();
    spec.servers = Some(vec![utoipa::openapi::Server::new(
        node_runtime::wire::API_PREFIX,
    )]);
    (router, spec)
}

static SPEC: OnceLock<OpenApi> = OnceLock::new();

/// The API's routes, each behind its role ([`roles::guard`]).
pub fn router(state: AppState) -> Router<AppState> {
    let (router, spec) = router_and_spec();
    let (roles, missing) = roles::RouteRoles::of(&spec);
    for route in missing {
        tracing::error!("{route}: it takes the admin role");
    }
    let _ = SPEC.set(spec);
    router
        .route_layer(axum::middleware::from_fn_with_state(
            (state, std::sync::Arc::new(roles)),
            roles::guard,
        ))
        .route("/openapi.json", get(openapi))
        .fallback(unknown_route)
        .method_not_allowed_fallback(crate::error::method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
}

/// `GET /api/v1/openapi.json`.
async fn openapi() -> Json<OpenApi> {
    Json(SPEC.get_or_init(|| router_and_spec().1).clone())
}

/// Unknown API paths answer with the API's JSON error, never the app's HTML.
async fn unknown_route(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("no API route {uri}"))
}
