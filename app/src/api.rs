//! Typed client of the JSON API: one async fn per endpoint. A non-2xx answer
//! becomes [`ApiError::Api`] with the server's code and message, so pages can
//! show it in words.

pub use node_runtime::wire::{
    Approval, ExampleItem, Invocation, InvocationSummary, ReplayOutcome, ReplayTimeline,
    RunCancelled, RunDetail, RunItem, SecretName, Session, Trace, WorkflowItem, WorkflowView,
};
pub use node_runtime::wire::{
    AuditEvent, AuditList, InvitationCreated, InvitationPreview, InvitationStatus, InvitationView,
    MemberView, Role, WorkspaceList, WorkspaceView,
};
use node_runtime::wire::{
    ErrorBody, Health, InvitationAccept, NewInvitation, RoleChange, API_PREFIX,
};
use serde::de::DeserializeOwned;

/// What can go wrong talking to the server.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApiError {
    /// The server answered with its JSON error body.
    #[error("{message} ({code}, HTTP {status})")]
    Api {
        status: u16,
        code: String,
        message: String,
    },
    /// The request never got an answer (server down, network dropped).
    #[error("cannot reach the Glassbox server: {0}")]
    Network(String),
    /// What the user gave cannot be sent (e.g. a file that is not JSON).
    #[error("{0}")]
    Invalid(String),
    /// The server answered with something that is not the expected JSON.
    #[error("unexpected answer from the server (HTTP {status}): {message}")]
    Decode { status: u16, message: String },
}

/// What a page says when it is opened without signing in.
pub const SIGNED_OUT: &str = "You are not signed in. Open the sign-in link the Glassbox server \
printed when it started (in the terminal of `cargo xtask run` or `glassbox serve`; it is valid \
for 24 hours, and a restart prints a new one).";

/// The header naming the workspace a request acts in.
pub const WORKSPACE_HEADER: &str = "X-Glassbox-Workspace";

/// What a page says when the session it holds stopped working.
pub const SESSION_ENDED: &str = "Your sign-in is no longer valid: it expired, was ended, or you \
were removed from the workspace. Sign in again with a new link (an invitation from an admin of the \
workspace, or the link the Glassbox server printed).";

/// A request to the API, with the session's token when signed in and the
/// current workspace when one was chosen.
fn request(method: gloo_net::http::Method, path: &str) -> gloo_net::http::RequestBuilder {
    let builder = signed(method, path);
    match crate::session::workspace() {
        Some(workspace) => builder.header(WORKSPACE_HEADER, &workspace),
        None => builder,
    }
}

/// A request with the session's token (when signed in) and no workspace:
/// for the invitation routes, which name their own.
fn signed(method: gloo_net::http::Method, path: &str) -> gloo_net::http::RequestBuilder {
    let url = format!("{API_PREFIX}{path}");
    let builder = gloo_net::http::RequestBuilder::new(&url).method(method);
    match crate::session::load() {
        Some(token) => builder.header("Authorization", &format!("Bearer {token}")),
        None => builder,
    }
}

async fn get_json<T: DeserializeOwned>(path: &str) -> Result<T, ApiError> {
    answer(request(gloo_net::http::Method::GET, path), None).await
}

/// Sends a request (with `body` as its JSON, if any) and decodes the
/// answer ([`decode`]).
async fn answer<T: DeserializeOwned>(
    builder: gloo_net::http::RequestBuilder,
    body: Option<&serde_json::Value>,
) -> Result<T, ApiError> {
    let (status, text) = exchange_text(builder, body).await?;
    decode(status, &text)
}

/// The status and body of the answer to a request (with `body` as its
/// JSON, if any). Boxed, so the one copy of the request's code is shared
/// by every endpoint instead of inlined into each answer's type.
fn exchange_text(
    builder: gloo_net::http::RequestBuilder,
    body: Option<&serde_json::Value>,
) -> futures::future::LocalBoxFuture<'static, Result<(u16, String), ApiError>> {
    let network = |err: gloo_net::Error| ApiError::Network(err.to_string());
    let request = match body {
        Some(body) => builder.json(body),
        None => builder.build(),
    }
    .map_err(network);
    Box::pin(async move {
        let response = request?.send().await.map_err(network)?;
        let status = response.status();
        let text = response.text().await.map_err(network)?;
        Ok((status, text))
    })
}

