//! A truncated output's blob downloads intact for its workspace and is 404
//! for another.

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use common::request as call;
use serde_json::Value;

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or(Value::Null)
}

#[tokio::test]
async fn truncated_output_blob_is_served_to_its_workspace_only() {
    let env = common::TwoWorkspaces::new(1024).await;
    let (state, token) = (env.state.clone(), env.admin_token.clone());

    let workflow = common::big_output_workflow();
    let run_id = common::start_run(&state, &token, workflow).await;
    let mut run = Value::Null;
    for _ in 0..200 {
        let (_, _, body) = call(
            &state,
            "GET",
            &format!("/api/v1/runs/{run_id}"),
            &token,
            None,
        )
        .await;
        run = parse(&body);
        if run["status"] == "succeeded" || run["status"] == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(run["status"], "succeeded", "{run}");
    let envelope = &run["nodes"]["big"]["outputs"]["envelope"];
    assert_eq!(envelope["truncated"], true, "{envelope}");
    let attachment = &envelope["attachments"][0];
    assert_eq!(attachment["kind"], "blob");
    let blob_url = attachment["url"].as_str().expect("url").to_string();
    let hash = blob_url.rsplit('/').next().expect("hash").to_string();

    let (s, content_type, bytes) = call(&state, "GET", &blob_url, &token, None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(content_type.as_deref(), Some("application/json"));
    assert_eq!(blake3::hash(&bytes).to_hex().to_string(), hash, "intact");
    let full = parse(&bytes);
    assert_eq!(full["results"][0].as_array().map(Vec::len), Some(1500));
    assert_eq!(attachment["bytes"], bytes.len());

    let (s, _, body) = call(&state, "GET", &blob_url, common::BOB_TOKEN, None).await;
    assert_eq!(
        s,
        StatusCode::NOT_FOUND,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let (s, _, _) = call(
        &state,
        "GET",
        "/api/v1/blobs/..%2F..%2Fetc%2Fpasswd",
        &token,
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}
