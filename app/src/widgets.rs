//! Pieces of view shared by several pages: a tool's badges and the tool
//! filters (search, category, "show deprecated").

use leptos::prelude::*;

use crate::editor::tools::{self, ToolInfo, CATEGORIES};

/// A tool's badges: category, side effects, auth status, deprecation.
pub fn tool_badges(t: &ToolInfo) -> impl IntoView {
    let auth = tools::auth_badge(t);
    view! {
        <span class="badge">{t.category.clone()}</span>
        <span class=format!("badge effect-{}", t.side_effects) data-testid="effect-badge">{t.side_effects.clone()}</span>
        {auth.map(|(text, warn)| view! {
            <span class=if warn { "badge warn" } else { "badge" } data-testid="auth-badge">{text}</span>
        })}
        {(t.lifecycle == "deprecated").then(|| view! {
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
