//! Browser test of teams (issue 34) in real Chromium against a real
//! server: the admin creates the workspace "Team space" in Settings,
//! switches between workspaces from the navigation, makes a workflow there
//! in the UI and invites an editor from Settings -> Members; a second
//! browser profile (a WebDriver session of its own, with its own
//! localStorage) opens the link, chooses a display name, accepts and sees
//! the shared workflow; the link then fails in words. Settings -> Audit
//! shows the invitation and the join. Made a viewer, the invitee finds Run
//! and Save off with the hint, and Fork and Replay on a run's page; a second link is revoked; the invitee, removed, is
//! signed out at once; the admin, back in the default workspace, does not
//! see the workflow there.

use std::time::Duration;

use fantoccini::Client;
use glassbox_tests::harness::{app_and_browser_signed_in, wait_for_text, Browser};
use glassbox_tests::ui::{
    appear, attr_or_none, click, click_and_answer, count, create_workflow, find, layout_problems,
    text_or_empty, value_of, wait_until,
};

/// The name of the workspace the navigation shows as current, polled
/// until it is `name` (read by script: the switcher is drawn again as the
/// page reloads, and a page between two loads answers nothing).
async fn current_workspace_is(c: &Client, name: &str) -> Result<(), String> {
    wait_until(&format!("the navigation to show workspace {name}"), || async move {
        let shown = c
            .execute(
                "const s = document.querySelector('[data-testid=workspace-switcher]'); return s ? s.dataset.currentName : null",
                vec![],
            )
            .await
            .unwrap_or_default();
        Ok(shown.as_str() == Some(name))
    })
    .await
}

/// The id of the caller's workspace named `name`, from the switcher.
async fn workspace_id(c: &Client, name: &str) -> Result<String, String> {
    let id = c
        .execute(
            "return [...document.querySelectorAll('[data-testid=workspace-switcher] option')]
               .filter(o => o.textContent.trim() === arguments[0]).map(o => o.value)[0] || null",
            vec![serde_json::json!(name)],
        )
        .await
        .map_err(|e| e.to_string())?;
    id.as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("no workspace named {name} in the switcher"))
}

/// Switches to the workspace named `name` with the navigation's switcher
/// and waits for its workflows page.
async fn switch_to(browser: &Browser, name: &str) -> Result<(), String> {
    let c = &browser.client;
    let id = workspace_id(c, name).await?;
    click(
        c,
        &format!("[data-testid=workspace-switcher] option[value='{id}']"),
    )
    .await?;
    current_workspace_is(c, name).await?;
    wait_until("the workflows page", || async move {
        let url = c.current_url().await.map_err(|e| e.to_string())?;
        Ok(url.path() == "/workflows")
    })
    .await
}

