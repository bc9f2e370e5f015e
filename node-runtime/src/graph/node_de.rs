//! Reading a [`Node`] in one pass.
//!
//! A derived `#[serde(flatten)]` reads the whole node into serde's
//! buffered `Content` first and then its config out of that: every string
//! of the config copied twice before it is read (issue #30: an Agent node
//! carrying a scripted conversation of N turns paid that on every run, and
//! its provider's script was copied a third time from `Content` into a
//! `Value`). Here the node's keys are read as they come and its `config`
//! straight into the type its `kind` names; only a `config` written before
//! its `kind` (the app and the server always write `kind` first) waits as
//! a `Value`. The documents read are the ones the derived reading took,
//! with the same errors: `id`, `kind` and `config` are required, `label`
//! and `position` default, a key seen twice is an error, other keys are
//! ignored. The native build only: the app keeps the derived reading (and
//! its size: this reader in the app's wasm grew what opening the editor
//! fetches by 7 KiB gzipped).

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{Node, NodeKind};

/// The keys a node has.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Field {
    Id,
    Label,
    Position,
    Kind,
    Config,
    #[serde(other)]
    Other,
}

/// A node's `kind`, read before its config.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Input,
    Agent,
    Tool,
    Template,
    Branch,
    Output,
}

impl From<&NodeKind> for Kind {
    /// The tag a node kind is written with. Exhaustive, so a new kind of
    /// node does not compile until it is read here too (the test below
    /// reads every kind back).
    fn from(kind: &NodeKind) -> Self {
        match kind {
            NodeKind::Input(_) => Kind::Input,
            NodeKind::Agent(_) => Kind::Agent,
            NodeKind::Tool(_) => Kind::Tool,
            NodeKind::Template(_) => Kind::Template,
            NodeKind::Branch(_) => Kind::Branch,
            NodeKind::Output(_) => Kind::Output,
        }
    }
}

/// Reads the config of one kind of node.
#[derive(Clone, Copy)]
struct Config(Kind);

impl<'de> DeserializeSeed<'de> for Config {
    type Value = NodeKind;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<NodeKind, D::Error> {
        Ok(match self.0 {
            Kind::Input => NodeKind::Input(Deserialize::deserialize(d)?),
            Kind::Agent => NodeKind::Agent(Deserialize::deserialize(d)?),
            Kind::Tool => NodeKind::Tool(Deserialize::deserialize(d)?),
            Kind::Template => NodeKind::Template(Deserialize::deserialize(d)?),
            Kind::Branch => NodeKind::Branch(Deserialize::deserialize(d)?),
            Kind::Output => NodeKind::Output(Deserialize::deserialize(d)?),
        })
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(NodeVisitor)
    }
}

struct NodeVisitor;

