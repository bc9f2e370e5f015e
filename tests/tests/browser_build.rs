//! Building workflows in the browser, in real Chromium against the real
//! server, with the UI only (no API call from the test but reading the
//! outcome): a workflow from scratch (Input with a default, a scripted
//! Agent whose turns are typed in its panel with a pinned calculator
//! result, a Template, an Output of two fields) that runs; a Tool node
//! switched to another tool; a run the server refuses at its start shown
//! failed at once; a wire selected, deleted, brought back and dragged to
//! another input; and a live
//! OpenAI run (a loopback mock that requires the key) turned into a
//! scripted workflow that gives the same outputs offline.

use std::time::Duration;

use fantoccini::actions::{InputSource, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
use glassbox_tests::harness::{app_and_browser, app_and_browser_with, wait_for_text};
use glassbox_tests::mock_provider::{Api, MockProvider};
use glassbox_tests::ui::{
    add_node, appear, click, connect, count, drag_by, find, new_workflow, pin_result, run_and_wait,
    save_secret, select, text_or_empty, type_and_leave, value_of, wait_until,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_built_from_scratch_in_the_browser_runs() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        new_workflow(&browser, &server, "From scratch").await?;

        // Input: its `text` field gets a default.
        let input = add_node(&c, "input").await?;
        select(&c, &input).await?;
        type_and_leave(&c, "[data-input-field=text] [data-input-attr=default]", "6*7").await?;

        // Agent: a prompt, the calculator enabled and pinned (its result's
        // `/result`), and the script typed in its turns editor.
        let agent = add_node(&c, "agent").await?;
        select(&c, &agent).await?;
        type_and_leave(&c, "[data-testid=agent-system-prompt]", "You compute.").await?;
        type_and_leave(&c, "[data-testid=agent-prompt]", "Compute {{ text }}").await?;
        click(&c, "[data-tool='calculator@1.0.0'] [data-testid=tool-enable]").await?;
        pin_result(&c, "calculator@1.0.0", "calculator_result").await?;
        type_and_leave(&c, "[data-pin=calculator_result] [data-pin-field=path]", "/result").await?;
        type_and_leave(
            &c,
            "[data-testid=script-turns]",
            r#"{"turns": [{"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]}, {"text": "The answer is 42."}]}"#,
        )
        .await?;
        type_and_leave(&c, "[data-setting=max_tokens]", "256").await?;

        // Template and Output, typed in their panels.
        let template = add_node(&c, "template").await?;
        select(&c, &template).await?;
        type_and_leave(&c, "[data-testid=template-text]", "Result: {{ value }}").await?;
        let inputs = text_or_empty(&c, "[data-testid=template-inputs]").await?;
        let output = add_node(&c, "output").await?;
        select(&c, &output).await?;
        type_and_leave(&c, "[data-testid=output-fields]", "answer, report").await?;

        connect(&c, (&input, "text"), (&agent, "text")).await?;
        connect(&c, (&agent, "calculator_result"), (&template, "value")).await?;
        connect(&c, (&agent, "response"), (&output, "answer")).await?;
        connect(&c, (&template, "text"), (&output, "report")).await?;

        // The Run form shows the default; "Save and run" saves first.
        let hint = find(&c, "[data-run-input=text]")
            .await?
            .attr("placeholder")
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        let button = text_or_empty(&c, "[data-testid=run]").await?;
        let state = run_and_wait(&c).await?;
        let outputs = wait_for_text(
            &c,
            &format!("[data-testid=live-outputs] tr[data-node={output}]"),
            Duration::from_secs(10),
        )
        .await?;
        browser.screenshot("built-from-scratch").await?;
        // The Template's preview renders the text as it is typed over the
        // last run's inputs.
        select(&c, &template).await?;
        let text = appear(&c, "[data-testid=template-text]").await?;
        text.clear().await.map_err(|e| e.to_string())?;
        text.send_keys("Total: {{ value * 2 }}")
            .await
            .map_err(|e| e.to_string())?;
        let preview = wait_until("the preview", || async {
            // The pin carries the calculator's number (42.0).
            Ok(text_or_empty(&c, "[data-testid=template-preview-text]")
                .await?
                .starts_with("Total: 84"))
        })
        .await;
        if let Err(e) = preview {
            let shown = text_or_empty(&c, "[data-testid=inspector]").await?;
            return Err(format!("{e}; the panel shows: {shown}"));
        }
        Ok::<_, String>((inputs, hint, button, state, outputs))
    }
    .await;
    let errors = browser.close_after_console_errors().await;
    let (inputs, hint, button, state, outputs) = outcome.expect("the workflow is built and runs");
    assert!(errors.is_empty(), "console errors: {errors:?}");
    assert_eq!(inputs, "Inputs: value");
    assert_eq!(hint, "6*7 (default)");
    assert_eq!(button, "Save and run");
    assert_eq!(state, "succeeded");
    assert!(outputs.contains("The answer is 42."), "{outputs}");
    assert!(outputs.contains("Result: 42"), "{outputs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_node_switched_to_another_tool_has_only_its_fields_and_runs() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        new_workflow(&browser, &server, "Switched tool").await?;
        let tool = add_node(&c, "tool").await?;
        select(&c, &tool).await?;
        appear(&c, "[data-field=expression]").await?;
        type_and_leave(
            &c,
            "[data-field=expression] [data-testid=field-value]",
            "1+1",
        )
        .await?;
        click(
            &c,
            "[data-testid=tool-ref] option[value='json_query@1.0.0']",
        )
        .await?;
        appear(&c, "[data-field=program]").await?;
        let stale = count(&c, "[data-field=expression]").await?;
        type_and_leave(&c, "[data-field=program] [data-testid=field-value]", ".a").await?;
        type_and_leave(
            &c,
            "[data-field=data] [data-testid=field-value]",
            r#"{"a": 7}"#,
        )
        .await?;
        let output = add_node(&c, "output").await?;
        select(&c, &output).await?;
        type_and_leave(&c, "[data-testid=output-fields]", "value").await?;
        connect(&c, (&tool, "output"), (&output, "value")).await?;
        let state = run_and_wait(&c).await?;
        let outputs = wait_for_text(
            &c,
            &format!("[data-testid=live-outputs] tr[data-node={output}]"),
            Duration::from_secs(10),
        )
        .await?;
        let problems = text_or_empty(&c, "[data-testid=diagnostics]").await?;
        Ok::<_, String>((stale, state, outputs, problems))
    }
    .await;
    let errors = browser.close_after_console_errors().await;
    let (stale, state, outputs, problems) = outcome.expect("the switched tool runs");
    assert!(errors.is_empty(), "console errors: {errors:?}");
    assert_eq!(stale, 0, "calculator's field went with it");
    assert!(!problems.contains("UNKNOWN_FIELD"), "{problems}");
    assert_eq!(state, "succeeded");
    assert!(outputs.contains('7'), "{outputs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_refused_at_its_start_shows_failed_with_the_reason_at_once() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        new_workflow(&browser, &server, "Refused run").await?;
        // A required input with no default: a run without it is refused
        // by the server before any node runs.
        let input = add_node(&c, "input").await?;
        select(&c, &input).await?;
        click(&c, "[data-input-field=text] [data-input-attr=required]").await?;
        let output = add_node(&c, "output").await?;
        select(&c, &output).await?;
        type_and_leave(&c, "[data-testid=output-fields]", "text").await?;
        connect(&c, (&input, "text"), (&output, "text")).await?;
        click(&c, "[data-testid=run]").await?;
        let started = std::time::Instant::now();
        wait_until("the failed run", || async {
            Ok(text_or_empty(&c, "[data-testid=live-run-state]").await? == "failed")
        })
        .await?;
        let shown_after = started.elapsed();
        let error =
            wait_for_text(&c, "[data-testid=live-run-error]", Duration::from_secs(5)).await?;
        // Nothing keeps reconnecting afterwards.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let note = text_or_empty(&c, "[data-testid=run-note]").await?;
        let state = text_or_empty(&c, "[data-testid=live-run-state]").await?;
        Ok::<_, String>((shown_after, error, note, state))
    }
    .await;
    let errors = browser.close_after_console_errors().await;
    let (shown_after, error, note, state) = outcome.expect("the failed run shows");
    assert!(errors.is_empty(), "console errors: {errors:?}");
    assert!(
        shown_after < Duration::from_secs(2),
        "failed shown after {shown_after:?}"
    );
    assert!(
        error.contains("text"),
        "the reason names the field: {error}"
    );
    assert!(note.is_empty(), "no reconnect message: {note}");
    assert_eq!(state, "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wire_is_selected_deleted_and_brought_back_by_undo() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        new_workflow(&browser, &server, "Wires").await?;
        let input = add_node(&c, "input").await?;
        let output = add_node(&c, "output").await?;
        connect(&c, (&input, "text"), (&output, "result")).await?;
        let wire = find(&c, "path.edge[data-edge]")
            .await?
            .attr("data-edge")
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        // A click on the wire (half way between its handles) selects it;
        // Delete removes it; Ctrl+Z undoes.
        let from = find(&c, &format!("[data-node={input}] [data-handle='out:text']")).await?;
        let to = find(
            &c,
            &format!("[data-node={output}] [data-handle='in:result']"),
        )
        .await?;
        let (a, b) = (
            from.rectangle().await.map_err(|e| e.to_string())?,
            to.rectangle().await.map_err(|e| e.to_string())?,
        );
        let half = ((b.0 - a.0) / 2.0, (b.1 - a.1) / 2.0);
        let press = MouseActions::new("mouse".into())
            .then(PointerAction::MoveToElement {
                element: from,
                duration: None,
                x: half.0,
                y: half.1,
            })
            .then(PointerAction::Down {
                button: MOUSE_BUTTON_LEFT,
            })
            .then(PointerAction::Up {
                button: MOUSE_BUTTON_LEFT,
            });
        c.perform_actions(press).await.map_err(|e| e.to_string())?;
        appear(&c, &format!("path.edge.selected[data-edge='{wire}']")).await?;
        let canvas = find(&c, "[data-testid=canvas]").await?;
        canvas
            .send_keys("\u{E017}")
            .await
            .map_err(|e| e.to_string())?;
        wait_until("the wire gone", || async {
            Ok(count(&c, "path.edge[data-edge]").await? == 0)
        })
        .await?;
        let nodes = count(&c, "[data-node]").await?;
        canvas
            .send_keys("\u{E009}z\u{E000}")
            .await
            .map_err(|e| e.to_string())?;
        wait_until("the wire back", || async {
            Ok(count(&c, &format!("path.edge[data-edge='{wire}']")).await? == 1)
        })
        .await?;

        // Dragged from its input to another node's input: rewired.
        let other = add_node(&c, "output").await?;
        click(&c, "[data-testid=fit]").await?;
        // The canvas redraws as the wire leaves (a structure change): the
        // move is by offset, not to an element found before.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let wired = find(
            &c,
            &format!("[data-node={output}] [data-handle='in:result']"),
        )
        .await?;
        let free = find(
            &c,
            &format!("[data-node={other}] [data-handle='in:result']"),
        )
        .await?;
        let (a, b) = (
            wired.rectangle().await.map_err(|e| e.to_string())?,
            free.rectangle().await.map_err(|e| e.to_string())?,
        );
        drag_by(&c, wired, (b.0 - a.0, b.1 - a.1)).await?;
        let target = format!("path.edge[data-target='{other}.result']");
        wait_until("the rewired wire", || async {
            Ok(count(&c, &target).await? == 1)
        })
        .await?;
        let wires = count(&c, "path.edge[data-edge]").await?;

        // Unsaved: a link out of the editor asks first (dismissed: we stay).
        let editor_url = c.current_url().await.map_err(|e| e.to_string())?;
        click(&c, "nav a[href='/workflows']").await?;
        let asked = c.get_alert_text().await.map_err(|e| e.to_string())?;
        c.dismiss_alert().await.map_err(|e| e.to_string())?;
        let stayed = c.current_url().await.map_err(|e| e.to_string())? == editor_url;
        // Ctrl+S saves while the focus is in a panel's field.
        select(&c, &other).await?;
        let label = appear(&c, "[data-testid=node-label]").await?;
        label
            .send_keys("\u{E009}s\u{E000}")
            .await
            .map_err(|e| e.to_string())?;
        wait_until("the save", || async {
            Ok(text_or_empty(&c, "[data-testid=editor-status]")
                .await?
                .starts_with("Saved as revision"))
        })
        .await?;
        Ok::<_, String>((nodes, wires, asked, stayed))
    }
    .await;
    let errors = browser.close_after_console_errors().await;
    let (nodes, wires, asked, stayed) = outcome.expect("the wire is deleted, restored and rewired");
    assert_eq!(asked, "There are unsaved changes. Leave without saving?");
    assert!(stayed, "dismissing keeps the editor");
    assert!(errors.is_empty(), "console errors: {errors:?}");
    assert_eq!(nodes, 2, "deleting the wire left both nodes");
    assert_eq!(wires, 1, "rewiring moved the wire, it did not add one");
}

