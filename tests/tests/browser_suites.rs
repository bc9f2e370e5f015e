//! Browser test of regression suites (issue 33) in real Chromium against a
//! real server: three finished runs of one workflow are added to a suite
//! from their run pages, the suite passes from the Suites page, and after
//! the calculator is removed from the Agent's tools in the editor the suite
//! fails, naming each failing case and the assertion "calculator is
//! called" with what was found.

use std::time::{Duration, Instant};

use fantoccini::Client;
use glassbox_tests::harness::{app_and_browser_signed_in, wait_for_text, Browser, Server};
use glassbox_tests::ui::{
    appear, attr_or_none, click, click_and_answer, count, create_workflow, find, one_call_agent,
    open_workflow_id, run_and_wait, text_or_empty, value_of, wait_until,
};
use serde_json::{json, Value};

/// Builds, in the editor (the browser signed in), a workflow whose
/// scripted Agent node asks the calculator for 6*7 once, then answers
/// "42", wired to the Output field `answer`; runs it `runs` times with
/// Run, each to its end. Returns the workflow's id, the Agent node's id
/// and the runs' ids.
async fn calculator_runs(
    browser: &Browser,
    server: &Server,
    runs: usize,
) -> Result<(String, String, Vec<String>), String> {
    let c = &browser.client;
    create_workflow(browser, server, "Calc").await?;
    let (agent, _) =
        one_call_agent(c, "calculator@1.0.0", json!({"expression": "6*7"}), "42").await?;
    let mut ids = Vec::new();
    for _ in 0..runs {
        let state = run_and_wait(c).await?;
        if state != "succeeded" {
            return Err(format!("a run of the calculator workflow {state}"));
        }
        ids.push(text_or_empty(c, "[data-testid=live-run-id]").await?);
    }
    let workflow = open_workflow_id(c).await?;
    Ok((workflow, agent, ids))
}

/// Types `text` into the element matching `css` after clearing it.
async fn retype(c: &Client, css: &str, text: &str) -> Result<(), String> {
    let e = find(c, css).await?;
    e.clear().await.map_err(|e| format!("clear {css}: {e}"))?;
    e.send_keys(text)
        .await
        .map_err(|e| format!("type into {css}: {e}"))
}

