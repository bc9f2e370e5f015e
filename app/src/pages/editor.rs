//! `/workflows/:id`: the workflow editor. An SVG canvas with pan (drag the
//! background), zoom (wheel, buttons, fit), node drag, wiring by dragging
//! from an output handle to an input handle, box selection (shift-drag),
//! Delete, undo/redo, and Save as a new revision. The document logic lives
//! in `editor::model`; this module draws it and forwards input.

use std::collections::HashMap;

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;
use node_runtime::graph::{Edge, HandleRef, NodeKind, Position};

use crate::api;
use crate::editor::geometry::{self, View, HEADER, NODE_WIDTH, ROW};
use crate::editor::model::{can_connect, Edit, Editor, PALETTE};
use crate::pages::inspector::Inspector;
use crate::pages::run_panel::RunPanel;
use node_runtime::graph::validate::{Diagnostic, Severity};

mod keys;
mod live_nodes;
mod minimap;
mod panes;

use live_nodes::{sync_live, NodeLive};
use minimap::Minimap;
use panes::{Panes, Splitter};

/// What the pointer is doing.
#[derive(Debug, Clone, PartialEq)]
enum Drag {
    Nodes { last: (f64, f64) },
    Pan { last: (f64, f64) },
    Wire { from: HandleRef, to: Position },
    Select { from: Position, to: Position },
}

/// One entry of the palette: a node kind, or a tool (a Tool node with it).
#[derive(Clone)]
enum PaletteHit {
    Kind(&'static str, &'static str),
    Tool(String, serde_json::Value),
}

impl PaletteHit {
    fn label(&self) -> String {
        match self {
            PaletteHit::Kind(_, label) => (*label).to_string(),
            PaletteHit::Tool(reference, _) => format!("Tool: {reference}"),
        }
    }
}

/// A palette entry being dragged onto the canvas: where the pointer went
/// down and where it is now (client pixels).
#[derive(Clone)]
struct PaletteDrag {
    hit: PaletteHit,
    from: (f64, f64),
    at: (f64, f64),
}

impl PaletteDrag {
    /// Past a few pixels a press on an entry is a drag, not a click.
    fn moved(&self) -> bool {
        (self.at.0 - self.from.0).hypot(self.at.1 - self.from.1) > 4.0
    }
}

/// [`crate::editor::layout::auto_layout`] in a wasm module of its own (the
/// layout crate is a sixth of the editor's code), fetched on first use.
#[leptos::wasm_split::wasm_split(auto_layout, wasm_split_path = ::leptos::wasm_split, fallible)]
#[allow(improper_ctypes_definitions)]
fn auto_layout(
    doc: &node_runtime::graph::Workflow,
) -> Result<Vec<(String, Position)>, leptos::wasm_split::SplitLoaderError> {
    Ok(crate::editor::layout::auto_layout(doc))
}

/// The inspector (every node's panel, the tool selector, the agent's
/// timeline) in a wasm module of its own, fetched when a node is first
/// selected: opening the editor does not wait for it.
#[leptos::wasm_split::wasm_split(inspector, wasm_split_path = ::leptos::wasm_split, fallible)]
#[allow(improper_ctypes_definitions)]
fn inspector_view(
    editor: RwSignal<Editor>,
    tools: LocalResource<Result<Vec<node_runtime::wire::ToolView>, api::ApiError>>,
    diagnostics: ReadSignal<Vec<Diagnostic>>,
    watched: crate::pages::run_panel::Watched,
) -> Result<AnyView, leptos::wasm_split::SplitLoaderError> {
    Ok(
        view! { <Inspector editor=editor tools=tools diagnostics=diagnostics watched=watched /> }
            .into_any(),
    )
}

#[component]
pub fn EditorPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.with(|p| p.get("id")).unwrap_or_default();
    let loaded = LocalResource::new(move || {
        let id = id();
        async move {
            let view = api::get_workflow(&id).await?;
            // Its nodes' input handles, before the first drawing.
            crate::templates::learn_workflow(&view.workflow).await;
            Ok::<_, api::ApiError>(view)
        }
    });
    view! {
        <Suspense fallback=|| view! { <p class="muted">"Loading the workflow…"</p> }>
            {move || loaded.get().map(|r| match r {
                Ok(w) => view! { <Canvas view=w /> }.into_any(),
                Err(e) => view! { <p class="error" role="alert" data-testid="editor-error">{e.to_string()}</p> }.into_any(),
            })}
        </Suspense>
    }
}

/// The canvas's size in pixels (at least 1 x 1), once it is mounted.
fn canvas_size(host: NodeRef<leptos::html::Div>) -> Option<(f64, f64)> {
    host.get_untracked().map(|h| {
        (
            h.client_width().max(1) as f64,
            h.client_height().max(1) as f64,
        )
    })
}

