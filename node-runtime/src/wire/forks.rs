//! Forks and diffs (issue 33): the body of `POST /api/v1/runs/{id}/fork`,
//! its answer, and `GET /api/v1/runs/{id}/diff/{other}`: two runs' calls
//! per node aligned by call id, and their outputs compared. [`diff_runs`]
//! computes the diff from the two runs' details (pure, so the app can too).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{RunDetail, RunStatus};
use crate::envelope::{AgentOutputs, ToolEnvelope};

/// Body of `POST /api/v1/runs/{id}/fork`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ForkRequest {
    #[serde(default)]
    pub changes: ForkChanges,
    /// Whether a read call the origin did not record runs live. False by
    /// default: such a call fails with POLICY_DENIED (reason
    /// `LIVE_READS_OFF`). A new write always waits for its approval.
    #[serde(default)]
    pub live_reads: bool,
    /// Every Agent node the origin recorded answers with its recorded
    /// model answers, in order, whatever its provider: the fork runs
    /// offline, and checks changes to tools, policy or the graph against
    /// what the model said. False by default: the model runs live (or
    /// scripted).
    #[serde(default)]
    pub recorded_answers: bool,
}

/// What a fork changes in its origin.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ForkChanges {
    /// By node id, a JSON merge patch (RFC 7396) of that node's `config`:
    /// prompts, provider and model (the scripted provider's script too),
    /// tools and their versions, policy, pins. An object patches key by
    /// key, null removes a key, anything else (an array too) replaces.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub nodes: BTreeMap<String, Value>,
    /// Inputs set over the origin's (null removes one).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub inputs: Map<String, Value>,
}

/// Body of `POST /api/v1/runs/{id}/fork` (202): the fork's run id; it
/// proceeds in the background as a run of kind `fork`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ForkStarted {
    pub run_id: String,
    /// The origin.
    pub fork_of: String,
    pub status: RunStatus,
    /// How many recorded calls the fork can answer from its origin.
    pub recorded_calls: usize,
}

/// How a call of one run compares with the other run's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CallChange {
    /// The same call id with the same output (or error).
    Same,
    /// The same call id with another output, or, at the same place among
    /// the calls neither run shares, the same tool called with other
    /// arguments.
    Changed,
    /// Only in the other run.
    New,
    /// Only in the run.
    Missing,
}

/// One call aligned across the two runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CallDiff {
    pub change: CallChange,
    /// The tool's name.
    pub tool: String,
    /// The call in the run (`{id}`), null when it is new.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub run: Option<ToolEnvelope>,
    /// The call in the other run, null when it is missing.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub other: Option<ToolEnvelope>,
    /// The two calls' arguments differ.
    pub input_changed: bool,
    /// The two calls' output or error differ.
    pub output_changed: bool,
    /// The two calls are of different versions of the tool.
    #[serde(default)]
    pub version_changed: bool,
}

/// One node's calls and answer in the two runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeDiff {
    /// `agent` or `tool`.
    pub kind: String,
    /// In the other run's order, each missing call after the calls that
    /// preceded it in the run.
    pub calls: Vec<CallDiff>,
    /// An Agent node's final answer in each run (null for a Tool node or
    /// where the node has no outputs).
    pub run_response: Option<String>,
    pub other_response: Option<String>,
    pub response_changed: bool,
    /// Whether the node's outputs differ: its answer, or any call that is
    /// not `same`.
    pub outputs_changed: bool,
}

/// Counts of the calls of every node by how they compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DiffSummary {
    pub same: usize,
    pub changed: usize,
    pub new: usize,
    pub missing: usize,
    /// Calls of the other run answered from a recording (`replayed`).
    pub replayed: usize,
}

/// Body of `GET /api/v1/runs/{id}/diff/{other}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunDiff {
    pub run_id: String,
    pub other_id: String,
    /// By node id: every Agent and Tool node that called a tool or answered
    /// in either run.
    pub nodes: BTreeMap<String, NodeDiff>,
    pub summary: DiffSummary,
    /// The workflow's outputs in each run, and whether they differ.
    #[serde(default)]
    pub run_outputs: Value,
    #[serde(default)]
    pub other_outputs: Value,
    pub outputs_changed: bool,
}

/// A node's calls in tool order and its answer.
struct NodeCalls {
    kind: &'static str,
    calls: Vec<ToolEnvelope>,
    response: Option<String>,
}

