//! Settings -> Connections in real Chromium against the real server: add
//! an HTTP connection (its secret set on the same page) and a SQLite one
//! from the form, test both from their rows, see names and kinds only (the
//! secret's value never reaches the page), and remove one.

use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use glassbox_tests::harness::app_and_browser;
use glassbox_tests::ui::{
    appear, click, count, find, save_secret, text_or_empty, type_and_leave, wait_until,
};

const VALUE: &str = "tok-browser-8d2f";

/// A loopback API answering 200 and recording whether it saw the token.
fn api() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().map_while(Result::ok) {
            let mut buf = [0u8; 4096];
            let n = std::io::Read::read(&mut stream, &mut buf).unwrap_or(0);
            s.lock()
                .expect("lock")
                .push(String::from_utf8_lossy(&buf[..n]).into_owned());
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    (port, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_added_tested_and_removed_from_settings() {
    let Some((server, browser)) = app_and_browser().await else {
        return;
    };
    let (port, seen) = api();
    let files = server.data_dir.path().join("files").join("default");
    std::fs::create_dir_all(&files).expect("files dir");
    std::fs::write(files.join("empty.db"), b"").expect("an empty SQLite file");
    let c = browser.client.clone();
    let outcome = async {
        browser.sign_in(&server).await?;
        browser.open(&format!("{}/settings", server.url)).await?;
        save_secret(&c, "workspace", "API_TOKEN", VALUE).await?;

        appear(&c, "[data-testid=connection-form]").await?;
        type_and_leave(&c, "[data-connection-field=name]", "api").await?;
        type_and_leave(
            &c,
            "[data-connection-field=base_url]",
            &format!("http://127.0.0.1:{port}/"),
        )
        .await?;
        type_and_leave(&c, "[data-connection-field=secret]", "API_TOKEN").await?;
        click(&c, "[data-testid=connection-add]").await?;
        appear(&c, "[data-connection=api]").await?;

        type_and_leave(&c, "[data-connection-field=name]", "files").await?;
        click(&c, "[data-connection-field=kind] option[value=sqlite]").await?;
        type_and_leave(&c, "[data-connection-field=path]", "empty.db").await?;
        click(&c, "[data-testid=connection-add]").await?;
        appear(&c, "[data-connection=files]").await?;

        click(&c, "[data-connection=api] [data-testid=connection-test]").await?;
        appear(&c, "[data-connection=api] [data-testid=connection-result]").await?;
        let api_result =
            text_or_empty(&c, "[data-connection=api] [data-testid=connection-result]").await?;
        let api_ok = find(&c, "[data-connection=api] [data-testid=connection-result]")
            .await?
            .attr("data-ok")
            .await
            .map_err(|e| e.to_string())?;
        click(&c, "[data-connection=files] [data-testid=connection-test]").await?;
        appear(
            &c,
            "[data-connection=files] [data-testid=connection-result]",
        )
        .await?;
        let files_result = text_or_empty(
            &c,
            "[data-connection=files] [data-testid=connection-result]",
        )
        .await?;
        let page = c.source().await.map_err(|e| e.to_string())?;

        click(
            &c,
            "[data-connection=files] [data-testid=connection-delete]",
        )
        .await?;
        wait_until("the removal", || async {
            Ok(count(&c, "[data-connection]").await? == 1)
        })
        .await?;
        browser.screenshot("settings-connections").await?;
        Ok::<_, String>((api_result, api_ok, files_result, page))
    }
    .await;
    let errors = browser.close_after_console_errors().await;
    let (api_result, api_ok, files_result, page) = outcome.expect("the connections settings work");
    assert!(errors.is_empty(), "console errors: {errors:?}");
    assert_eq!(api_ok.as_deref(), Some("true"), "{api_result}");
    assert!(api_result.contains("answered 200"), "{api_result}");
    assert!(files_result.contains("SELECT 1"), "{files_result}");
    assert!(
        !page.contains(VALUE),
        "the secret's value is never on the page"
    );
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].contains(&format!("Bearer {VALUE}")),
        "the test call carried the token: {}",
        seen[0]
    );
}
