//! `/api/v1/connections`: a workspace's connections (`crate::connections`).
//! Every member lists names and kinds; admins also see configs (which name
//! secrets, never hold them) and create, change, delete and test them.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use node_runtime::connections::{name_ok, ConnectionConfig};
use node_runtime::wire::{
    ConnectionList, ConnectionTestResult, ConnectionUpdate, ConnectionView, McpServerStatus,
    McpToolClass, McpToolClassSet, NewConnection,
};
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiJson, ApiPath};
use crate::storage::ConnectionRow;
use crate::{ApiError, AppState};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(update, remove))
        .routes(routes!(test))
        .routes(routes!(refresh))
        .routes(routes!(set_tool_class))
}

/// A config a user sent, checked field by field.
fn checked(config: &ConnectionConfig) -> Result<String, ApiError> {
    config
        .validate()
        .map_err(|e| ApiError::unprocessable(e.message, json!({"path": e.path})))?;
    serde_json::to_string(config).map_err(|e| ApiError::Internal(e.into()))
}

fn view(row: ConnectionRow, with_config: bool, mcp: &McpStatuses) -> ConnectionView {
    let config = with_config
        .then(|| crate::connections::config_of(&row).ok())
        .flatten();
    let mcp = mcp.of(&row.name);
    ConnectionView {
        name: row.name,
        kind: row.kind,
        config,
        created_at: row.created_at,
        updated_at: row.updated_at,
        mcp,
    }
}

/// What each `mcp` connection's server said at its last refresh.
struct McpStatuses {
    servers: Vec<crate::storage::McpServerRow>,
    tools: Vec<crate::storage::McpToolRow>,
}

impl McpStatuses {
    async fn load(state: &AppState, ws: &str) -> Result<Self, ApiError> {
        Ok(Self {
            servers: state.db().mcp_servers(ws).await?,
            tools: state.db().mcp_tools(ws).await?,
        })
    }

    fn of(&self, connection: &str) -> Option<McpServerStatus> {
        let s = self.servers.iter().find(|s| s.connection == connection)?;
        Some(McpServerStatus {
            server_name: s.server_name.clone(),
            server_version: s.server_version.clone(),
            protocol_version: s.protocol_version.clone(),
            refreshed_at: s.refreshed_at.clone(),
            tools: self
                .tools
                .iter()
                .filter(|t| t.connection == connection && t.current == 1)
                .map(|t| t.tool.clone())
                .collect(),
        })
    }
}

#[utoipa::path(get, path = "/connections", extensions(("x-required-role" = json!("viewer"))), tag = "connections", responses((status = 200, body = ConnectionList, description = "names and kinds; configs for admins")))]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<ConnectionList>, ApiError> {
    let is_admin = caller.role == node_runtime::wire::Role::Admin;
    let rows = state.db().list_connections(&caller.workspace_id).await?;
    let mcp = McpStatuses::load(&state, &caller.workspace_id).await?;
    Ok(Json(ConnectionList {
        connections: rows.into_iter().map(|r| view(r, is_admin, &mcp)).collect(),
    }))
}

#[utoipa::path(post, path = "/connections", extensions(("x-required-role" = json!("admin"))), tag = "connections", request_body = NewConnection, responses((status = 201, body = ConnectionView, description = "created"), (status = 403, description = "takes the admin role"), (status = 409, description = "the name is taken"), (status = 422, description = "a bad name or config; `details.path` names the field")))]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<NewConnection>,
) -> Result<(StatusCode, Json<ConnectionView>), ApiError> {
    if !name_ok(&body.name) {
        return Err(ApiError::unprocessable(
            "a connection name is 1-128 characters of A-Z, a-z, 0-9, _ - .",
            json!({"path": "/name"}),
        ));
    }
    let config = checked(&body.config)?;
    let ws = &caller.workspace_id;
    if !state
        .db()
        .insert_connection(ws, &body.name, body.config.kind(), &config)
        .await?
    {
        return Err(ApiError::Conflict {
            message: format!("a connection named {} exists in this workspace", body.name),
            details: json!({"path": "/name"}),
        });
    }
    let row = state.db().connection(ws, &body.name).await?;
    if matches!(body.config, ConnectionConfig::Mcp { .. }) {
        // Its tools are listed in the background (a server started with
        // `npx -y` may download first); `refresh` waits for them.
        let state = state.clone();
        let owner = caller.secret_owner();
        let row = row.clone();
        tokio::spawn(async move {
            let r = state.runs().test_connection(&owner, &row).await;
            if !r.ok {
                tracing::warn!(connection = %row.name, message = %r.message, "an MCP connection's first refresh failed");
            }
        });
    }
    let detail = json!({"kind": body.config.kind()});
    crate::audit::queue(
        state.runs(),
        &caller,
        "connection.created",
        &body.name,
        detail,
    );
    let mcp = McpStatuses::load(&state, ws).await?;
    Ok((StatusCode::CREATED, Json(view(row, true, &mcp))))
}

