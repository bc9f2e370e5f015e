//! The Agent panel with a real provider, in real Chromium against the real
//! server: a secret set on the settings page, an Agent node added and
//! configured from its panel (provider, preset, base URL of a loopback
//! mock of OpenAI that requires the key, streaming), "Test connection"
//! answering ok and then naming a missing secret, and a run whose model
//! usage and cost show in the timeline.

use std::time::Duration;

use glassbox_tests::harness::{app_and_browser_with, wait_for_text};
use glassbox_tests::mock_provider::{Api, MockProvider};
use glassbox_tests::ui::{
    add_node, appear, attr_or_none, click, create_workflow, save_secret, text_or_empty,
    type_and_leave, wait_until,
};

const KEY: &str = "sk-browser-5c1d";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_configured_in_its_panel_tests_its_connection_and_runs_on_the_provider() {
    let env = [("GLASSBOX_HTTP_ALLOW_HOSTS", "127.0.0.1")];
    let Some((server, browser)) = app_and_browser_with(&env).await else {
        return;
    };
    let mock = MockProvider::start(Api::OpenAi, KEY);
    let c = browser.client.clone();
    let outcome = async {
        // The key, as a workspace secret, from the settings page.
        browser.sign_in(&server).await?;
        browser.open(&format!("{}/settings", server.url)).await?;
        save_secret(&c, "workspace", "OPENAI_API_KEY", KEY).await?;

        create_workflow(&browser, &server, "Real model").await?;
        let agent = add_node(&c, "agent").await?;
        click(&c, &format!("[data-node={agent}] .node-label")).await?;
        click(&c, "[data-setting=provider] option[value=openai]").await?;
        click(&c, "[data-setting=preset] option[value=ollama]").await?;
        wait_until("the preset filled in", || async {
            Ok(glassbox_tests::ui::value_of(&c, "[data-setting=model]").await? == "llama3.1")
        })
        .await?;
        click(&c, "[data-setting=preset] option[value=openai]").await?;
        wait_until("the OpenAI preset", || async {
            Ok(
                glassbox_tests::ui::value_of(&c, "[data-setting=api_key_secret]").await?
                    == "OPENAI_API_KEY",
            )
        })
        .await?;
        type_and_leave(&c, "[data-setting=base_url]", &mock.base_url()).await?;
        click(&c, "[data-setting=stream]").await?;
        click(
            &c,
            "[data-tool='calculator@1.0.0'] [data-testid=tool-enable]",
        )
        .await?;

        click(&c, "[data-testid=test-connection]").await?;
        appear(&c, "[data-testid=provider-test]").await?;
        let ok = attr_or_none(&c, "[data-testid=provider-test]", "data-ok").await?;
        let ok_text = text_or_empty(&c, "[data-testid=provider-test]").await?;

        // A secret nobody set: the test says so, and no call is made.
        type_and_leave(&c, "[data-setting=api_key_secret]", "NOT_SET_KEY").await?;
        click(&c, "[data-testid=test-connection]").await?;
        appear(&c, "[data-testid=provider-test][data-ok=false]").await?;
        let missing = text_or_empty(&c, "[data-testid=provider-test]").await?;
        let calls_after_tests = mock.seen().len();
        type_and_leave(&c, "[data-setting=api_key_secret]", "OPENAI_API_KEY").await?;

        // A run uses the saved revision.
        click(&c, "[data-testid=save]").await?;
        wait_until("the save", || async {
            Ok(text_or_empty(&c, "[data-testid=editor-status]")
                .await?
                .starts_with("Saved as revision"))
        })
        .await?;
        click(&c, "[data-testid=run]").await?;
        wait_until("the run to succeed", || async {
            Ok(text_or_empty(&c, "[data-testid=live-run-state]").await? == "succeeded")
        })
        .await?;
        let usage = wait_for_text(&c, "[data-testid=model-usage]", Duration::from_secs(10)).await?;
        browser.screenshot("agent-real-provider").await?;
        Ok::<_, String>((ok, ok_text, missing, calls_after_tests, usage))
    }
    .await;
    let errors = browser.close_after_console_errors().await;
    let (ok, ok_text, missing, calls_after_tests, usage) = outcome.expect("the agent panel works");
    assert!(errors.is_empty(), "console errors: {errors:?}");
    assert_eq!(ok.as_deref(), Some("true"), "{ok_text}");
    assert!(ok_text.contains("gpt-4o-mini answered in"), "{ok_text}");
    assert!(
        missing.contains("AUTH_REQUIRED") && missing.contains("NOT_SET_KEY"),
        "{missing}"
    );
    assert_eq!(calls_after_tests, 1, "the failed test made no call");
    let seen = mock.seen();
    assert_eq!(seen.len(), 3, "one test call, then the run's two calls");
    assert!(seen.iter().all(|r| r.authorized));
    assert!(
        seen[1..].iter().all(|r| r.body["stream"] == true),
        "streaming was on"
    );
    assert!(usage.contains("2 model calls"), "{usage}");
    assert!(
        usage.contains("cost 0.0000"),
        "priced at gpt-4o-mini's list price: {usage}"
    );
}
