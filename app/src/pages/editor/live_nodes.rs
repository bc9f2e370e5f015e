//! The editor canvas's per-node signals: each drawn node's position and
//! selection in its own signal, kept in step with the document, so a drag
//! wakes only what moved.

use std::collections::HashMap;

use leptos::prelude::*;
use node_runtime::graph::Position;

use crate::editor::model::Editor;

/// A drawn node's position and selection, each its own signal: a drag
/// wakes the moved nodes and their edges only. (A memo per node and edge
/// over the whole editor woke all of them on every pointer move: with
/// 1,000 nodes in view, about 100 ms a frame.)
#[derive(Clone)]
pub(super) struct NodeLive {
    pub(super) position: ArcRwSignal<Position>,
    pub(super) selected: ArcRwSignal<bool>,
}

impl NodeLive {
    fn new(position: Position, selected: bool) -> Self {
        Self {
            position: ArcRwSignal::new(position),
            selected: ArcRwSignal::new(selected),
        }
    }
}

/// Brings `live` in step with the editor: new nodes get signals, gone
/// ones lose them, and only the values that differ are set (after the
/// map is released, by the caller), so only their readers wake.
pub(super) fn sync_live(
    live: &mut HashMap<String, NodeLive>,
    editor: &Editor,
) -> Vec<(NodeLive, Position, bool)> {
    let mut changed = Vec::new();
    for n in &editor.doc.nodes {
        let selected = editor.selection.contains(&n.id);
        match live.get(&n.id) {
            Some(l) => {
                if l.position.get_untracked() != n.position
                    || l.selected.get_untracked() != selected
                {
                    changed.push((l.clone(), n.position, selected));
                }
            }
            None => {
                live.insert(n.id.clone(), NodeLive::new(n.position, selected));
            }
        }
    }
    if live.len() != editor.doc.nodes.len() {
        live.retain(|id, _| editor.node(id).is_some());
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::editor::model::testing::{add, empty};
    use crate::editor::model::Edit;

    #[test]
    fn sync_live_reports_only_what_changed() {
        let mut ed = Editor::new(empty());
        let a = add(&mut ed, "input", Position { x: 0.0, y: 0.0 });
        let b = add(&mut ed, "output", Position { x: 300.0, y: 0.0 });
        let mut live = HashMap::new();
        assert!(
            sync_live(&mut live, &ed).is_empty(),
            "new nodes get signals"
        );
        assert_eq!(live.len(), 2);
        assert_eq!(
            live[&a].position.get_untracked(),
            Position { x: 0.0, y: 0.0 }
        );

        // A move of `a` changes `a` only; a selection of `b`, `b` only.
        ed.apply(Edit::Move {
            ids: vec![a.clone()],
            dx: 5.0,
            dy: 7.0,
        })
        .unwrap();
        ed.selection.insert(b.clone());
        let changed = sync_live(&mut live, &ed);
        let mut seen: Vec<_> = changed
            .iter()
            .map(|(l, p, s)| (l.position.get_untracked(), *p, *s))
            .collect();
        seen.sort_by(|x, y| x.1.x.total_cmp(&y.1.x));
        assert_eq!(
            seen,
            vec![
                (
                    Position { x: 0.0, y: 0.0 },
                    Position { x: 5.0, y: 7.0 },
                    false
                ),
                (
                    Position { x: 300.0, y: 0.0 },
                    Position { x: 300.0, y: 0.0 },
                    true
                ),
            ]
        );
        for (l, p, s) in changed {
            l.position.set(p);
            l.selected.set(s);
        }
        assert!(sync_live(&mut live, &ed).is_empty(), "nothing left to set");

        // A deleted node loses its signals.
        ed.selection.clear();
        ed.selection.insert(a.clone());
        ed.delete_selection().unwrap();
        sync_live(&mut live, &ed);
        assert_eq!(live.keys().collect::<Vec<_>>(), vec![&b]);
    }
}