/// Every Agent node's (from `agent_outputs`) and Tool node's (its envelope)
/// calls of a run.
fn node_calls(run: &RunDetail) -> BTreeMap<String, NodeCalls> {
    let mut nodes = BTreeMap::new();
    for (id, outputs) in &run.agent_outputs {
        if let Ok(outputs) = serde_json::from_value::<AgentOutputs>(outputs.clone()) {
            nodes.insert(
                id.clone(),
                NodeCalls {
                    kind: "agent",
                    calls: outputs.calls().cloned().collect(),
                    response: Some(outputs.response),
                },
            );
        }
    }
    for (id, node) in run.nodes.iter().flatten() {
        if nodes.contains_key(id) {
            continue;
        }
        if let Ok(envelope) = serde_json::from_value::<ToolEnvelope>(node.envelope.clone()) {
            nodes.insert(
                id.clone(),
                NodeCalls {
                    kind: "tool",
                    calls: vec![envelope],
                    response: None,
                },
            );
        }
    }
    nodes
}

impl RunDetail {
    /// Every tool call of the run with its node's id: each Agent node's
    /// calls in its order (from `agent_outputs`), each Tool node's
    /// envelope, nodes in id order. The reading of a run that diffs and
    /// suite assertions share.
    pub fn calls(&self) -> Vec<(String, ToolEnvelope)> {
        node_calls(self)
            .into_iter()
            .flat_map(|(id, node)| node.calls.into_iter().map(move |c| (id.clone(), c)))
            .collect()
    }
}

/// Whether two calls answered differently (timings, `cached` and
/// `replayed` aside).
fn answers_differ(a: &ToolEnvelope, b: &ToolEnvelope) -> bool {
    a.output != b.output || a.error != b.error || a.truncated != b.truncated
}

/// Aligns one node's calls: by call id first; then, between two calls
/// matched by id (in the gap they leave), each call neither run shares
/// pairs with the first such call of the same tool in the run, in order (a
/// call whose arguments or version changed); the rest are new or missing.
fn align(run: &[ToolEnvelope], other: &[ToolEnvelope]) -> Vec<CallDiff> {
    let run_index: HashMap<&str, usize> = run
        .iter()
        .enumerate()
        .map(|(i, c)| (c.call_id.as_str(), i))
        .collect();
    // pair[j] = the run's call matched to the other's call j.
    let mut pair: Vec<Option<usize>> = other
        .iter()
        .map(|c| run_index.get(c.call_id.as_str()).copied())
        .collect();
    let mut taken = vec![false; run.len()];
    for &i in pair.iter().flatten() {
        taken[i] = true;
    }
    // ceiling[j]: the run index of the next call matched by id after the
    // other's call j (the end of j's gap).
    let mut ceiling = vec![run.len(); other.len()];
    let mut next = run.len();
    for j in (0..other.len()).rev() {
        ceiling[j] = next;
        if let Some(i) = pair[j] {
            next = i;
        }
    }
    let mut floor = 0;
    for j in 0..other.len() {
        if let Some(i) = pair[j] {
            floor = i + 1;
            continue;
        }
        let found =
            (floor..ceiling[j].max(floor)).find(|&i| !taken[i] && run[i].name == other[j].name);
        if let Some(i) = found {
            taken[i] = true;
            pair[j] = Some(i);
            floor = i + 1;
        }
    }
    // paired[k]: the run's call k has a counterpart in the other run.
    let mut paired = vec![false; run.len()];
    for &i in pair.iter().flatten() {
        paired[i] = true;
    }
    let mut emitted = vec![false; run.len()];
    let mut diffs = Vec::new();
    let missing = |i: usize| CallDiff {
        change: CallChange::Missing,
        tool: run[i].name.clone(),
        run: Some(run[i].clone()),
        other: None,
        input_changed: false,
        output_changed: false,
        version_changed: false,
    };
    for (j, slot) in pair.iter().enumerate() {
        let b = &other[j];
        let Some(i) = *slot else {
            diffs.push(CallDiff {
                change: CallChange::New,
                tool: b.name.clone(),
                run: None,
                other: Some(b.clone()),
                input_changed: false,
                output_changed: false,
                version_changed: false,
            });
            continue;
        };
        for (k, done) in emitted.iter_mut().enumerate().take(i) {
            if !*done && !paired[k] {
                *done = true;
                diffs.push(missing(k));
            }
        }
        emitted[i] = true;
        let a = &run[i];
        let input_changed = a.call_id != b.call_id && a.input != b.input;
        let output_changed = answers_differ(a, b);
        diffs.push(CallDiff {
            change: if a.call_id == b.call_id && !output_changed {
                CallChange::Same
            } else {
                CallChange::Changed
            },
            tool: b.name.clone(),
            run: Some(a.clone()),
            other: Some(b.clone()),
            input_changed,
            output_changed,
            version_changed: a.version != b.version,
        });
    }
    for (k, done) in emitted.iter().enumerate() {
        if !done && !paired[k] {
            diffs.push(missing(k));
        }
    }
    diffs
}

