//! `/settings`: the workspace, its members and invitations (`teams.rs`),
//! secrets by scope (user, workspace, org), the workspace's connections
//! (`connections.rs`), the user's signed-in sessions and, for admins, the
//! audit log. Names and scopes only ever come back (a viewer gets only
//! their count); a value goes in once and is never shown again.

use leptos::prelude::*;

use crate::api;
use crate::workspace::Gate;

const SCOPES: [(&str, &str); 3] = [
    ("workspace", "Workspace"),
    ("user", "Just me"),
    ("org", "Organization"),
];

#[component]
pub fn Settings() -> impl IntoView {
    let secrets = LocalResource::new(api::list_secrets);
    let workspaces = crate::workspace::context();
    let admin = move || workspaces.is_some_and(crate::workspace::Workspaces::is_admin);
    let scope = RwSignal::new("workspace".to_string());
    let name = RwSignal::new(String::new());
    let value = RwSignal::new(String::new());
    let status = RwSignal::new(None::<(bool, String)>);
    // A viewer changes no secret; an editor only their own (the server
    // refuses the rest too): Save secret and Delete are off, with why.
    let viewer = Gate::editor(crate::workspace::VIEWER_SECRET_HINT);
    let shared = Gate::needs(api::Role::Admin, crate::workspace::ADMIN_SECRET_HINT);
    let why = move |scope: &str| {
        viewer
            .why()
            .or(if scope == "user" { None } else { shared.why() })
    };
    // Why Save secret is off for the scope chosen.
    let save_why = Memo::new(move |_| scope.with(|s| why(s)));
    let set = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if save_why.get_untracked().is_some() {
            return;
        }
        let (s, n, v) = (
            scope.get_untracked(),
            name.get_untracked().trim().to_string(),
            value.get_untracked(),
        );
        leptos::task::spawn_local(async move {
            match api::set_secret(&s, &n, &v).await {
                Ok(()) => {
                    status.set(Some((true, format!("Saved {n} ({s}). Its value is stored encrypted and is never shown again."))));
                    name.set(String::new());
                    value.set(String::new());
                    secrets.refetch();
                }
                Err(e) => status.set(Some((false, e.to_string()))),
            }
        });
    };
    view! {
        <section class="card" data-testid="settings">
            <h1>"Settings"</h1>
            <super::teams::WorkspaceSettings />
            <super::teams::Members />
            <h2>"Secrets"</h2>
            <p class="muted">"Tools get the secrets they declare, looked up in your own, then the workspace's, then the organization's."</p>
            <form class="row" on:submit=set data-testid="secret-form">
                <select data-testid="secret-scope" on:change=move |ev| scope.set(event_target_value(&ev))>
                    {SCOPES.iter().map(|(v, label)| view! { <option value=*v selected=*v == "workspace">{*label}</option> }).collect_view()}
                </select>
                <input type="text" placeholder="NAME" data-testid="secret-name" prop:value=move || name.get()
                    on:input=move |ev| name.set(event_target_value(&ev)) />
                <input type="password" placeholder="value" autocomplete="off" data-testid="secret-value" prop:value=move || value.get()
                    on:input=move |ev| value.set(event_target_value(&ev)) />
                <button type="submit" data-testid="secret-save" prop:disabled=move || save_why.get().is_some()
                    title=move || save_why.get()>"Save secret"</button>
                {crate::workspace::hint(move || save_why.get())}
            </form>
            {move || status.get().map(|(ok, m)| view! {
                <p class=if ok { "notice" } else { "error" } role="status" data-testid="secret-status">{m}</p>
            })}
            <Suspense fallback=|| view! { <p class="muted">"Loading secrets…"</p> }>
                {move || secrets.get().map(|r| match r.map(|s| (s.secrets, s.total)) {
                    // A viewer is told how many there are, not their names.
                    Ok((list, total)) if list.is_empty() && total > 0 => view! {
                        <p class="muted" data-testid="secret-total">{format!("{total} secret{} here; their names are shown to editors and admins.", if total == 1 { "" } else { "s" })}</p>
                    }.into_any(),
                    Ok((list, _)) if list.is_empty() => view! { <p class="muted">"No secrets yet."</p> }.into_any(),
                    Ok((list, _)) => view! {
                        <table class="secrets" data-testid="secret-list">
                            <thead><tr><th>"Name"</th><th>"Scope"</th><th>"Set at"</th><th></th></tr></thead>
                            <tbody>
                                {list.into_iter().map(|s| {
                                    let (n, sc) = (s.name.clone(), s.scope.clone());
                                    let off = { let sc = sc.clone(); move || why(&sc) };
                                    view! {
                                        <tr data-secret=format!("{}/{}", s.scope, s.name)>
                                            <td><code>{s.name.clone()}</code></td><td>{s.scope.clone()}</td><td class="muted">{s.created_at.clone()}</td>
                                            <td><button type="button" data-testid="secret-delete" prop:disabled={ let off = off.clone(); move || off().is_some() }
                                                title=off on:click=move |_| {
                                                let (n, sc) = (n.clone(), sc.clone());
                                                leptos::task::spawn_local(async move {
                                                    match api::delete_secret(&sc, &n).await {
                                                        Ok(()) => { status.set(Some((true, format!("Deleted {n} ({sc})."))));  secrets.refetch(); }
                                                        Err(e) => status.set(Some((false, e.to_string()))),
                                                    }
                                                });
                                            }>"Delete"</button></td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    }.into_any(),
                    Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                })}
            </Suspense>
            <super::connections::Connections />
            <Sessions />
            <Show when=move || admin()>
                <super::teams::Audit />
            </Show>
        </section>
    }
}

/// Where this user is signed in; any other session can be ended here (this
/// one ends with "Sign out").
#[component]
fn Sessions() -> impl IntoView {
    let sessions = LocalResource::new(api::list_sessions);
    let status = RwSignal::new(None::<(bool, String)>);
    view! {
        <h2>"Sessions"</h2>
        <p class="muted">"Each browser or client you signed in with. End one you no longer use or do not recognise."</p>
        {move || status.get().map(|(ok, m)| view! {
            <p class=if ok { "notice" } else { "error" } role="status" data-testid="session-status">{m}</p>
        })}
        <Suspense fallback=|| view! { <p class="muted">"Loading sessions…"</p> }>
            {move || sessions.get().map(|r| match r {
                Ok(list) => view! {
                    <table class="secrets" data-testid="session-list">
                        <thead><tr><th>"Session"</th><th>"Signed in"</th><th>"Expires"</th><th></th></tr></thead>
                        <tbody>
                            {list.into_iter().map(|s| {
                                let id = s.id.clone();
                                view! {
                                    <tr data-session=s.id.clone()>
                                        <td><code>{s.id.clone()}</code>{s.current.then_some(" (this one)")}</td>
                                        <td class="muted">{crate::runs_view::short_time(&s.created_at)}</td>
                                        <td class="muted">{s.expires_at.as_deref().map(crate::runs_view::short_time).unwrap_or_default()}</td>
                                        <td>{(!s.current).then(|| view! {
                                            <button type="button" data-testid="session-end" on:click=move |_| {
                                                let id = id.clone();
                                                leptos::task::spawn_local(async move {
                                                    match api::revoke_session(&id).await {
                                                        Ok(()) => { status.set(Some((true, format!("Ended session {id}."))));  sessions.refetch(); }
                                                        Err(e) => status.set(Some((false, e.to_string()))),
                                                    }
                                                });
                                            }>"End session"</button>
                                        })}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any(),
                Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
            })}
        </Suspense>
    }
}
