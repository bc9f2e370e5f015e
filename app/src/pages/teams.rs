//! Teams in Settings and the invitation page. Settings -> Workspace
//! renames the current workspace (admins) and creates a new one, which
//! becomes current; Settings -> Members lists the members, and for admins
//! changes a role, removes a member (after a confirmation) and makes
//! one-time invitation links (the link shown once, with Copy), listed with
//! Revoke while pending; Settings -> Audit (admins) is who did what, newest
//! first. `/invite/:token` shows what a link offers and accepts it with a
//! display name: signed in, in the link's workspace.

use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_params_map};
use node_runtime::wire::{
    InvitationAccept, WorkspaceName, INVITATION_DEFAULT_HOURS, INVITATION_MAX_HOURS,
};

use crate::api::{self, ApiError, InvitationStatus, Role};
use crate::runs_view::short_time;
use crate::session;
use crate::widgets::{confirm, OlderPages};
use crate::workspace::{self, Workspaces};

/// A line saying how the last action went: `(ok, words)`.
type Status = RwSignal<Option<(bool, String)>>;

fn status_line(status: Status, testid: &'static str) -> impl IntoView {
    move || {
        status.get().map(|(ok, m)| {
            view! { <p class=if ok { "notice" } else { "error" } role="status" data-testid=testid>{m}</p> }
        })
    }
}

/// The invitation link as a full address: this app's origin and `path`.
fn absolute(path: &str) -> String {
    let origin = web_sys::window()
        .and_then(|w| w.location().origin().ok())
        .unwrap_or_default();
    format!("{origin}{path}")
}

/// Settings -> Workspace: rename the current one (admins), create another
/// (which becomes current).
#[component]
pub fn WorkspaceSettings() -> impl IntoView {
    let workspaces = workspace::context();
    let rename_to = RwSignal::new(String::new());
    let new_name = RwSignal::new(String::new());
    let status: Status = RwSignal::new(None);
    // The rename field starts as the current name, once it is known.
    Effect::new(move |_| {
        if let Some(current) = workspaces.and_then(Workspaces::current) {
            rename_to.set(current.name);
        }
    });
    let rename = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let name = rename_to.get_untracked().trim().to_string();
        if let Err((_, why)) = (WorkspaceName { name: name.clone() }).check() {
            status.set(Some((false, format!("Not renamed: {why}."))));
            return;
        }
        leptos::task::spawn_local(async move {
            match api::rename_workspace(&name).await {
                Ok(w) => {
                    status.set(Some((
                        true,
                        format!("Renamed the workspace to {}.", w.name),
                    )));
                    if let Some(ws) = workspaces {
                        ws.reload();
                    }
                }
                Err(e) => status.set(Some((false, e.to_string()))),
            }
        });
    };
    let create = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let name = new_name.get_untracked().trim().to_string();
        if let Err((_, why)) = (WorkspaceName { name: name.clone() }).check() {
            status.set(Some((false, format!("Not created: {why}."))));
            return;
        }
        leptos::task::spawn_local(async move {
            match api::create_workspace(&name).await {
                // You are its admin; it becomes the one you work in.
                Ok(w) => workspace::switch_to(&w.id),
                Err(e) => status.set(Some((false, e.to_string()))),
            }
        });
    };
    let admin = move || workspaces.is_some_and(Workspaces::is_admin);
    view! {
        <h2>"Workspace"</h2>
        <p class="muted" data-testid="workspace-now">
            {move || workspaces.and_then(Workspaces::current).map(|w| view! {
                "You work in " <strong data-testid="workspace-name">{w.name}</strong> " as " {w.role.as_str()} "."
            })}
        </p>
        <Show when=admin>
            <form class="row" on:submit=rename data-testid="workspace-rename-form">
                <input type="text" aria-label="Workspace name" data-testid="workspace-rename-name"
                    prop:value=move || rename_to.get() on:input=move |ev| rename_to.set(event_target_value(&ev)) />
                <button type="submit" data-testid="workspace-rename">"Rename"</button>
            </form>
        </Show>
        <form class="row" on:submit=create data-testid="workspace-create-form">
            <input type="text" placeholder="New workspace name" aria-label="New workspace name" data-testid="new-workspace-name"
                prop:value=move || new_name.get() on:input=move |ev| new_name.set(event_target_value(&ev)) />
            <button type="submit" data-testid="new-workspace">"Create workspace"</button>
        </form>
        <p class="muted">"You become the new workspace's admin and work in it; switch between your workspaces in the navigation."</p>
        {status_line(status, "workspace-status")}
    }
}

