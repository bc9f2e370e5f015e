//! A suite run never fails on the workspace's runs-in-progress limit
//! (issue 33), nor goes beyond it: each case's fork starts in a run slot
//! reserved for it. Its own test binary, since the limit is read from the
//! environment when the server starts.

mod common;

use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suite_waits_for_a_free_run_slot_instead_of_failing() {
    // The only test of this binary: no other reads the environment.
    std::env::set_var("GLASSBOX_MAX_RUNS_PER_WORKSPACE", "1");
    let api = common::api::Api::start().await;
    let (state, t) = (&api.state, api.admin.token.as_str());
    let (s, created) = api
        .call(
            "POST",
            "/workflows",
            Some(json!({
                "format_version": 1, "id": "limit", "name": "limit", "revision": 0,
                "nodes": [{"id": "agent", "kind": "agent", "config": {"prompt": "go",
                    "provider": {"kind": "scripted", "script": {"turns": [{"text": "done"}]}}}}],
                "edges": []
            })),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    let wf = created["id"].as_str().expect("id");
    let (s, started) = api
        .call("POST", "/runs", Some(json!({"workflow_id": wf})))
        .await;
    assert_eq!(s, 202, "{started}");
    let origin = started["run_id"].as_str().expect("run id").to_string();
    api.wait_for(&format!("/runs/{origin}"), |r| r["status"] == "succeeded")
        .await;
    let (s, suite) = api
        .call(
            "POST",
            "/suites",
            Some(json!({"name": "limited", "workflow_id": wf,
            "cases": [{"run_id": origin, "assertions": [{"kind": "outputs_equal"}]}]})),
        )
        .await;
    assert_eq!(s, 201, "{suite}");
    let suite = suite["id"].as_str().expect("suite id").to_string();

    // The workspace's one slot is taken by a run waiting for an approval.
    let waiting = common::start_run(state, t, common::approval_workflow()).await;
    api.wait_for(&format!("/runs/{waiting}"), |r| {
        r["status"] == "waiting_for_approval"
    })
    .await;
    let (s, e) = api
        .call("POST", "/runs", Some(json!({"workflow_id": wf})))
        .await;
    assert_eq!(s, 429, "the slot is taken: {e}");

    // Suite runs wait for the slot; the fifth at once is refused (at most
    // four of a workspace run at a time).
    let mut ids = Vec::new();
    for _ in 0..4 {
        let (s, started) = api
            .call("POST", &format!("/suites/{suite}/runs"), Some(json!({})))
            .await;
        assert_eq!(s, 202, "{started}");
        ids.push(started["id"].as_str().expect("suite run id").to_string());
    }
    let (s, e) = api
        .call("POST", &format!("/suites/{suite}/runs"), Some(json!({})))
        .await;
    assert_eq!(s, 429, "a fifth suite run at once: {e}");
    // While the slot is taken no case's fork exists, and the suite runs
    // wait.
    let until = Instant::now() + Duration::from_millis(800);
    while Instant::now() < until {
        assert_eq!(forks(&api).await.len(), 0, "a fork beyond the limit");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    for id in &ids {
        let (_, now) = api.call("GET", &format!("/suite-runs/{id}"), None).await;
        assert_eq!(now["status"], "running", "the case waits: {now}");
    }

    // The slot frees: the cases run one at a time (never two forks at
    // once: each starts after the one before ended) and the suites pass.
    let (_, approvals) = api.call("GET", "/approvals", None).await;
    let token = approvals["pending"][0]["token"].as_str().expect("token");
    let (s, e) = api
        .call("POST", &format!("/approvals/{token}/approve"), None)
        .await;
    assert_eq!(s, 200, "{e}");
    for id in &ids {
        let done = api
            .wait_for(&format!("/suite-runs/{id}"), |r| r["status"] != "running")
            .await;
        assert_eq!(done["status"], "passed", "{done}");
        assert_eq!(done["cases"][0]["error"], Value::Null, "{done}");
    }
    // A reserved slot counts as taken, for a run too, until it is given
    // back.
    let ws = glassbox_server::auth::DEFAULT_WORKSPACE;
    let slot = state.runs().try_slot(ws).expect("the slot is free");
    assert!(
        state.runs().try_slot(ws).is_none(),
        "one slot, reserved twice"
    );
    let (s, e) = api
        .call("POST", "/runs", Some(json!({"workflow_id": wf})))
        .await;
    assert_eq!(s, 429, "the slot is reserved: {e}");
    drop(slot);
    assert!(state.runs().try_slot(ws).is_some(), "given back");

    let mut forks = forks(&api).await;
    assert_eq!(forks.len(), 4, "{forks:?}");
    forks.sort();
    for pair in forks.windows(2) {
        assert!(
            pair[1].0 >= pair[0].1,
            "two forks ran at once with a limit of 1: {pair:?}"
        );
    }
}

/// The workspace's forks: (created_at, finished_at).
async fn forks(api: &common::api::Api) -> Vec<(String, String)> {
    let (s, list) = api.call("GET", "/runs?limit=200", None).await;
    assert_eq!(s, 200, "{list}");
    list["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .filter(|r| r["kind"] == "fork")
        .map(|r| {
            (
                r["created_at"].as_str().unwrap_or_default().to_string(),
                r["finished_at"].as_str().unwrap_or("~").to_string(),
            )
        })
        .collect()
}
