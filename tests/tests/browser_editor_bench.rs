//! Editor benchmark in real Chromium (figures printed, not asserted: speed
//! targets live in benchmarks): a graph of 1,000 nodes and 1,200 edges,
//! time from navigation to every node and edge drawn (target <= 1 s), and
//! the frame times while dragging a node (target median <= 16 ms), with
//! the node's wires on the canvas's live layer.
//!
//! Chromium runs here without its frame-rate limit (`UNCAPPED`): a frame
//! starts as soon as the one before is done, so the interval between two
//! animation frames is the time the browser takes to produce one (the
//! pointermove handling, style, layout and paint). Under the 60 Hz limit
//! every interval would read 16.7 ms, whatever the work.

use fantoccini::Locator;
use glassbox_tests::harness::{app_and_browser_flags, http, json};
use glassbox_tests::ui::count;
use serde_json::{json, Value};

const NODES: usize = 1000;

/// Chromium flags that lift the frame-rate limit (see the module docs).
const UNCAPPED: &[&str] = &["--disable-frame-rate-limit", "--disable-gpu-vsync"];

/// Resolves, one frame after the whole graph is loaded and every node in
/// view drawn, with the time since navigation.
const DRAWN_JS: &str = "const done = arguments[arguments.length - 1];
                     (function check() {
                        const c = document.querySelector('[data-testid=canvas]');
                        if (c && c.dataset.nodeCount === '1000' && c.dataset.edgeCount === '1200' && document.querySelectorAll('[data-node]').length === Number(c.dataset.drawn)) {
                            requestAnimationFrame(() => done(performance.now()));
                        } else { setTimeout(check, 5); }
                     })();";

/// Drags node n41 by 60 pointer moves, one per animation frame; returns
/// the frame intervals and the time each pointermove took to handle.
const DRAG_JS: &str = "const done = arguments[arguments.length - 1];
                 const canvas = document.querySelector('[data-testid=canvas]');
                 const box = document.querySelector('[data-node=\"n41\"] > rect');
                 if (!box) { done({error: 'node n41 is not drawn'}); return; }
                 box.scrollIntoView();
                 const r = box.getBoundingClientRect();
                 let x = r.left + 2, y = r.top + 2;
                 box.dispatchEvent(new PointerEvent('pointerdown', {bubbles: true, clientX: x, clientY: y, pointerId: 1}));
                 const frames = [], work = [];
                 let last = null, i = 0;
                 function step(ts) {
                    if (last !== null) frames.push(ts - last);
                    last = ts;
                    if (i++ >= 60) {
                        canvas.dispatchEvent(new PointerEvent('pointerup', {bubbles: true, clientX: x, clientY: y, pointerId: 1}));
                        done({frames, work});
                        return;
                    }
                    x += 3; y += 1;
                    const t0 = performance.now();
                    canvas.dispatchEvent(new PointerEvent('pointermove', {bubbles: true, clientX: x, clientY: y, pointerId: 1}));
                    work.push(performance.now() - t0);
                    requestAnimationFrame(step);
                 }
                 requestAnimationFrame(step);";
const COLUMNS: usize = 40;

/// 1,000 two-input Template nodes on a grid; each feeds the next (999
/// edges) and 201 feed the node one row down (1,200 edges, no cycle).
fn big_workflow() -> Value {
    let nodes: Vec<Value> = (0..NODES)
        .map(|i| {
            json!({"id": format!("n{i}"), "label": format!("T{i}"), "kind": "template",
                   "position": {"x": (i % COLUMNS) as f64 * 230.0, "y": (i / COLUMNS) as f64 * 120.0},
                   "config": {"template": "{{ a }} {{ b }}"}})
        })
        .collect();
    let mut edges: Vec<Value> = (0..NODES - 1)
        .map(|i| json!({"id": format!("a{i}"), "source": {"node": format!("n{i}"), "handle": "text"}, "target": {"node": format!("n{}", i + 1), "handle": "a"}}))
        .collect();
    edges.extend((0..201).map(|i| json!({"id": format!("b{i}"), "source": {"node": format!("n{i}"), "handle": "text"}, "target": {"node": format!("n{}", i + COLUMNS), "handle": "b"}})));
    json!({"format_version": 1, "id": "big", "name": "Big graph", "revision": 0, "nodes": nodes, "edges": edges})
}

