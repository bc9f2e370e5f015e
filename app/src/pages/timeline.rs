//! An Agent node's live tool timeline (seed 003 §4.4): one row per call in
//! tool order with name@version, state, latency, cached, truncated, the
//! error code and a one-line preview; pending writes are decided inline; a
//! row opens the invocation drawer, which follows the call until it ends
//! (its state, then its record); a finished call can be materialized as
//! a Tool node (button or right-click). Once the run ends, the node's
//! outputs follow: the five fixed ones and each pinned handle's value.
//! The inspector shows it for the selected Agent node; the run panel for
//! every Agent node when none is selected.

use leptos::prelude::*;
use node_runtime::graph::materialize::Source;
use node_runtime::graph::NodeKind;
use serde_json::Value;

use crate::api;
use crate::call_view::CallFacts;
use crate::editor::model::{Edit, Editor};
use crate::editor::tools::{secret_scope, ToolInfo};
use crate::live::ToolRow;
use crate::pages::call_drawer::{json_tree, CallDrawer};
use crate::pages::run_panel::Watched;
use crate::widgets::approval_form;

/// The tools as the registry lists them (for side effects and secret scope).
pub type Registry = LocalResource<Result<Vec<ToolInfo>, api::ApiError>>;

/// Reads the registry's entry for `name@version`, when it is loaded and
/// lists it.
pub fn with_tool<R>(
    tools: Registry,
    reference: &str,
    read: impl FnOnce(&ToolInfo) -> R,
) -> Option<R> {
    tools.with_untracked(|t| {
        t.as_ref()
            .and_then(|r| r.as_ref().ok())
            .and_then(|list| list.iter().find(|t| t.reference == reference))
            .map(read)
    })
}

