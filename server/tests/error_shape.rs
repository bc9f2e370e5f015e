//! One error shape for every non-2xx answer, the framework's own
//! rejections included: every documented route is asked with a method it
//! does not take (405) and, where it has path parameters, with one that
//! does not decode (`%FF`, 400); each answer is `{"error": {code, message,
//! details}}` as JSON.

mod common;

use common::{request, TwoWorkspaces};
use serde_json::Value;

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "DELETE", "PATCH"];

fn error_shape(
    method: &str,
    path: &str,
    answer: &(axum::http::StatusCode, Option<String>, Vec<u8>),
) -> Value {
    let (status, content_type, body) = answer;
    assert!(
        content_type
            .as_deref()
            .is_some_and(|c| c.starts_with("application/json")),
        "{method} {path}: {status} as {content_type:?}: {}",
        String::from_utf8_lossy(body)
    );
    let v: Value = serde_json::from_slice(body).expect("JSON");
    let e = &v["error"];
    assert!(
        e["code"].is_string() && e["message"].is_string() && e.get("details").is_some(),
        "{method} {path}: {v}"
    );
    e.clone()
}

#[tokio::test]
async fn every_route_answers_wrong_methods_and_undecodable_parameters_in_the_error_shape() {
    let w = TwoWorkspaces::new(1 << 20).await;
    let (_, _, body) = request(
        &w.state,
        "GET",
        "/api/v1/openapi.json",
        &w.admin_token,
        None,
    )
    .await;
    let doc: Value = serde_json::from_slice(&body).expect("document");
    let mut walked = 0;
    for (template, item) in doc["paths"].as_object().expect("paths") {
        let documented: Vec<&str> = METHODS
            .iter()
            .copied()
            .filter(|m| item.get(m.to_lowercase()).is_some())
            .collect();
        let concrete = template
            .split('/')
            .map(|seg| if seg.starts_with('{') { "x" } else { seg })
            .collect::<Vec<_>>()
            .join("/");
        let path = format!("/api/v1{concrete}");
        for method in METHODS.iter().filter(|m| !documented.contains(m)) {
            let answer = request(&w.state, method, &path, &w.admin_token, None).await;
            assert_eq!(answer.0, 405, "{method} {path}");
            let e = error_shape(method, &path, &answer);
            assert_eq!(e["code"], "METHOD_NOT_ALLOWED", "{method} {path}");
            walked += 1;
        }
        if template.contains('{') {
            let bad = template
                .split('/')
                .map(|seg| if seg.starts_with('{') { "%FF" } else { seg })
                .collect::<Vec<_>>()
                .join("/");
            let bad = format!("/api/v1{bad}");
            for method in &documented {
                let answer = request(&w.state, method, &bad, &w.admin_token, None).await;
                assert!(
                    answer.0 == 400 || answer.0 == 404,
                    "{method} {bad}: {}",
                    answer.0
                );
                error_shape(method, &bad, &answer);
                walked += 1;
            }
        }
    }
    assert!(walked > 60, "walked {walked} requests");
}
