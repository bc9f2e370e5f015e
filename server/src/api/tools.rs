//! `GET /api/v1/tools`: the registry for discovery, with filters, and
//! `GET /api/v1/invocations`: seed 001's invocation records.

use axum::extract::State;
use axum::Json;
use node_runtime::tool::registry::ListFilter;
use node_runtime::tool_spec::ToolCategory;
use node_runtime::wire::{
    Invocation, InvocationList, McpToolSource, ToolAuth, ToolList, ToolSecret, ToolView,
};
use serde::Deserialize;

use super::views;
use crate::auth::Caller;
use crate::error::{ApiPath, ApiQuery};
use crate::storage::InvocationFilter;
use crate::{ApiError, AppState};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(invocations))
        .routes(routes!(invocation))
}

#[derive(Deserialize)]
struct ToolQuery {
    category: Option<ToolCategory>,
    q: Option<String>,
    #[serde(default)]
    include_deprecated: bool,
}

#[utoipa::path(get, path = "/tools", extensions(("x-required-role" = json!("viewer"))), tag = "tools", params(("category" = Option<String>, Query), ("q" = Option<String>, Query), ("include_deprecated" = Option<bool>, Query)), responses((status = 200, body = ToolList, description = "tools with badges and auth status")))]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<ToolQuery>,
) -> Result<Json<ToolList>, ApiError> {
    let filter = ListFilter {
        category: q.category,
        text: q.q,
        include_deprecated: q.include_deprecated,
    };
    let (registry, sources) = state.runs().workspace_tools(&caller.workspace_id).await?;
    let mut tools = Vec::new();
    for t in registry.list(&filter) {
        let m = &t.spec.metadata;
        let mut secrets = Vec::new();
        for name in &m.secrets {
            let scope = state
                .db()
                .secret_scope(
                    &caller.workspace_id,
                    &caller.user_id,
                    caller.org_id.as_deref(),
                    name,
                )
                .await?;
            let (status, warning) = match scope.as_deref() {
                None => ("missing", Some("Missing API key")),
                Some("org") => ("ok", Some("Using the organization's key (broad scope)")),
                Some(_) => ("ok", None),
            };
            secrets.push(ToolSecret {
                name: name.clone(),
                status: status.into(),
                scope,
                warning: warning.map(str::to_string),
            });
        }
        let ok = secrets.iter().all(|s| s.status == "ok");
        tools.push(ToolView {
            name: t.spec.name.clone(),
            version: t.spec.version.clone(),
            reference: t.spec.key(),
            description: t.spec.description.clone(),
            category: m.category,
            side_effects: m.side_effects,
            lifecycle: m.lifecycle,
            cache: m.cache,
            timeout_ms: m.timeout_ms,
            auth: ToolAuth { ok, secrets },
            input_schema: t.spec.input_schema.clone(),
            output_schema: t.spec.output_schema.clone(),
            effect_description: m.effect_description.clone(),
            mcp: sources.get(&t.spec.key()).map(|s| McpToolSource {
                connection: s.connection.clone(),
                tool: s.tool.clone(),
                server_name: s.server.as_ref().map(|v| v.server_name.clone()),
                server_version: s.server.as_ref().map(|v| v.server_version.clone()),
                protocol_version: s.server.as_ref().map(|v| v.protocol_version.clone()),
                annotations: s.annotations.clone(),
                side_effects_set_by: s.override_row.as_ref().map(|o| o.set_by.clone()),
                side_effects_set_at: s.override_row.as_ref().map(|o| o.set_at.clone()),
            }),
        });
    }
    Ok(Json(ToolList { tools }))
}

#[derive(Deserialize)]
struct InvocationQuery {
    status: Option<String>,
    tool: Option<String>,
    run_id: Option<String>,
    node_id: Option<String>,
    call_id: Option<String>,
    since: Option<String>,
    until: Option<String>,
    #[serde(default)]
    limit: i64,
    cursor: Option<String>,
}

#[utoipa::path(get, path = "/invocations", extensions(("x-required-role" = json!("viewer"))), tag = "tools", params(("status" = Option<String>, Query), ("tool" = Option<String>, Query), ("run_id" = Option<String>, Query), ("node_id" = Option<String>, Query), ("call_id" = Option<String>, Query), ("since" = Option<String>, Query), ("until" = Option<String>, Query), ("limit" = Option<i64>, Query, description = "page size: 50 unless asked, at most 200"), ("cursor" = Option<String>, Query, description = "a previous page's `next_cursor`")), responses((status = 200, body = InvocationList, description = "a page of invocation records without their payloads, newest first"), (status = 400, description = "a cursor this server did not give")))]
async fn invocations(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<InvocationQuery>,
) -> Result<Json<InvocationList>, ApiError> {
    let filter = InvocationFilter {
        cursor: views::cursor(q.cursor.as_deref())?,
        status: q.status,
        tool: q.tool,
        run_id: q.run_id,
        node_id: q.node_id,
        call_id: q.call_id,
        since: q.since,
        until: q.until,
        limit: q.limit,
    };
    let page = state
        .db()
        .list_invocations(&caller.workspace_id, &filter)
        .await?;
    let invocations = page
        .items
        .into_iter()
        .map(views::invocation_summary)
        .collect::<Result<_, _>>()?;
    Ok(Json(InvocationList {
        invocations,
        next_cursor: page.next.map(|c| c.encode()),
    }))
}

#[utoipa::path(get, path = "/invocations/{id}", extensions(("x-required-role" = json!("viewer"))), tag = "tools", params(("id" = String, Path, description = "an invocation record's id")), responses((status = 200, body = Invocation, description = "the record with its input and output"), (status = 404, description = "no such record in this workspace")))]
async fn invocation(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Invocation>, ApiError> {
    let row = state.db().get_invocation(&caller.workspace_id, &id).await?;
    Ok(Json(views::invocation(row)?))
}
