//! The editor's panes around the canvas: the inspector on its right and
//! the run panel under it. Each is resized with a splitter (dragged, or
//! the arrow keys while it has focus) and collapsed with a button, and the
//! sizes are kept in localStorage, so the canvas gets the room a user
//! gives it and keeps it on the next visit.

use leptos::prelude::*;

const KEY: &str = "glassbox.editor.panes";

/// `(default, least, most)` width of the inspector, in pixels.
pub const SIDE: (f64, f64, f64) = (360.0, 240.0, 720.0);
/// `(default, least, most)` height of the run panel, in pixels.
pub const BOTTOM: (f64, f64, f64) = (120.0, 80.0, 640.0);
/// How far one arrow key press moves a splitter.
const KEY_STEP: f64 = 16.0;

/// The panes' sizes and whether each is open.
#[derive(Clone, Copy)]
pub struct Panes {
    pub side: RwSignal<f64>,
    pub side_open: RwSignal<bool>,
    pub bottom: RwSignal<f64>,
    pub bottom_open: RwSignal<bool>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    side: f64,
    side_open: bool,
    bottom: f64,
    bottom_open: bool,
}

fn clamp(v: f64, (default, least, most): (f64, f64, f64)) -> f64 {
    if v.is_finite() {
        v.clamp(least, most)
    } else {
        default
    }
}

impl Panes {
    /// The sizes kept from the last visit, or the defaults.
    pub fn load() -> Self {
        let saved = crate::theme::storage()
            .and_then(|s| s.get_item(KEY).ok().flatten())
            .and_then(|text| serde_json::from_str::<Saved>(&text).ok())
            .unwrap_or(Saved {
                side: SIDE.0,
                side_open: true,
                bottom: BOTTOM.0,
                bottom_open: true,
            });
        Self {
            side: RwSignal::new(clamp(saved.side, SIDE)),
            side_open: RwSignal::new(saved.side_open),
            bottom: RwSignal::new(clamp(saved.bottom, BOTTOM)),
            bottom_open: RwSignal::new(saved.bottom_open),
        }
    }

    /// Keeps the sizes for the next visit.
    pub fn save(&self) {
        let saved = Saved {
            side: self.side.get_untracked(),
            side_open: self.side_open.get_untracked(),
            bottom: self.bottom.get_untracked(),
            bottom_open: self.bottom_open.get_untracked(),
        };
        if let (Some(s), Ok(text)) = (crate::theme::storage(), serde_json::to_string(&saved)) {
            let _ = s.set_item(KEY, &text);
        }
    }
}

/// A splitter on the near edge of a pane (the inspector's left, the run
/// panel's top): moving it toward the canvas grows the pane. `across`
/// splits left from right (a vertical bar); otherwise top from bottom.
#[component]
pub fn Splitter(
    size: RwSignal<f64>,
    bounds: (f64, f64, f64),
    across: bool,
    panes: Panes,
    label: &'static str,
) -> impl IntoView {
    // (pointer position, size) when the drag began.
    let start = StoredValue::new(None::<(f64, f64)>);
    let at = move |ev: &leptos::ev::PointerEvent| {
        if across {
            ev.client_x() as f64
        } else {
            ev.client_y() as f64
        }
    };
    let down = move |ev: leptos::ev::PointerEvent| {
        ev.prevent_default();
        ev.stop_propagation();
        if let Some(el) = ev
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
        {
            let _ = el.set_pointer_capture(ev.pointer_id());
        }
        start.set_value(Some((at(&ev), size.get_untracked())));
    };
    let moved = move |ev: leptos::ev::PointerEvent| {
        if let Some((from, was)) = start.get_value() {
            size.set(clamp(was - (at(&ev) - from), bounds));
        }
    };
    let up = move |_ev: leptos::ev::PointerEvent| {
        if start.get_value().is_some() {
            start.set_value(None);
            panes.save();
        }
    };
    let key = move |ev: leptos::ev::KeyboardEvent| {
        let step = match (across, ev.key().as_str()) {
            (true, "ArrowLeft") | (false, "ArrowUp") => KEY_STEP,
            (true, "ArrowRight") | (false, "ArrowDown") => -KEY_STEP,
            _ => return,
        };
        ev.prevent_default();
        ev.stop_propagation();
        size.update(|s| *s = clamp(*s + step, bounds));
        panes.save();
    };
    view! {
        <div class=if across { "splitter across" } else { "splitter along" }
            role="separator" tabindex="0" aria-label=label
            aria-orientation=if across { "vertical" } else { "horizontal" }
            aria-valuemin=bounds.1 aria-valuemax=bounds.2 aria-valuenow=move || size.get().round()
            title=format!("{label}: drag, or use the arrow keys")
            data-testid=if across { "side-splitter" } else { "bottom-splitter" }
            on:pointerdown=down on:pointermove=moved on:pointerup=up on:pointercancel=up
            on:keydown=key>
        </div>
    }
}