const KEY: &str = "sk-script-7a2e";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_runs_answers_become_a_script_that_gives_the_same_outputs() {
    let env = [("GLASSBOX_HTTP_ALLOW_HOSTS", "127.0.0.1")];
    let Some((server, browser)) = app_and_browser_with(&env).await else {
        return;
    };
    let mock = MockProvider::start(Api::OpenAi, KEY);
    let c = browser.client.clone();
    let outcome = async {
        browser.sign_in(&server).await?;
        browser.open(&format!("{}/settings", server.url)).await?;
        save_secret(&c, "workspace", "OPENAI_API_KEY", KEY).await?;
        glassbox_tests::ui::create_workflow(&browser, &server, "Live then scripted").await?;

        let agent = add_node(&c, "agent").await?;
        select(&c, &agent).await?;
        click(&c, "[data-setting=provider] option[value=openai]").await?;
        wait_until("the OpenAI fields", || async {
            Ok(count(&c, "[data-setting=base_url]").await? == 1)
        })
        .await?;
        type_and_leave(&c, "[data-setting=base_url]", &mock.base_url()).await?;
        click(
            &c,
            "[data-tool='calculator@1.0.0'] [data-testid=tool-enable]",
        )
        .await?;
        let output = add_node(&c, "output").await?;
        select(&c, &output).await?;
        type_and_leave(&c, "[data-testid=output-fields]", "answer").await?;
        connect(&c, (&agent, "response"), (&output, "answer")).await?;
        let live_state = run_and_wait(&c).await?;
        let row = format!("[data-testid=live-outputs] tr[data-node={output}]");
        let live = wait_for_text(&c, &row, Duration::from_secs(10)).await?;
        let calls_live = mock.seen().len();

        // The recorded answers become the node's script: scripted, offline.
        select(&c, &agent).await?;
        click(&c, "[data-testid=use-run-script]").await?;
        wait_until("the scripted provider", || async {
            Ok(value_of(&c, "[data-setting=provider]").await? == "scripted")
        })
        .await?;
        let script = value_of(&c, "[data-testid=script-turns]").await?;
        let scripted_state = run_and_wait(&c).await?;
        let scripted = wait_for_text(&c, &row, Duration::from_secs(10)).await?;
        Ok::<_, String>((
            live_state,
            live,
            calls_live,
            script,
            scripted_state,
            scripted,
        ))
    }
    .await;
    let errors = browser.close_after_console_errors().await;
    let (live_state, live, calls_live, script, scripted_state, scripted) =
        outcome.expect("a live run becomes a script");
    assert!(errors.is_empty(), "console errors: {errors:?}");
    assert_eq!(live_state, "succeeded");
    assert_eq!(calls_live, 2, "the live run asked the model twice");
    assert!(script.contains("calculator"), "{script}");
    assert_eq!(scripted_state, "succeeded");
    assert_eq!(
        mock.seen().len(),
        calls_live,
        "the scripted run asked nothing"
    );
    assert_eq!(scripted, live, "the same outputs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_is_refused_while_the_workflow_has_an_error_and_a_running_run_can_be_cancelled() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        new_workflow(&browser, &server, "Refused and cancelled").await?;
        // A calculator whose expression is cleared: the server's
        // validation names the missing field.
        let tool = add_node(&c, "tool").await?;
        select(&c, &tool).await?;
        type_and_leave(&c, "[data-field=expression] [data-testid=field-value]", "").await?;
        wait_until("the diagnostics", || async {
            Ok(!text_or_empty(&c, "[data-testid=diagnostics]")
                .await?
                .is_empty())
        })
        .await?;
        click(&c, "[data-testid=run]").await?;
        let refused =
            wait_for_text(&c, "[data-testid=run-problem]", Duration::from_secs(5)).await?;
        let started = count(&c, "[data-testid=live-run-id]").await?;

        // Gone, and a slow scripted agent instead: cancelled while it runs.
        select(&c, &tool).await?;
        find(&c, "[data-testid=canvas]")
            .await?
            .send_keys("\u{E017}")
            .await
            .map_err(|e| e.to_string())?;
        let agent = add_node(&c, "agent").await?;
        select(&c, &agent).await?;
        type_and_leave(
            &c,
            "[data-testid=script-turns]",
            r#"{"turns": [{"latency_ms": 20000, "text": "late"}]}"#,
        )
        .await?;
        // With a tool offered the turn is a real one (and takes its time).
        click(
            &c,
            "[data-tool='calculator@1.0.0'] [data-testid=tool-enable]",
        )
        .await?;
        click(&c, "[data-testid=run]").await?;
        if let Err(e) = appear(&c, "[data-testid=cancel-run]").await {
            let problem = text_or_empty(&c, "[data-testid=run-panel]").await?;
            return Err(format!("{e}; the run panel: {problem}"));
        }
        click(&c, "[data-testid=cancel-run]").await?;
        let started_cancel = std::time::Instant::now();
        wait_until("the cancelled run", || async {
            Ok(text_or_empty(&c, "[data-testid=live-run-state]").await? == "cancelled")
        })
        .await?;
        Ok::<_, String>((refused, started, started_cancel.elapsed()))
    }
    .await;
    let errors = browser.close_after_console_errors().await;
    let (refused, started, took) = outcome.expect("refused, then cancelled");
    assert!(errors.is_empty(), "console errors: {errors:?}");
    assert!(
        refused.starts_with("Not run: the workflow has an error at node `tool1`"),
        "{refused}"
    );
    assert_eq!(started, 0, "no run started");
    assert!(took < Duration::from_secs(10), "cancelled after {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_palette_finds_node_kinds_and_tools_and_enter_adds_the_first() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        new_workflow(&browser, &server, "Palette").await?;
        let search = find(&c, "[data-testid=palette-search]").await?;
        search
            .send_keys("json_query")
            .await
            .map_err(|e| e.to_string())?;
        appear(&c, "[data-palette-tool='json_query@1.0.0']").await?;
        let kinds = count(&c, "[data-palette]").await?;
        search
            .send_keys("\u{E007}")
            .await
            .map_err(|e| e.to_string())?;
        appear(&c, "[data-kind=tool]").await?;
        select(&c, "tool1").await?;
        let tool = value_of(&c, "[data-testid=tool-ref]").await?;
        let search = find(&c, "[data-testid=palette-search]").await?;
        search.clear().await.map_err(|e| e.to_string())?;
        search.send_keys("zzzz").await.map_err(|e| e.to_string())?;
        let empty =
            wait_for_text(&c, "[data-testid=palette-empty]", Duration::from_secs(5)).await?;
        Ok::<_, String>((kinds, tool, empty))
    }
    .await;
    let errors = browser.close_after_console_errors().await;
    let (kinds, tool, empty) = outcome.expect("the palette searches tools");
    assert!(errors.is_empty(), "console errors: {errors:?}");
    assert_eq!(kinds, 0, "no node kind is called \"json_query\"");
    assert_eq!(
        tool, "json_query@1.0.0",
        "Enter added a Tool node with the hit"
    );
    assert_eq!(empty, "Nothing matches \u{201c}zzzz\u{201d}.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_nodes_land_in_view_and_question_mark_shows_the_shortcuts() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        new_workflow(&browser, &server, "In view").await?;
        for kind in [
            "input", "agent", "tool", "template", "branch", "output", "tool", "output",
        ] {
            add_node(&c, kind).await?;
        }
        let canvas = find(&c, "[data-testid=canvas]").await?;
        let (cx, cy, cw, ch) = canvas.rectangle().await.map_err(|e| e.to_string())?;
        let mut outside = Vec::new();
        for node in c
            .find_all(fantoccini::Locator::Css("[data-node]"))
            .await
            .map_err(|e| e.to_string())?
        {
            let (x, y, w, h) = node.rectangle().await.map_err(|e| e.to_string())?;
            if x < cx || y < cy || x + w > cx + cw + 1.0 || y + h > cy + ch + 1.0 {
                outside.push(node.attr("data-node").await.map_err(|e| e.to_string())?);
            }
        }
        canvas.send_keys("?").await.map_err(|e| e.to_string())?;
        let help =
            wait_for_text(&c, "[data-testid=shortcuts-help]", Duration::from_secs(5)).await?;
        canvas
            .send_keys("\u{E00C}")
            .await
            .map_err(|e| e.to_string())?;
        wait_until("the help closed", || async {
            Ok(count(&c, "[data-testid=shortcuts-help]").await? == 0)
        })
        .await?;
        Ok::<_, String>((outside, help))
    }
    .await;
    let errors = browser.close_after_console_errors().await;
    let (outside, help) = outcome.expect("nodes in view, help shown");
    assert!(errors.is_empty(), "console errors: {errors:?}");
    assert!(outside.is_empty(), "added out of view: {outside:?}");
    assert!(help.contains("Ctrl+S") && help.contains("rewire"), "{help}");
}
