//! One storage conformance suite, run against SQLite and Postgres.

mod common;

use glassbox_server::storage::*;
use node_runtime::graph::{Workflow, WORKFLOW_FORMAT_VERSION};
use serde_json::json;

fn workflow(id: &str, name: &str) -> Workflow {
    Workflow {
        format_version: WORKFLOW_FORMAT_VERSION,
        id: id.into(),
        name: name.into(),
        description: String::new(),
        revision: 0,
        nodes: vec![],
        edges: vec![],
    }
}

fn run_row(id: &str, ws: &str, wf: Option<&str>, status: &str) -> RunRow {
    RunRow {
        workflow_id: wf.map(str::to_string),
        workflow_revision: Some(1),
        status: status.into(),
        trace_id: Some(format!("{id:0>32}")),
        ..RunRow::queued(id, ws)
    }
}

async fn conformance(store: Store) {
    store.ensure_workspace("a", "A").await.expect("ws a");
    store.ensure_workspace("b", "B").await.expect("ws b");
    store.ensure_user("u1", "Ada").await.expect("user");
    store
        .add_membership("a", "u1", "admin")
        .await
        .expect("member");
    assert_eq!(
        store.memberships("u1").await.expect("m"),
        vec![("a".to_string(), "admin".to_string(), None)]
    );

    // Tokens: stored by hash; sign-in tokens are single-use.
    store
        .insert_token("h-signin", "u1", "signin", None)
        .await
        .expect("token");
    assert_eq!(
        store.token_user("h-signin", "signin").await.expect("q"),
        Some("u1".into())
    );
    assert_eq!(
        store.token_user("h-signin", "signin").await.expect("q"),
        None,
        "single use"
    );
    store
        .insert_token("h-session", "u1", "session", None)
        .await
        .expect("token");
    assert_eq!(
        store.token_user("h-session", "session").await.expect("q"),
        Some("u1".into())
    );
    assert_eq!(
        store.token_user("h-session", "signin").await.expect("q"),
        None,
        "kind matters"
    );
    store
        .insert_token("h-old", "u1", "session", Some("2000-01-01T00:00:00.000Z"))
        .await
        .expect("token");
    assert_eq!(
        store.token_user("h-old", "session").await.expect("q"),
        None,
        "expired"
    );

    // A request's caller in one read: session and API tokens only, with
    // the user's memberships in workspace order.
    assert_eq!(
        store.token_caller("h-session").await.expect("q"),
        Some((
            "u1".to_string(),
            vec![("a".to_string(), "admin".to_string(), None)]
        ))
    );
    assert_eq!(
        store.token_caller("h-signin").await.expect("q"),
        None,
        "sign-in tokens are not callers"
    );
    assert_eq!(
        store.token_caller("h-old").await.expect("q"),
        None,
        "expired"
    );
    assert_eq!(
        store.token_caller("nope").await.expect("q"),
        None,
        "unknown"
    );
    store.ensure_user("u3", "Grace").await.expect("user");
    store
        .insert_token("h-api3", "u3", "api", None)
        .await
        .expect("token");
    assert_eq!(
        store.token_caller("h-api3").await.expect("q"),
        Some(("u3".to_string(), Vec::new())),
        "a user without memberships"
    );
    store
        .add_membership("b", "u3", "viewer")
        .await
        .expect("member");
    store
        .add_membership("a", "u3", "editor")
        .await
        .expect("member");
    assert_eq!(
        store
            .token_caller("h-api3")
            .await
            .expect("q")
            .map(|(_, m)| m),
        Some(vec![
            ("a".to_string(), "editor".to_string(), None),
            ("b".to_string(), "viewer".to_string(), None)
        ])
    );

    // Workflows with revisions and the stale-revision refusal.
    let created = store
        .create_workflow("a", &workflow("w1", "First"))
        .await
        .expect("create");
    assert_eq!(created.revision, 1);
    let v2 = store
        .update_workflow("a", "w1", 1, &workflow("w1", "Second"))
        .await
        .expect("update");
    assert_eq!((v2.revision, v2.name.as_str()), (2, "Second"));
    assert_eq!(v2.workflow().expect("parses").revision, 2);
    match store
        .update_workflow("a", "w1", 1, &workflow("w1", "Stale"))
        .await
    {
        Err(StoreError::Conflict {
            expected: 1,
            actual: 2,
        }) => {}
        other => panic!("stale revision must be refused: {other:?}"),
    }
    assert_eq!(
        store.get_workflow("a", "w1").await.expect("get").name,
        "Second",
        "nothing overwritten"
    );
    let revs = store.list_revisions("a", "w1").await.expect("revs");
    assert_eq!(
        revs.iter().map(|r| r.revision).collect::<Vec<_>>(),
        vec![2, 1]
    );
    // Tenancy: workspace b sees nothing of a.
    assert!(matches!(
        store.get_workflow("b", "w1").await,
        Err(StoreError::NotFound(_))
    ));
    assert!(store.list_workflows("b").await.expect("list").is_empty());
    assert!(matches!(
        store
            .update_workflow("b", "w1", 2, &workflow("w1", "x"))
            .await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.delete_workflow("b", "w1").await,
        Err(StoreError::NotFound(_))
    ));

    // Runs and events, in order, after a sequence number.
    store
        .create_run(&run_row("r1", "a", Some("w1"), "running"))
        .await
        .expect("run");
    store
        .create_run(&run_row("r2", "a", Some("w1"), "succeeded"))
        .await
        .expect("run");
    for seq in 1..=5 {
        store
            .append_event("r1", seq, &json!({"n": seq}))
            .await
            .expect("event");
    }
    let after2 = store.events_after("a", "r1", 2).await.expect("events");
    assert_eq!(
        after2.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![3, 4, 5]
    );
    assert!(matches!(
        store.events_after("b", "r1", 0).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(
        store.append_event("r1", 3, &json!({})).await.is_err(),
        "a sequence number is used once"
    );
    store
        .finish_run(
            "r1",
            "succeeded",
            Some(&json!({"x": 1})),
            None,
            Some(&json!({"nodes": {}})),
        )
        .await
        .expect("finish");
    let r1 = store.get_run("a", "r1").await.expect("get");
    assert_eq!(
        (r1.status.as_str(), r1.outputs.as_deref()),
        ("succeeded", Some("{\"x\":1}"))
    );
    assert!(r1.finished_at.is_some());
    let filtered = store
        .list_runs(
            "a",
            &RunFilter {
                status: Some("succeeded".into()),
                ..Default::default()
            },
        )
        .await
        .expect("list")
        .items;
    assert_eq!(filtered.len(), 2);
    assert!(
        filtered
            .iter()
            .all(|r| r.record.is_none() && r.outputs.is_none()),
        "a list carries no payloads"
    );
    assert!(store
        .list_runs("b", &RunFilter::default())
        .await
        .expect("list")
        .items
        .is_empty());

    // Node rows of a finished run, replaced as a whole.
    let node = |id: &str, status: &str| NodeRunRow {
        run_id: "r1".into(),
        node_id: id.into(),
        status: status.into(),
        error: None,
        outputs: "{}".into(),
        started_at: now(),
        finished_at: now(),
        trace_id: None,
        outputs_refs: None,
    };
    store
        .put_node_runs("r1", &[node("a", "done"), node("b", "failed")])
        .await
        .expect("nodes");
    store
        .put_node_runs("r1", &[node("a", "done"), node("b", "skipped")])
        .await
        .expect("again");
    let nodes = store.node_runs("a", "r1").await.expect("nodes");
    assert_eq!(
        nodes
            .iter()
            .map(|n| (n.node_id.as_str(), n.status.as_str()))
            .collect::<Vec<_>>(),
        vec![("a", "done"), ("b", "skipped")]
    );
    assert!(matches!(
        store.node_runs("b", "r1").await,
        Err(StoreError::NotFound(_))
    ));

    // Approvals decide once.
    let approval = ApprovalRow {
        token: "tok".into(),
        workspace_id: "a".into(),
        run_id: "r1".into(),
        node_id: "agent".into(),
        call_id: "c1".into(),
        tool: "write_file@1.0.0".into(),
        args_summary: "{}".into(),
        effect_description: "writes".into(),
        status: "pending".into(),
        decided_by: None,
        note: None,
        created_at: now(),
        decided_at: None,
    };
    store.insert_approval(&approval).await.expect("approval");
    assert_eq!(
        store.pending_approvals("a").await.expect("pending").len(),
        1
    );
    assert!(store
        .pending_approvals("b")
        .await
        .expect("pending")
        .is_empty());
    assert!(matches!(
        store
            .decide_approval("b", "tok", "approved", "u2", None)
            .await,
        Err(StoreError::NotFound(_))
    ));
    let decided = store
        .decide_approval("a", "tok", "denied", "u1", Some("no"))
        .await
        .expect("decide");
    assert_eq!(
        (decided.status.as_str(), decided.note.as_deref()),
        ("denied", Some("no"))
    );
    assert!(matches!(
        store
            .decide_approval("a", "tok", "approved", "u1", None)
            .await,
        Err(StoreError::Conflict { .. })
    ));
    assert!(store
        .pending_approvals("a")
        .await
        .expect("pending")
        .is_empty());

    // Invocations: upsert through the lifecycle, filters.
    let mut inv = InvocationRow {
        id: "r1/c1".into(),
        workspace_id: "a".into(),
        run_id: "r1".into(),
        node_id: "agent".into(),
        call_id: "c1".into(),
        tool_name: "calculator".into(),
        tool_version: "1.0.0".into(),
        status: "running".into(),
        approval_required: 0,
        approval_status: None,
        decided_by: None,
        reason: None,
        input: "{}".into(),
        output: None,
        error: None,
        cost: 0.0,
        created_at: now(),
        started_at: Some(now()),
        completed_at: None,
        trace_id: Some("t1".into()),
        input_refs: None,
        output_refs: None,
    };
    store.upsert_invocation(&inv).await.expect("running");
    inv.status = "completed".into();
    inv.output = Some("42".into());
    inv.completed_at = Some(now());
    store.upsert_invocation(&inv).await.expect("completed");
    let listed = store
        .list_invocations(
            "a",
            &InvocationFilter {
                tool: Some("calculator".into()),
                ..Default::default()
            },
        )
        .await
        .expect("list")
        .items;
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].status.as_str(), listed[0].output.as_deref()),
        ("completed", None),
        "a list carries no payloads"
    );
    assert!(listed[0].started_at.is_some());
    let whole = store.get_invocation("a", "r1/c1").await.expect("item");
    assert_eq!(whole.output.as_deref(), Some("42"));
    assert!(matches!(
        store.get_invocation("b", "r1/c1").await,
        Err(StoreError::NotFound(_))
    ));
    assert!(store
        .list_invocations(
            "a",
            &InvocationFilter {
                status: Some("failed".into()),
                ..Default::default()
            }
        )
        .await
        .expect("list")
        .items
        .is_empty());
    assert!(store
        .list_invocations("b", &InvocationFilter::default())
        .await
        .expect("list")
        .items
        .is_empty());

    // Bundles and pin history.
    store
        .put_bundle("r1", "agent", "{\"b\":1}")
        .await
        .expect("bundle");
    assert_eq!(
        store.get_bundle("a", "r1", "agent").await.expect("get"),
        "{\"b\":1}"
    );
    assert!(matches!(
        store.get_bundle("b", "r1", "agent").await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(
        store.pin_value("w1", "agent", "p").await.expect("pin"),
        None
    );
    store
        .set_pin_value("w1", "agent", "p", &json!({"v": 1}))
        .await
        .expect("set");
    store
        .set_pin_value("w1", "agent", "p", &json!({"v": 2}))
        .await
        .expect("set");
    assert_eq!(
        store.pin_value("w1", "agent", "p").await.expect("pin"),
        Some(json!({"v": 2}))
    );

    // Secret scopes (names only) resolve user -> workspace -> org; an org
    // secret reaches the workspaces of that org only.
    store.ensure_org("org1", "Org").await.expect("org");
    store
        .set_workspace_org("a", Some("org1"))
        .await
        .expect("in org");
    assert_eq!(
        store.workspace_org("a").await.expect("q").as_deref(),
        Some("org1")
    );
    assert_eq!(store.workspace_org("b").await.expect("q"), None);
    assert!(matches!(
        store.set_workspace_org("nope", Some("org1")).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(
        store
            .secret_scope("a", "u1", Some("org1"), "KEY")
            .await
            .expect("q"),
        None
    );
    store
        .put_secret_entry("a", "org", "org1", "KEY")
        .await
        .expect("org");
    assert_eq!(
        store
            .secret_scope("a", "u1", Some("org1"), "KEY")
            .await
            .expect("q")
            .as_deref(),
        Some("org")
    );
    store
        .put_secret_entry("a", "workspace", "a", "KEY")
        .await
        .expect("ws");
    assert_eq!(
        store
            .secret_scope("a", "u1", Some("org1"), "KEY")
            .await
            .expect("q")
            .as_deref(),
        Some("workspace")
    );
    store
        .put_secret_entry("a", "user", "u1", "KEY")
        .await
        .expect("user");
    assert_eq!(
        store
            .secret_scope("a", "u1", Some("org1"), "KEY")
            .await
            .expect("q")
            .as_deref(),
        Some("user")
    );
    assert_eq!(
        store.secret_scope("b", "u1", None, "KEY").await.expect("q"),
        None,
        "another workspace (in no org) sees none"
    );
    assert_eq!(
        store
            .secret_scope("b", "u1", Some("org2"), "KEY")
            .await
            .expect("q"),
        None,
        "nor does one of another org"
    );
    assert_eq!(
        store
            .list_secrets("b", "u1", Some("org1"))
            .await
            .expect("list")
            .iter()
            .map(|(n, s, _)| (n.as_str(), s.as_str()))
            .collect::<Vec<_>>(),
        [("KEY", "org")],
        "a workspace of the same org sees the org's secret only"
    );

    group_writer(&store).await;
    run_lifecycle_writes(&store).await;
    paging(&store).await;
    payloads(&store).await;

    // Deleting a workflow removes its revisions.
    store.delete_workflow("a", "w1").await.expect("delete");
    assert!(matches!(
        store.list_revisions("a", "w1").await,
        Err(StoreError::NotFound(_))
    ));
    store.close().await;
}

/// A run's first events mark it running (only from `queued`); spans ride
/// along with events and with the end; the end drops the run's checkpoints.
/// Lists come a bounded page at a time, newest first, and the cursor walks
/// them without a gap or a repeat, also among rows created in the same
/// instant.
/// Payloads: stored once per run, put back byte for byte (nested too),
/// scoped to their run, deleted with it; a missing one is `Corrupt`.
async fn payloads(store: &Store) {
    for id in ["p1", "p2"] {
        store
            .create_run(&run_row(id, "a", None, "succeeded"))
            .await
            .expect("run");
    }
    let input = json!({"data": {"i": 1, "note": "é".repeat(300)}, "program": ".note | length"});
    let envelope = json!({"call_id": "c", "input": input, "output": 300});
    let text =
        json!({"event": {"outputs": {"tools_by_id": {"c": envelope}}, "input": input}}).to_string();
    let mut set = PayloadSet::default();
    let event = set.dehydrate(&text);
    let whole = set.dehydrate_whole(&input.to_string());
    let small = set.dehydrate("{\"input\":1}");
    let rows = set.into_rows();
    assert_eq!(rows.len(), 2, "the input once, the outputs once");
    assert!(event.text.len() < 200, "{}", event.text);
    assert_eq!(whole.text, "null");
    assert_eq!(small.refs, None);
    store.put_payloads("p1", &rows).await.expect("payloads");
    store
        .put_payloads("p1", &rows)
        .await
        .expect("stored again: kept");
    let back = store
        .inflate(
            "p1",
            vec![
                (event.text.clone(), event.refs.clone()),
                (whole.text.clone(), whole.refs.clone()),
                (small.text.clone(), small.refs.clone()),
            ],
        )
        .await
        .expect("inflates");
    assert_eq!(back, [text, input.to_string(), "{\"input\":1}".to_string()]);
    // Another run has none of them.
    assert!(matches!(
        store
            .inflate("p2", vec![(event.text.clone(), event.refs.clone())])
            .await,
        Err(StoreError::Corrupt(_))
    ));
    // Bad refs are corrupt data, not a panic.
    assert!(matches!(
        store
            .inflate("p1", vec![("nul".into(), whole.refs.clone())])
            .await,
        Err(StoreError::Corrupt(_))
    ));
    let count = |run: &'static str| async move {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM payloads WHERE run_id = $1")
            .bind(run)
            .fetch_one(store.pool())
            .await
            .expect("count")
    };
    assert_eq!(count("p1").await, 2);
    // The input is kept as an LZ4 block (codec 3; it is short and
    // repetitive) and read back above.
    let codec: i64 =
        sqlx::query_scalar("SELECT codec FROM payloads WHERE run_id = $1 AND hash = $2")
            .bind("p1")
            .bind(hash_of(&input.to_string()))
            .fetch_one(store.pool())
            .await
            .expect("codec");
    assert_eq!(codec, 3);
    sqlx::query("DELETE FROM runs WHERE id = $1")
        .bind("p1")
        .execute(store.writer())
        .await
        .expect("delete run");
    assert_eq!(count("p1").await, 0, "deleted with the run");
}

async fn paging(store: &Store) {
    use glassbox_server::storage::{Page, PAGE_MAX};
    store.ensure_workspace("paged", "Paged").await.expect("ws");
    store
        .create_run(&run_row("paged-run", "paged", None, "succeeded"))
        .await
        .expect("run");
    let at = now();
    let rows: Vec<InvocationRow> = (0..(PAGE_MAX + 5))
        .map(|n| {
            let mut i = invocation(&format!("p{n:04}"), "completed");
            i.workspace_id = "paged".into();
            i.run_id = "paged-run".into();
            i.created_at = at.clone();
            i
        })
        .collect();
    for r in &rows {
        store.upsert_invocation(r).await.expect("row");
    }
    let page = |cursor, limit| {
        let filter = InvocationFilter {
            cursor,
            limit,
            ..Default::default()
        };
        async move {
            store
                .list_invocations("paged", &filter)
                .await
                .expect("page")
        }
    };
    let Page { items, next } = page(None, 100_000).await;
    assert_eq!(
        items.len() as i64,
        PAGE_MAX,
        "a page is at most PAGE_MAX rows"
    );
    assert!(next.is_some());
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let Page { items, next } = page(cursor, 60).await;
        assert!(items.len() <= 60);
        seen.extend(items.into_iter().map(|i| i.id));
        match next {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let mut want: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
    want.sort();
    want.reverse();
    assert_eq!(seen, want, "every row once, newest (then highest id) first");
}

async fn run_lifecycle_writes(store: &Store) {
    for (id, status) in [("l1", "queued"), ("l2", "waiting_for_approval")] {
        store
            .create_run(&run_row(id, "a", None, status))
            .await
            .expect("run");
    }
    let writer = GroupWriter::start(store.clone());
    let span = |run: &str, id: &str| SpanRow {
        run_id: run.into(),
        span_id: id.into(),
        parent_id: None,
        trace_id: "0".repeat(31) + "2",
        name: "node".into(),
        started_at: format!("2026-01-01T00:00:00.0000{}Z", id.len()),
        duration_us: 10,
        fields: "{}".into(),
    };
    let first = |run: &str, seq: i64, spans: Vec<SpanRow>| RunWrite::Events {
        run_id: run.into(),
        workspace_id: "a".into(),
        started: true,
        events: vec![(seq, "{}".into(), None)],
        payloads: vec![],
        invocations: vec![],
        blobs: vec![],
        spans,
    };
    writer
        .write(first("l1", 1, vec![span("l1", "s1")]))
        .await
        .expect("l1 starts");
    writer
        .write(first("l2", 1, vec![]))
        .await
        .expect("l2 resumes");
    assert_eq!(
        store.get_run("a", "l1").await.expect("l1").status,
        "running"
    );
    assert_eq!(
        store.get_run("a", "l2").await.expect("l2").status,
        "waiting_for_approval",
        "a status other than queued stays"
    );
    // A node's checkpoint and the run's end refer to the same payloads
    // (its outputs, its bundle); every reader gives the texts back whole.
    let input = json!({"note": "x".repeat(400)});
    let bundle =
        json!({"exchanges": [{"arguments": input}], "envelopes": [{"input": input}]}).to_string();
    let outputs = json!({"response": "y".repeat(300), "last_tool": {"input": input}}).to_string();
    let node_record = format!(
        "{{\"bundle\":{bundle},\"node_id\":\"agent\",\"outputs\":{outputs},\"status\":\"succeeded\"}}"
    );
    // Written from the value, as a run writes it: the same text.
    let node_value: serde_json::Value = serde_json::from_str(&node_record).expect("json");
    let (checkpoint, top) =
        RunWrite::node_checkpoint("l1", "agent", &node_value, &mut Default::default());
    let named: Vec<&str> = top.iter().map(|t| t.key.as_str()).collect();
    assert_eq!(named, ["bundle", "outputs"], "the record's own payloads");
    let committed: Vec<String> = checkpoint
        .payloads()
        .iter()
        .map(|p| p.hash.clone())
        .collect();
    let RunWrite::NodeCheckpoint {
        record, payloads, ..
    } = &checkpoint
    else {
        unreachable!("a node checkpoint")
    };
    assert!(record.len() < 200, "{record}");
    assert_eq!(payloads.len(), 3, "bundle, outputs, input once");
    // Payloads the run's writes committed already are referred to, not
    // carried again.
    let stored: KeySet = committed.iter().cloned().collect();
    let mut known = Known::from(stored);
    let (again, again_top) = RunWrite::node_checkpoint("l1", "agent", &node_value, &mut known);
    assert!(again.payloads().is_empty(), "{:?}", again.payloads());
    assert_eq!(again_top, top);
    assert_eq!(known.stored.len(), 3, "the set is given back");
    let RunWrite::NodeCheckpoint {
        record: again_record,
        refs: again_refs,
        ..
    } = &again
    else {
        unreachable!("a node checkpoint")
    };
    let RunWrite::NodeCheckpoint { refs, .. } = &checkpoint else {
        unreachable!("a node checkpoint")
    };
    assert_eq!((again_record, again_refs), (record, refs));
    writer.write(checkpoint).await.expect("checkpoint");
    store
        .put_agent_checkpoint("l1", "agent2", "{}")
        .await
        .expect("agent checkpoint");
    assert_eq!(
        store.checkpoints("l1").await.expect("q"),
        [
            ("agent".into(), "node".into(), node_record.clone()),
            ("agent2".into(), "agent".into(), "{}".into())
        ]
    );
    let run_record = format!(
        "{{\"nodes\":{{\"agent\":{{\"bundle\":null,\"node_id\":\"agent\",\"outputs\":{outputs}}}}},\"workflow\":{{}}}}"
    );
    let mut end = RunEnd {
        run_id: "l1".into(),
        status: "succeeded".into(),
        nodes: vec![NodeRunRow {
            run_id: "l1".into(),
            node_id: "agent".into(),
            status: "succeeded".into(),
            error: None,
            outputs: outputs.clone(),
            started_at: now(),
            finished_at: now(),
            trace_id: None,
            outputs_refs: None,
        }],
        bundles: vec![("agent".into(), bundle.clone(), None)],
        spans: vec![span("l1", "s22")],
        ..RunEnd::default()
    };
    // The checkpoint is committed: the end refers to its outputs and
    // bundle and stores no payload again.
    for t in &top {
        end.refer_stored("agent", &t.key, &t.hash);
    }
    let mut known = Known::from(committed.into_iter().collect::<KeySet>());
    let run_value: serde_json::Value = serde_json::from_str(&run_record).expect("json");
    end.write_record(&run_value, &mut known);
    end.dehydrate(known);
    assert_eq!(end.bundles[0].1, "null");
    assert_eq!(end.nodes[0].outputs, "null");
    assert!(end.payloads.is_empty(), "{:?}", end.payloads);
    writer
        .write(RunWrite::End(Box::new(end)))
        .await
        .expect("end");
    let l1 = store.get_run("a", "l1").await.expect("l1");
    assert_eq!(l1.status, "succeeded");
    assert_ne!(l1.record.as_deref(), Some(run_record.as_str()));
    assert_eq!(
        store.run_record(&l1).await.expect("record"),
        Some({
            let mut v: serde_json::Value = serde_json::from_str(&run_record).expect("json");
            v["nodes"]["agent"]["bundle"] = serde_json::from_str(&bundle).expect("json");
            v
        })
    );
    assert_eq!(
        store.get_bundle("a", "l1", "agent").await.expect("bundle"),
        bundle
    );
    assert_eq!(
        store.node_runs("a", "l1").await.expect("nodes")[0].outputs,
        outputs
    );
    assert_eq!(
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM payloads WHERE run_id = $1")
            .bind("l1")
            .fetch_one(store.pool())
            .await
            .expect("count"),
        3,
        "each payload once"
    );
    assert_eq!(
        store
            .spans("a", "l1")
            .await
            .expect("spans")
            .iter()
            .map(|s| s.span_id.as_str())
            .collect::<Vec<_>>(),
        ["s1", "s22"]
    );
    assert_eq!(
        store.checkpoints("l1").await.expect("q"),
        [],
        "the end drops the run's checkpoints"
    );
}

fn invocation(id: &str, status: &str) -> InvocationRow {
    InvocationRow {
        id: id.into(),
        workspace_id: "a".into(),
        run_id: "g1".into(),
        node_id: "agent".into(),
        call_id: id.into(),
        tool_name: "calculator".into(),
        tool_version: "1.0.0".into(),
        status: status.into(),
        approval_required: 1,
        approval_status: None,
        decided_by: None,
        reason: None,
        input: "{}".into(),
        output: None,
        error: None,
        cost: 0.0,
        created_at: now(),
        started_at: None,
        completed_at: None,
        trace_id: None,
        input_refs: None,
        output_refs: None,
    }
}

/// The group writer: writes queued together commit together, one run's
/// writes keep their order, a failing write does not sink the others, and
/// records of one invocation in one batch merge like the upsert.
async fn group_writer(store: &Store) {
    for id in ["g1", "g2"] {
        store
            .create_run(&run_row(id, "a", None, "queued"))
            .await
            .expect("run");
    }
    let writer = GroupWriter::start(store.clone());
    // Every event carries the same big input: each write carries it (a
    // write may fail alone), it is stored once.
    let text = |s: i64| format!("{{\"input\":\"{}\",\"n\":{s}}}", "x".repeat(300));
    let with =
        |run: &str, seqs: &[i64], mut invocations: Vec<InvocationRow>, blobs: Vec<BlobRef>| {
            let mut set = PayloadSet::default();
            for i in &mut invocations {
                set.dehydrate_invocation(i);
            }
            let events = seqs
                .iter()
                .map(|s| {
                    let d = set.dehydrate(&text(*s));
                    (*s, d.text, d.refs)
                })
                .collect();
            RunWrite::Events {
                run_id: run.into(),
                workspace_id: "a".into(),
                started: false,
                events,
                payloads: set.into_rows(),
                invocations,
                blobs,
                spans: vec![],
            }
        };
    let events = |run: &str, seqs: &[i64]| with(run, seqs, vec![], vec![]);
    // Big texts: stored as payloads, read back whole; the input stays the
    // first record's (an approval's args summary).
    let summary = format!("{{\"summary\":\"{}\"}}", "s".repeat(300));
    let output = format!("\"{}\"", "o".repeat(300));
    let mut pending = invocation("g1/c", "pending");
    pending.approval_status = Some("pending".into());
    pending.input = summary.clone();
    let mut running = invocation("g1/c", "running");
    running.started_at = Some("2026-01-01T00:00:00Z".into());
    running.input = format!("{{\"other\":\"{}\"}}", "i".repeat(300));
    let mut done = invocation("g1/c", "completed");
    done.output = Some(output.clone());
    done.started_at = Some("2026-01-01T00:00:09Z".into());
    done.completed_at = Some("2026-01-01T00:00:10Z".into());
    let waits = vec![
        writer.submit(RunWrite::Status {
            run_id: "g1".into(),
            status: "running".into(),
        }),
        writer.submit(with(
            "g1",
            &[1, 2],
            vec![pending, running, done],
            vec![BlobRef {
                hash: "h1".into(),
                content_type: "text/plain".into(),
                bytes: 3,
            }],
        )),
        writer.submit(events("g2", &[1])),
        // A duplicate sequence number: refused, alone.
        writer.submit(events("g1", &[2])),
        writer.submit(events("g1", &[3])),
        writer.submit(RunWrite::End(Box::new(RunEnd {
            run_id: "g1".into(),
            status: "succeeded".into(),
            outputs: Some("{\"answer\":4}".into()),
            record: Some(
                json!({"nodes": {"agent": {"bundle": null}, "tool": {"bundle": null}}}).to_string(),
            ),
            nodes: vec![NodeRunRow {
                run_id: "g1".into(),
                node_id: "agent".into(),
                status: "done".into(),
                error: None,
                outputs: "{}".into(),
                started_at: now(),
                finished_at: now(),
                trace_id: Some("t".into()),
                outputs_refs: None,
            }],
            bundles: vec![("agent".into(), "{\"turns\":[]}".into(), None)],
            pins: vec![("w9".into(), "agent".into(), "p".into(), "7".into())],
            ..RunEnd::default()
        }))),
        writer.submit(RunWrite::End(Box::new(RunEnd {
            run_id: "g2".into(),
            status: "failed".into(),
            error: Some("boom".into()),
            ..RunEnd::default()
        }))),
    ];
    let mut results = Vec::new();
    for w in waits {
        results.push(w.await.is_ok());
    }
    assert_eq!(results, [true, true, true, false, true, true, true]);
    let events: Vec<(i64, String)> = store
        .events_after("a", "g1", 0)
        .await
        .expect("events")
        .into_iter()
        .map(|e| (e.seq, e.event))
        .collect();
    assert_eq!(events, [(1, text(1)), (2, text(2)), (3, text(3))]);
    assert_eq!(
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM payloads WHERE run_id = $1")
            .bind("g1")
            .fetch_one(store.pool())
            .await
            .expect("count"),
        4,
        "the events' input once, the invocation's three texts"
    );
    assert_eq!(
        store.events_after("a", "g2", 0).await.expect("events")[0].event,
        text(1)
    );
    let g1 = store.get_run("a", "g1").await.expect("g1");
    assert_eq!(g1.status, "succeeded");
    assert_eq!(g1.outputs.as_deref(), Some("{\"answer\":4}"));
    assert!(g1.finished_at.is_some());
    let g2 = store.get_run("a", "g2").await.expect("g2");
    assert_eq!(
        (g2.status.as_str(), g2.error.as_deref()),
        ("failed", Some("boom"))
    );
    let inv = store
        .list_invocations(
            "a",
            &InvocationFilter {
                run_id: Some("g1".into()),
                ..Default::default()
            },
        )
        .await
        .expect("invocations")
        .items;
    assert_eq!(inv.len(), 1);
    assert_eq!(inv[0].status, "completed");
    assert_eq!(inv[0].approval_status.as_deref(), Some("pending"));
    let whole = store.get_invocation("a", &inv[0].id).await.expect("item");
    assert_eq!(
        (whole.input.as_str(), whole.output.as_deref()),
        (summary.as_str(), Some(output.as_str()))
    );
    assert_eq!((whole.input_refs, whole.output_refs), (None, None));
    // The same over two writes (the upsert, not the merge); a failed call
    // has no output.
    let mut first = invocation("g1/d", "pending");
    first.input = summary.clone();
    writer
        .write(with("g1", &[], vec![first], vec![]))
        .await
        .expect("pending");
    let mut failed = invocation("g1/d", "failed");
    failed.input = format!("{{\"other\":\"{}\"}}", "j".repeat(300));
    failed.error = Some("boom".into());
    writer
        .write(with("g1", &[], vec![failed], vec![]))
        .await
        .expect("failed");
    let d = store.get_invocation("a", "g1/d").await.expect("item");
    assert_eq!(
        (d.input.as_str(), d.output, d.status.as_str()),
        (summary.as_str(), None, "failed")
    );
    assert_eq!(
        inv[0].started_at.as_deref(),
        Some("2026-01-01T00:00:00Z"),
        "the first start time stays"
    );
    assert_eq!(store.node_runs("a", "g1").await.expect("nodes").len(), 1);
    assert_eq!(
        store.get_bundle("a", "g1", "agent").await.expect("bundle"),
        "{\"turns\":[]}"
    );
    // A record is stored without its bundles; reading it puts them back.
    let g1 = store.get_run("a", "g1").await.expect("g1");
    assert_eq!(
        store.run_record(&g1).await.expect("record"),
        Some(json!({"nodes": {"agent": {"bundle": {"turns": []}}, "tool": {"bundle": null}}}))
    );
    let g2 = store.get_run("a", "g2").await.expect("g2");
    assert_eq!(store.run_record(&g2).await.expect("record"), None);
    assert_eq!(
        store.pin_value("w9", "agent", "p").await.expect("pin"),
        Some(json!(7))
    );
    assert_eq!(
        store.blob_content_type("a", "h1").await.expect("blob"),
        "text/plain"
    );
    assert_eq!(inv[0].trace_id, None);
    assert_eq!(
        store.node_runs("a", "g1").await.expect("nodes")[0]
            .trace_id
            .as_deref(),
        Some("t")
    );

    // Spans: stored in start order; a span that arrives twice is kept once.
    let span = |id: &str, parent: Option<&str>, at: &str| SpanRow {
        run_id: "g1".into(),
        span_id: id.into(),
        parent_id: parent.map(str::to_string),
        trace_id: "0".repeat(31) + "1",
        name: if parent.is_none() { "run" } else { "tool_call" }.into(),
        started_at: at.into(),
        duration_us: 1500,
        fields: "{\"call_id\":\"c1\"}".into(),
    };
    let root = span("00000000000000aa", None, "2026-01-01T00:00:00.000001Z");
    let child = span(
        "00000000000000bb",
        Some("00000000000000aa"),
        "2026-01-01T00:00:00.000200Z",
    );
    writer
        .write(RunWrite::Spans(vec![child.clone()]))
        .await
        .expect("child span");
    writer
        .write(RunWrite::Spans(vec![root.clone(), child.clone()]))
        .await
        .expect("root span and a repeat");
    assert_eq!(store.spans("a", "g1").await.expect("spans"), [root, child]);
    assert!(matches!(
        store.spans("b", "g1").await,
        Err(StoreError::NotFound(_))
    ));
}

#[tokio::test]
async fn conformance_sqlite() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = Store::open(&format!("sqlite://{}", dir.path().join("c.db").display()))
        .await
        .expect("open");
    conformance(store).await;
}

#[tokio::test]
async fn conformance_postgres() {
    let Some(temp) = common::TempPgDatabase::create("glassbox_conf").await else {
        return;
    };
    let store = Store::open(&temp.url).await.expect("open postgres");
    conformance(store).await;
    temp.drop_now().await;
}
