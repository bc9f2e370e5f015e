//! The editor canvas's keyboard: delete, undo and redo, save, copy and
//! paste, and moving the selection with the arrow keys.

use leptos::ev::KeyboardEvent;
use leptos::prelude::*;

use crate::editor::model::{Clip, Edit, Editor};

/// Handles a key pressed on the canvas. `save` saves the document,
/// `refuse` shows why an edit was refused, `apply` applies an edit.
pub(super) fn on_key(
    ev: &KeyboardEvent,
    editor: RwSignal<Editor>,
    clip: StoredValue<Clip>,
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
        "Escape" => editor.update(|e| e.selection.clear()),
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
