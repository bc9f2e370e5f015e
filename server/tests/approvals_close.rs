//! A run that ends closes its pending approvals: a cancelled run's write
//! leaves `GET /approvals`, and deciding it answers 409.

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use common::{request, start_run, TwoWorkspaces};
use serde_json::Value;

fn json(body: &[u8]) -> Value {
    serde_json::from_slice(body).expect("json")
}

#[tokio::test]
async fn a_cancelled_runs_approval_is_closed_and_cannot_be_decided() {
    let w = TwoWorkspaces::new(1 << 20).await;
    let t = w.admin_token.as_str();
    let run = start_run(&w.state, t, common::approval_workflow()).await;
    let mut token = None;
    for _ in 0..400 {
        let (_, _, body) = request(&w.state, "GET", "/api/v1/approvals", t, None).await;
        token = json(&body)["pending"]
            .as_array()
            .and_then(|a| a.iter().find(|p| p["run_id"] == run.as_str()))
            .and_then(|p| p["token"].as_str().map(str::to_string));
        if token.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let token = token.expect("the write waits for approval");

    let (s, _, body) = request(
        &w.state,
        "POST",
        &format!("/api/v1/runs/{run}/cancel"),
        t,
        None,
    )
    .await;
    assert!(s.is_success(), "{}", String::from_utf8_lossy(&body));
    let mut status = Value::Null;
    for _ in 0..400 {
        let (_, _, body) = request(&w.state, "GET", &format!("/api/v1/runs/{run}"), t, None).await;
        status = json(&body)["status"].clone();
        if status == "cancelled" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(status, "cancelled");

    let (_, _, body) = request(&w.state, "GET", "/api/v1/approvals", t, None).await;
    assert_eq!(
        json(&body)["pending"],
        serde_json::json!([]),
        "nothing pending"
    );
    let (s, _, body) = request(
        &w.state,
        "POST",
        &format!("/api/v1/approvals/{token}/approve"),
        t,
        None,
    )
    .await;
    assert_eq!(
        s,
        StatusCode::CONFLICT,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let e = json(&body);
    assert_eq!(e["error"]["details"]["status"], "closed", "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("ended")),
        "{e}"
    );
}