/// Maps a status and body to the typed result; kept free of the browser so
/// it is tested natively.
pub fn decode<T: DeserializeOwned>(status: u16, body: &str) -> Result<T, ApiError> {
    if (200..300).contains(&status) {
        return serde_json::from_str(body).map_err(|err| ApiError::Decode {
            status,
            message: err.to_string(),
        });
    }
    Err(error_answer(status, body))
}

/// A non-2xx answer as the error it names (one copy for every endpoint's
/// [`decode`]).
#[inline(never)]
fn error_answer(status: u16, body: &str) -> ApiError {
    match serde_json::from_str::<ErrorBody>(body) {
        Ok(err) => ApiError::Api {
            status,
            code: err.error.code,
            message: if status == 401 && err.error.message.contains("Bearer") {
                // The API's words are for programs; a person reads these.
                SIGNED_OUT.to_string()
            } else if status == 401 && err.error.message.contains("invalid or expired") {
                SESSION_ENDED.to_string()
            } else {
                err.error.message
            },
        },
        Err(_) => ApiError::Decode {
            status,
            message: body.chars().take(200).collect(),
        },
    }
}

async fn post_json<T: DeserializeOwned>(
    path: &str,
    body: &serde_json::Value,
) -> Result<T, ApiError> {
    send_json(gloo_net::http::Method::POST, path, body).await
}

async fn send_json<T: DeserializeOwned>(
    method: gloo_net::http::Method,
    path: &str,
    body: &serde_json::Value,
) -> Result<T, ApiError> {
    answer(request(method, path), Some(body)).await
}

/// `POST /api/v1/auth/exchange`: a one-time sign-in token for a session.
pub async fn exchange(token: &str) -> Result<Session, ApiError> {
    post_json("/auth/exchange", &serde_json::json!({ "token": token })).await
}

/// `POST /api/v1/auth/logout`: the session's token stops working.
pub async fn logout() -> Result<(), ApiError> {
    let response = request(gloo_net::http::Method::POST, "/auth/logout")
        .send()
        .await
        .map_err(|err| ApiError::Network(err.to_string()))?;
    expect_empty(response).await
}

/// `GET /api/v1/auth/sessions`: where the caller is signed in.
pub async fn list_sessions() -> Result<Vec<node_runtime::wire::SessionInfo>, ApiError> {
    get_json::<node_runtime::wire::SessionList>("/auth/sessions")
        .await
        .map(|l| l.sessions)
}

/// `DELETE /api/v1/auth/sessions/{id}`: that session's token stops working.
pub async fn revoke_session(id: &str) -> Result<(), ApiError> {
    let response = request(
        gloo_net::http::Method::DELETE,
        &format!("/auth/sessions/{id}"),
    )
    .send()
    .await
    .map_err(|err| ApiError::Network(err.to_string()))?;
    expect_empty(response).await
}

/// `GET /api/v1/workflows`.
pub async fn list_workflows() -> Result<Vec<WorkflowItem>, ApiError> {
    get_json::<node_runtime::wire::WorkflowList>("/workflows")
        .await
        .map(|l| l.workflows)
}

/// `POST /api/v1/workflows`: a new, empty workflow named `name` (the
/// answer's diagnostics are not kept: an empty graph has none).
pub async fn create_workflow(name: &str) -> Result<WorkflowView, ApiError> {
    post_json(
        "/workflows",
        &serde_json::json!({"format_version": 1, "id": "new", "name": name, "revision": 0, "nodes": [], "edges": []}),
    )
    .await
}

