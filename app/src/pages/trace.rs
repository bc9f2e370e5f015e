//! `/runs/:id/trace`: the run's spans as a timeline tree with durations
//! (the default `traces_url` of every Agent Node).

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::api;
use crate::trace_view::{human_ms, layout};

#[component]
pub fn TracePage() -> impl IntoView {
    let params = use_params_map();
    let trace = LocalResource::new(move || {
        let id = params.with(|p| p.get("id")).unwrap_or_default();
        async move { api::run_trace(&id).await }
    });
    view! {
        <section class="card" data-testid="trace">
            <h1>"Trace"</h1>
            <Suspense fallback=|| view! { <p class="muted">"Loading the trace…"</p> }>
                {move || trace.get().map(|result| match result {
                    Ok(t) => {
                        let rows = layout(&t.spans);
                        let empty = rows.is_empty();
                        view! {
                            <dl class="facts">
                                <dt>"Run"</dt><dd data-testid="trace-run">{t.run_id.clone()}</dd>
                                <dt>"Status"</dt><dd data-testid="trace-status">{t.status.as_str()}</dd>
                                <dt>"Trace id"</dt><dd><code data-testid="trace-id">{t.trace_id.clone()}</code></dd>
                                <dt>"Spans"</dt><dd data-testid="trace-count">{rows.len()}</dd>
                            </dl>
                            {empty.then(|| view! {
                                <p class="muted">"No spans are stored for this run yet; a running run's spans appear as they end."</p>
                            })}
                            <table class="trace" data-testid="trace-rows">
                                <thead><tr><th>"Span"</th><th>"Duration"</th><th class="trace-axis">"Timeline"</th></tr></thead>
                                <tbody>
                                    {rows.into_iter().map(|r| {
                                        let indent = format!("padding-left: {}rem", r.depth as f64 * 1.25);
                                        let bar = format!("left: {:.3}%; width: max({:.3}%, 2px)", r.offset_pct, r.width_pct);
                                        let class = if r.error.is_some() { "trace-bar failed" } else { "trace-bar" };
                                        view! {
                                            <tr data-testid="trace-row" data-span=r.name.clone()>
                                                <td style=indent>
                                                    <strong>{r.name.clone()}</strong>" "
                                                    <span class="muted">{r.label.clone()}</span>
                                                    {r.error.clone().map(|e| view! { " " <span class="badge error">{e}</span> })}
                                                </td>
                                                <td class="num" data-testid="trace-duration">{human_ms(r.duration_ms)}</td>
                                                <td class="trace-axis"><div class="trace-track"><div class=class style=bar></div></div></td>
                                            </tr>
                                        }
                                    }).collect_view()}
                                </tbody>
                            </table>
                        }.into_any()
                    }
                    Err(err) => view! {
                        <p class="error" role="alert" data-testid="trace-error">{err.to_string()}</p>
                    }.into_any(),
                })}
            </Suspense>
        </section>
    }
}