/// Settings -> Members: the members (admins change roles and remove), and
/// for admins the invitation links.
#[component]
pub fn Members() -> impl IntoView {
    let workspaces = workspace::context();
    let members = LocalResource::new(api::list_members);
    let status: Status = RwSignal::new(None);
    let admin = move || workspaces.is_some_and(Workspaces::is_admin);
    let set_role = move |user: String, name: String, you: bool, role: String| {
        let Ok(role) = Role::parse(&role) else { return };
        leptos::task::spawn_local(async move {
            match api::change_role(&user, role).await {
                Ok(()) => {
                    status.set(Some((true, format!("{name} is now {role}."))));
                    if you {
                        if let Some(ws) = workspaces {
                            ws.reload();
                        }
                    }
                }
                Err(e) => status.set(Some((false, e.to_string()))),
            }
            members.refetch();
        });
    };
    let remove = move |user: String, name: String| {
        let place = workspaces
            .and_then(Workspaces::current)
            .map(|w| w.name)
            .unwrap_or_default();
        if !confirm(&format!(
            "Remove {name} from {place}? Their sessions and tokens stop reaching it at once."
        )) {
            return;
        }
        leptos::task::spawn_local(async move {
            match api::remove_member(&user).await {
                Ok(()) => status.set(Some((true, format!("Removed {name}.")))),
                Err(e) => status.set(Some((false, e.to_string()))),
            }
            members.refetch();
        });
    };
    let row = move |m: api::MemberView| {
        let (user, name) = (m.user_id.clone(), m.name.clone());
        let (user2, name2) = (m.user_id.clone(), m.name.clone());
        let you = m.you;
        let role_cell = if admin() {
            view! {
                <select data-testid="member-role" aria-label=format!("Role of {}", m.name)
                    on:change=move |ev| set_role(user.clone(), name.clone(), you, event_target_value(&ev))>
                    {Role::ALL.iter().rev().map(|r| view! {
                        <option value=r.as_str() selected=*r == m.role>{r.as_str()}</option>
                    }).collect_view()}
                </select>
            }
            .into_any()
        } else {
            view! { <span data-testid="member-role-text">{m.role.as_str()}</span> }.into_any()
        };
        view! {
            <tr data-member=m.user_id.clone() data-role=m.role.as_str()>
                <td data-testid="member-name">{m.name.clone()}{m.you.then_some(" (you)")}</td>
                <td>{role_cell}</td>
                <td class="muted">{m.joined_at.as_deref().map(short_time).unwrap_or_default()}</td>
                <td>{(admin() && !you).then(|| view! {
                    <button type="button" data-testid="member-remove"
                        on:click=move |_| remove(user2.clone(), name2.clone())>"Remove"</button>
                })}</td>
            </tr>
        }
    };
    view! {
        <h2>"Members"</h2>
        <p class="muted">"Admins manage members, connections and workspace secrets; editors edit workflows, start runs and decide approvals; viewers read."</p>
        {status_line(status, "member-status")}
        <Transition fallback=|| view! { <p class="muted">"Loading members…"</p> }>
            {move || members.get().map(|r| match r {
                Ok(list) => view! {
                    <table class="secrets" data-testid="member-list">
                        <thead><tr><th>"Member"</th><th>"Role"</th><th>"Joined"</th><th></th></tr></thead>
                        // Drawn again when the caller's role is known.
                        <tbody>{move || list.clone().into_iter().map(row).collect_view()}</tbody>
                    </table>
                }.into_any(),
                Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
            })}
        </Transition>
        <Show when=admin>
            <Invitations members />
        </Show>
    }
}