/// `DELETE /api/v1/workflows/{id}`.
pub async fn delete_workflow(id: &str) -> Result<(), ApiError> {
    let response = request(gloo_net::http::Method::DELETE, &format!("/workflows/{id}"))
        .send()
        .await
        .map_err(|err| ApiError::Network(err.to_string()))?;
    expect_empty(response).await
}

/// Renames a workflow and sets its one-line description: a new revision
/// with only those changed.
pub async fn rename_workflow(
    id: &str,
    name: &str,
    description: &str,
) -> Result<WorkflowView, ApiError> {
    let current = get_workflow(id).await?;
    let mut doc = current.workflow;
    doc.name = name.to_string();
    doc.description = description.to_string();
    save_workflow(id, current.revision, &doc).await
}

/// `GET /api/v1/examples`: the example workflows "New from example" offers.
pub async fn list_examples() -> Result<Vec<ExampleItem>, ApiError> {
    get_json::<node_runtime::wire::ExampleList>("/examples")
        .await
        .map(|l| l.examples)
}

/// `POST /api/v1/examples/{id}/workflows`: a new workflow made from the
/// example (its diagnostics are not kept: the editor asks for its own).
pub async fn new_from_example(id: &str) -> Result<WorkflowView, ApiError> {
    post_json(&format!("/examples/{id}/workflows"), &serde_json::json!({})).await
}

/// Duplicates a workflow under `name` (a new workflow, revision 1).
pub async fn duplicate_workflow(id: &str, name: &str) -> Result<WorkflowView, ApiError> {
    let mut doc = get_workflow(id).await?.workflow;
    doc.name = name.to_string();
    post_json(
        "/workflows",
        &serde_json::to_value(&doc).unwrap_or_default(),
    )
    .await
}

/// `GET /api/v1/secrets`: names and scopes the caller can see (values
/// never come back), and how many there are: a viewer gets only the count.
pub async fn list_secrets() -> Result<node_runtime::wire::SecretList, ApiError> {
    get_json("/secrets").await
}

/// Answers with no body (204) on success; the error body otherwise.
async fn expect_empty(response: gloo_net::http::Response) -> Result<(), ApiError> {
    let status = response.status();
    if (200..300).contains(&status) {
        return Ok(());
    }
    let text = response.text().await.unwrap_or_default();
    decode::<serde_json::Value>(status, &text).map(|_| ())
}

/// `PUT /api/v1/secrets/{scope}/{name}`.
pub async fn set_secret(scope: &str, name: &str, value: &str) -> Result<(), ApiError> {
    let response = request(
        gloo_net::http::Method::PUT,
        &format!("/secrets/{scope}/{name}"),
    )
    .json(&serde_json::json!({ "value": value }))
    .map_err(|err| ApiError::Network(err.to_string()))?
    .send()
    .await
    .map_err(|err| ApiError::Network(err.to_string()))?;
    expect_empty(response).await
}

/// `DELETE /api/v1/secrets/{scope}/{name}`.
pub async fn delete_secret(scope: &str, name: &str) -> Result<(), ApiError> {
    let response = request(
        gloo_net::http::Method::DELETE,
        &format!("/secrets/{scope}/{name}"),
    )
    .send()
    .await
    .map_err(|err| ApiError::Network(err.to_string()))?;
    expect_empty(response).await
}

/// `GET /api/v1/connections`.
pub async fn list_connections() -> Result<Vec<node_runtime::wire::ConnectionView>, ApiError> {
    get_json::<node_runtime::wire::ConnectionList>("/connections")
        .await
        .map(|l| l.connections)
}

/// `POST /api/v1/connections`.
pub async fn create_connection(
    name: &str,
    config: &node_runtime::connections::ConnectionConfig,
) -> Result<node_runtime::wire::ConnectionView, ApiError> {
    post_json(
        "/connections",
        &serde_json::json!({"name": name, "config": config}),
    )
    .await
}

/// `DELETE /api/v1/connections/{name}`.
pub async fn delete_connection(name: &str) -> Result<(), ApiError> {
    let response = request(
        gloo_net::http::Method::DELETE,
        &format!("/connections/{name}"),
    )
    .send()
    .await
    .map_err(|err| ApiError::Network(err.to_string()))?;
    expect_empty(response).await
}

