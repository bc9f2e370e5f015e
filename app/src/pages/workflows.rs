//! `/workflows`: the workspace's workflows; create, open, rename,
//! duplicate, and delete (after a confirmation).

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use crate::api;

/// Asks the browser's confirmation dialog; false when there is no window.
fn confirm(message: &str) -> bool {
    web_sys::window()
        .and_then(|w| w.confirm_with_message(message).ok())
        .unwrap_or(false)
}

#[component]
pub fn Workflows() -> impl IntoView {
    let list = LocalResource::new(api::list_workflows);
    let name = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let renaming = RwSignal::new(None::<(String, String)>);
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
    // Runs an action, then reloads the list (or shows what went wrong).
    let act = move |action: std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<(), api::ApiError>>>,
    >| {
        leptos::task::spawn_local(async move {
            match action.await {
                Ok(()) => {
                    error.set(None);
                    list.refetch();
                }
                Err(e) => error.set(Some(e.to_string())),
            }
        });
    };
    let rows = move |items: Vec<api::WorkflowItem>| {
        items
            .into_iter()
            .map(|w| {
                let (id, wname) = (w.id.clone(), w.name.clone());
                let (dup_id, dup_name, del_id, del_name, ren_id, ren_name) =
                    (id.clone(), wname.clone(), id.clone(), wname.clone(), id.clone(), wname.clone());
                let editing = {
                    let id = id.clone();
                    move || renaming.with(|r| r.as_ref().is_some_and(|(i, _)| *i == id))
                };
                let save_rename = move |ev: leptos::ev::SubmitEvent| {
                    ev.prevent_default();
                    let Some((id, new_name)) = renaming.get_untracked() else { return };
                    let new_name = new_name.trim().to_string();
                    if new_name.is_empty() {
                        error.set(Some("A workflow needs a name.".into()));
                        return;
                    }
                    renaming.set(None);
                    act(Box::pin(async move { api::rename_workflow(&id, &new_name).await.map(|_| ()) }));
                };
                view! {
                    <li data-workflow=id.clone()>
                        <Show when=editing.clone() fallback={
                            let (href, label) = (format!("/workflows/{id}"), wname.clone());
                            move || {
                                let (href, label) = (href.clone(), label.clone());
                                view! { <A href=href>{label}</A> }
                            }
                        }>
                            <form class="inline" on:submit=save_rename>
                                <input type="text" data-testid="rename-input"
                                    prop:value=move || renaming.with(|r| r.as_ref().map(|(_, n)| n.clone()).unwrap_or_default())
                                    on:input=move |ev| renaming.update(|r| if let Some((_, n)) = r { *n = event_target_value(&ev) }) />
                                <button type="submit" data-testid="rename-save">"Save"</button>
                                <button type="button" on:click=move |_| renaming.set(None)>"Cancel"</button>
                            </form>
                        </Show>
                        " " <span class="muted">"revision " {w.revision}</span>
                        <span class="actions">
                            <button type="button" data-testid="rename"
                                on:click=move |_| renaming.set(Some((ren_id.clone(), ren_name.clone())))>"Rename"</button>
                            <button type="button" data-testid="duplicate" on:click=move |_| {
                                let (id, copy) = (dup_id.clone(), format!("Copy of {dup_name}"));
                                act(Box::pin(async move { api::duplicate_workflow(&id, &copy).await.map(|_| ()) }));
                            }>"Duplicate"</button>
                            <button type="button" data-testid="delete" on:click=move |_| {
                                if confirm(&format!("Delete the workflow \u{201c}{del_name}\u{201d} and its revisions? Its runs stay.")) {
                                    let id = del_id.clone();
                                    act(Box::pin(async move { api::delete_workflow(&id).await }));
                                }
                            }>"Delete"</button>
                        </span>
                    </li>
                }
            })
            .collect_view()
    };
    view! {
        <section class="card">
            <h1>"Workflows"</h1>
            <form class="row" on:submit=create>
                <input type="text" placeholder="New workflow name" data-testid="new-workflow-name"
                    prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev)) />
                <button type="submit" data-testid="new-workflow">"New workflow"</button>
            </form>
            {move || error.get().map(|e| view! { <p class="error" role="alert" data-testid="workflows-error">{e}</p> })}
            <Suspense fallback=|| view! { <p class="muted">"Loading workflows…"</p> }>
                {move || list.get().map(|r| match r {
                    Ok(items) if items.is_empty() => view! { <p class="muted">"No workflows yet."</p> }.into_any(),
                    Ok(items) => view! { <ul class="list" data-testid="workflow-list">{rows(items)}</ul> }.into_any(),
                    Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                })}
            </Suspense>
        </section>
    }
}
