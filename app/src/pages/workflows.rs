//! `/workflows`: the workspace's workflows, each with its one-line
//! description; create, open, rename (name and description), duplicate,
//! and delete (after a confirmation); and the gallery: "New from example"
//! makes a workflow from one of the server's examples and opens it.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use crate::api;
use crate::widgets::confirm;

#[component]
pub fn Workflows() -> impl IntoView {
    let list = LocalResource::new(api::list_workflows);
    let examples = LocalResource::new(api::list_examples);
    let name = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    // The workflow being renamed: its id, name and description as typed.
    let renaming = RwSignal::new(None::<(String, String, String)>);
    // A viewer reads the workflows but changes none (the server refuses
    // it too): every control below that writes is off, with why.
    let gate = crate::workspace::Gate::editor(crate::workspace::VIEWER_EDIT_HINT);
    let navigate = use_navigate();
    let from_example = {
        let navigate = navigate.clone();
        move |id: String| {
            let navigate = navigate.clone();
            leptos::task::spawn_local(async move {
                match api::new_from_example(&id).await {
                    Ok(w) => navigate(&format!("/workflows/{}", w.id), Default::default()),
                    Err(e) => error.set(Some(e.to_string())),
                }
            });
        }
    };
    let create = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if gate.off() {
            return;
        }
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
                let (id, wname, about) = (w.id.clone(), w.name.clone(), w.description.clone());
                let (dup_id, dup_name, del_id, del_name) =
                    (id.clone(), wname.clone(), id.clone(), wname.clone());
                let editing_now = (id.clone(), wname.clone(), about.clone());
                let editing = {
                    let id = id.clone();
                    move || renaming.with(|r| r.as_ref().is_some_and(|(i, _, _)| *i == id))
                };
                let save_rename = move |ev: leptos::ev::SubmitEvent| {
                    ev.prevent_default();
                    let Some((id, new_name, new_about)) = renaming.get_untracked() else { return };
                    let (new_name, new_about) = (new_name.trim().to_string(), new_about.trim().to_string());
                    if new_name.is_empty() {
                        error.set(Some("A workflow needs a name.".into()));
                        return;
                    }
                    renaming.set(None);
                    act(Box::pin(async move {
                        api::rename_workflow(&id, &new_name, &new_about).await.map(|_| ())
                    }));
                };
                view! {
                    <li data-workflow=id.clone()>
                        <Show when=editing.clone() fallback={
                            let (href, label, about) = (format!("/workflows/{id}"), wname.clone(), about.clone());
                            move || {
                                let (href, label, about) = (href.clone(), label.clone(), about.clone());
                                view! {
                                    <div>
                                        <A href=href>{label}</A>
                                        {(!about.is_empty()).then(|| view! {
                                            <div class="muted" data-testid="workflow-description">{about}</div>
                                        })}
                                    </div>
                                }
                            }
                        }>
                            <form class="inline" on:submit=save_rename>
                                <input type="text" data-testid="rename-input" aria-label="Name"
                                    prop:value=move || renaming.with(|r| r.as_ref().map(|(_, n, _)| n.clone()).unwrap_or_default())
                                    on:input=move |ev| renaming.update(|r| if let Some((_, n, _)) = r { *n = event_target_value(&ev) }) />
                                <input type="text" data-testid="describe-input" aria-label="Description"
                                    placeholder="One line: what it does"
                                    prop:value=move || renaming.with(|r| r.as_ref().map(|(_, _, d)| d.clone()).unwrap_or_default())
                                    on:input=move |ev| renaming.update(|r| if let Some((_, _, d)) = r { *d = event_target_value(&ev) }) />
                                <button type="submit" data-testid="rename-save">"Save"</button>
                                <button type="button" on:click=move |_| renaming.set(None)>"Cancel"</button>
                            </form>
                        </Show>
                        " " <span class="muted">"revision\u{a0}" {w.revision}</span>
                        <span class="actions">
                            <button type="button" data-testid="rename" prop:disabled=move || gate.off()
                                title=move || gate.why() on:click=move |_| renaming.set(Some(editing_now.clone()))>"Rename"</button>
                            <button type="button" data-testid="duplicate" prop:disabled=move || gate.off()
                                title=move || gate.why() on:click=move |_| {
                                let (id, copy) = (dup_id.clone(), format!("Copy of {dup_name}"));
                                act(Box::pin(async move { api::duplicate_workflow(&id, &copy).await.map(|_| ()) }));
                            }>"Duplicate"</button>
                            <button type="button" data-testid="delete" prop:disabled=move || gate.off()
                                title=move || gate.why() on:click=move |_| {
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
    // The gallery: one card per example, its button making a new workflow.
    let cards = move |items: Vec<api::ExampleItem>| {
        items
            .into_iter()
            .map(|e| {
                let make = from_example.clone();
                let id = e.id.clone();
                view! {
                    <article class="card" data-example=e.id.clone()>
                        <strong>{e.name}</strong>
                        <p class="muted" data-testid="example-description">{e.description}</p>
                        <div class="row">
                            <button type="button" data-testid="new-from-example" prop:disabled=move || gate.off()
                                title=move || gate.why() on:click=move |_| make(id.clone())>"New from example"</button>
                        </div>
                    </article>
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
                <button type="submit" data-testid="new-workflow" prop:disabled=move || gate.off()
                    title=move || gate.why()>"New workflow"</button>
                {gate.hint()}
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
        <section data-testid="gallery-section">
            <h2>"New from example"</h2>
            <p class="muted">"Each makes a new workflow of this workspace and opens it." " " {gate.hint()}</p>
            <Suspense fallback=|| view! { <p class="muted">"Loading examples…"</p> }>
                {move || examples.get().map(|r| match r {
                    Ok(items) if items.is_empty() => view! { <p class="muted">"This server offers no examples."</p> }.into_any(),
                    Ok(items) => view! { <div class="gallery" data-testid="gallery">{cards(items)}</div> }.into_any(),
                    Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                })}
            </Suspense>
        </section>
    }
}
