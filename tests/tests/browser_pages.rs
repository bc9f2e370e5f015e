//! Browser tests of the runs and tools pages in real Chromium against a
//! real server: a finished run is listed with its status, trigger and
//! duration, the filter narrows the list, and its page shows the outputs
//! and each node's result; the tools page lists the registry with badges
//! and schemas, narrowed by search, category and "show deprecated". Every
//! workflow is built in the editor and started with its Run button, as a
//! user does; the API only reads outcomes (and downloads a bundle to edit).

use std::time::Duration;

use glassbox_tests::harness::{
    app_and_browser_signed_in, app_and_browser_with, browser_tests_enabled, built_app_dir,
    wait_for_text, Browser, Server,
};
use glassbox_tests::ui::{
    appear, click, count, create_workflow, find, one_call_agent, open_workflow_id,
    submit_new_workflow, text_or_empty, wait_until,
};
use serde_json::{json, Value};

/// What [`one_call_run`] built and started.
struct OneCall {
    workflow: String,
    run: String,
    agent: String,
    output: String,
}

/// Builds a workflow `name` in the editor, as a user does (the browser
/// signed in): an Agent node that calls `tool` (`name@version`) once with
/// `arguments`, then answers `answer`, wired to the Output field
/// `answer`; then presses Run (which saves first) and waits for the run
/// to be shown (not to end: a write waits for its approval).
async fn one_call_run(
    browser: &Browser,
    server: &Server,
    name: &str,
    tool: &str,
    arguments: Value,
    answer: &str,
) -> Result<OneCall, String> {
    let c = &browser.client;
    create_workflow(browser, server, name).await?;
    let (agent, output) = one_call_agent(c, tool, arguments, answer).await?;
    click(c, "[data-testid=run]").await?;
    let run = wait_for_text(c, "[data-testid=live-run-id]", Duration::from_secs(20)).await?;
    let workflow = open_workflow_id(c).await?;
    Ok(OneCall {
        workflow,
        run,
        agent,
        output,
    })
}

