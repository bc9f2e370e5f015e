//! The editor's configuration panel for the one selected node: its label,
//! for an Agent node the prompts, model settings, tool selector (search,
//! category, "show deprecated", badges, enable toggles, Pin) and pinned
//! handles, for a Tool node its tool and fields, and the other kinds'
//! panels (`node_panels`).

use leptos::prelude::*;
use node_runtime::graph::validate::{Diagnostic, Severity};
use node_runtime::graph::{AgentNodeConfig, HandleRef, NodeKind, ToolNodeConfig};

use crate::editor::model::{connect_targets, Edit, Editor};
use crate::editor::tools::{self, Control, ToolInfo};
use crate::pages::node_panels;
use crate::pages::run_panel::Watched;
use crate::pages::timeline::AgentTimeline;
use crate::widgets::{tool_badges, ToolFilters};

/// The config of node `id` if it is an Agent node.
pub(super) fn agent_of(e: &Editor, id: &str) -> Option<AgentNodeConfig> {
    match e.node(id).map(|n| &n.kind) {
        Some(NodeKind::Agent(c)) => Some(c.clone()),
        _ => None,
    }
}

/// The config of node `id` if it is a Tool node.
fn tool_of(e: &Editor, id: &str) -> Option<ToolNodeConfig> {
    match e.node(id).map(|n| &n.kind) {
        Some(NodeKind::Tool(c)) => Some(c.clone()),
        _ => None,
    }
}

/// Replaces a node's kind and config as one edit.
pub(super) fn set_kind(editor: RwSignal<Editor>, node: &str, kind: NodeKind) {
    editor.update(|e| {
        let _ = e.apply(Edit::SetKind {
            node: node.to_string(),
            kind: Box::new(kind),
        });
    });
}

/// Applies a change to the selected Agent node's config as one edit.
pub(super) fn edit_agent(
    editor: RwSignal<Editor>,
    node: &str,
    change: impl FnOnce(&mut AgentNodeConfig),
) {
    if let Some(mut config) = editor.with_untracked(|e| agent_of(e, node)) {
        change(&mut config);
        set_kind(editor, node, NodeKind::Agent(config));
    }
}

/// Applies a change to the selected Tool node's config as one edit.
fn edit_tool(editor: RwSignal<Editor>, node: &str, change: impl FnOnce(&mut ToolNodeConfig)) {
    if let Some(mut config) = editor.with_untracked(|e| tool_of(e, node)) {
        change(&mut config);
        set_kind(editor, node, NodeKind::Tool(config));
    }
}

