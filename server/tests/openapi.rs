//! `/api/v1/openapi.json` is built from the registered routes (utoipa-axum);
//! this test keeps it honest: every documented operation is answered by its
//! route (never the API's "no route" fallback, never 405), and the set of
//! documented operations is exactly the set the server serves.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use glassbox_server::auth::{bootstrap, exchange};
use glassbox_server::{app, AppState, Config, Store};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

const EXPECTED: &[(&str, &str)] = &[
    ("get", "/health"),
    ("post", "/auth/exchange"),
    ("post", "/auth/logout"),
    ("get", "/auth/sessions"),
    ("delete", "/auth/sessions/{id}"),
    ("get", "/workflows"),
    ("post", "/workflows"),
    ("post", "/workflows/validate"),
    ("post", "/workflows/template-variables"),
    ("get", "/workflows/{id}"),
    ("put", "/workflows/{id}"),
    ("delete", "/workflows/{id}"),
    ("get", "/workflows/{id}/revisions"),
    ("post", "/workflows/{id}/validate"),
    ("get", "/examples"),
    ("post", "/examples/{id}/workflows"),
    ("get", "/tools"),
    ("get", "/invocations"),
    ("get", "/invocations/{id}"),
    ("get", "/runs"),
    ("post", "/runs"),
    ("post", "/providers/test"),
    ("get", "/connections"),
    ("post", "/connections"),
    ("put", "/connections/{name}"),
    ("delete", "/connections/{name}"),
    ("post", "/connections/{name}/test"),
    ("post", "/connections/{name}/refresh"),
    ("put", "/connections/{name}/tools/{tool}"),
    ("get", "/runs/{id}"),
    ("post", "/runs/{id}/cancel"),
    ("get", "/runs/{id}/events"),
    ("get", "/runs/{id}/bundle"),
    ("get", "/runs/{id}/trace"),
    ("post", "/runs/{id}/replay"),
    ("post", "/replays"),
    ("post", "/runs/{id}/fork"),
    ("get", "/runs/{id}/diff/{other}"),
    ("post", "/suites"),
    ("get", "/suites"),
    ("get", "/suites/{id}"),
    ("put", "/suites/{id}"),
    ("delete", "/suites/{id}"),
    ("post", "/suites/{id}/cases"),
    ("post", "/suites/{id}/runs"),
    ("get", "/suites/{id}/runs"),
    ("get", "/suite-runs/{id}"),
    ("get", "/approvals"),
    ("post", "/approvals/{token}/approve"),
    ("post", "/approvals/{token}/deny"),
    ("post", "/approvals/{token}/revise"),
    ("get", "/blobs/{hash}"),
    ("get", "/secrets"),
    ("put", "/secrets/{scope}/{name}"),
    ("delete", "/secrets/{scope}/{name}"),
    ("get", "/tokens"),
    ("post", "/tokens"),
    ("delete", "/tokens/{id}"),
    ("get", "/instances"),
    ("get", "/audit"),
    ("get", "/workspaces"),
    ("post", "/workspaces"),
    ("patch", "/workspace"),
    ("get", "/members"),
    ("patch", "/members/{user_id}"),
    ("delete", "/members/{user_id}"),
    ("get", "/invitations"),
    ("post", "/invitations"),
    ("delete", "/invitations/{id}"),
    ("get", "/invite/{token}"),
    ("post", "/invite/{token}/accept"),
];

#[tokio::test]
async fn openapi_document_equals_the_routes() {
    let dir = tempfile::tempdir().expect("tmp");
    let url = Config::default_database_url(dir.path());
    let db = Store::open(&url).await.expect("open");
    let signin = bootstrap(&db).await.expect("bootstrap");
    let (token, _) = exchange(&db, &signin).await.expect("session");
    let config = Config {
        bind: [127, 0, 0, 1].into(),
        port: 0,
        data_dir: dir.path().to_path_buf(),
        database_url: url,
        static_dir: None,
        max_output_bytes: glassbox_server::config::DEFAULT_MAX_OUTPUT_BYTES,
        secret_key: None,
        traces_url: glassbox_server::config::DEFAULT_TRACES_URL.into(),
    };
    let state = AppState::new(db, config).expect("state");

    let res = app(state.clone())
        .oneshot(
            Request::get("/api/v1/openapi.json")
                .body(Body::empty())
                .expect("req"),
        )
        .await
        .expect("infallible");
    assert_eq!(res.status(), StatusCode::OK);
    let doc: Value =
        serde_json::from_slice(&res.into_body().collect().await.expect("body").to_bytes())
            .expect("json");
    assert_eq!(doc["servers"][0]["url"], "/api/v1");
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in ["get", "post", "put", "delete", "patch"] {
            if item.get(method).is_some() {
                documented.push((method.to_string(), path.clone()));
            }
        }
    }
    documented.sort();
    let mut expected: Vec<(String, String)> = EXPECTED
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    expected.sort();
    assert_eq!(
        documented, expected,
        "the document lists exactly the served operations"
    );

    for (method, path) in &documented {
        let concrete = path
            .replace("{id}", "no-such-id")
            .replace("{token}", "no-such-token");
        let req = Request::builder()
            .method(method.to_uppercase().as_str())
            .uri(format!("/api/v1{concrete}"))
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .body(Body::from("{}"))
            .expect("req");
        let res = app(state.clone()).oneshot(req).await.expect("infallible");
        let status = res.status();
        let body =
            String::from_utf8_lossy(&res.into_body().collect().await.expect("body").to_bytes())
                .to_string();
        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        assert!(
            !body.contains("no API route"),
            "{method} {path} is documented but not routed: {body}"
        );
        assert!(
            status != StatusCode::INTERNAL_SERVER_ERROR,
            "{method} {path}: {body}"
        );
    }
}
