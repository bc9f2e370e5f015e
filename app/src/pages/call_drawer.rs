//! The invocation drawer (seed 001), shared by the live timeline and the
//! Tools page: status, approval, side-effect and cost badges; input and
//! output (or error) in a collapsible JSON viewer; the whole payload of a
//! truncated output fetched from its blob.

use leptos::prelude::*;
use leptos_router::components::A;
use serde_json::Value;

use crate::api;
use crate::call_view::{scalar_class, summary, truncated_blob, CallFacts};

/// A JSON value as a tree: objects and arrays fold (`<details>`), open to
/// `open_depth` levels; scalars are coloured by type.
pub fn json_tree(value: &Value, open_depth: usize) -> AnyView {
    fn entry(key: Option<String>, value: &Value, depth: usize, open_depth: usize) -> AnyView {
        let label = key.map(|k| view! { <span class="json-key">{k}</span> ": " });
        match value {
            Value::Object(_) | Value::Array(_) => {
                // Built once, not reactive: the children are read in place.
                let children: Vec<AnyView> = match value {
                    Value::Object(m) => m
                        .iter()
                        .map(|(k, v)| entry(Some(k.clone()), v, depth + 1, open_depth))
                        .collect(),
                    Value::Array(a) => a
                        .iter()
                        .enumerate()
                        .map(|(i, v)| entry(Some(i.to_string()), v, depth + 1, open_depth))
                        .collect(),
                    _ => Vec::new(),
                };
                view! {
                    <details class="json-node" open={depth < open_depth}>
                        <summary>{label}<span class="muted">{summary(value)}</span></summary>
                        <ul>{children.into_iter().map(|c| view! { <li>{c}</li> }).collect_view()}</ul>
                    </details>
                }
                .into_any()
            }
            scalar => view! {
                <span>{label}<span class=scalar_class(scalar)>{scalar.to_string()}</span></span>
            }
            .into_any(),
        }
    }
    view! { <div class="json-tree">{entry(None, value, 0, open_depth)}</div> }.into_any()
}

/// Fetches a truncated output's blob and saves it as a file; `note` says
/// what happened, in words.
fn save_blob(hash: String, note: RwSignal<Option<(bool, String)>>) {
    note.set(Some((true, "Fetching the full output…".into())));
    leptos::task::spawn_local(async move {
        let name = format!("glassbox-output-{}.json", &hash[..hash.len().min(12)]);
        let saved = match api::blob(&hash).await {
            Ok(value) => {
                let text = serde_json::to_string_pretty(&value).unwrap_or_default();
                crate::files::download(&name, &text)
                    .map(|()| format!("Saved {name} ({} bytes).", text.len()))
            }
            Err(e) => Err(e.to_string()),
        };
        note.set(Some(match saved {
            Ok(m) => (true, m),
            Err(e) => (false, format!("Cannot fetch the full output: {e}")),
        }));
    });
}

/// The drawer of one call; `close` hides it.
#[component]
pub fn CallDrawer(facts: CallFacts, #[prop(into)] close: Callback<()>) -> impl IntoView {
    let note = RwSignal::new(None::<(bool, String)>);
    let blob = truncated_blob(&facts.output);
    let effect = facts
        .side_effects
        .clone()
        .unwrap_or_else(|| "unknown".into());
    let failed = facts.error.is_some();
    view! {
        <div class="drawer" data-testid="call-drawer" role="dialog" aria-label="Tool call">
            <h3><code>{facts.tool.clone()}</code> " " <span class="muted">{facts.call_id.clone()}</span></h3>
            <p class="badges">
                <span class=format!("badge run-status status-{}", facts.status.replace(' ', "_")) data-testid="drawer-status">{facts.status.clone()}</span>
                {facts.approval_status.clone().map(|a| view! { <span class="badge" data-testid="drawer-approval">{format!("approval: {a}")}</span> })}
                <span class=format!("badge effect-{effect}") data-testid="drawer-effect">{effect.clone()}</span>
                {facts.cost.map(|c| view! { <span class="badge" data-testid="drawer-cost">{format!("cost {c}")}</span> })}
                {facts.latency_ms.map(|l| view! { <span class="badge">{format!("{l:.0} ms")}</span> })}
                {facts.cached.then(|| view! { <span class="badge">"cached"</span> })}
                {facts.truncated.then(|| view! { <span class="badge warn">"truncated"</span> })}
            </p>
            {facts.reason.clone().map(|r| view! { <p>"Reason: " {r}</p> })}
            {facts.run.clone().map(|(run, node)| view! {
                <p class="muted">"Run " <A href=format!("/runs/{run}")><code>{run.clone()}</code></A> ", node " {node}</p>
            })}
            <h4>"Input"</h4>
            <div data-testid="drawer-input">{json_tree(&facts.input, 2)}</div>
            {if failed {
                view! { <h4>"Error"</h4><div data-testid="drawer-error">{json_tree(facts.error.as_ref().unwrap_or(&Value::Null), 2)}</div> }.into_any()
            } else {
                view! { <h4>"Output"</h4><div data-testid="drawer-output">{json_tree(&facts.output, 2)}</div> }.into_any()
            }}
            {blob.map(|(hash, bytes)| {
                let size = bytes.map(|b| format!(" ({b} bytes)")).unwrap_or_default();
                view! {
                    <p>"The output was truncated; the whole payload is kept as a blob. "
                        <button type="button" class="link" data-testid="drawer-blob"
                            on:click=move |_| save_blob(hash.clone(), note)>{format!("Download the full output{size}")}</button>
                    </p>
                }
            })}
            {move || note.get().map(|(ok, m)| view! {
                <p class=if ok { "notice" } else { "error" } role="status" data-testid="drawer-note">{m}</p>
            })}
            <button type="button" data-testid="drawer-close" on:click=move |_| close.run(())>"Close"</button>
        </div>
    }
}
