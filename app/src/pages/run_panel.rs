//! The editor's Run button and live run panel: a form for the workflow's
//! Input fields, then the run watched over its event stream. Each node's
//! state shows on the canvas (`data-run-state`); each Agent node's tool
//! timeline fills in as calls start and end, a row opens the call's
//! envelope, and once the run ends the node outputs (pins included) show.
//! A dropped connection resumes from the last event applied
//! (`Last-Event-ID`), so nothing is lost or shown twice; a stream that ends
//! without the run's last event asks the run itself, so a finished run is
//! never watched as running. Run is refused, naming the error, while the
//! workflow has errors; with unsaved changes it saves first; Cancel stops
//! a running run. A viewer sees Run off, with why.

use std::time::Duration;

use leptos::prelude::*;
use leptos_router::components::A;
use node_runtime::graph::validate::{Diagnostic, Severity};
use node_runtime::graph::NodeKind;
use serde_json::{Map, Value};

use crate::api;
use crate::editor::model::Editor;
use crate::editor::tools::ToolInfo;
use crate::live::LiveRun;

/// A run being watched: its id and what its events said so far.
pub type Watched = RwSignal<Option<(String, LiveRun)>>;

/// The Input nodes' fields: (name, schema type, the default as shown).
fn input_fields(editor: &Editor) -> Vec<(String, String, String)> {
    editor
        .doc
        .nodes
        .iter()
        .filter_map(|n| match &n.kind {
            NodeKind::Input(c) => c.schema["properties"].as_object().cloned(),
            _ => None,
        })
        .flatten()
        .map(|(name, prop)| {
            let default = match prop.get("default") {
                None => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
            };
            (
                name,
                prop["type"].as_str().unwrap_or("string").to_string(),
                default,
            )
        })
        .collect()
}

/// A run input from the form's text: strings as typed, anything else as
/// JSON; the error names the field.
pub fn input_value(name: &str, kind: &str, text: &str) -> Result<Value, String> {
    if kind == "string" {
        return Ok(Value::String(text.to_string()));
    }
    serde_json::from_str(text).map_err(|e| format!("{name}: not valid JSON ({e})"))
}

/// Follows the run's events into `watched` until it finishes, reconnecting
/// after a drop; `note` says when the connection is being re-established.
fn follow(
    run_id: String,
    watched: Watched,
    note: RwSignal<Option<String>>,
    done: impl Fn() + 'static,
) {
    leptos::task::spawn_local(async move {
        let mut attempt = 0u32;
        // Set once the run was found final and its stream read once more.
        let mut read_final = false;
        loop {
            // The page went away (or another run is watched): stop.
            let Some(Some(after)) = watched.try_with_untracked(|w| {
                w.as_ref()
                    .filter(|(id, _)| *id == run_id)
                    .map(|(_, l)| l.last_seq)
            }) else {
                return;
            };
            let result = api::follow_run(&run_id, after, |seq, event| {
                watched.update(|w| {
                    if let Some((id, live)) = w {
                        if *id == run_id {
                            live.apply(seq, &event);
                        }
                    }
                });
            })
            .await;
            let finished = watched
                .try_with_untracked(|w| w.as_ref().is_some_and(|(_, l)| l.finished.is_some()))
                .unwrap_or(true);
            if finished {
                note.set(None);
                done();
                return;
            }
            // The stream ended without the last event: the run may have
            // ended anyway (one recorded before it had events, or one
            // finished by another process while this one reconnected);
            // ask it. A final run's stream is read once more from the last
            // event applied, so what it did after the drop (a resumed
            // call's end) shows too; its status is taken as it stands only
            // when that read fails as well.
            if let Ok(d) = api::get_run(&run_id).await {
                if d.status.is_final() {
                    if !read_final {
                        read_final = true;
                        continue;
                    }
                    watched.update(|w| {
                        if let Some((id, live)) = w {
                            if *id == run_id {
                                live.finished = Some(d.status.to_string());
                                live.error = d.error.clone();
                            }
                        }
                    });
                    note.set(None);
                    done();
                    return;
                }
            }
            attempt += 1;
            let why = match result {
                Ok(()) => "the event stream ended early".to_string(),
                Err(e) => e.to_string(),
            };
            note.set(Some(format!(
                "Connection lost ({why}); reconnecting (attempt {attempt})…"
            )));
            sleep(Duration::from_millis(500 * u64::from(attempt.min(10)))).await;
        }
    });
}

