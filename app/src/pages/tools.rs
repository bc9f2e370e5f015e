//! `/tools`: the tool registry as this workspace sees it: every tool
//! version with its badges (category, side effects, auth, deprecation), the
//! secrets it needs and where they come from, and its input schema.

use leptos::prelude::*;

use crate::api;
use crate::editor::tools;
use crate::widgets::{tool_badges, ToolFilters};

#[component]
pub fn Tools() -> impl IntoView {
    let list = LocalResource::new(api::list_tools);
    let query = RwSignal::new(String::new());
    let category = RwSignal::new(String::new());
    let show_deprecated = RwSignal::new(false);
    view! {
        <section class="card" data-testid="tools-page">
            <h1>"Tools"</h1>
            <p class="muted">"Every tool an Agent node can call. Blocked versions are never listed; deprecated ones still run, with a warning."</p>
            <ToolFilters query category show_deprecated />
            <Suspense fallback=|| view! { <p class="muted">"Loading tools…"</p> }>
                {move || list.get().map(|r| match r {
                    Ok(all) => {
                        let shown = tools::filter(&all, &query.get(), &category.get(), show_deprecated.get());
                        if shown.is_empty() {
                            return view! { <p class="muted" data-testid="tools-empty">"No tool matches."</p> }.into_any();
                        }
                        view! {
                            <ul class="list registry" data-testid="registry">
                                {shown.into_iter().map(|t| {
                                    let schema = serde_json::to_string_pretty(&t.input_schema).unwrap_or_default();
                                    let secrets = t.auth.secrets.clone();
                                    view! {
                                        <li class="tool-entry" data-tool=t.reference.clone()>
                                            <div><strong>{t.reference.clone()}</strong> " " {tool_badges(t)}</div>
                                            <p class="muted">{t.description.clone()}</p>
                                            {(!secrets.is_empty()).then(|| view! {
                                                <p class="secrets-needed">"Needs: "
                                                    {secrets.into_iter().map(|s| {
                                                        let from = match (&s.status[..], &s.scope) {
                                                            ("missing", _) => "missing".to_string(),
                                                            (_, Some(scope)) => format!("from the {scope} scope"),
                                                            (status, None) => status.to_string(),
                                                        };
                                                        view! { <code>{s.name.clone()}</code> " (" {from} ") " }
                                                    }).collect_view()}
                                                </p>
                                            })}
                                            <details><summary>"Input schema"</summary><pre class="json" data-testid="tool-schema">{schema}</pre></details>
                                        </li>
                                    }
                                }).collect_view()}
                            </ul>
                        }.into_any()
                    }
                    Err(e) => view! { <p class="error" role="alert" data-testid="tools-error">{e.to_string()}</p> }.into_any(),
                })}
            </Suspense>
        </section>
    }
}