#[component]
fn Canvas(view: api::WorkflowView) -> impl IntoView {
    let workflow_id = view.id.clone();
    let editor = RwSignal::new(Editor::new(view.workflow));
    // An edit that brings a template the app has not seen (a new node, an
    // import, an undo past what is kept) draws it without input handles;
    // once drawn, its variables are learned and it is drawn again.
    Effect::new(move |_| {
        editor.track();
        request_animation_frame(move || {
            crate::templates::learn_missed(move || editor.update(|_| {}))
        });
    });
    let cam = RwSignal::new(View::default());
    let panes = Panes::load();
    let drag = RwSignal::new(None::<Drag>);
    let status = RwSignal::new(None::<(bool, String)>);
    let saving = RwSignal::new(false);
    let search = RwSignal::new(String::new());
    // The shortcuts help (`?`).
    let help = RwSignal::new(false);
    // Copied nodes (the editor's own clipboard: it survives within the page).
    let clip = StoredValue::new(crate::editor::model::Clip::default());
    let host: NodeRef<leptos::html::Div> = NodeRef::new();
    let tools = LocalResource::new(api::list_tools);
    // The run started from this page, watched live (see `run_panel`).
    let watched: crate::pages::run_panel::Watched = RwSignal::new(None);

    // The server's diagnostics for the document as it is now (positions do
    // not matter, so a drag does not ask); a stale answer is dropped.
    let diagnostics = RwSignal::new(Vec::<Diagnostic>::new());
    // Per-node signals for drawing, kept in step with the editor by one
    // effect; the structure epoch (moves do not bump it) is mirrored the
    // same way, so what is keyed by it (the views in view, validation)
    // does not wake on a move.
    let live = StoredValue::new(editor.with_untracked(|e| {
        let mut m = HashMap::new();
        sync_live(&mut m, e);
        m
    }));
    let structure = RwSignal::new(editor.with_untracked(Editor::epoch));
    Effect::new(move |_| {
        let (changed, now) =
            editor.with(|e| (live.try_update_value(|m| sync_live(m, e)), e.epoch()));
        for (l, position, selected) in changed.into_iter().flatten() {
            if l.position.get_untracked() != position {
                l.position.set(position);
            }
            if l.selected.get_untracked() != selected {
                l.selected.set(selected);
            }
        }
        if structure.get_untracked() != now {
            structure.set(now);
        }
    });
    let node_live = move |id: &str| live.with_value(|m| m.get(id).cloned());
    // Asked on the first draw and on each structure change.
    let asked = StoredValue::new(0u64);
    Effect::new(move |_| {
        structure.track();
        let doc = editor.with_untracked(|e| e.doc.clone());
        let n = asked.get_value() + 1;
        asked.set_value(n);
        leptos::task::spawn_local(async move {
            if let Ok(found) = api::validate(&doc).await {
                if asked.get_value() == n {
                    diagnostics.set(found);
                }
            }
        });
    });

    // Unsaved changes: the browser asks before leaving the page.
    let unload = window_event_listener(leptos::ev::beforeunload, move |ev| {
        if editor.with_untracked(Editor::is_dirty) {
            ev.prevent_default();
            ev.set_return_value("There are unsaved changes.");
        }
    });
    on_cleanup(move || unload.remove());
    // Leaving through a link of the app asks first too (a capture listener,
    // so it runs before the router's).
    // Kept by the page's owner: dropped (and removed) when the page goes.
    StoredValue::new_local(keys::confirm_leaving(move || {
        editor.with_untracked(Editor::is_dirty)
    }));

    let local = move |ev: &leptos::ev::MouseEvent| -> (f64, f64) {
        let (left, top) = host
            .get_untracked()
            .map(|h| {
                let r = h.get_bounding_client_rect();
                (r.left(), r.top())
            })
            .unwrap_or((0.0, 0.0));
        (ev.client_x() as f64 - left, ev.client_y() as f64 - top)
    };
    let refuse = move |message: String| status.set(Some((false, message)));
    let apply = move |edit: Edit| {
        let result = editor.try_update(|e| e.apply(edit)).expect("editor signal");
        if let Err(err) = result {
            refuse(err.to_string());
        }
    };

    // A viewer reads the workflow (selects, inspects, pans) but saves
    // nothing (the server refuses it too).
    let gate = crate::workspace::Gate::editor(crate::workspace::VIEWER_EDIT_HINT);
    let save = {
        let workflow_id = workflow_id.clone();
        move || {
            if saving.get_untracked() || gate.off() {
                return;
            }
            saving.set(true);
            // An earlier message is about something else: the save's own
            // outcome replaces it.
            status.set(None);
            let (base, doc) = editor.with_untracked(|e| (e.saved_revision, e.doc.clone()));
            let workflow_id = workflow_id.clone();
            leptos::task::spawn_local(async move {
                match api::save_workflow(&workflow_id, base, &doc).await {
                    Ok(saved) => {
                        editor.update(|e| e.mark_saved(saved.revision));
                        status.set(Some((true, format!("Saved as revision {}.", saved.revision))));
                    }
                    Err(api::ApiError::Api { status: 409, message, .. }) => status.set(Some((
                        false,
                        format!("Not saved: {message}. Someone saved a newer revision; reload to see it (your changes are still here)."),
                    ))),
                    Err(e) => status.set(Some((false, format!("Not saved: {e}")))),
                }
                saving.set(false);
            });
        }
    };

    // Adds a node of `kind` where it was dropped (`dropped`, in world
    // coordinates), else beside the selected node (else the last one), so
    // new nodes line up left to right; where that is out of view or taken,
    // the nearest clear spot in view, so a new node is always seen.
    let add = move |kind: &'static str, dropped: Option<Position>| {
        let (w, h) = canvas_size(host).unwrap_or((1200.0, 700.0));
        let view = cam.get_untracked();
        let (x0, y0, x1, y1) = geometry::visible_world(&view, w, h, 0.0);
        let at = editor.with_untracked(|e| {
            let beside = dropped.unwrap_or_else(|| {
                e.selection
                    .iter()
                    .next()
                    .and_then(|id| e.node(id))
                    .or_else(|| e.doc.nodes.last())
                    .map(|n| Position {
                        x: n.position.x + NODE_WIDTH + 80.0,
                        y: n.position.y,
                    })
                    .unwrap_or(Position { x: 40.0, y: 80.0 })
            });
            // A drop point is kept when the node there is clear of the
            // others, even where the node would reach past the view.
            let reach = (x0 - NODE_WIDTH, y0 - 400.0, x1 + NODE_WIDTH, y1 + 400.0);
            match dropped.map(|at| geometry::place_new(&e.doc, at, reach)) {
                Some(kept) if Some(kept) == dropped => kept,
                _ => geometry::place_new(&e.doc, beside, (x0, y0, x1, y1)),
            }
        });
        let created = editor
            .try_update(|e| {
                e.apply(Edit::AddNode {
                    kind: kind.into(),
                    at,
                })
            })
            .expect("editor signal");
        match created {
            Ok(Some(id)) => editor.update(|e| {
                e.clear_selection();
                e.selection.insert(id);
            }),
            Ok(None) => {}
            Err(err) => refuse(err.to_string()),
        }
    };

    let on_down = move |ev: leptos::ev::PointerEvent| {
        let p = local(&ev);
        if ev.shift_key() {
            let w = cam.get_untracked().to_world(p.0, p.1);
            drag.set(Some(Drag::Select { from: w, to: w }));
        } else {
            editor.update(|e| e.clear_selection());
            drag.set(Some(Drag::Pan { last: p }));
        }
    };
    let on_move = move |ev: leptos::ev::PointerEvent| {
        let p = local(&ev);
        let Some(d) = drag.get_untracked() else {
            return;
        };
        let v = cam.get_untracked();
        match d {
            Drag::Nodes { last } => {
                let ids: Vec<String> =
                    editor.with_untracked(|e| e.selection.iter().cloned().collect());
                apply(Edit::Move {
                    ids,
                    dx: (p.0 - last.0) / v.zoom,
                    dy: (p.1 - last.1) / v.zoom,
                });
                drag.set(Some(Drag::Nodes { last: p }));
            }
            Drag::Pan { last } => {
                cam.set(View {
                    pan_x: v.pan_x + p.0 - last.0,
                    pan_y: v.pan_y + p.1 - last.1,
                    ..v
                });
                drag.set(Some(Drag::Pan { last: p }));
            }
            Drag::Wire { from, .. } => drag.set(Some(Drag::Wire {
                from,
                to: v.to_world(p.0, p.1),
            })),
            Drag::Select { from, .. } => drag.set(Some(Drag::Select {
                from,
                to: v.to_world(p.0, p.1),
            })),
        }
    };
    let on_up = move |_ev: leptos::ev::PointerEvent| {
        if let Some(Drag::Select { from, to }) = drag.get_untracked() {
            let ids = editor.with_untracked(|e| geometry::in_box(&e.doc, from, to));
            editor.update(|e| e.selection.extend(ids));
        }
        editor.update(Editor::end_gesture);
        drag.set(None);
    };
    let on_wheel = move |ev: leptos::ev::WheelEvent| {
        ev.prevent_default();
        let p = local(&ev);
        let factor = if ev.delta_y() < 0.0 { 1.1 } else { 1.0 / 1.1 };
        cam.update(|c| *c = c.zoom_at(factor, p.0, p.1));
    };
    // The editor's shortcuts work wherever the focus is on the page (after
    // a paste, an undo, a click in a panel); while a field is being typed
    // in, only Ctrl+S (save) is the editor's.
    let save_key = save.clone();
    let shortcuts = window_event_listener(leptos::ev::keydown, move |ev| {
        if keys::typing_in_a_field(&ev) {
            if (ev.ctrl_key() || ev.meta_key()) && ev.key() == "s" {
                ev.prevent_default();
                save_key();
            }
            return;
        }
        keys::on_key(&ev, editor, clip, help, &save_key, &refuse, &apply)
    });
    on_cleanup(move || shortcuts.remove());
    let fit = move || {
        let (w, h) = canvas_size(host).unwrap_or((1200.0, 700.0));
        cam.set(editor.with_untracked(|e| geometry::fit(&e.doc, w, h)));
    };
    // The graph fits the canvas when the page opens (once the canvas is
    // laid out and has its size).
    Effect::new(move |fitted: Option<bool>| {
        if fitted == Some(true) || host.get().is_none() {
            return fitted.unwrap_or(false);
        }
        request_animation_frame(fit);
        true
    });
    let place = move |placed: Vec<(String, Position)>| {
        editor.update(|e| {
            e.begin_gesture();
            for (id, at) in placed {
                let Some(was) = e.node(&id).map(|n| n.position) else {
                    continue;
                };
                let (dx, dy) = (at.x - was.x, at.y - was.y);
                if dx != 0.0 || dy != 0.0 {
                    let _ = e.apply(Edit::Move {
                        ids: vec![id],
                        dx,
                        dy,
                    });
                }
            }
            e.end_gesture();
        });
        fit();
    };
    // Auto-layout: layered, left to right (`editor::layout`), one undo
    // step, then the whole graph in view. Its code is a module of its own,
    // fetched on the first use.
    let arrange = move || {
        let doc = editor.with_untracked(|e| e.doc.clone());
        leptos::task::spawn_local(async move {
            match auto_layout(&doc).await {
                Ok(placed) => place(placed),
                Err(_) => {
                    refuse("Auto-layout could not be loaded from the server; try again.".into())
                }
            }
        });
    };

    // Viewport culling: only nodes (and their edges) within the view and a
    // margin are drawn, so a big graph costs what is on screen. The set is
    // recomputed when the view or the structure changes, not during a drag.
    let viewport = RwSignal::new((1200.0_f64, 700.0_f64));
    Effect::new(move |_| {
        // Once the canvas is mounted.
        let _ = host.get();
        if let Some(size) = canvas_size(host) {
            viewport.set(size);
        }
    });
    let resize = window_event_listener(leptos::ev::resize, move |_| {
        if let Some(size) = canvas_size(host) {
            viewport.set(size);
        }
    });
    on_cleanup(move || resize.remove());
    let shown = Memo::new(move |_| {
        let _ = structure.get();
        let (w, h) = viewport.get();
        let rect = geometry::visible_world(&cam.get(), w, h, 200.0);
        editor.with_untracked(|e| {
            e.doc
                .nodes
                .iter()
                .filter(|n| geometry::node_visible(n, rect))
                .map(|n| n.id.clone())
                .collect::<std::collections::BTreeSet<_>>()
        })
    });

    // Only the wire being drawn, so the inputs' verdicts do not rerun on
    // every pointer move of a node drag.
    let wiring = Memo::new(move |_| match drag.get() {
        Some(Drag::Wire { from, .. }) => Some(from),
        _ => None,
    });
    // Full detail or compact boxes (see `geometry::DETAIL_ZOOM`): changes
    // only when the zoom crosses the threshold.
    let detailed = Memo::new(move |_| cam.with(View::detailed));
    // One view per node, keyed by id, the editor's structure epoch and the
    // detail level: a node's box and handles are built once per structure
    // change (or zoom across the threshold), and a drag only updates the
    // transforms (and the paths of edges).
    let node_keys = move || {
        let shown = shown.get();
        // A structure change rebuilds the views even when the set in view is the same.
        let epoch = structure.get();
        let detailed = detailed.get();
        editor.with_untracked(|e| {
            e.doc
                .nodes
                .iter()
                .filter(|n| shown.contains(&n.id))
                .map(|n| (n.id.clone(), epoch, detailed))
                .collect::<Vec<_>>()
        })
    };
    // Each node's diagnostics summed up once (errors, warnings, the
    // messages as one tooltip), so each node's badge reads its own.
    let by_node = Memo::new(move |_| {
        diagnostics.with(|ds| {
            let mut by: HashMap<String, (usize, usize, Vec<String>)> = HashMap::new();
            for d in ds {
                let (errors, warnings, notes) = by.entry(d.node.clone()).or_default();
                match d.severity {
                    Severity::Error => *errors += 1,
                    Severity::Warning => *warnings += 1,
                }
                notes.push(d.message.clone());
            }
            by
        })
    });
    let node_view = move |(id, _epoch, detailed): (String, u64, bool)| {
        let Some(n) = editor.with_untracked(|e| e.node(&id).cloned()) else {
            return ().into_any();
        };
        let height = geometry::node_height(&n);
        let badge = {
            let id = id.clone();
            move || {
                let (errors, warnings, notes) = by_node.with(|by| {
                    by.get(&id)
                        .map(|(e, w, notes)| (*e, *w, notes.join("\n")))
                        .unwrap_or_default()
                });
                (errors + warnings > 0).then(|| {
                    let (class, text, severity) = if errors > 0 {
                        ("diag error", format!("✖ {errors}"), "error")
                    } else {
                        ("diag warning", format!("⚠ {warnings}"), "warning")
                    };
                    view! {
                        <g class=class data-testid="node-diagnostic" data-severity=severity>
                            <title>{notes}</title>
                            <rect x=NODE_WIDTH - 46.0 y="-12" width="40" height="18" rx="9" />
                            <text x=NODE_WIDTH - 26.0 y="1" text-anchor="middle">{text}</text>
                        </g>
                    }
                })
            }
        };
        let node_id = id.clone();
        let down = move |ev: leptos::ev::PointerEvent| {
            ev.stop_propagation();
            let p = local(&ev);
            let shift = ev.shift_key();
            editor.update(|e| {
                if shift {
                    if !e.selection.remove(&node_id) {
                        e.selection.insert(node_id.clone());
                    }
                } else if !e.selection.contains(&node_id) {
                    e.clear_selection();
                    e.selection.insert(node_id.clone());
                }
                e.begin_gesture();
            });
            drag.set(Some(Drag::Nodes { last: p }));
        };
        // Enter or Space on a focused node selects it (Shift: adds or
        // removes it), which opens its panel.
        let key_id = id.clone();
        let key_select = move |ev: leptos::ev::KeyboardEvent| {
            if !matches!(ev.key().as_str(), "Enter" | " ") {
                return;
            }
            ev.prevent_default();
            let shift = ev.shift_key();
            editor.update(|e| {
                if shift {
                    if !e.selection.remove(&key_id) {
                        e.selection.insert(key_id.clone());
                    }
                } else {
                    e.clear_selection();
                    e.selection.insert(key_id.clone());
                }
            });
        };
        // Compact nodes have no handles (a drawn wire still ends where
        // they would be).
        let (inputs, outputs) = if detailed {
            (n.inputs(), n.outputs())
        } else {
            (Vec::new(), Vec::new())
        };
        let in_handles = inputs
            .into_iter()
            .enumerate()
            .map(|(i, name)| {
                let y = HEADER + ROW * (i as f64 + 0.5);
                let target = HandleRef { node: id.clone(), handle: name.clone() };
                // While wiring, each input says whether it takes the wire.
                let verdict = {
                    let target = target.clone();
                    move || {
                        wiring.get().map(|from| editor.with_untracked(|e| can_connect(&e.doc, &from, &target).is_ok()))
                    }
                };
                // Dragging from a wired input takes its wire along: dropped
                // on another input it rewires, elsewhere it detaches; one
                // undo step either way.
                let wired_target = target.clone();
                let down = move |ev: leptos::ev::PointerEvent| {
                    let Some(edge) = editor.with_untracked(|e| {
                        e.doc.edges.iter().find(|x| x.target == wired_target).cloned()
                    }) else {
                        return;
                    };
                    ev.stop_propagation();
                    editor.update(|e| {
                        e.begin_gesture();
                        let _ = e.apply(Edit::Delete { nodes: Vec::new(), edges: vec![edge.id.clone()] });
                    });
                    let p = local(&ev);
                    let to = cam.get_untracked().to_world(p.0, p.1);
                    drag.set(Some(Drag::Wire { from: edge.source, to }));
                };
                let up = move |ev: leptos::ev::PointerEvent| {
                    if let Some(Drag::Wire { from, .. }) = drag.get_untracked() {
                        ev.stop_propagation();
                        drag.set(None);
                        apply(Edit::Connect { source: from, target: target.clone() });
                        editor.update(Editor::end_gesture);
                    }
                };
                view! {
                    // One class for the three states: one effect per handle, one check per wire.
                    <g class=move || match verdict() {
                        Some(true) => "handle in accepts",
                        Some(false) => "handle in refused",
                        None => "handle in",
                    }>
                        <circle cx="0" cy=y r="6" data-handle=format!("in:{name}") on:pointerdown=down on:pointerup=up />
                        <text x="10" y=y + 4.0 class="handle-label">{name.clone()}</text>
                    </g>
                }
            })
            .collect_view();
        let out_handles = outputs
            .into_iter()
            .enumerate()
            .map(|(i, name)| {
                let y = HEADER + ROW * (i as f64 + 0.5);
                let source = HandleRef { node: id.clone(), handle: name.clone() };
                // A pinned handle's menu: "Materialize as node" ejects the
                // call the pin selected in the watched run.
                let is_pin = matches!(&n.kind, NodeKind::Agent(c) if c.pins.iter().any(|p| p.name == name));
                let (menu_agent, menu_pin) = (id.clone(), name.clone());
                let menu = move |ev: leptos::ev::MouseEvent| {
                    if !is_pin {
                        return;
                    }
                    ev.prevent_default();
                    ev.stop_propagation();
                    let (agent, pin) = (menu_agent.clone(), menu_pin.clone());
                    // Its code comes with the live run's (`run_panel::materialize_pin`).
                    leptos::task::spawn_local(async move {
                        match crate::pages::run_panel::materialize_pin(editor, tools, watched, agent, pin.clone()).await {
                            Ok(Ok(())) => status.set(Some((true, format!("The call pinned as `{pin}` is now a Tool node, selected; save to keep it.")))),
                            Ok(Err(e)) => refuse(e),
                            Err(_) => refuse("Materialize could not be loaded from the server; try again.".into()),
                        }
                    });
                };
                let down = move |ev: leptos::ev::PointerEvent| {
                    ev.stop_propagation();
                    let p = local(&ev);
                    let to = cam.get_untracked().to_world(p.0, p.1);
                    drag.set(Some(Drag::Wire { from: source.clone(), to }));
                };
                view! {
                    <g class="handle out">
                        <text x=NODE_WIDTH - 10.0 y=y + 4.0 text-anchor="end" class="handle-label">{name.clone()}</text>
                        <circle cx=NODE_WIDTH cy=y r="6" data-handle=format!("out:{name}") on:pointerdown=down on:contextmenu=menu>
                            {is_pin.then(|| view! { <title>"Pinned handle: right-click to materialize its call as a node"</title> })}
                        </circle>
                    </g>
                }
            })
            .collect_view();
        // This node's own signals: a drag touches one node's attributes,
        // not a thousand.
        let Some(NodeLive { position, selected }) = node_live(&id) else {
            return ().into_any();
        };
        // The node's state in the run being watched, if any.
        let run_state = {
            let id = id.clone();
            Memo::new(move |_| {
                watched.with(|w| {
                    w.as_ref()
                        .map(|(_, l)| l.nodes.get(&id).cloned().unwrap_or_else(|| "queued".into()))
                })
            })
        };
        let (p1, p2) = (position.clone(), position.clone());
        let p1 = move || p1.get().x.to_string();
        let p2 = move || p2.get().y.to_string();
        let p3 = move || {
            let p = position.get();
            format!("translate({:.2} {:.2})", p.x, p.y)
        };
        view! {
            <g class="node" class:compact=!detailed class:selected=move || selected.get() data-node=id.clone() data-kind=n.kind_name()
                data-x=p1 data-y=p2 transform=p3
                tabindex="0" role="button" aria-label=format!("{} ({}) node", n.label, n.kind_name())
                data-run-state=run_state
                on:pointerdown=down on:keydown=key_select>
                <rect width=NODE_WIDTH height=height rx="6" />
                {detailed.then(|| view! {
                    <text x="10" y="19" class="node-label">{n.label.clone()}</text>
                    <text x=NODE_WIDTH - 10.0 y="19" text-anchor="end" class="node-kind">{n.kind_name()}</text>
                })}
                {in_handles}
                {out_handles}
                {badge}
            </g>
        }
        .into_any()
    };
    // The selected nodes: what a drag moves. Their wires are drawn on a
    // layer of their own (see the canvas's layers below).
    let moving = Memo::new(move |_| editor.with(|e| e.selection.clone()));
    // The wires in view on one layer: `live`, those with an end on a
    // selected node; else the rest.
    let edge_keys = move |live: bool| {
        let shown = shown.get();
        // A structure change rebuilds the views even when the set in view is the same.
        let epoch = structure.get();
        moving.with(|moving| {
            editor.with_untracked(|e| {
                e.doc
                    .edges
                    .iter()
                    .filter(|x| shown.contains(&x.source.node) || shown.contains(&x.target.node))
                    .filter(|x| {
                        (moving.contains(&x.source.node) || moving.contains(&x.target.node)) == live
                    })
                    .map(|x| (x.clone(), epoch))
                    .collect::<Vec<_>>()
            })
        })
    };
    // The selected wires as a memo: an edge's class is redrawn only when
    // the wire selection changes, not on every move.
    let selected_edges = Memo::new(move |_| editor.with(|e| e.selected_edges.clone()));
    // The edge comes with its key: finding it by id would scan the edges
    // once per edge drawn.
    let edge_view = move |(edge, _epoch): (Edge, u64)| {
        // Handle rows are fixed until the next structure change.
        let rows = editor.with_untracked(|e| {
            let i = e
                .node(&edge.source.node)?
                .outputs()
                .iter()
                .position(|h| *h == edge.source.handle)?;
            let j = e
                .node(&edge.target.node)?
                .inputs()
                .iter()
                .position(|h| *h == edge.target.handle)?;
            Some((i, j))
        });
        let Some((i, j)) = rows else {
            return ().into_any();
        };
        // The ends' own position signals: the path is rebuilt only when an
        // end moved.
        let (Some(from), Some(to)) = (node_live(&edge.source.node), node_live(&edge.target.node))
        else {
            return ().into_any();
        };
        let (from, to) = (from.position, to.position);
        let d = move || {
            geometry::edge_path(
                geometry::handle_at(from.get(), true, i),
                geometry::handle_at(to.get(), false, j),
            )
        };
        // A click on the wire (a wider, invisible stroke under it) selects
        // it; Delete then removes it.
        let (pick_id, class_id) = (edge.id.clone(), edge.id.clone());
        let pick = move |ev: leptos::ev::PointerEvent| {
            ev.stop_propagation();
            editor.update(|e| e.select_edge(&pick_id));
        };
        let class = move || {
            if selected_edges.with(|s| s.contains(&class_id)) {
                "edge selected"
            } else {
                "edge"
            }
        };
        view! {
            <g class="wire" on:pointerdown=pick>
                <path class="edge-hit" d=d.clone() />
                <path class=class d=d data-edge=edge.id.clone()
                    data-source=format!("{}.{}", edge.source.node, edge.source.handle)
                    data-target=format!("{}.{}", edge.target.node, edge.target.handle) />
            </g>
        }
        .into_any()
    };
    let overlay = move || {
        match drag.get() {
        Some(Drag::Wire { from, to }) => editor.with(|e| {
            let node = e.node(&from.node)?;
            let i = node.outputs().iter().position(|h| *h == from.handle)?;
            Some(view! { <path class="edge pending" d=geometry::edge_path(geometry::handle_pos(node, true, i), to) /> }.into_any())
        }),
        Some(Drag::Select { from, to }) => Some(view! {
            <rect class="select-box" x=from.x.min(to.x) y=from.y.min(to.y)
                width=(to.x - from.x).abs() height=(to.y - from.y).abs() />
        }.into_any()),
        _ => None,
    }
    };
    // A Tool node with `reference` (its fields from the tool's schema),
    // added and configured as one undo step.
    let add_tool = move |reference: String, schema: serde_json::Value, at: Option<Position>| {
        editor.update(Editor::begin_gesture);
        add("tool", at);
        editor.update(|e| {
            let id = e.selection.iter().next().cloned();
            if let Some((id, NodeKind::Tool(mut c))) =
                id.and_then(|id| e.node(&id).map(|n| (id, n.kind.clone())))
            {
                crate::editor::nodes::switch_tool(&mut c, &reference, &schema);
                let _ = e.apply(Edit::SetKind {
                    node: id,
                    kind: Box::new(NodeKind::Tool(c)),
                });
            }
            e.end_gesture();
        });
    };
    // The palette's hits for the search: node kinds, then (once something
    // is typed) tools by name or description, which add a Tool node.
    let hits = move || -> Vec<PaletteHit> {
        let q = search.get();
        let q_low = crate::editor::tools::lowercase(q.trim());
        let mut hits: Vec<PaletteHit> = PALETTE
            .iter()
            .filter(|(_, label)| crate::editor::tools::lowercase(label).contains(&q_low))
            .map(|&(kind, label)| PaletteHit::Kind(kind, label))
            .collect();
        if !q_low.is_empty() {
            tools.with(|t| {
                if let Some(Ok(list)) = t {
                    hits.extend(
                        crate::editor::tools::filter(list, q.trim(), "", false)
                            .into_iter()
                            .take(8)
                            .map(|t| PaletteHit::Tool(t.reference.clone(), t.input_schema.clone())),
                    );
                }
            });
        }
        hits
    };
    let choose_at = move |hit: PaletteHit, at: Option<Position>| match hit {
        PaletteHit::Kind(kind, _) => add(kind, at),
        PaletteHit::Tool(reference, schema) => add_tool(reference, schema, at),
    };
    let choose = move |hit: PaletteHit| choose_at(hit, None);
    // Dragging a palette entry onto the canvas adds it where it is
    // dropped; a press that does not move is a click (`choose`).
    let palette_drag = RwSignal::new(None::<PaletteDrag>);
    // Set when a drag ended, so the click the browser may still send the
    // entry does not add a second node.
    let dragged = StoredValue::new(false);
    let drag_from = move |hit: PaletteHit, ev: &leptos::ev::PointerEvent| {
        if ev.button() != 0 {
            return;
        }
        let p = (ev.client_x() as f64, ev.client_y() as f64);
        dragged.set_value(false);
        palette_drag.set(Some(PaletteDrag {
            hit,
            from: p,
            at: p,
        }));
    };
    let drag_move = window_event_listener(leptos::ev::pointermove, move |ev| {
        if palette_drag.with_untracked(Option::is_some) {
            let p = (ev.client_x() as f64, ev.client_y() as f64);
            palette_drag.update(|d| {
                if let Some(d) = d {
                    d.at = p;
                }
            });
        }
    });
    let drag_end = window_event_listener(leptos::ev::pointerup, move |ev| {
        let Some(d) = palette_drag.get_untracked() else {
            return;
        };
        palette_drag.set(None);
        if !d.moved() {
            return;
        }
        dragged.set_value(true);
        let Some(h) = host.get_untracked() else {
            return;
        };
        let r = h.get_bounding_client_rect();
        let (x, y) = (
            ev.client_x() as f64 - r.left(),
            ev.client_y() as f64 - r.top(),
        );
        if x < 0.0 || y < 0.0 || x > r.width() || y > r.height() {
            return;
        }
        // The pointer holds the node's top left, a little inside it.
        let w = cam.get_untracked().to_world(x, y);
        choose_at(
            d.hit,
            Some(Position {
                x: w.x - 20.0,
                y: w.y - 12.0,
            }),
        );
    });
    on_cleanup(move || {
        drag_move.remove();
        drag_end.remove();
    });
    let click_entry = move |hit: PaletteHit| {
        if dragged.get_value() {
            dragged.set_value(false);
            return;
        }
        choose(hit);
    };
    let ghost = move || {
        palette_drag.with(|d| {
            d.as_ref().filter(|d| d.moved()).map(|d| {
                view! {
                    <div class="palette-ghost" data-testid="palette-ghost"
                        style:left=format!("{}px", d.at.0 + 8.0) style:top=format!("{}px", d.at.1 + 8.0)>
                        {d.hit.label()}
                    </div>
                }
            })
        })
    };
    let palette = move || {
        let found = hits();
        if found.is_empty() {
            return view! {
                <p class="muted" data-testid="palette-empty">{format!("Nothing matches \u{201c}{}\u{201d}.", search.get().trim())}</p>
            }
            .into_any();
        }
        found
            .into_iter()
            .map(|hit| match hit.clone() {
                PaletteHit::Kind(kind, label) => {
                    let pressed = hit.clone();
                    view! {
                        <button type="button" data-palette=kind title="Click to add, or drag onto the canvas"
                            on:pointerdown=move |ev| drag_from(pressed.clone(), &ev)
                            on:click=move |_| click_entry(hit.clone())>{label}</button>
                    }
                    .into_any()
                }
                PaletteHit::Tool(reference, _) => {
                    let pressed = hit.clone();
                    view! {
                        <button type="button" class="tool-hit" data-palette-tool=reference.clone()
                            title="Adds a Tool node with this tool: click, or drag onto the canvas"
                            on:pointerdown=move |ev| drag_from(pressed.clone(), &ev)
                            on:click=move |_| click_entry(hit.clone())>
                            "Tool: " {reference.clone()}
                        </button>
                    }
                    .into_any()
                }
            })
            .collect_view()
            .into_any()
    };
    // Enter adds the first hit.
    let search_key = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Enter" {
            ev.prevent_default();
            if let Some(first) = hits().into_iter().next() {
                choose(first);
            }
        }
    };
    // Fetched on the first selection, then kept for the page's life.
    let inspector_wanted = Memo::new(move |was: Option<&bool>| {
        was.copied().unwrap_or(false) || editor.with(|e| !e.selection.is_empty())
    });
    let inspector = move || {
        inspector_wanted.get().then(|| {
            Suspend::new(async move {
                inspector_view(editor, tools, diagnostics.read_only(), watched)
                    .await
                    .unwrap_or_else(|_| {
                        view! {
                            <aside class="inspector" data-testid="inspector-unavailable">
                                <p class="error" role="alert">"The node panel could not be loaded from the server. Reload the page to try again."</p>
                            </aside>
                        }
                        .into_any()
                    })
            })
        })
    };
    let save_click = save.clone();
    let name = editor.with_untracked(|e| e.doc.name.clone());
    view! {
        <section class="editor" data-testid="editor">
            <header class="editor-bar">
                <h1 data-testid="workflow-name">{name}</h1>
                <span class="muted" data-testid="revision">"revision " {move || editor.with(|e| e.saved_revision)}</span>
                <span class="dirty" data-testid="dirty">{move || if editor.with(Editor::is_dirty) { "Unsaved changes" } else { "" }}</span>
                <div class="spacer"></div>
                <button type="button" data-testid="undo" prop:disabled=move || !editor.with(Editor::can_undo)
                    on:click=move |_| editor.update(|e| { e.undo(); })>"Undo"</button>
                <button type="button" data-testid="redo" prop:disabled=move || !editor.with(Editor::can_redo)
                    on:click=move |_| editor.update(|e| { e.redo(); })>"Redo"</button>
                <button type="button" on:click=move |_| cam.update(|c| *c = c.zoom_at(1.2, 300.0, 200.0))>"Zoom in"</button>
                <button type="button" on:click=move |_| cam.update(|c| *c = c.zoom_at(1.0 / 1.2, 300.0, 200.0))>"Zoom out"</button>
                <button type="button" data-testid="fit" on:click=move |_| fit()>"Fit"</button>
                <button type="button" data-testid="auto-layout" title="Lay the graph out in layers, left to right (one undo step)"
                    on:click=move |_| arrange()>"Auto-layout"</button>
                <button type="button" data-testid="shortcuts" title="Keyboard shortcuts (?)" on:click=move |_| help.set(true)>"?"</button>
                <button type="button" class="primary" data-testid="save" prop:disabled=move || saving.get() || gate.off()
                    title=move || gate.why() on:click=move |_| save_click()>{move || if saving.get() { "Saving…" } else { "Save" }}</button>
                {gate.hint()}
            </header>
            {move || status.get().map(|(ok, m)| view! {
                <p class=if ok { "notice" } else { "error" } role="status" data-testid="editor-status">{m}</p>
            })}
            {move || help.get().then(|| view! {
                <div class="help-overlay" role="dialog" aria-label="Keyboard shortcuts" data-testid="shortcuts-help"
                    on:click=move |_| help.set(false)>
                    <div class="card">
                        <h2>"Keyboard shortcuts"</h2>
                        <dl class="facts">
                            {keys::SHORTCUTS.iter().map(|(k, what)| view! { <dt><kbd>{*k}</kbd></dt><dd>{*what}</dd> }).collect_view()}
                        </dl>
                        <p class="muted">"Press ? or Escape, or click, to close."</p>
                    </div>
                </div>
            })}
            <div class="editor-body">
                <aside class="palette" data-testid="palette">
                    <input type="search" placeholder="Add a node…" data-testid="palette-search"
                        prop:value=move || search.get() on:input=move |ev| search.set(event_target_value(&ev))
                        on:keydown=search_key />
                    {palette}
                </aside>
                <div class="canvas" node_ref=host tabindex="0" data-testid="canvas"
                    data-node-count=move || editor.with(|e| e.doc.nodes.len())
                    data-edge-count=move || editor.with(|e| e.doc.edges.len())
                    data-drawn=move || shown.with(|s| s.len())
                    data-detail=move || if detailed.get() { "full" } else { "compact" }
                    on:pointerdown=on_down on:pointermove=on_move on:pointerup=on_up on:pointerleave=on_up
                    on:wheel=on_wheel>
                    // Three stacked layers, each its own SVG: the grid and
                    // the wires at rest; the wires of the selected nodes;
                    // the nodes. A drag redraws only the middle one's few
                    // paths (and moves the nodes): in one SVG, Chromium
                    // repainted all 1,200 wires on every frame of a drag.
                    <svg class="layer" width="100%" height="100%">
                        <defs>
                            <pattern id="grid" width="20" height="20" patternUnits="userSpaceOnUse">
                                <path d="M 20 0 L 0 0 0 20" class="grid-line" />
                            </pattern>
                            // Zoomed out, a 20-unit grid would be a cell every few
                            // pixels: ten times coarser, as many lines on screen.
                            <pattern id="grid-coarse" width="200" height="200" patternUnits="userSpaceOnUse">
                                <path d="M 200 0 L 0 0 0 200" class="grid-line coarse" />
                            </pattern>
                        </defs>
                        <g transform=move || cam.get().transform()>
                            <rect x="-5000" y="-5000" width="10000" height="10000"
                                fill=move || if detailed.get() { "url(#grid)" } else { "url(#grid-coarse)" } />
                            <g class="edges"><For each=move || edge_keys(false) key=|(e, epoch)| (e.id.clone(), *epoch) children=edge_view /></g>
                        </g>
                    </svg>
                    <svg class="layer live" width="100%" height="100%">
                        <g transform=move || cam.get().transform()>
                            <g class="edges"><For each=move || edge_keys(true) key=|(e, epoch)| (e.id.clone(), *epoch) children=edge_view /></g>
                        </g>
                    </svg>
                    <svg class="layer" width="100%" height="100%">
                        <g transform=move || cam.get().transform()>
                            <g class="nodes"><For each=node_keys key=|k| k.clone() children=node_view /></g>
                            {overlay}
                        </g>
                    </svg>
                    <Minimap editor=editor cam=cam viewport=viewport busy=Signal::derive(move || drag.with(Option::is_some)) />
                </div>
                // Shown only while the inspector has something to show.
                <div class="side-pane" class:collapsed=move || !panes.side_open.get()
                    style:width=move || if panes.side_open.get() { format!("{}px", panes.side.get()) } else { String::new() }>
                    <Show when=move || panes.side_open.get()>
                        <Splitter size=panes.side bounds=panes::SIDE across=true panes=panes label="Resize the inspector" />
                    </Show>
                    <button type="button" class="pane-toggle" data-testid="side-toggle"
                        title=move || if panes.side_open.get() { "Hide the inspector" } else { "Show the inspector" }
                        aria-expanded=move || panes.side_open.get().to_string()
                        on:click=move |_| { panes.side_open.update(|o| *o = !*o); panes.save(); }>
                        {move || if panes.side_open.get() { "\u{203a}" } else { "\u{2039}" }}
                    </button>
                    <Suspense fallback=|| ()>{inspector}</Suspense>
                </div>
            </div>
            {ghost}
            <div class="bottom-pane" class:collapsed=move || !panes.bottom_open.get()
                style:height=move || if panes.bottom_open.get() { format!("{}px", panes.bottom.get()) } else { String::new() }>
                <Show when=move || panes.bottom_open.get()>
                    <Splitter size=panes.bottom bounds=panes::BOTTOM across=false panes=panes label="Resize the run panel" />
                </Show>
                <div class="pane-head">
                    <button type="button" class="pane-toggle" data-testid="bottom-toggle"
                        aria-expanded=move || panes.bottom_open.get().to_string()
                        on:click=move |_| { panes.bottom_open.update(|o| *o = !*o); panes.save(); }>
                        {move || if panes.bottom_open.get() { "\u{25be} Run" } else { "\u{25b8} Run" }}
                    </button>
                </div>
                <div class="pane-body">
            <RunPanel editor=editor workflow_id=workflow_id.clone() watched=watched tools=tools diagnostics=diagnostics.read_only() />
            <ul class="diagnostics" data-testid="diagnostics">
                {move || diagnostics.get().into_iter().map(|d| {
                    let node = d.node.clone();
                    let class = if d.severity == Severity::Error { "error" } else { "warning" };
                    view! {
                        <li class=class data-code=d.code.clone()>
                            <button type="button" class="link" on:click=move |_| editor.update(|e| {
                                e.clear_selection();
                                e.selection.insert(node.clone());
                            })>{d.node.clone()}</button>
                            " " {d.code.clone()} ": " {d.message.clone()}
                        </li>
                    }
                }).collect_view()}
            </ul>
                </div>
            </div>
        </section>
    }
}
