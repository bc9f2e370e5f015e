//! The workspace the app acts in: the caller's workspaces (asked once per
//! page load, while signed in), the navigation's switcher, and the
//! caller's role there, which pages read to turn off what the role may not
//! do (the server refuses it anyway, 403). The current workspace is kept
//! in localStorage (`session::workspace`) and sent with every request.

use leptos::prelude::*;

use crate::api::{self, Role, WorkspaceList};
use crate::session;

/// What a viewer is told beside a Run control they cannot use.
pub const VIEWER_RUN_HINT: &str = "viewers cannot start runs";
/// What a viewer is told beside an approval they cannot decide.
pub const VIEWER_DECIDE_HINT: &str = "viewers cannot decide approvals";

/// The caller's workspaces, `None` until known (or signed out).
#[derive(Clone, Copy)]
pub struct Workspaces(pub RwSignal<Option<WorkspaceList>>);

/// Makes the workspaces known to every page and asks for them.
pub fn provide() {
    let list = Workspaces(RwSignal::new(None));
    provide_context(list);
    list.reload();
}

/// The workspaces the page was given (read while a component is built:
/// a context is found through its owner).
pub fn context() -> Option<Workspaces> {
    use_context::<Workspaces>()
}

impl Workspaces {
    /// Asks the server for the caller's workspaces again (after signing
    /// in, joining, creating or renaming one). The one the server acted in
    /// is remembered, so a workspace made later never changes which is
    /// current.
    pub fn reload(self) {
        if session::load().is_none() {
            self.0.set(None);
            return;
        }
        leptos::task::spawn_local(async move {
            if let Ok(found) = api::list_workspaces().await {
                if session::workspace().as_deref() != Some(found.current.as_str()) {
                    session::save_workspace(&found.current);
                }
                self.0.set(Some(found));
            }
        });
    }

    /// The caller's role in the current workspace, once known (tracked).
    pub fn role(self) -> Option<Role> {
        self.0.with(|l| {
            l.as_ref().and_then(|l| {
                l.workspaces
                    .iter()
                    .find(|w| w.id == l.current)
                    .map(|w| w.role)
            })
        })
    }
}

/// Whether the caller only reads in the current workspace (a viewer):
/// Run and approval decisions are off. Call it while a component is built;
/// the answer is tracked.
pub fn read_only() -> impl Fn() -> bool + Copy + 'static {
    let list = context();
    move || list.is_some_and(|l| l.role() == Some(Role::Viewer))
}

/// Makes `id` the current workspace and opens its workflows, every page's
/// data loaded afresh.
pub fn switch_to(id: &str) {
    session::save_workspace(id);
    if let Some(w) = web_sys::window() {
        let _ = w.location().set_href("/workflows");
    }
}

/// The navigation's workspace switcher: the current workspace's name, the
/// caller's other workspaces to switch to.
#[component]
pub fn Switcher() -> impl IntoView {
    let list = context().map(|w| w.0);
    move || {
        let found = list.and_then(|l| l.get())?;
        let current = found.current.clone();
        let name = found
            .workspaces
            .iter()
            .find(|w| w.id == current)
            .map(|w| w.name.clone())
            .unwrap_or_default();
        Some(view! {
            <select class="workspace" data-testid="workspace-switcher" aria-label="Workspace"
                title="The workspace you work in; switch to another of yours" data-current-name=name
                on:change=move |ev| switch_to(&event_target_value(&ev))>
                {found.workspaces.into_iter().map(|w| {
                    let selected = w.id == current;
                    view! { <option value=w.id.clone() selected=selected data-workspace=w.id>{w.name}</option> }
                }).collect_view()}
            </select>
        })
    }
}
