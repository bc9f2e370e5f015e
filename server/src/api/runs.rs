//! Runs: start (returns the id at once; the run proceeds in the
//! background), get, list with filters, cancel, and the event stream.
//!
//! `GET /runs/{id}/events` is Server-Sent Events: every event of the run in
//! order, the SSE `id` being its sequence number. A subscriber first gets
//! the stored events after `Last-Event-ID` (or `?after=`), then follows the
//! live run; events already sent are never repeated. The stream ends when
//! the run has ended.

use std::convert::Infallible;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::Json;
use futures::stream::{self, Stream, StreamExt};
use node_runtime::wire::{
    ReplayOutcome, RunCancelled, RunDetail, RunList, RunStarted, RunStatus, Trace,
};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::VecDeque;

use tokio::sync::broadcast;

use super::views;
use crate::auth::Caller;
use crate::error::{ApiJson, ApiPath, ApiQuery};
use crate::storage::{RunFilter, RunRow};
use crate::{ApiError, AppState};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(start, list))
        .routes(routes!(get_one))
        .routes(routes!(cancel))
        .routes(routes!(events))
        .routes(routes!(bundle))
        .routes(routes!(trace))
        .routes(routes!(replay_run))
        .routes(routes!(replay_upload))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartBody {
    workflow_id: String,
    #[serde(default)]
    inputs: Map<String, Value>,
}

#[utoipa::path(post, path = "/runs", extensions(("x-required-role" = json!("editor"))), tag = "runs", responses((status = 202, body = RunStarted, description = "the run id; the run proceeds in the background"), (status = 429, description = "the workspace has its maximum of runs in progress; `Retry-After` says when to try again")))]
async fn start(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<StartBody>,
) -> Result<(StatusCode, Json<RunStarted>), ApiError> {
    let row = state
        .db()
        .get_workflow(&caller.workspace_id, &body.workflow_id)
        .await?;
    let workflow = row.workflow()?;
    if let Err(running) = state.runs().may_start(&caller.workspace_id) {
        return Err(ApiError::TooManyRequests {
            message: format!(
                "this workspace has {running} runs in progress, its limit; start this one when one ends"
            ),
            retry_after_s: 5,
        });
    }
    let run_id = state
        .runs()
        .start(caller.secret_owner(), workflow, body.inputs, "api")
        .await?;
    let detail = json!({"kind": "run", "workflow_id": body.workflow_id});
    crate::audit::queue(state.runs(), &caller, "run.started", &run_id, detail);
    Ok((
        StatusCode::ACCEPTED,
        Json(RunStarted {
            run_id,
            status: RunStatus::Queued,
        }),
    ))
}

#[utoipa::path(get, path = "/runs/{id}", extensions(("x-required-role" = json!("viewer"))), tag = "runs", params(("id" = String, Path, description = "run id")), responses((status = 200, body = RunDetail, description = "status, node results and agent outputs")))]
async fn get_one(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<RunDetail>, ApiError> {
    let detail = crate::run_details::run_detail_of(state.db(), &caller.workspace_id, &id).await?;
    Ok(Json(detail))
}

#[derive(Deserialize)]
struct ListQuery {
    workflow_id: Option<String>,
    status: Option<String>,
    #[serde(default)]
    limit: i64,
    cursor: Option<String>,
}

#[utoipa::path(get, path = "/runs", extensions(("x-required-role" = json!("viewer"))), tag = "runs", params(("workflow_id" = Option<String>, Query), ("status" = Option<String>, Query), ("limit" = Option<i64>, Query, description = "page size: 50 unless asked, at most 200"), ("cursor" = Option<String>, Query, description = "a previous page's `next_cursor`")), responses((status = 200, body = RunList, description = "a page of runs, newest first"), (status = 400, description = "a cursor this server did not give")))]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<RunList>, ApiError> {
    let page = state
        .db()
        .list_runs(
            &caller.workspace_id,
            &RunFilter {
                cursor: views::cursor(q.cursor.as_deref())?,
                workflow_id: q.workflow_id,
                status: q.status,
                limit: q.limit,
            },
        )
        .await?;
    let runs = page
        .items
        .iter()
        .map(views::run_item)
        .collect::<Result<_, _>>()?;
    Ok(Json(RunList {
        runs,
        next_cursor: page.next.map(|c| c.encode()),
    }))
}

