//! The editor's keyboard: delete, undo and redo, save, copy and paste, and
//! moving the selection with the arrow keys; and the question asked before
//! a link leaves unsaved changes.

use leptos::ev::KeyboardEvent;
use leptos::prelude::*;

use crate::editor::model::{Clip, Edit, Editor};

/// Handles a key pressed on the canvas. `save` saves the document,
/// `refuse` shows why an edit was refused, `apply` applies an edit.
pub(super) fn on_key(
    ev: &KeyboardEvent,
    editor: RwSignal<Editor>,
    clip: StoredValue<Clip>,
    help: RwSignal<bool>,
    save: &dyn Fn(),
    refuse: &dyn Fn(String),
    apply: &dyn Fn(Edit),
) {
    let ctrl = ev.ctrl_key() || ev.meta_key();
    match ev.key().as_str() {
        "Delete" | "Backspace" => {
            ev.prevent_default();
            if let Err(err) = editor
                .try_update(Editor::delete_selection)
                .expect("editor signal")
            {
                refuse(err.to_string());
            }
        }
        "z" | "Z" if ctrl && ev.shift_key() => {
            ev.prevent_default();
            editor.update(|e| {
                e.redo();
            });
        }
        "z" if ctrl => {
            ev.prevent_default();
            editor.update(|e| {
                e.undo();
            });
        }
        "y" if ctrl => {
            ev.prevent_default();
            editor.update(|e| {
                e.redo();
            });
        }
        "s" if ctrl => {
            ev.prevent_default();
            save();
        }
        // Arrows move the selection (Shift: further), one undoable
        // edit per press; Escape clears the selection.
        "ArrowLeft" | "ArrowRight" | "ArrowUp" | "ArrowDown" => {
            let ids: Vec<String> = editor.with_untracked(|e| e.selection.iter().cloned().collect());
            if ids.is_empty() {
                return;
            }
            ev.prevent_default();
            let step = if ev.shift_key() { 50.0 } else { 10.0 };
            let (dx, dy) = match ev.key().as_str() {
                "ArrowLeft" => (-step, 0.0),
                "ArrowRight" => (step, 0.0),
                "ArrowUp" => (0.0, -step),
                _ => (0.0, step),
            };
            apply(Edit::Move { ids, dx, dy });
        }
        "?" => help.update(|h| *h = !*h),
        "Escape" if help.get_untracked() => help.set(false),
        "Escape" => editor.update(|e| e.clear_selection()),
        "c" if ctrl => {
            ev.prevent_default();
            clip.set_value(editor.with_untracked(Editor::copy_selection));
        }
        "v" if ctrl => {
            ev.prevent_default();
            let copied = clip.get_value();
            if let Err(err) = editor
                .try_update(|e| e.paste(&copied))
                .expect("editor signal")
            {
                refuse(err.to_string());
            }
        }
        _ => {}
    }
}

/// Whether a key press goes to a field being typed in (an input, a text
/// area, a select): the editor's shortcuts leave it alone.
pub(super) fn typing_in_a_field(ev: &KeyboardEvent) -> bool {
    use wasm_bindgen::JsCast;
    ev.target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"))
}

/// A click listener (capture phase, ahead of the router) that asks before
/// a link takes the user away while `dirty()`; dropping it removes it.
pub(super) struct LeaveGuard {
    listener: wasm_bindgen::closure::Closure<dyn FnMut(web_sys::MouseEvent)>,
}

impl Drop for LeaveGuard {
    fn drop(&mut self) {
        use wasm_bindgen::JsCast;
        if let Some(w) = web_sys::window() {
            let _ = w.remove_event_listener_with_callback_and_bool(
                "click",
                self.listener.as_ref().unchecked_ref(),
                true,
            );
        }
    }
}

pub(super) fn confirm_leaving(dirty: impl Fn() -> bool + 'static) -> Option<LeaveGuard> {
    use wasm_bindgen::JsCast;
    let listener = wasm_bindgen::closure::Closure::<dyn FnMut(web_sys::MouseEvent)>::new(
        move |ev: web_sys::MouseEvent| {
            let link = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                .and_then(|el| el.closest("a[href]").ok().flatten());
            let Some(link) = link else { return };
            let href = link.get_attribute("href").unwrap_or_default();
            // Only links that leave this page (not in-page anchors).
            if href.starts_with('#') || !dirty() {
                return;
            }
            let stay = web_sys::window()
                .and_then(|w| {
                    w.confirm_with_message("There are unsaved changes. Leave without saving?")
                        .ok()
                })
                .is_some_and(|leave| !leave);
            if stay {
                ev.prevent_default();
                ev.stop_propagation();
            }
        },
    );
    let window = web_sys::window()?;
    window
        .add_event_listener_with_callback_and_bool("click", listener.as_ref().unchecked_ref(), true)
        .ok()?;
    Some(LeaveGuard { listener })
}

/// The shortcuts the help overlay lists: (keys, what they do).
pub(super) const SHORTCUTS: [(&str, &str); 11] = [
    ("Delete / Backspace", "delete the selected nodes or wire"),
    ("Ctrl+Z", "undo"),
    ("Ctrl+Shift+Z / Ctrl+Y", "redo"),
    ("Ctrl+S", "save (also while typing in a field)"),
    ("Ctrl+C / Ctrl+V", "copy and paste the selected nodes"),
    ("Arrow keys", "move the selection (Shift: further)"),
    ("Enter / Space", "on a focused node: select it"),
    ("Shift+drag", "select several nodes"),
    ("Drag a wired input", "rewire it (elsewhere: detach)"),
    ("Escape", "clear the selection, close this help"),
    ("?", "show or hide this help"),
];
