//! The minimap: the whole graph small in a corner of the canvas, with the
//! part in view outlined; a click (or a drag) on it centres the view there.
//! The nodes are one SVG path in world coordinates, rebuilt when the graph
//! changes and when a drag ends, never per frame of a drag; the view box
//! follows the camera.

use leptos::prelude::*;
use node_runtime::graph::Position;

use crate::editor::geometry::{self, View, NODE_WIDTH};
use crate::editor::model::Editor;

/// The nodes' path and the graph's bounds, as last drawn.
type NodesDrawn = (String, Option<(f64, f64, f64, f64)>);

/// The minimap's size on screen, in pixels.
pub const WIDTH: f64 = 200.0;
pub const HEIGHT: f64 = 130.0;

/// Every node's box as one path, in world coordinates.
fn node_path(e: &Editor) -> String {
    let mut d = String::with_capacity(e.doc.nodes.len() * 32);
    for n in &e.doc.nodes {
        let h = geometry::node_height(n);
        d.push_str(&format!(
            "M{:.0} {:.0}h{NODE_WIDTH}v{h:.0}h-{NODE_WIDTH}Z",
            n.position.x, n.position.y
        ));
    }
    d
}

/// The world rectangle the minimap shows: the graph and the view, grown to
/// the minimap's proportions and centred, `(x, y, width, height)`.
pub fn frame(
    graph: Option<(f64, f64, f64, f64)>,
    view: (f64, f64, f64, f64),
) -> (f64, f64, f64, f64) {
    let (vx0, vy0, vx1, vy1) = view;
    let (x0, y0, x1, y1) = graph.map_or(view, |(a, b, c, d)| {
        (a.min(vx0), b.min(vy0), c.max(vx1), d.max(vy1))
    });
    let pad = 40.0;
    let (w, h) = (x1 - x0 + 2.0 * pad, y1 - y0 + 2.0 * pad);
    let scale = (w / WIDTH).max(h / HEIGHT).max(f64::MIN_POSITIVE);
    let (fw, fh) = (WIDTH * scale, HEIGHT * scale);
    (x0 - pad - (fw - w) / 2.0, y0 - pad - (fh - h) / 2.0, fw, fh)
}

/// The view that centres world point `at` in a `width` x `height` canvas.
pub fn centre_on(view: &View, at: Position, width: f64, height: f64) -> View {
    View {
        pan_x: width / 2.0 - at.x * view.zoom,
        pan_y: height / 2.0 - at.y * view.zoom,
        ..*view
    }
}

#[component]
pub fn Minimap(
    editor: RwSignal<Editor>,
    cam: RwSignal<View>,
    /// The canvas's size in pixels.
    viewport: RwSignal<(f64, f64)>,
    /// Whether a pointer gesture is under way on the canvas (the nodes are
    /// redrawn when it ends).
    busy: Signal<bool>,
) -> impl IntoView {
    let nodes = Memo::new(move |previous: Option<&NodesDrawn>| {
        if busy.get() {
            if let Some(p) = previous {
                return p.clone();
            }
        }
        editor.with(|e| (node_path(e), geometry::bounds(&e.doc)))
    });
    let shown = Memo::new(move |_| {
        let (w, h) = viewport.get();
        let view = geometry::visible_world(&cam.get(), w, h, 0.0);
        let graph = nodes.with(|n| n.1);
        (view, frame(graph, view))
    });
    let host: NodeRef<leptos::svg::Svg> = NodeRef::new();
    let dragging = StoredValue::new(false);
    let go = move |ev: &leptos::ev::PointerEvent| {
        let Some(svg) = host.get_untracked() else {
            return;
        };
        let r = svg.get_bounding_client_rect();
        let (_, (fx, fy, fw, fh)) = shown.get_untracked();
        let at = Position {
            x: fx + (ev.client_x() as f64 - r.left()) / r.width().max(1.0) * fw,
            y: fy + (ev.client_y() as f64 - r.top()) / r.height().max(1.0) * fh,
        };
        let (w, h) = viewport.get_untracked();
        cam.update(|c| *c = centre_on(c, at, w, h));
    };
    let down = move |ev: leptos::ev::PointerEvent| {
        ev.stop_propagation();
        ev.prevent_default();
        dragging.set_value(true);
        if let Some(svg) = host.get_untracked() {
            let _ = svg.set_pointer_capture(ev.pointer_id());
        }
        go(&ev);
    };
    let moved = move |ev: leptos::ev::PointerEvent| {
        ev.stop_propagation();
        if dragging.get_value() {
            go(&ev);
        }
    };
    let up = move |ev: leptos::ev::PointerEvent| {
        ev.stop_propagation();
        dragging.set_value(false);
    };
    view! {
        <svg class="minimap" node_ref=host data-testid="minimap" role="img"
            aria-label="Minimap: click to move the view"
            width=WIDTH height=HEIGHT
            viewBox=move || shown.with(|(_, (x, y, w, h))| format!("{x:.1} {y:.1} {w:.1} {h:.1}"))
            on:pointerdown=down on:pointermove=moved on:pointerup=up on:pointercancel=up
            on:wheel=|ev: leptos::ev::WheelEvent| ev.stop_propagation()>
            <path class="minimap-nodes" d=move || nodes.with(|n| n.0.clone()) />
            <rect class="minimap-view" vector-effect="non-scaling-stroke"
                x=move || shown.with(|((x0, _, _, _), _)| *x0)
                y=move || shown.with(|((_, y0, _, _), _)| *y0)
                width=move || shown.with(|((x0, _, x1, _), _)| x1 - x0)
                height=move || shown.with(|((_, y0, _, y1), _)| y1 - y0) />
        </svg>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frame_holds_graph_and_view_in_the_minimaps_proportions() {
        let (x, y, w, h) = frame(Some((0.0, 0.0, 1000.0, 100.0)), (200.0, -50.0, 400.0, 50.0));
        assert!((w / h - WIDTH / HEIGHT).abs() < 1e-9);
        assert!(x <= 0.0 && y <= -50.0 && x + w >= 1000.0 && y + h >= 100.0);
        let c = centre_on(
            &View {
                pan_x: 0.0,
                pan_y: 0.0,
                zoom: 2.0,
            },
            Position { x: 10.0, y: 20.0 },
            800.0,
            600.0,
        );
        assert_eq!(c.to_world(400.0, 300.0), Position { x: 10.0, y: 20.0 });
    }
}
