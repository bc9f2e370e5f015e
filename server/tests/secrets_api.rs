//! Secrets through the API: values are encrypted at rest, never returned,
//! resolved by the executor's source, and isolated per workspace.

mod common;

use axum::http::StatusCode;
use glassbox_server::secrets::StoreSecrets;
use glassbox_server::{AppState, Config, Store};
use node_runtime::secrets::{SecretOwner, SecretScope, SecretSource};
use serde_json::{json, Value};

const CANARY: &str = "canary-secret-4b1d9e2f";

async fn call(
    state: &AppState,
    method: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (StatusCode, String) {
    let (status, _, bytes) = common::request(state, method, path, token, body).await;
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn forms(secret: &str) -> Vec<String> {
    use std::fmt::Write;
    let hex = secret.bytes().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    });
    vec![secret.to_string(), hex]
}

#[tokio::test]
async fn secrets_are_encrypted_listed_by_name_and_isolated() {
    let env = common::TwoWorkspaces::new(glassbox_server::config::DEFAULT_MAX_OUTPUT_BYTES).await;
    let (state, db, dir, token, user) = (
        env.state.clone(),
        env.db.clone(),
        &env.dir,
        env.admin_token.clone(),
        env.admin_user.clone(),
    );

    let (s, body) = call(
        &state,
        "PUT",
        "/api/v1/secrets/workspace/API_TOKEN",
        &token,
        Some(json!({"value": CANARY})),
    )
    .await;
    assert_eq!(s, StatusCode::NO_CONTENT, "{body}");
    let (s, _) = call(
        &state,
        "PUT",
        "/api/v1/secrets/user/MY_KEY",
        &token,
        Some(json!({"value": "personal"})),
    )
    .await;
    assert_eq!(s, StatusCode::NO_CONTENT);

    let (s, body) = call(&state, "GET", "/api/v1/secrets", &token, None).await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        !body.contains(CANARY) && !body.contains("personal") && !body.contains("\"value\""),
        "{body}"
    );
    let listed: Value = serde_json::from_str(&body).expect("json");
    let names: Vec<(String, String)> = listed["secrets"]
        .as_array()
        .expect("list")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or_default().into(),
                s["scope"].as_str().unwrap_or_default().into(),
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![
            ("API_TOKEN".into(), "workspace".into()),
            ("MY_KEY".into(), "user".into())
        ]
    );

    // The executor's source decrypts it for a call in this workspace only.
    let source = StoreSecrets {
        store: db.clone(),
        cipher: state.cipher().clone(),
    };
    let owner = SecretOwner {
        user_id: Some(user.clone()),
        workspace_id: "default".into(),
        org_id: None,
    };
    let value = source
        .lookup(&owner, SecretScope::Workspace, "API_TOKEN")
        .await
        .expect("resolves");
    assert_eq!(value.expose(), CANARY);
    let other = SecretOwner {
        user_id: Some("bob".into()),
        workspace_id: "other".into(),
        org_id: None,
    };
    assert!(source
        .lookup(&other, SecretScope::Workspace, "API_TOKEN")
        .await
        .is_none());

    // Another workspace sees nothing and cannot delete it.
    let (_, body) = call(&state, "GET", "/api/v1/secrets", common::BOB_TOKEN, None).await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("json")["secrets"],
        json!([])
    );
    let (s, _) = call(
        &state,
        "DELETE",
        "/api/v1/secrets/workspace/API_TOKEN",
        common::BOB_TOKEN,
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // Org secrets: the default workspace is in the default org; "other" is
    // in none until it joins, then it sees (names of) the org's secrets.
    let (s, body) = call(
        &state,
        "PUT",
        "/api/v1/secrets/org/ORG_KEY",
        &token,
        Some(json!({"value": "org-value"})),
    )
    .await;
    assert_eq!(s, StatusCode::NO_CONTENT, "{body}");
    let (_, body) = call(&state, "GET", "/api/v1/secrets", &token, None).await;
    assert!(
        body.contains("\"ORG_KEY\"") && body.contains("\"org\"") && !body.contains("org-value"),
        "{body}"
    );
    let in_org = SecretOwner {
        user_id: None,
        workspace_id: "default".into(),
        org_id: Some("default".into()),
    };
    let value = source
        .lookup(&in_org, SecretScope::Org, "ORG_KEY")
        .await
        .expect("org secret resolves");
    assert_eq!(value.expose(), "org-value");
    let (s, body) = call(
        &state,
        "PUT",
        "/api/v1/secrets/org/X",
        common::BOB_TOKEN,
        Some(json!({"value": "v-123456"})),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("json")["error"]["details"]["path"],
        "scope"
    );
    assert!(source
        .lookup(
            &SecretOwner {
                org_id: Some("another".into()),
                ..other.clone()
            },
            SecretScope::Org,
            "ORG_KEY"
        )
        .await
        .is_none());
    db.set_workspace_org("other", Some("default"))
        .await
        .expect("join");
    let (_, body) = call(&state, "GET", "/api/v1/secrets", common::BOB_TOKEN, None).await;
    assert!(body.contains("\"ORG_KEY\""), "{body}");
    // Changing workspace or org secrets takes the admin role.
    db.ensure_user("carol", "Carol").await.expect("user");
    db.add_membership("default", "carol", "editor")
        .await
        .expect("member");
    db.insert_token(
        &glassbox_server::auth::hash_token("carol-token"),
        "carol",
        "session",
        None,
    )
    .await
    .expect("token");
    for scope in ["workspace", "org"] {
        let (s, body) = call(
            &state,
            "PUT",
            &format!("/api/v1/secrets/{scope}/K"),
            "carol-token",
            Some(json!({"value": "v-123456"})),
        )
        .await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{scope}: {body}");
        assert_eq!(
            serde_json::from_str::<Value>(&body).expect("json")["error"]["code"],
            "FORBIDDEN"
        );
    }
    let (s, _) = call(
        &state,
        "PUT",
        "/api/v1/secrets/user/K",
        "carol-token",
        Some(json!({"value": "v-123456"})),
    )
    .await;
    assert_eq!(s, StatusCode::NO_CONTENT, "a member sets their own secrets");

    // Bad input names the field.
    for (path, body, field) in [
        (
            "/api/v1/secrets/team/X",
            json!({"value": "v-123456"}),
            "scope",
        ),
        (
            "/api/v1/secrets/workspace/bad%20name",
            json!({"value": "v-123456"}),
            "name",
        ),
        (
            "/api/v1/secrets/workspace/EMPTY",
            json!({"value": ""}),
            "value",
        ),
        // Shorter than 8 characters: it would be redacted wherever its
        // characters occur.
        (
            "/api/v1/secrets/workspace/SHORT",
            json!({"value": "1234567"}),
            "value",
        ),
    ] {
        let (s, body) = call(&state, "PUT", path, &token, Some(body)).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{path}: {body}");
        let err: Value = serde_json::from_str(&body).expect("json");
        assert_eq!(err["error"]["details"]["path"], field, "{path}");
    }

    // At rest: no form of the value in the database files. Checkpoint the
    // WAL into the main file first, so the main file holds every page; a
    // -wal/-shm file may vanish while we look, which is fine.
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(db.writer())
        .await
        .expect("checkpoint");
    let mut scanned_main = false;
    for entry in std::fs::read_dir(dir.path()).expect("dir").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("glassbox.db") {
            continue;
        }
        let Ok(bytes) = std::fs::read(entry.path()) else {
            continue;
        };
        scanned_main |= name == "glassbox.db";
        for form in forms(CANARY) {
            assert!(
                !bytes.windows(form.len()).any(|w| w == form.as_bytes()),
                "{name} holds the secret"
            );
        }
    }
    assert!(scanned_main, "the main database file was scanned");
    db.close().await;

    // Delete works for the owner.
    let db = Store::open(&Config::default_database_url(dir.path()))
        .await
        .expect("reopen");
    let config = common::TwoWorkspaces::config(
        dir.path(),
        glassbox_server::config::DEFAULT_MAX_OUTPUT_BYTES,
    );
    let state = AppState::new(db, config).expect("state");
    let (s, _) = call(
        &state,
        "DELETE",
        "/api/v1/secrets/workspace/API_TOKEN",
        &token,
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (s, _) = call(
        &state,
        "DELETE",
        "/api/v1/secrets/workspace/API_TOKEN",
        &token,
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}