/// The diff of two runs (`run` first, as in `/runs/{run}/diff/{other}`).
pub fn diff_runs(run: &RunDetail, other: &RunDetail) -> RunDiff {
    let mut left = node_calls(run);
    let mut right = node_calls(other);
    let ids: std::collections::BTreeSet<String> =
        left.keys().chain(right.keys()).cloned().collect();
    let mut summary = DiffSummary::default();
    let mut nodes = BTreeMap::new();
    for id in ids {
        let a = left.remove(&id);
        let b = right.remove(&id);
        let kind = a.as_ref().or(b.as_ref()).map_or("agent", |n| n.kind);
        let calls = align(
            a.as_ref().map_or(&[][..], |n| &n.calls),
            b.as_ref().map_or(&[][..], |n| &n.calls),
        );
        for c in &calls {
            match c.change {
                CallChange::Same => summary.same += 1,
                CallChange::Changed => summary.changed += 1,
                CallChange::New => summary.new += 1,
                CallChange::Missing => summary.missing += 1,
            }
            if c.other.as_ref().is_some_and(|e| e.replayed) {
                summary.replayed += 1;
            }
        }
        let run_response = a.and_then(|n| n.response);
        let other_response = b.and_then(|n| n.response);
        let response_changed = run_response != other_response;
        let outputs_changed =
            response_changed || calls.iter().any(|c| c.change != CallChange::Same);
        nodes.insert(
            id,
            NodeDiff {
                kind: kind.to_string(),
                calls,
                run_response,
                other_response,
                response_changed,
                outputs_changed,
            },
        );
    }
    RunDiff {
        run_id: run.id.clone(),
        other_id: other.id.clone(),
        nodes,
        summary,
        outputs_changed: run.outputs != other.outputs,
        run_outputs: run.outputs.clone(),
        other_outputs: other.outputs.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, name: &str, input: Value, output: Value) -> ToolEnvelope {
        serde_json::from_value(json!({
            "call_id": id, "name": name, "version": "1.0.0", "input": input, "output": output,
            "error": null, "t_start": "2026-01-01T00:00:00.000Z", "t_end": "2026-01-01T00:00:00.010Z",
            "cached": false, "truncated": false, "attachments": []
        }))
        .expect("envelope")
    }

    fn changes(diffs: &[CallDiff]) -> Vec<(CallChange, &str, &str)> {
        diffs
            .iter()
            .map(|d| {
                (
                    d.change,
                    d.run.as_ref().map_or("-", |e| e.call_id.as_str()),
                    d.other.as_ref().map_or("-", |e| e.call_id.as_str()),
                )
            })
            .collect()
    }

    /// The run's calls, the other's, and the alignment expected.
    type Case = (
        Vec<ToolEnvelope>,
        Vec<ToolEnvelope>,
        Vec<(CallChange, &'static str, &'static str)>,
    );

    #[test]
    fn calls_align_by_call_id_then_by_place_and_tool() {
        use CallChange::*;
        let a = call("a", "http", json!(1), json!("x"));
        let b = call("b", "http", json!(2), json!("y"));
        let c = call("c", "calc", json!(3), json!(3));
        let b2 = call("b2", "http", json!(22), json!("y"));
        let mut a_other = a.clone();
        a_other.replayed = true;
        let mut c_other = c.clone();
        c_other.output = json!(4).into();
        let d = call("d", "mail", json!(5), json!(null));
        let table: Vec<Case> = vec![
            // Identical (a replayed call is still the same call).
            (
                vec![a.clone(), b.clone()],
                vec![a_other.clone(), b.clone()],
                vec![(Same, "a", "a"), (Same, "b", "b")],
            ),
            // The second call's arguments changed: paired as changed.
            (
                vec![a.clone(), b.clone()],
                vec![a.clone(), b2.clone()],
                vec![(Same, "a", "a"), (Changed, "b", "b2")],
            ),
            // The same call id answering otherwise.
            (
                vec![c.clone()],
                vec![c_other.clone()],
                vec![(Changed, "c", "c")],
            ),
            // A new call of another tool, and a call that is gone.
            (
                vec![a.clone(), c.clone()],
                vec![a.clone(), d.clone()],
                vec![(Same, "a", "a"), (New, "-", "d"), (Missing, "c", "-")],
            ),
            // A call gone from the middle comes before the next shared one.
            (
                vec![a.clone(), c.clone(), b.clone()],
                vec![a.clone(), b.clone()],
                vec![(Same, "a", "a"), (Missing, "c", "-"), (Same, "b", "b")],
            ),
            (vec![], vec![d.clone()], vec![(New, "-", "d")]),
            // An unmatched call of another tool does not block a later
            // pairing: the changed http call pairs past the gone calc.
            (
                vec![c.clone(), b.clone()],
                vec![b2.clone()],
                vec![(Missing, "c", "-"), (Changed, "b", "b2")],
            ),
            // The order of the gone and new calls does not matter either.
            (
                vec![b.clone(), c.clone()],
                vec![d.clone(), b2.clone()],
                vec![(New, "-", "d"), (Changed, "b", "b2"), (Missing, "c", "-")],
            ),
            // Calls pair only within the gap between shared calls.
            (
                vec![b.clone(), a.clone()],
                vec![a.clone(), b2.clone()],
                vec![(Missing, "b", "-"), (Same, "a", "a"), (New, "-", "b2")],
            ),
        ];
        for (run, other, want) in table {
            assert_eq!(changes(&align(&run, &other)), want, "{run:?} vs {other:?}");
        }
        let changed = align(&[a.clone(), b.clone()], &[a.clone(), b2.clone()]);
        assert!(changed[1].input_changed && !changed[1].output_changed);
        assert!(!changed[1].version_changed);
        // Only the version changed: said so, not left unexplained.
        let mut b_next = b.clone();
        b_next.call_id = "b-next".into();
        b_next.version = "2.0.0".into();
        let changed = align(std::slice::from_ref(&b), &[b_next]);
        assert_eq!(changed[0].change, CallChange::Changed);
        assert!(changed[0].version_changed && !changed[0].input_changed);
    }

    fn detail(id: &str, calls: &[ToolEnvelope], response: &str) -> RunDetail {
        let mut outputs = AgentOutputs::default();
        for c in calls {
            outputs.record(c.clone());
        }
        outputs.response = response.into();
        serde_json::from_value(json!({
            "id": id, "workflow_id": "w", "workflow_revision": 1, "kind": "run", "replay_of": null,
            "status": "succeeded", "trigger": "api", "inputs": {}, "outputs": {"answer": response},
            "error": null, "created_at": "t", "finished_at": "t", "duration_ms": 1.0,
            "nodes": null, "agent_outputs": {"agent": outputs}
        }))
        .expect("detail")
    }

    #[test]
    fn a_run_diff_compares_answers_and_counts_calls() {
        let a = call("a", "http", json!(1), json!("x"));
        let mut replayed = a.clone();
        replayed.replayed = true;
        let diff = diff_runs(
            &detail("r1", std::slice::from_ref(&a), "one"),
            &detail("r2", &[replayed], "two"),
        );
        let node = &diff.nodes["agent"];
        assert_eq!(node.kind, "agent");
        assert!(node.response_changed && node.outputs_changed);
        assert_eq!(node.other_response.as_deref(), Some("two"));
        assert_eq!(
            diff.summary,
            DiffSummary {
                same: 1,
                replayed: 1,
                ..DiffSummary::default()
            }
        );
        assert!(diff.outputs_changed);
        let same = diff_runs(
            &detail("r1", std::slice::from_ref(&a), "one"),
            &detail("r3", &[a], "one"),
        );
        assert!(!same.outputs_changed && !same.nodes["agent"].outputs_changed);
    }
}