/// The workflow names the workflows page lists, once it has loaded.
async fn listed_workflows(c: &Client) -> Result<Vec<String>, String> {
    wait_until("the workflow list", || async move {
        let page = text_or_empty(c, "main").await?;
        Ok(!page.contains("Loading workflows")
            && (page.contains("No workflows yet.")
                || count(c, "[data-testid=workflow-list]").await? > 0))
    })
    .await?;
    let names = c
        .execute(
            "return [...document.querySelectorAll('[data-testid=workflow-list] [data-workflow] a')].map(a => a.textContent.trim())",
            vec![],
        )
        .await
        .map_err(|e| e.to_string())?;
    Ok(names
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invited_editor_sees_the_shared_workflow_and_the_default_workspace_keeps_its_own() {
    let Some((server, admin, _)) = app_and_browser_signed_in(&[]).await else {
        return;
    };
    let invitee = match Browser::start().await {
        Ok(b) => b,
        Err(e) => {
            admin.close().await;
            panic!("second browser: {e}");
        }
    };
    let a = admin.client.clone();
    let b = invitee.client.clone();
    let outcome = async {
        // Settings -> Workspace: "Team space" is made and becomes current.
        admin.open(&format!("{}/settings", server.url)).await?;
        let first =
            wait_for_text(&a, "[data-testid=workspace-name]", Duration::from_secs(30)).await?;
        appear(&a, "[data-testid=new-workspace-name]")
            .await?
            .send_keys("Team space")
            .await
            .map_err(|e| e.to_string())?;
        click(&a, "[data-testid=new-workspace]").await?;
        current_workspace_is(&a, "Team space").await?;
        // The navigation switches both ways.
        switch_to(&admin, &first).await?;
        switch_to(&admin, "Team space").await?;
        let team = workspace_id(&a, "Team space").await?;

        // A workflow made in the UI, in Team space.
        create_workflow(&admin, &server, "Shared plan").await?;
        let editor_url = a.current_url().await.map_err(|e| e.to_string())?;
        let workflow = editor_url.path().trim_start_matches("/workflows/").to_string();

        // Settings -> Members: an editor's invitation link, shown once.
        admin.open(&format!("{}/settings", server.url)).await?;
        appear(&a, "[data-testid=member-list]").await?;
        let admin_row = text_or_empty(&a, "[data-testid=member-list] tbody").await?;
        click(&a, "[data-testid=invite-role] option[value=editor]").await?;
        click(&a, "[data-testid=invite-create]").await?;
        appear(&a, "[data-testid=invite-link]").await?;
        let link = value_of(&a, "[data-testid=invite-link]").await?;
        let pending = count(&a, "[data-testid=invitation-list] [data-status=pending]").await?;
        a.execute(
            "document.querySelector('[data-testid=invite-created]').scrollIntoView()",
            vec![],
        )
        .await
        .map_err(|e| e.to_string())?;
        admin.screenshot("teams-invitation-link").await?;
        let mut overlaps = layout_problems(&a).await?;

        // The second profile: the link's preview, a display name, Accept.
        invitee.open(&link).await?;
        let offered_space =
            wait_for_text(&b, "[data-testid=invite-workspace]", Duration::from_secs(30)).await?;
        let offered_role = text_or_empty(&b, "[data-testid=invite-role-offered]").await?;
        let inviter = text_or_empty(&b, "[data-testid=invite-inviter]").await?;
        // Without a name, nothing is sent.
        click(&b, "[data-testid=invite-accept]").await?;
        let nameless = wait_for_text(&b, "[data-testid=invite-error]", Duration::from_secs(10)).await?;
        find(&b, "[data-testid=invite-display-name]")
            .await?
            .send_keys("Casey")
            .await
            .map_err(|e| e.to_string())?;
        invitee.screenshot("teams-invitation-page").await?;
        overlaps.extend(layout_problems(&b).await?);
        click(&b, "[data-testid=invite-accept]").await?;
        current_workspace_is(&b, "Team space").await?;
        let seen = listed_workflows(&b).await?;
        let stored = b
            .execute("return localStorage.getItem('glassbox.workspace')", vec![])
            .await
            .map_err(|e| e.to_string())?;
        invitee.screenshot("teams-invitee-workflows").await?;

        // The link works once.
        invitee.open(&link).await?;
        let reused = wait_for_text(&b, "[data-testid=invite-error]", Duration::from_secs(30)).await?;

        // The admin sees Casey as an editor, and makes them a viewer.
        admin.open(&format!("{}/settings", server.url)).await?;
        appear(&a, "[data-testid=member-list] [data-role=editor]").await?;
        let members = text_or_empty(&a, "[data-testid=member-list] tbody").await?;
        let accepted = count(&a, "[data-testid=invitation-list] [data-status=accepted]").await?;
        click(
            &a,
            "[data-testid=member-list] [data-role=editor] [data-testid=member-role] option[value=viewer]",
        )
        .await?;
        appear(&a, "[data-testid=member-list] [data-role=viewer]").await?;
        admin.screenshot("teams-members").await?;
        // Settings -> Audit: the invitation and the join, newest first.
        appear(&a, "[data-testid=audit-event][data-action='member.joined']").await?;
        let audited: Vec<String> = a
            .execute(
                "return [...document.querySelectorAll('[data-testid=audit-event]')].map(e => e.dataset.action)",
                vec![],
            )
            .await
            .map_err(|e| e.to_string())?
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();

        // A run of the shared workflow, started by the admin (in Team
        // space, through the app's own session and workspace).
        let run: String = a
            .execute(
                "const [w] = arguments;
                 return fetch('/api/v1/runs', { method: 'POST', headers: {
                     'Authorization': 'Bearer ' + localStorage.getItem('glassbox.session'),
                     'X-Glassbox-Workspace': localStorage.getItem('glassbox.workspace'),
                     'Content-Type': 'application/json' },
                   body: JSON.stringify({ workflow_id: w }) })
                   .then(r => r.json()).then(j => j.run_id || JSON.stringify(j));",
                vec![serde_json::json!(workflow)],
            )
            .await
            .map_err(|e| e.to_string())?
            .as_str()
            .map(str::to_string)
            .ok_or("no run id")?;

        // A viewer's editor: Run and Save are off, with why; the
        // workflow is still read (a node selected shows its panel).
        invitee
            .open(&format!("{}/workflows/{workflow}", server.url))
            .await?;
        let hint = wait_for_text(&b, "[data-testid=run-panel] [data-testid=viewer-hint]", Duration::from_secs(30)).await?;
        let disabled = |css: &'static str| {
            let b = b.clone();
            async move {
                find(&b, css)
                    .await?
                    .prop("disabled")
                    .await
                    .map_err(|e| e.to_string())
            }
        };
        let run_off = disabled("[data-testid=run]").await?;
        let save_off = disabled("[data-testid=save]").await?;
        let save_title = attr_or_none(&b, "[data-testid=save]", "title").await?;
        let save_hint = text_or_empty(&b, ".editor-bar [data-testid=viewer-hint]").await?;
        invitee.screenshot("teams-viewer-run-off").await?;
        overlaps.extend(layout_problems(&b).await?);

        // The run's page: Fork and Replay are off, with why.
        invitee.open(&format!("{}/runs/{run}", server.url)).await?;
        appear(&b, "[data-testid=replay]").await?;
        let fork_off = disabled("[data-testid=fork]").await?;
        let replay_off = disabled("[data-testid=replay]").await?;
        let fork_title = attr_or_none(&b, "[data-testid=fork]", "title").await?;
        let run_hints = b
            .execute(
                "return [...document.querySelectorAll('[data-testid=run] [data-testid=viewer-hint]')].map(e => e.textContent)",
                vec![],
            )
            .await
            .map_err(|e| e.to_string())?;
        invitee.screenshot("teams-viewer-run-page").await?;

        // A second link, revoked after the confirmation, is pending no more.
        click(&a, "[data-testid=invite-create]").await?;
        appear(&a, "[data-testid=invitation-list] [data-status=pending]").await?;
        click_and_answer(&a, "[data-testid=invitation-list] [data-status=pending] [data-testid=invite-revoke]", true).await?;
        appear(&a, "[data-testid=invitation-list] [data-status=revoked]").await?;
        let still_pending =
            count(&a, "[data-testid=invitation-list] [data-status=pending]").await?;
        // Casey removed after the confirmation: their session ends at once.
        click_and_answer(&a, "[data-testid=member-list] [data-role=viewer] [data-testid=member-remove]", true).await?;
        wait_until("Casey's row to go", || async {
            Ok(count(&a, "[data-testid=member-list] [data-role=viewer]").await? == 0)
        })
        .await?;
        invitee.open(&format!("{}/workflows", server.url)).await?;
        let removed = wait_for_text(&b, "main [role=alert]", Duration::from_secs(30)).await?;

        // Back in the first workspace, the shared workflow is not listed.
        switch_to(&admin, &first).await?;
        let in_first = listed_workflows(&a).await?;
        admin.screenshot("teams-default-workspace").await?;
        Ok::<_, String>((
            (first, team, admin_row, link, pending),
            (offered_space, offered_role, inviter, nameless, seen, stored),
            (reused, members, accepted, hint, run_off),
            (audited, still_pending, removed, in_first),
            (save_off, save_title, save_hint),
            (fork_off, replay_off, fork_title, run_hints),
            overlaps,
        ))
    }
    .await;
    invitee.close().await;
    admin.close().await;
    let (
        (first, team, admin_row, link, pending),
        (offered_space, offered_role, inviter, nameless, seen, stored),
        (reused, members, accepted, hint, run_off),
        (audited, still_pending, removed, in_first),
        (save_off, save_title, save_hint),
        (fork_off, replay_off, fork_title, run_hints),
        overlaps,
    ) = outcome.expect("a workspace is made, shared by invitation and kept apart");

    assert!(overlaps.is_empty(), "controls overlap: {overlaps:?}");
    assert_ne!(first, "Team space");
    assert!(admin_row.contains("(you)"), "{admin_row}");
    assert!(
        link.starts_with(&format!("{}/invite/", server.url)),
        "{link}"
    );
    assert_eq!(pending, 1);
    assert_eq!(offered_space, "Team space");
    assert_eq!(offered_role, "editor");
    assert!(!inviter.trim().is_empty());
    assert!(nameless.contains("display name"), "{nameless}");
    assert_eq!(seen, vec!["Shared plan".to_string()]);
    assert_eq!(stored, serde_json::json!(team));
    assert!(reused.contains("can no longer be used"), "{reused}");
    assert!(members.contains("Casey"), "{members}");
    assert_eq!(accepted, 1);
    let at = |action: &str| audited.iter().position(|a| a == action);
    assert!(
        matches!((at("member.joined"), at("member.invited")), (Some(j), Some(i)) if j < i),
        "{audited:?}"
    );
    assert_eq!(hint, "viewers cannot start runs");
    assert_eq!(run_off, Some("true".to_string()));
    assert_eq!(save_off, Some("true".to_string()));
    assert_eq!(
        save_title.as_deref(),
        Some("viewers cannot change workflows")
    );
    assert_eq!(save_hint, "viewers cannot change workflows");
    assert_eq!(fork_off, Some("true".to_string()));
    assert_eq!(replay_off, Some("true".to_string()));
    assert_eq!(fork_title.as_deref(), Some("viewers cannot start runs"));
    assert_eq!(
        run_hints,
        serde_json::json!([
            "viewers cannot start runs",
            "viewers cannot start runs",
            "viewers cannot change suites"
        ]),
        "the run page's hints: Replay's, Fork's, then Add to suite's"
    );
    assert_eq!(still_pending, 0);
    assert!(removed.contains("no longer valid"), "{removed}");
    assert!(
        !in_first.contains(&"Shared plan".to_string()),
        "{in_first:?}"
    );
}
