//! Canvas geometry: node boxes and handle positions in world coordinates,
//! the view transform (pan and zoom), fit-to-view and box selection.

use node_runtime::graph::{Node, Position, Workflow};

pub const NODE_WIDTH: f64 = 180.0;
pub const HEADER: f64 = 30.0;
pub const ROW: f64 = 22.0;
pub const MIN_ZOOM: f64 = 0.1;
pub const MAX_ZOOM: f64 = 4.0;
/// Below this zoom the canvas draws nodes compact: a box each, without
/// label, kind or handles. A 13 px label would be under 5 px on screen and
/// a handle under 5 px across, too small to read or hit; drawing them costs
/// about ten times the elements (level of detail, as litegraph does).
pub const DETAIL_ZOOM: f64 = 0.4;

/// Height of a node's box: a header and one row per handle on its taller side.
pub fn node_height(node: &Node) -> f64 {
    let rows = node.inputs().len().max(node.outputs().len()).max(1);
    HEADER + rows as f64 * ROW + 8.0
}

/// Where the `i`th input (left edge) or output (right edge) handle sits.
pub fn handle_pos(node: &Node, output: bool, i: usize) -> Position {
    handle_at(node.position, output, i)
}

/// [`handle_pos`] for a node whose box starts at `at`.
pub fn handle_at(at: Position, output: bool, i: usize) -> Position {
    Position {
        x: at.x + if output { NODE_WIDTH } else { 0.0 },
        y: at.y + HEADER + ROW * (i as f64 + 0.5),
    }
}

/// The SVG path of an edge between two handle positions (a horizontal
/// cubic Bézier).
pub fn edge_path(a: Position, b: Position) -> String {
    let dx = ((b.x - a.x).abs() / 2.0).max(40.0);
    format!(
        "M {:.1} {:.1} C {:.1} {:.1}, {:.1} {:.1}, {:.1} {:.1}",
        a.x,
        a.y,
        a.x + dx,
        a.y,
        b.x - dx,
        b.y,
        b.x,
        b.y
    )
}

/// Pan and zoom: screen = world * zoom + pan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct View {
    pub pan_x: f64,
    pub pan_y: f64,
    pub zoom: f64,
}

impl Default for View {
    fn default() -> Self {
        Self {
            pan_x: 40.0,
            pan_y: 40.0,
            zoom: 1.0,
        }
    }
}

impl View {
    pub fn to_world(&self, sx: f64, sy: f64) -> Position {
        Position {
            x: (sx - self.pan_x) / self.zoom,
            y: (sy - self.pan_y) / self.zoom,
        }
    }

    /// Zooms by `factor` keeping the screen point (sx, sy) fixed.
    pub fn zoom_at(&self, factor: f64, sx: f64, sy: f64) -> View {
        let zoom = (self.zoom * factor).clamp(MIN_ZOOM, MAX_ZOOM);
        let w = self.to_world(sx, sy);
        View {
            pan_x: sx - w.x * zoom,
            pan_y: sy - w.y * zoom,
            zoom,
        }
    }

    /// Whether nodes are drawn in full (label, kind, handles) at this zoom;
    /// see [`DETAIL_ZOOM`].
    pub fn detailed(&self) -> bool {
        self.zoom >= DETAIL_ZOOM
    }

    /// The SVG transform of the world group.
    pub fn transform(&self) -> String {
        format!(
            "translate({:.2} {:.2}) scale({:.4})",
            self.pan_x, self.pan_y, self.zoom
        )
    }
}

/// Where a new node goes: `wanted` if a node fits there inside `view`
/// (a world rectangle) clear of the others, else the first clear spot of a
/// grid over the view from its top left, else the view's middle.
pub fn place_new(doc: &Workflow, wanted: Position, view: (f64, f64, f64, f64)) -> Position {
    const W: f64 = NODE_WIDTH + 40.0;
    const H: f64 = 160.0;
    let (x0, y0, x1, y1) = view;
    let clear = |p: Position| {
        p.x - 20.0 >= x0
            && p.y - 20.0 >= y0
            && p.x + W <= x1
            && p.y + H <= y1
            && doc.nodes.iter().all(|n| {
                let h = node_height(n);
                p.x + NODE_WIDTH + 20.0 <= n.position.x
                    || n.position.x + NODE_WIDTH + 20.0 <= p.x
                    || p.y + H - 40.0 <= n.position.y
                    || n.position.y + h + 20.0 <= p.y
            })
    };
    if clear(wanted) {
        return wanted;
    }
    let mut y = y0 + 20.0;
    while y + H <= y1 {
        let mut x = x0 + 20.0;
        while x + W <= x1 {
            let p = Position { x, y };
            if clear(p) {
                return p;
            }
            x += W;
        }
        y += H / 2.0;
    }
    Position {
        x: (x0 + x1) / 2.0 - NODE_WIDTH / 2.0,
        y: (y0 + y1) / 2.0 - 40.0,
    }
}

