//! Long-lived API tokens: created once with their value, listed without
//! it, usable as a bearer token, revocable, and private to their user.

mod common;

use axum::http::StatusCode;
use common::request;
use serde_json::{json, Value};

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or(Value::Null)
}

#[tokio::test]
async fn api_tokens_are_shown_once_work_and_can_be_revoked() {
    let env = common::TwoWorkspaces::new(glassbox_server::config::DEFAULT_MAX_OUTPUT_BYTES).await;
    let (state, admin) = (&env.state, env.admin_token.as_str());

    let (s, _, body) = request(
        state,
        "POST",
        "/api/v1/tokens",
        admin,
        Some(json!({"name": "ci job", "expires_in_days": 30})),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
    let created = parse(&body);
    let token = created["token"].as_str().expect("token shown").to_string();
    let id = created["id"].as_str().expect("id").to_string();
    assert_eq!(created["name"], "ci job");
    assert!(created["expires_at"].is_string());

    // The token works as a bearer token, in the creator's workspace.
    let (s, _, _) = request(state, "GET", "/api/v1/workflows", &token, None).await;
    assert_eq!(s, StatusCode::OK);

    // A token cannot make one that outlives it: 30 days make at most 30.
    let (s, _, body) = request(
        state,
        "POST",
        "/api/v1/tokens",
        &token,
        Some(json!({"name": "longer", "expires_in_days": 3650})),
    )
    .await;
    assert_eq!(
        s,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(parse(&body)["error"]["details"]["path"], "expires_in_days");
    let (s, _, body) = request(
        state,
        "POST",
        "/api/v1/tokens",
        &token,
        Some(json!({"name": "shorter", "expires_in_days": 29})),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
    let shorter = parse(&body)["id"].as_str().expect("id").to_string();
    let (s, _, _) = request(
        state,
        "DELETE",
        &format!("/api/v1/tokens/{shorter}"),
        admin,
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NO_CONTENT);

    // Listed without its value; invisible to another user.
    let (_, _, body) = request(state, "GET", "/api/v1/tokens", admin, None).await;
    let text = String::from_utf8_lossy(&body).into_owned();
    assert!(!text.contains(&token), "the listing never holds the token");
    assert_eq!(parse(&body)["tokens"][0]["id"], id.as_str());
    let (_, _, body) = request(state, "GET", "/api/v1/tokens", common::BOB_TOKEN, None).await;
    assert_eq!(parse(&body)["tokens"], json!([]));
    let (s, _, _) = request(
        state,
        "DELETE",
        &format!("/api/v1/tokens/{id}"),
        common::BOB_TOKEN,
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "bob cannot revoke admin's token");

    // Bad input names its field.
    for (body, path) in [
        (json!({"name": "  "}), "name"),
        (
            json!({"name": "x", "expires_in_days": 0}),
            "expires_in_days",
        ),
        (
            json!({"name": "x", "expires_in_days": 99999}),
            "expires_in_days",
        ),
    ] {
        let (s, _, out) = request(state, "POST", "/api/v1/tokens", admin, Some(body)).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(parse(&out)["error"]["details"]["path"], path);
    }
    let (s, _, _) = request(
        state,
        "POST",
        "/api/v1/tokens",
        admin,
        Some(json!({"name": "x", "scope": "all"})),
    )
    .await;
    assert!(s.is_client_error(), "unknown fields are refused: {s}");

    // Revoked: the token stops working at once.
    let (s, _, _) = request(
        state,
        "DELETE",
        &format!("/api/v1/tokens/{id}"),
        admin,
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (s, _, _) = request(state, "GET", "/api/v1/workflows", &token, None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _, _) = request(
        state,
        "DELETE",
        &format!("/api/v1/tokens/{id}"),
        admin,
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn sessions_are_listed_and_any_of_them_can_be_ended() {
    let env = common::TwoWorkspaces::new(glassbox_server::config::DEFAULT_MAX_OUTPUT_BYTES).await;
    let (state, admin) = (&env.state, env.admin_token.as_str());
    // A second sign-in of the same user (another browser).
    let signin = glassbox_server::auth::bootstrap(&env.db)
        .await
        .expect("link");
    let (laptop, _) = glassbox_server::auth::exchange(&env.db, &signin)
        .await
        .expect("session");

    let (s, _, body) = request(state, "GET", "/api/v1/auth/sessions", admin, None).await;
    assert_eq!(s, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let sessions = parse(&body)["sessions"].as_array().cloned().expect("list");
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert_eq!(
        sessions.iter().filter(|s| s["current"] == true).count(),
        1,
        "exactly the asking session is current: {sessions:?}"
    );
    assert!(
        !String::from_utf8_lossy(&body).contains(&laptop),
        "a session token is never shown again"
    );
    let other = sessions
        .iter()
        .find(|s| s["current"] == false)
        .and_then(|s| s["id"].as_str())
        .expect("other id")
        .to_string();

    // Another user cannot see or end it.
    let (s, _, body) = request(
        state,
        "GET",
        "/api/v1/auth/sessions",
        common::BOB_TOKEN,
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(parse(&body)["sessions"].as_array().map(Vec::len), Some(1));
    let (s, _, body) = request(
        state,
        "DELETE",
        &format!("/api/v1/auth/sessions/{other}"),
        common::BOB_TOKEN,
        None,
    )
    .await;
    assert_eq!(
        s,
        StatusCode::NOT_FOUND,
        "{}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(parse(&body)["error"]["code"], "NOT_FOUND");

    // The owner ends it: that token stops working at once, theirs does not.
    let (s, _, _) = request(state, "GET", "/api/v1/workflows", &laptop, None).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _, body) = request(
        state,
        "DELETE",
        &format!("/api/v1/auth/sessions/{other}"),
        admin,
        None,
    )
    .await;
    assert_eq!(
        s,
        StatusCode::NO_CONTENT,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let (s, _, _) = request(state, "GET", "/api/v1/workflows", &laptop, None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _, _) = request(state, "GET", "/api/v1/workflows", admin, None).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _, _) = request(
        state,
        "DELETE",
        &format!("/api/v1/auth/sessions/{other}"),
        admin,
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "an ended session is gone");
}
