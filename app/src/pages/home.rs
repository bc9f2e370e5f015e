//! `/`: what Glassbox is and the live status of the server it talks to.

use leptos::prelude::*;

use crate::api;

#[component]
pub fn Home() -> impl IntoView {
    let health = LocalResource::new(api::health);
    view! {
        <section class="card">
            <h1>"Glassbox"</h1>
            <p>"Agent workflows whose every tool call is visible, stable and wireable."</p>
        </section>
        <section class="card" data-testid="server-status">
            <h2>"Server"</h2>
            <Suspense fallback=|| view! { <p class="muted">"Checking the server…"</p> }>
                {move || health.get().map(|result| match result {
                    Ok(h) => view! {
                        <dl class="facts">
                            <dt>"Status"</dt><dd data-testid="health-status">{h.status}</dd>
                            <dt>"Version"</dt><dd data-testid="server-version">{h.version}</dd>
                            <dt>"Database"</dt><dd data-testid="database">{h.database}</dd>
                            <dt>"Schema"</dt><dd>{h.schema_version}</dd>
                        </dl>
                    }.into_any(),
                    Err(err) => view! {
                        <p class="error" role="alert">{err.to_string()}</p>
                    }.into_any(),
                })}
            </Suspense>
        </section>
    }
}
