//! The editor's document model: a workflow being edited, every change as an
//! [`Edit`], and undo/redo. Plain Rust (no DOM), tested natively.
//!
//! Undo keeps whole snapshots of the workflow: exact by construction (an
//! undo restores the previous state bit for bit), and cheap enough (a clone
//! of even a 1,000-node graph is well under a millisecond's worth of a
//! frame). A drag is one edit: [`Editor::begin_gesture`] takes the snapshot
//! and the moves that follow are not recorded one by one.

use std::collections::{BTreeSet, HashMap};

use node_runtime::graph::{Node, Workflow};

use super::edit::apply_to;
pub use super::edit::{can_connect, connect_targets, new_node, Clip, Edit, EditError, PALETTE};

/// How many edits can be undone.
pub const UNDO_LIMIT: usize = 200;

/// The document, its history and the selection.
#[derive(Debug, Clone)]
pub struct Editor {
    pub doc: Workflow,
    /// The revision the document was loaded or last saved at.
    pub saved_revision: u64,
    pub selection: BTreeSet<String>,
    /// Selected wires (edge ids): a click on a wire selects it alone.
    pub selected_edges: BTreeSet<String>,
    undo: Vec<Workflow>,
    redo: Vec<Workflow>,
    /// Snapshot taken at the start of a gesture (a drag), pushed once.
    gesture: Option<Workflow>,
    dirty: bool,
    /// Bumped by every change other than a move: views keyed by it are
    /// rebuilt when a node's content may have changed, and only then.
    epoch: u64,
    /// Node id -> index in `doc.nodes`, for O(1) lookups while drawing.
    index: HashMap<String, usize>,
}

impl Editor {
    pub fn new(doc: Workflow) -> Self {
        let saved_revision = doc.revision;
        let mut editor = Self {
            doc,
            saved_revision,
            selection: BTreeSet::new(),
            selected_edges: BTreeSet::new(),
            undo: Vec::new(),
            redo: Vec::new(),
            gesture: None,
            dirty: false,
            epoch: 0,
            index: HashMap::new(),
        };
        editor.restructured();
        editor
    }

