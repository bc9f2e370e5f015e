//! Glassbox as an MCP server: `/mcp`, streamable HTTP, for any MCP client
//! (an IDE, another agent). A bearer API token picks the workspace, as on
//! the JSON API; each of its workflows that has an Input node is a tool
//! (input schema: the Input node's), and `tools/call` runs it and answers
//! its outputs as structured content. A run that stops for an approval
//! answers with its pending state and a link to decide it.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{FromRequestParts, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use node_runtime::graph::{NodeKind, Workflow};
use node_runtime::wire::RunStatus;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Map, Value};

use crate::auth::Caller;
use crate::AppState;

/// The longest a `tools/call` waits for its run before answering with
/// the run's current state.
const CALL_WAIT: Duration = Duration::from_secs(300);

/// The `/mcp` router: the caller's token is checked first (401 in the
/// API's error shape), then rmcp's service handles the protocol.
pub fn router(state: AppState) -> axum::Router {
    let handler_state = state.clone();
    let service = StreamableHttpService::new(
        move || {
            Ok(GlassboxMcp {
                state: handler_state.clone(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        {
            let mut config = StreamableHttpServerConfig::default();
            // Every request carries a bearer token (checked before rmcp
            // sees it), so a DNS-rebinding page cannot use it: any Host.
            config.allowed_hosts = Vec::new();
            config
        },
    );
    axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(state, authenticate))
}

/// Puts the token's [`Caller`] into the request for the handler.
async fn authenticate(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    match Caller::from_request_parts(&mut parts, &state).await {
        Ok(caller) => {
            parts.extensions.insert(caller);
            next.run(Request::from_parts(parts, body)).await
        }
        Err(e) => e.into_response(),
    }
}

#[derive(Clone)]
struct GlassboxMcp {
    state: AppState,
}

fn caller_of(ctx: &RequestContext<RoleServer>) -> Result<(Caller, String), ErrorData> {
    let parts = ctx
        .extensions
        .get::<axum::http::request::Parts>()
        .ok_or_else(|| ErrorData::internal_error("no HTTP request", None))?;
    let caller = parts
        .extensions
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| ErrorData::invalid_request("sign in with a bearer API token", None))?;
    let host = parts
        .headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost")
        .to_string();
    Ok((caller, host))
}

/// A workflow's tool name: its name in lower case, other characters as
/// `-`; a name two workflows share gets the workflow id's start.
fn tool_names(workflows: &[(String, Workflow)]) -> Vec<String> {
    let slug = |s: &str| {
        let mut out = String::new();
        for c in s.to_lowercase().chars() {
            if c.is_ascii_alphanumeric() || c == '_' {
                out.push(c);
            } else if !out.ends_with('-') {
                out.push('-');
            }
        }
        let out = out.trim_matches('-').to_string();
        if out.is_empty() {
            "workflow".to_string()
        } else {
            out.chars().take(48).collect()
        }
    };
    let slugs: Vec<String> = workflows.iter().map(|(_, w)| slug(&w.name)).collect();
    slugs
        .iter()
        .zip(workflows)
        .map(|(s, (id, _))| {
            if slugs.iter().filter(|o| *o == s).count() > 1 {
                format!("{s}-{}", id.chars().take(8).collect::<String>())
            } else {
                s.clone()
            }
        })
        .collect()
}

fn input_schema(workflow: &Workflow) -> Option<Map<String, Value>> {
    workflow.nodes.iter().find_map(|n| match &n.kind {
        NodeKind::Input(c) => {
            let mut schema = c.schema.as_object().cloned().unwrap_or_default();
            schema.insert("type".into(), json!("object"));
            Some(schema)
        }
        _ => None,
    })
}

impl GlassboxMcp {
    /// The caller's workflows that have an Input node, with tool names.
    async fn tools(&self, caller: &Caller) -> Result<Vec<(String, String, Workflow)>, ErrorData> {
        let rows = self
            .state
            .db()
            .list_workflows(&caller.workspace_id)
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let mut workflows: Vec<(String, Workflow)> = rows
            .iter()
            .filter_map(|r| r.workflow().ok().map(|w| (r.id.clone(), w)))
            .filter(|(_, w)| input_schema(w).is_some())
            .collect();
        workflows.sort_by(|a, b| a.0.cmp(&b.0));
        let names = tool_names(&workflows);
        Ok(names
            .into_iter()
            .zip(workflows)
            .map(|(name, (id, w))| (name, id, w))
            .collect())
    }
}

impl rmcp::ServerHandler for GlassboxMcp {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("glassbox", crate::VERSION))
            .with_instructions(
                "Each tool runs one Glassbox workflow of your workspace and answers its outputs.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (caller, _) = caller_of(&ctx)?;
        let tools = self
            .tools(&caller)
            .await?
            .into_iter()
            .map(|(name, _, w)| {
                let schema = input_schema(&w).unwrap_or_default();
                let description = if w.description.is_empty() {
                    format!("Runs the Glassbox workflow \"{}\".", w.name)
                } else {
                    format!(
                        "Runs the Glassbox workflow \"{}\": {}",
                        w.name, w.description
                    )
                };
                Tool::new(name, description, Arc::new(schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (caller, host) = caller_of(&ctx)?;
        let Some((_, id, workflow)) = self
            .tools(&caller)
            .await?
            .into_iter()
            .find(|(name, _, _)| *name == request.name)
        else {
            return Err(ErrorData::invalid_params(
                format!(
                    "no workflow tool named `{}` in this workspace",
                    request.name
                ),
                None,
            ));
        };
        if !caller.role.allows(node_runtime::wire::Role::Editor) {
            return Err(ErrorData::invalid_request(
                "a viewer cannot start runs",
                None,
            ));
        }
        let inputs = request.arguments.unwrap_or_default();
        let runs = self.state.runs();
        let run_id = runs
            .start(caller.secret_owner(), workflow, inputs, "mcp")
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let detail = serde_json::json!({"kind": "mcp", "workflow_id": id});
        crate::audit::queue(self.state.runs(), &caller, "run.started", &run_id, detail);
        let link = format!("http://{host}/runs/{run_id}");
        let deadline = tokio::time::Instant::now() + CALL_WAIT;
        loop {
            let row = self
                .state
                .db()
                .get_run(&caller.workspace_id, &run_id)
                .await
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            let status = row.status.parse::<RunStatus>().ok();
            let outputs = row
                .outputs
                .as_deref()
                .and_then(|o| serde_json::from_str::<Value>(o).ok())
                .unwrap_or(Value::Null);
            let answer = |status: &str| json!({"run_id": run_id, "workflow_id": id, "status": status, "outputs": outputs, "url": link});
            match status {
                Some(RunStatus::Succeeded) => {
                    return Ok(CallToolResult::structured(answer("succeeded")).into())
                }
                Some(RunStatus::WaitingForApproval) => {
                    let mut v = answer("waiting_for_approval");
                    v["message"] = json!(format!(
                        "the run waits for a human approval: decide it at {link}"
                    ));
                    return Ok(CallToolResult::structured(v).into());
                }
                Some(s @ (RunStatus::Failed | RunStatus::Cancelled)) => {
                    let mut v = answer(s.as_str());
                    v["error"] = json!(row.error);
                    let mut result = CallToolResult::structured_error(v);
                    result.content = vec![ContentBlock::text(format!(
                        "the run {}: {}",
                        s.as_str(),
                        row.error.unwrap_or_default()
                    ))];
                    return Ok(result.into());
                }
                _ if tokio::time::Instant::now() >= deadline => {
                    return Ok(CallToolResult::structured(answer(&row.status)).into())
                }
                _ => tokio::time::sleep(Duration::from_millis(25)).await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_slugs_and_unique() {
        let wf = |name: &str| {
            let mut w: Workflow = serde_json::from_value(json!({
                "format_version": 1, "id": "x", "name": name, "nodes": [], "edges": []
            }))
            .expect("workflow");
            w.name = name.into();
            w
        };
        let names = tool_names(&[
            ("0123456789".into(), wf("Summarize a page!")),
            ("abcdefghij".into(), wf("Twice")),
            ("bcdefghijk".into(), wf("twice")),
            ("c".into(), wf("***")),
        ]);
        assert_eq!(
            names,
            [
                "summarize-a-page",
                "twice-abcdefgh",
                "twice-bcdefghi",
                "workflow"
            ]
        );
    }
}
