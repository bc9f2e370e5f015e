//! The fallback for client routes that do not exist.

use leptos::prelude::*;
use leptos_router::components::A;

#[component]
pub fn NotFound() -> impl IntoView {
    view! {
        <section class="card">
            <h1>"Page not found"</h1>
            <p>"There is nothing at this address. " <A href="/">"Back to the start page"</A></p>
        </section>
    }
}