/// The world rectangle holding every node's box, `(x0, y0, x1, y1)`;
/// None for an empty graph.
pub fn bounds(doc: &Workflow) -> Option<(f64, f64, f64, f64)> {
    doc.nodes.iter().fold(None, |acc, n| {
        let (x0, y0, x1, y1) = acc.unwrap_or((f64::MAX, f64::MAX, f64::MIN, f64::MIN));
        Some((
            x0.min(n.position.x),
            y0.min(n.position.y),
            x1.max(n.position.x + NODE_WIDTH),
            y1.max(n.position.y + node_height(n)),
        ))
    })
}

/// An SVG `viewBox` showing the whole graph with `margin` around it.
pub fn view_box(doc: &Workflow, margin: f64) -> String {
    let (x0, y0, x1, y1) = bounds(doc).unwrap_or((0.0, 0.0, NODE_WIDTH, HEADER));
    format!(
        "{} {} {} {}",
        x0 - margin,
        y0 - margin,
        x1 - x0 + 2.0 * margin,
        y1 - y0 + 2.0 * margin
    )
}

/// The view that shows every node inside a `width` x `height` viewport
/// with a margin (the default view for an empty graph).
pub fn fit(doc: &Workflow, width: f64, height: f64) -> View {
    let Some((x0, y0, x1, y1)) = bounds(doc) else {
        return View::default();
    };
    let margin = 40.0;
    let zoom = ((width - 2.0 * margin) / (x1 - x0).max(1.0))
        .min((height - 2.0 * margin) / (y1 - y0).max(1.0))
        .clamp(MIN_ZOOM, 1.0);
    View {
        pan_x: margin - x0 * zoom + ((width - 2.0 * margin) - (x1 - x0) * zoom).max(0.0) / 2.0,
        pan_y: margin - y0 * zoom,
        zoom,
    }
}

/// The world rectangle a `width` x `height` viewport shows, grown by
/// `margin` screen pixels on every side: `(x0, y0, x1, y1)`.
pub fn visible_world(view: &View, width: f64, height: f64, margin: f64) -> (f64, f64, f64, f64) {
    let a = view.to_world(-margin, -margin);
    let b = view.to_world(width + margin, height + margin);
    (a.x, a.y, b.x, b.y)
}

/// Whether a node's box intersects a world rectangle (viewport culling:
/// nodes outside the view are not drawn).
pub fn node_visible(node: &Node, rect: (f64, f64, f64, f64)) -> bool {
    let (x0, y0, x1, y1) = rect;
    node.position.x < x1
        && node.position.x + NODE_WIDTH > x0
        && node.position.y < y1
        && node.position.y + node_height(node) > y0
}

