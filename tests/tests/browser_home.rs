//! Browser test: the app loads in real Chromium from a real `glassbox serve`
//! and shows data it fetched from the API.

use std::time::Duration;

use glassbox_tests::harness::{
    browser_tests_enabled, built_app_dir, wait_for_text, Browser, Server,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn home_page_shows_server_version_from_api() {
    if !browser_tests_enabled() {
        return;
    }
    let dist = built_app_dir().expect("built app");
    let server = Server::start(Some(&dist)).expect("server starts");
    let browser = Browser::start().await.expect("browser starts");

    let outcome = async {
        browser
            .client
            .goto(&format!("{}/", server.url))
            .await
            .map_err(|e| format!("goto: {e}"))?;
        let version = wait_for_text(
            &browser.client,
            "[data-testid=server-version]",
            Duration::from_secs(30),
        )
        .await?;
        let database = wait_for_text(
            &browser.client,
            "[data-testid=database]",
            Duration::from_secs(5),
        )
        .await?;
        let shot = browser.screenshot("home").await?;
        Ok::<_, String>((version, database, shot))
    }
    .await;
    browser.close().await;

    let (version, database, shot) = outcome.expect("page renders API data");
    assert_eq!(
        version.trim(),
        env!("CARGO_PKG_VERSION"),
        "version shown is the server's"
    );
    assert_eq!(database.trim(), "sqlite");
    assert!(shot.is_file(), "screenshot saved at {}", shot.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_route_is_served_by_spa_fallback() {
    if !browser_tests_enabled() {
        return;
    }
    let dist = built_app_dir().expect("built app");
    let server = Server::start(Some(&dist)).expect("server starts");
    let browser = Browser::start().await.expect("browser starts");
    let outcome = async {
        browser
            .client
            .goto(&format!("{}/no/such/page", server.url))
            .await
            .map_err(|e| format!("goto: {e}"))?;
        wait_for_text(&browser.client, "main h1", Duration::from_secs(30)).await
    }
    .await;
    browser.close().await;
    assert_eq!(outcome.expect("fallback renders").trim(), "Page not found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_printed_sign_in_link_signs_in_once() {
    if !browser_tests_enabled() {
        return;
    }
    let dist = built_app_dir().expect("built app");
    let server = Server::start(Some(&dist)).expect("server starts");
    let browser = Browser::start().await.expect("browser starts");
    let outcome = async {
        browser
            .client
            .goto(&server.signin_url)
            .await
            .map_err(|e| format!("goto: {e}"))?;
        let ok = wait_for_text(
            &browser.client,
            "[data-testid=signin-ok]",
            Duration::from_secs(30),
        )
        .await?;
        browser.screenshot("signin").await?;
        // The same link a second time: refused, in words.
        browser
            .client
            .goto(&server.signin_url)
            .await
            .map_err(|e| format!("goto: {e}"))?;
        let again = wait_for_text(
            &browser.client,
            "[data-testid=signin-error]",
            Duration::from_secs(30),
        )
        .await?;
        Ok::<_, String>((ok, again))
    }
    .await;
    browser.close().await;
    let (ok, again) = outcome.expect("sign-in page works");
    assert!(ok.contains("admin"), "{ok}");
    assert!(again.contains("already used"), "{again}");
}
