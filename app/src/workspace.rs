//! The workspace the app acts in: the caller's workspaces (asked once per
//! page load, while signed in), the navigation's switcher, and the
//! caller's role there, which pages read to turn off what the role may not
//! do (the server refuses it anyway, 403): a [`Gate`] per control, off
//! with a short hint while the role is below the one it takes. The current workspace is kept
//! in localStorage (`session::workspace`) and sent with every request.

use leptos::prelude::*;

use crate::api::{self, Role, WorkspaceList, WorkspaceView};
use crate::session;

/// What a viewer is told beside a Run control they cannot use.
pub const VIEWER_RUN_HINT: &str = "viewers cannot start runs";
/// What a viewer is told beside an approval they cannot decide.
pub const VIEWER_DECIDE_HINT: &str = "viewers cannot decide approvals";
/// What a viewer is told beside Save and what else changes a workflow.
pub const VIEWER_EDIT_HINT: &str = "viewers cannot change workflows";
/// What a viewer is told beside Cancel run.
pub const VIEWER_CANCEL_HINT: &str = "viewers cannot cancel runs";
/// What a viewer is told beside what changes a suite.
pub const VIEWER_SUITE_HINT: &str = "viewers cannot change suites";
/// What a viewer is told beside Save secret.
pub const VIEWER_SECRET_HINT: &str = "viewers cannot change secrets";
/// What an editor is told beside a workspace or organization secret.
pub const ADMIN_SECRET_HINT: &str = "only admins change workspace and organization secrets";

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

    /// The current workspace, once known (tracked).
    pub fn current(self) -> Option<WorkspaceView> {
        self.0.with(|l| l.as_ref().and_then(current_in).cloned())
    }

    /// The caller's role in the current workspace, once known (tracked).
    pub fn role(self) -> Option<Role> {
        self.0
            .with(|l| l.as_ref().and_then(current_in).map(|w| w.role))
    }

    /// Whether the caller is known to be an admin of the current workspace
    /// (tracked).
    pub fn is_admin(self) -> bool {
        self.role() == Some(Role::Admin)
    }
}

/// The current workspace among the caller's.
fn current_in(list: &WorkspaceList) -> Option<&WorkspaceView> {
    list.workspaces.iter().find(|w| w.id == list.current)
}

/// A control the caller's role may not use: off, with a short hint why,
/// while the caller's role in the current workspace is known to be below
/// the one it takes (the server refuses it anyway, 403). Made while a
/// component is built; what it answers is tracked.
#[derive(Clone, Copy)]
pub struct Gate {
    list: Option<Workspaces>,
    needs: Role,
    hint: &'static str,
}

impl Gate {
    /// A control that takes the editor role: a viewer finds it off.
    pub fn editor(hint: &'static str) -> Self {
        Self::needs(Role::Editor, hint)
    }

    /// A control that takes the role `needs`.
    pub fn needs(needs: Role, hint: &'static str) -> Self {
        Gate {
            list: context(),
            needs,
            hint,
        }
    }

    /// Whether the control is off.
    pub fn off(self) -> bool {
        self.list
            .and_then(Workspaces::role)
            .is_some_and(|role| !role.allows(self.needs))
    }

    /// Why it is off (for its `title`), while it is.
    pub fn why(self) -> Option<&'static str> {
        self.off().then_some(self.hint)
    }

    /// The hint shown beside the control while it is off.
    pub fn hint(self) -> impl IntoView {
        hint(move || self.why())
    }
}

/// The hint beside a control, while `why` says why it is off.
pub fn hint(why: impl Fn() -> Option<&'static str> + Send + Sync + 'static) -> impl IntoView {
    move || why().map(|h| view! { <span class="muted" data-testid="viewer-hint">{h}</span> })
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
        let name = current_in(&found)
            .map(|w| w.name.clone())
            .unwrap_or_default();
        let current = found.current.clone();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The caller's workspaces with `role` in the current one (`None`:
    /// not known yet).
    fn as_role(role: Option<Role>) -> Workspaces {
        let list = role.map(|role| WorkspaceList {
            workspaces: vec![WorkspaceView {
                id: "w1".into(),
                name: "Team space".into(),
                role,
                org_id: None,
                created_at: String::new(),
                members: 2,
            }],
            current: "w1".into(),
        });
        Workspaces(RwSignal::new(list))
    }

    #[test]
    fn a_viewer_finds_every_write_off_and_an_editor_only_the_admins() {
        let owner = Owner::new();
        owner.set();
        // (role, an editor's control off, an admin's control off)
        let cases = [
            (None, false, false),
            (Some(Role::Viewer), true, true),
            (Some(Role::Editor), false, true),
            (Some(Role::Admin), false, false),
        ];
        for (role, editor_off, admin_off) in cases {
            provide_context(as_role(role));
            let save = Gate::editor(VIEWER_EDIT_HINT);
            let shared = Gate::needs(Role::Admin, ADMIN_SECRET_HINT);
            assert_eq!(save.off(), editor_off, "{role:?}");
            assert_eq!(
                save.why(),
                editor_off.then_some("viewers cannot change workflows"),
                "{role:?}"
            );
            assert_eq!(shared.off(), admin_off, "{role:?}");
            assert_eq!(
                shared.why(),
                admin_off.then_some(ADMIN_SECRET_HINT),
                "{role:?}"
            );
        }
        // Outside a page (no workspaces given) nothing is turned off.
        let elsewhere = Owner::new_root(None);
        elsewhere.set();
        assert!(!Gate::editor(VIEWER_RUN_HINT).off());
        owner.set();
    }

    #[test]
    fn the_role_known_later_turns_the_control_off() {
        let owner = Owner::new();
        owner.set();
        let list = as_role(None);
        provide_context(list);
        let fork = Gate::editor(VIEWER_RUN_HINT);
        assert!(!fork.off());
        list.0.set(as_role(Some(Role::Viewer)).0.get_untracked());
        assert_eq!(fork.why(), Some("viewers cannot start runs"));
    }
}
