//! Pieces of view shared by several pages: a tool's badges, the tool
//! filters (search, category, "show deprecated"), the approval buttons of a
//! pending write, refreshing while something may still change, and the
//! navigation's count of pending approvals, and the browser's confirmation
//! dialog.

use std::time::Duration;

use leptos::prelude::*;

use crate::api;
use crate::editor::tools::{self, ToolInfo, CATEGORIES};
use crate::live::Approval;

/// Asks the browser's confirmation dialog; false when there is no window.
pub fn confirm(message: &str) -> bool {
    web_sys::window()
        .and_then(|w| w.confirm_with_message(message).ok())
        .unwrap_or(false)
}

/// A tool's badges: MCP and its server, category, side effects (with why),
/// auth status, deprecation.
pub fn tool_badges(t: &ToolInfo) -> impl IntoView {
    let auth = tools::auth_badge(t);
    let mcp = t.mcp.as_ref().map(|m| {
        let server = m
            .server_name
            .clone()
            .unwrap_or_else(|| m.connection.clone());
        let title = format!(
            "From the MCP server {server} {} (connection {}, protocol {})",
            m.server_version.clone().unwrap_or_default(),
            m.connection,
            m.protocol_version.clone().unwrap_or_default()
        );
        view! {
            <span class="badge mcp" data-testid="mcp-badge" title=title>"MCP"</span>
            <span class="badge" data-testid="mcp-server-name">{server}</span>
        }
    });
    view! {
        {mcp}
        <span class="badge">{t.category.as_str()}</span>
        <span class=format!("badge effect-{}", t.side_effects) data-testid="effect-badge"
            title=t.effect_description.clone().unwrap_or_default()>{t.side_effects.as_str()}</span>
        {auth.map(|(text, warn)| view! {
            <span class=if warn { "badge warn" } else { "badge" } data-testid="auth-badge">{text}</span>
        })}
        {(t.lifecycle == node_runtime::tool_spec::Lifecycle::Deprecated).then(|| view! {
            <span class="badge warn" data-testid="deprecated-badge" title="Deprecated: still runs, with a warning; pick a newer version">"deprecated"</span>
        })}
    }
}

/// The tool filters: a search box, a category filter and "show deprecated".
#[component]
pub fn ToolFilters(
    query: RwSignal<String>,
    category: RwSignal<String>,
    show_deprecated: RwSignal<bool>,
) -> impl IntoView {
    view! {
        <div class="tool-filters">
            <input type="search" placeholder="Search tools" aria-label="Search tools" data-testid="tool-search"
                prop:value=move || query.get() on:input=move |ev| query.set(event_target_value(&ev)) />
            <select data-testid="tool-category" aria-label="Category" on:change=move |ev| category.set(event_target_value(&ev))>
                <option value="">"All categories"</option>
                {CATEGORIES.iter().map(|c| view! { <option value=*c>{*c}</option> }).collect_view()}
            </select>
            <label><input type="checkbox" data-testid="show-deprecated" prop:checked=move || show_deprecated.get()
                on:change=move |ev| show_deprecated.set(event_target_checked(&ev)) />" show deprecated"</label>
        </div>
    }
}

/// How often a page showing something that changes asks again.
pub const REFRESH: Duration = Duration::from_millis(1000);

/// Refetches `refetch` after [`REFRESH`] whenever `active` says so; the
/// pending timer is cleared when the page goes away.
pub fn refresh_while(active: impl Fn() -> bool + 'static, refetch: impl Fn() + Clone + 'static) {
    let timer = StoredValue::new_local(None::<TimeoutHandle>);
    Effect::new(move |_| {
        if active() {
            let refetch = refetch.clone();
            if let Ok(handle) = set_timeout_with_handle(refetch, REFRESH) {
                if let Some(old) = timer.try_update_value(|t| t.replace(handle)).flatten() {
                    old.clear();
                }
            }
        }
    });
    on_cleanup(move || {
        if let Some(handle) = timer.try_update_value(Option::take).flatten() {
            handle.clear();
        }
    });
}