/// Reads the value of `key` into its empty `slot` (a key seen twice is an
/// error, as in a derived reading).
fn fill<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    slot: &mut Option<T>,
    key: &'static str,
    map: &mut A,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(key));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a node: an object with `id`, `kind` and `config`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut id: Option<String> = None;
        let mut label: Option<String> = None;
        let mut position = None;
        let mut kind: Option<Kind> = None;
        let mut config: Option<NodeKind> = None;
        // A config that came before its kind.
        let mut early: Option<Value> = None;
        while let Some(key) = map.next_key::<Field>()? {
            match key {
                Field::Id => fill(&mut id, "id", &mut map)?,
                Field::Label => fill(&mut label, "label", &mut map)?,
                Field::Position => fill(&mut position, "position", &mut map)?,
                Field::Kind => fill(&mut kind, "kind", &mut map)?,
                Field::Config => {
                    if config.is_some() || early.is_some() {
                        return Err(de::Error::duplicate_field("config"));
                    }
                    match kind {
                        Some(k) => config = Some(map.next_value_seed(Config(k))?),
                        None => early = Some(map.next_value()?),
                    }
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let kind_tag = kind.ok_or_else(|| de::Error::missing_field("kind"))?;
        let kind = match (config, early) {
            (Some(config), _) => config,
            (None, Some(value)) => Config(kind_tag)
                .deserialize(value)
                .map_err(de::Error::custom)?,
            (None, None) => return Err(de::Error::missing_field("config")),
        };
        Ok(Node {
            id: id.ok_or_else(|| de::Error::missing_field("id"))?,
            label: label.unwrap_or_default(),
            position: position.unwrap_or_default(),
            kind,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{Node, NodeKind, Workflow};

    fn node(value: serde_json::Value) -> Result<Node, String> {
        serde_json::from_value(value.clone())
            .map_err(|e| e.to_string())
            .and_then(|by_value: Node| {
                // Read from text too: the same node, or the same error.
                let by_text: Node =
                    serde_json::from_str(&value.to_string()).map_err(|e| e.to_string())?;
                assert_eq!(by_value, by_text);
                Ok(by_value)
            })
    }

    #[test]
    fn a_node_reads_in_either_key_order_and_writes_back_the_same() {
        let config = json!({"template": "Hi {{ name }}"});
        let first = node(
            json!({"id": "t", "label": "T", "position": {"x": 1.0, "y": 2.0},
            "kind": "template", "config": config}),
        )
        .expect("kind first");
        let second = node(
            json!({"config": config, "kind": "template", "id": "t", "label": "T",
            "position": {"x": 1.0, "y": 2.0}}),
        )
        .expect("config first");
        assert_eq!(first, second);
        assert!(matches!(first.kind, NodeKind::Template(_)));
        let written = serde_json::to_value(&first).expect("writes");
        assert_eq!(node(written).expect("reads back"), first);
    }

    /// Every kind of node reads back as written (`Kind::from` names them
    /// all).
    #[test]
    fn every_kind_of_node_reads_back() {
        let kinds = [
            json!({"kind": "input", "config": {"schema": {"type": "object"}}}),
            json!({"kind": "agent", "config": {"prompt": "go",
                "provider": {"kind": "scripted", "script": {"turns": [{"text": "done"}]}}}}),
            json!({"kind": "tool", "config": {"tool": "calculator@1.0.0"}}),
            json!({"kind": "template", "config": {"template": "{{ x }}"}}),
            json!({"kind": "branch", "config": {"pointer": "/ok", "condition": {"op": "truthy"}}}),
            json!({"kind": "output", "config": {"fields": ["a"]}}),
        ];
        let mut seen = Vec::new();
        for mut doc in kinds {
            doc["id"] = json!("n");
            let read = node(doc.clone()).unwrap_or_else(|e| panic!("{doc}: {e}"));
            seen.push(format!("{:?}", super::Kind::from(&read.kind)));
            let written = serde_json::to_value(&read).expect("writes");
            assert_eq!(node(written).expect("reads back"), read);
        }
        assert_eq!(
            seen,
            ["Input", "Agent", "Tool", "Template", "Branch", "Output"]
        );
    }

    #[test]
    fn label_and_position_default_and_other_keys_are_ignored() {
        let n = node(
            json!({"id": "o", "kind": "output", "config": {"fields": []}, "note": [1, {"a": 2}]}),
        )
        .expect("node");
        assert_eq!(
            (n.label.as_str(), n.position.x, n.position.y),
            ("", 0.0, 0.0)
        );
    }

    #[test]
    fn missing_duplicate_and_unknown_keys_are_named() {
        let err = |v| node(v).expect_err("refused");
        assert!(
            err(json!({"kind": "output", "config": {"fields": []}})).contains("missing field `id`")
        );
        assert!(err(json!({"id": "o", "config": {"fields": []}})).contains("missing field `kind`"));
        assert!(err(json!({"id": "o", "kind": "output"})).contains("missing field `config`"));
        assert!(err(json!({"id": "o", "kind": "nope", "config": {}}))
            .contains("unknown variant `nope`"));
        let twice = r#"{"id":"o","kind":"output","config":{"fields":[]},"config":{"fields":[]}}"#;
        let e = serde_json::from_str::<Node>(twice)
            .expect_err("twice")
            .to_string();
        assert!(e.contains("duplicate field `config`"), "{e}");
        // A config's own errors name its field, under the node's path.
        let doc = json!({"format_version": 1, "id": "w", "name": "w", "nodes": [
            {"id": "o", "kind": "output", "config": {"fields": [], "extra": 1}}]});
        let e = Workflow::from_value(&doc)
            .expect_err("unknown config field")
            .to_string();
        assert!(e.contains("unknown field `extra`"), "{e}");
        assert!(e.contains("at `nodes[0]`"), "{e}");
    }
}
