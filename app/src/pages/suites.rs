//! Regression suites (issue 33). `/suites`: the workspace's suites with
//! their workflow, cases and last run; `/suites/:id`: one suite's cases
//! (their assertions edited as JSON, a case removed), options, Run suite
//! (against the current revision or a named one, followed until it ends),
//! its history, and a suite run's verdict per case with each failed
//! assertion in words and the failed case's fork and diff. The run page's
//! "Add to suite" panel (`AddToSuite`) makes a finished run a case.
//!
//! Everything here is reached only from lazy routes (the suites pages and
//! the run page), so none of it is in the app's main module.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params_map, use_query_map};

use crate::api;
use crate::pages::runs::diff_view;
use crate::runs_view::{short_id, short_time};
use crate::suites_view::{self, KINDS};
use crate::widgets::{confirm, refresh_while};
use node_runtime::wire::{
    Assertion, AssertionResult, CaseResult, NewSuite, RunDetail, SuiteModel, SuiteOptions,
    SuiteRunStatus, SuiteRunView, SuiteView,
};

/// A suite run's status as a badge coloured by its status.
fn suite_status_badge(status: SuiteRunStatus) -> impl IntoView {
    let class = format!("badge run-status status-{status}");
    view! { <span class=class data-testid="suite-run-status">{status.as_str()}</span> }
}

/// The last run of a suite in the list: its badge and counts, or "never".
fn last_run_cell(last: Option<SuiteRunView>) -> impl IntoView {
    match last {
        Some(r) => view! {
            <td data-testid="suite-last-run" data-status=r.status.as_str()>
                {suite_status_badge(r.status)} " "
                <span data-testid="suite-last-counts">{suites_view::counts(&r)}</span>
                <div class="muted">{short_time(&r.started_at)}</div>
            </td>
        }
        .into_any(),
        None => {
            view! { <td class="muted" data-testid="suite-last-run">"never run"</td> }.into_any()
        }
    }
}

