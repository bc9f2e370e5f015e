//! `/workflows`: the workspace's workflows; create one and open it.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use crate::api;

#[component]
pub fn Workflows() -> impl IntoView {
    let list = LocalResource::new(api::list_workflows);
    let name = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let navigate = use_navigate();
    let create = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let n = name.get_untracked().trim().to_string();
        if n.is_empty() {
            error.set(Some("Give the workflow a name.".into()));
            return;
        }
        let navigate = navigate.clone();
        leptos::task::spawn_local(async move {
            match api::create_workflow(&n).await {
                Ok(w) => navigate(&format!("/workflows/{}", w.id), Default::default()),
                Err(e) => error.set(Some(e.to_string())),
            }
        });
    };
    view! {
        <section class="card">
            <h1>"Workflows"</h1>
            <form class="row" on:submit=create>
                <input type="text" placeholder="New workflow name" data-testid="new-workflow-name"
                    prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev)) />
                <button type="submit" data-testid="new-workflow">"New workflow"</button>
            </form>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <Suspense fallback=|| view! { <p class="muted">"Loading workflows…"</p> }>
                {move || list.get().map(|r| match r {
                    Ok(items) if items.is_empty() => view! { <p class="muted">"No workflows yet."</p> }.into_any(),
                    Ok(items) => view! {
                        <ul class="list" data-testid="workflow-list">
                            {items.into_iter().map(|w| view! {
                                <li><A href=format!("/workflows/{}", w.id)>{w.name}</A>
                                " " <span class="muted">"revision " {w.revision}</span></li>
                            }).collect_view()}
                        </ul>
                    }.into_any(),
                    Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                })}
            </Suspense>
        </section>
    }
}