/// `POST /api/v1/connections/{name}/test`.
pub async fn test_connection(
    name: &str,
) -> Result<node_runtime::wire::ConnectionTestResult, ApiError> {
    post_json(&format!("/connections/{name}/test"), &serde_json::json!({})).await
}

/// `POST /api/v1/connections/{name}/refresh`: an MCP server's tools
/// listed again (the server started if needed).
pub async fn refresh_connection(
    name: &str,
) -> Result<node_runtime::wire::ConnectionTestResult, ApiError> {
    post_json(
        &format!("/connections/{name}/refresh"),
        &serde_json::json!({}),
    )
    .await
}

/// `GET /api/v1/workflows/{id}`.
pub async fn get_workflow(id: &str) -> Result<WorkflowView, ApiError> {
    get_json(&format!("/workflows/{id}")).await
}

/// `PUT /api/v1/workflows/{id}`: a new revision on top of `base_revision`
/// (a stale base is refused with 409, `CONFLICT`).
pub async fn save_workflow(
    id: &str,
    base_revision: u64,
    workflow: &node_runtime::graph::Workflow,
) -> Result<WorkflowView, ApiError> {
    send_json(
        gloo_net::http::Method::PUT,
        &format!("/workflows/{id}"),
        &serde_json::json!({"base_revision": base_revision, "workflow": workflow}),
    )
    .await
}

/// `GET /api/v1/tools?include_deprecated=true`: every listable tool version,
/// with its workspace auth status.
pub async fn list_tools() -> Result<Vec<node_runtime::wire::ToolView>, ApiError> {
    get_json::<node_runtime::wire::ToolList>("/tools?include_deprecated=true")
        .await
        .map(|l| l.tools)
}

/// `POST /api/v1/workflows/template-variables`: the variables of each
/// template (see `templates`), in order.
pub async fn template_variables(
    templates: &[String],
) -> Result<Vec<node_runtime::graph::TemplateVariables>, ApiError> {
    post_json::<node_runtime::wire::TemplateVariablesAnswer>(
        "/workflows/template-variables",
        &serde_json::json!({ "templates": templates }),
    )
    .await
    .map(|a| a.variables.into_iter().map(|v| v.answer()).collect())
}

/// `POST /api/v1/workflows/validate`: the server's diagnostics for an
/// unsaved document.
pub async fn validate(
    workflow: &node_runtime::graph::Workflow,
) -> Result<Vec<node_runtime::graph::validate::Diagnostic>, ApiError> {
    post_json::<node_runtime::wire::Diagnostics>(
        "/workflows/validate",
        &serde_json::to_value(workflow).unwrap_or_default(),
    )
    .await
    .map(|d| d.diagnostics)
}

/// `GET /api/v1/runs/{id}/trace`: the run's stored spans.
pub async fn run_trace(run_id: &str) -> Result<Trace, ApiError> {
    get_json(&format!("/runs/{run_id}/trace")).await
}

/// `GET /api/v1/runs`: the newest runs, filtered by status and workflow
/// (empty strings for no filter).
pub async fn list_runs(
    status: &str,
    workflow_id: &str,
    cursor: Option<&str>,
) -> Result<node_runtime::wire::RunList, ApiError> {
    get_json(&format!(
        "/runs{}",
        crate::runs_view::list_query(status, workflow_id, cursor)
    ))
    .await
}

/// `GET /api/v1/runs/{id}`.
pub async fn get_run(id: &str) -> Result<RunDetail, ApiError> {
    get_json(&format!("/runs/{id}")).await
}

/// `POST /api/v1/runs/{id}/cancel`.
pub async fn cancel_run(id: &str) -> Result<RunCancelled, ApiError> {
    post_json(&format!("/runs/{id}/cancel"), &serde_json::json!({})).await
}