/// An attribute of the element matching `css` (empty when absent).
async fn attr(c: &fantoccini::Client, css: &str, name: &str) -> Result<String, String> {
    c.find(Locator::Css(css))
        .await
        .map_err(|e| format!("{css}: {e}"))?
        .attr(name)
        .await
        .map_err(|e| e.to_string())
        .map(Option::unwrap_or_default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editor_with_1000_nodes_renders_and_drags() {
    let Some((server, browser)) = app_and_browser_flags(&[], UNCAPPED).await else {
        return;
    };
    let c = browser.client.clone();
    let outcome = async {
        let token = browser.sign_in(&server).await?;
        let (s, body) = tokio::task::block_in_place(|| {
            http(
                &server.url,
                "POST",
                "/api/v1/workflows",
                Some(&token),
                Some(&big_workflow()),
            )
        });
        if s != 201 {
            return Err(format!("create: {s} {body}"));
        }
        let id = json(&body)["id"].as_str().ok_or("id")?.to_string();
        // A warm-up load (wasm compiled and cached), then the measured one.
        for _ in 0..2 {
            browser
                .open(&format!("{}/workflows/{id}", server.url))
                .await?;
            let _ = c.execute_async(DRAWN_JS, vec![]).await;
        }
        browser
            .open(&format!("{}/workflows/{id}", server.url))
            .await?;
        let rendered = c
            .execute_async(DRAWN_JS, vec![])
            .await
            .map_err(|e| e.to_string())?
            .as_f64()
            .ok_or("render time")?;
        let before = attr(&c, "[data-node=n41]", "data-x").await?;
        let drawn_nodes = attr(&c, "[data-testid=canvas]", "data-drawn").await?;
        let drag = c
            .execute_async(DRAG_JS, vec![])
            .await
            .map_err(|e| e.to_string())?;
        // The dragged node's four wires are drawn on the live layer, the
        // other 1,196 stay on the layer at rest (what keeps a drag cheap).
        let live_wires = count(&c, "svg.layer.live [data-edge]").await?;
        let resting_wires = count(&c, "svg.layer:not(.live) [data-edge]").await?;
        // Fit to view: all 1,000 nodes on screen, then drag again.
        let fit_drawn = c
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 const t0 = performance.now();
                 document.querySelector('[data-testid=fit]').click();
                 (function check() {
                    if (document.querySelectorAll('[data-node]').length >= 1000) {
                        requestAnimationFrame(() => done(performance.now() - t0));
                    } else { setTimeout(check, 5); }
                 })();",
                vec![],
            )
            .await
            .map_err(|e| e.to_string())?
            .as_f64()
            .ok_or("fit time")?;
        // Zoomed out that far, nodes are compact boxes (no labels, no handles).
        let fit_detail = attr(&c, "[data-testid=canvas]", "data-detail").await?;
        let fit_labels = count(&c, "[data-node] .node-label, [data-node] .handle").await?;
        let mid = attr(&c, "[data-node=n41]", "data-x").await?;
        let fit_drag = c
            .execute_async(DRAG_JS, vec![])
            .await
            .map_err(|e| e.to_string())?;
        let after = attr(&c, "[data-node=n41]", "data-x").await?;
        // Zooming back in draws labels and handles again.
        let zoom_in = c
            .find(Locator::XPath("//button[text()='Zoom in']"))
            .await
            .map_err(|e| e.to_string())?;
        for _ in 0..8 {
            zoom_in.click().await.map_err(|e| e.to_string())?;
        }
        let near_detail = attr(&c, "[data-testid=canvas]", "data-detail").await?;
        let near_labels = count(&c, "[data-node] .node-label").await?;
        let near_drawn: usize = attr(&c, "[data-testid=canvas]", "data-drawn")
            .await?
            .parse()
            .map_err(|e| format!("data-drawn: {e}"))?;
        browser.screenshot("editor-1000-nodes").await?;
        // Checked here, so a failure still closes the browser.
        if (live_wires, resting_wires) != (4, 1196) {
            return Err(format!("the selected node's wires on their own layer: {live_wires} live and {resting_wires} at rest, not 4 and 1196"));
        }
        if fit_detail != "compact" || fit_labels != 0 {
            return Err(format!("at Fit, 1,000 nodes are drawn compact, with no labels or handles: data-detail={fit_detail}, {fit_labels} labels and handles"));
        }
        if near_detail != "full" || near_drawn == 0 || near_labels != near_drawn {
            return Err(format!("zoomed back in, every node drawn has its label: data-detail={near_detail}, {near_labels} labels for {near_drawn} nodes"));
        }
        Ok::<_, String>((
            rendered,
            drawn_nodes,
            drag,
            [before, mid, after],
            fit_drawn,
            fit_drag,
        ))
    }
    .await;
    browser.close().await;
    let (rendered, drawn_nodes, drag, [before, mid, after], fit_drawn, fit_drag) =
        outcome.expect("the big graph renders");
    let list = |d: &Value, k: &str| -> Vec<f64> {
        d[k].as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_f64)
            .collect()
    };
    let (frames, work) = (list(&drag, "frames"), list(&drag, "work"));
    let (fit_frames, fit_work) = (list(&fit_drag, "frames"), list(&fit_drag, "work"));
    assert_eq!(frames.len(), 60, "{drag}");
    assert_eq!(fit_frames.len(), 60, "{fit_drag}");
    assert_ne!(before, mid, "the drag moved the node");
    assert_ne!(mid, after, "the drag at Fit moved the node");
    println!(
        "editor/1000_nodes_1200_edges: loaded and drawn {rendered:.0} ms after navigation ({drawn_nodes} nodes in view; target <= 1000 ms); drag: median frame {:.1} ms, uncapped (target <= 16 ms), median pointermove handling {:.2} ms, max frame {:.1} ms",
        median(frames.clone()),
        median(work),
        frames.iter().copied().fold(0.0, f64::max)
    );
    println!(
        "editor/1000_nodes_1200_edges fit to view (all 1,000 drawn, compact): drawn {fit_drawn:.0} ms after Fit; drag: median frame {:.1} ms, uncapped, median pointermove handling {:.2} ms",
        median(fit_frames),
        median(fit_work),
    );
}