/// A finished run of a new workflow `name` built in the editor that asks
/// the calculator for 6*7 and answers "42".
async fn finished_calculator_run(
    browser: &Browser,
    server: &Server,
    token: &str,
    name: &str,
) -> OneCall {
    let built = one_call_run(
        browser,
        server,
        name,
        "calculator@1.0.0",
        json!({"expression": "6*7"}),
        "42",
    )
    .await
    .expect("the workflow is built and run in the editor");
    let run = server.finished_run(token, &built.run);
    assert_eq!(run["status"], "succeeded", "{run}");
    built
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_page_lists_filters_and_opens_a_run() {
    // The one-time sign-in link is the browser's; its session token drives
    // the API too.
    let Some((server, browser, token)) = app_and_browser_signed_in(&[]).await else {
        return;
    };
    let built = finished_calculator_run(&browser, &server, &token, "Listed run").await;
    let (wf, run_id) = (built.workflow.clone(), built.run.clone());
    let c = browser.client.clone();
    let outcome = async {
        browser.open(&format!("{}/runs", server.url)).await?;
        let row = format!("[data-run='{run_id}']");
        appear(&c, &row).await?;
        let status = wait_for_text(
            &c,
            &format!("{row} [data-testid=run-status]"),
            Duration::from_secs(5),
        )
        .await?;
        let listed = find(&c, &row)
            .await?
            .text()
            .await
            .map_err(|e| e.to_string())?;
        let duration = wait_for_text(
            &c,
            &format!("{row} [data-testid=run-duration]"),
            Duration::from_secs(5),
        )
        .await?;
        // The status filter narrows the list; the workflow filter keeps it.
        click(&c, "[data-testid=runs-status] option[value=failed]").await?;
        wait_until("the failed-only list", || async {
            Ok(count(&c, &row).await? == 0)
        })
        .await?;
        click(&c, "[data-testid=runs-status] option[value=succeeded]").await?;
        appear(&c, &row).await?;
        click(
            &c,
            &format!("[data-testid=runs-workflow] option[value='{wf}']"),
        )
        .await?;
        appear(&c, &row).await?;
        browser.screenshot("runs-list").await?;
        // Open it: status, outputs and each node's result.
        click(&c, &format!("{row} a")).await?;
        let id = wait_for_text(&c, "[data-testid=run-id]", Duration::from_secs(10)).await?;
        let outputs =
            wait_for_text(&c, "[data-testid=run-outputs]", Duration::from_secs(5)).await?;
        // The graph as it ran, each node with its result; a click opens one.
        let agent = &built.agent;
        appear(&c, &format!("[data-testid=run-graph] [data-node={agent}]")).await?;
        let nodes = count(&c, "[data-testid=run-graph] [data-node]").await?;
        let mut states = Vec::new();
        for n in [&built.agent, &built.output] {
            states.push(
                glassbox_tests::ui::attr_or_none(
                    &c,
                    &format!("[data-testid=run-graph] [data-node={n}]"),
                    "data-status",
                )
                .await?
                .unwrap_or_default(),
            );
        }
        click(&c, &format!("[data-testid=run-graph] [data-node={agent}]")).await?;
        let agent = wait_for_text(
            &c,
            &format!("[data-testid=run-node][data-node={agent}]"),
            Duration::from_secs(5),
        )
        .await?;
        browser.screenshot("run-page").await?;
        Ok::<_, String>((status, listed, duration, id, outputs, nodes, agent, states))
    }
    .await;
    browser.close().await;
    let (status, listed, duration, id, outputs, nodes, agent, states) =
        outcome.expect("the runs pages work");
    assert_eq!(states, ["done", "done"], "each node shows its result");
    assert_eq!(status, "succeeded");
    assert!(
        listed.contains("Listed run") && listed.contains("api"),
        "{listed}"
    );
    assert!(
        duration.ends_with(" ms") || duration.ends_with(" s"),
        "{duration}"
    );
    assert_eq!(id, run_id);
    assert!(outputs.contains("\"answer\": \"42\""), "{outputs}");
    assert_eq!(nodes, 2);
    assert!(agent.contains("1 tool call(s)"), "{agent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_page_lists_the_registry_with_badges_and_schemas() {
    let Some((server, browser)) = app_and_browser_with(&[("GLASSBOX_TEST_TOOLS", "1")]).await
    else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        browser.sign_in(&server).await?;
        browser.open(&format!("{}/tools", server.url)).await?;
        appear(&c, "[data-testid=registry] [data-tool='calculator@1.0.0']").await?;
        let all = count(&c, "[data-testid=registry] [data-tool]").await?;
        let deprecated_hidden = count(&c, "[data-tool='secret_probe@0.9.0']").await?;
        let probe = find(&c, "[data-tool='secret_probe@1.0.0']")
            .await?
            .text()
            .await
            .map_err(|e| e.to_string())?;
        let schema = find(
            &c,
            "[data-tool='calculator@1.0.0'] [data-testid=tool-schema]",
        )
        .await?
        .prop("textContent")
        .await
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
        find(&c, "[data-testid=tool-search]")
            .await?
            .send_keys("calc")
            .await
            .map_err(|e| e.to_string())?;
        wait_until("the search to narrow", || async {
            Ok(count(&c, "[data-testid=registry] [data-tool]").await? == 1)
        })
        .await?;
        find(&c, "[data-testid=tool-search]")
            .await?
            .clear()
            .await
            .map_err(|e| e.to_string())?;
        find(&c, "[data-testid=tool-search]")
            .await?
            .send_keys(" ")
            .await
            .map_err(|e| e.to_string())?;
        click(&c, "[data-testid=show-deprecated]").await?;
        appear(
            &c,
            "[data-tool='secret_probe@0.9.0'] [data-testid=deprecated-badge]",
        )
        .await?;
        click(&c, "[data-testid=tool-category] option[value=data]").await?;
        wait_until("the category to narrow", || async {
            let n = count(&c, "[data-testid=registry] [data-tool]").await?;
            Ok(n > 0 && n < all)
        })
        .await?;
        browser.screenshot("tools-registry").await?;
        Ok::<_, String>((deprecated_hidden, probe, schema))
    }
    .await;
    browser.close().await;
    let (deprecated_hidden, probe, schema) = outcome.expect("the tools page works");
    assert_eq!(deprecated_hidden, 0, "deprecated only on request");
    assert!(probe.contains("Missing API key"), "{probe}");
    assert!(probe.contains("CANARY_WORKSPACE (missing)"), "{probe}");
    assert!(schema.contains("\"expression\""), "{schema}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_is_identical_and_an_edited_bundle_shows_where_it_diverges() {
    let Some((server, browser, token)) = app_and_browser_signed_in(&[]).await else {
        return;
    };
    let built = finished_calculator_run(&browser, &server, &token, "Replayed").await;
    let run_id = built.run.clone();
    // The bundle, edited so a tool result differs from the recording.
    let (_, body) = glassbox_tests::harness::http(
        &server.url,
        "GET",
        &format!("/api/v1/runs/{run_id}/bundle"),
        Some(&token),
        None,
    );
    let mut bundle = glassbox_tests::harness::json(&body);
    bundle["nodes"][&built.agent]["bundle"]["envelopes"][0]["output"] = json!({"result": 43});
    let dir = tempfile::tempdir().expect("tmp");
    let edited = dir.path().join("edited-bundle.json");
    std::fs::write(&edited, bundle.to_string()).expect("write bundle");
    let c = browser.client.clone();
    let outcome = async {
        browser
            .open(&format!("{}/runs/{run_id}", server.url))
            .await?;
        appear(&c, "[data-testid=replay]").await?;
        click(&c, "[data-testid=replay]").await?;
        let identical = wait_for_text(
            &c,
            "[data-testid=replay-verdict], [data-testid=replay-error]",
            Duration::from_secs(20),
        )
        .await?;
        // The replay's calls beside the recorded ones: all the same.
        let same = count(&c, "[data-testid=replay-comparison] tr.same").await?;
        let parted = count(&c, "[data-testid=diverged-call]").await?;
        browser.screenshot("run-replayed").await?;
        browser.open(&format!("{}/runs", server.url)).await?;
        appear(&c, "[data-testid=open-bundle]")
            .await?
            .send_keys(&edited.display().to_string())
            .await
            .map_err(|e| e.to_string())?;
        let diverged = wait_for_text(
            &c,
            "[data-testid=replay-verdict], [data-testid=replay-error]",
            Duration::from_secs(20),
        )
        .await?;
        let highlighted =
            wait_for_text(&c, "[data-testid=diverged-call]", Duration::from_secs(5)).await?;
        browser.screenshot("bundle-diverged").await?;
        Ok::<_, String>((identical, diverged, same, parted, highlighted))
    }
    .await;
    browser.close().await;
    let (identical, diverged, same, parted, highlighted) =
        outcome.expect("replays show their verdict");
    assert_eq!((same, parted), (1, 0), "one call, identical on both sides");
    assert!(
        highlighted.contains("42") && highlighted.contains("43"),
        "the edited call is highlighted with both results: {highlighted}"
    );
    assert!(identical.starts_with("Identical"), "{identical}");
    assert!(diverged.starts_with("Diverged"), "{diverged}");
    assert!(
        diverged.contains(&format!("node `{}`", built.agent)) && diverged.contains("step 2"),
        "names the node and step: {diverged}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_with_a_new_answer_reuses_the_recorded_call_and_shows_the_difference() {
    let Some((server, browser, token)) = app_and_browser_signed_in(&[]).await else {
        return;
    };
    let built = finished_calculator_run(&browser, &server, &token, "Forked").await;
    let run_id = built.run.clone();
    // Only the final answer changes: the script's turns with a new text.
    let changes = json!({"nodes": {&built.agent: {"provider": {"script": {"turns": [
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
        {"text": "forty-two"}]}}}}});
    let c = browser.client.clone();
    let outcome = async {
        browser
            .open(&format!("{}/runs/{run_id}", server.url))
            .await?;
        click(&c, "[data-testid=fork-panel] summary").await?;
        // Not JSON first: the page says so and forks nothing.
        let area = find(&c, "[data-testid=fork-changes]").await?;
        area.clear().await.map_err(|e| e.to_string())?;
        area.send_keys("{nodes").await.map_err(|e| e.to_string())?;
        click(&c, "[data-testid=fork]").await?;
        let refused = wait_for_text(&c, "[data-testid=fork-error]", Duration::from_secs(5)).await?;
        area.clear().await.map_err(|e| e.to_string())?;
        area.send_keys(&changes.to_string())
            .await
            .map_err(|e| e.to_string())?;
        click(&c, "[data-testid=fork]").await?;
        // The fork's page: its kind, and its calls beside the origin's.
        let summary = wait_for_text(
            &c,
            "[data-testid=fork-diff-summary], [data-testid=fork-diff-error]",
            Duration::from_secs(30),
        )
        .await?;
        let kind = text_or_empty(&c, "[data-testid=run-kind]").await?;
        let same = count(&c, "[data-testid=fork-diff] tr[data-change=same]").await?;
        let answer = text_or_empty(&c, "[data-testid=fork-response-changed]").await?;
        let outputs = text_or_empty(&c, "[data-testid=run-outputs]").await?;
        c.execute(
            "document.querySelector('[data-testid=fork-diff]').scrollIntoView()",
            vec![],
        )
        .await
        .map_err(|e| e.to_string())?;
        browser.screenshot("run-forked").await?;
        Ok::<_, String>((refused, summary, kind, same, answer, outputs))
    }
    .await;
    browser.close().await;
    let (refused, summary, kind, same, answer, outputs) =
        outcome.expect("a fork is made and compared from the run page");
    assert!(refused.contains("not valid"), "{refused}");
    assert!(
        kind.starts_with("fork of") && kind.contains(&run_id),
        "{kind}"
    );
    assert_eq!(same, 1, "the one call is the same: {summary}");
    assert!(
        summary.contains("1 same (1 answered from the recording)")
            && summary.contains("outputs differ"),
        "{summary}"
    );
    assert!(
        answer.contains("42") && answer.contains("forty-two"),
        "{answer}"
    );
    assert!(outputs.contains("forty-two"), "{outputs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_are_approved_from_the_tools_page_and_their_invocations_open_a_drawer() {
    let Some((server, browser, token)) = app_and_browser_signed_in(&[]).await else {
        return;
    };
    let run_id = one_call_run(
        &browser,
        &server,
        "Approve here",
        "write_file@1.0.0",
        json!({"path": "tab.txt", "content": "ok"}),
        "Written.",
    )
    .await
    .expect("the workflow is built and run in the editor")
    .run;
    let c = browser.client.clone();
    let outcome = async {
        // The navigation says a write waits, from any page, and leads to it.
        browser.open(&format!("{}/workflows", server.url)).await?;
        let nav = wait_for_text(&c, "[data-testid=nav-approvals]", Duration::from_secs(15)).await?;
        if nav != "1 approval waiting" {
            return Err(format!("the navigation says {nav:?}"));
        }
        click(&c, "[data-testid=nav-approvals]").await?;
        wait_until("the pending count", || async {
            Ok(text_or_empty(&c, "[data-testid=approvals-count]").await? == "1")
        })
        .await?;
        appear(&c, "[data-testid=approvals] [data-testid=approve]").await?;
        let listed = find(&c, "[data-testid=approvals] li")
            .await?
            .text()
            .await
            .map_err(|e| e.to_string())?;
        browser.screenshot("tools-approvals").await?;
        click(&c, "[data-testid=approvals] [data-testid=approve]").await?;
        appear(&c, "[data-testid=approvals-empty]").await?;
        Ok::<_, String>(listed)
    }
    .await;
    let listed = match outcome {
        Ok(l) => l,
        Err(e) => {
            browser.close().await;
            panic!("approvals tab: {e}");
        }
    };
    let run = server.finished_run(&token, &run_id);
    let outcome = async {
        click(&c, "[data-tab=invocations]").await?;
        appear(&c, "[data-testid=invocations] tr[data-invocation]").await?;
        click(
            &c,
            "[data-testid=invocation-status] option[value=completed]",
        )
        .await?;
        appear(&c, "[data-testid=invocations] tr[data-invocation]").await?;
        click(&c, "[data-testid=invocations] tr[data-invocation]").await?;
        let status =
            wait_for_text(&c, "[data-testid=drawer-status]", Duration::from_secs(5)).await?;
        let approval =
            wait_for_text(&c, "[data-testid=drawer-approval]", Duration::from_secs(5)).await?;
        let output =
            wait_for_text(&c, "[data-testid=drawer-output]", Duration::from_secs(5)).await?;
        click(&c, "[data-testid=invocation-status] option[value=failed]").await?;
        appear(&c, "[data-testid=invocations-empty]").await?;
        browser.screenshot("tools-invocations").await?;
        Ok::<_, String>((status, approval, output))
    }
    .await;
    browser.close().await;
    let (status, approval, output) = outcome.expect("invocations tab");
    assert!(
        listed.contains("write_file") && listed.contains("tab.txt"),
        "{listed}"
    );
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(status, "completed");
    assert_eq!(approval, "approval: approved");
    assert!(output.contains("bytes_written"), "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_output_opens_in_the_drawer_with_its_full_payload_a_click_away() {
    let Some((server, browser, token)) =
        app_and_browser_signed_in(&[("GLASSBOX_MAX_OUTPUT_BYTES", "1024")]).await
    else {
        return;
    };
    // 400 numbers: well over the 1 KiB cap.
    let run_id = one_call_run(
        &browser,
        &server,
        "Big output",
        "json_query@1.0.0",
        json!({"program": "[range(0;400)]", "data": null}),
        "done",
    )
    .await
    .expect("the workflow is built and run in the editor")
    .run;
    let run = server.finished_run(&token, &run_id);
    let c = browser.client.clone();
    let outcome = async {
        browser.open(&format!("{}/tools", server.url)).await?;
        click(&c, "[data-tab=invocations]").await?;
        appear(&c, "[data-testid=invocations] tr[data-invocation]").await?;
        click(&c, "[data-testid=invocations] tr[data-invocation]").await?;
        let drawer = wait_for_text(&c, "[data-testid=call-drawer]", Duration::from_secs(5)).await?;
        click(&c, "[data-testid=drawer-blob]").await?;
        wait_until("the blob to be fetched", || async {
            Ok(text_or_empty(&c, "[data-testid=drawer-note]")
                .await?
                .starts_with("Saved"))
        })
        .await?;
        let note = text_or_empty(&c, "[data-testid=drawer-note]").await?;
        browser.screenshot("tools-truncated-output").await?;
        Ok::<_, String>((drawer, note))
    }
    .await;
    browser.close().await;
    let (drawer, note) = outcome.expect("the truncated output's drawer works");
    assert_eq!(run["status"], "succeeded", "{run}");
    assert!(
        drawer.contains("truncated") && drawer.contains("Download the full output"),
        "{drawer}"
    );
    // The whole array, pretty-printed: far more than the inline preview.
    let bytes: usize = note
        .trim_end_matches(" bytes).")
        .rsplit('(')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(bytes > 1024, "{note}");
}

/// A lazily loaded page whose module the server cannot send says so on the
/// page, and the rest of the app keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_whose_module_cannot_be_fetched_says_so() {
    if !browser_tests_enabled() {
        return;
    }
    // The built app without the editor's module (nor its gzipped copy).
    let dist = built_app_dir().expect("built app");
    let broken = tempfile::tempdir().expect("tmp");
    let mut removed = 0;
    for entry in std::fs::read_dir(&dist).expect("dist").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("split_editor_page.wasm") {
            removed += 1;
        } else if entry.path().is_file() {
            std::fs::copy(entry.path(), broken.path().join(&name)).expect("copy");
        }
    }
    assert!(removed >= 1, "the build has the editor's own module");
    let data_dir = tempfile::tempdir().expect("tmp");
    let server = Server::start_in(data_dir, Some(broken.path()), &[]).expect("server starts");
    let browser = Browser::start_with(&[]).await.expect("browser starts");
    let c = browser.client.clone();
    let outcome = async {
        // Created from the workflows page, which then opens its editor.
        browser.sign_in(&server).await?;
        submit_new_workflow(&browser, &server, "Editor out of reach").await?;
        let message = wait_for_text(
            &c,
            "[data-testid=page-unavailable]",
            Duration::from_secs(10),
        )
        .await?;
        // Another lazy page still opens.
        browser.open(&format!("{}/tools", server.url)).await?;
        appear(&c, "[data-testid=registry] [data-tool='calculator@1.0.0']").await?;
        Ok::<_, String>(message)
    }
    .await;
    // The failed fetch is logged (by the module loader) and nothing else.
    let logged = browser.close_after_console_errors().await;
    let message = outcome.expect("the app reports the missing page");
    assert!(
        logged.len() == 1 && logged[0].contains("__wasm_split.js"),
        "the loader logs the failed fetch, and nothing else is logged: {logged:?}"
    );
    assert!(
        message.contains("editor page could not be loaded"),
        "{message}"
    );
}
