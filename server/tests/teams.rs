//! Teams (issue 34), black box through the server's API (the router
//! in-process) on SQLite and on Postgres, and the real `glassbox workspace`
//! and `glassbox member` commands on the same database: workspaces,
//! one-time invitation links, members' roles and removal, and what each
//! role may do in its workspace and nowhere else.

mod common;
mod procs;

use std::future::Future;
use std::time::{Duration, Instant};

use common::api::{Api, User};
use serde_json::{json, Value};

/// The teams tests' steps, each as `who`, on the shared client (a server
/// with the bootstrapped local admin signed in, and `other`, a workspace
/// the admin is not in: user bob).
impl Api {
    /// A call that must answer `status`; its body.
    async fn ok(
        &self,
        who: &User,
        status: u16,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Value {
        let (s, answer) = self.call_as(who, method, path, body).await;
        assert_eq!(s, status, "{method} {path}: {answer}");
        answer
    }

    /// A call that must fail with `status` and `code` in the error shape;
    /// its message.
    async fn refused(
        &self,
        who: &User,
        status: u16,
        code: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (String, Value) {
        let (s, answer) = self.call_as(who, method, path, body).await;
        assert_eq!(s, status, "{method} {path}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{method} {path}: {answer}");
        let message = answer["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("{method} {path}: no message in {answer}"))
            .to_string();
        (message, answer["error"]["details"].clone())
    }

    /// A workspace made by `who`; its id.
    async fn workspace(&self, who: &User, name: &str) -> String {
        let made = self
            .ok(who, 201, "POST", "/workspaces", Some(json!({"name": name})))
            .await;
        assert_eq!(made["name"], name);
        assert_eq!(made["role"], "admin");
        made["id"].as_str().expect("id").to_string()
    }

    /// An invitation into `who`'s workspace: its token.
    async fn invite(&self, who: &User, role: &str) -> String {
        let made = self
            .ok(
                who,
                201,
                "POST",
                "/invitations",
                Some(json!({"role": role})),
            )
            .await;
        assert_eq!(made["invitation"]["status"], "pending", "{made}");
        let token = made["token"].as_str().expect("token").to_string();
        assert_eq!(made["path"], format!("/invite/{token}"));
        token
    }

    /// A new user joining by invitation `token` as `name`: their session
    /// (in no particular workspace) and user id.
    async fn join(&self, token: &str, name: &str) -> (User, String) {
        let session = self
            .ok(
                &User::new(""),
                200,
                "POST",
                &format!("/invite/{token}/accept"),
                Some(json!({"display_name": name})),
            )
            .await;
        (
            User::new(session["session_token"].as_str().expect("session")),
            session["user_id"].as_str().expect("user").to_string(),
        )
    }

    /// Polls `GET /approvals` as `who` until one write waits; its token.
    async fn pending_approval(&self, who: &User) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let list = self.ok(who, 200, "GET", "/approvals", None).await;
            if let Some(token) = list["pending"][0]["token"].as_str() {
                return token.to_string();
            }
            assert!(Instant::now() < deadline, "no approval waited: {list}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Api {
    /// The team actions (`member.*`, `invitation.*`, `workspace.*`) of the
    /// audit log of `who`'s workspace, newest first: (action, actor,
    /// target, detail).
    async fn team_log(&self, who: &User) -> Vec<(String, String, String, Value)> {
        let log = self.ok(who, 200, "GET", "/audit?limit=200", None).await;
        log["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| {
                let action = e["action"].as_str().unwrap_or_default();
                ["member.", "invitation.", "workspace."]
                    .iter()
                    .any(|p| action.starts_with(p))
            })
            .map(|e| {
                let text = |k: &str| e[k].as_str().expect("text").to_string();
                (
                    text("action"),
                    text("actor_id"),
                    text("target"),
                    e["detail"].clone(),
                )
            })
            .collect()
    }
}

/// For each `async fn(Api)` named, a module of two tests: `on_sqlite` and
/// `on_postgres`.
macro_rules! on_both_backends {
    ($($test:ident),* $(,)?) => {$(
        mod $test {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_sqlite() {
                super::on_sqlite(super::$test).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_postgres() {
                super::on_postgres(super::$test).await;
            }
        }
    )*};
}

on_both_backends!(
    teammates_share_a_second_workspace_and_nothing_else,
    links_work_once_then_are_gone,
    roles_change_and_the_last_admin_stays,
    bad_input_names_its_field,
    no_way_back_to_more_than_was_given,
    the_cli_manages_workspaces_and_members,
);

/// Runs `test` on a fresh SQLite database.
async fn on_sqlite<F, Fut>(test: F)
where
    F: FnOnce(Api) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    test(Api::start().await).await;
}

/// Runs `test` on a fresh Postgres database (dropped after, pass or fail);
/// nothing when GLASSBOX_TEST_POSTGRES_URL is not set.
async fn on_postgres<F, Fut>(test: F)
where
    F: FnOnce(Api) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(pg) = common::TempPgDatabase::create("glassbox_teams").await else {
        return;
    };
    let env = Api::start_on(Some(&pg.url)).await;
    let db = env.db.clone();
    let outcome = tokio::spawn(test(env)).await;
    db.close().await;
    pg.drop_now().await;
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// Issue 34's acceptance through the API: an admin makes a second
/// workspace, invites B as viewer and C as editor; both accept as new
/// users; B can neither start a run nor decide an approval (403 in the
/// error shape), C can; neither sees anything of the first workspace;
/// removing C stops C's token at once.
async fn teammates_share_a_second_workspace_and_nothing_else(env: Api) {
    let admin = env.admin.clone();
    // The first workspace's workflow and run.
    let first_run = common::start_run(&env.state, &admin.token, common::approval_workflow()).await;
    let first_run_view = env
        .ok(&admin, 200, "GET", &format!("/runs/{first_run}"), None)
        .await;
    let first_wf = first_run_view["workflow_id"]
        .as_str()
        .expect("wf")
        .to_string();

    let team = env.workspace(&admin, "Team space").await;
    let listed = env.ok(&admin, 200, "GET", "/workspaces", None).await;
    let names: Vec<&str> = listed["workspaces"]
        .as_array()
        .expect("list")
        .iter()
        .map(|w| w["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["Default workspace", "Team space"], "{listed}");
    assert_eq!(listed["current"], "default");
    let admin_team = admin.r#in(&team);
    let here = env.ok(&admin_team, 200, "GET", "/workspaces", None).await;
    assert_eq!(here["current"], team.as_str());
    // Same organization as the workspace it was made from.
    assert_eq!(
        here["workspaces"][1]["org_id"],
        here["workspaces"][0]["org_id"]
    );
    let created = env
        .ok(
            &admin_team,
            201,
            "POST",
            "/workflows",
            Some(common::approval_workflow()),
        )
        .await;
    let team_wf = created["id"].as_str().expect("id").to_string();

    let (b_link, c_link) = (
        env.invite(&admin_team, "viewer").await,
        env.invite(&admin_team, "editor").await,
    );
    let preview = env
        .ok(
            &User::new(""),
            200,
            "GET",
            &format!("/invite/{b_link}"),
            None,
        )
        .await;
    assert_eq!(preview["workspace_name"], "Team space");
    assert_eq!(preview["role"], "viewer");
    assert_eq!(preview["invited_by"], "Local admin");
    let session = env
        .ok(
            &User::new(""),
            200,
            "POST",
            &format!("/invite/{b_link}/accept"),
            Some(json!({"display_name": "Bea"})),
        )
        .await;
    assert_eq!(
        session["workspaces"],
        json!([{"id": team, "role": "viewer", "org_id": here["workspaces"][1]["org_id"]}])
    );
    let b = User::new(session["session_token"].as_str().expect("session"));
    let b_id = session["user_id"].as_str().expect("user").to_string();
    let (c, c_id) = env.join(&c_link, "Cy").await;

    let members = env.ok(&b, 200, "GET", "/members", None).await;
    let roster: Vec<(String, String, bool)> = members["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| {
            assert!(m["joined_at"].is_string(), "{m}");
            (
                m["name"].as_str().expect("name").into(),
                m["role"].as_str().expect("role").into(),
                m["you"].as_bool().expect("you"),
            )
        })
        .collect();
    assert_eq!(
        roster,
        [
            ("Bea".into(), "viewer".into(), true),
            ("Cy".into(), "editor".into(), false),
            ("Local admin".into(), "admin".into(), false)
        ]
    );

    // B reads the shared workflow but starts no run and decides nothing.
    env.ok(&b, 200, "GET", &format!("/workflows/{team_wf}"), None)
        .await;
    let start = json!({"workflow_id": team_wf});
    let (why, _) = env
        .refused(&b, 403, "FORBIDDEN", "POST", "/runs", Some(start.clone()))
        .await;
    assert!(why.contains("editor"), "{why}");
    // C starts one; its write waits; B may not decide it, C may.
    let started = env.ok(&c, 202, "POST", "/runs", Some(start)).await;
    let run = started["run_id"].as_str().expect("run").to_string();
    let approval = env.pending_approval(&b).await;
    env.refused(
        &b,
        403,
        "FORBIDDEN",
        "POST",
        &format!("/approvals/{approval}/approve"),
        None,
    )
    .await;
    let decided = env
        .ok(
            &c,
            200,
            "POST",
            &format!("/approvals/{approval}/approve"),
            None,
        )
        .await;
    assert_eq!(decided["approval"]["status"], "approved", "{decided}");
    env.ok(&b, 200, "GET", &format!("/runs/{run}"), None).await;

    // Nothing of the first workspace, asked for by name or by id.
    for who in [&b, &c] {
        let there = who.r#in("default");
        env.refused(&there, 404, "NOT_FOUND", "GET", "/workflows", None)
            .await;
        env.refused(
            who,
            404,
            "NOT_FOUND",
            "GET",
            &format!("/workflows/{first_wf}"),
            None,
        )
        .await;
        env.refused(
            who,
            404,
            "NOT_FOUND",
            "GET",
            &format!("/runs/{first_run}"),
            None,
        )
        .await;
        let listed = env.ok(who, 200, "GET", "/workflows", None).await;
        assert_eq!(
            listed["workflows"].as_array().map(Vec::len),
            Some(1),
            "{listed}"
        );
        let theirs = env.ok(who, 200, "GET", "/workspaces", None).await;
        assert_eq!(
            theirs["workspaces"].as_array().map(Vec::len),
            Some(1),
            "{theirs}"
        );
        assert_eq!(theirs["current"], team.as_str());
    }

    // Removing C: C's token stops at once (C is left in no workspace, so
    // it is gone); B is untouched.
    env.ok(
        &admin_team,
        204,
        "DELETE",
        &format!("/members/{c_id}"),
        None,
    )
    .await;
    env.refused(&c, 401, "UNAUTHORIZED", "GET", "/workflows", None)
        .await;
    env.ok(&b, 200, "GET", "/workflows", None).await;
    let left = env.ok(&admin_team, 200, "GET", "/members", None).await;
    assert_eq!(left["members"].as_array().map(Vec::len), Some(2), "{left}");

    // Each step is in the new workspace's audit log, by whom it was done.
    let log: Vec<(String, String, String)> = env
        .team_log(&admin_team)
        .await
        .into_iter()
        .map(|(action, actor, target, _)| (action, actor, target))
        .collect();
    let invitations = env.ok(&admin_team, 200, "GET", "/invitations", None).await;
    let invitation = |i: usize| {
        invitations["invitations"][i]["id"]
            .as_str()
            .expect("id")
            .to_string()
    };
    let entry =
        |a: &str, actor: &str, target: &str| (a.to_string(), actor.to_string(), target.to_string());
    assert_eq!(
        log,
        [
            entry("member.removed", "admin", &c_id),
            entry("member.joined", &c_id, &c_id),
            entry("member.joined", &b_id, &b_id),
            entry("member.invited", "admin", &invitation(0)),
            entry("member.invited", "admin", &invitation(1)),
            entry("workspace.created", "admin", &team),
        ]
    );
}

/// A link works once: a second accept (also two at the same time), a
/// revoked and an expired link are 410 saying which; an unknown one 404;
/// a signed-in user joins with their own account (409 if a member
/// already); another workspace's invitation is 404 to revoke.
async fn links_work_once_then_are_gone(env: Api) {
    let admin = env.admin.clone();
    let anyone = User::new("");
    let link = env.invite(&admin, "viewer").await;
    let (viewer, viewer_id) = env.join(&link, "Vi").await;
    let (why, _) = env
        .refused(
            &anyone,
            410,
            "GONE",
            "POST",
            &format!("/invite/{link}/accept"),
            Some(json!({"display_name": "Again"})),
        )
        .await;
    assert!(why.contains("already used"), "{why}");
    let (why, _) = env
        .refused(
            &anyone,
            410,
            "GONE",
            "GET",
            &format!("/invite/{link}"),
            None,
        )
        .await;
    assert!(why.contains("already used"), "{why}");

    // Two accepts at once: one joins, the other is told it is used.
    let link = env.invite(&admin, "editor").await;
    let path = format!("/invite/{link}/accept");
    let (one, two) = tokio::join!(
        env.call_as(&anyone, "POST", &path, Some(json!({"display_name": "One"}))),
        env.call_as(&anyone, "POST", &path, Some(json!({"display_name": "Two"}))),
    );
    let mut statuses = [one.0, two.0];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 410], "{one:?} {two:?}");
    let members = env.ok(&admin, 200, "GET", "/members", None).await;
    assert_eq!(
        members["members"].as_array().map(Vec::len),
        Some(3),
        "{members}"
    );

    // Revoked: its link is gone; revoking again changes nothing.
    let link = env.invite(&admin, "editor").await;
    let listed = env.ok(&admin, 200, "GET", "/invitations", None).await;
    let id = listed["invitations"][0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    assert_eq!(listed["invitations"][0]["status"], "pending");
    env.ok(&admin, 204, "DELETE", &format!("/invitations/{id}"), None)
        .await;
    env.ok(&admin, 204, "DELETE", &format!("/invitations/{id}"), None)
        .await;
    let (why, _) = env
        .refused(
            &anyone,
            410,
            "GONE",
            "POST",
            &format!("/invite/{link}/accept"),
            Some(json!({"display_name": "Late"})),
        )
        .await;
    assert!(why.contains("revoked"), "{why}");
    env.refused(
        &anyone,
        410,
        "GONE",
        "GET",
        &format!("/invite/{link}"),
        None,
    )
    .await;
    let revoked: Vec<_> = env
        .team_log(&admin)
        .await
        .into_iter()
        .filter(|(action, ..)| action == "invitation.revoked")
        .collect();
    assert_eq!(revoked.len(), 1, "revoked once, recorded once: {revoked:?}");
    assert_eq!(
        (revoked[0].1.as_str(), revoked[0].2.as_str()),
        ("admin", id.as_str())
    );

    // Expired.
    let link = env.invite(&admin, "viewer").await;
    sqlx::query("UPDATE invitations SET expires_at = $1 WHERE token_hash = $2")
        .bind("2020-01-01T00:00:00.000000Z")
        .bind(glassbox_server::auth::hash_token(&link))
        .execute(env.db.writer())
        .await
        .expect("expire");
    let (why, _) = env
        .refused(
            &anyone,
            410,
            "GONE",
            "GET",
            &format!("/invite/{link}"),
            None,
        )
        .await;
    assert!(why.contains("expired"), "{why}");
    env.refused(
        &anyone,
        410,
        "GONE",
        "POST",
        &format!("/invite/{link}/accept"),
        Some(json!({"display_name": "Late"})),
    )
    .await;
    env.refused(
        &anyone,
        404,
        "NOT_FOUND",
        "GET",
        "/invite/gbx_unknown",
        None,
    )
    .await;
    env.refused(
        &anyone,
        404,
        "NOT_FOUND",
        "POST",
        "/invite/gbx_unknown/accept",
        Some(json!({"display_name": "X"})),
    )
    .await;

    let statuses: Vec<String> = env.ok(&admin, 200, "GET", "/invitations", None).await
        ["invitations"]
        .as_array()
        .expect("list")
        .iter()
        .map(|i| i["status"].as_str().expect("status").to_string())
        .collect();
    assert_eq!(statuses, ["expired", "revoked", "accepted", "accepted"]);
    let accepted = env.ok(&admin, 200, "GET", "/invitations", None).await["invitations"][3].clone();
    assert_eq!(accepted["accepted_by"], viewer_id.as_str());
    let (why, _) = env
        .refused(
            &admin,
            409,
            "CONFLICT",
            "DELETE",
            &format!("/invitations/{}", accepted["id"].as_str().expect("id")),
            None,
        )
        .await;
    assert!(why.contains("already accepted"), "{why}");

    // Signed in: the viewer joins a second workspace as themselves (no
    // display name needed), and a member already is told so (the link
    // stays usable).
    let team = env.workspace(&admin, "Second").await;
    let admin_team = admin.r#in(&team);
    let link = env.invite(&admin_team, "editor").await;
    env.refused(
        &admin,
        409,
        "CONFLICT",
        "POST",
        &format!("/invite/{link}/accept"),
        Some(json!({})),
    )
    .await;
    let session = env
        .ok(
            &viewer,
            200,
            "POST",
            &format!("/invite/{link}/accept"),
            Some(json!({})),
        )
        .await;
    assert_eq!(session["user_id"], viewer_id.as_str());
    assert_eq!(session["workspaces"][0]["id"], team.as_str(), "{session}");
    assert_eq!(session["workspaces"].as_array().map(Vec::len), Some(2));
    let both = env.ok(&viewer, 200, "GET", "/workspaces", None).await;
    assert_eq!(
        both["workspaces"].as_array().map(Vec::len),
        Some(2),
        "{both}"
    );
    // Removed from one of two: the token no longer reaches that one, and
    // still works in the other.
    env.ok(
        &admin_team,
        204,
        "DELETE",
        &format!("/members/{viewer_id}"),
        None,
    )
    .await;
    env.refused(
        &viewer.r#in(&team),
        404,
        "NOT_FOUND",
        "GET",
        "/workflows",
        None,
    )
    .await;
    env.ok(&viewer.r#in("default"), 200, "GET", "/workflows", None)
        .await;

    // Another workspace's invitation and member are not found.
    let bob = User::new(common::BOB_TOKEN);
    let theirs = env
        .ok(
            &bob,
            201,
            "POST",
            "/invitations",
            Some(json!({"role": "viewer"})),
        )
        .await;
    let theirs = theirs["invitation"]["id"].as_str().expect("id");
    env.refused(
        &admin,
        404,
        "NOT_FOUND",
        "DELETE",
        &format!("/invitations/{theirs}"),
        None,
    )
    .await;
    env.refused(&admin, 404, "NOT_FOUND", "DELETE", "/members/bob", None)
        .await;
    env.refused(
        &admin,
        404,
        "NOT_FOUND",
        "PATCH",
        "/members/bob",
        Some(json!({"role": "viewer"})),
    )
    .await;
}

/// Roles change; the last admin can be neither demoted nor removed (409 in
/// words); only admins manage members, invitations and the workspace's
/// name; a rename shows in every member's list.
async fn roles_change_and_the_last_admin_stays(env: Api) {
    let admin = env.admin.clone();
    let (why, details) = env
        .refused(
            &admin,
            409,
            "CONFLICT",
            "PATCH",
            "/members/admin",
            Some(json!({"role": "editor"})),
        )
        .await;
    assert!(why.contains("last admin"), "{why}");
    assert_eq!(details["user_id"], "admin");
    let (why, _) = env
        .refused(&admin, 409, "CONFLICT", "DELETE", "/members/admin", None)
        .await;
    assert!(why.contains("last admin"), "{why}");

    let link = env.invite(&admin, "viewer").await;
    let (dee, dee_id) = env.join(&link, "Dee").await;
    for (method, path, body) in [
        (
            "PATCH",
            format!("/members/{dee_id}"),
            Some(json!({"role": "admin"})),
        ),
        ("DELETE", "/members/admin".to_string(), None),
        (
            "POST",
            "/invitations".to_string(),
            Some(json!({"role": "admin"})),
        ),
        ("GET", "/invitations".to_string(), None),
        (
            "PATCH",
            "/workspace".to_string(),
            Some(json!({"name": "Mine"})),
        ),
    ] {
        let (why, _) = env
            .refused(&dee, 403, "FORBIDDEN", method, &path, body)
            .await;
        assert!(why.contains("admin"), "{why}");
    }
    let promoted = env
        .ok(
            &admin,
            200,
            "PATCH",
            &format!("/members/{dee_id}"),
            Some(json!({"role": "admin"})),
        )
        .await;
    assert_eq!(promoted["role"], "admin");
    assert_eq!(promoted["you"], false);
    // Two admins: either may now step down, not both.
    let stepped = env
        .ok(
            &dee,
            200,
            "PATCH",
            "/members/admin",
            Some(json!({"role": "editor"})),
        )
        .await;
    assert_eq!(stepped["role"], "editor");
    env.refused(
        &dee,
        409,
        "CONFLICT",
        "PATCH",
        &format!("/members/{dee_id}"),
        Some(json!({"role": "viewer"})),
    )
    .await;
    env.ok(
        &dee,
        200,
        "PATCH",
        "/members/admin",
        Some(json!({"role": "admin"})),
    )
    .await;
    let renamed = env
        .ok(
            &dee,
            200,
            "PATCH",
            "/workspace",
            Some(json!({"name": "  Renamed  "})),
        )
        .await;
    assert_eq!(renamed["name"], "Renamed");
    let mine = env.ok(&admin, 200, "GET", "/workspaces", None).await;
    assert_eq!(mine["workspaces"][0]["name"], "Renamed");
    assert_eq!(mine["workspaces"][0]["members"], 2);
    let log = env.team_log(&admin).await;
    assert_eq!(
        log[0],
        (
            "workspace.renamed".to_string(),
            dee_id.clone(),
            "default".to_string(),
            json!({"name": "Renamed", "from": "Default workspace"})
        )
    );
    let changes: Vec<(String, Value)> = log
        .iter()
        .filter(|(action, ..)| action == "member.role_changed")
        .map(|(_, actor, _, detail)| (actor.clone(), detail.clone()))
        .collect();
    assert_eq!(
        changes,
        [
            (dee_id.clone(), json!({"role": "admin", "from": "editor"})),
            (dee_id.clone(), json!({"role": "editor", "from": "admin"})),
            (
                "admin".to_string(),
                json!({"role": "admin", "from": "viewer"})
            ),
        ]
    );
    // An admin may leave while another admin stays.
    env.ok(&admin, 204, "DELETE", &format!("/members/{dee_id}"), None)
        .await;
    env.refused(&dee, 401, "UNAUTHORIZED", "GET", "/members", None)
        .await;
    env.refused(
        &admin,
        404,
        "NOT_FOUND",
        "DELETE",
        &format!("/members/{dee_id}"),
        None,
    )
    .await;
}

/// Bad input is a 422 naming its field, and changes nothing.
async fn bad_input_names_its_field(env: Api) {
    let admin = env.admin.clone();
    let anyone = User::new("");
    let long = "x".repeat(101);
    for (method, path, body, field) in [
        ("POST", "/workspaces", json!({"name": ""}), "name"),
        ("POST", "/workspaces", json!({"name": "   "}), "name"),
        ("POST", "/workspaces", json!({"name": long}), "name"),
        ("POST", "/workspaces", json!({"name": "a\u{7}b"}), "name"),
        ("PATCH", "/workspace", json!({"name": ""}), "name"),
        ("POST", "/invitations", json!({"role": "owner"}), "role"),
        (
            "POST",
            "/invitations",
            json!({"role": "viewer", "expires_in_hours": 0}),
            "expires_in_hours",
        ),
        (
            "POST",
            "/invitations",
            json!({"role": "viewer", "expires_in_hours": 721}),
            "expires_in_hours",
        ),
        ("PATCH", "/members/admin", json!({"role": "member"}), "role"),
    ] {
        let (_, details) = env
            .refused(&admin, 422, "INVALID", method, path, Some(body.clone()))
            .await;
        assert_eq!(details["path"], field, "{method} {path} {body}");
    }
    let link = env.invite(&admin, "viewer").await;
    let accept = format!("/invite/{link}/accept");
    for body in [
        json!({}),
        json!({"display_name": " "}),
        json!({"display_name": long}),
        json!({"display_name": "a\nb"}),
    ] {
        let (why, details) = env
            .refused(&anyone, 422, "INVALID", "POST", &accept, Some(body))
            .await;
        assert_eq!(details["path"], "display_name", "{why}");
    }
    // A stale sign-in is no sign-in: a name is still needed.
    env.refused(
        &User::new("gbx_stale"),
        422,
        "INVALID",
        "POST",
        &accept,
        Some(json!({})),
    )
    .await;
    // Nothing was made: the link still works, the lists are as they were.
    env.ok(&anyone, 200, "GET", &format!("/invite/{link}"), None)
        .await;
    let mine = env.ok(&admin, 200, "GET", "/workspaces", None).await;
    assert_eq!(
        mine["workspaces"].as_array().map(Vec::len),
        Some(1),
        "{mine}"
    );
    assert_eq!(mine["workspaces"][0]["name"], "Default workspace");
    let members = env.ok(&admin, 200, "GET", "/members", None).await;
    assert_eq!(
        members["members"].as_array().map(Vec::len),
        Some(1),
        "{members}"
    );
    env.join(&link, "Finally").await;
}

/// `glassbox` run on `env`'s database: (exit code, stdout, stderr).
fn cli(env: &Api, args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = procs::glassbox();
    cmd.args(args)
        .arg("--data-dir")
        .arg(&env.dir)
        .arg("--database-url")
        .arg(&env.state.config().database_url);
    let out = cmd.output().expect("glassbox runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The same from the command line, beside the server on its database:
/// a workspace made and renamed, a member invited by a printed link that
/// the API accepts, their role changed, then removed; a bad role or
/// workspace exits 2 with a message.
async fn the_cli_manages_workspaces_and_members(env: Api) {
    let run = |args: &'static [&'static str]| cli(&env, args);
    let (code, out, err) = run(&["workspace", "create", "CLI team"]);
    assert_eq!(code, Some(0), "{err}");
    let team = out.trim().to_string();
    let (code, out, err) = run(&["workspace", "list", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let list: Value = serde_json::from_str(&out).expect("JSON list");
    assert_eq!(list["workspaces"][0]["name"], "CLI team", "{list}");
    assert_eq!(list["workspaces"][0]["id"], team.as_str());
    assert_eq!(list["workspaces"][0]["role"], "admin");

    let (code, out, err) = cli(
        &env,
        &[
            "member",
            "invite",
            "--role",
            "editor",
            "--workspace",
            "CLI team",
            "--base-url",
            "http://glassbox.test:9/",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let token = out
        .trim()
        .strip_prefix("http://glassbox.test:9/invite/")
        .unwrap_or_else(|| panic!("not a link: {out}"))
        .to_string();
    let (eve, eve_id) = env.join(&token, "Eve").await;
    let theirs = env.ok(&eve, 200, "GET", "/workspaces", None).await;
    assert_eq!(theirs["current"], team.as_str());
    assert_eq!(theirs["workspaces"][0]["role"], "editor");

    let (code, out, err) = cli(&env, &["member", "list", "--workspace", &team, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let members: Value = serde_json::from_str(&out).expect("JSON members");
    assert_eq!(members["members"][0]["name"], "Eve", "{members}");
    assert_eq!(members["members"][1]["user_id"], "admin");
    let (code, _, err) = cli(
        &env,
        &["member", "role", &eve_id, "viewer", "--workspace", &team],
    );
    assert_eq!(code, Some(0), "{err}");
    let theirs = env.ok(&eve, 200, "GET", "/workspaces", None).await;
    assert_eq!(theirs["workspaces"][0]["role"], "viewer");
    let (code, out, err) = cli(&env, &["workspace", "rename", &team, "Renamed team"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Renamed team"), "{out}");

    // Mistakes exit 2 with a message, changing nothing.
    for (args, says) in [
        (vec!["member", "invite", "--role", "owner"], "not a role"),
        (
            vec![
                "member",
                "invite",
                "--role",
                "viewer",
                "--workspace",
                "nowhere",
            ],
            "no such workspace",
        ),
        (
            vec!["member", "role", &eve_id, "admin", "--workspace", "other"],
            "no such workspace",
        ),
        (
            vec!["member", "remove", "admin", "--workspace", &team],
            "last admin",
        ),
        (
            vec!["member", "remove", "nobody", "--workspace", &team],
            "not found",
        ),
        (vec!["workspace", "create", " "], "workspace name"),
    ] {
        let (code, _, err) = cli(&env, &args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }

    let (code, _, err) = cli(
        &env,
        &["member", "remove", &eve_id, "--workspace", "Renamed team"],
    );
    assert_eq!(code, Some(0), "{err}");
    env.refused(&eve, 401, "UNAUTHORIZED", "GET", "/workflows", None)
        .await;
    let (code, out, _) = cli(&env, &["member", "list", "--workspace", &team]);
    assert_eq!(code, Some(0));
    assert_eq!(out.lines().count(), 1, "{out}");
}

/// The review's holes, closed: a workspace a viewer makes joins no
/// organization, so its maker, its admin, cannot reach the organization's
/// secrets; an admin removed, or made an editor, cannot come back through
/// the links they made (they are revoked with the change).
async fn no_way_back_to_more_than_was_given(env: Api) {
    let admin = env.admin.clone();
    let team = env.workspace(&admin, "Review team").await;
    let admin_team = admin.r#in(&team);
    // The default workspace belongs to the default organization, with a
    // secret of its own.
    env.ok(
        &admin,
        204,
        "PUT",
        "/secrets/org/ORG_ONLY",
        Some(json!({"value": "org-secret-value-long"})),
    )
    .await;
    let viewer_link = env.invite(&admin, "viewer").await;
    let (viewer, _) = env.join(&viewer_link, "Vic").await;
    let own = env.workspace(&viewer.r#in("default"), "Vic's own").await;
    let vic_own = viewer.r#in(&own);
    let (_, details) = env
        .refused(
            &vic_own,
            422,
            "INVALID",
            "PUT",
            "/secrets/org/ORG_ONLY",
            Some(json!({"value": "overwritten-by-vic"})),
        )
        .await;
    assert_eq!(details["path"], "scope");
    let listed = env.ok(&vic_own, 200, "GET", "/secrets", None).await;
    assert_eq!(listed["total"], 0, "no org secret reaches it: {listed}");
    let mine = env.ok(&vic_own, 200, "GET", "/workspaces", None).await;
    let made = mine["workspaces"]
        .as_array()
        .expect("workspaces")
        .iter()
        .find(|w| w["id"] == own.as_str())
        .expect("listed")
        .clone();
    assert_eq!(made["org_id"], Value::Null, "{made}");

    // A second admin makes links, then is made an editor and removed.
    let co_admin_link = env.invite(&admin_team, "admin").await;
    let (co_admin, co_admin_id) = env.join(&co_admin_link, "Ada").await;
    let co_admin = co_admin.r#in(&team);
    let kept_link = env.invite(&co_admin, "admin").await;
    let removed_link = env.invite(&co_admin, "editor").await;
    env.ok(
        &admin_team,
        200,
        "PATCH",
        &format!("/members/{co_admin_id}"),
        Some(json!({"role": "editor"})),
    )
    .await;
    let (message, _) = env
        .refused(
            &User::new(""),
            410,
            "GONE",
            "POST",
            &format!("/invite/{kept_link}/accept"),
            Some(json!({"display_name": "Ada again"})),
        )
        .await;
    assert!(message.contains("revoked"), "{message}");
    env.ok(
        &admin_team,
        200,
        "PATCH",
        &format!("/members/{co_admin_id}"),
        Some(json!({"role": "admin"})),
    )
    .await;
    let fresh_link = env.invite(&co_admin, "viewer").await;
    env.ok(
        &admin_team,
        204,
        "DELETE",
        &format!("/members/{co_admin_id}"),
        None,
    )
    .await;
    for link in [&removed_link, &fresh_link] {
        env.refused(
            &User::new(""),
            410,
            "GONE",
            "GET",
            &format!("/invite/{link}"),
            None,
        )
        .await;
    }
    // The links the remaining admin made still work.
    let (_, _) = env
        .join(&env.invite(&admin_team, "viewer").await, "Newcomer")
        .await;
}