/// `POST /api/v1/runs`: starts a run of the saved workflow; its id.
pub async fn start_run(
    workflow_id: &str,
    inputs: &serde_json::Map<String, serde_json::Value>,
) -> Result<String, ApiError> {
    post_json::<node_runtime::wire::RunStarted>(
        "/runs",
        &serde_json::json!({"workflow_id": workflow_id, "inputs": inputs}),
    )
    .await
    .map(|s| s.run_id)
}

/// Follows `GET /api/v1/runs/{id}/events` from after event `after`
/// (`Last-Event-ID`), calling `on_event(seq, event)` for each, until the
/// server ends the stream (the run finished) or the connection drops (an
/// error: the caller reconnects from the last event it applied).
pub async fn follow_run(
    run_id: &str,
    after: i64,
    mut on_event: impl FnMut(i64, serde_json::Value),
) -> Result<(), ApiError> {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;
    use wasm_bindgen::JsCast;

    let response = request(
        gloo_net::http::Method::GET,
        &format!("/runs/{run_id}/events"),
    )
    .header("Accept", "text/event-stream")
    .header("Last-Event-ID", &after.to_string())
    .send()
    .await
    .map_err(|err| ApiError::Network(err.to_string()))?;
    let status = response.status();
    if !(200..300).contains(&status) {
        let text = response.text().await.unwrap_or_default();
        return decode::<serde_json::Value>(status, &text).map(|_| ());
    }
    let Some(body) = response.body() else {
        return Err(ApiError::Decode {
            status,
            message: "the event stream has no body".into(),
        });
    };
    let chunks = wasm_streams::ReadableStream::from_raw(body.unchecked_into())
        .into_stream()
        .map(|chunk| {
            chunk
                .map(|c| js_sys::Uint8Array::new(&c).to_vec())
                .map_err(|e| format!("{e:?}"))
        });
    let mut events = chunks.eventsource();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| ApiError::Network(e.to_string()))?;
        let seq = event.id.trim().parse::<i64>().unwrap_or(0);
        let value = serde_json::from_str(&event.data).unwrap_or(serde_json::Value::Null);
        on_event(seq, value);
    }
    Ok(())
}

/// Decides a pending write: `approve`, `deny` (a reason is required) or
/// `revise` (a note for the model is required).
pub async fn decide_approval(token: &str, decision: &str, text: &str) -> Result<(), ApiError> {
    let body = match decision {
        "deny" => serde_json::json!({"reason": text}),
        "revise" => serde_json::json!({"note": text}),
        _ => serde_json::json!({}),
    };
    post_json::<node_runtime::wire::ApprovalDecided>(
        &format!("/approvals/{token}/{decision}"),
        &body,
    )
    .await
    .map(|_| ())
}

/// `POST /api/v1/runs/{id}/replay`: a hermetic replay of a finished run.
pub async fn replay_run(id: &str) -> Result<ReplayOutcome, ApiError> {
    post_json(&format!("/runs/{id}/replay"), &serde_json::json!({})).await
}

/// `POST /api/v1/runs/{id}/fork`: the finished run `id` run again with
/// `request`'s changes, its recorded tool calls answered from it.
pub async fn fork_run(
    id: &str,
    request: &node_runtime::wire::ForkRequest,
) -> Result<node_runtime::wire::ForkStarted, ApiError> {
    post_json(
        &format!("/runs/{id}/fork"),
        &serde_json::to_value(request).unwrap_or_default(),
    )
    .await
}

/// `GET /api/v1/runs/{id}/diff/{other}`: the two runs' calls aligned per
/// node, and their outputs compared.
pub async fn run_diff(id: &str, other: &str) -> Result<node_runtime::wire::RunDiff, ApiError> {
    get_json(&format!("/runs/{id}/diff/{other}")).await
}

/// `DELETE` of `path`: nothing on success (204), the error body otherwise.
async fn delete(path: &str) -> Result<(), ApiError> {
    let response = request(gloo_net::http::Method::DELETE, path)
        .send()
        .await
        .map_err(|err| ApiError::Network(err.to_string()))?;
    expect_empty(response).await
}