/// The Agent node's pinned handles: each one's name, tool, strategy (and
/// call id), on-missing behaviour and path, checked as they change. A
/// refused value is named below the list and changes nothing, and the
/// field keeps what was typed so it can be corrected.
fn pin_rows(editor: RwSignal<Editor>, id: String) -> impl IntoView {
    use tools::{PIN_ON_MISSING, PIN_STRATEGIES};
    let problem = RwSignal::new(None::<String>);
    let report = move |result: Result<(), String>| problem.set(result.err());
    let rows = move || {
        let Some(config) = editor.with(|e| agent_of(e, &id)) else {
            return ().into_any();
        };
        if config.pins.is_empty() {
            return view! { <p class="muted">"No pins yet: the Pin button on a tool adds an output handle carrying that tool's result."</p> }.into_any();
        }
        let enabled: Vec<String> = config
            .tools
            .iter()
            .filter(|t| t.enabled)
            .map(|t| t.tool.split('@').next().unwrap_or_default().to_string())
            .collect();
        let mut tool_names: Vec<String> = config
            .tools
            .iter()
            .map(|t| t.tool.split('@').next().unwrap_or_default().to_string())
            .chain(config.pins.iter().map(|p| p.selector.tool.clone()))
            .collect();
        tool_names.sort();
        tool_names.dedup();
        view! {
            <ul class="pins" data-testid="pins">
                {config.pins.iter().map(|p| {
                    let pin = p.name.clone();
                    let strategy = serde_json::to_value(p.selector.strategy).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
                    let on_missing = serde_json::to_value(p.on_missing).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
                    let disabled = !enabled.contains(&p.selector.tool);
                    let by_call = p.selector.strategy == node_runtime::graph::PinStrategy::ByCallId;
                    // One change handler per field: pin settings go through
                    // the checked setter, a new name through RenamePin.
                    let field = {
                        let (id, pin) = (id.clone(), pin.clone());
                        move |name: &'static str| {
                            let (id, pin) = (id.clone(), pin.clone());
                            move |ev: leptos::ev::Event| {
                                let text = event_target_value(&ev);
                                let Some(mut next) = editor.with_untracked(|e| agent_of(e, &id)) else { return };
                                let checked = tools::set_pin_field(&mut next, &pin, name, &text);
                                if checked.is_ok() {
                                    edit_agent(editor, &id, |c| *c = next);
                                }
                                report(checked.map_err(|e| format!("Pin `{pin}`: {e}")));
                            }
                        }
                    };
                    let rename = {
                        let (id, pin) = (id.clone(), pin.clone());
                        move |ev: leptos::ev::Event| {
                            let to = event_target_value(&ev).trim().to_string();
                            // Untracked first: a refused name must not
                            // redraw the rows (and lose what was typed).
                            let result = editor
                                .try_update_untracked(|e| e.apply(Edit::RenamePin { node: id.clone(), from: pin.clone(), to }))
                                .unwrap_or(Ok(None));
                            if result.is_ok() {
                                editor.notify();
                            }
                            report(result.map(|_| ()).map_err(|e| format!("Pin `{pin}`: {e}")));
                        }
                    };
                    let remove = {
                        let (id, pin) = (id.clone(), pin.clone());
                        move |_| edit_agent(editor, &id, |c| c.pins.retain(|x| x.name != pin))
                    };
                    let options = |choices: &'static [(&'static str, &'static str)], current: String| {
                        choices.iter().map(move |(v, label)| view! { <option value=*v selected=*v == current>{*label}</option> }).collect_view()
                    };
                    let current_tool = p.selector.tool.clone();
                    view! {
                        <li class="pin-row" data-pin=pin.clone()>
                            <label class="field">"Handle name"
                                <input type="text" data-pin-field="name" prop:value=pin.clone() on:change=rename />
                            </label>
                            {disabled.then(|| view! {
                                <span class="badge warn" data-testid="pin-disabled" title="The pin and its edges stay; it outputs its on-missing value">
                                    {format!("{} is not enabled", p.selector.tool)}
                                </span>
                            })}
                            <label class="field">"Tool"
                                <select data-pin-field="tool" on:change=field("tool")>
                                    {tool_names.iter().map(|t| view! { <option value=t.clone() selected=*t == current_tool>{t.clone()}</option> }).collect_view()}
                                </select>
                            </label>
                            <label class="field">"Which call"
                                <select data-pin-field="strategy" on:change=field("strategy")>{options(&PIN_STRATEGIES, strategy)}</select>
                            </label>
                            {by_call.then(|| view! {
                                <label class="field">"Call id"
                                    <input type="text" data-pin-field="call_id" prop:value=p.selector.call_id.clone().unwrap_or_default() on:change=field("call_id") />
                                </label>
                            })}
                            <label class="field">"When there is no such call"
                                <select data-pin-field="on_missing" on:change=field("on_missing")>{options(&PIN_ON_MISSING, on_missing)}</select>
                            </label>
                            <label class="field">"Path in the result (JSON Pointer; empty: all of it)"
                                <input type="text" data-pin-field="path" placeholder="/items/0" prop:value=p.path.clone().unwrap_or_default() on:change=field("path") />
                            </label>
                            <button type="button" data-testid="pin-remove" on:click=remove>"Remove pin"</button>
                        </li>
                    }
                }).collect_view()}
            </ul>
        }.into_any()
    };
    view! {
        {rows}
        {move || problem.get().map(|p| view! { <p class="error" role="alert" data-testid="pin-error">{p}</p> })}
    }
}

