//! Forks (issue 33): a finished run run again with changes, as a run of
//! kind `fork` linked to its origin (the `replay_of` column holds the
//! origin; the API shows it as `fork_of`).
//!
//! The fork's graph is the origin's as it ran with each changed node's
//! config merge-patched (RFC 7396), its inputs the origin's with the
//! changed ones set. It starts like any run ([`Runs::start`]); the engine
//! answers every call the origin recorded from the recording
//! (`node_runtime::graph::engine::ForkRecording`): see there for what a new
//! call may do.
//!
//! What the fork runs (its changed graph and whether it reads live) is a
//! checkpoint of kind `fork`, written in one transaction with the fork's
//! row (before it starts, dropped by its end), so a fork that a server
//! stop interrupted is resumed like any run, its recording read again from
//! its origin.

use super::*;

use node_runtime::graph::engine::WorkflowRun;
use node_runtime::wire::ForkRequest;

/// The kind of the checkpoint holding what a fork runs ([`ForkSpec`]),
/// written with the fork's row.
pub(super) const CHECKPOINT: &str = crate::storage::FORK_CHECKPOINT;

/// What a fork runs, stored as its checkpoint for a resume.
#[derive(serde::Serialize, serde::Deserialize)]
struct ForkSpec {
    workflow: Workflow,
    live_reads: bool,
    /// A suite's fork: new writes are refused (`SUITE_NO_WRITES`), after a
    /// resume too. Absent in forks stored before suites: false.
    #[serde(default)]
    refuse_writes: bool,
}

/// What a fork runs besides its request's changes: by default
/// (`POST /runs/{id}/fork`) the origin's recorded graph, new writes
/// waiting for their approval, the graph's own models. A suite's case
/// (`crate::suites`) forks against a given revision of the workflow,
/// refuses new writes and may answer every Agent node from its recorded
/// model answers.
#[derive(Default)]
pub struct ForkBase {
    /// The graph to run instead of the origin's recorded one.
    pub graph: Option<Workflow>,
    /// New write calls are refused instead of waiting for an approval.
    pub refuse_writes: bool,
    /// Each Agent node the origin recorded a bundle for answers with its
    /// recorded model answers (the scripted provider with
    /// `Script::from_bundle`), whatever its provider: offline (as a
    /// request's `recorded_answers` asks).
    pub recorded_model: bool,
    /// The run's trigger (default `fork`; a suite's case: `suite`).
    pub trigger: Option<&'static str>,
    /// A run slot reserved for the fork ([`Runs::wait_slot`]): it starts
    /// in it whatever the limit; without one it starts like any run.
    pub slot: Option<RunSlot>,
}

#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    /// A change that cannot be applied, at `path` of the request body.
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    /// The origin has no recording to fork from (it has not finished, or
    /// it is a replay).
    #[error("{0}")]
    NoRecording(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// RFC 7396: an object patches key by key (null removes the key), anything
/// else replaces the target.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(changes) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(fields) = target else {
        return;
    };
    for (key, change) in changes {
        if change.is_null() {
            fields.remove(key);
        } else {
            merge_patch(fields.entry(key.clone()).or_insert(Value::Null), change);
        }
    }
}

/// Checks a changed node's kind and config; an error names the field
/// inside the patch (`changes.nodes.<id>.tools`), the way the patch
/// addresses the config. Read from text with the kind first, so the
/// config is read in place and its path tracked.
fn check_node_config(node: &Map<String, Value>, path: &str) -> Result<(), ForkError> {
    let field = |key: &str| node.get(key).unwrap_or(&Value::Null).to_string();
    let text = format!(
        "{{\"kind\":{},\"config\":{}}}",
        field("kind"),
        field("config")
    );
    let mut reader = serde_json::Deserializer::from_str(&text);
    serde_path_to_error::deserialize::<_, NodeKind>(&mut reader)
        .map(|_| ())
        .map_err(|e| {
            let at = e.path().to_string();
            ForkError::Invalid {
                path: match at.strip_prefix("config") {
                    Some(inside) => format!("{path}{inside}"),
                    None => path.to_string(),
                },
                message: format!("the changed node is not valid: {}", e.inner()),
            }
        })
}

