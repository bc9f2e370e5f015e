//! `/runs`: the workspace's runs with status, duration and trigger, filtered
//! by status and workflow; `/runs/:id`: one run's status, node results,
//! Agent outputs and links to its trace, replay, fork with changes, add to
//! a regression suite, and a fork's calls side by side with its origin's.
//! Both refresh while a run is active.

use std::collections::BTreeMap;

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params_map};

use crate::api;
use crate::pages::run_graph::RunGraph;
use crate::pages::suites::AddToSuite;
use crate::runs_view::{self, format_duration, node_results, short_time, STATUSES};
use crate::widgets::{refresh_while, OlderPages};
use node_runtime::wire::{
    CallChange, ForkChanges, ForkRequest, RunDetail, RunDiff, RunItem, RunKind,
};

/// A status as a badge whose class names the status.
fn status_badge(status: String) -> impl IntoView {
    let class = format!("badge run-status status-{status}");
    view! { <span class=class data-testid="run-status">{status.replace('_', " ")}</span> }
}

/// What a replay said, in words: identical, or the first divergence.
fn replay_result(outcome: api::ReplayOutcome) -> impl IntoView {
    let (class, verdict) = if outcome.matches {
        ("notice", "Identical: the replay reproduced the recorded outputs, offline, with no live model or tool calls.".to_string())
    } else {
        (
            "error",
            format!(
                "Diverged: {}",
                outcome.divergence.clone().unwrap_or_default()
            ),
        )
    };
    let comparisons = outcome
        .timelines
        .iter()
        .map(|(node, t)| {
            timeline_comparison(node, t, outcome.diverged_node.as_deref() == Some(node))
        })
        .collect_view();
    view! {
        <div class="replay-result" data-testid="replay-result" data-matches=outcome.matches.to_string()>
            <p class=class data-testid="replay-verdict">{verdict}</p>
            <p class="muted">"Recorded as replay run "
                <A href=format!("/runs/{}", outcome.run_id)><code>{outcome.run_id.clone()}</code></A></p>
            {comparisons}
        </div>
    }
}

/// One call in a comparison cell: tool, error code or result preview.
fn call_cell(call: Option<runs_view::CallSummary>) -> impl IntoView {
    match call {
        Some(c) => view! {
            <td data-call=c.call_id.clone()><code>{c.tool}</code> " "
                {c.error_code.map(|code| view! { <span class="badge error">{code}</span> " " })}
                <span class="preview">{c.preview}</span></td>
        }
        .into_any(),
        None => view! { <td class="muted">"(no call)"</td> }.into_any(),
    }
}