/// Waits (60 s at most) until the suite page shows a finished suite run
/// other than `not`; its id and status.
async fn suite_run_ended(c: &Client, not: Option<&str>) -> Result<(String, String), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run = attr_or_none(c, "[data-testid=suite-run]", "data-run").await?;
        let done = attr_or_none(c, "[data-testid=suite-run]", "data-final").await?;
        if let (Some(run), Some("true")) = (run, done.as_deref()) {
            if Some(run.as_str()) != not {
                let status = attr_or_none(c, "[data-testid=suite-run]", "data-status")
                    .await?
                    .unwrap_or_default();
                return Ok((run, status));
            }
        }
        if Instant::now() > deadline {
            let shown = text_or_empty(c, "[data-testid=suite-run-controls]").await?;
            return Err(format!(
                "no finished suite run after 60 s; the page shows: {shown}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Each failing case's name, with the text of each of its failed
/// assertions (description and message).
async fn failures(c: &Client) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut found = Vec::new();
    let cases = c
        .find_all(fantoccini::Locator::Css(
            "[data-testid=case-result][data-passed=false]",
        ))
        .await
        .map_err(|e| e.to_string())?;
    for case in cases {
        let name = case
            .attr("data-case")
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        let mut failed = Vec::new();
        for a in case
            .find_all(fantoccini::Locator::Css(
                "[data-testid=assertion-result][data-passed=false]",
            ))
            .await
            .map_err(|e| e.to_string())?
        {
            failed.push(a.text().await.map_err(|e| e.to_string())?);
        }
        found.push((name, failed));
    }
    Ok(found)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suite_of_three_runs_passes_then_fails_once_the_editor_removes_the_calculator() {
    let Some((server, browser, _)) = app_and_browser_signed_in(&[]).await else {
        return;
    };
    let (workflow, agent, runs) = calculator_runs(&browser, &server, 3)
        .await
        .expect("the workflow is built and run in the editor");
    let c = browser.client.clone();
    let outcome = async {
        // Each run's page: Add to suite; the first makes the suite, the
        // next two are appended to it.
        let mut added = Vec::new();
        let mut prefilled = String::new();
        let mut refused = String::new();
        for (i, run) in runs.iter().enumerate() {
            browser.open(&format!("{}/runs/{run}", server.url)).await?;
            click(&c, "[data-testid=suite-panel] summary").await?;
            appear(&c, "[data-testid=suite-assertions]").await?;
            if i == 0 {
                prefilled = value_of(&c, "[data-testid=suite-assertions]").await?;
                // A misspelt kind is refused in words; nothing is made.
                retype(
                    &c,
                    "[data-testid=suite-assertions]",
                    r#"[{"kind": "tool_caled", "tool": "calculator"}]"#,
                )
                .await?;
                click(&c, "[data-testid=suite-add]").await?;
                refused =
                    wait_for_text(&c, "[data-testid=suite-add-error]", Duration::from_secs(10))
                        .await?;
                retype(&c, "[data-testid=suite-assertions]", &prefilled).await?;
                retype(&c, "[data-testid=suite-new-name]", "calc regression").await?;
            } else {
                // The workflow's suite is offered; choose it.
                wait_until("the suite offered", || async {
                    Ok(count(&c, "[data-testid=suite-choice] option:not([value=''])").await? == 1)
                })
                .await?;
                click(&c, "[data-testid=suite-choice] option:not([value=''])").await?;
                let offered =
                    text_or_empty(&c, "[data-testid=suite-choice] option:not([value=''])").await?;
                if offered != "calc regression" {
                    return Err(format!("the suite offered is {offered:?}"));
                }
            }
            click(&c, "[data-testid=suite-add]").await?;
            // (An error shown before this click may still be on the page
            // for a moment: only the success ends the wait.)
            match wait_for_text(&c, "[data-testid=suite-added]", Duration::from_secs(15)).await {
                Ok(text) => added.push(text),
                Err(e) => {
                    let said = text_or_empty(&c, "[data-testid=suite-add-error]").await?;
                    return Err(format!("run {} was not added: {said:?}; {e}", i + 1));
                }
            }
        }

        c.execute(
            "document.querySelector('[data-testid=suite-added]').scrollIntoView({block: 'center'})",
            vec![],
        )
        .await
        .map_err(|e| e.to_string())?;
        browser.screenshot("run-added-to-suite").await?;

        // The Suites page lists it; its page runs it.
        browser.open(&format!("{}/suites", server.url)).await?;
        let row = wait_for_text(
            &c,
            "[data-testid=suite-list] [data-suite]",
            Duration::from_secs(10),
        )
        .await?;
        let cases_listed = text_or_empty(&c, "[data-testid=suite-case-count]").await?;
        click(&c, "[data-testid=suite-list] [data-suite] a").await?;
        wait_for_text(&c, "[data-testid=suite-name]", Duration::from_secs(10)).await?;
        let suite_url = c
            .current_url()
            .await
            .map_err(|e| e.to_string())?
            .to_string();
        let described = text_or_empty(&c, "[data-testid=suite-cases]").await?;
        click(&c, "[data-testid=run-suite]").await?;
        let (first, first_status) = suite_run_ended(&c, None).await?;
        let first_verdict = text_or_empty(&c, "[data-testid=suite-verdict]").await?;
        let first_passed = count(&c, "[data-testid=case-result][data-passed=true]").await?;

        // The editor: the calculator taken off the Agent's tools, saved.
        browser
            .open(&format!("{}/workflows/{workflow}", server.url))
            .await?;
        click(&c, &format!("[data-node={agent}] .node-label")).await?;
        let toggle = "[data-tool='calculator@1.0.0'] [data-testid=tool-enable]";
        appear(&c, toggle).await?;
        let was_on = find(&c, toggle)
            .await?
            .prop("checked")
            .await
            .map_err(|e| e.to_string())?;
        click(&c, toggle).await?;
        wait_until("the calculator disabled", || async {
            Ok(find(&c, toggle)
                .await?
                .prop("checked")
                .await
                .map_err(|e| e.to_string())?
                .as_deref()
                == Some("false"))
        })
        .await?;
        click(&c, "[data-testid=save]").await?;
        wait_until("the save's answer", || async {
            let status = text_or_empty(&c, "[data-testid=editor-status]").await?;
            Ok(status.starts_with("Saved as revision") || status.starts_with("Not saved"))
        })
        .await?;
        let saved = text_or_empty(&c, "[data-testid=editor-status]").await?;

        // The suite again: it fails, naming the cases and the assertion.
        browser.open(&suite_url).await?;
        appear(&c, "[data-testid=suite-run]").await?;
        click(&c, "[data-testid=run-suite]").await?;
        let (_, second_status) = suite_run_ended(&c, Some(&first)).await?;
        let second_verdict = text_or_empty(&c, "[data-testid=suite-verdict]").await?;
        let failed = failures(&c).await?;
        let fork_links = count(
            &c,
            "[data-testid=case-result][data-passed=false] [data-testid=case-fork]",
        )
        .await?;
        let diffs = count(
            &c,
            "[data-testid=case-result][data-passed=false] [data-testid=case-diff]",
        )
        .await?;
        let history = count(&c, "[data-testid=suite-history] [data-suite-run]").await?;
        c.execute(
            "document.querySelector('[data-testid=suite-run]').scrollIntoView()",
            vec![],
        )
        .await
        .map_err(|e| e.to_string())?;
        browser.screenshot("suite-run-failed").await?;

        browser.open(&format!("{}/suites", server.url)).await?;
        let last = wait_for_text(
            &c,
            "[data-testid=suite-last-run] [data-testid=suite-run-status]",
            Duration::from_secs(10),
        )
        .await?;
        browser.screenshot("suites-list").await?;
        Ok::<_, String>((
            (prefilled, refused, added, row, cases_listed, described),
            (first_status, first_verdict, first_passed),
            (was_on, saved),
            (
                second_status,
                second_verdict,
                failed,
                fork_links,
                diffs,
                history,
                last,
            ),
        ))
    }
    .await;
    browser.close().await;
    let (
        (prefilled, refused, added, row, cases_listed, described),
        (first_status, first_verdict, first_passed),
        (was_on, saved),
        (second_status, second_verdict, failed, fork_links, diffs, history, last),
    ) = outcome.expect("a suite is made from three run pages, passes, and fails after the edit");

    // The run page's panel: prefilled, a bad text refused, three cases added.
    assert!(
        prefilled.contains(r#"{"kind":"outputs_equal"}"#)
            && prefilled.contains(r#"{"kind":"tool_called","tool":"calculator"}"#),
        "{prefilled}"
    );
    assert!(refused.contains("Assertion 1 is not valid"), "{refused}");
    assert_eq!(
        added,
        [
            "Added to calc regression (1 case).",
            "Added to calc regression (2 cases).",
            "Added to calc regression (3 cases)."
        ]
    );
    // The list and the suite's cases.
    assert!(
        row.contains("calc regression") && row.contains("Calc"),
        "{row}"
    );
    assert_eq!(cases_listed, "3");
    assert_eq!(
        described.matches("calculator is called").count(),
        3,
        "{described}"
    );
    // Unchanged workflow: every case passes.
    assert_eq!(first_status, "passed", "{first_verdict}");
    assert!(first_verdict.contains("3 of 3 passed"), "{first_verdict}");
    assert_eq!(first_passed, 3);
    // The edit: the calculator was on and is saved off.
    assert_eq!(was_on.as_deref(), Some("true"));
    assert!(saved.starts_with("Saved as revision"), "{saved}");
    // After it: the suite fails and names each case and the assertion.
    assert_eq!(second_status, "failed", "{second_verdict}");
    assert!(
        second_verdict.contains("0 of 3 passed, 3 failed"),
        "{second_verdict}"
    );
    let mut names: Vec<&str> = failed.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    let mut want: Vec<&str> = runs.iter().map(String::as_str).collect();
    want.sort_unstable();
    assert_eq!(names, want, "each case is named by its run: {failed:?}");
    for (name, assertions) in &failed {
        assert!(
            assertions
                .iter()
                .any(|a| a.starts_with("fail calculator is called: ")
                    && a.contains("calculator ran 0 times")),
            "{name}: {assertions:?}"
        );
    }
    assert_eq!(fork_links, 3, "each failed case links its fork");
    assert!(diffs >= 1, "a failed case shows its diff");
    assert_eq!(history, 2, "both suite runs are in the history");
    assert_eq!(last, "failed");
}

/// The page's requests so far to `/api/v1/suites` (the list), by URL.
async fn suite_requests(c: &Client) -> Result<Vec<String>, String> {
    let found = c
        .execute(
            "return performance.getEntriesByType('resource').map(e => e.name)\
             .filter(n => n.includes('/api/v1/suites'))",
            vec![],
        )
        .await
        .map_err(|e| e.to_string())?;
    Ok(found
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

/// `GET` of an API route as JSON, with its status.
fn api_get(server: &Server, token: &str, path: &str) -> (u16, Value) {
    let (status, body) = glassbox_tests::harness::http(
        &server.url,
        "GET",
        &format!("/api/v1{path}"),
        Some(token),
        None,
    );
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// On run `run`'s page, adds it with the Add to suite form to a new
/// suite named `new_suite`, or else to the workflow's one suite, as the
/// case `case` with `assertions`; returns the suite's id (from the link
/// in the notice that says it was added).
async fn add_to_suite(
    browser: &Browser,
    server: &Server,
    run: &str,
    new_suite: Option<&str>,
    case: &str,
    assertions: &str,
) -> Result<String, String> {
    let c = &browser.client;
    browser.open(&format!("{}/runs/{run}", server.url)).await?;
    click(c, "[data-testid=suite-panel] summary").await?;
    appear(c, "[data-testid=suite-assertions]").await?;
    match new_suite {
        Some(name) => retype(c, "[data-testid=suite-new-name]", name).await?,
        None => {
            wait_until("the suite offered", || async {
                Ok(count(c, "[data-testid=suite-choice] option:not([value=''])").await? == 1)
            })
            .await?;
            click(c, "[data-testid=suite-choice] option:not([value=''])").await?;
        }
    }
    retype(c, "[data-testid=suite-case-name]", case).await?;
    retype(c, "[data-testid=suite-assertions]", assertions).await?;
    click(c, "[data-testid=suite-add]").await?;
    let href = appear(c, "[data-testid=suite-added] a")
        .await?
        .attr("href")
        .await
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    match href.rsplit_once("/suites/") {
        Some((_, id)) if !id.is_empty() => Ok(id.to_string()),
        _ => Err(format!("the notice links to {href:?}, not a suite")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suite_page_edits_assertions_options_and_cases_runs_a_named_revision_and_deletes_it() {
    let Some((server, browser, token)) = app_and_browser_signed_in(&[]).await else {
        return;
    };
    let (workflow, _, runs) = calculator_runs(&browser, &server, 3)
        .await
        .expect("the workflow is built and run in the editor");
    // The revision the runs ran (Run saved the built graph as a new one).
    let revision = server.finished_run(&token, &runs[0])["workflow_revision"]
        .as_i64()
        .expect("the run names its revision");
    // The suite and its first two cases, made from the runs' pages.
    let only_outputs = r#"[{"kind": "outputs_equal"}]"#;
    let suite = async {
        let suite = add_to_suite(
            &browser,
            &server,
            &runs[0],
            Some("edits"),
            "first",
            only_outputs,
        )
        .await?;
        add_to_suite(&browser, &server, &runs[1], None, "second", only_outputs).await?;
        Ok::<_, String>(suite)
    }
    .await
    .expect("the suite is made from the runs' pages");
    let c = browser.client.clone();
    let outcome = async {
        // The third run's page asks for no suite until Add to suite is
        // opened, then only for this workflow's.
        browser
            .open(&format!("{}/runs/{}", server.url, runs[2]))
            .await?;
        appear(&c, "[data-testid=suite-panel] summary").await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let closed = suite_requests(&c).await?;
        click(&c, "[data-testid=suite-panel] summary").await?;
        wait_until("the suite offered", || async {
            Ok(count(&c, "[data-testid=suite-choice] option:not([value=''])").await? == 1)
        })
        .await?;
        let opened = suite_requests(&c).await?;
        // Someone else appends the run as "third" meanwhile; appending it
        // here under the same name is refused in words, and theirs is kept.
        let (status, body) = glassbox_tests::harness::http(
            &server.url,
            "POST",
            &format!("/api/v1/suites/{suite}/cases"),
            Some(&token),
            Some(&json!({"name": "third", "run_id": runs[2], "assertions": [{"kind": "outputs_equal"}]})),
        );
        if status != 200 {
            return Err(format!("the concurrent append: {status} {body}"));
        }
        click(&c, "[data-testid=suite-choice] option:not([value=''])").await?;
        retype(&c, "[data-testid=suite-case-name]", "third").await?;
        click(&c, "[data-testid=suite-add]").await?;
        let conflict =
            wait_for_text(&c, "[data-testid=suite-add-error]", Duration::from_secs(10)).await?;
        let after_conflict = api_get(&server, &token, &format!("/suites/{suite}")).1;

        browser
            .open(&format!("{}/suites/{suite}", server.url))
            .await?;
        appear(&c, "[data-testid=suite-never-run]").await?;
        // A bad text is refused in words and not sent; a good one is saved.
        let first = "[data-testid=suite-cases] tr[data-case=first]";
        click(&c, &format!("{first} [data-testid=case-edit]")).await?;
        let opened_text = value_of(&c, "[data-testid=case-assertions]").await?;
        retype(
            &c,
            "[data-testid=case-assertions]",
            r#"[{"kind": "max_calls"}"#,
        )
        .await?;
        click(&c, "[data-testid=case-save]").await?;
        let refused =
            wait_for_text(&c, "[data-testid=case-problem]", Duration::from_secs(10)).await?;
        let unsent = api_get(&server, &token, &format!("/suites/{suite}")).1;
        retype(
            &c,
            "[data-testid=case-assertions]",
            r#"[{"kind": "max_calls", "max": 1}, {"kind": "status", "equals": "succeeded"}]"#,
        )
        .await?;
        click(&c, "[data-testid=case-save]").await?;
        let saved =
            wait_for_text(&c, "[data-testid=suite-notice]", Duration::from_secs(10)).await?;
        let described = text_or_empty(
            &c,
            &format!("{first} [data-testid=case-assertions-described]"),
        )
        .await?;

        // Options: the recorded answers, live reads on.
        click(&c, "[data-testid=suite-model] option[value=recorded]").await?;
        click(&c, "[data-testid=suite-live-reads]").await?;
        click(&c, "[data-testid=suite-options-save]").await?;
        wait_until("the options saved", || async {
            Ok(text_or_empty(&c, "[data-testid=suite-notice]").await? == "Saved the options.")
        })
        .await?;

        // A revision that is not a number is refused; the runs' revision
        // runs.
        retype(&c, "[data-testid=suite-revision]", "first").await?;
        click(&c, "[data-testid=run-suite]").await?;
        let bad_revision =
            wait_for_text(&c, "[data-testid=run-suite-error]", Duration::from_secs(10)).await?;
        retype(&c, "[data-testid=suite-revision]", &revision.to_string()).await?;
        click(&c, "[data-testid=run-suite]").await?;
        let (_, status) = suite_run_ended(&c, None).await?;
        let verdict = text_or_empty(&c, "[data-testid=suite-verdict]").await?;

        // The dark theme, for the record.
        click(&c, "[data-testid=theme]").await?;
        wait_until("the dark theme", || async {
            Ok(text_or_empty(&c, "[data-testid=theme]").await? == "Theme: dark")
        })
        .await?;
        browser.screenshot("suite-page-dark").await?;

        // Remove the second and third cases: the last one left cannot be
        // removed (a hint says why); then delete the suite (dismissing
        // first).
        let hint_before = count(&c, "[data-testid=case-remove-hint]").await?;
        for (name, left) in [("second", 2), ("third", 1)] {
            click(
                &c,
                &format!("[data-testid=suite-cases] tr[data-case={name}] [data-testid=case-remove]"),
            )
            .await?;
            wait_until("the case removed", || async {
                Ok(count(&c, "[data-testid=suite-cases] tbody tr").await? == left)
            })
            .await?;
        }
        let last_remove = find(&c, &format!("{first} [data-testid=case-remove]"))
            .await?
            .prop("disabled")
            .await
            .map_err(|e| e.to_string())?;
        let hint = wait_for_text(
            &c,
            &format!("{first} [data-testid=case-remove-hint]"),
            Duration::from_secs(10),
        )
        .await?;
        let after_remove = api_get(&server, &token, &format!("/suites/{suite}")).1;
        click_and_answer(&c, "[data-testid=suite-delete]", false).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let kept = api_get(&server, &token, &format!("/suites/{suite}")).0;
        click_and_answer(&c, "[data-testid=suite-delete]", true).await?;
        let empty =
            wait_for_text(&c, "[data-testid=suites-empty]", Duration::from_secs(10)).await?;
        let gone = api_get(&server, &token, &format!("/suites/{suite}")).0;
        Ok::<_, String>((
            (closed, opened, conflict, after_conflict),
            (opened_text, refused, unsent, saved, described),
            (bad_revision, status, verdict),
            (hint_before, last_remove, hint),
            (after_remove, kept, empty, gone),
        ))
    }
    .await;
    browser.close().await;
    let (
        (closed, opened_requests, conflict, after_conflict),
        (opened, refused, unsent, saved, described),
        (bad_revision, status, verdict),
        (hint_before, last_remove, hint),
        (after_remove, kept, empty, gone),
    ) = outcome.expect("a suite's page edits, runs and deletes it");

    // The run page's panel: no suite fetched while closed, the workflow's
    // once opened; a name taken meanwhile refused in words (409), the
    // other append kept.
    assert!(closed.is_empty(), "{closed:?}");
    assert_eq!(opened_requests.len(), 1, "{opened_requests:?}");
    assert!(
        opened_requests[0]
            .split_once("/api/v1/suites?")
            .is_some_and(|(_, q)| q.trim_end_matches('&') == format!("workflow_id={workflow}")),
        "{opened_requests:?}"
    );
    assert!(
        conflict.starts_with("Not added to \u{201c}edits\u{201d}: ")
            && conflict.contains("HTTP 409"),
        "{conflict}"
    );
    let names: Vec<&str> = after_conflict["cases"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["first", "second", "third"], "{after_conflict}");

    assert_eq!(opened, "[\n  {\"kind\":\"outputs_equal\"}\n]");
    assert!(refused.contains("not valid JSON"), "{refused}");
    assert_eq!(
        unsent["cases"][0]["assertions"],
        json!([{"kind": "outputs_equal"}]),
        "a refused text is not sent"
    );
    assert_eq!(saved, "Saved the assertions of \u{201c}first\u{201d}.");
    assert!(
        described.contains("at most 1 calls") && described.contains("status is succeeded"),
        "{described}"
    );
    assert!(bad_revision.contains("whole number"), "{bad_revision}");
    assert_eq!(status, "passed", "{verdict}");
    assert!(
        verdict.contains(&format!("3 of 3 passed against revision {revision}")),
        "{verdict}"
    );
    // The last case's Remove is off, and says why.
    assert_eq!(hint_before, 0, "with three cases each can be removed");
    assert_eq!(last_remove.as_deref(), Some("true"));
    assert_eq!(hint, "a suite needs a case; delete the suite instead");
    assert_eq!(
        after_remove["cases"].as_array().map(Vec::len),
        Some(1),
        "{after_remove}"
    );
    assert_eq!(after_remove["cases"][0]["name"], "first");
    assert_eq!(
        after_remove["options"],
        json!({"model": "recorded", "live_reads": true})
    );
    assert_eq!(kept, 200, "dismissing the confirmation keeps the suite");
    assert!(empty.contains("Add to suite"), "{empty}");
    assert_eq!(gone, 404);
}