/// Sleeps in the browser (a timeout wrapped in a future).
async fn sleep(d: Duration) {
    let (tx, rx) = futures::channel::oneshot::channel::<()>();
    set_timeout(
        move || {
            let _ = tx.send(());
        },
        d,
    );
    let _ = rx.await;
}

/// Follows a started run into `watched` (then its node results). It and
/// [`agent_timeline`] are the wasm module `live_run` (the event stream's
/// client, the event model, the timeline and the call drawer), fetched when
/// a run is first started: opening the editor does not wait for it.
#[leptos::wasm_split::wasm_split(live_run, wasm_split_path = ::leptos::wasm_split, fallible)]
#[allow(improper_ctypes_definitions)]
fn watch_run(
    run_id: String,
    watched: Watched,
    note: RwSignal<Option<String>>,
    problem: RwSignal<Option<String>>,
) -> Result<(), leptos::wasm_split::SplitLoaderError> {
    let id = run_id.clone();
    follow(run_id, watched, note, move || {
        let id = id.clone();
        leptos::task::spawn_local(async move {
            match api::get_run(&id).await {
                Ok(d) => watched.update(|w| {
                    if let Some((run, live)) = w {
                        if *run == id {
                            live.results = d.nodes.clone();
                        }
                    }
                }),
                Err(e) => problem.set(Some(e.to_string())),
            }
        });
    });
    Ok(())
}

/// An Agent node's live tool timeline, in a wasm module of its own (with
/// the call drawer), fetched when a run is first watched: opening the
/// editor does not wait for it.
#[leptos::wasm_split::wasm_split(live_run, wasm_split_path = ::leptos::wasm_split, fallible)]
#[allow(improper_ctypes_definitions)]
fn agent_timeline(
    agent: String,
    editor: RwSignal<Editor>,
    watched: Watched,
    tools: LocalResource<Result<Vec<ToolInfo>, api::ApiError>>,
) -> Result<AnyView, leptos::wasm_split::SplitLoaderError> {
    use crate::pages::timeline::AgentTimeline;
    Ok(
        view! { <AgentTimeline agent=agent editor=editor watched=watched tools=tools /> }
            .into_any(),
    )
}

/// The watched run's head: its id, state, failed calls and Cancel; in the
/// `live_run` module (with the event model), fetched when a run is first
/// watched: opening the editor does not wait for it.
#[leptos::wasm_split::wasm_split(live_run, wasm_split_path = ::leptos::wasm_split, fallible)]
#[allow(improper_ctypes_definitions)]
fn run_head(
    watched: Watched,
    problem: RwSignal<Option<String>>,
) -> Result<AnyView, leptos::wasm_split::SplitLoaderError> {
    let head = move || {
        let (run_id, live) = watched.get()?;
        let running = live.finished.is_none();
        let state = live.finished.clone().unwrap_or_else(|| "running".into());
        let failed_calls = live.failed_calls();
        let cancel_id = run_id.clone();
        let cancel = move |_| {
            let id = cancel_id.clone();
            leptos::task::spawn_local(async move {
                if let Err(e) = api::cancel_run(&id).await {
                    problem.set(Some(e.to_string()));
                }
            });
        };
        Some(view! {
            <div class="run-head">
                <strong>"Run "</strong>
                <A href=format!("/runs/{run_id}")><code data-testid="live-run-id">{run_id.clone()}</code></A>
                " " <span class=format!("badge run-status status-{state}") data-testid="live-run-state">{state.clone()}</span>
                {(failed_calls > 0).then(|| view! {
                    " " <span class="badge warn" data-testid="live-run-failed-calls">
                        {format!("{failed_calls} tool call{} failed or denied", if failed_calls == 1 { "" } else { "s" })}
                    </span>
                })}
                {running.then(|| view! { " " <button type="button" data-testid="cancel-run" on:click=cancel>"Cancel"</button> })}
            </div>
            {live.error.clone().map(|e| view! { <p class="error" role="alert" data-testid="live-run-error">{e}</p> })}
        })
    };
    Ok(view! { {head} }.into_any())
}

