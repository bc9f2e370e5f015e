//! Browser test of the workflow editor in real Chromium against a real
//! server: from an empty canvas, add Input -> Agent -> Output from the
//! palette, wire them by dragging between handles, move a node, undo and
//! redo, save, reload: the same graph, the same positions, the same
//! revision. The run, approval, reconnect, materialize and crash tests
//! build their workflows in the editor too (a scripted Agent typed in its
//! panel, wired with the Connect form).

use std::collections::BTreeSet;
use std::time::Duration;

use fantoccini::actions::{InputSource, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
use fantoccini::{Client, Locator};
use glassbox_tests::harness::{app_and_browser, app_and_browser_with, wait_for_text, Server};
use glassbox_tests::ui::{
    add_node, answer_output, appear, attr_or_none, click, click_and_answer, connect, count, find,
    grab, new_workflow, open_workflow_id, output_node, pin_result, scripted_agent, template_node,
    text_or_empty, type_and_leave, value_of, wait_until,
};

type Nodes = BTreeSet<(String, String, String, String)>;
type Edges = BTreeSet<(String, String)>;

/// (id, kind, x, y) of every node and (source, target) of every edge.
async fn graph(c: &Client) -> Result<(Nodes, Edges), String> {
    let mut nodes = BTreeSet::new();
    for n in c
        .find_all(Locator::Css("[data-node]"))
        .await
        .map_err(|e| e.to_string())?
    {
        let a = |name: &'static str| {
            let n = n.clone();
            async move {
                n.attr(name)
                    .await
                    .map_err(|e| e.to_string())
                    .map(Option::unwrap_or_default)
            }
        };
        nodes.insert((
            a("data-node").await?,
            a("data-kind").await?,
            a("data-x").await?,
            a("data-y").await?,
        ));
    }
    let mut edges = BTreeSet::new();
    for e in c
        .find_all(Locator::Css("[data-edge]"))
        .await
        .map_err(|e| e.to_string())?
    {
        let source = e
            .attr("data-source")
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        let target = e
            .attr("data-target")
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        edges.insert((source, target));
    }
    Ok((nodes, edges))
}

