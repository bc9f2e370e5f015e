//! In-process API tests: the router is called without a socket.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use glassbox_server::{app, AppState, Config, Store};
use http_body_util::BodyExt;
use tower::ServiceExt;

async fn state(static_dir: Option<std::path::PathBuf>) -> (AppState, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = Config::default_database_url(dir.path());
    let db = Store::open(&url).await.expect("sqlite opens");
    let config = Config {
        bind: [127, 0, 0, 1].into(),
        port: 0,
        data_dir: dir.path().to_path_buf(),
        database_url: url,
        static_dir,
        max_output_bytes: glassbox_server::config::DEFAULT_MAX_OUTPUT_BYTES,
        secret_key: None,
        traces_url: glassbox_server::config::DEFAULT_TRACES_URL.into(),
    };
    (AppState::new(db, config).expect("state"), dir)
}

/// A GET through the router: status, headers and body.
async fn fetch(state: &AppState, path: &str) -> (StatusCode, axum::http::HeaderMap, String) {
    let res = app(state.clone())
        .oneshot(Request::get(path).body(Body::empty()).expect("request"))
        .await
        .expect("infallible");
    let (parts, body) = res.into_parts();
    let body = body.collect().await.expect("body").to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

/// [`fetch`] with only the content type of the headers.
async fn get(state: &AppState, path: &str) -> (StatusCode, String, String) {
    let (status, headers, body) = fetch(state, path).await;
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (status, content_type, body)
}

#[tokio::test]
async fn health_reports_version_and_database() {
    let (state, _dir) = state(None).await;
    let (status, _, body) = get(&state, "/api/v1/health").await;
    assert_eq!(status, StatusCode::OK);
    let health: node_runtime::wire::Health = serde_json::from_str(&body).expect("health json");
    assert_eq!(health.status, "ok");
    assert_eq!(health.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(health.database, "sqlite");
    assert!(health.schema_version >= 1);
}

#[tokio::test]
async fn unknown_api_route_is_json_404() {
    let (state, _dir) = state(None).await;
    let (status, content_type, body) = get(&state, "/api/v1/nope").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let err: node_runtime::wire::ErrorBody = serde_json::from_str(&body).expect("error json");
    assert_eq!(err.error.code, "NOT_FOUND");
    assert!(err.error.message.contains("/nope"), "{}", err.error.message);
}

#[tokio::test]
async fn root_without_built_app_explains_how_to_build() {
    let (state, dir) = state(Some(std::path::PathBuf::from("/nonexistent/dist"))).await;
    let (status, content_type, body) = get(&state, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(content_type.starts_with("text/html"));
    assert!(body.contains("cargo xtask run"), "{body}");
    drop(dir);
}

#[tokio::test]
async fn built_app_is_served_with_spa_fallback() {
    let dist = tempfile::tempdir().expect("dist");
    std::fs::write(dist.path().join("index.html"), "<html>APP-INDEX</html>").expect("write");
    std::fs::write(dist.path().join("app.js"), "console.log(1)").expect("write");
    let (state, _dir) = state(Some(dist.path().to_path_buf())).await;

    let (status, _, body) = get(&state, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("APP-INDEX"));

    let (status, content_type, body) = get(&state, "/app.js").await;
    assert_eq!(status, StatusCode::OK);
    let (_, headers, _) = fetch(&state, "/app.js").await;
    assert_eq!(
        headers["cache-control"], "no-cache",
        "revalidated on every use"
    );
    assert!(content_type.contains("javascript"), "{content_type}");
    assert_eq!(body, "console.log(1)");

    // A client-side route gets index.html so the app's router can take over.
    let (status, _, body) = get(&state, "/workflows/abc").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("APP-INDEX"));

    // A file that is not there is a 404, not the app's page.
    let (status, _, body) = get(&state, "/split_editor_page.wasm").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(!body.contains("APP-INDEX"));

    // The API is never shadowed by the app.
    let (status, _, _) = get(&state, "/api/v1/workflows-that-do-not-exist").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// JSON answers are gzipped for a client that accepts it (browsers do),
/// and sent as they are to one that does not.
#[tokio::test]
async fn api_answers_are_gzipped_when_accepted() {
    let (state, _dir) = state(None).await;
    let request = |accept: Option<&str>| {
        let mut r = Request::get("/api/v1/health");
        if let Some(a) = accept {
            r = r.header("accept-encoding", a);
        }
        r.body(Body::empty()).expect("request")
    };
    let res = app(state.clone())
        .oneshot(request(Some("gzip, deflate, br")))
        .await
        .expect("infallible");
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-encoding"], "gzip");
    let body = res.into_body().collect().await.expect("body").to_bytes();
    assert_eq!(&body[..2], &[0x1f, 0x8b], "a gzip stream");

    let res = app(state).oneshot(request(None)).await.expect("infallible");
    assert!(res.headers().get("content-encoding").is_none());
    let body = res.into_body().collect().await.expect("body").to_bytes();
    let health: node_runtime::wire::Health = serde_json::from_slice(&body).expect("plain json");
    assert_eq!(health.status, "ok");
}
