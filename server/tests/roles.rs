//! Issue 34: every route of the API, walked with each role. The role a
//! route takes is read from the served OpenAPI document (`x-required-role`);
//! a weaker role gets 403 with the error shape, its own role and stronger
//! ones get past the guard (whatever the handler then says of the empty
//! body and made-up ids), no token gets 401, and public routes need none.

mod common;

use axum::http::StatusCode;
use common::{request, TwoWorkspaces};
use node_runtime::wire::Role;
use serde_json::{json, Value};

#[tokio::test]
async fn every_route_refuses_a_weaker_role_and_admits_its_own() {
    let ws = TwoWorkspaces::new(64 * 1024).await;
    let tokens = [
        (Role::Viewer, ws.member("vera", "viewer").await),
        (Role::Editor, ws.member("eddie", "editor").await),
        (Role::Admin, ws.admin_token.clone()),
    ];
    let (status, _, body) = request(&ws.state, "GET", "/api/v1/openapi.json", "", None).await;
    assert_eq!(status, StatusCode::OK);
    let spec: Value = serde_json::from_slice(&body).expect("openapi json");

    let mut operations = Vec::new();
    for (path, item) in spec["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("path item") {
            let Some(role) = operation["x-required-role"].as_str() else {
                continue;
            };
            operations.push((method.to_uppercase(), path.clone(), role.to_string()));
        }
    }
    // Signing out ends the token it is sent with: walk it last.
    operations.sort_by_key(|(_, path, _)| path == "/auth/logout");
    let stated = spec["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| item.as_object().unwrap().len())
        .sum::<usize>();
    assert_eq!(operations.len(), stated, "every operation states its role");
    assert!(operations.len() >= 70, "{} routes", operations.len());

    let mut refused = std::collections::BTreeMap::<Role, usize>::new();
    for (method, path, needed) in &operations {
        // Made-up ids: the guard decides before any lookup.
        let concrete = path
            .split('/')
            .map(|part| if part.starts_with('{') { "nope" } else { part })
            .collect::<Vec<_>>()
            .join("/");
        let url = format!("/api/v1{concrete}");
        let body = matches!(method.as_str(), "POST" | "PUT" | "PATCH").then(|| json!({}));
        let (status, _, _) = request(&ws.state, method, &url, "", body.clone()).await;
        if needed == "public" {
            assert_ne!(
                status,
                StatusCode::UNAUTHORIZED,
                "{method} {path} is public"
            );
            continue;
        }
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{method} {path} without a token"
        );
        let needed = Role::parse(needed).expect("a role");
        for (role, token) in &tokens {
            let (status, _, answer) = request(&ws.state, method, &url, token, body.clone()).await;
            let answer: Value = serde_json::from_slice(&answer).unwrap_or(Value::Null);
            if role.allows(needed) {
                assert_ne!(
                    status,
                    StatusCode::FORBIDDEN,
                    "{method} {path} takes {needed}, so a {role} passes: {answer}"
                );
            } else {
                assert_eq!(
                    status,
                    StatusCode::FORBIDDEN,
                    "{method} {path} takes {needed}: a {role} is refused"
                );
                assert_eq!(answer["error"]["code"], "FORBIDDEN", "{answer}");
                let message = answer["error"]["message"].as_str().unwrap_or_default();
                assert!(
                    message.contains(&format!("takes the {needed} role")),
                    "{message}"
                );
                *refused.entry(*role).or_default() += 1;
            }
        }
    }
    // Viewers are refused every write; editors only the admin's routes.
    assert!(
        refused[&Role::Viewer] > refused[&Role::Editor],
        "{refused:?}"
    );
    assert!(refused[&Role::Editor] >= 10, "{refused:?}");
    assert!(!refused.contains_key(&Role::Admin));
}

/// A viewer reads the count of secrets but no name; an editor reads names.
#[tokio::test]
async fn a_viewer_sees_how_many_secrets_not_their_names() {
    let ws = TwoWorkspaces::new(64 * 1024).await;
    let viewer = ws.member("vera", "viewer").await;
    let (status, _, _) = request(
        &ws.state,
        "PUT",
        "/api/v1/secrets/workspace/API_KEY",
        &ws.admin_token,
        Some(json!({"value": "s3cret-value-long-enough"})),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, _, body) = request(&ws.state, "GET", "/api/v1/secrets", &viewer, None).await;
    let list: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(list["total"], 1, "{list}");
    assert_eq!(list["secrets"], json!([]), "{list}");
    let (_, _, body) = request(&ws.state, "GET", "/api/v1/secrets", &ws.admin_token, None).await;
    let list: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(list["secrets"][0]["name"], "API_KEY", "{list}");

    // Who set it is in the audit log, which only admins read.
    let (status, _, _) = request(&ws.state, "GET", "/api/v1/audit", &viewer, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, body) = request(&ws.state, "GET", "/api/v1/audit", &ws.admin_token, None).await;
    assert_eq!(status, StatusCode::OK);
    let log: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(log["events"][0]["action"], "secret.set", "{log}");
    assert_eq!(log["events"][0]["target"], "workspace/API_KEY", "{log}");
    assert_eq!(log["events"][0]["actor_id"], ws.admin_user, "{log}");
}

/// A viewer cannot decide an approval; an editor can; the audit log names
/// who started the run and who decided, and pages newest first.
#[tokio::test]
async fn the_audit_log_names_who_started_and_who_decided() {
    let ws = TwoWorkspaces::new(64 * 1024).await;
    let viewer = ws.member("vera", "viewer").await;
    let editor = ws.member("eddie", "editor").await;
    let run_id = common::start_run(&ws.state, &ws.admin_token, common::approval_workflow()).await;
    let mut token = None;
    for _ in 0..300 {
        let (_, _, body) = request(&ws.state, "GET", "/api/v1/approvals", &viewer, None).await;
        let pending: Value = serde_json::from_slice(&body).unwrap();
        if let Some(t) = pending["pending"][0]["token"].as_str() {
            token = Some(t.to_string());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let token = token.expect("the run waits for an approval");
    let approve = format!("/api/v1/approvals/{token}/approve");
    let (status, _, body) = request(&ws.state, "POST", &approve, &viewer, None).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let (status, _, body) = request(&ws.state, "POST", &approve, &editor, None).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));

    let (_, _, body) = request(
        &ws.state,
        "GET",
        "/api/v1/audit?limit=1",
        &ws.admin_token,
        None,
    )
    .await;
    let first: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(first["events"][0]["action"], "approval.decided", "{first}");
    assert_eq!(first["events"][0]["actor_id"], "eddie", "{first}");
    assert_eq!(first["events"][0]["actor_name"], "eddie", "{first}");
    assert_eq!(
        first["events"][0]["detail"]["decision"], "approved",
        "{first}"
    );
    assert_eq!(first["events"][0]["detail"]["run_id"], run_id, "{first}");
    let next = first["next"].as_str().expect("a second page");
    let (_, _, body) = request(
        &ws.state,
        "GET",
        &format!("/api/v1/audit?limit=1&before={next}"),
        &ws.admin_token,
        None,
    )
    .await;
    let second: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(second["events"][0]["action"], "run.started", "{second}");
    assert_eq!(second["events"][0]["target"], run_id, "{second}");
    assert_eq!(second["events"][0]["actor_id"], ws.admin_user, "{second}");
    assert_eq!(second["next"], Value::Null, "{second}");
    let (status, _, body) = request(
        &ws.state,
        "GET",
        "/api/v1/audit?limit=0",
        &ws.admin_token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let error: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error["error"]["details"]["path"], "limit", "{error}");
}