/// A Tool node's panel: which tool@version, and one row per input field,
/// fixed (edited here) or wired (an input handle on the node).
fn tool_panel(
    editor: RwSignal<Editor>,
    tools: LocalResource<Result<Vec<ToolInfo>, crate::api::ApiError>>,
    diagnostics: ReadSignal<Vec<Diagnostic>>,
    id: String,
) -> impl IntoView {
    let problem = RwSignal::new(None::<String>);
    move || {
        let list = match tools.get() {
            Some(Ok(list)) => list,
            Some(Err(e)) => {
                return view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any()
            }
            None => return view! { <p class="muted">"Loading tools…"</p> }.into_any(),
        };
        let Some(config) = editor.with(|e| tool_of(e, &id)) else {
            return ().into_any();
        };
        let schema = list
            .iter()
            .find(|t| t.reference == config.tool)
            .map(|t| t.input_schema.clone())
            .unwrap_or_default();
        let rows = tools::field_rows(&schema, &config);
        let choose_id = id.clone();
        let schemas: Vec<(String, serde_json::Value)> = list
            .iter()
            .map(|t| (t.reference.clone(), t.input_schema.clone()))
            .collect();
        // Another tool: only its own fields stay.
        let choose = move |ev: leptos::ev::Event| {
            let reference = event_target_value(&ev);
            let schema = schemas
                .iter()
                .find(|(r, _)| *r == reference)
                .map(|(_, s)| s.clone())
                .unwrap_or_default();
            problem.set(None);
            edit_tool(editor, &choose_id, |c| {
                crate::editor::nodes::switch_tool(c, &reference, &schema)
            });
        };
        let options = list
            .iter()
            .filter(|t| t.lifecycle != node_runtime::tool_spec::Lifecycle::Blocked)
            .map(|t| {
                let label = if t.lifecycle == node_runtime::tool_spec::Lifecycle::Deprecated { format!("{} (deprecated)", t.reference) } else { t.reference.clone() };
                view! { <option value=t.reference.clone() selected=t.reference == config.tool>{label}</option> }
            })
            .collect_view();
        let fields = rows
            .into_iter()
            .map(|row| {
                let (wire_id, text_id) = (id.clone(), id.clone());
                let (wire_row, text_row) = (row.clone(), row.clone());
                // A refused value changes nothing (so the field keeps what
                // was typed) and is named above the fields.
                let set_text = move |ev: leptos::ev::Event| {
                    let text = event_target_value(&ev);
                    let Some(mut next) = editor.with_untracked(|e| tool_of(e, &text_id)) else { return };
                    let outcome = tools::set_field(&mut next, &text_row, false, &text);
                    if outcome.is_ok() {
                        edit_tool(editor, &text_id, |c| *c = next);
                    }
                    problem.set(outcome.err());
                };
                let text = row.text.clone();
                let unset = move |current: &str| view! { <option value="" selected=current.is_empty()>"(unset)"</option> };
                let control = match &row.control {
                    Control::Text => view! {
                        <input type="text" data-testid="field-value" prop:value=text on:change=set_text />
                    }.into_any(),
                    Control::Number { integer } => view! {
                        <input type="number" step=if *integer { "1" } else { "any" } data-testid="field-value"
                            prop:value=text on:change=set_text />
                    }.into_any(),
                    Control::Toggle => view! {
                        <select data-testid="field-value" on:change=set_text>
                            {unset(&text)}
                            <option value="true" selected=text == "true">"true"</option>
                            <option value="false" selected=text == "false">"false"</option>
                        </select>
                    }.into_any(),
                    Control::Choice(choices) => view! {
                        <select data-testid="field-value" on:change=set_text>
                            {unset(&text)}
                            {choices.iter().map(|(v, label)| view! { <option value=v.clone() selected=*v == text>{label.clone()}</option> }).collect_view()}
                        </select>
                    }.into_any(),
                    Control::Json => view! {
                        <textarea data-testid="field-value" rows="3" placeholder="JSON" prop:value=text on:change=set_text></textarea>
                    }.into_any(),
                };
                view! {
                    <div class="field-row" data-field=row.name.clone()>
                        <label>
                            <code>{row.name.clone()}</code>{row.required.then_some(" *")}
                            " " <span class="muted">{row.kind.clone()}</span>
                        </label>
                        <label class="wired">
                            <input type="checkbox" data-testid="field-wired" prop:checked=row.wired
                                on:change=move |ev| {
                                    let wired = event_target_checked(&ev);
                                    edit_tool(editor, &wire_id, |c| {
                                        let _ = tools::set_field(c, &wire_row, wired, "");
                                    });
                                } />
                            " wired"
                        </label>
                        {(!row.wired).then_some(control)}
                        {(!row.description.is_empty()).then(|| view! { <p class="muted help">{row.description.clone()}</p> })}
                        {
                            let (node, field) = (id.clone(), row.name.clone());
                            move || diagnostics.with(|all| {
                                all.iter()
                                    .filter(|d| d.node == node && d.handle.as_deref() == Some(field.as_str()))
                                    .map(|d| view! { <p class=if d.severity == Severity::Error { "error" } else { "warn" } data-testid="field-diagnostic">{d.message.clone()}</p> })
                                    .collect_view()
                            })
                        }
                    </div>
                }
            })
            .collect_view();
        view! {
            <label class="field">"Tool"
                <select data-testid="tool-ref" on:change=choose>{options}</select>
            </label>
            <h3>"Inputs"</h3>
            {move || problem.get().map(|p| view! { <p class="error" role="alert" data-testid="field-error">{p}</p> })}
            {fields}
        }
        .into_any()
    }
}