/// `base` (the origin's graph as it ran, or the graph given) with the
/// request's node changes applied.
fn changed_workflow(mut document: Value, request: &ForkRequest) -> Result<Workflow, ForkError> {
    let nodes = document
        .get_mut("nodes")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| ForkError::NoRecording("the origin's record holds no graph".into()))?;
    for (id, patch) in &request.changes.nodes {
        let path = format!("changes.nodes.{id}");
        let node = nodes
            .iter_mut()
            .find(|n| n.get("id").and_then(Value::as_str) == Some(id.as_str()))
            .ok_or_else(|| ForkError::Invalid {
                path: path.clone(),
                message: format!("the origin's workflow has no node `{id}`"),
            })?;
        let fields = node.as_object_mut().ok_or_else(|| {
            ForkError::NoRecording(format!(
                "the origin's record holds node `{id}` in a shape that cannot be changed (not a JSON object)"
            ))
        })?;
        merge_patch(fields.entry("config").or_insert(Value::Null), patch);
        check_node_config(fields, &path)?;
    }
    Workflow::from_value(&document).map_err(|e| ForkError::Invalid {
        path: "changes.nodes".into(),
        message: format!("the changed workflow is not valid: {e}"),
    })
}

/// Every Agent node of `workflow` whose bundle `record` holds answers with
/// that bundle's model answers (see [`ForkBase::recorded_model`]).
fn answer_from_recording(workflow: &mut Workflow, record: &Value) -> Result<(), ForkError> {
    use node_runtime::agent_config::ProviderConfig;
    use node_runtime::replay_bundle::ReplayBundle;
    use node_runtime::script::Script;
    for node in &mut workflow.nodes {
        let NodeKind::Agent(config) = &mut node.kind else {
            continue;
        };
        let bundle = match record.pointer(&format!(
            "/nodes/{}/bundle",
            node.id.replace('~', "~0").replace('/', "~1")
        )) {
            None | Some(Value::Null) => continue,
            Some(b) => b,
        };
        let bundle: ReplayBundle = serde_json::from_value(bundle.clone()).map_err(|e| {
            ForkError::NoRecording(format!(
                "the recorded model answers of node `{}` are not usable: {e}",
                node.id
            ))
        })?;
        let script = serde_json::to_value(Script::from_bundle(&bundle))
            .map_err(|e| StoreError::Corrupt(format!("a recorded script: {e}")))?;
        config.provider = ProviderConfig::Scripted {
            script: script.into(),
        };
    }
    Ok(())
}

impl Runs {
    /// Starts a fork of `origin` (its row and stored record); returns the
    /// fork's run id and how many recorded calls it can answer from.
    pub async fn fork(
        self: &Arc<Self>,
        owner: SecretOwner,
        origin: &RunRow,
        record: Option<&Value>,
        request: &ForkRequest,
    ) -> Result<(String, usize), ForkError> {
        self.fork_from(owner, origin, record, request, ForkBase::default())
            .await
    }

