//! The example gallery in real Chromium: the workflows page shows each
//! workflow's description under its name and a "New from example" card per
//! example; a card's button makes a new workflow from it and opens it in the
//! editor with the example's nodes; Rename edits the description too.

use glassbox_tests::harness::{http, json};
use glassbox_tests::ui::{appear, click, count, find, text_or_empty, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_from_example_opens_a_new_workflow_with_the_examples_nodes() {
    // The server loads the examples, as `cargo xtask run` does.
    let Some((server, browser)) = glassbox_tests::harness::app_and_browser_with_examples().await
    else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        let token = browser.sign_in(&server).await?;
        let workflows = |token: &str| {
            let (_, body) = http(&server.url, "GET", "/api/v1/workflows", Some(token), None);
            json(&body)["workflows"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        };
        let before = tokio::task::block_in_place(|| workflows(&token));
        browser.open(&format!("{}/workflows", server.url)).await?;
        appear(&c, "[data-testid=gallery] [data-example]").await?;
        appear(
            &c,
            "[data-testid=workflow-list] [data-testid=workflow-description]",
        )
        .await?;
        let cards = count(&c, "[data-testid=gallery] [data-example]").await?;
        let described = count(&c, "[data-workflow] [data-testid=workflow-description]").await?;
        let card = "[data-example=branch_on_error_code]";
        let card_text = text_or_empty(&c, card).await?;
        c.execute(
            "document.querySelector('[data-testid=gallery]').scrollIntoView()",
            vec![],
        )
        .await
        .map_err(|e| e.to_string())?;
        browser.screenshot("workflows-gallery").await?;

        click(&c, &format!("{card} [data-testid=new-from-example]")).await?;
        let path = || async {
            c.current_url()
                .await
                .map(|u| u.path().to_string())
                .map_err(|e| e.to_string())
        };
        let new_one = |path: &str| {
            path.starts_with("/workflows/")
                && !before
                    .iter()
                    .any(|w| w["id"].as_str().is_some_and(|id| path.ends_with(id)))
        };
        wait_until("the editor of the new workflow", || async {
            Ok(new_one(&path().await?))
        })
        .await?;
        let opened = path().await?;
        appear(&c, "[data-node=read]").await?;
        let nodes = count(&c, "[data-node]").await?;
        let mut drawn = Vec::new();
        for id in ["read", "check", "missing", "found", "out"] {
            drawn.push(count(&c, &format!("[data-node={id}]")).await?);
        }
        browser.screenshot("editor-from-example").await?;
        let after = tokio::task::block_in_place(|| workflows(&token));

        // Rename edits the description as well.
        browser.open(&format!("{}/workflows", server.url)).await?;
        let id = opened.trim_start_matches("/workflows/").to_string();
        let row = format!("[data-workflow='{id}']");
        click(&c, &format!("{row} [data-testid=rename]")).await?;
        let field = find(&c, "[data-testid=describe-input]").await?;
        field.clear().await.map_err(|e| e.to_string())?;
        field
            .send_keys("My copy, to try the Branch node.")
            .await
            .map_err(|e| e.to_string())?;
        click(&c, "[data-testid=rename-save]").await?;
        // Read in one script: the list is drawn again as it reloads.
        let shown = format!(
            "return document.querySelector(\"{row} [data-testid=workflow-description]\")?.textContent ?? ''"
        );
        wait_until("the new description", || async {
            let text = c.execute(&shown, vec![]).await.map_err(|e| e.to_string())?;
            Ok(text == "My copy, to try the Branch node.")
        })
        .await?;
        let (_, body) = tokio::task::block_in_place(|| {
            http(
                &server.url,
                "GET",
                &format!("/api/v1/workflows/{id}"),
                Some(&token),
                None,
            )
        });
        Ok::<_, String>((
            cards,
            described,
            card_text,
            nodes,
            drawn,
            before,
            after,
            id,
            json(&body),
        ))
    }
    .await;
    let errors = browser.close_after_console_errors().await;
    let (cards, described, card_text, nodes, drawn, before, after, id, saved) =
        outcome.expect("New from example works from the browser");
    assert!(errors.is_empty(), "console errors: {errors:?}");
    assert!(cards >= 8, "{cards} example cards");
    assert_eq!(
        described,
        before.len(),
        "every example workflow shows its description"
    );
    assert!(
        card_text.contains("Branch on an error code")
            && card_text.contains("VALIDATION_ERROR")
            && card_text.contains("New from example"),
        "{card_text}"
    );
    assert_eq!(nodes, 5, "the example's five nodes are drawn");
    assert_eq!(drawn, [1, 1, 1, 1, 1]);
    assert_eq!(after.len(), before.len() + 1);
    let made = after
        .iter()
        .find(|w| w["id"] == id.as_str())
        .expect("the new workflow is listed");
    assert_eq!(made["name"], "Branch on an error code");
    assert_eq!(saved["name"], "Branch on an error code");
    assert_eq!(saved["description"], "My copy, to try the Branch node.");
    assert_eq!(
        saved["workflow"]["description"],
        "My copy, to try the Branch node."
    );
}