    /// See the `epoch` field.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// A node by id in O(1).
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.index.get(id).and_then(|&i| self.doc.nodes.get(i))
    }

    fn restructured(&mut self) {
        self.epoch += 1;
        self.index = self
            .doc
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.clone(), i))
            .collect();
    }

    /// Unsaved changes exist.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// The document was saved as `revision`.
    pub fn mark_saved(&mut self, revision: u64) {
        self.doc.revision = revision;
        self.saved_revision = revision;
        self.dirty = false;
    }

    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }

    fn record(&mut self, before: Workflow) {
        self.undo.push(before);
        if self.undo.len() > UNDO_LIMIT {
            self.undo.remove(0);
        }
        self.redo.clear();
        self.dirty = true;
    }

    /// Applies an edit; a refused edit changes nothing. Returns the id of a
    /// node it created.
    pub fn apply(&mut self, edit: Edit) -> Result<Option<String>, EditError> {
        let before = self.gesture.is_none().then(|| self.doc.clone());
        let created = apply_to(&mut self.doc, &self.index, &edit)?;
        // A move (the hot path of a drag) leaves the lookup table valid.
        if !matches!(edit, Edit::Move { .. }) {
            self.restructured();
        }
        if let Edit::Delete { nodes, .. } = &edit {
            for n in nodes {
                self.selection.remove(n);
            }
        }
        if !self.selected_edges.is_empty() {
            self.retain_selection();
        }
        match before {
            Some(before) => self.record(before),
            None => self.dirty = true,
        }
        Ok(created)
    }

    /// Starts a gesture: the edits until [`Editor::end_gesture`] undo as one.
    pub fn begin_gesture(&mut self) {
        if self.gesture.is_none() {
            self.gesture = Some(self.doc.clone());
        }
    }

    /// Ends a gesture; records it only if it changed the document.
    pub fn end_gesture(&mut self) {
        if let Some(before) = self.gesture.take() {
            if before != self.doc {
                self.record(before);
            }
        }
    }

    pub fn undo(&mut self) -> bool {
        self.end_gesture();
        match self.undo.pop() {
            Some(prev) => {
                let now = std::mem::replace(&mut self.doc, prev);
                self.redo.push(now);
                self.restructured();
                self.retain_selection();
                self.dirty = true;
                true
            }
            None => false,
        }
    }

    pub fn redo(&mut self) -> bool {
        match self.redo.pop() {
            Some(next) => {
                let now = std::mem::replace(&mut self.doc, next);
                self.undo.push(now);
                self.restructured();
                self.retain_selection();
                self.dirty = true;
                true
            }
            None => false,
        }
    }

    fn retain_selection(&mut self) {
        let ids: BTreeSet<&str> = self.doc.nodes.iter().map(|n| n.id.as_str()).collect();
        self.selection.retain(|s| ids.contains(s.as_str()));
        let edges: BTreeSet<&str> = self.doc.edges.iter().map(|e| e.id.as_str()).collect();
        self.selected_edges.retain(|s| edges.contains(s.as_str()));
    }

    /// Selects one wire alone (a click on it).
    pub fn select_edge(&mut self, id: &str) {
        self.selection.clear();
        self.selected_edges = BTreeSet::from([id.to_string()]);
    }

    /// Clears the selection of nodes and wires.
    pub fn clear_selection(&mut self) {
        self.selection.clear();
        self.selected_edges.clear();
    }

    /// The selected nodes and the edges among them.
    pub fn copy_selection(&self) -> Clip {
        let nodes: Vec<_> = self
            .doc
            .nodes
            .iter()
            .filter(|n| self.selection.contains(&n.id))
            .cloned()
            .collect();
        let edges = self
            .doc
            .edges
            .iter()
            .filter(|e| {
                self.selection.contains(&e.source.node) && self.selection.contains(&e.target.node)
            })
            .cloned()
            .collect();
        Clip { nodes, edges }
    }

    /// Pastes a clip beside the originals and selects the copies.
    pub fn paste(&mut self, clip: &Clip) -> Result<(), EditError> {
        if clip.nodes.is_empty() {
            return Ok(());
        }
        let before: BTreeSet<String> = self.doc.nodes.iter().map(|n| n.id.clone()).collect();
        self.apply(Edit::Paste {
            clip: clip.clone(),
            dx: 40.0,
            dy: 40.0,
        })?;
        self.selection = self
            .doc
            .nodes
            .iter()
            .filter(|n| !before.contains(&n.id))
            .map(|n| n.id.clone())
            .collect();
        Ok(())
    }

    /// Deletes the selected nodes (and their edges) and the selected wires,
    /// as one undoable edit.
    pub fn delete_selection(&mut self) -> Result<(), EditError> {
        if self.selection.is_empty() && self.selected_edges.is_empty() {
            return Ok(());
        }
        let nodes = self.selection.iter().cloned().collect();
        let edges = std::mem::take(&mut self.selected_edges)
            .into_iter()
            .collect();
        self.apply(Edit::Delete { nodes, edges }).map(|_| ())
    }
}