/// The watched run's node outputs once it ended, in the `live_run` module
/// (see [`run_head`]).
#[leptos::wasm_split::wasm_split(live_run, wasm_split_path = ::leptos::wasm_split, fallible)]
#[allow(improper_ctypes_definitions)]
fn run_outputs(watched: Watched) -> Result<AnyView, leptos::wasm_split::SplitLoaderError> {
    let node_outputs = move || {
        let nodes = watched.with(|w| w.as_ref().and_then(|(_, l)| l.results.clone()))?;
        let rows = crate::runs_view::node_results(Some(&nodes));
        Some(view! {
            <h3>"Node outputs"</h3>
            <table class="runs" data-testid="live-outputs">
                <tbody>
                    {rows.into_iter().map(|n| view! {
                        <tr data-node=n.node_id.clone()>
                            <td><strong>{n.node_id.clone()}</strong></td>
                            <td><pre class="json">{n.outputs.clone()}</pre></td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        })
    };
    Ok(view! { {node_outputs} }.into_any())
}

/// A pinned handle's "Materialize as node" ([`crate::pages::timeline::materialize_pin`]),
/// in the `live_run` module: only a watched run has a call to materialize,
/// so opening the editor does not fetch it.
#[leptos::wasm_split::wasm_split(live_run, wasm_split_path = ::leptos::wasm_split, fallible)]
#[allow(improper_ctypes_definitions)]
pub fn materialize_pin(
    editor: RwSignal<Editor>,
    tools: LocalResource<Result<Vec<ToolInfo>, api::ApiError>>,
    watched: Watched,
    agent: String,
    pin: String,
) -> Result<Result<(), String>, leptos::wasm_split::SplitLoaderError> {
    Ok(crate::pages::timeline::materialize_pin(
        editor, tools, watched, &agent, &pin,
    ))
}

/// The Run button, the input form and the live panel.
#[component]
pub fn RunPanel(
    editor: RwSignal<Editor>,
    workflow_id: String,
    watched: Watched,
    tools: LocalResource<Result<Vec<ToolInfo>, api::ApiError>>,
    /// The server's diagnostics of the document: Run is refused while it
    /// has an error.
    diagnostics: ReadSignal<Vec<Diagnostic>>,
) -> impl IntoView {
    let note = RwSignal::new(None::<String>);
    let problem = RwSignal::new(None::<String>);
    let values = RwSignal::new(Map::<String, Value>::new());
    let texts = StoredValue::new(std::collections::BTreeMap::<String, String>::new());
    let fields = Memo::new(move |_| editor.with(input_fields));
    let dirty = Memo::new(move |_| editor.with(Editor::is_dirty));
    // A viewer reads runs but starts none (the server refuses it too).
    let gate = crate::workspace::Gate::editor(crate::workspace::VIEWER_RUN_HINT);
    let run = move |_| {
        if gate.off() {
            return;
        }
        if let Some(d) = diagnostics
            .with_untracked(|ds| ds.iter().find(|d| d.severity == Severity::Error).cloned())
        {
            problem.set(Some(format!(
                "Not run: the workflow has an error at node `{}`: {}",
                d.node, d.message
            )));
            return;
        }
        let mut inputs = Map::new();
        for (name, kind, _) in fields.get_untracked() {
            let text = texts
                .with_value(|t| t.get(&name).cloned())
                .unwrap_or_default();
            if text.is_empty() {
                continue;
            }
            match input_value(&name, &kind, &text) {
                Ok(v) => {
                    inputs.insert(name, v);
                }
                Err(e) => {
                    problem.set(Some(e));
                    return;
                }
            }
        }
        values.set(inputs.clone());
        problem.set(None);
        let workflow_id = workflow_id.clone();
        leptos::task::spawn_local(async move {
            // A run uses the saved revision: unsaved changes are saved
            // first ("Save and run").
            if editor.with_untracked(Editor::is_dirty) {
                let (base, doc) = editor.with_untracked(|e| (e.saved_revision, e.doc.clone()));
                match api::save_workflow(&workflow_id, base, &doc).await {
                    Ok(saved) => editor.update(|e| e.mark_saved(saved.revision)),
                    Err(e) => {
                        problem.set(Some(format!(
                            "Not run: the changes could not be saved: {e}"
                        )));
                        return;
                    }
                }
            }
            match api::start_run(&workflow_id, &inputs).await {
                Ok(run_id) => {
                    watched.set(Some((run_id.clone(), LiveRun::default())));
                    if watch_run(run_id, watched, note, problem).await.is_err() {
                        problem.set(Some(
                            "The live view could not be loaded from the server; \
                             the run goes on: see it under Runs."
                                .into(),
                        ));
                    }
                }
                Err(e) => problem.set(Some(e.to_string())),
            }
        });
    };
    // A memo: the timelines below are rebuilt when the selected Agent
    // changes, not on every edit (a drag changes the editor each frame).
    let selected_agent = Memo::new(move |_| {
        editor.with(|e| {
            (e.selection.len() == 1)
                .then(|| e.selection.iter().next())
                .flatten()
                .filter(|id| matches!(e.node(id).map(|n| &n.kind), Some(NodeKind::Agent(_))))
                .cloned()
        })
    });
    // The run's head and, once it ended, its node outputs: drawn by the
    // `live_run` module, fetched when a run is first watched (see
    // `run_head`); the memo keeps them from being rebuilt on each event.
    let watching = Memo::new(move |_| watched.with(Option::is_some));
    let head = move || {
        watching.get().then(|| {
            Suspend::new(async move {
                // The module that cannot be fetched is the one `watch_run`
                // needs too: its failure is said in words as the problem
                // (once, not here again).
                run_head(watched, problem)
                    .await
                    .unwrap_or_else(|_| ().into_any())
            })
        })
    };
    // Every Agent node's timeline, unless one is selected: the inspector
    // then shows its own.
    let agents = Memo::new(move |_| {
        watched.with(|w| {
            w.as_ref()
                .map(|(run, l)| {
                    l.timeline
                        .keys()
                        .map(|a| (run.clone(), a.clone()))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
    });
    let timelines = move || {
        match selected_agent.get() {
        Some(agent) => view! {
            <p class="muted" data-testid="timeline-in-inspector">"The tool calls of " <strong>{agent}</strong> " are in the inspector."</p>
        }
        .into_any(),
        None => view! {
            <For each=move || agents.get() key=|a| a.clone() let:agent>
                // Its own boundary: while the module loads, only this
                // timeline waits (not the editor around it).
                <Suspense fallback=|| ()>
                    {Suspend::new(async move {
                        agent_timeline(agent.1, editor, watched, tools).await.unwrap_or_else(|_| view! {
                            <p class="error" role="alert">"The tool timeline could not be loaded from the server; reload the page to try again."</p>
                        }.into_any())
                    })}
                </Suspense>
            </For>
        }
        .into_any(),
    }
    };
    let node_outputs = move || {
        watching.get().then(|| {
            Suspend::new(async move {
                // A module that cannot be fetched is said once (see `head`).
                run_outputs(watched).await.unwrap_or_else(|_| ().into_any())
            })
        })
    };
    view! {
        <section class="run-panel" data-testid="run-panel">
            <form class="row" on:submit=move |ev: leptos::ev::SubmitEvent| { ev.prevent_default(); run(()); }>
                {move || fields.get().into_iter().map(|(name, kind, default)| {
                    let key = name.clone();
                    // Left empty, the field's default is used.
                    let hint = if default.is_empty() { kind } else { format!("{default} (default)") };
                    view! {
                        <label>{name.clone()} " "
                            <input type="text" data-run-input=name.clone() placeholder=hint
                                on:input=move |ev| { let v = event_target_value(&ev); texts.update_value(|t| { t.insert(key.clone(), v); }); } />
                        </label>
                    }
                }).collect_view()}
                <button type="submit" class="primary" data-testid="run" prop:disabled=move || gate.off()
                    title=move || gate.why()>
                    {move || if dirty.get() { "Save and run" } else { "Run" }}
                </button>
                {gate.hint()}
            </form>
            {move || problem.get().map(|p| view! { <p class="error" role="alert" data-testid="run-problem">{p}</p> })}
            {move || note.get().map(|n| view! { <p class="warn" role="status" data-testid="run-note">{n}</p> })}
            <Suspense fallback=|| ()>{head}</Suspense>
            {timelines}
            <Suspense fallback=|| ()>{node_outputs}</Suspense>
        </section>
    }
}
