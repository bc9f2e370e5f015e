//! The colour theme in real Chromium: light by default (a headless browser
//! prefers light), dark from the navigation's toggle, kept across pages and
//! reloads; the controls are styled by the design tokens, not left at the
//! browser's defaults. Screenshots of the editor, runs, tools and settings
//! pages at 1280x800 in both themes are kept as test artifacts.

use glassbox_tests::harness::{app_and_browser, Browser, Server};
use glassbox_tests::ui::{add_node, appear, click, create_workflow, text_or_empty, wait_until};

/// The page's background colour as the browser computed it, `rgb(r, g, b)`.
async fn background(browser: &Browser) -> Result<(u32, u32, u32), String> {
    let v = browser
        .client
        .execute(
            "return getComputedStyle(document.documentElement).backgroundColor",
            vec![],
        )
        .await
        .map_err(|e| e.to_string())?;
    let text = v.as_str().unwrap_or_default().to_string();
    let parts: Vec<u32> = text
        .trim_start_matches("rgb(")
        .trim_end_matches(')')
        .split(',')
        .filter_map(|p| p.trim().parse().ok())
        .collect();
    match parts[..] {
        [r, g, b] => Ok((r, g, b)),
        _ => Err(format!("not an rgb colour: {text}")),
    }
}

/// Screenshots the four main pages as `<page>-<theme>.png`.
async fn shots(
    browser: &Browser,
    server: &Server,
    workflow: &str,
    theme: &str,
) -> Result<(), String> {
    let c = &browser.client;
    browser
        .open(&format!("{}/workflows/{workflow}", server.url))
        .await?;
    if let Err(e) = appear(c, "[data-node]").await {
        let url = c.current_url().await.map_err(|e| e.to_string())?;
        let text = text_or_empty(c, "main").await?;
        return Err(format!("{e} at {url}: {text}"));
    }
    browser.screenshot(&format!("editor-{theme}")).await?;
    for (page, ready) in [
        ("runs", "[data-testid=runs]"),
        ("tools", "[data-testid=registry-tab]"),
        ("settings", "[data-testid=settings]"),
    ] {
        browser.open(&format!("{}/{page}", server.url)).await?;
        appear(c, ready).await?;
        browser.screenshot(&format!("{page}-{theme}")).await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_theme_toggle_turns_every_page_dark_and_back() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        browser.sign_in(&server).await?;
        // A workflow with a node, made in the editor.
        create_workflow(&browser, &server, "Themed").await?;
        add_node(&c, "agent").await?;
        click(&c, "[data-testid=save]").await?;
        wait_until("the save", || async {
            Ok(text_or_empty(&c, "[data-testid=editor-status]")
                .await?
                .starts_with("Saved as revision"))
        })
        .await?;
        let url = c.current_url().await.map_err(|e| e.to_string())?;
        let workflow = url.path().rsplit('/').next().unwrap_or_default().to_string();
        browser.open(&format!("{}/workflows", server.url)).await?;
        appear(&c, "[data-testid=theme]").await?;
        let light = background(&browser).await?;
        let radius = c
            .execute(
                "return getComputedStyle(document.querySelector('[data-testid=theme]')).borderTopLeftRadius",
                vec![],
            )
            .await
            .map_err(|e| e.to_string())?;
        shots(&browser, &server, &workflow, "light").await?;

        click(&c, "[data-testid=theme]").await?;
        wait_until("the dark theme", || async {
            Ok(text_or_empty(&c, "[data-testid=theme]").await? == "Theme: dark")
        })
        .await?;
        let dark = background(&browser).await?;
        shots(&browser, &server, &workflow, "dark").await?;
        // Kept across pages and a reload.
        let kept = background(&browser).await?;

        // Back to light, through the toggle's order (dark -> light).
        click(&c, "[data-testid=theme]").await?;
        wait_until("the light theme", || async {
            Ok(text_or_empty(&c, "[data-testid=theme]").await? == "Theme: light")
        })
        .await?;
        let back = background(&browser).await?;
        Ok::<_, String>((light, radius, dark, kept, back))
    }
    .await;
    let errors = browser.close_after_console_errors().await;
    let (light, radius, dark, kept, back) = outcome.expect("the theme toggles");
    assert!(errors.is_empty(), "console errors: {errors:?}");
    let sum = |(r, g, b): (u32, u32, u32)| r + g + b;
    assert!(sum(light) > 600, "light by default: {light:?}");
    assert!(sum(dark) < 150, "dark: {dark:?}");
    assert_eq!(kept, dark, "the choice is kept across pages");
    assert_eq!(back, light);
    assert_ne!(
        radius.as_str(),
        Some("0px"),
        "controls are styled: {radius}"
    );
}