/// Helpers for the editor's native tests (here and in `pages::editor`).
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use node_runtime::graph::Position;

    /// An empty workflow at revision 3.
    pub fn empty() -> Workflow {
        Workflow {
            format_version: node_runtime::graph::WORKFLOW_FORMAT_VERSION,
            id: "w".into(),
            name: "w".into(),
            description: String::new(),
            revision: 3,
            nodes: Vec::new(),
            edges: Vec::new(),
        }
    }

    /// Adds a node of `kind` at `position`; its new id.
    pub fn add(ed: &mut Editor, kind: &str, position: Position) -> String {
        ed.apply(Edit::AddNode {
            kind: kind.into(),
            at: position,
        })
        .unwrap()
        .unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{add, empty};
    use super::*;
    use node_runtime::envelope::ToolEnvelope;
    use node_runtime::graph::materialize::Source;
    use node_runtime::graph::{HandleRef, NodeKind, Position};
    use node_runtime::tool_spec::SecretScope;
    use serde_json::json;

    fn at(x: f64, y: f64) -> Position {
        Position { x, y }
    }

    /// Input, Template and Output side by side (`input1`, `template1`, `output1`).
    fn input_template_output() -> Editor {
        let mut ed = Editor::new(empty());
        for (kind, x) in [("input", 0.0), ("template", 300.0), ("output", 600.0)] {
            add(&mut ed, kind, at(x, 0.0));
        }
        ed
    }

    fn connect(ed: &mut Editor, source: HandleRef, target: HandleRef) {
        ed.apply(Edit::Connect { source, target }).unwrap();
    }

    fn h(node: &str, handle: &str) -> HandleRef {
        HandleRef {
            node: node.into(),
            handle: handle.into(),
        }
    }

    #[test]
    fn renaming_a_pin_moves_its_edges_and_undoes_as_one_edit() {
        let mut ed = input_template_output();
        let agent = add(&mut ed, "agent", at(0.0, 300.0));
        let Some(NodeKind::Agent(mut config)) = ed.node(&agent).map(|n| n.kind.clone()) else {
            panic!("agent")
        };
        crate::editor::tools::add_pin(&mut config, "calculator");
        ed.apply(Edit::SetKind {
            node: agent.clone(),
            kind: Box::new(NodeKind::Agent(config)),
        })
        .unwrap();
        connect(
            &mut ed,
            h(&agent, "calculator_result"),
            h("template1", "value"),
        );
        let before = ed.doc.clone();
        for bad in ["response", "has space", ""] {
            let err = ed
                .apply(Edit::RenamePin {
                    node: agent.clone(),
                    from: "calculator_result".into(),
                    to: bad.into(),
                })
                .expect_err(bad);
            assert!(err.to_string().starts_with("name:"), "{err}");
            assert_eq!(ed.doc, before, "refused: nothing changed");
        }
        ed.apply(Edit::RenamePin {
            node: agent.clone(),
            from: "calculator_result".into(),
            to: "sum".into(),
        })
        .unwrap();
        let node = ed.node(&agent).unwrap();
        assert!(node.outputs().contains(&"sum".to_string()));
        assert!(ed
            .doc
            .edges
            .iter()
            .any(|e| e.source == h(&agent, "sum") && e.target == h("template1", "value")));
        ed.undo();
        assert_eq!(ed.doc, before);
    }

    #[test]
    fn connect_targets_are_the_inputs_that_take_the_wire() {
        let mut ed = input_template_output();
        let from = h("input1", "text");
        assert_eq!(
            connect_targets(&ed.doc, &from),
            [h("template1", "value"), h("output1", "result")]
        );
        connect(&mut ed, from.clone(), h("template1", "value"));
        connect(&mut ed, h("template1", "text"), h("output1", "result"));
        assert!(
            connect_targets(&ed.doc, &from).is_empty(),
            "wired inputs are taken"
        );
        assert!(
            connect_targets(&ed.doc, &h("output1", "nope")).is_empty(),
            "no such output"
        );
    }

    #[test]
    fn materializing_a_call_adds_a_selected_tool_node_undone_in_one_step() {
        let mut ed = Editor::new(empty());
        let agent = add(&mut ed, "agent", at(0.0, 0.0));
        let before = ed.doc.clone();
        let envelope: ToolEnvelope = serde_json::from_value(json!({
            "call_id": "abcdef0123", "name": "calculator", "version": "1.0.0",
            "input": {"expression": "6*7"}, "output": {"result": 42.0}, "error": null,
            "t_start": "t", "t_end": "t"
        }))
        .unwrap();
        let edit = |source: Source| Edit::Materialize {
            agent: agent.clone(),
            source,
            envelope: Box::new(envelope.clone()),
            secret_scope: Some(SecretScope::Workspace),
        };
        let err = ed
            .apply(edit(Source::CallId("other".into())))
            .expect_err("mismatch");
        assert!(matches!(err, EditError::Refused(_)), "{err}");
        assert_eq!(ed.doc, before);
        let id = ed
            .apply(edit(Source::CallId("abcdef0123".into())))
            .unwrap()
            .unwrap();
        let node = ed.node(&id).expect("new node").clone();
        let NodeKind::Tool(c) = node.kind else {
            panic!("tool node")
        };
        assert_eq!(c.tool, "calculator@1.0.0");
        assert_eq!(c.secret_scope, Some(SecretScope::Workspace));
        assert_eq!(
            c.inputs["expression"],
            node_runtime::graph::FieldSource::Fixed {
                value: json!("6*7")
            }
        );
        assert!(ed.is_dirty());
        ed.undo();
        assert_eq!(ed.doc, before);
    }

    #[test]
    fn add_connect_and_the_document_round_trips() {
        let mut ed = Editor::new(empty());
        let input = add(&mut ed, "input", at(0.0, 0.0));
        let agent = add(&mut ed, "agent", at(300.0, 0.0));
        let output = add(&mut ed, "output", at(600.0, 0.0));
        assert_eq!(
            (input.as_str(), agent.as_str(), output.as_str()),
            ("input1", "agent1", "output1")
        );
        connect(&mut ed, h("input1", "text"), h("agent1", "text"));
        connect(&mut ed, h("agent1", "response"), h("output1", "result"));
        assert!(ed.is_dirty());
        // What is saved parses back to the same graph.
        let text = ed.doc.to_json();
        assert_eq!(Workflow::from_json(&text).unwrap(), ed.doc);
        let diagnostics = node_runtime::graph::validate::validate(
            &ed.doc,
            &Vec::<node_runtime::tool_spec::ToolSpec>::new(),
        );
        assert!(
            diagnostics
                .iter()
                .all(|d| d.severity != node_runtime::graph::validate::Severity::Error),
            "{diagnostics:?}"
        );
    }

    #[test]
    fn incompatible_connections_are_refused_and_change_nothing() {
        let mut ed = input_template_output();
        connect(&mut ed, h("input1", "text"), h("template1", "value"));
        let before = ed.doc.clone();
        for (s, t, why) in [
            (h("output1", "result"), h("template1", "value"), "no output"),
            (h("input1", "text"), h("input1", "text"), "itself"),
            (
                h("input1", "nope"),
                h("output1", "result"),
                "no output `nope`",
            ),
            (h("template1", "text"), h("output1", "missing"), "no input"),
            (
                h("input1", "text"),
                h("template1", "value"),
                "already wired",
            ),
        ] {
            let err = ed
                .apply(Edit::Connect {
                    source: s,
                    target: t,
                })
                .unwrap_err();
            assert!(err.to_string().contains(why), "{err} / {why}");
        }
        assert_eq!(ed.doc, before);
        // A cycle.
        add(&mut ed, "template", at(0.0, 200.0));
        connect(&mut ed, h("template1", "text"), h("template2", "value"));
        let mut cyc = ed.doc.clone();
        if let NodeKind::Template(t) = &mut cyc
            .nodes
            .iter_mut()
            .find(|n| n.id == "template1")
            .unwrap()
            .kind
        {
            t.template = "{{ value }} {{ other }}".into();
        }
        assert!(
            can_connect(&cyc, &h("template2", "text"), &h("template1", "other"))
                .unwrap_err()
                .contains("cycle")
        );
    }

    #[test]
    fn undo_and_redo_restore_each_state_exactly() {
        let mut ed = Editor::new(empty());
        let mut states = vec![ed.doc.clone()];
        add(&mut ed, "input", at(10.0, 20.0));
        states.push(ed.doc.clone());
        add(&mut ed, "output", at(400.0, 20.0));
        states.push(ed.doc.clone());
        // A drag of many small moves is one step.
        ed.begin_gesture();
        for _ in 0..30 {
            ed.apply(Edit::Move {
                ids: vec!["input1".into()],
                dx: 1.5,
                dy: -0.5,
            })
            .unwrap();
        }
        ed.end_gesture();
        states.push(ed.doc.clone());
        connect(&mut ed, h("input1", "text"), h("output1", "result"));
        states.push(ed.doc.clone());
        ed.selection.insert("input1".into());
        ed.delete_selection().unwrap();
        states.push(ed.doc.clone());
        assert!(ed.selection.is_empty());
        assert!(ed.doc.edges.is_empty(), "deleting a node deletes its edges");

        for expected in states.iter().rev().skip(1) {
            assert!(ed.undo());
            assert_eq!(&ed.doc, expected);
        }
        assert!(!ed.undo());
        for expected in states.iter().skip(1) {
            assert!(ed.redo());
            assert_eq!(&ed.doc, expected);
        }
        assert!(!ed.redo());
        // A new edit after an undo drops the redo branch.
        ed.undo();
        ed.apply(Edit::Rename {
            node: "output1".into(),
            label: "Result".into(),
        })
        .unwrap();
        assert!(!ed.can_redo());
    }

    #[test]
    fn a_selected_wire_is_deleted_alone_and_undo_brings_it_back() {
        let mut ed = input_template_output();
        connect(&mut ed, h("input1", "text"), h("template1", "value"));
        connect(&mut ed, h("template1", "text"), h("output1", "result"));
        let wired = ed.doc.clone();
        let first = ed.doc.edges[0].id.clone();
        ed.selection.insert("output1".into());
        ed.select_edge(&first);
        assert!(ed.selection.is_empty(), "a wire is selected alone");
        ed.delete_selection().unwrap();
        assert_eq!(ed.doc.edges.len(), 1);
        assert_eq!(ed.doc.nodes.len(), wired.nodes.len(), "no node goes");
        assert!(ed.selected_edges.is_empty());
        assert!(ed.undo());
        assert_eq!(ed.doc, wired);
    }

    #[test]
    fn copy_paste_duplicates_nodes_and_their_inner_edges_under_fresh_ids() {
        let mut ed = input_template_output();
        connect(&mut ed, h("input1", "text"), h("template1", "value"));
        connect(&mut ed, h("template1", "text"), h("output1", "result"));
        ed.selection = ["input1".to_string(), "template1".to_string()].into();
        let clip = ed.copy_selection();
        assert_eq!(
            (clip.nodes.len(), clip.edges.len()),
            (2, 1),
            "only the edge inside the selection"
        );
        ed.paste(&clip).unwrap();
        assert_eq!(ed.doc.nodes.len(), 5);
        assert_eq!(
            ed.selection,
            ["input2".to_string(), "template2".to_string()].into()
        );
        assert_eq!(
            ed.node("input2").map(|n| (n.position.x, n.position.y)),
            Some((40.0, 40.0))
        );
        assert!(ed
            .doc
            .edges
            .iter()
            .any(|e| e.source == h("input2", "text") && e.target == h("template2", "value")));
        assert_eq!(ed.doc.edges.len(), 3);
        assert_eq!(Workflow::from_json(&ed.doc.to_json()).unwrap(), ed.doc);
        // One undo removes the whole paste.
        ed.undo();
        assert_eq!(ed.doc.nodes.len(), 3);
        assert_eq!(ed.doc.edges.len(), 2);
    }

    #[test]
    fn moves_keep_the_epoch_and_structure_changes_bump_it() {
        let mut ed = Editor::new(empty());
        let e0 = ed.epoch();
        add(&mut ed, "input", at(0.0, 0.0));
        let e1 = ed.epoch();
        assert!(e1 > e0);
        ed.apply(Edit::Move {
            ids: vec!["input1".into()],
            dx: 5.0,
            dy: 0.0,
        })
        .unwrap();
        assert_eq!(ed.epoch(), e1, "a move is not a structure change");
        assert_eq!(ed.node("input1").map(|n| n.position.x), Some(5.0));
        assert!(ed
            .apply(Edit::Move {
                ids: vec!["nope".into()],
                dx: 1.0,
                dy: 1.0
            })
            .is_err());
        ed.undo();
        assert!(ed.epoch() > e1);
        assert_eq!(ed.node("input1").map(|n| n.position.x), Some(0.0));
        ed.undo();
        assert!(ed.node("input1").is_none());
    }

    #[test]
    fn a_gesture_that_changes_nothing_is_not_recorded_and_saving_clears_dirty() {
        let mut ed = Editor::new(empty());
        ed.begin_gesture();
        ed.end_gesture();
        assert!(!ed.can_undo());
        assert!(!ed.is_dirty());
        add(&mut ed, "branch", at(0.0, 0.0));
        ed.mark_saved(4);
        assert!(!ed.is_dirty());
        assert_eq!((ed.doc.revision, ed.saved_revision), (4, 4));
        assert_eq!(
            ed.apply(Edit::AddNode {
                kind: "nope".into(),
                at: at(0.0, 0.0)
            })
            .unwrap_err(),
            EditError::UnknownKind("nope".into())
        );
        assert!(!ed.is_dirty(), "a refused edit changes nothing");
        for (kind, _) in PALETTE {
            ed.apply(Edit::AddNode {
                kind: kind.into(),
                at: at(0.0, 0.0),
            })
            .unwrap();
        }
        assert_eq!(Workflow::from_json(&ed.doc.to_json()).unwrap(), ed.doc);
    }
}