/// Approve, Deny (with a reason) or Request revision (with a note) for a
/// write waiting in the timeline. The decision then arrives as an event,
/// like one made elsewhere (another user, the CLI).
pub fn approval_form(approval: Approval, problem: RwSignal<Option<String>>) -> impl IntoView {
    let text = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    // A viewer sees the write but decides nothing (the server refuses too).
    let gate = crate::workspace::Gate::editor(crate::workspace::VIEWER_DECIDE_HINT);
    let off = move || busy.get() || gate.off();
    let decide = move |decision: &'static str| {
        let token = approval.token.clone();
        move |ev: leptos::ev::MouseEvent| {
            ev.stop_propagation();
            let note = text.get_untracked().trim().to_string();
            if decision != "approve" && note.is_empty() {
                problem.set(Some(match decision {
                    "deny" => "Give a reason to deny the write; the model receives it.".into(),
                    _ => "Write a note for the model to request a revision.".into(),
                }));
                return;
            }
            let token = token.clone();
            busy.set(true);
            leptos::task::spawn_local(async move {
                match api::decide_approval(&token, decision, &note).await {
                    Ok(()) => problem.set(None),
                    Err(e) => problem.set(Some(e.to_string())),
                }
                busy.set(false);
            });
        }
    };
    view! {
        <div class="approval" data-testid="approval" on:click=|ev| ev.stop_propagation()>
            <span class="muted">{approval.effect.clone()}</span>
            <input type="text" data-testid="approval-text" placeholder="Reason (deny) or note (revise)"
                prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev)) />
            <button type="button" class="primary" data-testid="approve" prop:disabled=off title=move || gate.why() on:click=decide("approve")>"Approve"</button>
            <button type="button" data-testid="deny" prop:disabled=off title=move || gate.why() on:click=decide("deny")>"Deny"</button>
            <button type="button" data-testid="revise" prop:disabled=off title=move || gate.why() on:click=decide("revise")>"Request revision"</button>
            {gate.hint()}
        </div>
    }
}

/// How often the navigation asks how many writes wait for approval.
const APPROVALS_EVERY: Duration = Duration::from_secs(5);

/// The navigation's count of writes waiting for approval (while signed
/// in), a link to where they are decided.
#[component]
pub fn PendingApprovals() -> impl IntoView {
    let count = RwSignal::new(0usize);
    let ask = move || {
        if crate::session::load().is_none() {
            return;
        }
        leptos::task::spawn_local(async move {
            if let Ok(pending) = api::pending_approvals().await {
                count.set(pending.len());
            }
        });
    };
    ask();
    if let Ok(handle) = set_interval_with_handle(ask, APPROVALS_EVERY) {
        on_cleanup(move || handle.clear());
    }
    move || {
        let n = count.get();
        (n > 0).then(|| {
            view! {
                <a href="/tools?tab=approvals" class="badge warn" data-testid="nav-approvals"
                    title="Writes waiting for a human's decision">
                    {format!("{n} approval{} waiting", if n == 1 { "" } else { "s" })}
                </a>
            }
        })
    }
}

/// The pages of a list below its first: kept while the first page stays,
/// dropped when it changes (a filter, a refresh), loaded on request.
pub struct OlderPages<T: Send + Sync + 'static> {
    pub items: RwSignal<Vec<T>>,
    /// The cursor of the next page, `None` on the last.
    pub next: RwSignal<Option<String>>,
}

impl<T: Send + Sync + 'static> Clone for OlderPages<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Send + Sync + 'static> Copy for OlderPages<T> {}

impl<T: Send + Sync + 'static> OlderPages<T> {
    /// Follows the first page: `first_next` is its `next_cursor`.
    pub fn new(first_next: impl Fn() -> Option<String> + 'static) -> Self {
        let pages = Self {
            items: RwSignal::new(Vec::new()),
            next: RwSignal::new(None),
        };
        Effect::new(move |_| {
            let next = first_next();
            pages.items.set(Vec::new());
            pages.next.set(next);
        });
        pages
    }

    /// Loads the next page with `fetch(cursor)`, which answers its rows and
    /// the cursor after them.
    pub fn load<Fut>(self, fetch: impl FnOnce(String) -> Fut + 'static)
    where
        Fut: std::future::Future<Output = Option<(Vec<T>, Option<String>)>> + 'static,
    {
        let Some(cursor) = self.next.get_untracked() else {
            return;
        };
        leptos::task::spawn_local(async move {
            if let Some((rows, next)) = fetch(cursor).await {
                self.items.update(|o| o.extend(rows));
                self.next.set(next);
            }
        });
    }
}