#[utoipa::path(post, path = "/runs/{id}/cancel", extensions(("x-required-role" = json!("editor"))), tag = "runs", params(("id" = String, Path, description = "run id")), responses((status = 200, body = RunCancelled, description = "cancellation requested")))]
async fn cancel(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<RunCancelled>, ApiError> {
    let run = state.db().get_run(&caller.workspace_id, &id).await?;
    let cancelled = state.runs().cancel_anywhere(&run).await?;
    Ok(Json(RunCancelled {
        status: run.status.parse()?,
        run_id: run.id,
        cancelled,
    }))
}

#[derive(Deserialize)]
struct EventsQuery {
    after: Option<i64>,
}

/// Follows a live run's broadcast after sequence number `last`, in order
/// and without repeats. Events are stored before they are broadcast, so a
/// subscriber that falls more than the channel's capacity behind refills
/// the gap from the store (`fetch(after)`) instead of losing events.
pub fn follow<T, F, Fut>(
    rx: broadcast::Receiver<(i64, T)>,
    last: i64,
    fetch: F,
) -> impl Stream<Item = (i64, T)>
where
    T: Clone,
    F: Fn(i64) -> Fut,
    Fut: std::future::Future<Output = Vec<(i64, T)>>,
{
    let state = (rx, last, VecDeque::<(i64, T)>::new(), fetch);
    stream::unfold(state, |(mut rx, mut last, mut pending, fetch)| async move {
        loop {
            if let Some((seq, value)) = pending.pop_front() {
                if seq > last {
                    last = seq;
                    return Some(((seq, value), (rx, last, pending, fetch)));
                }
                continue;
            }
            match rx.recv().await {
                Ok((seq, value)) if seq > last => {
                    last = seq;
                    return Some(((seq, value), (rx, last, pending, fetch)));
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => pending.extend(fetch(last).await),
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
}

/// The SSE event of a stored or live run event (its JSON text): named by
/// the event's `type`, or for an agent event by the inner event's.
fn sse_event(seq: i64, text: &str) -> Event {
    #[derive(Deserialize)]
    struct Tagged<'a> {
        #[serde(rename = "type", borrow)]
        kind: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow)]
        event: Option<Inner<'a>>,
    }
    #[derive(Deserialize)]
    struct Inner<'a> {
        #[serde(rename = "type", borrow)]
        kind: Option<std::borrow::Cow<'a, str>>,
    }
    let tagged = serde_json::from_str::<Tagged>(text).ok();
    let kind = match &tagged {
        Some(Tagged {
            kind: Some(k),
            event,
        }) if k == "Agent" => event
            .as_ref()
            .and_then(|e| e.kind.as_deref())
            .unwrap_or("Agent"),
        Some(Tagged { kind: Some(k), .. }) => k,
        _ => "event",
    };
    Event::default().id(seq.to_string()).event(kind).data(text)
}

#[utoipa::path(get, path = "/runs/{id}/events", extensions(("x-required-role" = json!("viewer"))), tag = "runs", params(("id" = String, Path, description = "run id"), ("after" = Option<i64>, Query)), responses((status = 200, body = node_runtime::graph::engine::WorkflowEvent, description = "Server-Sent Events, one run event (JSON) per `data`, the SSE `id` its sequence number; resume with Last-Event-ID", content_type = "text/event-stream"), (status = 429, description = "the workspace has its maximum of open event streams")))]
async fn events(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok())
        .or(q.after)
        .unwrap_or(0);
    let slot = state
        .runs()
        .stream_slot(&caller.workspace_id)
        .map_err(|open| ApiError::TooManyRequests {
            message: format!(
                "this workspace has {open} event streams open, its limit; close one or try again"
            ),
            retry_after_s: 5,
        })?;
    // Subscribe before reading the stored events, so nothing falls between.
    let live = state.runs().subscribe(&id);
    let stored = state
        .db()
        .events_after(&caller.workspace_id, &id, after)
        .await?;
    let last_stored = stored.last().map_or(after, |e| e.seq);
    let stored = stream::iter(stored.into_iter().map(|e| Ok(sse_event(e.seq, &e.event))));
    let live = match live {
        Some(rx) => {
            let store = state.db().clone();
            let ws = caller.workspace_id.clone();
            let run = id.clone();
            follow(rx, last_stored, move |after| {
                let (store, ws, run) = (store.clone(), ws.clone(), run.clone());
                async move {
                    store
                        .events_after(&ws, &run, after)
                        .await
                        .unwrap_or_default()
                        .into_iter()
                        .map(|e| (e.seq, std::sync::Arc::<str>::from(e.event)))
                        .collect()
                }
            })
            .map(|(seq, text)| Ok(sse_event(seq, &text)))
            .boxed()
        }
        // Executing on another instance (or not at all): read from the
        // table as other instances store it, to its end.
        None => state
            .runs()
            .follow_stored(&caller.workspace_id, &id, last_stored)
            .map(|(seq, text)| Ok(sse_event(seq, &text)))
            .boxed(),
    };
    // The slot is held by the stream and freed when the client goes.
    let events = stored.chain(live).map(move |e| {
        let _held = &slot;
        e
    });
    let events = while_member(state.db().clone(), caller, events);
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// How often a long event stream checks that its caller is still a member.
const MEMBERSHIP_RECHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// `events` until the caller is no longer a member of its workspace: a
/// member removed while following a run receives none of its later events
/// (checked before an event when the last check is older than
/// [`MEMBERSHIP_RECHECK`]).
fn while_member<S: Stream + Send + 'static>(
    store: crate::storage::Store,
    caller: Caller,
    events: S,
) -> impl Stream<Item = S::Item> {
    let mut checked = std::time::Instant::now();
    events.take_while(move |_| {
        let due = checked.elapsed() >= MEMBERSHIP_RECHECK;
        if due {
            checked = std::time::Instant::now();
        }
        let (store, user, ws) = (
            store.clone(),
            caller.user_id.clone(),
            caller.workspace_id.clone(),
        );
        async move {
            if !due {
                return true;
            }
            match store.memberships(&user).await {
                Ok(m) => m.iter().any(|(id, _, _)| *id == ws),
                // Fail closed, but say so: the client resumes from the
                // table with Last-Event-ID.
                Err(e) => {
                    tracing::warn!(user_id = %user, error = %e, "cannot check the caller's membership; their event stream ends");
                    false
                }
            }
        }
    })
}

fn replay_error(e: crate::runs::ReplayError) -> ApiError {
    match e {
        crate::runs::ReplayError::BadBundle(message) => {
            ApiError::unprocessable(message, Value::Null)
        }
        crate::runs::ReplayError::Store(e) => e.into(),
    }
}

async fn stored_record(state: &AppState, run: &RunRow) -> Result<Value, ApiError> {
    state
        .db()
        .run_record(run)
        .await?
        .ok_or_else(|| ApiError::Conflict {
            message: format!("run {} has no record yet (it has not finished)", run.id),
            details: Value::Null,
        })
}

#[utoipa::path(get, path = "/runs/{id}/trace", extensions(("x-required-role" = json!("viewer"))), tag = "runs", params(("id" = String, Path, description = "run id")), responses((status = 200, body = Trace, description = "the run's trace id and its stored spans (run -> node -> iteration -> model_call / tool_call) in start order, with durations")))]
async fn trace(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Trace>, ApiError> {
    let run = state.db().get_run(&caller.workspace_id, &id).await?;
    let spans = state.db().spans(&caller.workspace_id, &id).await?;
    Ok(Json(Trace {
        trace_id: run.trace_id.unwrap_or_else(|| crate::trace::trace_id(&id)),
        status: run.status.parse()?,
        run_id: run.id,
        spans: spans.into_iter().map(views::span).collect(),
    }))
}

#[utoipa::path(get, path = "/runs/{id}/bundle", extensions(("x-required-role" = json!("viewer"))), tag = "runs", params(("id" = String, Path, description = "run id")), responses((status = 200, body = serde_json::Value, description = "the run's replay bundle (its record: workflow, nodes, agent bundles)"), (status = 409, description = "the run has not finished")))]
async fn bundle(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let run = state.db().get_run(&caller.workspace_id, &id).await?;
    let record = stored_record(&state, &run).await?;
    let disposition = format!("attachment; filename=\"glassbox-run-{id}.json\"");
    Ok((
        [(axum::http::header::CONTENT_DISPOSITION, disposition)],
        Json(record),
    )
        .into_response())
}

#[utoipa::path(post, path = "/runs/{id}/replay", extensions(("x-required-role" = json!("editor"))), tag = "runs", params(("id" = String, Path, description = "run id")), responses((status = 200, body = ReplayOutcome, description = "match, or the first divergence; the replay is recorded as a run of kind replay")))]
async fn replay_run(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ReplayOutcome>, ApiError> {
    let run = state.db().get_run(&caller.workspace_id, &id).await?;
    let record = stored_record(&state, &run).await?;
    let outcome = state
        .runs()
        .replay_record(&caller.workspace_id, &record, Some(&id))
        .await
        .map_err(replay_error)?;
    audit_replay(&state, &caller, &outcome).await;
    Ok(Json(outcome))
}

#[utoipa::path(post, path = "/replays", extensions(("x-required-role" = json!("editor"))), tag = "runs", responses((status = 200, body = ReplayOutcome, description = "match, or the first divergence"), (status = 422, description = "the uploaded bundle is not usable")))]
async fn replay_upload(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(bundle): ApiJson<Value>,
) -> Result<Json<ReplayOutcome>, ApiError> {
    let outcome = state
        .runs()
        .replay_record(&caller.workspace_id, &bundle, None)
        .await
        .map_err(replay_error)?;
    audit_replay(&state, &caller, &outcome).await;
    Ok(Json(outcome))
}

/// "The caller started a replay" in the audit log.
async fn audit_replay(state: &AppState, caller: &Caller, outcome: &ReplayOutcome) {
    let detail = json!({"kind": "replay", "replay_of": outcome.replay_of});
    crate::audit::queue(state.runs(), caller, "run.started", &outcome.run_id, detail);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_lagging_subscriber_refills_from_the_store() {
        // Capacity 2: five events sent before the subscriber reads lag it.
        let (tx, rx) = broadcast::channel(2);
        let stored: Vec<(i64, Value)> = (1..=5).map(|i| (i, serde_json::json!({"n": i}))).collect();
        for e in &stored {
            tx.send(e.clone()).expect("send");
        }
        drop(tx);
        let fetched = stored.clone();
        let seen: Vec<i64> = follow(rx, 0, move |after| {
            let rows: Vec<(i64, Value)> = fetched
                .iter()
                .filter(|(s, _)| *s > after)
                .cloned()
                .collect();
            async move { rows }
        })
        .map(|(seq, _)| seq)
        .collect()
        .await;
        assert_eq!(
            seen,
            vec![1, 2, 3, 4, 5],
            "every event once, in order, none lost"
        );
    }
}
