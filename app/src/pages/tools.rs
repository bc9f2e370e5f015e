//! `/tools`: three tabs. Registry: every tool version as this workspace
//! sees it, with its badges (category, side effects, auth, deprecation), the
//! secrets it needs and where they come from, and its input schema.
//! Invocations: every tool call recorded, filtered by status, tool and
//! date; a row opens its drawer. Approvals: the writes waiting for a human
//! (the tab shows their count), decided here.

use leptos::prelude::*;
use leptos_router::components::A;

use crate::api;
use crate::call_view::CallFacts;
use crate::editor::tools;
use crate::live::Approval;
use crate::pages::call_drawer::CallDrawer;
use crate::pages::timeline::with_tool;
use crate::widgets::{approval_form, refresh_while, tool_badges, OlderPages, ToolFilters};

#[component]
pub fn Tools() -> impl IntoView {
    // `?tab=approvals` (the navigation's count links there) opens that tab.
    let asked = leptos_router::hooks::use_query_map()
        .with_untracked(|q| q.get("tab"))
        .unwrap_or_default();
    let tab = RwSignal::new(match asked.as_str() {
        "approvals" => "approvals",
        "invocations" => "invocations",
        _ => "registry",
    });
    let pending = LocalResource::new(api::pending_approvals);
    // Decisions made anywhere (here, another user, the CLI) show up.
    let count =
        move || pending.with(|p| p.as_ref().and_then(|r| r.as_ref().ok()).map_or(0, Vec::len));
    refresh_while(
        move || tab.get() == "approvals" || count() > 0,
        move || pending.refetch(),
    );
    let tab_button = move |id: &'static str, label: &'static str| {
        view! {
            <button type="button" role="tab" data-tab=id class:active=move || tab.get() == id
                aria-selected=move || (tab.get() == id).to_string() on:click=move |_| tab.set(id)>
                {label}
                {(id == "approvals").then(|| view! { " " <span class="badge warn" data-testid="approvals-count">{count}</span> })}
            </button>
        }
    };
    view! {
        <section class="card" data-testid="tools-page">
            <h1>"Tools"</h1>
            <nav class="tabs" role="tablist">
                {tab_button("registry", "Registry")}
                {tab_button("invocations", "Invocations")}
                {tab_button("approvals", "Approvals")}
            </nav>
            {move || match tab.get() {
                "invocations" => view! { <InvocationsTab /> }.into_any(),
                "approvals" => view! { <ApprovalsTab pending /> }.into_any(),
                _ => view! { <Registry /> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn Registry() -> impl IntoView {
    let list = LocalResource::new(api::list_tools);
    let query = RwSignal::new(String::new());
    let category = RwSignal::new(String::new());
    let show_deprecated = RwSignal::new(false);
    view! {
        <div data-testid="registry-tab">
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
        </div>
    }
}

const INVOCATION_STATUSES: [&str; 7] = [
    "pending",
    "approved",
    "rejected",
    "running",
    "completed",
    "failed",
    "outcome_unknown",
];

#[component]
fn InvocationsTab() -> impl IntoView {
    let status = RwSignal::new(String::new());
    let tool = RwSignal::new(String::new());
    let since = RwSignal::new(String::new());
    let list = LocalResource::new(move || {
        let (s, t, d) = (status.get(), tool.get(), since.get());
        async move { api::list_invocations(&[("status", &s), ("tool", &t), ("since", &d)], 200).await }
    });
    // Older pages, loaded on request below the first.
    let older = OlderPages::<api::InvocationSummary>::new(move || {
        list.with(|r| {
            r.as_ref()
                .and_then(|r| r.as_ref().ok())
                .and_then(|l| l.next_cursor.clone())
        })
    });
    let load_older = move |_| {
        let (s, t, d) = (
            status.get_untracked(),
            tool.get_untracked(),
            since.get_untracked(),
        );
        older.load(move |cursor| async move {
            let filters = [
                ("status", &*s),
                ("tool", &*t),
                ("since", &*d),
                ("cursor", &*cursor),
            ];
            let page = api::list_invocations(&filters, 200).await.ok()?;
            Some((page.invocations, page.next_cursor))
        });
    };
    let registry = LocalResource::new(api::list_tools);
    // The record opened in the drawer, with its payloads (the list has none).
    let open = RwSignal::new(None::<api::Invocation>);
    let problem = RwSignal::new(None::<String>);
    let open_record = move |id: String| {
        leptos::task::spawn_local(async move {
            match api::get_invocation(&id).await {
                Ok(i) => open.set(Some(i)),
                Err(e) => problem.set(Some(e.to_string())),
            }
        });
    };
    let drawer = move || {
        open.get().map(|i| {
            // Drawn again once the registry has loaded.
            registry.track();
            let mut facts = CallFacts::from_invocation(&i);
            facts.side_effects = with_tool(registry, &facts.tool, |t| t.side_effects.to_string());
            view! { <CallDrawer facts=facts close=move |()| open.set(None) /> }
        })
    };
    view! {
        <div class="row" data-testid="invocation-filters">
            <label>"Status "
                <select data-testid="invocation-status" on:change=move |ev| status.set(event_target_value(&ev))>
                    <option value="" selected=true>"All"</option>
                    {INVOCATION_STATUSES.iter().map(|s| view! { <option value=*s>{*s}</option> }).collect_view()}
                </select>
            </label>
            <label>"Tool " <input type="search" data-testid="invocation-tool" placeholder="name"
                on:change=move |ev| tool.set(event_target_value(&ev)) /></label>
            <label>"Since " <input type="date" data-testid="invocation-since"
                on:change=move |ev| since.set(event_target_value(&ev)) /></label>
        </div>
        {drawer}
        {move || problem.get().map(|p| view! { <p class="error" role="alert">{p}</p> })}
        <Transition fallback=|| view! { <p class="muted">"Loading invocations…"</p> }>
            {move || list.get().map(|r| match r.map(|l| l.invocations) {
                Ok(rows) if rows.is_empty() => view! { <p class="muted" data-testid="invocations-empty">"No tool call matches."</p> }.into_any(),
                Ok(rows) => view! {
                    <table class="runs" data-testid="invocations">
                        <thead><tr><th>"Tool"</th><th>"Status"</th><th>"Approval"</th><th>"Started"</th><th>"Run"</th></tr></thead>
                        <tbody>
                            {rows.into_iter().chain(older.items.get()).map(|i| {
                                let id = i.id.clone();
                                view! {
                                    <tr data-invocation=i.call_id.clone() class="timeline-row" tabindex="0"
                                        on:click=move |_| open_record(id.clone())>
                                        <td><code>{node_runtime::tool_spec::tool_key(&i.tool_name, &i.tool_version)}</code></td>
                                        <td><span class=format!("badge run-status status-{}", i.status)>{i.status.as_str()}</span></td>
                                        <td>{i.approval_status.map(|a| a.as_str()).unwrap_or_default()}</td>
                                        <td class="muted">{crate::runs_view::short_time(&i.created_at)}</td>
                                        <td><code>{crate::runs_view::short_id(&i.run_id).to_string()}</code></td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                    {move || older.next.get().is_some().then(|| view! {
                        <button type="button" data-testid="invocations-older" on:click=load_older>"Show older calls"</button>
                    })}
                }.into_any(),
                Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
            })}
        </Transition>
    }
}

#[component]
fn ApprovalsTab(
    pending: LocalResource<Result<Vec<api::Approval>, api::ApiError>>,
) -> impl IntoView {
    let problem = RwSignal::new(None::<String>);
    view! {
        {move || problem.get().map(|p| view! { <p class="error" role="alert" data-testid="run-problem">{p}</p> })}
        <Transition fallback=|| view! { <p class="muted">"Loading approvals…"</p> }>
            {move || pending.get().map(|r| match r {
                Ok(rows) if rows.is_empty() => view! { <p class="muted" data-testid="approvals-empty">"No write is waiting for approval."</p> }.into_any(),
                Ok(rows) => view! {
                    <ul class="list" data-testid="approvals">
                        {rows.into_iter().map(|a| view! {
                            <li data-approval=a.call_id.clone()>
                                <strong><code>{a.tool.clone()}</code></strong> " " <span class="muted">{a.args_summary.clone()}</span>
                                <p class="muted">"Run " <A href=format!("/runs/{}", a.run_id)><code>{a.run_id.clone()}</code></A> ", node " {a.node_id.clone()}</p>
                                {approval_form(Approval { token: a.token.clone(), effect: a.effect_description.clone(), decision: None }, problem)}
                            </li>
                        }).collect_view()}
                    </ul>
                }.into_any(),
                Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
            })}
        </Transition>
    }
}