/// An Agent node's recorded and replayed tool calls side by side, the
/// first line where they part highlighted.
fn timeline_comparison(
    node: &str,
    timeline: &api::ReplayTimeline,
    diverged_here: bool,
) -> impl IntoView {
    let (lines, first) = runs_view::compare_timelines(&timeline.recorded, &timeline.replayed);
    let summary = match first {
        Some(i) => format!("The calls part at call {} of {}.", i + 1, lines.len()),
        None if diverged_here => {
            "Every tool call agrees; the divergence is in the model's turns.".into()
        }
        None => format!("All {} tool call(s) identical.", lines.len()),
    };
    view! {
        <h3>"Tool calls of " {node.to_string()}</h3>
        <p class="muted" data-testid="comparison-summary">{summary}</p>
        <table class="timeline comparison" data-testid="replay-comparison" data-agent=node.to_string()>
            <thead><tr><th>"#"</th><th>"Recorded"</th><th>"Replayed"</th></tr></thead>
            <tbody>
                {lines.into_iter().enumerate().map(|(i, line)| {
                    let diverged = first == Some(i);
                    view! {
                        <tr class:diverged=diverged class:same=line.same data-testid=diverged.then_some("diverged-call")>
                            <td class="num">{i + 1}</td>
                            {call_cell(line.recorded)}
                            {call_cell(line.replayed)}
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// "Fork with changes": the run again with a change to any node's config
/// (a JSON merge patch per node id) or to its inputs; every tool call the
/// run recorded is answered from it, a new read runs only when allowed, a
/// new write waits for its approval. Opens the fork's page.
#[component]
fn ForkControls(run_id: String) -> impl IntoView {
    let changes = RwSignal::new("{\n  \"nodes\": {},\n  \"inputs\": {}\n}".to_string());
    let live_reads = RwSignal::new(false);
    let recorded_answers = RwSignal::new(false);
    let problem = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    // A fork is a new run: a viewer starts none (the server refuses too).
    let gate = crate::workspace::Gate::editor(crate::workspace::VIEWER_RUN_HINT);
    let navigate = use_navigate();
    let fork = move |_| {
        let parsed: Result<ForkChanges, String> = serde_json::from_str(&changes.get_untracked())
            .map_err(|e| format!("The changes are not valid: {e}"));
        let changes = match parsed {
            Ok(c) => c,
            Err(e) => {
                problem.set(Some(e));
                return;
            }
        };
        let request = ForkRequest {
            changes,
            live_reads: live_reads.get_untracked(),
            recorded_answers: recorded_answers.get_untracked(),
        };
        let (id, navigate) = (run_id.clone(), navigate.clone());
        busy.set(true);
        problem.set(None);
        leptos::task::spawn_local(async move {
            match api::fork_run(&id, &request).await {
                Ok(started) => navigate(&format!("/runs/{}", started.run_id), Default::default()),
                Err(e) => problem.set(Some(e.to_string())),
            }
            busy.set(false);
        });
    };
    view! {
        <details class="fork" data-testid="fork-panel">
            <summary>"Fork with changes"</summary>
            <p class="muted">"Runs this run again with your changes. Every tool call it recorded is answered from the recording (no side effect); the model runs live unless its recorded answers are asked for. Changes: per node id, a JSON merge patch of its config (prompt, provider and model, tools, policy, pins), and inputs to set."</p>
            <label class="field">"Changes (JSON)"
                <textarea data-testid="fork-changes" rows="8" prop:value=move || changes.get()
                    on:input=move |ev| changes.set(event_target_value(&ev))></textarea>
            </label>
            <label class="check"><input type="checkbox" data-testid="fork-live-reads"
                prop:checked=move || live_reads.get()
                on:change=move |ev| live_reads.set(event_target_checked(&ev)) />
                " Let new read calls run live (new writes always wait for approval)"</label>
            <label class="check"><input type="checkbox" data-testid="fork-recorded-answers"
                prop:checked=move || recorded_answers.get()
                on:change=move |ev| recorded_answers.set(event_target_checked(&ev)) />
                " Answer the model from this run's recording (offline, whatever the provider)"</label>
            <button type="button" data-testid="fork" prop:disabled=move || busy.get() || gate.off()
                title=move || gate.why() on:click=fork>
                {move || if busy.get() { "Forking…" } else { "Fork" }}
            </button>
            {gate.hint()}
            {move || problem.get().map(|p| view! { <p class="error" role="alert" data-testid="fork-error">{p}</p> })}
        </details>
    }
}

/// How a call compares, in words, with a class for its colour.
fn change_badge(change: CallChange) -> impl IntoView {
    let (class, word) = match change {
        CallChange::Same => ("badge status-succeeded", "same"),
        CallChange::Changed => ("badge status-waiting_for_approval", "changed"),
        CallChange::New => ("badge status-running", "new"),
        CallChange::Missing => ("badge status-failed", "missing"),
    };
    view! { <span class=class data-testid="call-change">{word}</span> }
}

/// Two runs' calls and outputs side by side, per node (`d.run_id` as the
/// origin, `d.other_id` as the fork): a fork's page and a failed suite
/// case show it.
pub(crate) fn diff_view(d: RunDiff) -> impl IntoView {
    let s = &d.summary;
    let summary = format!(
        "{} same ({} answered from the recording), {} changed, {} new, {} missing.",
        s.same, s.replayed, s.changed, s.new, s.missing
    );
    let outputs = if d.outputs_changed {
        "The workflow's outputs differ."
    } else {
        "The workflow's outputs are the same."
    };
    view! {
        <p data-testid="fork-diff-summary">{summary} " " {outputs}</p>
        {d.nodes.into_iter().map(|(node, n)| view! {
            <h3>"Calls of " {node.clone()}</h3>
            {n.response_changed.then(|| view! {
                <p class="muted" data-testid="fork-response-changed">"The answer changed: "
                    <q>{n.run_response.clone().unwrap_or_default()}</q> " → "
                    <q>{n.other_response.clone().unwrap_or_default()}</q></p>
            })}
            <table class="timeline comparison" data-testid="fork-diff" data-node=node.clone()>
                <thead><tr><th>"#"</th><th>"Change"</th><th>"Origin"</th><th>"Fork"</th></tr></thead>
                <tbody>
                    {n.calls.into_iter().enumerate().map(|(i, c)| view! {
                        <tr class:same=c.change == CallChange::Same data-change=format!("{:?}", c.change).to_lowercase()>
                            <td class="num">{i + 1}</td>
                            <td>{change_badge(c.change)}</td>
                            {call_cell(c.run.as_ref().map(runs_view::CallSummary::of))}
                            {call_cell(c.other.as_ref().map(runs_view::CallSummary::of))}
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        }).collect_view()}
    }
}

/// A fork's calls and outputs side by side with its origin's, per node.
#[component]
fn ForkDiff(origin: String, fork: String) -> impl IntoView {
    let diff = LocalResource::new(move || {
        let (origin, fork) = (origin.clone(), fork.clone());
        async move { api::run_diff(&origin, &fork).await }
    });
    view! {
        <h2>"Compared with its origin"</h2>
        <Suspense fallback=|| view! { <p class="muted">"Comparing…"</p> }>
            {move || diff.get().map(|r| match r {
                Ok(d) => diff_view(d).into_any(),
                Err(e) => view! { <p class="error" role="alert" data-testid="fork-diff-error">{e.to_string()}</p> }.into_any(),
            })}
        </Suspense>
    }
}

/// Replay (hermetic, against the stored bundle) and Download bundle for a
/// finished run.
#[component]
fn ReplayControls(run_id: String) -> impl IntoView {
    let outcome = RwSignal::new(None::<Result<api::ReplayOutcome, String>>);
    let busy = RwSignal::new(false);
    // A replay is a new run: a viewer starts none (but downloads the bundle).
    let gate = crate::workspace::Gate::editor(crate::workspace::VIEWER_RUN_HINT);
    let (replay_id, download_id) = (run_id.clone(), run_id);
    let replay = move |_| {
        let id = replay_id.clone();
        busy.set(true);
        leptos::task::spawn_local(async move {
            outcome.set(Some(api::replay_run(&id).await.map_err(|e| e.to_string())));
            busy.set(false);
        });
    };
    let download = move |_| {
        let id = download_id.clone();
        leptos::task::spawn_local(async move {
            let saved = match api::run_bundle(&id).await {
                Ok(text) => crate::files::download(&format!("glassbox-run-{id}.json"), &text),
                Err(e) => Err(e.to_string()),
            };
            if let Err(e) = saved {
                outcome.set(Some(Err(e)));
            }
        });
    };
    view! {
        <button type="button" data-testid="replay" prop:disabled=move || busy.get() || gate.off()
            title=move || gate.why() on:click=replay>
            {move || if busy.get() { "Replaying…" } else { "Replay" }}
        </button>
        {gate.hint()}
        <button type="button" data-testid="download-bundle" on:click=download>"Download bundle"</button>
        {move || outcome.get().map(|o| match o {
            Ok(o) => replay_result(o).into_any(),
            Err(e) => view! { <p class="error" role="alert" data-testid="replay-error">{e}</p> }.into_any(),
        })}
    }
}

/// "Open bundle": replays a bundle file (one downloaded earlier, or edited)
/// and says whether it reproduces its recorded outputs.
#[component]
fn OpenBundle() -> impl IntoView {
    let outcome = RwSignal::new(None::<Result<api::ReplayOutcome, String>>);
    let gate = crate::workspace::Gate::editor(crate::workspace::VIEWER_RUN_HINT);
    let picked = move |ev: leptos::ev::Event| {
        let Some(input) = ev
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlInputElement>(t).ok())
        else {
            return;
        };
        leptos::task::spawn_local(async move {
            let result = match crate::files::read_picked(&input).await {
                Ok(Some((_, text))) => api::replay_bundle(&text).await.map_err(|e| e.to_string()),
                Ok(None) => return,
                Err(e) => Err(e),
            };
            outcome.set(Some(result));
            input.set_value("");
        });
    };
    view! {
        <label class="open-bundle">"Open bundle "
            <input type="file" accept="application/json,.json" data-testid="open-bundle" on:change=picked
                prop:disabled=move || gate.off() title=move || gate.why() />
        </label>
        {gate.hint()}
        {move || outcome.get().map(|o| match o {
            Ok(o) => replay_result(o).into_any(),
            Err(e) => view! { <p class="error" role="alert" data-testid="replay-error">{e}</p> }.into_any(),
        })}
    }
}

#[component]
pub fn Runs() -> impl IntoView {
    let status = RwSignal::new(String::new());
    let workflow = RwSignal::new(String::new());
    let workflows = LocalResource::new(api::list_workflows);
    let runs = LocalResource::new(move || {
        let (s, w) = (status.get(), workflow.get());
        async move { api::list_runs(&s, &w, None).await }
    });
    // Older pages, loaded on request below the first.
    let older = OlderPages::<RunItem>::new(move || {
        runs.with(|r| {
            r.as_ref()
                .and_then(|r| r.as_ref().ok())
                .and_then(|l| l.next_cursor.clone())
        })
    });
    let load_older = move |_| {
        let (s, w) = (status.get_untracked(), workflow.get_untracked());
        older.load(move |cursor| async move {
            let page = api::list_runs(&s, &w, Some(&cursor)).await.ok()?;
            Some((page.runs, page.next_cursor))
        });
    };
    refresh_while(
        move || {
            runs.with(|r| {
                r.as_ref()
                    .and_then(|r| r.as_ref().ok())
                    .is_some_and(|l| l.runs.iter().any(|r| runs_view::is_active(r.status)))
            })
        },
        move || runs.refetch(),
    );
    let names = move || -> BTreeMap<String, String> {
        workflows.with(|w| {
            w.as_ref()
                .and_then(|r| r.as_ref().ok())
                .map(|l| l.iter().map(|w| (w.id.clone(), w.name.clone())).collect())
                .unwrap_or_default()
        })
    };
    view! {
        <section class="card" data-testid="runs">
            <h1>"Runs"</h1>
            <div class="row">
                <label>"Status "
                    <select data-testid="runs-status" on:change=move |ev| status.set(event_target_value(&ev))>
                        <option value="" selected=true>"All"</option>
                        {STATUSES.iter().map(|s| view! { <option value=*s>{s.replace('_', " ")}</option> }).collect_view()}
                    </select>
                </label>
                <label>"Workflow "
                    <select data-testid="runs-workflow" on:change=move |ev| workflow.set(event_target_value(&ev))>
                        <option value="" selected=true>"All"</option>
                        {move || names().into_iter().map(|(id, name)| view! { <option value=id>{name}</option> }).collect_view()}
                    </select>
                </label>
                <button type="button" data-testid="runs-refresh" on:click=move |_| runs.refetch()>"Refresh"</button>
                <OpenBundle />
            </div>
            <Transition fallback=|| view! { <p class="muted">"Loading runs…"</p> }>
                {move || runs.get().map(|r| match r.map(|l| l.runs) {
                    Ok(list) if list.is_empty() => view! {
                        <p class="muted" data-testid="runs-empty">"No runs match. Start one from a workflow's editor, the API or `glassbox run`."</p>
                    }.into_any(),
                    Ok(list) => {
                        let names = names();
                        view! {
                            <table class="runs" data-testid="run-list">
                                <thead><tr><th>"Run"</th><th>"Workflow"</th><th>"Status"</th><th>"Trigger"</th><th>"Started"</th><th>"Duration"</th></tr></thead>
                                <tbody>
                                    {list.into_iter().chain(older.items.get()).map(|r| {
                                        let workflow_id = r.workflow_id.clone().unwrap_or_default();
                                        let wf = names.get(&workflow_id).cloned().unwrap_or(workflow_id);
                                        let short = runs_view::short_id(&r.id).to_string();
                                        let kind = (r.kind != RunKind::Run).then(|| view! { " " <span class="badge">{r.kind.as_str()}</span> });
                                        view! {
                                            <tr data-run=r.id.clone()>
                                                <td><A href=format!("/runs/{}", r.id)><code>{short}</code></A>{kind}</td>
                                                <td>{wf}</td>
                                                <td>{status_badge(r.status.to_string())}</td>
                                                <td>{r.trigger.clone()}</td>
                                                <td class="muted">{short_time(&r.created_at)}</td>
                                                <td class="num" data-testid="run-duration">{format_duration(r.duration_ms)}</td>
                                            </tr>
                                        }
                                    }).collect_view()}
                                </tbody>
                            </table>
                            {move || older.next.get().is_some().then(|| view! {
                                <button type="button" data-testid="runs-older" on:click=load_older>"Show older runs"</button>
                            })}
                        }.into_any()
                    }
                    Err(e) => view! { <p class="error" role="alert" data-testid="runs-error">{e.to_string()}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
}

#[component]
pub fn RunPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.with(|p| p.get("id")).unwrap_or_default();
    let run = LocalResource::new(move || {
        let id = id();
        async move {
            let run = api::get_run(&id).await?;
            // The graph's input handles, before it is drawn.
            if let Some(graph) = runs_view::run_graph(&run) {
                crate::templates::learn_workflow(&graph).await;
            }
            Ok::<_, api::ApiError>(run)
        }
    });
    refresh_while(
        move || {
            run.with(|r| {
                r.as_ref()
                    .and_then(|r| r.as_ref().ok())
                    .is_some_and(RunDetail::is_active)
            })
        },
        move || run.refetch(),
    );
    let notice = RwSignal::new(None::<(bool, String)>);
    let cancel_gate = crate::workspace::Gate::editor(crate::workspace::VIEWER_CANCEL_HINT);
    let cancel = move |_| {
        let id = id();
        leptos::task::spawn_local(async move {
            match api::cancel_run(&id).await {
                Ok(_) => {
                    notice.set(Some((
                        true,
                        "Cancellation requested; the run stops at its next step.".into(),
                    )));
                    run.refetch();
                }
                Err(e) => notice.set(Some((false, e.to_string()))),
            }
        });
    };
    view! {
        <section class="card" data-testid="run">
            <h1>"Run"</h1>
            {move || notice.get().map(|(ok, m)| view! {
                <p class=if ok { "notice" } else { "error" } role="status" data-testid="run-notice">{m}</p>
            })}
            <Transition fallback=|| view! { <p class="muted">"Loading the run…"</p> }>
                {move || run.get().map(|r| match r {
                    Ok(d) => {
                        let nodes = node_results(d.nodes.as_ref());
                        let graph = runs_view::run_graph(&d);
                        let has_graph = graph.is_some();
                        let workflow_name = graph
                            .as_ref()
                            .map(|w| w.name.clone())
                            .filter(|n| !n.is_empty())
                            .or_else(|| d.workflow_id.clone());
                        let active = d.is_active();
                        let outputs = serde_json::to_string_pretty(&d.outputs).unwrap_or_default();
                        let inputs = serde_json::to_string_pretty(&d.inputs).unwrap_or_default();
                        view! {
                            <dl class="facts">
                                <dt>"Run"</dt><dd><code data-testid="run-id">{d.id.clone()}</code></dd>
                                <dt>"Status"</dt><dd>{status_badge(d.status.to_string())}</dd>
                                <dt>"Workflow"</dt><dd data-testid="run-workflow"><A href=format!("/workflows/{}", d.workflow_id.clone().unwrap_or_default())>
                                    {workflow_name}</A>
                                    <span class="muted">" revision " {d.workflow_revision}</span></dd>
                                <dt>"Kind"</dt><dd data-testid="run-kind">{d.kind.as_str()}{d.replay_of.clone().or_else(|| d.fork_of.clone()).map(|o| view! {
                                    " of " <A href=format!("/runs/{o}")><code>{o.clone()}</code></A>
                                })}</dd>
                                <dt>"Trigger"</dt><dd>{d.trigger.clone()}</dd>
                                <dt>"Started"</dt><dd>{short_time(&d.created_at)}</dd>
                                <dt>"Duration"</dt><dd data-testid="run-duration">{format_duration(d.duration_ms)}</dd>
                                {(d.usage.model_calls > 0).then(|| view! {
                                    <dt>"Model usage"</dt><dd data-testid="run-usage">{crate::live::usage_summary(&d.usage)}</dd>
                                })}
                            </dl>
                            <p class="row">
                                <A href=format!("/runs/{}/trace", d.id)>"Trace"</A>
                                {active.then(|| view! {
                                    <button type="button" data-testid="run-cancel" prop:disabled=move || cancel_gate.off()
                                        title=move || cancel_gate.why() on:click=cancel>"Cancel run"</button>
                                    {cancel_gate.hint()}
                                })}
                                {(!active && d.kind == RunKind::Run).then(|| view! { <ReplayControls run_id=d.id.clone() /> })}
                            </p>
                            {(!active && d.kind != RunKind::Replay).then(|| view! { <ForkControls run_id=d.id.clone() /> })}
                            {(!active && d.kind != RunKind::Replay && d.workflow_id.is_some()).then(|| view! { <AddToSuite run=d.clone() /> })}
                            {(!active).then(|| d.fork_of.clone()).flatten().map(|origin| view! { <ForkDiff origin=origin fork=d.id.clone() /> })}
                            {d.error.clone().map(|e| view! { <p class="error" role="alert" data-testid="run-error">{e}</p> })}
                            <h2>"Inputs"</h2>
                            <pre class="json">{inputs}</pre>
                            <h2>"Outputs"</h2>
                            <pre class="json" data-testid="run-outputs">{outputs}</pre>
                            <h2>"Nodes"</h2>
                            {graph.map(|g| view! { <RunGraph workflow=g nodes=d.nodes.clone().unwrap_or_default() /> })}
                            {(!has_graph).then(|| view! {
                            {nodes.is_empty().then(|| view! {
                                <p class="muted">{if active { "Node results appear when the run ends." } else { "No node results were recorded." }}</p>
                            })}
                            <table class="runs" data-testid="run-nodes">
                                <tbody>
                                    {nodes.into_iter().map(|n| view! {
                                        <tr data-node=n.node_id.clone()>
                                            <td><strong>{n.node_id.clone()}</strong></td>
                                            <td>{status_badge(n.status.clone())}</td>
                                            <td>
                                                {n.tool_calls.map(|c| view! { <span class="muted">{format!("{c} tool call(s)")}</span> })}
                                                {n.error.clone().map(|e| view! { <p class="error">{e}</p> })}
                                                <details><summary>"Outputs"</summary><pre class="json">{n.outputs.clone()}</pre></details>
                                            </td>
                                        </tr>
                                    }).collect_view()}
                                </tbody>
                            </table>
                            })}
                        }.into_any()
                    }
                    Err(e) => view! { <p class="error" role="alert" data-testid="run-load-error">{e.to_string()}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
}
