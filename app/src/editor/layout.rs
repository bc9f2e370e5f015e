//! Auto-layout: the graph in layers, left to right, by the Sugiyama method
//! of the `rust-sugiyama` crate (layering, crossing reduction, coordinate
//! assignment). The crate lays out top to bottom, so node sizes go in with
//! width and height swapped and the coordinates come back transposed; each
//! weakly connected part is laid out on its own and the parts are stacked
//! top to bottom. A last pass guarantees what the editor needs whatever the
//! crate's spacing: every layer is a column of its own, and no two boxes in
//! a column overlap.

use std::collections::{BTreeMap, HashMap};

use node_runtime::graph::{Position, Workflow};
use rust_sugiyama::configure::Config;

use super::geometry::{node_height, NODE_WIDTH};

/// Space between two columns (layers).
pub const COLUMN_GAP: f64 = 100.0;
/// Least space between two nodes of one column.
pub const ROW_GAP: f64 = 40.0;
/// Space between two unconnected parts of the graph.
const PART_GAP: f64 = 80.0;

/// Where every node goes, by id, in the document's node order; the graph's
/// top-left corner stays where it was.
pub fn auto_layout(doc: &Workflow) -> Vec<(String, Position)> {
    if doc.nodes.is_empty() {
        return Vec::new();
    }
    let index: HashMap<&str, u32> = doc
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i as u32))
        .collect();
    // (the crate's width, height) = (our height, our width).
    let vertices: Vec<(u32, (f64, f64))> = doc
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (i as u32, (node_height(n), NODE_WIDTH)))
        .collect();
    let mut edges: Vec<(u32, u32)> = doc
        .edges
        .iter()
        .filter_map(|e| {
            Some((
                *index.get(e.source.node.as_str())?,
                *index.get(e.target.node.as_str())?,
            ))
        })
        .filter(|(a, b)| a != b)
        .collect();
    edges.sort_unstable();
    edges.dedup();
    let config = Config {
        vertex_spacing: ROW_GAP,
        ..Config::default()
    };
    let parts = rust_sugiyama::from_vertices_and_edges(&vertices, &edges, &config);

    // Each part: its nodes' columns (the crate's y, one value per layer)
    // and places within a column (the crate's x).
    let (x0, y0) = doc.nodes.iter().fold((f64::MAX, f64::MAX), |(x, y), n| {
        (x.min(n.position.x), y.min(n.position.y))
    });
    let mut placed = vec![None::<Position>; doc.nodes.len()];
    let mut top = y0;
    for (part, _, _) in parts {
        let mut columns: BTreeMap<i64, Vec<(f64, usize)>> = BTreeMap::new();
        for (i, (across, layer)) in part {
            if i < doc.nodes.len() {
                columns
                    .entry(layer.round() as i64)
                    .or_default()
                    .push((across, i));
            }
        }
        let mut left = x0;
        let mut bottom = top;
        for (_, mut column) in columns {
            column.sort_by(|a, b| a.0.total_cmp(&b.0));
            let base = column.first().map(|c| c.0).unwrap_or(0.0);
            let mut next = top;
            for (across, i) in column {
                let y = (top + across - base).max(next);
                placed[i] = Some(Position { x: left, y });
                next = y + node_height(&doc.nodes[i]) + ROW_GAP;
            }
            bottom = bottom.max(next);
            left += NODE_WIDTH + COLUMN_GAP;
        }
        top = bottom + PART_GAP - ROW_GAP;
    }
    // A node the crate did not return (none should be missing) goes below.
    doc.nodes
        .iter()
        .zip(placed)
        .map(|(n, at)| {
            let at = at.unwrap_or_else(|| {
                let at = Position { x: x0, y: top };
                top += node_height(n) + ROW_GAP;
                at
            });
            (n.id.clone(), at)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use node_runtime::graph::{Edge, HandleRef};

    fn graph(n: usize, edges: &[(usize, usize)]) -> Workflow {
        let nodes = (0..n)
            .map(|i| {
                crate::editor::edit::new_node(
                    "template",
                    format!("n{i}"),
                    Position { x: 5.0, y: 5.0 },
                )
                .expect("template node")
            })
            .collect();
        let edges = edges
            .iter()
            .enumerate()
            .map(|(k, &(a, b))| Edge {
                id: format!("e{k}"),
                source: HandleRef {
                    node: format!("n{a}"),
                    handle: "text".into(),
                },
                target: HandleRef {
                    node: format!("n{b}"),
                    handle: format!("in{k}"),
                },
            })
            .collect();
        let mut doc: Workflow = serde_json::from_value(serde_json::json!({
            "format_version": 1, "id": "w", "name": "w", "nodes": [], "edges": []
        }))
        .expect("workflow");
        doc.nodes = nodes;
        doc.edges = edges;
        doc
    }

    fn overlaps(doc: &Workflow, at: &[(String, Position)]) -> Option<(String, String)> {
        let boxes: Vec<(String, f64, f64, f64, f64)> = at
            .iter()
            .map(|(id, p)| {
                let h = node_height(doc.node(id).expect("node"));
                (id.clone(), p.x, p.y, p.x + NODE_WIDTH, p.y + h)
            })
            .collect();
        for (i, a) in boxes.iter().enumerate() {
            for b in &boxes[i + 1..] {
                if a.1 < b.3 && b.1 < a.3 && a.2 < b.4 && b.2 < a.4 {
                    return Some((a.0.clone(), b.0.clone()));
                }
            }
        }
        None
    }

    #[test]
    fn a_random_graph_of_fifty_nodes_has_no_overlap_and_runs_left_to_right() {
        // A small deterministic generator (no dependency for a test).
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        for _ in 0..20 {
            let mut edges = Vec::new();
            for _ in 0..70 {
                let (a, b) = (next(50), next(50));
                if a < b {
                    edges.push((a, b));
                }
            }
            let doc = graph(50, &edges);
            let at = auto_layout(&doc);
            assert_eq!(at.len(), 50);
            assert_eq!(overlaps(&doc, &at), None, "edges {edges:?}");
            let x: HashMap<&str, f64> = at.iter().map(|(id, p)| (id.as_str(), p.x)).collect();
            for e in &doc.edges {
                assert!(
                    x[e.source.node.as_str()] < x[e.target.node.as_str()],
                    "{} -> {} runs left to right",
                    e.source.node,
                    e.target.node
                );
            }
        }
    }

    #[test]
    fn a_chain_is_one_row_and_unconnected_nodes_do_not_overlap() {
        let doc = graph(3, &[(0, 1), (1, 2)]);
        let at = auto_layout(&doc);
        assert_eq!(at[0].1.y, at[1].1.y);
        assert!(at[0].1.x < at[1].1.x && at[1].1.x < at[2].1.x);
        let doc = graph(6, &[]);
        assert_eq!(overlaps(&doc, &auto_layout(&doc)), None);
        assert!(auto_layout(&graph(0, &[])).is_empty());
    }
}
