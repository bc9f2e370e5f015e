//! The editor's configuration panel for the one selected node: its label,
//! and for an Agent node the prompt, the tool selector (search, category,
//! "show deprecated", badges, enable toggles, Pin) and its pinned handles.

use leptos::prelude::*;
use node_runtime::graph::{AgentNodeConfig, NodeKind};

use crate::editor::model::{Edit, Editor};
use crate::editor::tools::{self, ToolInfo, CATEGORIES};

/// Applies a change to the selected Agent node's config as one edit.
fn edit_agent(editor: RwSignal<Editor>, node: &str, change: impl FnOnce(&mut AgentNodeConfig)) {
    let current = editor.with_untracked(|e| e.doc.node(node).map(|n| n.kind.clone()));
    if let Some(NodeKind::Agent(mut config)) = current {
        change(&mut config);
        editor.update(|e| {
            let _ = e.apply(Edit::SetKind {
                node: node.to_string(),
                kind: Box::new(NodeKind::Agent(config)),
            });
        });
    }
}

#[component]
pub fn Inspector(
    editor: RwSignal<Editor>,
    tools: LocalResource<Result<Vec<ToolInfo>, crate::api::ApiError>>,
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
        let (label, kind) = editor
            .with_untracked(|e| e.doc.node(&id).map(|n| (n.label.clone(), n.kind.clone())))?;
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
                    let config = editor.with(|e| match e.doc.node(&rows_id).map(|n| &n.kind) {
                        Some(NodeKind::Agent(c)) => Some(c.clone()),
                        _ => None,
                    });
                    let Some(config) = config else {
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
                                let badge = tools::auth_badge(t);
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
                                        <span class="badge">{t.category.clone()}</span>
                                        <span class=format!("badge effect-{}", t.side_effects)>{t.side_effects.clone()}</span>
                                        {badge.map(|(text, warn)| view! {
                                            <span class=if warn { "badge warn" } else { "badge" } data-testid="auth-badge">{text}</span>
                                        })}
                                        {(t.lifecycle == "deprecated").then(|| view! {
                                            <span class="badge warn" data-testid="deprecated-badge" title="Deprecated: still runs, with a warning; pick a newer version">"deprecated"</span>
                                        })}
                                        <button type="button" class="pin" data-testid="pin" title="Pin this tool's result as an output handle"
                                            on:click=move |_| edit_agent(editor, &pin_id, |c| { tools::add_pin(c, &pin_name); })>"Pin"</button>
                                    </li>
                                }
                            }).collect_view()}
                        </ul>
                    }.into_any()
                };
                let pins_id = id.clone();
                let pins = move || {
                    editor.with(|e| match e.doc.node(&pins_id).map(|n| &n.kind) {
                        Some(NodeKind::Agent(c)) => c.pins.clone(),
                        _ => Vec::new(),
                    })
                    .into_iter()
                    .map(|p| {
                        let remove_id = pins_id.clone();
                        let name = p.name.clone();
                        view! {
                            <li data-pin=p.name.clone()>
                                <code>{p.name.clone()}</code> " ← " {p.selector.tool.clone()} " (" {format!("{:?}", p.selector.strategy).to_lowercase()} ")"
                                " " <button type="button" on:click=move |_| edit_agent(editor, &remove_id, |c| c.pins.retain(|x| x.name != name))>"Remove"</button>
                            </li>
                        }
                    })
                    .collect_view()
                };
                Some(view! {
                    <label class="field">"Prompt (its {{ variables }} are input handles)"
                        <textarea data-testid="agent-prompt" prop:value=config.prompt.clone() on:change=set_prompt></textarea>
                    </label>
                    <h3>"Tools"</h3>
                    <div class="tool-filters">
                        <input type="search" placeholder="Search tools" data-testid="tool-search"
                            prop:value=move || query.get() on:input=move |ev| query.set(event_target_value(&ev)) />
                        <select data-testid="tool-category" on:change=move |ev| category.set(event_target_value(&ev))>
                            <option value="">"All categories"</option>
                            {CATEGORIES.iter().map(|c| view! { <option value=*c>{*c}</option> }).collect_view()}
                        </select>
                        <label><input type="checkbox" data-testid="show-deprecated"
                            on:change=move |ev| show_deprecated.set(event_target_checked(&ev)) />" show deprecated"</label>
                    </div>
                    {rows}
                    <h3>"Pinned handles"</h3>
                    <ul class="pins" data-testid="pins">{pins}</ul>
                })
            }
            _ => None,
        };
        Some(view! {
            <aside class="inspector" data-testid="inspector">
                <h2>{id.clone()}</h2>
                <label class="field">"Label"
                    <input type="text" data-testid="node-label" prop:value=label on:change=rename />
                </label>
                {agent}
            </aside>
        })
    }
}