/// `POST /api/v1/suites`: a new regression suite.
pub async fn create_suite(
    suite: &node_runtime::wire::NewSuite,
) -> Result<node_runtime::wire::SuiteView, ApiError> {
    post_json("/suites", &serde_json::to_value(suite).unwrap_or_default()).await
}

/// `GET /api/v1/suites`: the workspace's suites, each with its last run.
pub async fn list_suites() -> Result<Vec<node_runtime::wire::SuiteView>, ApiError> {
    get_json::<node_runtime::wire::SuiteList>("/suites")
        .await
        .map(|l| l.suites)
}

/// `GET /api/v1/suites?workflow_id=`: the suites of one workflow (a
/// run's Add to suite panel offers them).
pub async fn list_suites_of(
    workflow_id: &str,
) -> Result<Vec<node_runtime::wire::SuiteView>, ApiError> {
    get_json::<node_runtime::wire::SuiteList>(&format!(
        "/suites?workflow_id={}",
        js_sys::encode_uri_component(workflow_id)
    ))
    .await
    .map(|l| l.suites)
}

/// `POST /api/v1/suites/{id}/cases`: `case` appended to the suite by the
/// server, atomically (a concurrent append is not lost); 409 when the
/// suite has a case of its name, 422 naming the field (`case.…`).
pub async fn append_case(
    id: &str,
    case: &node_runtime::wire::SuiteCase,
) -> Result<node_runtime::wire::SuiteView, ApiError> {
    post_json(
        &format!("/suites/{id}/cases"),
        &serde_json::to_value(case).unwrap_or_default(),
    )
    .await
}

/// `GET /api/v1/suites/{id}`.
pub async fn get_suite(id: &str) -> Result<node_runtime::wire::SuiteView, ApiError> {
    get_json(&format!("/suites/{id}")).await
}

/// `PUT /api/v1/suites/{id}`: the whole suite replaced (name, cases,
/// options).
pub async fn save_suite(
    id: &str,
    suite: &node_runtime::wire::NewSuite,
) -> Result<node_runtime::wire::SuiteView, ApiError> {
    send_json(
        gloo_net::http::Method::PUT,
        &format!("/suites/{id}"),
        &serde_json::to_value(suite).unwrap_or_default(),
    )
    .await
}

/// `DELETE /api/v1/suites/{id}`.
pub async fn delete_suite(id: &str) -> Result<(), ApiError> {
    delete(&format!("/suites/{id}")).await
}

/// `POST /api/v1/suites/{id}/runs`: starts a suite run against `revision`
/// (the workflow's current one when `None`); it answers while running.
pub async fn run_suite(
    id: &str,
    revision: Option<u64>,
) -> Result<node_runtime::wire::SuiteRunView, ApiError> {
    post_json(
        &format!("/suites/{id}/runs"),
        &serde_json::to_value(node_runtime::wire::SuiteRunRequest { revision }).unwrap_or_default(),
    )
    .await
}

/// `GET /api/v1/suites/{id}/runs`: the suite's runs, newest first, without
/// their cases.
pub async fn list_suite_runs(id: &str) -> Result<Vec<node_runtime::wire::SuiteRunView>, ApiError> {
    get_json::<node_runtime::wire::SuiteRunList>(&format!("/suites/{id}/runs"))
        .await
        .map(|l| l.runs)
}

/// `GET /api/v1/suite-runs/{id}`: one suite run with each case's verdict.
pub async fn get_suite_run(id: &str) -> Result<node_runtime::wire::SuiteRunView, ApiError> {
    get_json(&format!("/suite-runs/{id}")).await
}

/// `POST /api/v1/replays`: replays an uploaded bundle (its JSON text).
pub async fn replay_bundle(text: &str) -> Result<ReplayOutcome, ApiError> {
    let bundle: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| ApiError::Invalid(format!("the bundle file is not JSON: {e}")))?;
    post_json("/replays", &bundle).await
}

