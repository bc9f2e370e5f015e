//! The editor's Run button and live run panel: a form for the workflow's
//! Input fields, then the run watched over its event stream. Each node's
//! state shows on the canvas (`data-run-state`); each Agent node's tool
//! timeline fills in as calls start and end, a row opens the call's
//! envelope, and once the run ends the node outputs (pins included) show.
//! A dropped connection resumes from the last event applied
//! (`Last-Event-ID`), so nothing is lost or shown twice.

use std::time::Duration;

use leptos::prelude::*;
use leptos_router::components::A;
use node_runtime::graph::NodeKind;
use serde_json::{Map, Value};

use crate::api;
use crate::editor::model::{Edit, Editor};
use crate::editor::tools::ToolInfo;
use crate::live::{LiveRun, ToolRow};
use crate::widgets::approval_form;
use node_runtime::graph::materialize::Source;

/// A run being watched: its id and what its events said so far.
pub type Watched = RwSignal<Option<(String, LiveRun)>>;

/// The Input nodes' fields: (name, schema type).
fn input_fields(editor: &Editor) -> Vec<(String, String)> {
    editor
        .doc
        .nodes
        .iter()
        .filter_map(|n| match &n.kind {
            NodeKind::Input(c) => c.schema["properties"].as_object().cloned(),
            _ => None,
        })
        .flatten()
        .map(|(name, prop)| (name, prop["type"].as_str().unwrap_or("string").to_string()))
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

/// The Run button, the input form and the live panel.
#[component]
pub fn RunPanel(
    editor: RwSignal<Editor>,
    workflow_id: String,
    watched: Watched,
    tools: LocalResource<Result<Vec<ToolInfo>, api::ApiError>>,
) -> impl IntoView {
    let note = RwSignal::new(None::<String>);
    let problem = RwSignal::new(None::<String>);
    let values = RwSignal::new(Map::<String, Value>::new());
    let texts = StoredValue::new(std::collections::BTreeMap::<String, String>::new());
    let outputs = RwSignal::new(None::<Value>);
    let open = RwSignal::new(None::<ToolRow>);
    let fields = Memo::new(move |_| editor.with(input_fields));
    let run = move |_| {
        if editor.with_untracked(Editor::is_dirty) {
            problem.set(Some(
                "Save first: a run uses the saved revision of the workflow.".into(),
            ));
            return;
        }
        let mut inputs = Map::new();
        for (name, kind) in fields.get_untracked() {
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
        outputs.set(None);
        open.set(None);
        let workflow_id = workflow_id.clone();
        leptos::task::spawn_local(async move {
            match api::start_run(&workflow_id, &inputs).await {
                Ok(run_id) => {
                    watched.set(Some((run_id.clone(), LiveRun::default())));
                    let id = run_id.clone();
                    follow(run_id, watched, note, move || {
                        let id = id.clone();
                        leptos::task::spawn_local(async move {
                            match api::get_run(&id).await {
                                Ok(d) => outputs.set(Some(d.nodes)),
                                Err(e) => problem.set(Some(e.to_string())),
                            }
                        });
                    });
                }
                Err(e) => problem.set(Some(e.to_string())),
            }
        });
    };
    let selected_agent = move || {
        editor.with(|e| {
            e.selection
                .iter()
                .find(|id| matches!(e.node(id).map(|n| &n.kind), Some(NodeKind::Agent(_))))
                .cloned()
        })
    };
    let timeline = move || {
        let (run_id, live) = watched.get()?;
        let agents: Vec<String> = match selected_agent() {
            Some(a) => vec![a],
            None => live.timeline.keys().cloned().collect(),
        };
        let state = live.finished.clone().unwrap_or_else(|| "running".into());
        Some(view! {
            <div class="run-head">
                <strong>"Run "</strong>
                <A href=format!("/runs/{run_id}")><code data-testid="live-run-id">{run_id.clone()}</code></A>
                " " <span class=format!("badge run-status status-{state}") data-testid="live-run-state">{state.clone()}</span>
            </div>
            {agents.into_iter().map(|agent| {
                let rows = live.rows(&agent);
                // Materialize as node: the call becomes a Tool node beside
                // the agent, selected, and the graph is marked unsaved.
                let eject = {
                    let agent = agent.clone();
                    move |row: &ToolRow| {
                        let Some(envelope) = row.envelope.clone() else { return };
                        let scope = tools.with(|t| {
                            t.as_ref()
                                .and_then(|r| r.as_ref().ok())
                                .and_then(|list| list.iter().find(|t| t.reference == row.tool).and_then(crate::editor::tools::secret_scope))
                        });
                        let edit = Edit::Materialize {
                            agent: agent.clone(),
                            source: Source::CallId(envelope.call_id.clone()),
                            envelope: Box::new(envelope),
                            secret_scope: scope,
                        };
                        match editor.try_update(|e| e.apply(edit)).unwrap_or(Ok(None)) {
                            Ok(Some(id)) => editor.update(|e| {
                                e.selection.clear();
                                e.selection.insert(id);
                            }),
                            Ok(None) => {}
                            Err(e) => problem.set(Some(e.to_string())),
                        }
                    }
                };
                view! {
                    <h3>"Tool calls of " {agent.clone()}</h3>
                    {rows.is_empty().then(|| view! { <p class="muted">"No tool calls yet."</p> })}
                    <table class="timeline" data-testid="timeline" data-agent=agent.clone()>
                        <tbody>
                            {rows.into_iter().map(|r| {
                                let row = r.clone();
                                let (menu_row, button_row) = (r.clone(), r.clone());
                                let (menu_eject, button_eject) = (eject.clone(), eject.clone());
                                let ended = r.envelope.is_some();
                                view! {
                                    <tr data-call=r.call_id.clone() data-state=r.state.clone() class="timeline-row"
                                        tabindex="0" on:click=move |_| open.set(Some(row.clone()))
                                        on:contextmenu=move |ev| {
                                            if menu_row.envelope.is_some() {
                                                ev.prevent_default();
                                                menu_eject(&menu_row);
                                            }
                                        }>
                                        <td><code>{r.tool.clone()}</code></td>
                                        <td class=format!("state-{}", r.state.replace(' ', "-"))>{r.state.clone()}</td>
                                        <td class="num">{r.latency_ms.map(|l| format!("{l:.0} ms")).unwrap_or_default()}</td>
                                        <td>{r.cached.then(|| view! { <span class="badge">"cached"</span> })}
                                            {r.truncated.then(|| view! { <span class="badge warn">"truncated"</span> })}
                                            {r.error_code.clone().map(|c| view! { <span class="badge error" data-testid="call-error">{c}</span> })}</td>
                                        <td class="preview" data-testid="call-preview">{r.preview.clone()}</td>
                                        <td>{r.approval.clone().filter(|a| a.decision.is_none()).map(|a| approval_form(a, problem))}
                                            {ended.then(|| view! {
                                                <button type="button" class="link" data-testid="materialize" title="Eject this call into a Tool node beside the agent (also: right-click the row)"
                                                    on:click=move |ev| { ev.stop_propagation(); button_eject(&button_row); }>"Materialize as node"</button>
                                            })}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }
            }).collect_view()}
        })
    };
    let drawer = move || {
        open.get().map(|r| {
            let body = r
                .envelope
                .as_ref()
                .map(|e| serde_json::to_string_pretty(e).unwrap_or_default())
                .unwrap_or_else(|| "The call has not ended yet.".into());
            view! {
                <div class="drawer" data-testid="call-drawer">
                    <h3>{r.tool.clone()} " " <code>{r.call_id.clone()}</code></h3>
                    <p>"Status: " {r.state.clone()}</p>
                    <pre class="json">{body}</pre>
                    <button type="button" on:click=move |_| open.set(None)>"Close"</button>
                </div>
            }
        })
    };
    let node_outputs = move || {
        outputs.get().map(|nodes| {
            let rows = crate::runs_view::node_results(&nodes);
            view! {
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
            }
        })
    };
    view! {
        <section class="run-panel" data-testid="run-panel">
            <form class="row" on:submit=move |ev: leptos::ev::SubmitEvent| { ev.prevent_default(); run(()); }>
                {move || fields.get().into_iter().map(|(name, kind)| {
                    let key = name.clone();
                    view! {
                        <label>{name.clone()} " "
                            <input type="text" data-run-input=name.clone() placeholder=kind
                                on:input=move |ev| { let v = event_target_value(&ev); texts.update_value(|t| { t.insert(key.clone(), v); }); } />
                        </label>
                    }
                }).collect_view()}
                <button type="submit" class="primary" data-testid="run">"Run"</button>
            </form>
            {move || problem.get().map(|p| view! { <p class="error" role="alert" data-testid="run-problem">{p}</p> })}
            {move || note.get().map(|n| view! { <p class="warn" role="status" data-testid="run-note">{n}</p> })}
            {timeline}
            {drawer}
            {node_outputs}
        </section>
    }
}
