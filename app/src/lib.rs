//! The Glassbox browser app (Leptos, client-side rendered).
//!
//! `api` is the typed client of the JSON API (one async fn per endpoint,
//! non-2xx mapped to the shared wire error); `pages` holds one module per
//! route. The app depends on `node-runtime` for shared types and must not
//! depend on the server crate.

pub mod api;
pub mod call_view;
pub mod editor;
pub mod files;
pub mod live;
pub mod pages;
pub mod runs_view;
pub mod session;
pub mod suites_view;
pub mod templates;
pub mod theme;
pub mod trace_view;
pub mod widgets;
pub mod workspace;

use leptos::prelude::*;
use leptos_router::components::{Route, Router, Routes, A};
use leptos_router::{path, Lazy, LazyRoute};

/// A route whose page is loaded on its first visit, from a wasm module of
/// its own (split from the app's by `cargo xtask split-wasm`, Trunk's
/// post-build hook): the first load fetches only the shell and the pages
/// every visit needs. `$split` names the split point, `$module` the module
/// it is in (`split_<module>.wasm`): pages that share most of their code
/// share a module, since every distinct set of modules sharing code is a
/// chunk of its own, fetched and compressed on its own (the editor's load
/// fetched 117 of them). A module that cannot be fetched shows as an error
/// on the page; opening the page again tries again.
macro_rules! lazy_page {
    ($route:ident, $split:ident in $module:ident, $page:path, $what:literal) => {
        #[leptos::wasm_split::wasm_split($module, wasm_split_path = ::leptos::wasm_split, fallible)]
        fn $split() -> Result<AnyView, leptos::wasm_split::SplitLoaderError> {
            Ok(view! { <$page /> }.into_any())
        }

        #[derive(Debug)]
        struct $route;

        impl LazyRoute for $route {
            fn data() -> Self {
                Self
            }

            async fn view(_this: Self) -> AnyView {
                $split().await.unwrap_or_else(|_| page_unavailable($what))
            }
        }
    };
}

/// What a lazy page shows when its module cannot be fetched.
fn page_unavailable(what: &'static str) -> AnyView {
    view! {
        <p class="error" role="alert" data-testid="page-unavailable">
            "The " {what} " page could not be loaded from the server. "
            "Check the connection, then open the page again."
        </p>
    }
    .into_any()
}

lazy_page!(EditorRoute, editor_page in editor_page, pages::EditorPage, "editor");
// What a run is: the list, a run, its trace, suites of runs (one module).
lazy_page!(RunsRoute, runs_page in runs_pages, pages::Runs, "runs");
lazy_page!(RunRoute, run_page in runs_pages, pages::RunPage, "run");
lazy_page!(TraceRoute, trace_page in runs_pages, pages::TracePage, "trace");
lazy_page!(SuitesRoute, suites_page in runs_pages, pages::Suites, "suites");
lazy_page!(SuiteRoute, suite_page in runs_pages, pages::SuitePage, "suite");
// The workspace's tools and settings (one module).
lazy_page!(ToolsRoute, tools_page in admin_pages, pages::Tools, "tools");
lazy_page!(SettingsRoute, settings_page in admin_pages, pages::Settings, "settings");
lazy_page!(InviteRoute, invite_page in admin_pages, pages::InvitePage, "invitation");
lazy_page!(
    WorkflowsRoute,
    workflows_page in workflows_page,
    pages::Workflows,
    "workflows"
);

/// The root component: navigation and the client-side routes.
#[component]
pub fn App() -> impl IntoView {
    let chosen = RwSignal::new(theme::load());
    theme::apply(&chosen.get_untracked());
    workspace::provide();
    let toggle = move |_| {
        let next = theme::next(&chosen.get_untracked());
        theme::set(next);
        chosen.set(next.to_string());
    };
    view! {
        <Router>
            <header class="topbar">
                <A href="/" attr:class="brand">"Glassbox"</A>
                <workspace::Switcher />
                <nav>
                    <A href="/">"Home"</A>
                    <A href="/workflows">"Workflows"</A>
                    <A href="/runs">"Runs"</A>
                    <A href="/suites">"Suites"</A>
                    <A href="/tools">"Tools"</A>
                    <A href="/settings">"Settings"</A>
                    <widgets::PendingApprovals />
                    <button type="button" class="theme" data-testid="theme" title="Colour theme: the system's, dark or light"
                        on:click=toggle>{move || format!("Theme: {}", chosen.get())}</button>
                    <button type="button" class="link" data-testid="signout" on:click=move |_| {
                        leptos::task::spawn_local(async {
                            // Ended on the server first; the page forgets it either way.
                            let _ = api::logout().await;
                            session::clear();
                            if let Some(w) = web_sys::window() {
                                let _ = w.location().set_href("/");
                            }
                        });
                    }>"Sign out"</button>
                </nav>
            </header>
            <main class="page">
                <Routes fallback=|| view! { <pages::NotFound /> }>
                    <Route path=path!("/") view=pages::Home />
                    <Route path=path!("/signin") view=pages::SignIn />
                    <Route path=path!("/invite/:token") view={Lazy::<InviteRoute>::new()} />
                    <Route path=path!("/runs") view={Lazy::<RunsRoute>::new()} />
                    <Route path=path!("/runs/:id") view={Lazy::<RunRoute>::new()} />
                    <Route path=path!("/runs/:id/trace") view={Lazy::<TraceRoute>::new()} />
                    <Route path=path!("/suites") view={Lazy::<SuitesRoute>::new()} />
                    <Route path=path!("/suites/:id") view={Lazy::<SuiteRoute>::new()} />
                    <Route path=path!("/tools") view={Lazy::<ToolsRoute>::new()} />
                    <Route path=path!("/workflows") view={Lazy::<WorkflowsRoute>::new()} />
                    <Route path=path!("/settings") view={Lazy::<SettingsRoute>::new()} />
                    <Route path=path!("/workflows/:id") view={Lazy::<EditorRoute>::new()} />
                </Routes>
            </main>
        </Router>
    }
}
