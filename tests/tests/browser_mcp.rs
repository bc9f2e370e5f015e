//! An MCP server from the browser, in real Chromium against the real
//! server and the official `server-everything` peer: add the connection
//! in Settings (its server's name, protocol and tool count appear in its
//! row), see its tools with the MCP badge and the server's name in the
//! Agent node's tool selector of the "Call an MCP server" example, enable
//! two, save, run, and read the receipts in the timeline; then Sign out
//! ends the session.

use std::time::Duration;

use glassbox_tests::harness::{http, json, wait_for_text};
use glassbox_tests::mcp_peer::everything_script;
use glassbox_tests::ui::{appear, click, count, text_or_empty, type_and_leave, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_is_added_in_settings_and_its_tools_run_from_the_editor() {
    let script = everything_script();
    // The server loads the examples, as `cargo xtask run` does.
    let Some((server, browser)) = glassbox_tests::harness::app_and_browser_with_examples().await
    else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        let token = browser.sign_in(&server).await?;
        // The first start made the connection `everything` (`npx`); this
        // test adds its own, to the local peer, in its place.
        let (removed, body) = http(
            &server.url,
            "DELETE",
            "/api/v1/connections/everything",
            Some(&token),
            None,
        );
        if removed != 204 {
            return Err(format!(
                "the example's connection is removed: {removed} {body}"
            ));
        }
        browser.open(&format!("{}/settings", server.url)).await?;
        appear(&c, "[data-testid=connection-form]").await?;
        type_and_leave(&c, "[data-connection-field=name]", "everything").await?;
        click(&c, "[data-connection-field=kind] option[value=mcp]").await?;
        appear(&c, "[data-connection-field=command]").await?;
        type_and_leave(&c, "[data-connection-field=command]", "node").await?;
        type_and_leave(
            &c,
            "[data-connection-field=args]",
            &format!("{} stdio", script.display()),
        )
        .await?;
        click(&c, "[data-testid=connection-add]").await?;
        let server_line = wait_for_text(
            &c,
            "[data-connection=everything] [data-testid=mcp-server]",
            Duration::from_secs(60),
        )
        .await?;
        browser.screenshot("settings-mcp-connection").await?;
        // The same page lists where this user is signed in.
        let sessions =
            wait_for_text(&c, "[data-testid=session-list]", Duration::from_secs(10)).await?;

        // The example, opened in the editor: the Agent's tool selector
        // lists the server's tools with their badges.
        let (_, body) = http(&server.url, "GET", "/api/v1/workflows", Some(&token), None);
        let id = json(&body)["workflows"]
            .as_array()
            .and_then(|a| {
                a.iter().find(|w| {
                    w["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("Call an MCP server"))
                })
            })
            .and_then(|w| w["id"].as_str())
            .ok_or("the MCP example is listed")?
            .to_string();
        browser
            .open(&format!("{}/workflows/{id}", server.url))
            .await?;
        appear(&c, "[data-node=agent]").await?;
        click(&c, "[data-node=agent] .node-label").await?;
        appear(&c, "[data-testid=inspector] [data-testid=tool-rows]").await?;
        let echo = "[data-tool^='mcp.everything.echo@']";
        let sum = "[data-tool^='mcp.everything.get-sum@']";
        appear(&c, echo).await?;
        let badge = text_or_empty(&c, &format!("{echo} [data-testid=mcp-badge]")).await?;
        let server_name =
            text_or_empty(&c, &format!("{echo} [data-testid=mcp-server-name]")).await?;
        let effect = text_or_empty(&c, &format!("{echo} [data-testid=effect-badge]")).await?;
        let mcp_rows = count(&c, "[data-testid=mcp-badge]").await?;
        click(&c, &format!("{echo} [data-testid=tool-enable]")).await?;
        click(&c, &format!("{sum} [data-testid=tool-enable]")).await?;
        browser.screenshot("editor-mcp-tools").await?;
        click(&c, "[data-testid=save]").await?;
        wait_until("the save", || async {
            Ok(text_or_empty(&c, "[data-testid=dirty]").await?.is_empty())
        })
        .await?;

        click(&c, "[data-testid=run]").await?;
        let done = wait_until("the run to succeed", || async {
            Ok(text_or_empty(&c, "[data-testid=live-run-state]").await? == "succeeded")
        })
        .await;
        if let Err(e) = done {
            browser.screenshot("editor-mcp-run-failed").await?;
            let state = text_or_empty(&c, "[data-testid=live-run-state]").await?;
            let panel = text_or_empty(&c, "[data-testid=timeline]").await?;
            return Err(format!("{e}: the run is {state:?}; timeline: {panel}"));
        }
        let timeline = wait_for_text(&c, "[data-testid=timeline]", Duration::from_secs(10)).await?;
        let run_id = wait_for_text(&c, "[data-testid=live-run-id]", Duration::from_secs(5)).await?;
        browser.screenshot("editor-mcp-run").await?;
        // Read the run while signed in, then sign out: the session ends.
        let run = server.finished_run(&token, &run_id);
        click(&c, "[data-testid=signout]").await?;
        wait_until("the sign-out", || async {
            let kept = c
                .execute("return localStorage.getItem('glassbox.session')", vec![])
                .await
                .map_err(|e| e.to_string())?;
            Ok(kept.is_null())
        })
        .await?;
        let (signed_out, _) = http(&server.url, "GET", "/api/v1/workflows", Some(&token), None);
        Ok::<_, String>((
            sessions,
            server_line,
            badge,
            server_name,
            effect,
            mcp_rows,
            timeline,
            run,
            signed_out,
        ))
    }
    .await;
    let errors = browser.close_after_console_errors().await;
    let (sessions, server_line, badge, server_name, effect, mcp_rows, timeline, run, signed_out) =
        outcome.expect("the MCP connection works from the browser");
    assert!(errors.is_empty(), "console errors: {errors:?}");
    assert!(sessions.contains("(this one)"), "{sessions}");
    assert!(
        server_line.contains("mcp-servers/everything 2.0.0") && server_line.contains("MCP 20"),
        "{server_line}"
    );
    assert_eq!(badge, "MCP");
    assert_eq!(server_name, "mcp-servers/everything");
    assert_eq!(effect, "reads");
    assert!(mcp_rows > 5, "the server's tools are listed: {mcp_rows}");
    assert!(timeline.contains("mcp.everything.echo"), "{timeline}");
    assert_eq!(run["status"], "succeeded", "{run}");
    assert_eq!(signed_out, 401, "Sign out ended the session on the server");
    assert_eq!(run["outputs"]["sum"], "The sum of 2 and 40 is 42.", "{run}");
}