/// Invitation links: a new one for a role and a number of hours (shown
/// once, with Copy), and the workspace's links, pending ones with Revoke.
#[component]
fn Invitations(members: LocalResource<Result<Vec<api::MemberView>, ApiError>>) -> impl IntoView {
    let list = LocalResource::new(api::list_invitations);
    let role = RwSignal::new(Role::Editor);
    let hours = RwSignal::new(INVITATION_DEFAULT_HOURS.to_string());
    let created = RwSignal::new(None::<api::InvitationCreated>);
    let status: Status = RwSignal::new(None);
    let create = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let Ok(h) = hours.get_untracked().trim().parse::<u32>() else {
            status.set(Some((
                false,
                format!("The link works for a whole number of hours, 1 to {INVITATION_MAX_HOURS}."),
            )));
            return;
        };
        if !(1..=INVITATION_MAX_HOURS).contains(&h) {
            status.set(Some((
                false,
                format!("The link works 1 to {INVITATION_MAX_HOURS} hours (30 days)."),
            )));
            return;
        }
        let r = role.get_untracked();
        leptos::task::spawn_local(async move {
            match api::create_invitation(r, h).await {
                Ok(made) => {
                    status.set(None);
                    created.set(Some(made));
                    list.refetch();
                }
                Err(e) => status.set(Some((false, e.to_string()))),
            }
        });
    };
    let copy = move |_| {
        let Some(link) = created.with_untracked(|c| c.as_ref().map(|c| absolute(&c.path))) else {
            return;
        };
        leptos::task::spawn_local(async move {
            let copied = match web_sys::window() {
                Some(w) => {
                    let promise = w.navigator().clipboard().write_text(&link);
                    wasm_bindgen_futures::JsFuture::from(promise).await.is_ok()
                }
                None => false,
            };
            status.set(Some(if copied {
                (true, "Copied the link.".into())
            } else {
                (
                    false,
                    "This browser did not let the page copy; select the link and copy it.".into(),
                )
            }));
        });
    };
    let revoke = move |id: String| {
        if !confirm("Revoke this invitation? Its link stops working.") {
            return;
        }
        leptos::task::spawn_local(async move {
            match api::revoke_invitation(&id).await {
                Ok(()) => status.set(Some((true, "Revoked the invitation.".into()))),
                Err(e) => status.set(Some((false, e.to_string()))),
            }
            list.refetch();
        });
    };
    let shown_once = move || {
        created.get().map(|c| {
            let link = absolute(&c.path);
            view! {
                <div class="card" data-testid="invite-created">
                    <p class="notice">
                        "Send this link to who you invite: it makes them " {c.invitation.role.as_str()}
                        " and works once, until " {short_time(&c.invitation.expires_at)}
                        ". It is shown only now."
                    </p>
                    <div class="row">
                        <input type="text" readonly=true size="60" aria-label="Invitation link" data-testid="invite-link"
                            prop:value=link on:focus=|ev| {
                                use wasm_bindgen::JsCast;
                                if let Some(input) = ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok()) {
                                    input.select();
                                }
                            } />
                        <button type="button" class="primary" data-testid="invite-copy" on:click=copy>"Copy"</button>
                        <button type="button" data-testid="invite-done" on:click=move |_| created.set(None)>"Done"</button>
                    </div>
                </div>
            }
        })
    };
    let names = move |user: &str| {
        members.with(|m| {
            m.as_ref()
                .and_then(|r| r.as_ref().ok())
                .and_then(|l| l.iter().find(|m| m.user_id == user).map(|m| m.name.clone()))
                .unwrap_or_else(|| user.to_string())
        })
    };
    view! {
        <h3>"Invitations"</h3>
        <form class="row" on:submit=create data-testid="invite-form">
            <label>"Role "
                <select data-testid="invite-role" on:change=move |ev| {
                    if let Ok(r) = Role::parse(&event_target_value(&ev)) { role.set(r) }
                }>
                    {Role::ALL.iter().map(|r| view! {
                        <option value=r.as_str() selected=*r == Role::Editor>{r.as_str()}</option>
                    }).collect_view()}
                </select>
            </label>
            <label>"Expires in " <input type="number" min="1" max=INVITATION_MAX_HOURS.to_string() data-testid="invite-hours"
                prop:value=move || hours.get() on:input=move |ev| hours.set(event_target_value(&ev)) /> " hours"</label>
            <button type="submit" data-testid="invite-create">"Create invitation link"</button>
        </form>
        {status_line(status, "invite-status")}
        {shown_once}
        <Transition fallback=|| view! { <p class="muted">"Loading invitations…"</p> }>
            {move || list.get().map(|r| match r {
                Ok(items) if items.is_empty() => view! { <p class="muted" data-testid="invitations-empty">"No invitations yet."</p> }.into_any(),
                Ok(items) => view! {
                    <table class="secrets" data-testid="invitation-list">
                        <thead><tr><th>"Role"</th><th>"Status"</th><th>"Made"</th><th>"Expires"</th><th></th></tr></thead>
                        <tbody>
                            {items.into_iter().map(|i| {
                                let id = i.id.clone();
                                let state = match i.status {
                                    InvitationStatus::Pending => "pending".to_string(),
                                    InvitationStatus::Accepted => format!("accepted by {}", i.accepted_by.as_deref().map(names).unwrap_or_default()),
                                    InvitationStatus::Expired => "expired".to_string(),
                                    InvitationStatus::Revoked => "revoked".to_string(),
                                };
                                let pending = i.status == InvitationStatus::Pending;
                                view! {
                                    <tr data-invitation=i.id.clone() data-status=format!("{:?}", i.status).to_lowercase()>
                                        <td>{i.role.as_str()}</td>
                                        <td>{state}</td>
                                        <td class="muted">{short_time(&i.created_at)}</td>
                                        <td class="muted">{short_time(&i.expires_at)}</td>
                                        <td>{pending.then(|| view! {
                                            <button type="button" data-testid="invite-revoke" on:click=move |_| revoke(id.clone())>"Revoke"</button>
                                        })}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any(),
                Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
            })}
        </Transition>
    }
}

/// Settings -> Audit (admins): who did what in the workspace, newest
/// first, older pages on request.
#[component]
pub fn Audit() -> impl IntoView {
    let first = LocalResource::new(|| api::list_audit(None));
    let older = OlderPages::<api::AuditEvent>::new(move || {
        first.with(|r| {
            r.as_ref()
                .and_then(|r| r.as_ref().ok())
                .and_then(|l| l.next.clone())
        })
    });
    let more = move |_| {
        older.load(|cursor| async move {
            let page = api::list_audit(Some(&cursor)).await.ok()?;
            Some((page.events, page.next))
        });
    };
    view! {
        <h2>"Audit"</h2>
        <p class="muted">"Who started runs, decided approvals, changed connections, secrets and members."</p>
        <Transition fallback=|| view! { <p class="muted">"Loading the audit log…"</p> }>
            {move || first.get().map(|r| match r {
                Ok(page) if page.events.is_empty() => view! { <p class="muted" data-testid="audit-empty">"Nothing recorded yet."</p> }.into_any(),
                Ok(page) => view! {
                    <table class="secrets" data-testid="audit-list">
                        <thead><tr><th>"When"</th><th>"Who"</th><th>"What"</th><th>"On"</th><th>"Detail"</th></tr></thead>
                        <tbody>
                            {move || page.events.clone().into_iter().chain(older.items.get()).map(|e| {
                                let detail = if e.detail.is_null() || e.detail == serde_json::json!({}) {
                                    String::new()
                                } else {
                                    e.detail.to_string()
                                };
                                view! {
                                    <tr data-testid="audit-event" data-action=e.action.clone()>
                                        <td class="muted">{short_time(&e.at)}</td>
                                        <td>{e.actor_name.clone()}</td>
                                        <td><code>{e.action.clone()}</code></td>
                                        <td><code>{e.target.clone()}</code></td>
                                        <td class="muted"><code>{detail}</code></td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                    {move || older.next.get().is_some().then(|| view! {
                        <button type="button" data-testid="audit-more" on:click=more>"Load more"</button>
                    })}
                }.into_any(),
                Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
            })}
        </Transition>
    }
}

/// An invitation link's problem in words: unknown (404), or no longer
/// usable (410: the server says which: used, expired or revoked).
fn invitation_problem(e: &ApiError) -> String {
    match e {
        ApiError::Api { status: 404, .. } => "This invitation link is not known. Check that it was copied whole, or ask the admin who sent it for a new one.".into(),
        ApiError::Api { status: 410, message, .. } => format!("This invitation can no longer be used: {message}. Ask the admin who sent it for a new one."),
        other => other.to_string(),
    }
}

/// `/invite/:token`: what the link offers (workspace, role, who invited,
/// until when), a display name, and Accept, which signs in and opens the
/// workspace's workflows.
#[component]
pub fn InvitePage() -> impl IntoView {
    let params = use_params_map();
    let token = move || params.with(|p| p.get("token")).unwrap_or_default();
    let preview = LocalResource::new(move || {
        let t = token();
        async move { api::invitation_preview(&t).await }
    });
    let workspaces = workspace::context();
    let signed_in = session::load().is_some();
    let display_name = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let navigate = use_navigate();
    let accept = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let name = display_name.get_untracked().trim().to_string();
        let body = InvitationAccept {
            display_name: (!name.is_empty()).then_some(name),
        };
        if body.display_name.is_none() && !signed_in {
            problem.set(Some(
                "Choose a display name: it is how the workspace's members see you.".into(),
            ));
            return;
        }
        if let Err((_, why)) = body.check() {
            problem.set(Some(format!("{why}.")));
            return;
        }
        let Some(Ok(offer)) = preview.get_untracked() else {
            return;
        };
        let (t, navigate) = (token(), navigate.clone());
        busy.set(true);
        leptos::task::spawn_local(async move {
            match api::accept_invitation(&t, body.display_name.as_deref()).await {
                Ok(s) => {
                    if session::save(&s.session_token)
                        && session::save_workspace(&offer.workspace_id)
                    {
                        if let Some(ws) = workspaces {
                            ws.reload();
                        }
                        navigate("/workflows", Default::default());
                    } else {
                        problem.set(Some("Joined, but this browser does not allow storing the session (localStorage is off).".into()));
                    }
                }
                Err(e) => problem.set(Some(invitation_problem(&e))),
            }
            busy.set(false);
        });
    };
    view! {
        <section class="card" data-testid="invite-page">
            <h1>"Invitation"</h1>
            <Suspense fallback=|| view! { <p class="muted">"Reading the invitation…"</p> }>
                {move || preview.get().map(|r| match r {
                    Ok(offer) => view! {
                        <p>"You are invited to join " <strong data-testid="invite-workspace">{offer.workspace_name.clone()}</strong> "."</p>
                        <dl class="facts">
                            <dt>"Workspace"</dt><dd>{offer.workspace_name.clone()}</dd>
                            <dt>"Role"</dt><dd data-testid="invite-role-offered">{offer.role.as_str()}</dd>
                            <dt>"Invited by"</dt><dd data-testid="invite-inviter">{offer.invited_by.clone()}</dd>
                            <dt>"Expires"</dt><dd>{short_time(&offer.expires_at)}</dd>
                        </dl>
                        <form class="row" on:submit=accept.clone() data-testid="invite-accept-form">
                            <input type="text" placeholder="Your display name" aria-label="Display name" data-testid="invite-display-name"
                                prop:value=move || display_name.get() on:input=move |ev| display_name.set(event_target_value(&ev)) />
                            <button type="submit" class="primary" data-testid="invite-accept" prop:disabled=move || busy.get()>"Accept and sign in"</button>
                        </form>
                        {signed_in.then(|| view! {
                            <p class="muted">"You are signed in in this browser: accepting adds your account to the workspace (a display name is then not needed)."</p>
                        })}
                        {move || problem.get().map(|p| view! { <p class="error" role="alert" data-testid="invite-error">{p}</p> })}
                    }.into_any(),
                    Err(e) => view! {
                        <p class="error" role="alert" data-testid="invite-error">{invitation_problem(&e)}</p>
                    }.into_any(),
                })}
            </Suspense>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_link_is_told_in_words() {
        let unknown = ApiError::Api {
            status: 404,
            code: "NOT_FOUND".into(),
            message: "no invitation has this link".into(),
        };
        assert!(invitation_problem(&unknown).contains("not known"));
        let used = ApiError::Api {
            status: 410,
            code: "GONE".into(),
            message: "this invitation was already accepted".into(),
        };
        let told = invitation_problem(&used);
        assert!(
            told.contains("can no longer be used: this invitation was already accepted"),
            "{told}"
        );
    }
}
