//! `/signin?token=...`: exchanges the one-time link printed by the server
//! for a session and keeps it in the browser.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

use crate::{api, session};

#[component]
pub fn SignIn() -> impl IntoView {
    let query = use_query_map();
    let workspaces = crate::workspace::context();
    let result = LocalResource::new(move || {
        let token = query.with(|q| q.get("token")).unwrap_or_default();
        async move {
            if token.is_empty() {
                return Err("This link has no sign-in token. Use the link the server printed when it started.".to_string());
            }
            match api::exchange(&token).await {
                Ok(s) => {
                    if session::save(&s.session_token) {
                        // Whoever signed in acts in their own first
                        // workspace, not one remembered from before.
                        session::forget_workspace();
                        if let Some(w) = workspaces {
                            w.reload();
                        }
                        Ok(s.user_id)
                    } else {
                        Err("Signed in, but this browser does not allow storing the session (localStorage is off).".to_string())
                    }
                }
                Err(e) => Err(e.to_string()),
            }
        }
    });
    view! {
        <section class="card" data-testid="signin">
            <h1>"Sign in"</h1>
            <Suspense fallback=|| view! { <p class="muted">"Signing in…"</p> }>
                {move || result.get().map(|r| match r {
                    Ok(user) => view! {
                        <p data-testid="signin-ok">"Signed in as " <strong>{user}</strong> "."</p>
                        <p><A href="/">"Continue"</A></p>
                    }.into_any(),
                    Err(message) => view! {
                        <p class="error" role="alert" data-testid="signin-error">{message}</p>
                    }.into_any(),
                })}
            </Suspense>
        </section>
    }
}