/// Drags with the mouse from one element's centre to another's.
async fn drag(c: &Client, from: &str, to: &str, offset: (f64, f64)) -> Result<(), String> {
    let a = c
        .find(Locator::Css(from))
        .await
        .map_err(|e| format!("{from}: {e}"))?;
    let b = c
        .find(Locator::Css(to))
        .await
        .map_err(|e| format!("{to}: {e}"))?;
    let mouse = grab(a, (5.0, 5.0), Duration::from_millis(100))
        .then(PointerAction::MoveToElement {
            element: b,
            duration: Some(Duration::from_millis(200)),
            x: offset.0,
            y: offset.1,
        })
        .then(PointerAction::Up {
            button: MOUSE_BUTTON_LEFT,
        });
    c.perform_actions(mouse).await.map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn build_wire_save_and_reload_a_workflow() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        let token = new_workflow(&browser, &server, "Editor test").await?;
        let url = c
            .current_url()
            .await
            .map_err(|e| e.to_string())?
            .to_string();

        for kind in ["input", "agent", "output"] {
            click(&c, &format!("[data-palette={kind}]")).await?;
        }
        wait_until("three nodes", || async {
            Ok(count(&c, "[data-node]").await? == 3)
        })
        .await?;
        drag(
            &c,
            "[data-node=input1] [data-handle='out:text']",
            "[data-node=agent1] [data-handle='in:text']",
            (0.0, 0.0),
        )
        .await?;
        drag(
            &c,
            "[data-node=agent1] [data-handle='out:response']",
            "[data-node=output1] [data-handle='in:result']",
            (0.0, 0.0),
        )
        .await?;
        wait_until("two edges", || async {
            Ok(count(&c, "[data-edge]").await? == 2)
        })
        .await?;
        // Two tools enabled on the agent (its configuration panel).
        click(&c, "[data-node=agent1] .node-label").await?;
        appear(
            &c,
            "[data-tool='calculator@1.0.0'] [data-testid=tool-enable]",
        )
        .await?;
        click(
            &c,
            "[data-tool='calculator@1.0.0'] [data-testid=tool-enable]",
        )
        .await?;
        click(
            &c,
            "[data-tool='json_query@1.0.0'] [data-testid=tool-enable]",
        )
        .await?;
        // A policy limit: a refused value is named; a good one is kept.
        let limit = c
            .find(Locator::Css("[data-setting=max_iterations]"))
            .await
            .map_err(|e| e.to_string())?;
        limit.clear().await.map_err(|e| e.to_string())?;
        limit.send_keys("0").await.map_err(|e| e.to_string())?;
        click(&c, "[data-testid=node-label]").await?;
        let refused =
            wait_for_text(&c, "[data-testid=setting-error]", Duration::from_secs(10)).await?;
        assert!(refused.starts_with("max_iterations"), "{refused}");
        let limit = c
            .find(Locator::Css("[data-setting=max_iterations]"))
            .await
            .map_err(|e| e.to_string())?;
        limit.clear().await.map_err(|e| e.to_string())?;
        limit.send_keys("4").await.map_err(|e| e.to_string())?;
        click(&c, "[data-testid=node-label]").await?;
        wait_until("the limit accepted", || async {
            Ok(count(&c, "[data-testid=setting-error]").await? == 0)
        })
        .await?;
        // The calls of one turn that run at once (issue #30): 1 to 64.
        for (text, accepted) in [("65", false), ("2", true)] {
            let parallel = c
                .find(Locator::Css("[data-setting=max_parallel_calls]"))
                .await
                .map_err(|e| e.to_string())?;
            parallel.clear().await.map_err(|e| e.to_string())?;
            parallel.send_keys(text).await.map_err(|e| e.to_string())?;
            click(&c, "[data-testid=node-label]").await?;
            if accepted {
                wait_until("the parallel calls accepted", || async {
                    Ok(count(&c, "[data-testid=setting-error]").await? == 0)
                })
                .await?;
            } else {
                let refused =
                    wait_for_text(&c, "[data-testid=setting-error]", Duration::from_secs(10))
                        .await?;
                assert!(refused.starts_with("max_parallel_calls"), "{refused}");
            }
        }
        // Delete a node and undo it: the node and its edge come back.
        let wired = graph(&c).await?;
        click(&c, "[data-node=output1] .node-label").await?;
        find(&c, "[data-testid=canvas]")
            .await?
            .send_keys(&fantoccini::key::Key::Delete.to_string())
            .await
            .map_err(|e| e.to_string())?;
        wait_until("the node deleted", || async {
            Ok(count(&c, "[data-node]").await? == 2)
        })
        .await?;
        assert_eq!(count(&c, "[data-edge]").await?, 1, "its edge went with it");
        click(&c, "[data-testid=undo]").await?;
        wait_until("the delete undone", || async {
            Ok(graph(&c).await? == wired)
        })
        .await?;
        // Copy the input node and paste it: a copy beside it; undo removes it.
        click(&c, "[data-node=input1] .node-label").await?;
        let canvas = c
            .find(Locator::Css("[data-testid=canvas]"))
            .await
            .map_err(|e| e.to_string())?;
        let ctrl = fantoccini::key::Key::Control.to_string();
        canvas
            .send_keys(&format!("{ctrl}c{ctrl}"))
            .await
            .map_err(|e| e.to_string())?;
        canvas
            .send_keys(&format!("{ctrl}v{ctrl}"))
            .await
            .map_err(|e| e.to_string())?;
        wait_until("the pasted copy", || async {
            Ok(count(&c, "[data-node=input2]").await? == 1)
        })
        .await?;
        click(&c, "[data-testid=undo]").await?;
        wait_until("the paste undone", || async {
            Ok(graph(&c).await? == wired)
        })
        .await?;
        // While a wire is held, every input says whether it takes it;
        // once dropped, none does.
        let from = find(&c, "[data-node=input1] [data-handle='out:text']").await?;
        c.perform_actions(grab(from, (40.0, 40.0), Duration::from_millis(100)))
            .await
            .map_err(|e| e.to_string())?;
        let inputs = count(&c, ".handle.in").await?;
        assert!(inputs > 0, "no input handles drawn");
        wait_until("every input's verdict on the held wire", || async {
            Ok(
                count(&c, ".handle.in.accepts").await? + count(&c, ".handle.in.refused").await?
                    == inputs,
            )
        })
        .await?;
        let release = MouseActions::new("mouse".into()).then(PointerAction::Up {
            button: MOUSE_BUTTON_LEFT,
        });
        c.perform_actions(release)
            .await
            .map_err(|e| e.to_string())?;
        wait_until("the verdicts gone with the wire", || async {
            Ok(count(&c, ".handle.in.accepts, .handle.in.refused").await? == 0)
        })
        .await?;
        // An incompatible wire (output to output) is refused.
        drag(
            &c,
            "[data-node=input1] [data-handle='out:text']",
            "[data-node=agent1] [data-handle='out:response']",
            (0.0, 0.0),
        )
        .await?;
        // Move the agent down by dragging its title.
        drag(
            &c,
            "[data-node=agent1] .node-label",
            "[data-node=agent1] .node-label",
            (0.0, 60.0),
        )
        .await?;
        let (_, before_moved) = graph(&c).await?;
        assert_eq!(before_moved.len(), 2, "{before_moved:?}");
        let moved_y = c
            .find(Locator::Css("[data-node=agent1]"))
            .await
            .map_err(|e| e.to_string())?
            .attr("data-y")
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        assert_ne!(moved_y, "80", "the drag moved the node");

        // Undo the move and redo it: the same state each way.
        let moved = graph(&c).await?;
        click(&c, "[data-testid=undo]").await?;
        wait_until("the move undone", || async {
            Ok(graph(&c).await? != moved)
        })
        .await?;
        let (undone, _) = graph(&c).await?;
        assert!(
            undone
                .iter()
                .any(|(id, _, _, y)| id == "agent1" && y == "80"),
            "{undone:?}"
        );
        click(&c, "[data-testid=redo]").await?;
        wait_until("the move redone", || async {
            Ok(graph(&c).await? == moved)
        })
        .await?;
        let dirty = wait_for_text(&c, "[data-testid=dirty]", Duration::from_secs(5)).await?;
        assert_eq!(dirty.trim(), "Unsaved changes");

        let created = wait_for_text(&c, "[data-testid=revision]", Duration::from_secs(5)).await?;
        click(&c, "[data-testid=save]").await?;
        let saved =
            wait_for_text(&c, "[data-testid=editor-status]", Duration::from_secs(20)).await?;
        let revision = wait_for_text(&c, "[data-testid=revision]", Duration::from_secs(5)).await?;
        browser.screenshot("editor-saved").await?;

        browser.open(&url).await?;
        wait_for_text(&c, "[data-testid=workflow-name]", Duration::from_secs(30)).await?;
        wait_until("the saved nodes", || async {
            Ok(count(&c, "[data-node]").await? == 3)
        })
        .await?;
        let reloaded = graph(&c).await?;
        let revision_after =
            wait_for_text(&c, "[data-testid=revision]", Duration::from_secs(5)).await?;
        let id = url.rsplit('/').next().unwrap_or_default().to_string();
        let (_, saved_doc) = glassbox_tests::harness::http(
            &server.url,
            "GET",
            &format!("/api/v1/workflows/{id}"),
            Some(&token),
            None,
        );
        Ok::<_, String>((
            moved,
            created,
            saved,
            revision,
            reloaded,
            revision_after,
            saved_doc,
        ))
    }
    .await;
    browser.close().await;
    let (moved, created, saved, revision, reloaded, revision_after, saved_doc) =
        outcome.expect("the editor works");
    let number = |t: &str| {
        t.trim()
            .trim_start_matches("revision ")
            .parse::<u64>()
            .unwrap_or(0)
    };
    let new = number(&created) + 1;
    assert!(
        saved.contains(&format!("Saved as revision {new}.")),
        "{saved}"
    );
    assert_eq!(number(&revision), new, "{revision}");
    assert_eq!(
        reloaded, moved,
        "same nodes, positions and edges after a reload"
    );
    assert_eq!(revision_after, revision, "same revision after a reload");
    let kinds: Vec<&str> = moved.0.iter().map(|(_, k, _, _)| k.as_str()).collect();
    assert_eq!(kinds, ["agent", "input", "output"]);
    let edges: Vec<(&str, &str)> = moved
        .1
        .iter()
        .map(|(s, t)| (s.as_str(), t.as_str()))
        .collect();
    assert_eq!(
        edges,
        [
            ("agent1.response", "output1.result"),
            ("input1.text", "agent1.text")
        ]
    );
    let saved_doc = glassbox_tests::harness::json(&saved_doc);
    let enabled: Vec<String> = saved_doc["workflow"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["kind"] == "agent")
        .flat_map(|n| n["config"]["tools"].as_array().cloned().unwrap_or_default())
        .filter(|t| t["enabled"] == true)
        .filter_map(|t| t["tool"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        enabled,
        ["calculator@1.0.0", "json_query@1.0.0"],
        "two tools enabled, saved"
    );
    // A policy field of the saved agents.
    let policy = |field: &str| -> Vec<u64> {
        saved_doc["workflow"]["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|n| n["kind"] == "agent")
            .filter_map(|n| n["config"]["policy"][field].as_u64())
            .collect()
    };
    assert_eq!(policy("max_iterations"), [4], "the policy limit, saved");
    assert_eq!(
        policy("max_parallel_calls"),
        [2],
        "the calls run at once, saved"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pin_a_tool_result_wire_it_and_disable_the_tool() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        new_workflow(&browser, &server, "Pins").await?;
        let agent = add_node(&c, "agent").await?;
        let template = add_node(&c, "template").await?;
        click(&c, &format!("[data-node={agent}] .node-label")).await?;
        appear(&c, "[data-testid=inspector] [data-testid=tool-rows]").await?;

        // The selector: search and category narrow the list; deprecated
        // versions only with the switch.
        let all = count(&c, "[data-tool]").await?;
        let search = c
            .find(Locator::Css("[data-testid=tool-search]"))
            .await
            .map_err(|e| e.to_string())?;
        search.send_keys("calc").await.map_err(|e| e.to_string())?;
        wait_until("the search to narrow", || async {
            Ok(count(&c, "[data-tool]").await? == 1)
        })
        .await?;
        search.clear().await.map_err(|e| e.to_string())?;
        search.send_keys(" ").await.map_err(|e| e.to_string())?;
        wait_until("the full list", || async {
            Ok(count(&c, "[data-tool]").await? == all)
        })
        .await?;
        find(&c, "[data-testid=tool-category] option[value=data]")
            .await?
            .click()
            .await
            .map_err(|e| e.to_string())?;
        wait_until("the category to narrow", || async {
            let n = count(&c, "[data-tool]").await?;
            Ok(n > 0 && n < all)
        })
        .await?;
        find(&c, "[data-testid=tool-category] option[value='']")
            .await?
            .click()
            .await
            .map_err(|e| e.to_string())?;
        wait_until("the full list again", || async {
            Ok(count(&c, "[data-tool]").await? == all)
        })
        .await?;

        // Enable two tools and pin the calculator's result.
        click(
            &c,
            "[data-tool='calculator@1.0.0'] [data-testid=tool-enable]",
        )
        .await?;
        click(
            &c,
            "[data-tool='json_query@1.0.0'] [data-testid=tool-enable]",
        )
        .await?;
        click(&c, "[data-tool='calculator@1.0.0'] [data-testid=pin]").await?;
        let pin = format!("[data-node={agent}] [data-handle='out:calculator_result']");
        appear(&c, &pin).await?;
        drag(
            &c,
            &pin,
            &format!("[data-node={template}] [data-handle='in:value']"),
            (0.0, 0.0),
        )
        .await?;
        wait_until("the pin's edge", || async {
            Ok(count(&c, "[data-edge]").await? == 1)
        })
        .await?;

        // Disable the tool: the pin and its edge stay, with a warning.
        click(
            &c,
            "[data-tool='calculator@1.0.0'] [data-testid=tool-enable]",
        )
        .await?;
        wait_until("the warning badge", || async {
            Ok(count(
                &c,
                &format!(
                    "[data-node={agent}] [data-testid=node-diagnostic][data-severity=warning]"
                ),
            )
            .await?
                == 1)
        })
        .await?;
        let handle_still_there = count(&c, &pin).await?;
        let edges = count(&c, "[data-edge]").await?;
        let listed = wait_for_text(
            &c,
            "[data-testid=diagnostics] li.warning",
            Duration::from_secs(10),
        )
        .await?;
        let errors = count(&c, "[data-testid=diagnostics] li.error").await?;
        browser.screenshot("editor-pin-disabled").await?;
        Ok::<_, String>((handle_still_there, edges, listed, errors))
    }
    .await;
    browser.close().await;
    let (handle, edges, listed, errors) = outcome.expect("pins work in the editor");
    assert_eq!(handle, 1, "the pinned handle stays");
    assert_eq!(edges, 1, "its edge stays");
    assert!(listed.contains("PIN_TOOL_DISABLED"), "{listed}");
    assert_eq!(errors, 0, "a warning, not an error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_selector_hides_deprecated_versions_and_shows_missing_keys() {
    // The test tools: secret_probe@1.0.0 needs two secrets nobody set, and
    // secret_probe@0.9.0 is deprecated.
    let Some((server, browser)) = app_and_browser_with(&[("GLASSBOX_TEST_TOOLS", "1")]).await
    else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        new_workflow(&browser, &server, "Selector").await?;
        let agent = add_node(&c, "agent").await?;
        click(&c, &format!("[data-node={agent}] .node-label")).await?;
        appear(&c, "[data-tool='secret_probe@1.0.0']").await?;
        let hidden = count(&c, "[data-tool='secret_probe@0.9.0']").await?;
        let missing = wait_for_text(
            &c,
            "[data-tool='secret_probe@1.0.0'] [data-testid=auth-badge]",
            Duration::from_secs(5),
        )
        .await?;
        let calculator_badges = count(
            &c,
            "[data-tool='calculator@1.0.0'] [data-testid=auth-badge]",
        )
        .await?;
        click(&c, "[data-testid=show-deprecated]").await?;
        appear(&c, "[data-tool='secret_probe@0.9.0']").await?;
        let deprecated = wait_for_text(
            &c,
            "[data-tool='secret_probe@0.9.0'] [data-testid=deprecated-badge]",
            Duration::from_secs(5),
        )
        .await?;
        let current_deprecated = count(
            &c,
            "[data-tool='secret_probe@1.0.0'] [data-testid=deprecated-badge]",
        )
        .await?;
        browser.screenshot("editor-selector").await?;
        Ok::<_, String>((
            hidden,
            missing,
            calculator_badges,
            deprecated,
            current_deprecated,
        ))
    }
    .await;
    browser.close().await;
    let (hidden, missing, calculator_badges, deprecated, current_deprecated) =
        outcome.expect("the selector works");
    assert_eq!(hidden, 0, "deprecated versions are hidden by default");
    assert!(missing.starts_with("Missing API key"), "{missing}");
    assert_eq!(
        calculator_badges, 0,
        "a tool without secrets has no auth badge"
    );
    assert_eq!(deprecated.trim(), "deprecated");
    assert_eq!(current_deprecated, 0);
}

/// Whether the live run panel says the run succeeded.
async fn run_succeeded(c: &Client) -> Result<bool, String> {
    Ok(text_or_empty(c, "[data-testid=live-run-state]").await? == "succeeded")
}

/// Waits until the live run panel says the run succeeded.
async fn wait_run_succeeded(c: &Client, what: &str) -> Result<(), String> {
    wait_until(what, || run_succeeded(c)).await
}

/// The names in the workflow list, in order (read in one script: the list
/// re-renders while it reloads).
async fn listed(c: &Client) -> Result<Vec<String>, String> {
    let v = c
        .execute(
            "return [...document.querySelectorAll('[data-workflow] a')].map(a => a.textContent)",
            vec![],
        )
        .await
        .map_err(|e| e.to_string())?;
    Ok(v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str().map(str::to_string))
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_duplicate_and_delete_from_the_workflow_list() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        // Created from the workflows page; its id is in the editor's address.
        let token = new_workflow(&browser, &server, "Alpha").await?;
        let id = open_workflow_id(&c).await?;
        browser.open(&format!("{}/workflows", server.url)).await?;
        wait_until("the list", || async { Ok(listed(&c).await? == ["Alpha"]) }).await?;
        let row = format!("[data-workflow='{id}']");

        click(&c, &format!("{row} [data-testid=rename]")).await?;
        let input = find(&c, "[data-testid=rename-input]").await?;
        input.clear().await.map_err(|e| e.to_string())?;
        input.send_keys("Beta").await.map_err(|e| e.to_string())?;
        click(&c, "[data-testid=rename-save]").await?;
        wait_until("the rename", || async { Ok(listed(&c).await? == ["Beta"]) }).await?;

        click(&c, &format!("{row} [data-testid=duplicate]")).await?;
        wait_until("the copy", || async {
            let mut names = listed(&c).await?;
            names.sort();
            Ok(names == ["Beta", "Copy of Beta"])
        })
        .await?;

        // Delete asks first: dismissing keeps it, accepting deletes it.
        click_and_answer(&c, &format!("{row} [data-testid=delete]"), false).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let kept = listed(&c).await?.len();
        click_and_answer(&c, &format!("{row} [data-testid=delete]"), true).await?;
        wait_until("the delete", || async {
            Ok(listed(&c).await? == ["Copy of Beta"])
        })
        .await?;
        let (status, _) = glassbox_tests::harness::http(
            &server.url,
            "GET",
            &format!("/api/v1/workflows/{id}"),
            Some(&token),
            None,
        );
        Ok::<_, String>((kept, status))
    }
    .await;
    browser.close().await;
    let (kept, status) = outcome.expect("the list's actions work");
    assert_eq!(kept, 2, "dismissing the confirmation keeps the workflow");
    assert_eq!(status, 404, "deleted on the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_set_list_and_delete_secrets_by_scope() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        let token = browser.sign_in(&server).await?;
        browser.open(&format!("{}/settings", server.url)).await?;
        appear(&c, "[data-testid=secret-form]").await?;
        for (scope, name, value) in [
            ("workspace", "WS_KEY", "ws-value-1a"),
            ("user", "MY_KEY", "user-value-2b"),
            ("org", "ORG_KEY", "org-value-3c"),
        ] {
            find(
                &c,
                &format!("[data-testid=secret-scope] option[value={scope}]"),
            )
            .await?
            .click()
            .await
            .map_err(|e| e.to_string())?;
            find(&c, "[data-testid=secret-name]")
                .await?
                .send_keys(name)
                .await
                .map_err(|e| e.to_string())?;
            find(&c, "[data-testid=secret-value]")
                .await?
                .send_keys(value)
                .await
                .map_err(|e| e.to_string())?;
            click(&c, "[data-testid=secret-save]").await?;
            let row = format!("[data-secret='{scope}/{name}']");
            appear(&c, &row).await?;
        }
        let page = c.source().await.map_err(|e| e.to_string())?;
        click(
            &c,
            "[data-secret='user/MY_KEY'] [data-testid=secret-delete]",
        )
        .await?;
        wait_until("the delete", || async {
            Ok(count(&c, "[data-secret]").await? == 2)
        })
        .await?;
        let (_, listed) = glassbox_tests::harness::http(
            &server.url,
            "GET",
            "/api/v1/secrets",
            Some(&token),
            None,
        );
        Ok::<_, String>((page, listed))
    }
    .await;
    browser.close().await;
    let (page, listed) = outcome.expect("the settings page works");
    for value in ["ws-value-1a", "user-value-2b", "org-value-3c"] {
        assert!(!page.contains(value), "a value is never shown");
    }
    let listed = glassbox_tests::harness::json(&listed);
    let names: Vec<(String, String)> = listed["secrets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            (
                s["scope"].as_str().unwrap_or_default().to_string(),
                s["name"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("org".to_string(), "ORG_KEY".to_string()),
            ("workspace".to_string(), "WS_KEY".to_string())
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_nodes_fields_are_fixed_or_wired() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        new_workflow(&browser, &server, "Tool node").await?;
        let tool = add_node(&c, "tool").await?;
        click(&c, &format!("[data-node={tool}] .node-label")).await?;
        let field = "[data-field=expression]";
        appear(&c, field).await?;
        let handle = format!("[data-node={tool}] [data-handle='in:expression']");
        let before = count(&c, &handle).await?;
        click(&c, &format!("{field} [data-testid=field-wired]")).await?;
        wait_until("the wired input handle", || async {
            Ok(count(&c, &handle).await? == 1)
        })
        .await?;
        // Another tool: its schema's fields; a bad JSON value is refused by name.
        appear(
            &c,
            "[data-testid=tool-ref] option[value='json_query@1.0.0']",
        )
        .await?
        .click()
        .await
        .map_err(|e| e.to_string())?;
        appear(&c, "[data-field=data] [data-testid=field-value]").await?;
        let input = c
            .find(Locator::Css("[data-field=data] [data-testid=field-value]"))
            .await
            .map_err(|e| e.to_string())?;
        input.send_keys("{oops").await.map_err(|e| e.to_string())?;
        click(&c, "[data-field=program] label").await?;
        let error = wait_for_text(&c, "[data-testid=field-error]", Duration::from_secs(10)).await?;
        let kind = c
            .find(Locator::Css(&format!("[data-node={tool}]")))
            .await
            .map_err(|e| e.to_string())?
            .attr("data-kind")
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((before, error, kind))
    }
    .await;
    browser.close().await;
    let (before, error, kind) = outcome.expect("the tool form works");
    assert_eq!(before, 0, "a fixed field has no input handle");
    assert!(error.starts_with("data: not valid JSON"), "{error}");
    assert_eq!(kind.as_deref(), Some("tool"));
}

/// The saved document of the workflow open in the browser.
async fn saved_doc(c: &Client, server: &Server, token: &str) -> Result<serde_json::Value, String> {
    let url = c.current_url().await.map_err(|e| e.to_string())?;
    let id = url
        .path()
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_string();
    let (_, body) = glassbox_tests::harness::http(
        &server.url,
        "GET",
        &format!("/api/v1/workflows/{id}"),
        Some(token),
        None,
    );
    Ok(glassbox_tests::harness::json(&body))
}

/// Saves and waits for the editor to say how it went (a message shown
/// before the save is not its answer).
async fn save(c: &Client) -> Result<String, String> {
    click(c, "[data-testid=save]").await?;
    wait_until("the save's answer", || async {
        let status = text_or_empty(c, "[data-testid=editor-status]").await?;
        Ok(status.starts_with("Saved as revision") || status.starts_with("Not saved"))
    })
    .await?;
    let status = text_or_empty(c, "[data-testid=editor-status]").await?;
    if status.starts_with("Saved as revision") {
        Ok(status)
    } else {
        Err(format!("the save failed: {status}"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pin_options_are_checked_kept_while_wrong_and_saved() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        let token = new_workflow(&browser, &server, "Pin options").await?;
        let agent = add_node(&c, "agent").await?;
        click(&c, &format!("[data-node={agent}] .node-label")).await?;
        appear(
            &c,
            "[data-tool='calculator@1.0.0'] [data-testid=tool-enable]",
        )
        .await?;
        click(
            &c,
            "[data-tool='calculator@1.0.0'] [data-testid=tool-enable]",
        )
        .await?;
        click(&c, "[data-tool='calculator@1.0.0'] [data-testid=pin]").await?;
        let row = "[data-pin=calculator_result]";
        appear(&c, &format!("{row} [data-pin-field=path]")).await?;

        // A path that is not a JSON Pointer is refused by name and stays
        // in the field to be corrected.
        type_and_leave(&c, &format!("{row} [data-pin-field=path]"), "value").await?;
        let refused = wait_for_text(&c, "[data-testid=pin-error]", Duration::from_secs(10)).await?;
        let kept = value_of(&c, &format!("{row} [data-pin-field=path]")).await?;
        browser.screenshot("editor-pin-path-refused").await?;
        type_and_leave(&c, &format!("{row} [data-pin-field=path]"), "/value").await?;
        wait_until("the error to clear", || async {
            Ok(count(&c, "[data-testid=pin-error]").await? == 0)
        })
        .await?;
        find(
            &c,
            &format!("{row} [data-pin-field=strategy] option[value=first_success]"),
        )
        .await?
        .click()
        .await
        .map_err(|e| e.to_string())?;
        find(
            &c,
            &format!("{row} [data-pin-field=on_missing] option[value=error]"),
        )
        .await?
        .click()
        .await
        .map_err(|e| e.to_string())?;
        // A new name renames the handle on the node at once.
        type_and_leave(&c, &format!("{row} [data-pin-field=name]"), "sum").await?;
        appear(&c, &format!("[data-node={agent}] [data-handle='out:sum']")).await?;
        // A name that is already an output is refused.
        type_and_leave(&c, "[data-pin=sum] [data-pin-field=name]", "response").await?;
        let taken = wait_for_text(&c, "[data-testid=pin-error]", Duration::from_secs(10)).await?;
        save(&c).await?;
        let doc = saved_doc(&c, &server, &token).await?;
        Ok::<_, String>((refused, kept, taken, doc, agent))
    }
    .await;
    browser.close().await;
    let (refused, kept, taken, doc, agent) = outcome.expect("pin options work");
    assert!(
        refused.contains("path: `value` is not a JSON Pointer"),
        "{refused}"
    );
    assert_eq!(kept, "value", "the refused text stays in the field");
    assert!(taken.contains("`response` is already an output"), "{taken}");
    let node = doc["workflow"]["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["id"] == agent.as_str()))
        .cloned()
        .expect("agent saved");
    let pin = &node["config"]["pins"][0];
    assert_eq!(pin["name"], "sum", "{pin}");
    assert_eq!(pin["path"], "/value", "{pin}");
    assert_eq!(pin["selector"]["strategy"], "first_success", "{pin}");
    assert_eq!(pin["on_missing"], "error", "{pin}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_nodes_form_follows_the_schema_and_shows_the_servers_checks() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        let token = new_workflow(&browser, &server, "Schema form").await?;
        let tool = add_node(&c, "tool").await?;
        click(&c, &format!("[data-node={tool}] .node-label")).await?;
        appear(
            &c,
            "[data-testid=tool-ref] option[value='http_request@1.0.0']",
        )
        .await?
        .click()
        .await
        .map_err(|e| e.to_string())?;
        // An enum is a choice; an integer a number field.
        let method = "[data-field=method] select[data-testid=field-value]";
        appear(&c, method).await?;
        find(&c, &format!("{method} option[value='\"POST\"']"))
            .await?
            .click()
            .await
            .map_err(|e| e.to_string())?;
        let timeout = "[data-field=timeout_ms] input[type=number]";
        let kind = find(&c, timeout)
            .await?
            .attr("step")
            .await
            .map_err(|e| e.to_string())?;
        // The form refuses what is not a whole number, by name...
        type_and_leave(&c, timeout, "2.5").await?;
        let refused =
            wait_for_text(&c, "[data-testid=field-error]", Duration::from_secs(10)).await?;
        // ...and the server's schema check names an out-of-range value
        // beside its field.
        type_and_leave(&c, timeout, "0").await?;
        let beside = wait_for_text(
            &c,
            "[data-field=timeout_ms] [data-testid=field-diagnostic]",
            Duration::from_secs(10),
        )
        .await?;
        browser.screenshot("editor-tool-form").await?;
        type_and_leave(&c, timeout, "5000").await?;
        wait_until("the diagnostic to clear", || async {
            Ok(count(&c, "[data-field=timeout_ms] [data-testid=field-diagnostic]").await? == 0)
        })
        .await?;
        save(&c).await?;
        let doc = saved_doc(&c, &server, &token).await?;
        Ok::<_, String>((kind, refused, beside, doc, tool))
    }
    .await;
    browser.close().await;
    let (step, refused, beside, doc, tool) = outcome.expect("the schema form works");
    assert_eq!(step.as_deref(), Some("1"), "an integer field steps by one");
    assert!(
        refused.starts_with("timeout_ms: `2.5` is not a whole number"),
        "{refused}"
    );
    assert!(beside.contains("minimum of 1"), "{beside}");
    let node = doc["workflow"]["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["id"] == tool.as_str()))
        .cloned()
        .expect("tool saved");
    assert_eq!(
        node["config"]["inputs"]["method"]["value"], "POST",
        "{node}"
    );
    assert_eq!(
        node["config"]["inputs"]["timeout_ms"]["value"], 5000,
        "{node}"
    );
}

/// WebDriver key codes.
const ENTER: &str = "\u{E007}";
const ARROW_RIGHT: &str = "\u{E014}";
const CONTROL: &str = "\u{E009}";

/// Sends keys to the element matching `css` (WebDriver focuses it first).
async fn keys(c: &Client, css: &str, text: &str) -> Result<(), String> {
    find(c, css)
        .await?
        .send_keys(text)
        .await
        .map_err(|e| format!("keys to {css}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_main_editor_actions_work_from_the_keyboard() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        new_workflow(&browser, &server, "Keyboard").await?;
        // Add nodes from the palette with Enter.
        keys(&c, "[data-palette=input]", ENTER).await?;
        appear(&c, "[data-node=input1]").await?;
        keys(&c, "[data-palette=output]", ENTER).await?;
        appear(&c, "[data-node=output1]").await?;
        // Select a node with Enter on it: its panel opens.
        keys(&c, "[data-node=input1]", ENTER).await?;
        appear(&c, "[data-testid=connect-form]").await?;
        // Wire it from the panel's Connect form, by keyboard.
        keys(&c, "[data-testid=connect-to]", "Output").await?;
        keys(&c, "[data-testid=connect]", ENTER).await?;
        wait_until("the edge", || async {
            Ok(count(&c, "[data-edge]").await? == 1)
        })
        .await?;
        // Arrows move the selected node; Ctrl+Z undoes the move.
        let x0 = find(&c, "[data-node=input1]")
            .await?
            .attr("data-x")
            .await
            .map_err(|e| e.to_string())?;
        keys(&c, "[data-node=input1]", ARROW_RIGHT).await?;
        let moved = async || {
            find(&c, "[data-node=input1]")
                .await?
                .attr("data-x")
                .await
                .map_err(|e| e.to_string())
        };
        wait_until("the move", || async { Ok(moved().await? != x0) }).await?;
        let x1 = moved().await?;
        keys(&c, "[data-node=input1]", &format!("{CONTROL}z{CONTROL}")).await?;
        wait_until("the undo", || async { Ok(moved().await? == x0) }).await?;
        // Ctrl+S saves.
        keys(&c, "[data-testid=canvas]", &format!("{CONTROL}s{CONTROL}")).await?;
        let saved =
            wait_for_text(&c, "[data-testid=editor-status]", Duration::from_secs(20)).await?;
        let edges = count(&c, "[data-edge]").await?;
        browser.screenshot("editor-keyboard").await?;
        Ok::<_, String>((x0, x1, saved, edges))
    }
    .await;
    browser.close().await;
    let (x0, x1, saved, edges) = outcome.expect("the keyboard drives the editor");
    let (x0, x1): (f64, f64) = (
        x0.unwrap_or_default().parse().unwrap_or(f64::NAN),
        x1.unwrap_or_default().parse().unwrap_or(f64::NAN),
    );
    assert_eq!(x1 - x0, 10.0, "one arrow press moves 10 units");
    assert!(saved.starts_with("Saved as revision"), "{saved}");
    assert_eq!(edges, 1, "the keyboard's edge is saved with the graph");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_from_the_editor_shows_node_states_and_the_tool_timeline_live() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        let token = new_workflow(&browser, &server, "Live run").await?;
        // Built in the editor: parallel calls in one turn, a pin on the
        // calculator (renamed `sum`) wired to a template, and the answer to
        // the output.
        let script = serde_json::json!({"turns": [
            {"latency_ms": 300, "tool_calls": [
                {"name": "calculator", "arguments": {"expression": "6*7"}},
                {"name": "json_query", "arguments": {"data": {"a": 1}, "program": ".a"}},
                {"name": "calculator", "arguments": {"expression": "1/"}}]},
            {"latency_ms": 300, "text": "done"}]});
        let agent =
            scripted_agent(&c, "go", &["calculator@1.0.0", "json_query@1.0.0"], &script).await?;
        pin_result(&c, "calculator@1.0.0", "sum").await?;
        let tpl = template_node(&c, "sum={{ value }}").await?;
        let out = output_node(&c, "answer, sum").await?;
        connect(&c, (&agent, "response"), (&out, "answer")).await?;
        connect(&c, (&agent, "sum"), (&tpl, "value")).await?;
        connect(&c, (&tpl, "text"), (&out, "sum")).await?;
        click(&c, "[data-testid=run]").await?;
        // While it runs, the agent lights up as running.
        wait_until("the agent running", || async {
            Ok(
                attr_or_none(&c, &format!("[data-node={agent}]"), "data-run-state")
                    .await?
                    .as_deref()
                    == Some("running"),
            )
        })
        .await?;
        let state = wait_run_succeeded(&c, "the run to finish").await;
        state?;
        // The timeline is a module fetched when the run is first watched.
        appear(&c, "[data-testid=timeline] tr").await?;
        let rows = c
            .find_all(fantoccini::Locator::Css("[data-testid=timeline] tr"))
            .await
            .map_err(|e| e.to_string())?;
        let mut seen = Vec::new();
        for r in rows {
            seen.push((
                r.attr("data-call")
                    .await
                    .map_err(|e| e.to_string())?
                    .unwrap_or_default(),
                r.attr("data-state")
                    .await
                    .map_err(|e| e.to_string())?
                    .unwrap_or_default(),
                r.text().await.map_err(|e| e.to_string())?,
            ));
        }
        let mut states = Vec::new();
        for n in [&agent, &tpl, &out] {
            states.push(
                find(&c, &format!("[data-node={n}]"))
                    .await?
                    .attr("data-run-state")
                    .await
                    .map_err(|e| e.to_string())?
                    .unwrap_or_default(),
            );
        }
        let outputs = wait_for_text(
            &c,
            &format!("[data-testid=live-outputs] [data-node={tpl}]"),
            Duration::from_secs(10),
        )
        .await?;
        // A row opens the call's envelope.
        click(&c, "[data-testid=timeline] tr").await?;
        let drawer = wait_for_text(&c, "[data-testid=call-drawer]", Duration::from_secs(5)).await?;
        browser.screenshot("editor-live-run").await?;
        let run_id = wait_for_text(&c, "[data-testid=live-run-id]", Duration::from_secs(5)).await?;
        let run = server.finished_run(&token, &run_id);
        Ok::<_, String>((seen, states, outputs, drawer, run, agent))
    }
    .await;
    browser.close().await;
    let (seen, states, outputs, drawer, run, agent) = outcome.expect("the live run view works");
    let order: Vec<String> = run["agent_outputs"][&agent]["tool_order"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(order.len(), 3, "{run}");
    let calls: Vec<String> = seen.iter().map(|(id, _, _)| id.clone()).collect();
    assert_eq!(calls, order, "one row per call, in tool_order");
    let row_states: Vec<&str> = seen.iter().map(|(_, s, _)| s.as_str()).collect();
    assert_eq!(
        row_states.iter().filter(|s| **s == "done").count(),
        2,
        "{seen:?}"
    );
    assert_eq!(
        row_states.iter().filter(|s| **s == "failed").count(),
        1,
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|(_, _, text)| text.contains("calculator@1.0.0") && text.contains("42")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|(_, _, text)| text.contains("VALIDATION_ERROR")),
        "{seen:?}"
    );
    assert_eq!(states, ["done", "done", "done"]);
    assert!(
        outputs.contains("sum="),
        "the pinned value reached the template: {outputs}"
    );
    // The drawer: status from the record, side effects, input and output.
    assert!(
        drawer.contains("calculator@1.0.0") && drawer.contains("none") && drawer.contains("Input"),
        "{drawer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_wait_in_the_timeline_and_are_approved_or_denied_there() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        let token = new_workflow(&browser, &server, "Two writes").await?;
        let script = serde_json::json!({"turns": [
            {"tool_calls": [
                {"name": "write_file", "arguments": {"path": "keep.txt", "content": "yes"}},
                {"name": "write_file", "arguments": {"path": "drop.txt", "content": "no"}}]},
            {"text": "Done writing."}]});
        let agent = scripted_agent(&c, "write", &["write_file@1.0.0"], &script).await?;
        answer_output(&c, &agent).await?;
        click(&c, "[data-testid=run]").await?;
        wait_until("two writes waiting", || async {
            Ok(count(&c, "[data-testid=approval]").await? == 2)
        })
        .await?;
        let waiting = attr_or_none(&c, &format!("[data-node={agent}]"), "data-run-state").await?;
        browser.screenshot("editor-approvals").await?;
        // The timeline is a module fetched when the run is first watched.
        appear(&c, "[data-testid=timeline] tr").await?;
        let rows = c
            .find_all(fantoccini::Locator::Css("[data-testid=timeline] tr"))
            .await
            .map_err(|e| e.to_string())?;
        let mut keep = String::new();
        let mut drop = String::new();
        for r in rows {
            let text = r.text().await.map_err(|e| e.to_string())?;
            let id = r
                .attr("data-call")
                .await
                .map_err(|e| e.to_string())?
                .unwrap_or_default();
            if text.contains("keep.txt") {
                keep = id;
            } else if text.contains("drop.txt") {
                drop = id;
            }
        }
        // Deny without a reason is refused in words; with one it goes.
        click(&c, &format!("[data-call='{drop}'] [data-testid=deny]")).await?;
        let refused =
            wait_for_text(&c, "[data-testid=run-problem]", Duration::from_secs(5)).await?;
        find(
            &c,
            &format!("[data-call='{drop}'] [data-testid=approval-text]"),
        )
        .await?
        .send_keys("not this file")
        .await
        .map_err(|e| e.to_string())?;
        click(&c, &format!("[data-call='{drop}'] [data-testid=deny]")).await?;
        // The drawer opened on a waiting call follows it to its end.
        click(&c, &format!("[data-call='{keep}'] td")).await?;
        let asked =
            wait_for_text(&c, "[data-testid=drawer-status]", Duration::from_secs(5)).await?;
        click(&c, &format!("[data-call='{keep}'] [data-testid=approve]")).await?;
        wait_run_succeeded(&c, "the run to finish").await?;
        wait_until("the open drawer to show the call's record", || async {
            Ok(text_or_empty(&c, "[data-testid=drawer-status]").await? == "completed")
        })
        .await?;
        let followed =
            wait_for_text(&c, "[data-testid=call-drawer]", Duration::from_secs(5)).await?;
        let denied = wait_for_text(
            &c,
            &format!("[data-call='{drop}'] [data-testid=call-error]"),
            Duration::from_secs(10),
        )
        .await?;
        let kept = find(&c, &format!("[data-call='{keep}']"))
            .await?
            .attr("data-state")
            .await
            .map_err(|e| e.to_string())?;
        let run_id = wait_for_text(&c, "[data-testid=live-run-id]", Duration::from_secs(5)).await?;
        // "succeeded", and the denied call said beside it.
        let failed_calls = wait_for_text(
            &c,
            "[data-testid=live-run-failed-calls]",
            Duration::from_secs(5),
        )
        .await?;
        let run = server.finished_run(&token, &run_id);
        let (_, body) = glassbox_tests::harness::http(
            &server.url,
            "GET",
            &format!("/api/v1/invocations?run_id={run_id}"),
            Some(&token),
            None,
        );
        Ok::<_, String>((
            waiting,
            refused,
            denied,
            kept,
            run,
            body,
            failed_calls,
            asked,
            followed,
        ))
    }
    .await;
    browser.close().await;
    let (waiting, refused, denied, kept, run, invocations, failed_calls, asked, followed) =
        outcome.expect("approvals work in the timeline");
    assert_eq!(asked, "waiting for approval");
    assert!(
        followed.contains("approval: approved") && followed.contains("keep.txt"),
        "the drawer shows the ended call's record: {followed}"
    );
    assert_eq!(failed_calls, "1 tool call failed or denied");
    assert_eq!(waiting.as_deref(), Some("waiting for approval"));
    assert!(refused.contains("reason"), "{refused}");
    assert_eq!(denied, "POLICY_DENIED", "the model hears the denial");
    assert_eq!(kept.as_deref(), Some("done"));
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(run["outputs"]["answer"], "Done writing.", "{run}");
    let invocations = glassbox_tests::harness::json(&invocations);
    let rows = invocations["invocations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let approved = rows
        .iter()
        .find(|i| i["approval_status"] == "approved")
        .cloned()
        .unwrap_or_default();
    assert_eq!(approved["status"], "completed", "{invocations}");
    assert!(
        approved["decided_by"]
            .as_str()
            .is_some_and(|u| !u.is_empty()),
        "the record names who approved: {invocations}"
    );
    let denied = rows
        .iter()
        .find(|i| i["approval_status"] == "rejected")
        .cloned()
        .unwrap_or_default();
    assert_eq!(denied["reason"], "not this file", "{invocations}");
    assert_eq!(denied["status"], "failed", "{invocations}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_view_recovers_from_a_dropped_connection_without_gaps_or_duplicates() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let mut server = Some(server);
    let outcome = async {
        let s = server.as_ref().ok_or("server")?;
        let token = new_workflow(&browser, s, "Dropped").await?;
        let script = serde_json::json!({"turns": [
            {"latency_ms": 200, "tool_calls": [{"name": "calculator", "arguments": {"expression": "1+1"}}]},
            {"latency_ms": 2500, "tool_calls": [{"name": "calculator", "arguments": {"expression": "2+2"}}]},
            {"latency_ms": 200, "tool_calls": [{"name": "calculator", "arguments": {"expression": "3+3"}}]},
            {"text": "six"}]});
        let agent = scripted_agent(&c, "go", &["calculator@1.0.0"], &script).await?;
        answer_output(&c, &agent).await?;
        click(&c, "[data-testid=run]").await?;
        wait_until("the first call", || async {
            Ok(count(&c, "[data-testid=timeline] tr[data-state=done]").await? == 1)
        })
        .await?;
        // The connection drops: the server dies mid-run and comes back on
        // the same address; the run resumes there.
        let dist = glassbox_tests::harness::built_app_dir()?;
        let restarted = server.take().ok_or("server")?.restart_same_port(Some(&dist))?;
        server = Some(restarted);
        let note = wait_for_text(&c, "[data-testid=run-note]", Duration::from_secs(20)).await?;
        wait_run_succeeded(&c, "the run to finish").await?;
        // The timeline is a module fetched when the run is first watched.
        appear(&c, "[data-testid=timeline] tr").await?;
        let calls = c
            .find_all(fantoccini::Locator::Css("[data-testid=timeline] tr"))
            .await
            .map_err(|e| e.to_string())?;
        let mut ids = Vec::new();
        for r in calls {
            ids.push(r.attr("data-call").await.map_err(|e| e.to_string())?.unwrap_or_default());
        }
        let run_id = wait_for_text(&c, "[data-testid=live-run-id]", Duration::from_secs(5)).await?;
        let run = server.as_ref().ok_or("server")?.finished_run(&token, &run_id);
        browser.screenshot("editor-live-reconnected").await?;
        Ok::<_, String>((note, ids, run, agent))
    }
    .await;
    browser.close().await;
    drop(server);
    let (note, ids, run, agent) = outcome.expect("the live view recovers");
    assert!(note.contains("reconnecting"), "{note}");
    let order: Vec<String> = run["agent_outputs"][&agent]["tool_order"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(order.len(), 3, "{run}");
    assert_eq!(ids, order, "every call once, in tool_order, none lost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_materialized_call_runs_as_its_own_node_with_the_same_output() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        let token = new_workflow(&browser, &server, "Eject").await?;
        let script = serde_json::json!({"turns": [
            {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
            {"text": "42"}]});
        let agent = scripted_agent(&c, "go", &["calculator@1.0.0"], &script).await?;
        answer_output(&c, &agent).await?;
        let finished = || run_succeeded(&c);
        click(&c, "[data-testid=run]").await?;
        wait_until("the first run", finished).await?;
        let first_run =
            wait_for_text(&c, "[data-testid=live-run-id]", Duration::from_secs(5)).await?;
        let call = appear(&c, "[data-testid=timeline] tr")
            .await?
            .attr("data-call")
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        click(&c, "[data-testid=timeline] tr [data-testid=materialize]").await?;
        appear(&c, "[data-kind=tool]").await?;
        let node = find(&c, "[data-kind=tool]")
            .await?
            .attr("data-node")
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        let selected = appear(&c, "[data-testid=inspector] h2")
            .await?
            .text()
            .await
            .map_err(|e| e.to_string())?;
        let dirty = wait_for_text(&c, "[data-testid=dirty]", Duration::from_secs(5)).await?;
        browser.screenshot("editor-materialized").await?;
        save(&c).await?;
        click(&c, "[data-testid=run]").await?;
        wait_until("the second run", || async {
            let id = text_or_empty(&c, "[data-testid=live-run-id]").await?;
            Ok(id != first_run && finished().await?)
        })
        .await?;
        let second_run =
            wait_for_text(&c, "[data-testid=live-run-id]", Duration::from_secs(5)).await?;
        let first = server.finished_run(&token, &first_run);
        let second = server.finished_run(&token, &second_run);
        Ok::<_, String>((call, node, selected, dirty, first, second, agent))
    }
    .await;
    browser.close().await;
    let (call, node, selected, dirty, first, second, agent) = outcome.expect("materialize works");
    assert_eq!(selected, node, "the new node is selected");
    assert_eq!(dirty.trim(), "Unsaved changes");
    assert_eq!(second["status"], "succeeded", "{second}");
    let original = &first["agent_outputs"][&agent]["tools_by_id"][&call]["output"];
    assert!(!original.is_null(), "{first}");
    let ejected = &second["nodes"][&node]["envelope"]["output"];
    assert_eq!(
        ejected, original,
        "the node's output equals the call's: {second}"
    );
}

/// Right-clicks an element (a `contextmenu` event, as the browser sends it).
async fn context_click(c: &Client, css: &str) -> Result<(), String> {
    let done = c
        .execute(
            "const e = document.querySelector(arguments[0]); if (!e) return false; \
             e.dispatchEvent(new MouseEvent('contextmenu', {bubbles: true, cancelable: true, button: 2})); return true;",
            vec![serde_json::json!(css)],
        )
        .await
        .map_err(|e| e.to_string())?;
    if done == serde_json::json!(true) {
        Ok(())
    } else {
        Err(format!("{css}: not found"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_shows_the_agents_timeline_and_a_pin_is_materialized_from_its_menu() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        let token = new_workflow(&browser, &server, "Pinned").await?;
        let script = serde_json::json!({"turns": [
            {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
            {"text": "done"}]});
        let agent = scripted_agent(&c, "go", &["calculator@1.0.0"], &script).await?;
        pin_result(&c, "calculator@1.0.0", "calc_result").await?;
        let tpl = template_node(&c, "v={{ calc_result }}").await?;
        let out = output_node(&c, "text").await?;
        connect(&c, (&agent, "calc_result"), (&tpl, "calc_result")).await?;
        connect(&c, (&tpl, "text"), (&out, "text")).await?;
        let finished = || run_succeeded(&c);
        // Before the run ends the pin has nothing to eject: said in words.
        context_click(
            &c,
            &format!("[data-node={agent}] [data-handle='out:calc_result']"),
        )
        .await?;
        let early =
            wait_for_text(&c, "[data-testid=editor-status]", Duration::from_secs(5)).await?;
        click(&c, "[data-testid=run]").await?;
        wait_until("the first run", finished).await?;
        let first_run =
            wait_for_text(&c, "[data-testid=live-run-id]", Duration::from_secs(5)).await?;
        // Selected, the agent's timeline and outputs are in its inspector.
        click(&c, &format!("[data-node={agent}] rect")).await?;
        appear(&c, "[data-testid=inspector] [data-testid=timeline] tr").await?;
        let in_panel = count(&c, "[data-testid=run-panel] [data-testid=timeline]").await?;
        click(&c, "[data-testid=inspector] [data-testid=timeline] tr").await?;
        wait_until("the drawer's record", || async {
            Ok(
                text_or_empty(&c, "[data-testid=inspector] [data-testid=drawer-status]").await?
                    == "completed",
            )
        })
        .await?;
        let effect = wait_for_text(
            &c,
            "[data-testid=inspector] [data-testid=drawer-effect]",
            Duration::from_secs(5),
        )
        .await?;
        let cost = wait_for_text(
            &c,
            "[data-testid=inspector] [data-testid=drawer-cost]",
            Duration::from_secs(5),
        )
        .await?;
        let output = wait_for_text(
            &c,
            "[data-testid=inspector] [data-testid=drawer-output]",
            Duration::from_secs(5),
        )
        .await?;
        let pin_value = wait_for_text(
            &c,
            "[data-testid=agent-outputs] [data-handle-value=calc_result]",
            Duration::from_secs(5),
        )
        .await?;
        browser.screenshot("inspector-timeline").await?;
        // Right-click the pinned handle: a Tool node takes the pin's edge.
        context_click(
            &c,
            &format!("[data-node={agent}] [data-handle='out:calc_result']"),
        )
        .await?;
        appear(&c, "[data-kind=tool]").await?;
        let node = glassbox_tests::ui::attr_or_none(&c, "[data-kind=tool]", "data-node")
            .await?
            .unwrap_or_default();
        let moved = count(
            &c,
            &format!("[data-source='{node}.output'][data-target='{tpl}.calc_result']"),
        )
        .await?;
        let left = count(&c, &format!("[data-source='{agent}.calc_result']")).await?;
        let told = text_or_empty(&c, "[data-testid=editor-status]").await?;
        // Undone in one step, then the same from the outputs' button.
        click(&c, "[data-testid=undo]").await?;
        wait_until("the undo", || async {
            Ok(count(&c, "[data-kind=tool]").await? == 0)
        })
        .await?;
        click(&c, &format!("[data-node={agent}] rect")).await?;
        click(&c, "[data-testid=materialize-pin][data-pin=calc_result]").await?;
        appear(&c, "[data-kind=tool]").await?;
        browser.screenshot("editor-pin-materialized").await?;
        save(&c).await?;
        click(&c, "[data-testid=run]").await?;
        wait_until("the second run", || async {
            let id = text_or_empty(&c, "[data-testid=live-run-id]").await?;
            Ok(id != first_run && finished().await?)
        })
        .await?;
        let second_run =
            wait_for_text(&c, "[data-testid=live-run-id]", Duration::from_secs(5)).await?;
        let first = server.finished_run(&token, &first_run);
        let second = server.finished_run(&token, &second_run);
        Ok::<_, String>((
            early, in_panel, effect, cost, output, pin_value, moved, left, told, first, second,
        ))
    }
    .await;
    browser.close().await;
    let (early, in_panel, effect, cost, output, pin_value, moved, left, told, first, second) =
        outcome.expect("the inspector's timeline and pin materialize work");
    assert!(early.contains("run the workflow"), "{early}");
    assert_eq!(
        in_panel, 0,
        "the selected agent's timeline is in the inspector only"
    );
    assert_eq!(effect, "none");
    assert!(cost.starts_with("cost "), "{cost}");
    assert!(output.contains("42"), "{output}");
    assert!(pin_value.contains("42"), "{pin_value}");
    assert_eq!(
        (moved, left),
        (1, 0),
        "the pin's edge moved to the new node"
    );
    assert!(told.contains("is now a Tool node"), "{told}");
    assert_eq!(second["status"], "succeeded", "{second}");
    assert!(
        first["outputs"]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("v=") && t.contains("42")),
        "{first}"
    );
    assert_eq!(
        second["outputs"], first["outputs"],
        "downstream keeps its value: {second}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_write_cut_off_by_a_crash_shows_as_outcome_unknown() {
    // The server aborts right after recording the write's intent.
    let Some((server, browser)) =
        app_and_browser_with(&[("GLASSBOX_TEST_CRASH_AT", "after_intent")]).await
    else {
        return;
    };
    let c = browser.client.clone();
    let mut server = Some(server);
    let outcome = async {
        let s = server.as_ref().ok_or("server")?;
        new_workflow(&browser, s, "Cut off").await?;
        let script = serde_json::json!({"turns": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "cut.txt", "content": "?"}}]},
            {"text": "I could not tell whether it was written."}]});
        let agent = scripted_agent(&c, "write", &["write_file@1.0.0"], &script).await?;
        answer_output(&c, &agent).await?;
        click(&c, "[data-testid=run]").await?;
        appear(&c, "[data-testid=approval] [data-testid=approve]").await?;
        click(&c, "[data-testid=approval] [data-testid=approve]").await?;
        // The server dies at the crash point; it comes back without it.
        let mut dead = server.take().ok_or("server")?;
        if !dead.wait_for_exit(Duration::from_secs(30)) {
            return Err("the server did not abort at the crash point".into());
        }
        let dist = glassbox_tests::harness::built_app_dir()?;
        server = Some(dead.restart_same_port(Some(&dist))?);
        wait_run_succeeded(&c, "the run to finish").await?;
        let row = appear(&c, "[data-testid=timeline] tr").await?;
        let state = row.attr("data-state").await.map_err(|e| e.to_string())?;
        let text = row.text().await.map_err(|e| e.to_string())?;
        // The drawer holds what is known: the input, the approval, the
        // message asking an operator to reconcile.
        click(&c, "[data-testid=timeline] tr").await?;
        if let Err(e) = wait_until("the drawer's record", || async {
            Ok(text_or_empty(&c, "[data-testid=drawer-status]").await? == "outcome_unknown")
        })
        .await
        {
            // What the page showed instead, for the failure's message.
            let drawer = text_or_empty(&c, "[data-testid=call-drawer]").await?;
            let row = text_or_empty(&c, "[data-testid=timeline] tr").await?;
            browser.screenshot("editor-outcome-unknown-failed").await?;
            return Err(format!("{e}; the drawer: {drawer:?}; the row: {row:?}"));
        }
        let drawer = wait_for_text(&c, "[data-testid=call-drawer]", Duration::from_secs(5)).await?;
        browser.screenshot("editor-outcome-unknown").await?;
        Ok::<_, String>((state, text, drawer))
    }
    .await;
    browser.close().await;
    drop(server);
    let (state, text, drawer) = outcome.expect("the interrupted write is shown");
    assert_eq!(state.as_deref(), Some("outcome unknown"), "{text}");
    assert!(
        text.contains("OUTCOME_UNKNOWN") && text.contains("approved write"),
        "{text}"
    );
    assert!(
        drawer.contains("approval: approved")
            && drawer.contains("cut.txt")
            && drawer.contains("reconcile"),
        "{drawer}"
    );
}