#[utoipa::path(put, path = "/connections/{name}", extensions(("x-required-role" = json!("admin"))), tag = "connections", params(("name" = String, Path)), request_body = ConnectionUpdate, responses((status = 200, body = ConnectionView, description = "replaced"), (status = 403, description = "takes the admin role"), (status = 404, description = "no such connection"), (status = 422, description = "a bad config")))]
async fn update(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<ConnectionUpdate>,
) -> Result<Json<ConnectionView>, ApiError> {
    let config = checked(&body.config)?;
    let ws = &caller.workspace_id;
    state
        .db()
        .update_connection(ws, &name, body.config.kind(), &config)
        .await?;
    let detail = json!({"kind": body.config.kind()});
    crate::audit::queue(state.runs(), &caller, "connection.updated", &name, detail);
    // A running server of the old config stops; the next use starts the new.
    state.runs().mcp().stop(ws, &name).await;
    let mcp = McpStatuses::load(&state, ws).await?;
    Ok(Json(view(
        state.db().connection(ws, &name).await?,
        true,
        &mcp,
    )))
}

#[utoipa::path(delete, path = "/connections/{name}", extensions(("x-required-role" = json!("admin"))), tag = "connections", params(("name" = String, Path)), responses((status = 204, description = "deleted"), (status = 403, description = "takes the admin role"), (status = 404, description = "no such connection")))]
async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    state
        .db()
        .delete_connection(&caller.workspace_id, &name)
        .await?;
    state.runs().mcp().stop(&caller.workspace_id, &name).await;
    state
        .db()
        .retire_mcp_connection(&caller.workspace_id, &name)
        .await?;
    crate::audit::queue(
        state.runs(),
        &caller,
        "connection.deleted",
        &name,
        json!({}),
    );
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/connections/{name}/test", extensions(("x-required-role" = json!("admin"))), tag = "connections", params(("name" = String, Path)), responses((status = 200, body = ConnectionTestResult, description = "whether it answered, in words"), (status = 403, description = "takes the admin role"), (status = 404, description = "no such connection")))]
async fn test(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<ConnectionTestResult>, ApiError> {
    let row = state.db().connection(&caller.workspace_id, &name).await?;
    Ok(Json(
        state
            .runs()
            .test_connection(&caller.secret_owner(), &row)
            .await,
    ))
}

#[utoipa::path(post, path = "/connections/{name}/refresh", extensions(("x-required-role" = json!("admin"))), tag = "connections", params(("name" = String, Path)), responses((status = 200, body = ConnectionTestResult, description = "the MCP server's tools listed again (started if needed), in words"), (status = 403, description = "takes the admin role"), (status = 404, description = "no such connection"), (status = 422, description = "not an `mcp` connection")))]
async fn refresh(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<ConnectionTestResult>, ApiError> {
    let row = state.db().connection(&caller.workspace_id, &name).await?;
    if row.kind != "mcp" {
        return Err(ApiError::unprocessable(
            format!(
                "connection {name} is `{}`: only `mcp` connections have tools to refresh",
                row.kind
            ),
            json!({"path": "/name"}),
        ));
    }
    Ok(Json(
        state
            .runs()
            .test_connection(&caller.secret_owner(), &row)
            .await,
    ))
}

#[utoipa::path(put, path = "/connections/{name}/tools/{tool}", extensions(("x-required-role" = json!("admin"))), tag = "connections", params(("name" = String, Path), ("tool" = String, Path, description = "the server's name for the tool")), request_body = McpToolClass, responses((status = 200, body = McpToolClassSet, description = "the tool's class is set (or, with null, back to its annotations'); recorded with who and when"), (status = 403, description = "takes the admin role"), (status = 404, description = "no such connection or tool")))]
async fn set_tool_class(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((name, tool)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<McpToolClass>,
) -> Result<Json<McpToolClassSet>, ApiError> {
    let ws = &caller.workspace_id;
    state.db().connection(ws, &name).await?;
    let known = state
        .db()
        .mcp_tools(ws)
        .await?
        .into_iter()
        .any(|t| t.connection == name && t.tool == tool);
    if !known {
        return Err(ApiError::not_found(format!(
            "connection {name} has no tool {tool} (refresh it first)"
        )));
    }
    let class = body.side_effects.map(|c| c.as_str());
    state
        .db()
        .set_mcp_override(ws, &name, &tool, class, &caller.user_id)
        .await?;
    let detail = json!({"tool": tool, "side_effects": class});
    crate::audit::queue(state.runs(), &caller, "connection.updated", &name, detail);
    Ok(Json(McpToolClassSet {
        connection: name,
        tool,
        side_effects: body.side_effects,
        set_by: caller.user_id.clone(),
        set_at: crate::storage::now(),
    }))
}