/// `/suites`: every suite of the workspace.
#[component]
pub fn Suites() -> impl IntoView {
    let suites = LocalResource::new(api::list_suites);
    refresh_while(
        move || {
            suites.with(|r| {
                r.as_ref().and_then(|r| r.as_ref().ok()).is_some_and(|l| {
                    l.iter()
                        .any(|s| s.last_run.as_ref().is_some_and(|r| !r.is_final()))
                })
            })
        },
        move || suites.refetch(),
    );
    let rows = |list: Vec<SuiteView>| {
        list.into_iter()
            .map(|s| {
                let workflow = match s.workflow_name.clone() {
                    Some(name) => view! { <A href=format!("/workflows/{}", s.workflow_id)>{name}</A> }.into_any(),
                    None => view! { <span class="muted">"(deleted workflow)"</span> }.into_any(),
                };
                view! {
                    <tr data-suite=s.id.clone()>
                        <td><A href=format!("/suites/{}", s.id)>{s.name.clone()}</A>
                            {(!s.description.is_empty()).then(|| view! { <div class="muted">{s.description.clone()}</div> })}</td>
                        <td>{workflow}</td>
                        <td class="num" data-testid="suite-case-count">{s.cases.len()}</td>
                        {last_run_cell(s.last_run.clone())}
                    </tr>
                }
            })
            .collect_view()
    };
    view! {
        <section class="card" data-testid="suites">
            <h1>"Suites"</h1>
            <p class="muted">"A suite is a set of recorded runs of one workflow, each with assertions. Running it forks every case against the workflow's current revision (or one you name): recorded tool calls are answered from the recording, a write is never sent, and each case passes or fails on its assertions."</p>
            <Transition fallback=|| view! { <p class="muted">"Loading suites…"</p> }>
                {move || suites.get().map(|r| match r {
                    Ok(list) if list.is_empty() => view! {
                        <p class="muted" data-testid="suites-empty">"No suites yet. To make one, open a finished run (Runs, then the run) and choose Add to suite: the run becomes the first case of a new suite, with its assertions prefilled. Add more runs of the same workflow the same way."</p>
                    }.into_any(),
                    Ok(list) => view! {
                        <table class="runs" data-testid="suite-list">
                            <thead><tr><th>"Suite"</th><th>"Workflow"</th><th>"Cases"</th><th>"Last run"</th></tr></thead>
                            <tbody>{rows(list)}</tbody>
                        </table>
                    }.into_any(),
                    Err(e) => view! { <p class="error" role="alert" data-testid="suites-error">{e.to_string()}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
}

/// One assertion's verdict: pass or fail, what it asks and what was found.
fn assertion_result(r: AssertionResult) -> impl IntoView {
    let (class, word) = if r.passed {
        ("badge run-status status-passed", "pass")
    } else {
        ("badge run-status status-failed", "fail")
    };
    view! {
        <li data-testid="assertion-result" data-passed=r.passed.to_string() class:failed=!r.passed>
            <span class=class>{word}</span> " "
            <strong data-testid="assertion-description">{r.assertion.describe()}</strong>
            {(!r.message.is_empty()).then(|| view! {
                ": " <span data-testid="assertion-message">{r.message.clone()}</span>
            })}
        </li>
    }
}

/// One case of a suite run: PASS or FAIL, its assertions, why it could not
/// be checked, and for a failure its fork and the calls compared.
fn case_result(c: CaseResult) -> impl IntoView {
    let (class, word) = if c.passed {
        ("badge run-status status-passed", "PASS")
    } else {
        ("badge run-status status-failed", "FAIL")
    };
    let fork = c.fork_id.clone().map(|f| {
        let status = c.fork_status.map(|s| format!(" ({s})")).unwrap_or_default();
        view! {
            " · its fork " <A href=format!("/runs/{f}") attr:data-testid="case-fork"><code>{short_id(&f).to_string()}</code></A>
            <span class="muted">{status}</span>
        }
    });
    view! {
        <article class="case-result" data-testid="case-result" data-case=c.name.clone() data-passed=c.passed.to_string()>
            <h3><span class=class data-testid="case-verdict">{word}</span> " " {c.name.clone()}</h3>
            <p class="muted">"Recorded run "
                <A href=format!("/runs/{}", c.run_id)><code>{short_id(&c.run_id).to_string()}</code></A>
                {fork}</p>
            {c.error.clone().map(|e| view! {
                <p class="error" role="alert" data-testid="case-error">"The case could not be checked: " {e}</p>
            })}
            <ul class="assertion-results">
                {c.assertions.into_iter().map(assertion_result).collect_view()}
            </ul>
            {c.diff.map(|d| view! {
                <details class="case-diff" data-testid="case-diff" open=true>
                    <summary>"Calls of the recorded run (origin) against its fork"</summary>
                    {diff_view(d)}
                </details>
            })}
        </article>
    }
}

/// A suite run: its verdict (progress while it runs) and every case.
fn suite_run_view(r: SuiteRunView, cases: usize) -> impl IntoView {
    let class = match r.status {
        SuiteRunStatus::Running => "muted",
        SuiteRunStatus::Passed => "notice",
        SuiteRunStatus::Failed | SuiteRunStatus::Error => "error",
    };
    let finished = r
        .finished_at
        .as_deref()
        .map(|f| format!(", finished {}", short_time(f)))
        .unwrap_or_default();
    let (verdict, is_final) = (suites_view::verdict(&r, cases), r.is_final());
    view! {
        <div class="suite-run" data-testid="suite-run" data-run=r.id.clone()
            data-status=r.status.as_str() data-final=is_final.to_string()>
            <p class="row">{suite_status_badge(r.status)}
                <span class=class data-testid="suite-verdict">{verdict}</span></p>
            <p class="muted">"Started " {short_time(&r.started_at)} {finished}</p>
            {r.cases.into_iter().map(case_result).collect_view()}
        </div>
    }
}

/// A case's row in the suite's case list: name, run, assertions, actions.
struct CaseRow {
    index: usize,
    name: String,
    run_id: String,
    assertions: Vec<Assertion>,
}

/// `/suites/:id`: one suite.
#[component]
pub fn SuitePage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let navigate = use_navigate();
    let id = move || params.with(|p| p.get("id")).unwrap_or_default();

    // The suite as last loaded or saved, and its options as edited.
    let suite = RwSignal::new(None::<Result<SuiteView, String>>);
    let model = RwSignal::new(SuiteModel::Workflow);
    let live_reads = RwSignal::new(false);
    let loaded = move |view: SuiteView| {
        model.set(view.options.model);
        live_reads.set(view.options.live_reads);
        suite.set(Some(Ok(view)));
    };
    Effect::new(move |_| {
        let id = id();
        leptos::task::spawn_local(async move {
            match api::get_suite(&id).await {
                Ok(view) => loaded(view),
                Err(e) => suite.set(Some(Err(e.to_string()))),
            }
        });
    });
    let current = move || suite.with(|s| s.as_ref().and_then(|s| s.as_ref().ok()).cloned());

    // What happened last: (ok, words).
    let notice = RwSignal::new(None::<(bool, String)>);
    // The case whose assertions are being edited: its index and text.
    let editing = RwSignal::new(None::<(usize, String)>);
    let case_problem = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);

    // Replaces the whole suite; `done` says what changed. A refusal shows
    // in the case editor when it came from there, else under the suite.
    let save = move |new: NewSuite, done: String, from_editor: bool| {
        let id = id();
        busy.set(true);
        leptos::task::spawn_local(async move {
            match api::save_suite(&id, &new).await {
                Ok(view) => {
                    loaded(view);
                    editing.set(None);
                    case_problem.set(None);
                    notice.set(Some((true, done)));
                }
                Err(e) if from_editor => case_problem.set(Some(e.to_string())),
                Err(e) => notice.set(Some((false, e.to_string()))),
            }
            busy.set(false);
        });
    };

    // The history, newest first, and the run shown: `?run=`, else the newest.
    let history = LocalResource::new(move || {
        let id = id();
        async move { api::list_suite_runs(&id).await }
    });
    refresh_while(
        move || {
            history.with(|h| {
                h.as_ref()
                    .and_then(|h| h.as_ref().ok())
                    .is_some_and(|l| l.iter().any(|r| !r.is_final()))
            })
        },
        move || history.refetch(),
    );
    let shown_id = Memo::new(move |_| {
        query.with(|q| q.get("run")).or_else(|| {
            history.with(|h| {
                h.as_ref()
                    .and_then(|h| h.as_ref().ok())
                    .and_then(|l| l.first().map(|r| r.id.clone()))
            })
        })
    });
    let shown = LocalResource::new(move || {
        let run = shown_id.get();
        async move {
            match run {
                Some(run) => Some(api::get_suite_run(&run).await),
                None => None,
            }
        }
    });
    refresh_while(
        move || shown.with(|r| matches!(r, Some(Some(Ok(run))) if !run.is_final())),
        move || shown.refetch(),
    );

    // Run suite: against the revision typed, or the current one.
    let revision = RwSignal::new(String::new());
    let run_problem = RwSignal::new(None::<String>);
    let starting = RwSignal::new(false);
    // A viewer reads suites but runs none (the server refuses it too).
    let run_gate = crate::workspace::Gate::editor(crate::workspace::VIEWER_RUN_HINT);
    // Nor changes them.
    let gate = crate::workspace::Gate::editor(crate::workspace::VIEWER_SUITE_HINT);
    let run_suite = {
        let navigate = navigate.clone();
        move |_| {
            let revision = match suites_view::parse_revision(&revision.get_untracked()) {
                Ok(r) => r,
                Err(e) => {
                    run_problem.set(Some(e));
                    return;
                }
            };
            let (id, navigate) = (id(), navigate.clone());
            starting.set(true);
            run_problem.set(None);
            leptos::task::spawn_local(async move {
                match api::run_suite(&id, revision).await {
                    Ok(run) => {
                        history.refetch();
                        navigate(&format!("/suites/{id}?run={}", run.id), Default::default());
                    }
                    Err(e) => run_problem.set(Some(e.to_string())),
                }
                starting.set(false);
            });
        }
    };

    let delete = move |_| {
        let Some(s) = current() else { return };
        if !confirm(&format!(
            "Delete the suite \u{201c}{}\u{201d} and its history? Its recorded runs stay.",
            s.name
        )) {
            return;
        }
        let navigate = navigate.clone();
        leptos::task::spawn_local(async move {
            match api::delete_suite(&s.id).await {
                Ok(()) => navigate("/suites", Default::default()),
                Err(e) => notice.set(Some((false, e.to_string()))),
            }
        });
    };

    let case_rows = move |s: &SuiteView| {
        s.cases
            .iter()
            .enumerate()
            .map(|(index, c)| CaseRow {
                index,
                name: c.name.clone(),
                run_id: c.run_id.clone(),
                assertions: c.assertions.clone(),
            })
            .collect::<Vec<_>>()
    };
    // A suite keeps a case: the last one's Remove is off, with a hint.
    let last_case = move || {
        suite.with(|s| {
            s.as_ref()
                .and_then(|s| s.as_ref().ok())
                .is_some_and(|s| suites_view::remove_problem(s).is_some())
        })
    };
    let case_view = move |row: CaseRow| {
        let CaseRow {
            index,
            name,
            run_id,
            assertions,
        } = row;
        let text = suites_view::assertions_text(&assertions);
        let is_editing = move || editing.with(|e| e.as_ref().is_some_and(|(i, _)| *i == index));
        let remove_name = name.clone();
        let remove = move |_| {
            let Some(s) = current() else { return };
            if let Some(why) = suites_view::remove_problem(&s) {
                notice.set(Some((false, why.to_string())));
                return;
            }
            let new = suites_view::without_case(&s, index);
            save(
                new,
                format!("Removed the case \u{201c}{remove_name}\u{201d}."),
                false,
            );
        };
        let save_name = name.clone();
        let save_case = move |_| {
            let text =
                editing.with_untracked(|e| e.as_ref().map(|(_, t)| t.clone()).unwrap_or_default());
            let assertions = match suites_view::parse_assertions(&text) {
                Ok(a) => a,
                Err(e) => {
                    case_problem.set(Some(e));
                    return;
                }
            };
            let Some(s) = current() else { return };
            save(
                suites_view::with_assertions(&s, index, assertions),
                format!("Saved the assertions of \u{201c}{save_name}\u{201d}."),
                true,
            );
        };
        view! {
            <tr data-case=name.clone()>
                <td>{name.clone()}</td>
                <td><A href=format!("/runs/{run_id}")><code>{short_id(&run_id).to_string()}</code></A></td>
                <td>
                    <ul class="assertion-list" data-testid="case-assertions-described">
                        {assertions.iter().map(|a| view! { <li>{a.describe()}</li> }).collect_view()}
                    </ul>
                    <Show when=is_editing>
                        <div class="suite-form" data-testid="case-editor">
                            <label class="field">"Assertions (JSON)"
                                <textarea data-testid="case-assertions" rows="6"
                                    prop:value=move || editing.with(|e| e.as_ref().map(|(_, t)| t.clone()).unwrap_or_default())
                                    on:input=move |ev| editing.update(|e| if let Some((_, t)) = e { *t = event_target_value(&ev) })></textarea>
                            </label>
                            <p class="muted">"Kinds: " {KINDS} ". Paths are JSONPath over "
                                <code>"{status, outputs, nodes}"</code> ", e.g. " <code>"$.outputs.answer"</code> "."</p>
                            <div class="row">
                                <button type="button" class="primary" data-testid="case-save" prop:disabled=move || busy.get() || gate.off()
                                    on:click=save_case.clone()>"Save"</button>
                                <button type="button" data-testid="case-cancel" on:click=move |_| {
                                    editing.set(None);
                                    case_problem.set(None);
                                }>"Cancel"</button>
                            </div>
                            {move || case_problem.get().map(|p| view! { <p class="error" role="alert" data-testid="case-problem">{p}</p> })}
                        </div>
                    </Show>
                </td>
                <td class="actions">
                    <button type="button" data-testid="case-edit" prop:disabled=move || gate.off()
                        title=move || gate.why() on:click={
                        let text = text.clone();
                        move |_| {
                            case_problem.set(None);
                            editing.set(Some((index, text.clone())));
                        }
                    }>"Edit assertions"</button>
                    <button type="button" data-testid="case-remove"
                        prop:disabled=move || busy.get() || last_case() || gate.off()
                        title=move || gate.why().or(last_case().then_some(suites_view::LAST_CASE))
                        on:click=remove>"Remove"</button>
                    <Show when=last_case>
                        <p class="muted hint" data-testid="case-remove-hint">{suites_view::LAST_CASE}</p>
                    </Show>
                </td>
            </tr>
        }
    };

    let save_options = move |_| {
        let Some(s) = current() else { return };
        let options = SuiteOptions {
            model: model.get_untracked(),
            live_reads: live_reads.get_untracked(),
        };
        save(
            suites_view::with_options(&s, options),
            "Saved the options.".into(),
            false,
        );
    };

    let cases_count = move || current().map_or(0, |s| s.cases.len());
    let history_rows = move |list: Vec<SuiteRunView>| {
        let sid = id();
        let selected = shown_id.get();
        list.into_iter()
            .map(|r| {
                let is_shown = selected.as_deref() == Some(r.id.as_str());
                let (href, started) = (
                    format!("/suites/{sid}?run={}", r.id),
                    short_time(&r.started_at),
                );
                view! {
                    <tr data-suite-run=r.id.clone() class:selected=is_shown>
                        <td><A href=href>{started}</A></td>
                        <td>{suite_status_badge(r.status)}</td>
                        <td class="num">{r.revision}</td>
                        <td>{suites_view::counts(&r)}</td>
                    </tr>
                }
            })
            .collect_view()
    };

    view! {
        <section class="card" data-testid="suite">
            <p><A href="/suites">"All suites"</A></p>
            {move || match suite.get() {
                None => view! { <p class="muted">"Loading the suite…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="error" role="alert" data-testid="suite-load-error">{e}</p> }.into_any(),
                Some(Ok(s)) => {
                    let workflow = match s.workflow_name.clone() {
                        Some(name) => view! { <A href=format!("/workflows/{}", s.workflow_id)>{name}</A> }.into_any(),
                        None => view! { <span class="muted">"(deleted workflow)"</span> }.into_any(),
                    };
                    let rows = case_rows(&s);
                    view! {
                        <h1 data-testid="suite-name">{s.name.clone()}</h1>
                        {(!s.description.is_empty()).then(|| view! { <p class="muted">{s.description.clone()}</p> })}
                        <dl class="facts">
                            <dt>"Workflow"</dt><dd data-testid="suite-workflow">{workflow}</dd>
                            <dt>"Cases"</dt><dd>{s.cases.len()}</dd>
                            <dt>"Updated"</dt><dd>{short_time(&s.updated_at)}</dd>
                        </dl>
                        <h2>"Cases"</h2>
                        {rows.is_empty().then(|| view! {
                            <p class="muted">"No cases: add runs of this workflow from their pages (Add to suite)."</p>
                        })}
                        <table class="runs" data-testid="suite-cases">
                            <thead><tr><th>"Case"</th><th>"Recorded run"</th><th>"Assertions"</th><th></th></tr></thead>
                            <tbody>{rows.into_iter().map(case_view).collect_view()}</tbody>
                        </table>
                    }.into_any()
                }
            }}
            {move || notice.get().map(|(ok, m)| view! {
                <p class=if ok { "notice" } else { "error" } role="status" data-testid="suite-notice">{m}</p>
            })}
        </section>
        <section class="card suite-form" data-testid="suite-run-controls">
            <h2>"Run suite"</h2>
            <p class="muted">"Forks every case against the workflow's revision (the current one when left empty) and checks its assertions."</p>
            <div class="row">
                <label>"Revision "
                    <input type="text" inputmode="numeric" size="8" placeholder="current" data-testid="suite-revision"
                        prop:value=move || revision.get() on:input=move |ev| revision.set(event_target_value(&ev)) />
                </label>
                <button type="button" class="primary" data-testid="run-suite" prop:disabled=move || starting.get() || current().is_none() || run_gate.off()
                    title=move || run_gate.why() on:click=run_suite>{move || if starting.get() { "Starting…" } else { "Run suite" }}</button>
                {run_gate.hint()}
            </div>
            {move || run_problem.get().map(|p| view! { <p class="error" role="alert" data-testid="run-suite-error">{p}</p> })}
            <Transition fallback=|| view! { <p class="muted">"Loading the suite run…"</p> }>
                {move || shown.get().map(|r| match r {
                    None => view! { <p class="muted" data-testid="suite-never-run">"This suite has not run yet."</p> }.into_any(),
                    Some(Ok(run)) => suite_run_view(run, cases_count()).into_any(),
                    Some(Err(e)) => view! { <p class="error" role="alert" data-testid="suite-run-error">{e.to_string()}</p> }.into_any(),
                })}
            </Transition>
        </section>
        <section class="card" data-testid="suite-history-section">
            <h2>"History"</h2>
            <Transition fallback=|| view! { <p class="muted">"Loading the history…"</p> }>
                {move || history.get().map(|r| match r {
                    Ok(list) if list.is_empty() => view! { <p class="muted">"No runs yet."</p> }.into_any(),
                    Ok(list) => view! {
                        <table class="runs" data-testid="suite-history">
                            <thead><tr><th>"Started"</th><th>"Status"</th><th>"Revision"</th><th>"Result"</th></tr></thead>
                            <tbody>{history_rows(list)}</tbody>
                        </table>
                    }.into_any(),
                    Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                })}
            </Transition>
        </section>
        <section class="card suite-form" data-testid="suite-options">
            <h2>"Options"</h2>
            <label class="field">"Model's answers"
                <select data-testid="suite-model" on:change=move |ev| {
                    model.set(if event_target_value(&ev) == "recorded" { SuiteModel::Recorded } else { SuiteModel::Workflow });
                }>
                    <option value="workflow" selected=move || model.get() == SuiteModel::Workflow>
                        "The revision's own model (a script runs its turns, a real provider is called)"</option>
                    <option value="recorded" selected=move || model.get() == SuiteModel::Recorded>
                        "The recorded answers, in order (offline, for every provider)"</option>
                </select>
            </label>
            <label class="check"><input type="checkbox" data-testid="suite-live-reads"
                prop:checked=move || live_reads.get()
                on:change=move |ev| live_reads.set(event_target_checked(&ev)) />
                " Let read calls the recorded run did not make run live (writes never run)"</label>
            <div class="row">
                <button type="button" data-testid="suite-options-save" prop:disabled=move || busy.get() || current().is_none() || gate.off()
                    title=move || gate.why() on:click=save_options>"Save options"</button>
                <button type="button" class="danger" data-testid="suite-delete" prop:disabled=move || current().is_none() || gate.off()
                    title=move || gate.why() on:click=delete>"Delete suite"</button>
                {gate.hint()}
            </div>
        </section>
    }
}

/// "Add to suite" on a finished run's page: the run becomes a case of an
/// existing suite of its workflow (the suite read, the case appended, the
/// whole suite saved) or of a new suite, with the assertions prefilled from
/// the run (its outputs, each tool it called successfully).
#[component]
pub fn AddToSuite(run: RunDetail) -> impl IntoView {
    let workflow_id = run.workflow_id.clone().unwrap_or_default();
    let run_id = run.id.clone();
    // The workflow's suites, fetched once the panel is first opened (a
    // finished run's page does not ask for them otherwise).
    let opened = RwSignal::new(false);
    let suites = {
        let workflow_id = workflow_id.clone();
        LocalResource::new(move || {
            let (open, workflow_id) = (opened.get(), workflow_id.clone());
            async move {
                if open {
                    Some(api::list_suites_of(&workflow_id).await)
                } else {
                    None
                }
            }
        })
    };
    let assertions = RwSignal::new(suites_view::assertions_text(
        &suites_view::suggested_assertions(&run),
    ));
    // The suite chosen ("" for a new one); until chosen, the first suite of
    // this workflow, or a new one when it has none.
    let choice = RwSignal::new(None::<String>);
    let new_name = RwSignal::new(String::new());
    let case_name = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);
    let added = RwSignal::new(None::<(String, String, usize)>);
    let busy = RwSignal::new(false);
    let gate = crate::workspace::Gate::editor(crate::workspace::VIEWER_SUITE_HINT);
    let listed = move || -> Vec<SuiteView> {
        suites.with(|r| {
            r.as_ref()
                .and_then(Option::as_ref)
                .and_then(|r| r.as_ref().ok())
                .cloned()
                .unwrap_or_default()
        })
    };
    let options =
        move || -> Vec<(String, String)> { listed().into_iter().map(|s| (s.id, s.name)).collect() };
    let chosen = move || {
        choice.get().unwrap_or_else(|| {
            options()
                .first()
                .map(|(id, _)| id.clone())
                .unwrap_or_default()
        })
    };
    let add = move |_| {
        let parsed = match suites_view::parse_assertions(&assertions.get_untracked()) {
            Ok(a) => a,
            Err(e) => {
                problem.set(Some(e));
                return;
            }
        };
        let case = suites_view::case(&case_name.get_untracked(), &run_id, parsed);
        let target = chosen();
        let (workflow_id, name) = (workflow_id.clone(), new_name.get_untracked());
        let listed_now = untrack(listed);
        busy.set(true);
        problem.set(None);
        added.set(None);
        leptos::task::spawn_local(async move {
            let result = if target.is_empty() {
                match suites_view::new_suite(&name, &workflow_id, case) {
                    Ok(new) => api::create_suite(&new).await.map_err(|e| e.to_string()),
                    Err(e) => Err(e),
                }
            } else {
                // Checked against the suite as listed, then appended by
                // the server (a case appended meanwhile is kept; a name
                // taken meanwhile is refused, 409).
                let suite = listed_now.iter().find(|s| s.id == target);
                let name = suite.map_or_else(|| target.clone(), |s| s.name.clone());
                match suite.and_then(|s| suites_view::append_problem(s, &case)) {
                    Some(e) => Err(e),
                    None => api::append_case(&target, &case)
                        .await
                        .map_err(|e| suites_view::append_refused(&name, &e.to_string())),
                }
            };
            match result {
                Ok(view) => {
                    choice.set(Some(view.id.clone()));
                    added.set(Some((view.id, view.name, view.cases.len())));
                    suites.refetch();
                }
                Err(e) => problem.set(Some(e)),
            }
            busy.set(false);
        });
    };
    let is_new = move || chosen().is_empty();
    view! {
        <details class="suite-form add-to-suite" data-testid="suite-panel" on:toggle=move |ev| {
            let open = ev.target().and_then(|t| js_sys::Reflect::get(&t, &"open".into()).ok())
                .and_then(|v| v.as_bool()) == Some(true);
            if open && !opened.get_untracked() {
                opened.set(true);
            }
        }>
            <summary>"Add to suite"</summary>
            <p class="muted">"Makes this run a regression case: running the suite forks it against the workflow's revision and checks these assertions (prefilled from this run: its outputs, and each tool it called successfully)."</p>
            <label class="field">"Suite"
                <select data-testid="suite-choice" on:change=move |ev| choice.set(Some(event_target_value(&ev)))>
                    {move || {
                        let current = chosen();
                        options().into_iter().map(|(id, name)| {
                            let selected = id == current;
                            view! { <option value=id selected=selected>{name}</option> }
                        }).collect_view()
                    }}
                    <option value="" selected=is_new>"New suite…"</option>
                </select>
            </label>
            <Show when=is_new>
                <label class="field">"New suite's name"
                    <input type="text" data-testid="suite-new-name" placeholder="e.g. checkout regression"
                        prop:value=move || new_name.get() on:input=move |ev| new_name.set(event_target_value(&ev)) />
                </label>
            </Show>
            <label class="field">"Case name (optional)"
                <input type="text" data-testid="suite-case-name" placeholder="the run's id"
                    prop:value=move || case_name.get() on:input=move |ev| case_name.set(event_target_value(&ev)) />
            </label>
            <label class="field">"Assertions (JSON)"
                <textarea data-testid="suite-assertions" rows="6" prop:value=move || assertions.get()
                    on:input=move |ev| assertions.set(event_target_value(&ev))></textarea>
            </label>
            <p class="muted">"Kinds: " {KINDS} "."</p>
            <button type="button" class="primary" data-testid="suite-add" prop:disabled=move || busy.get() || gate.off()
                title=move || gate.why() on:click=add>
                {move || if busy.get() { "Adding…" } else { "Add" }}
            </button>
            {gate.hint()}
            {move || problem.get().map(|p| view! { <p class="error" role="alert" data-testid="suite-add-error">{p}</p> })}
            {move || added.get().map(|(id, name, n)| view! {
                <p class="notice" role="status" data-testid="suite-added">"Added to "
                    <A href=format!("/suites/{id}")>{name}</A>
                    {format!(" ({n} case{}).", if n == 1 { "" } else { "s" })}</p>
            })}
        </details>
    }
}
