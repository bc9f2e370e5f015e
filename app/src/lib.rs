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
pub mod trace_view;
pub mod widgets;

use leptos::prelude::*;
use leptos_router::components::{Route, Router, Routes, A};
use leptos_router::path;

/// The root component: navigation and the client-side routes.
#[component]
pub fn App() -> impl IntoView {
    view! {
        <Router>
            <header class="topbar">
                <A href="/" attr:class="brand">"Glassbox"</A>
                <nav>
                    <A href="/">"Home"</A>
                    <A href="/workflows">"Workflows"</A>
                    <A href="/runs">"Runs"</A>
                    <A href="/tools">"Tools"</A>
                    <A href="/settings">"Settings"</A>
                </nav>
            </header>
            <main class="page">
                <Routes fallback=|| view! { <pages::NotFound /> }>
                    <Route path=path!("/") view=pages::Home />
                    <Route path=path!("/signin") view=pages::SignIn />
                    <Route path=path!("/runs") view=pages::Runs />
                    <Route path=path!("/runs/:id") view=pages::RunPage />
                    <Route path=path!("/runs/:id/trace") view=pages::TracePage />
                    <Route path=path!("/tools") view=pages::Tools />
                    <Route path=path!("/workflows") view=pages::Workflows />
                    <Route path=path!("/settings") view=pages::Settings />
                    <Route path=path!("/workflows/:id") view=pages::EditorPage />
                </Routes>
            </main>
        </Router>
    }
}
