//! The run page's graph: the workflow as it ran, each node coloured by its
//! result (succeeded, failed, skipped, still running); clicking a node, or
//! Enter on it, shows its status, error, tool calls and outputs below.

use std::collections::BTreeMap;

use leptos::prelude::*;
use node_runtime::graph::Workflow;
use node_runtime::wire::NodeRun;
use serde_json::Value;

use crate::editor::geometry::{self, HEADER, NODE_WIDTH};
use crate::pages::call_drawer::json_tree;

/// A node's status in the run's record (`queued` when it has none).
fn status_of(nodes: &BTreeMap<String, NodeRun>, id: &str) -> String {
    nodes
        .get(id)
        .map_or("queued", |n| n.status.as_str())
        .to_string()
}

/// `nodes` is the run record's node entries (empty while the run runs).
#[component]
pub fn RunGraph(workflow: Workflow, nodes: BTreeMap<String, NodeRun>) -> impl IntoView {
    let picked = RwSignal::new(None::<String>);
    // Drawn at its natural size, shrunk (never blown up) to fit the page.
    let view_box = geometry::view_box(&workflow, 20.0);
    let (width, height) = geometry::bounds(&workflow)
        .map(|(x0, y0, x1, y1)| (x1 - x0 + 40.0, y1 - y0 + 40.0))
        .unwrap_or((NODE_WIDTH, HEADER));
    let edges = workflow
        .edges
        .iter()
        .filter_map(|e| {
            let a = workflow.node(&e.source.node)?;
            let b = workflow.node(&e.target.node)?;
            let i = a.outputs().iter().position(|h| *h == e.source.handle)?;
            let j = b.inputs().iter().position(|h| *h == e.target.handle)?;
            let d = geometry::edge_path(
                geometry::handle_pos(a, true, i),
                geometry::handle_pos(b, false, j),
            );
            Some(view! { <path class="edge" d=d /> })
        })
        .collect_view();
    let boxes = workflow
        .nodes
        .iter()
        .map(|n| {
            let status = status_of(&nodes, &n.id);
            let (click_id, key_id, picked_id) = (n.id.clone(), n.id.clone(), n.id.clone());
            view! {
                <g class=format!("node status-{status}") class:picked=move || picked.with(|p| p.as_deref() == Some(picked_id.as_str()))
                    data-node=n.id.clone() data-status=status.clone()
                    transform=format!("translate({} {})", n.position.x, n.position.y)
                    tabindex="0" role="button" aria-label=format!("{} ({}): {status}", n.label, n.kind_name())
                    on:click=move |_| picked.set(Some(click_id.clone()))
                    on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                        if ev.key() == "Enter" || ev.key() == " " {
                            ev.prevent_default();
                            picked.set(Some(key_id.clone()));
                        }
                    }>
                    <rect width=NODE_WIDTH height=geometry::node_height(n) rx="6" />
                    <text x="10" y="19" class="node-label">{if n.label.is_empty() { n.id.clone() } else { n.label.clone() }}</text>
                    <text x=NODE_WIDTH - 10.0 y="19" text-anchor="end" class="node-kind">{n.kind_name()}</text>
                    <text x="10" y=HEADER + 14.0 class="node-status">{status.replace('_', " ")}</text>
                </g>
            }
        })
        .collect_view();
    let detail = move || {
        let id = picked.get()?;
        let record = nodes.get(&id);
        let status = status_of(&nodes, &id);
        let error = record.and_then(|r| r.error.clone());
        let calls = record
            .and_then(|r| r.outputs.get("tool_order"))
            .and_then(Value::as_array)
            .map(Vec::len);
        let outputs = record.map_or(Value::Null, |r| serde_json::json!(r.outputs));
        Some(view! {
            <div class="drawer" data-testid="run-node" data-node=id.clone()>
                <h3>{id.clone()} " " <span class=format!("badge run-status status-{status}")>{status.replace('_', " ")}</span></h3>
                {calls.map(|c| view! { <p class="muted">{format!("{c} tool call(s)")}</p> })}
                {error.map(|e| view! { <p class="error">{e}</p> })}
                <h4>"Outputs"</h4>
                {json_tree(&outputs, 1)}
                <button type="button" on:click=move |_| picked.set(None)>"Close"</button>
            </div>
        })
    };
    view! {
        <svg class="run-graph" data-testid="run-graph" viewBox=view_box preserveAspectRatio="xMinYMin meet" width=width height=height>
            <g class="edges">{edges}</g>
            <g class="nodes">{boxes}</g>
        </svg>
        <p class="muted">"Click a node for its result."</p>
        {detail}
    }
}
