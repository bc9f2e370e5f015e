//! Browser test: the app loads in real Chromium from a real `glassbox serve`
//! and shows data it fetched from the API.

use std::time::Duration;

use glassbox_tests::harness::{app_and_browser, wait_for_text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn home_page_shows_server_version_from_api() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };

    let outcome = async {
        browser.open(&format!("{}/", server.url)).await?;
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
        // Signed out, a page says how to sign in, in plain words.
        browser.open(&format!("{}/workflows", server.url)).await?;
        let signed_out =
            wait_for_text(&browser.client, "[role=alert]", Duration::from_secs(10)).await?;
        Ok::<_, String>((version, database, shot, signed_out))
    }
    .await;
    browser.close().await;

    let (version, database, shot, signed_out) = outcome.expect("page renders API data");
    assert!(
        signed_out.starts_with("You are not signed in. Open the sign-in link")
            && !signed_out.contains("Bearer"),
        "{signed_out}"
    );
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
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let outcome = async {
        browser
            .open(&format!("{}/no/such/page", server.url))
            .await?;
        wait_for_text(&browser.client, "main h1", Duration::from_secs(30)).await
    }
    .await;
    browser.close().await;
    assert_eq!(outcome.expect("fallback renders").trim(), "Page not found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_printed_sign_in_link_signs_in_once() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let outcome = async {
        browser.open(&server.signin_url).await?;
        let ok = wait_for_text(
            &browser.client,
            "[data-testid=signin-ok]",
            Duration::from_secs(30),
        )
        .await?;
        browser.screenshot("signin").await?;
        // The same link a second time: refused, in words.
        browser.open(&server.signin_url).await?;
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