/// `GET /api/v1/runs/{id}/bundle`: the run's replay bundle as JSON text.
pub async fn run_bundle(id: &str) -> Result<String, ApiError> {
    let value: serde_json::Value = get_json(&format!("/runs/{id}/bundle")).await?;
    Ok(serde_json::to_string_pretty(&value).unwrap_or_default())
}

/// `GET /api/v1/invocations` with the filters that are set (`status`,
/// `tool`, `since`, `run_id`, `call_id`, `cursor`; an empty value is left
/// out): a page of records without their payloads, newest first.
pub async fn list_invocations(
    filters: &[(&str, &str)],
    limit: u32,
) -> Result<node_runtime::wire::InvocationList, ApiError> {
    let mut query = vec![format!("limit={limit}")];
    for (k, v) in filters {
        if !v.trim().is_empty() {
            query.push(format!("{k}={}", js_sys::encode_uri_component(v.trim())));
        }
    }
    get_json(&format!("/invocations?{}", query.join("&"))).await
}

/// `GET /api/v1/invocations/{id}`: one record with its input and output.
pub async fn get_invocation(id: &str) -> Result<Invocation, ApiError> {
    get_json(&format!(
        "/invocations/{}",
        js_sys::encode_uri_component(id)
    ))
    .await
}

/// `GET /api/v1/blobs/{hash}`: a stored payload (a truncated output whole).
pub async fn blob(hash: &str) -> Result<serde_json::Value, ApiError> {
    get_json(&format!("/blobs/{}", js_sys::encode_uri_component(hash))).await
}

/// `GET /api/v1/approvals`: the pending writes of the workspace.
pub async fn pending_approvals() -> Result<Vec<Approval>, ApiError> {
    get_json::<node_runtime::wire::PendingApprovals>("/approvals")
        .await
        .map(|p| p.pending)
}

/// `GET /api/v1/workspaces`: the caller's workspaces and the one this
/// request acted in. A remembered workspace the caller no longer belongs
/// to (404) is forgotten and the list asked again.
pub async fn list_workspaces() -> Result<WorkspaceList, ApiError> {
    match get_json("/workspaces").await {
        Err(ApiError::Api { status: 404, .. }) if crate::session::workspace().is_some() => {
            crate::session::forget_workspace();
            get_json("/workspaces").await
        }
        other => other,
    }
}

/// `POST /api/v1/workspaces`: a new workspace; the caller is its admin.
pub async fn create_workspace(name: &str) -> Result<WorkspaceView, ApiError> {
    post_json("/workspaces", &serde_json::json!({ "name": name })).await
}

/// `PATCH /api/v1/workspace`: renames the current workspace.
pub async fn rename_workspace(name: &str) -> Result<WorkspaceView, ApiError> {
    send_json(
        gloo_net::http::Method::PATCH,
        "/workspace",
        &serde_json::json!({ "name": name }),
    )
    .await
}

/// `GET /api/v1/members`: the current workspace's members.
pub async fn list_members() -> Result<Vec<MemberView>, ApiError> {
    get_json::<node_runtime::wire::MemberList>("/members")
        .await
        .map(|l| l.members)
}

/// `PATCH /api/v1/members/{user_id}`: the member's new role.
pub async fn change_role(user_id: &str, role: Role) -> Result<(), ApiError> {
    let response = request(
        gloo_net::http::Method::PATCH,
        &format!("/members/{}", js_sys::encode_uri_component(user_id)),
    )
    .json(&RoleChange { role })
    .map_err(|err| ApiError::Network(err.to_string()))?
    .send()
    .await
    .map_err(|err| ApiError::Network(err.to_string()))?;
    expect_empty(response).await
}

/// `DELETE /api/v1/members/{user_id}`: the member leaves the workspace
/// (their sessions stop reaching it at once).
pub async fn remove_member(user_id: &str) -> Result<(), ApiError> {
    delete(&format!(
        "/members/{}",
        js_sys::encode_uri_component(user_id)
    ))
    .await
}