/// Wiring without a mouse: pick one of the node's outputs and one of the
/// inputs that take it, then Connect (one edit, undoable like a drag).
fn connect_form(editor: RwSignal<Editor>, id: String) -> impl IntoView {
    let output = RwSignal::new(String::new());
    let target = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);
    // The node's outputs as a memo: a drag (which changes positions only)
    // does not redraw the form.
    let outputs = {
        let id = id.clone();
        Memo::new(move |_| editor.with(|e| e.node(&id).map(|n| n.outputs()).unwrap_or_default()))
    };
    let source = {
        let id = id.clone();
        move || {
            let chosen = output.get_untracked();
            let first = outputs
                .get_untracked()
                .into_iter()
                .next()
                .unwrap_or_default();
            HandleRef {
                node: id.clone(),
                handle: if chosen.is_empty() { first } else { chosen },
            }
        }
    };
    // The inputs that take the chosen output, worked out when the list is
    // opened or focused (a whole-graph check, so never on every edit).
    let options = RwSignal::new(None::<Vec<(String, String)>>);
    let refresh = {
        let source = source.clone();
        move || {
            let from = source();
            let found = editor.with_untracked(|e| {
                connect_targets(&e.doc, &from)
                    .into_iter()
                    .map(|t| {
                        let label = e.node(&t.node).map(|n| n.label.clone()).unwrap_or_default();
                        (
                            format!("{}:{}", t.node, t.handle),
                            format!("{label} ({}) · {}", t.node, t.handle),
                        )
                    })
                    .collect::<Vec<_>>()
            });
            if !found.iter().any(|(v, _)| *v == target.get_untracked()) {
                target.set(String::new());
            }
            options.set(Some(found));
        }
    };
    let connect = {
        let refresh = refresh.clone();
        move |ev: leptos::ev::SubmitEvent| {
            ev.prevent_default();
            let from = source();
            let chosen = target.get_untracked();
            let Some((node, handle)) = chosen.split_once(':') else {
                problem.set(Some("Choose an input to connect to.".into()));
                return;
            };
            let edit = Edit::Connect {
                source: from,
                target: HandleRef {
                    node: node.into(),
                    handle: handle.into(),
                },
            };
            let result = editor.try_update(|e| e.apply(edit)).unwrap_or(Ok(None));
            problem.set(result.err().map(|e| e.to_string()));
            target.set(String::new());
            refresh();
        }
    };
    let (on_focus, on_down, on_from) = (refresh.clone(), refresh.clone(), refresh);
    move || {
        let outs = outputs.get();
        if outs.is_empty() {
            return ().into_any();
        }
        let chosen = output.get_untracked();
        let (on_focus, on_down, on_from) = (on_focus.clone(), on_down.clone(), on_from.clone());
        view! {
            <form class="connect" data-testid="connect-form" on:submit=connect.clone()>
                <h3>"Connect"</h3>
                <label class="field">"From output"
                    <select data-testid="connect-from" on:change=move |ev| { output.set(event_target_value(&ev)); on_from(); }>
                        {outs.iter().map(|o| view! { <option value=o.clone() selected=*o == chosen>{o.clone()}</option> }).collect_view()}
                    </select>
                </label>
                <label class="field">"To input"
                    <select data-testid="connect-to" on:focus=move |_| on_focus() on:pointerdown=move |_| on_down()
                        on:change=move |ev| target.set(event_target_value(&ev))>
                        {move || {
                            let (list, picked) = (options.get(), target.get());
                            let none = list.as_ref().is_some_and(Vec::is_empty);
                            let list = list.unwrap_or_default();
                            view! {
                                <option value="" selected=picked.is_empty()>{if none { "(none takes it)" } else { "Choose…" }}</option>
                                {list.into_iter().map(|(v, label)| view! { <option value=v.clone() selected=v == picked>{label}</option> }).collect_view()}
                            }
                        }}
                    </select>
                </label>
                <button type="submit" data-testid="connect">"Connect"</button>
                {move || problem.get().map(|p| view! { <p class="error" role="alert">{p}</p> })}
            </form>
        }
        .into_any()
    }
}