/// The ids of nodes whose box intersects the world rectangle between two
/// corners (box selection).
pub fn in_box(doc: &Workflow, a: Position, b: Position) -> Vec<String> {
    let (x0, x1) = (a.x.min(b.x), a.x.max(b.x));
    let (y0, y1) = (a.y.min(b.y), a.y.max(b.y));
    doc.nodes
        .iter()
        .filter(|n| {
            n.position.x < x1
                && n.position.x + NODE_WIDTH > x0
                && n.position.y < y1
                && n.position.y + node_height(n) > y0
        })
        .map(|n| n.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::editor::model::new_node;

    fn doc(nodes: Vec<Node>) -> Workflow {
        Workflow {
            format_version: 1,
            id: "w".into(),
            name: "w".into(),
            description: String::new(),
            revision: 0,
            nodes,
            edges: Vec::new(),
        }
    }

    #[test]
    fn the_view_box_holds_every_node_with_its_margin() {
        let a = new_node("input", "a".into(), Position { x: -50.0, y: 10.0 }).unwrap();
        let b = new_node("output", "b".into(), Position { x: 300.0, y: 200.0 }).unwrap();
        let bh = node_height(&b);
        assert_eq!(bounds(&doc(Vec::new())), None);
        assert_eq!(
            bounds(&doc(vec![a.clone(), b.clone()])),
            Some((-50.0, 10.0, 300.0 + NODE_WIDTH, 200.0 + bh))
        );
        assert_eq!(
            view_box(&doc(vec![a, b]), 20.0),
            format!(
                "-70 -10 {} {}",
                350.0 + NODE_WIDTH + 40.0,
                190.0 + bh + 40.0
            )
        );
    }

    #[test]
    fn culling_keeps_the_nodes_in_view_and_a_margin() {
        let near = new_node("input", "a".into(), Position { x: 100.0, y: 100.0 }).unwrap();
        let edge = new_node(
            "input",
            "b".into(),
            Position {
                x: 1290.0,
                y: 100.0,
            },
        )
        .unwrap();
        let far = new_node(
            "input",
            "c".into(),
            Position {
                x: 5000.0,
                y: 100.0,
            },
        )
        .unwrap();
        let v = View {
            pan_x: 0.0,
            pan_y: 0.0,
            zoom: 1.0,
        };
        let rect = visible_world(&v, 1200.0, 700.0, 100.0);
        assert!(node_visible(&near, rect));
        assert!(node_visible(&edge, rect), "inside the margin");
        assert!(!node_visible(&far, rect));
        let zoomed_out = visible_world(&View { zoom: 0.2, ..v }, 1200.0, 700.0, 0.0);
        assert!(node_visible(&far, zoomed_out));
    }

    #[test]
    fn zoom_keeps_the_point_under_the_cursor() {
        let v = View::default();
        let before = v.to_world(300.0, 200.0);
        let z = v.zoom_at(1.25, 300.0, 200.0);
        let after = z.to_world(300.0, 200.0);
        assert!((before.x - after.x).abs() < 1e-9 && (before.y - after.y).abs() < 1e-9);
        assert_eq!(v.zoom_at(1000.0, 0.0, 0.0).zoom, MAX_ZOOM);
    }

    #[test]
    fn nodes_are_drawn_compact_only_below_the_detail_zoom() {
        let v = View::default();
        assert!(v.detailed(), "the default view draws labels and handles");
        assert!(View {
            zoom: DETAIL_ZOOM,
            ..v
        }
        .detailed());
        assert!(!View {
            zoom: DETAIL_ZOOM * 0.99,
            ..v
        }
        .detailed());
        // Five steps of the Zoom out button from 100% keep full detail; the
        // sixth goes below it (1.2^-5 = 0.40, 1.2^-6 = 0.33).
        let mut z = v;
        for _ in 0..5 {
            z = z.zoom_at(1.0 / 1.2, 300.0, 200.0);
        }
        assert!(z.detailed());
        assert!(!z.zoom_at(1.0 / 1.2, 300.0, 200.0).detailed());
    }

    #[test]
    fn fit_shows_every_node_and_box_selection_hits_boxes() {
        let a = new_node("input", "a".into(), Position { x: -500.0, y: 0.0 }).unwrap();
        let b = new_node(
            "output",
            "b".into(),
            Position {
                x: 2000.0,
                y: 900.0,
            },
        )
        .unwrap();
        let d = doc(vec![a.clone(), b.clone()]);
        let v = fit(&d, 1280.0, 800.0);
        for n in &d.nodes {
            let sx = n.position.x * v.zoom + v.pan_x;
            let sy = n.position.y * v.zoom + v.pan_y;
            assert!(
                (0.0..=1280.0).contains(&sx) && (0.0..=800.0).contains(&sy),
                "{sx},{sy}"
            );
        }
        assert_eq!(
            in_box(
                &d,
                Position {
                    x: -600.0,
                    y: -10.0
                },
                Position { x: -400.0, y: 10.0 }
            ),
            ["a"]
        );
        assert!(in_box(
            &d,
            Position { x: 0.0, y: 0.0 },
            Position { x: 10.0, y: 10.0 }
        )
        .is_empty());
        assert_eq!(handle_pos(&a, true, 0).x, -500.0 + NODE_WIDTH);
        assert!(edge_path(handle_pos(&a, true, 0), handle_pos(&b, false, 0))
            .starts_with("M -320.0 41.0 C"));
    }

    #[test]
    fn a_new_node_goes_where_it_is_seen_and_clear_of_the_others() {
        let mut doc = Workflow {
            format_version: 1,
            id: "w".into(),
            name: "w".into(),
            description: String::new(),
            revision: 0,
            nodes: Vec::new(),
            edges: Vec::new(),
        };
        let view = (0.0, 0.0, 1000.0, 600.0);
        let wanted = Position { x: 40.0, y: 80.0 };
        assert_eq!(place_new(&doc, wanted, view), wanted);
        for i in 0..8 {
            let at = place_new(&doc, Position { x: 5000.0, y: 0.0 }, view);
            assert!(
                at.x >= 0.0 && at.x + NODE_WIDTH <= 1000.0 && at.y >= 0.0 && at.y + 100.0 <= 600.0,
                "{at:?}"
            );
            let mut node =
                crate::editor::model::new_node("template", format!("t{i}"), at).expect("node");
            node.position = at;
            for other in &doc.nodes {
                let apart = (other.position.x - at.x).abs() >= NODE_WIDTH
                    || (other.position.y - at.y).abs() >= node_height(other);
                assert!(apart, "{at:?} overlaps {:?}", other.position);
            }
            doc.nodes.push(node);
        }
    }
}