/// `GET /api/v1/invitations`: the workspace's invitations, newest first.
pub async fn list_invitations() -> Result<Vec<InvitationView>, ApiError> {
    get_json::<node_runtime::wire::InvitationList>("/invitations")
        .await
        .map(|l| l.invitations)
}

/// `POST /api/v1/invitations`: a one-time link for `role`, working
/// `hours` hours; its token is in this answer only.
pub async fn create_invitation(role: Role, hours: u32) -> Result<InvitationCreated, ApiError> {
    post_json(
        "/invitations",
        &serde_json::to_value(NewInvitation {
            role,
            expires_in_hours: Some(hours),
        })
        .unwrap_or_default(),
    )
    .await
}

/// `DELETE /api/v1/invitations/{id}`: the link stops working.
pub async fn revoke_invitation(id: &str) -> Result<(), ApiError> {
    delete(&format!(
        "/invitations/{}",
        js_sys::encode_uri_component(id)
    ))
    .await
}

/// `GET /api/v1/invite/{token}` (no sign-in needed): what the link offers.
pub async fn invitation_preview(token: &str) -> Result<InvitationPreview, ApiError> {
    let path = format!("/invite/{}", js_sys::encode_uri_component(token));
    answer(signed(gloo_net::http::Method::GET, &path), None).await
}

/// `POST /api/v1/invite/{token}/accept`: joins the link's workspace, as a
/// new user named `display_name` when not signed in; a new session.
pub async fn accept_invitation(
    token: &str,
    display_name: Option<&str>,
) -> Result<Session, ApiError> {
    let path = format!("/invite/{}/accept", js_sys::encode_uri_component(token));
    let body = InvitationAccept {
        display_name: display_name.map(str::to_string),
    };
    let body = serde_json::to_value(&body).map_err(|e| ApiError::Invalid(e.to_string()))?;
    answer(signed(gloo_net::http::Method::POST, &path), Some(&body)).await
}

/// `GET /api/v1/audit`: the newest page of the audit log, or the page
/// before the cursor `before`.
pub async fn list_audit(before: Option<&str>) -> Result<AuditList, ApiError> {
    match before {
        Some(cursor) => {
            get_json(&format!(
                "/audit?before={}",
                js_sys::encode_uri_component(cursor)
            ))
            .await
        }
        None => get_json("/audit").await,
    }
}

/// `GET /api/v1/health`.
pub async fn health() -> Result<Health, ApiError> {
    get_json("/health").await
}

/// `POST /api/v1/providers/test`: one cheap call to an Agent node's
/// provider, made by the server with the caller's secrets.
pub async fn test_provider(
    provider: &node_runtime::agent_config::ProviderConfig,
) -> Result<node_runtime::wire::ProviderTestResult, ApiError> {
    post_json(
        "/providers/test",
        &serde_json::json!({"provider": provider}),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_decodes_body() {
        let h: Health = decode(
            200,
            r#"{"status":"ok","version":"1.2.3","database":"sqlite","schema_version":1}"#,
        )
        .expect("decodes");
        assert_eq!(h.version, "1.2.3");
    }

    #[test]
    fn error_body_becomes_api_error() {
        let err = decode::<Health>(
            404,
            r#"{"error":{"code":"NOT_FOUND","message":"no such thing","details":null}}"#,
        )
        .expect_err("404");
        assert_eq!(
            err,
            ApiError::Api {
                status: 404,
                code: "NOT_FOUND".into(),
                message: "no such thing".into()
            }
        );
    }

    #[test]
    fn a_session_that_stopped_working_is_told_in_words() {
        let err = decode::<Health>(
            401,
            r#"{"error":{"code":"UNAUTHORIZED","message":"the token is invalid or expired","details":null}}"#,
        )
        .expect_err("401");
        assert!(err.to_string().starts_with(SESSION_ENDED), "{err}");
    }

    #[test]
    fn non_json_error_is_decode_error() {
        let err = decode::<Health>(502, "<html>bad gateway</html>").expect_err("502");
        assert!(matches!(err, ApiError::Decode { status: 502, .. }));
    }
}