/// Materialize as node: the call (or the pin's call) becomes a Tool node
/// beside the agent, selected, and the graph is marked unsaved.
pub fn materialize(
    editor: RwSignal<Editor>,
    tools: Registry,
    agent: &str,
    source: Source,
    envelope: node_runtime::envelope::ToolEnvelope,
) -> Result<(), String> {
    let scope = with_tool(tools, &envelope.tool_ref(), secret_scope).flatten();
    let edit = Edit::Materialize {
        agent: agent.to_string(),
        source,
        envelope: Box::new(envelope),
        secret_scope: scope,
    };
    match editor.try_update(|e| e.apply(edit)).unwrap_or(Ok(None)) {
        Ok(Some(id)) => {
            editor.update(|e| {
                e.clear_selection();
                e.selection.insert(id);
            });
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Materialize as node from a pinned handle: the call the pin selected in
/// the finished run becomes a Tool node, and the pin's edges move to it.
pub fn materialize_pin(
    editor: RwSignal<Editor>,
    tools: Registry,
    watched: Watched,
    agent: &str,
    pin_name: &str,
) -> Result<(), String> {
    let pin = editor
        .with_untracked(|e| match e.node(agent).map(|n| &n.kind) {
            Some(NodeKind::Agent(c)) => c.pins.iter().find(|p| p.name == pin_name).cloned(),
            _ => None,
        })
        .ok_or_else(|| format!("`{pin_name}` is not a pinned handle of {agent}."))?;
    let call = watched
        .with_untracked(|w| w.as_ref().and_then(|(_, l)| l.pin_call(agent, &pin)))
        .ok_or_else(|| {
            format!("Nothing to materialize yet: run the workflow until the pin `{pin_name}` has selected a call.")
        })?;
    materialize(
        editor,
        tools,
        agent,
        Source::Pin(pin_name.to_string()),
        call,
    )
}

/// The drawer's facts of a row: its envelope, then the invocation record
/// (approval, cost, lifecycle status) once fetched. `asked` counts the
/// fetches: a record that comes back after a newer fetch began is not
/// shown (it may hold an older status). A record that cannot be read is
/// said in `problem`.
fn open_drawer(
    row: ToolRow,
    run_id: String,
    tools: Registry,
    open: RwSignal<Option<CallFacts>>,
    asked: StoredValue<u64>,
    problem: RwSignal<Option<String>>,
) {
    let Some(envelope) = row.envelope.as_ref() else {
        open.set(Some(CallFacts {
            tool: row.tool.clone(),
            call_id: row.call_id.clone(),
            status: row.state.clone(),
            ..CallFacts::default()
        }));
        return;
    };
    let mut facts = CallFacts::from_envelope(envelope, &row.state);
    facts.side_effects = with_tool(tools, &facts.tool, |t| t.side_effects.to_string());
    open.set(Some(facts.clone()));
    let call_id = row.call_id;
    asked.update_value(|n| *n += 1);
    let this = asked.get_value();
    leptos::task::spawn_local(async move {
        let listed = api::list_invocations(&[("run_id", &run_id), ("call_id", &call_id)], 1).await;
        if asked.get_value() != this {
            return;
        }
        match listed {
            Ok(page) => {
                if let Some(record) = page.invocations.first() {
                    open.update(|o| {
                        if let Some(f) = o.as_mut().filter(|f| f.call_id == call_id) {
                            *f = f.clone().with_record(record);
                        }
                    });
                }
            }
            Err(e) => problem.set(Some(format!(
                "Cannot read the record of call {call_id}: {e}"
            ))),
        }
    });
}

/// The timeline, drawer and outputs of one Agent node in the watched run.
#[component]
pub fn AgentTimeline(
    agent: String,
    editor: RwSignal<Editor>,
    watched: Watched,
    tools: Registry,
) -> impl IntoView {
    let problem = RwSignal::new(None::<String>);
    // The drawer: the call it shows (`opened`) and that call's facts
    // (`open`), which follow its row (see below).
    let opened = RwSignal::new(None::<String>);
    let open = RwSignal::new(None::<CallFacts>);
    let asked = StoredValue::new(0u64);
    let table_agent = agent.clone();
    let table = move || {
        let (_, live) = watched.get()?;
        let agent = table_agent.clone();
        let rows = live.rows(&agent);
        let model = live.models.get(&agent).cloned();
        Some(view! {
            {model.map(|m| view! {
                <p class="muted" data-testid="model-usage">{m.summary()}</p>
                {(!m.writing.is_empty()).then(|| view! {
                    <p class="streaming" data-testid="model-writing" aria-live="polite">{m.writing.clone()}</p>
                })}
            })}
            {rows.is_empty().then(|| view! { <p class="muted">"No tool calls yet."</p> })}
            <table class="timeline" data-testid="timeline" data-agent=agent.clone()>
                <tbody>
                    {rows.into_iter().map(|r| {
                        let opens = r.call_id.clone();
                        let (menu_row, button_row) = (r.clone(), r.clone());
                        let (menu_agent, button_agent) = (agent.clone(), agent.clone());
                        let ended = r.envelope.is_some();
                        let eject = move |agent: &str, row: &ToolRow| {
                            let Some(envelope) = row.envelope.clone() else { return };
                            let source = Source::CallId(envelope.call_id.clone());
                            if let Err(e) = materialize(editor, tools, agent, source, envelope) {
                                problem.set(Some(e));
                            }
                        };
                        view! {
                            <tr data-call=r.call_id.clone() data-state=r.state.clone() class="timeline-row"
                                tabindex="0" on:click=move |_| opened.set(Some(opens.clone()))
                                on:contextmenu=move |ev| {
                                    if menu_row.envelope.is_some() {
                                        ev.prevent_default();
                                        eject(&menu_agent, &menu_row);
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
                                            on:click=move |ev| { ev.stop_propagation(); eject(&button_agent, &button_row); }>"Materialize as node"</button>
                                    })}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        })
    };
    let outputs_agent = agent.clone();
    let outputs = move || {
        let outputs = watched.with(|w| {
            w.as_ref()
                .and_then(|(_, l)| l.results.as_ref())
                .and_then(|r| r.get(&outputs_agent))
                .map(|n| {
                    n.outputs
                        .clone()
                        .into_iter()
                        .collect::<serde_json::Map<String, Value>>()
                })
        })?;
        let pins: Vec<String> =
            editor.with_untracked(|e| match e.node(&outputs_agent).map(|n| &n.kind) {
                Some(NodeKind::Agent(c)) => c.pins.iter().map(|p| p.name.clone()).collect(),
                _ => Vec::new(),
            });
        let agent = outputs_agent.clone();
        Some(view! {
            <h4>"Outputs"</h4>
            <dl class="facts" data-testid="agent-outputs" data-agent=agent.clone()>
                {outputs.into_iter().map(|(handle, value)| {
                    let pin = pins.contains(&handle).then(|| {
                        let (agent, name) = (agent.clone(), handle.clone());
                        view! {
                            " " <button type="button" class="link" data-testid="materialize-pin" data-pin=handle.clone()
                                title="Eject the call this pin selected into a Tool node; the pin's edges move to it"
                                on:click=move |_| {
                                    if let Err(e) = materialize_pin(editor, tools, watched, &agent, &name) {
                                        problem.set(Some(e));
                                    }
                                }>"Materialize as node"</button>
                        }
                    });
                    // The trace page is a link, not a string to copy.
                    let shown = match (&value, handle.as_str()) {
                        (Value::String(url), "traces_url") => view! {
                            <a href=url.clone() data-testid="traces-link">{url.clone()}</a>
                        }.into_any(),
                        _ => json_tree(&value, 1),
                    };
                    view! {
                        <dt data-handle=handle.clone()>{handle.clone()}{pin}</dt>
                        <dd data-handle-value=handle>{shown}</dd>
                    }
                }).collect_view()}
            </dl>
        })
    };
    // The node's label (its id when it has none).
    let heading = {
        let agent = agent.clone();
        Memo::new(move |_| {
            editor.with(|e| {
                e.node(&agent)
                    .map(|n| n.label.clone())
                    .filter(|l| !l.trim().is_empty())
                    .unwrap_or_else(|| agent.clone())
            })
        })
    };
    // A new run starts with the drawer closed.
    let run_id = Memo::new(move |_| watched.with(|w| w.as_ref().map(|(id, _)| id.clone())));
    Effect::new(move |_| {
        run_id.track();
        opened.set(None);
    });
    // The drawer follows its row: it shows the row when opened and again
    // whenever the call's state changes (it ends, its approval is
    // decided), then the call's record, read again each time.
    let followed = {
        let agent = agent.clone();
        Memo::new(move |_| {
            let call = opened.get()?;
            watched.with(|w| {
                let (run, live) = w.as_ref()?;
                let row = live
                    .timeline
                    .get(&agent)?
                    .iter()
                    .find(|r| r.call_id == call)?;
                Some((run.clone(), call, row.state.clone(), row.envelope.is_some()))
            })
        })
    };
    let follow_agent = agent.clone();
    Effect::new(move |_| {
        let Some((run, call, ..)) = followed.get() else {
            open.set(None);
            return;
        };
        let row = watched.with_untracked(|w| {
            let (_, live) = w.as_ref()?;
            live.timeline
                .get(&follow_agent)?
                .iter()
                .find(|r| r.call_id == call)
                .cloned()
        });
        if let Some(row) = row {
            open_drawer(row, run, tools, open, asked, problem);
        }
    });
    view! {
        <Show when=move || run_id.with(Option::is_some)>
            <div class="agent-timeline">
                <h3>"Tool calls of " {move || heading.get()}</h3>
                {move || problem.get().map(|p| view! { <p class="error" role="alert" data-testid="run-problem">{p}</p> })}
                {table.clone()}
                {move || open.get().map(|facts| view! { <CallDrawer facts=facts close=move |()| opened.set(None) /> })}
                {outputs.clone()}
            </div>
        </Show>
    }
}