#[component]
pub fn Inspector(
    editor: RwSignal<Editor>,
    tools: LocalResource<Result<Vec<ToolInfo>, crate::api::ApiError>>,
    /// The server's diagnostics of the document, shown beside the fields
    /// they name.
    diagnostics: ReadSignal<Vec<Diagnostic>>,
    /// The run being watched: an Agent node's tool timeline shows here.
    watched: Watched,
) -> impl IntoView {
    let query = RwSignal::new(String::new());
    let category = RwSignal::new(String::new());
    let show_deprecated = RwSignal::new(false);
    let selected = Memo::new(move |_| {
        editor.with(|e| {
            (e.selection.len() == 1)
                .then(|| e.selection.iter().next().cloned())
                .flatten()
        })
    });
    move || {
        let id = selected.get()?;
        let (label, kind) =
            editor.with_untracked(|e| e.node(&id).map(|n| (n.label.clone(), n.kind.clone())))?;
        let rename_id = id.clone();
        let rename = move |ev: leptos::ev::Event| {
            let label = event_target_value(&ev);
            editor.update(|e| {
                let _ = e.apply(Edit::Rename {
                    node: rename_id.clone(),
                    label,
                });
            });
        };
        let agent = match kind {
            NodeKind::Agent(config) => {
                let prompt_id = id.clone();
                let set_prompt = move |ev: leptos::ev::Event| {
                    let prompt = event_target_value(&ev);
                    // Known before the edit, so the canvas keeps the wires
                    // of the variables the new prompt still reads.
                    let _ = node_runtime::graph::parse_template_variables(&prompt);
                    edit_agent(editor, &prompt_id, |c| c.prompt = prompt);
                };
                let rows_id = id.clone();
                let rows = move || {
                    let list = match tools.get() {
                        Some(Ok(list)) => list,
                        Some(Err(e)) => {
                            return view! { <p class="error" role="alert">{e.to_string()}</p> }
                                .into_any()
                        }
                        None => return view! { <p class="muted">"Loading tools…"</p> }.into_any(),
                    };
                    let Some(config) = editor.with(|e| agent_of(e, &rows_id)) else {
                        return ().into_any();
                    };
                    let shown =
                        tools::filter(&list, &query.get(), &category.get(), show_deprecated.get());
                    view! {
                        <ul class="tool-rows" data-testid="tool-rows">
                            {shown.into_iter().map(|t| {
                                let reference = t.reference.clone();
                                let enabled = tools::is_enabled(&config, &reference);
                                let (toggle_id, pin_id) = (rows_id.clone(), rows_id.clone());
                                let toggle_ref = reference.clone();
                                let pin_name = t.name.clone();
                                view! {
                                    <li class="tool-row" data-tool=reference.clone()>
                                        <label>
                                            <input type="checkbox" data-testid="tool-enable" prop:checked=enabled
                                                on:change=move |ev| {
                                                    let on = event_target_checked(&ev);
                                                    edit_agent(editor, &toggle_id, |c| tools::set_enabled(c, &toggle_ref, on));
                                                } />
                                            " " <strong>{reference.clone()}</strong>
                                        </label>
                                        {tool_badges(t)}
                                        <button type="button" class="pin" data-testid="pin" title="Pin this tool's result as an output handle"
                                            on:click=move |_| edit_agent(editor, &pin_id, |c| { tools::add_pin(c, &pin_name); })>"Pin"</button>
                                    </li>
                                }
                            }).collect_view()}
                        </ul>
                    }.into_any()
                };
                let pins = pin_rows(editor, id.clone());
                let settings = super::agent_settings::agent_settings(editor, watched, id.clone());
                let system_id = id.clone();
                let set_system = move |ev: leptos::ev::Event| {
                    let text = event_target_value(&ev);
                    edit_agent(editor, &system_id, |c| c.system_prompt = text);
                };
                let timeline_agent = id.clone();
                Some(view! {
                    <AgentTimeline agent=timeline_agent editor=editor watched=watched tools=tools />
                    <label class="field">"System prompt"
                        <textarea data-testid="agent-system-prompt" rows="3" prop:value=config.system_prompt.clone() on:change=set_system></textarea>
                    </label>
                    <label class="field">"Prompt (its {{ variables }} are input handles)"
                        <textarea data-testid="agent-prompt" prop:value=config.prompt.clone() on:change=set_prompt></textarea>
                    </label>
                    {settings}
                    <h3>"Tools"</h3>
                    <ToolFilters query category show_deprecated />
                    {rows}
                    <h3>"Pinned handles"</h3>
                    {pins}
                }.into_any())
            }
            NodeKind::Tool(_) => {
                Some(tool_panel(editor, tools, diagnostics, id.clone()).into_any())
            }
            NodeKind::Input(_) => Some(node_panels::input_panel(editor, id.clone()).into_any()),
            NodeKind::Template(_) => {
                Some(node_panels::template_panel(editor, watched, id.clone()).into_any())
            }
            NodeKind::Output(_) => Some(node_panels::output_panel(editor, id.clone()).into_any()),
            NodeKind::Branch(_) => Some(node_panels::branch_panel(editor, id.clone()).into_any()),
        };
        Some(view! {
            <aside class="inspector" data-testid="inspector">
                <h2>{id.clone()}</h2>
                <label class="field">"Label"
                    <input type="text" data-testid="node-label" prop:value=label on:change=rename />
                </label>
                {connect_form(editor, id.clone())}
                {agent}
            </aside>
        })
    }
}
