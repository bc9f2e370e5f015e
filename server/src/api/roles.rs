//! The role each route takes, enforced in one place.
//!
//! Every operation's `#[utoipa::path]` states its role as the extension
//! `x-required-role`: `public` (no sign-in), or the weakest role in the
//! caller's current workspace that may call it (`viewer`, `editor`,
//! `admin`; see `node_runtime::wire::Role`). [`guard`] reads that table out
//! of the OpenAPI document the router was built with, so the document and
//! the enforcement cannot disagree; a route that states no role takes
//! `admin` (closed by default), and a unit test refuses such a route.
//!
//! A handler may still ask more of the caller than its route's role where
//! the body decides (a workspace secret takes `admin` on a route open to
//! editors); it never asks less.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use node_runtime::wire::{Role, API_PREFIX};
use utoipa::openapi::OpenApi;

use crate::auth::Caller;
use crate::{ApiError, AppState};

/// The OpenAPI extension naming an operation's role.
pub const EXTENSION: &str = "x-required-role";

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, signed in or not.
    Public,
    /// A member of the current workspace with at least this role.
    Member(Role),
}

impl Access {
    fn parse(value: &serde_json::Value) -> Result<Access, String> {
        match value.as_str() {
            Some("public") => Ok(Access::Public),
            Some(role) => Role::parse(role).map(Access::Member),
            None => Err(format!("`{value}` is not a role name")),
        }
    }
}

/// Each operation's access, by method and path as the document names it
/// (`/runs/{id}`).
#[derive(Debug, Clone, Default)]
pub struct RouteRoles(HashMap<(Method, String), Access>);

impl RouteRoles {
    /// The roles stated in `spec`, and each operation that states none or
    /// one that is not a role (left out: it takes `admin`).
    pub fn of(spec: &OpenApi) -> (RouteRoles, Vec<String>) {
        let mut roles = HashMap::new();
        let mut missing = Vec::new();
        for (path, item) in &spec.paths.paths {
            let operations = [
                (Method::GET, &item.get),
                (Method::POST, &item.post),
                (Method::PUT, &item.put),
                (Method::PATCH, &item.patch),
                (Method::DELETE, &item.delete),
            ];
            for (method, operation) in operations {
                let Some(operation) = operation else { continue };
                let stated = operation
                    .extensions
                    .as_ref()
                    .and_then(|e| e.get(EXTENSION))
                    .ok_or_else(|| format!("states no {EXTENSION}"))
                    .and_then(Access::parse);
                match stated {
                    Ok(access) => {
                        roles.insert((method, path.clone()), access);
                    }
                    Err(why) => missing.push(format!("{method} {path}: {why}")),
                }
            }
        }
        (RouteRoles(roles), missing)
    }

    /// The access of a matched route (`/api/v1/runs/{id}` or
    /// `/runs/{id}`); `admin` for one the table lacks.
    pub fn access(&self, method: &Method, matched: &str) -> Access {
        let path = matched.strip_prefix(API_PREFIX).unwrap_or(matched);
        let method = if method == Method::HEAD {
            &Method::GET
        } else {
            method
        };
        self.0
            .get(&(method.clone(), path.to_string()))
            .copied()
            .unwrap_or(Access::Member(Role::Admin))
    }
}

/// The route layer: a public route passes; any other resolves the caller
/// (401 without a valid token, 404 for a workspace they are not in), then
/// refuses a role weaker than the route's with 403. The caller goes into
/// the request's extensions, so the handler's [`Caller`] costs nothing.
pub async fn guard(
    State((state, roles)): State<(AppState, Arc<RouteRoles>)>,
    matched: Option<MatchedPath>,
    request: Request,
    next: Next,
) -> Response {
    // Every route the layer wraps has a matched path; without one, refuse.
    let Some(matched) = matched else {
        return ApiError::forbidden("this request matched no route with a stated role")
            .into_response();
    };
    let needed = match roles.access(request.method(), matched.as_str()) {
        Access::Public => return next.run(request).await,
        Access::Member(role) => role,
    };
    let (mut parts, body) = request.into_parts();
    let caller = match <Caller as axum::extract::FromRequestParts<AppState>>::from_request_parts(
        &mut parts, &state,
    )
    .await
    {
        Ok(caller) => caller,
        Err(e) => return e.into_response(),
    };
    if !caller.role.allows(needed) {
        return ApiError::forbidden(format!(
            "{} {} takes the {needed} role in this workspace; you are a {}",
            parts.method,
            matched.as_str().trim_start_matches(API_PREFIX),
            caller.role
        ))
        .into_response();
    }
    parts.extensions.insert(caller);
    next.run(Request::from_parts(parts, body)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_states_its_role() {
        let (_, spec) = super::super::router_and_spec();
        let (roles, missing) = RouteRoles::of(&spec);
        assert!(missing.is_empty(), "{missing:#?}");
        assert_eq!(roles.access(&Method::GET, "/api/v1/health"), Access::Public);
        assert_eq!(
            roles.access(&Method::POST, "/api/v1/runs"),
            Access::Member(Role::Editor)
        );
        assert_eq!(
            roles.access(&Method::GET, "/api/v1/runs"),
            Access::Member(Role::Viewer)
        );
        assert_eq!(
            roles.access(&Method::GET, "/api/v1/no-such-route"),
            Access::Member(Role::Admin)
        );
    }
}