    /// [`Runs::fork`] from `base` (see [`ForkBase`]): the one way a fork
    /// starts.
    pub async fn fork_from(
        self: &Arc<Self>,
        owner: SecretOwner,
        origin: &RunRow,
        record: Option<&Value>,
        request: &ForkRequest,
        base: ForkBase,
    ) -> Result<(String, usize), ForkError> {
        let record = record
            .filter(|_| origin.kind != RunKind::Replay.as_str())
            .ok_or_else(|| {
                ForkError::NoRecording(format!(
                    "run {} has no recording to fork (it has not finished, or it is a replay)",
                    origin.id
                ))
            })?;
        let recorded: WorkflowRun = serde_path_to_error::deserialize(record).map_err(|e| {
            ForkError::NoRecording(format!(
                "the record of run {} is not usable: at `{}`: {}",
                origin.id,
                e.path(),
                e.inner()
            ))
        })?;
        let document = match &base.graph {
            Some(graph) => serde_json::to_value(graph)
                .map_err(|e| StoreError::Corrupt(format!("a workflow's graph: {e}")))?,
            None => record.get("workflow").cloned().unwrap_or(Value::Null),
        };
        let mut workflow = changed_workflow(document, request)?;
        if base.recorded_model || request.recorded_answers {
            answer_from_recording(&mut workflow, record)?;
        }
        let mut inputs: Map<String, Value> =
            serde_json::from_str(&origin.inputs).unwrap_or_default();
        for (name, value) in &request.changes.inputs {
            if value.is_null() {
                inputs.remove(name);
            } else {
                inputs.insert(name.clone(), value.clone());
            }
        }
        let mut recording = ForkRecording::from_run(&recorded, request.live_reads);
        if base.refuse_writes {
            recording = recording.refusing_writes();
        }
        let calls = recording.len();
        let spec = serde_json::to_string(&ForkSpec {
            workflow: workflow.clone(),
            live_reads: request.live_reads,
            refuse_writes: base.refuse_writes,
        })
        .map_err(|e| StoreError::Corrupt(format!("a fork's graph: {e}")))?;
        // The spec is stored with the run's row, in one write queued before
        // the run starts: no fork without it, none left after its end.
        let run_id = self
            .start_as(
                owner,
                workflow,
                inputs,
                base.trigger.unwrap_or("fork"),
                Some(StartFork {
                    origin: origin.id.clone(),
                    recording: Arc::new(recording),
                    spec,
                }),
                base.slot,
                None,
            )
            .await?;
        Ok((run_id, calls))
    }

    /// What an interrupted fork continues with: its stored graph and its
    /// origin's recording, read again.
    pub(super) async fn fork_to_resume(
        &self,
        run: &RunRow,
        checkpoints: &[(String, String, String)],
    ) -> Result<(Workflow, Arc<ForkRecording>), String> {
        let spec = checkpoints
            .iter()
            .find(|(_, kind, _)| kind == CHECKPOINT)
            .ok_or("the fork's graph was not stored")?;
        let spec: ForkSpec =
            serde_json::from_str(&spec.2).map_err(|e| format!("the fork's graph: {e}"))?;
        let origin_id = run.replay_of.as_deref().ok_or("the fork names no origin")?;
        let origin = self
            .store
            .get_run(&run.workspace_id, origin_id)
            .await
            .map_err(|e| format!("its origin {origin_id}: {e}"))?;
        let record = self
            .store
            .run_record(&origin)
            .await
            .map_err(|e| format!("its origin's record: {e}"))?
            .ok_or("its origin has no record")?;
        let recorded: WorkflowRun =
            serde_json::from_value(record).map_err(|e| format!("its origin's record: {e}"))?;
        let mut recording = ForkRecording::from_run(&recorded, spec.live_reads);
        if spec.refuse_writes {
            recording = recording.refusing_writes();
        }
        Ok((spec.workflow, Arc::new(recording)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_stored_before_suites_reads_as_not_refusing_writes() {
        let workflow = json!({"format_version": 1, "id": "w", "name": "w", "revision": 1, "nodes": [], "edges": []});
        let old: ForkSpec =
            serde_json::from_value(json!({"workflow": workflow, "live_reads": true}))
                .expect("an old fork's checkpoint reads");
        assert!(old.live_reads && !old.refuse_writes);
        let suite: ForkSpec = serde_json::from_value(
            json!({"workflow": workflow, "live_reads": false, "refuse_writes": true}),
        )
        .expect("a suite fork's checkpoint reads");
        assert!(suite.refuse_writes);
    }

    #[test]
    fn merge_patch_follows_rfc_7396() {
        // RFC 7396 appendix A, a selection.
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ];
        for (mut target, patch, want) in cases {
            merge_patch(&mut target, &patch);
            assert_eq!(target, want, "patch {patch}");
        }
    }
}
