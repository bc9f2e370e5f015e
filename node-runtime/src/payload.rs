//! [`Payload`]: a tool call's arguments, input or output, shared by every
//! record of a run that carries it.
//!
//! One call's input is held at once by the model's answer, the
//! conversation, the pending call, the executor's call, its events, its
//! envelope, the run's list of envelopes and the Agent node's outputs
//! (`tools_by_id`, `last_tool`), and a tool result's output by the next
//! request's message as well. As a [`Value`] each of those was a deep copy:
//! a 1 KB input as a map is a few allocations of maps and strings, copied
//! about eight times a call and kept for the whole run (issue #30: more
//! than half of a long run's memory, every page of it a page fault). A
//! `Payload` is the value behind an [`Arc`]: a copy is a reference count,
//! and every record of the call reads the same value.
//!
//! It reads as the value it holds ([`Deref`]), compares, prints and
//! (de)serializes as that value, so its JSON is the value's JSON, byte for
//! byte (long strings escaped by SIMD in the native build, see
//! `fast_json`). Changing one (rare: a test, a redaction) copies it first
//! if another record holds it ([`DerefMut`], `Arc::make_mut`).

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
#[cfg(feature = "runtime")]
use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A JSON value shared by the records that carry it (see the module docs).
#[derive(Clone, Default)]
pub struct Payload(Arc<Inner>);

#[derive(Clone, Default)]
struct Inner {
    value: Value,
    /// The value's compact JSON text, written the first time it is asked
    /// for (see [`Payload::text`]; the native build only: the app never
    /// asks).
    #[cfg(feature = "runtime")]
    text: OnceLock<Box<str>>,
}

impl Payload {
    pub fn new(value: Value) -> Self {
        Self(Arc::new(Inner {
            value,
            #[cfg(feature = "runtime")]
            text: OnceLock::new(),
        }))
    }

    /// The value, copied only when another record still holds it.
    pub fn into_value(self) -> Value {
        Arc::try_unwrap(self.0)
            .map(|inner| inner.value)
            .unwrap_or_else(|shared| shared.value.clone())
    }

    /// The value itself.
    pub fn value(&self) -> &Value {
        &self.0.value
    }

    /// The value's compact JSON text (what `serde_json::to_string` writes),
    /// written once for every record that shares it: a call's input is
    /// written for its call id, its cache key, its invocation record and
    /// each text of the run that holds it (issue #30).
    #[cfg(feature = "runtime")]
    pub fn text(&self) -> &str {
        self.0
            .text
            .get_or_init(|| crate::fast_json::to_string(&self.0.value).into())
    }
}

impl Deref for Payload {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0.value
    }
}

impl DerefMut for Payload {
    /// The value to change, copied first when another record holds it.
    fn deref_mut(&mut self) -> &mut Value {
        let inner = Arc::make_mut(&mut self.0);
        #[cfg(feature = "runtime")]
        {
            inner.text = OnceLock::new();
        }
        &mut inner.value
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Self::new(value)
    }
}

impl From<Payload> for Value {
    fn from(payload: Payload) -> Self {
        payload.into_value()
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Payload) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.value == other.0.value
    }
}

impl PartialEq<Value> for Payload {
    fn eq(&self, other: &Value) -> bool {
        self.0.value == *other
    }
}

impl PartialEq<Payload> for Value {
    fn eq(&self, other: &Payload) -> bool {
        *self == other.0.value
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0.value, f)
    }
}

impl fmt::Display for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.value, f)
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[cfg(feature = "runtime")]
        match raw::mode() {
            raw::Mode::Compact => return raw::text(self.text(), serializer),
            raw::Mode::Canonical => {
                if let std::borrow::Cow::Borrowed(text) = crate::call_id::canonical_of(self) {
                    return raw::text(text, serializer);
                }
            }
            raw::Mode::Value => {}
        }
        serialize_value(&self.0.value, serializer)
    }
}

/// A value's JSON, long strings escaped by SIMD (the native build).
#[cfg(feature = "runtime")]
fn serialize_value<S: Serializer>(value: &Value, serializer: S) -> Result<S::Ok, S::Error> {
    crate::fast_json::value(value, serializer)
}

#[cfg(not(feature = "runtime"))]
fn serialize_value<S: Serializer>(value: &Value, serializer: S) -> Result<S::Ok, S::Error> {
    value.serialize(serializer)
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::new)
    }
}

/// Payloads written from their text (see [`compact_texts`]).
#[cfg(feature = "runtime")]
mod raw {
    use std::cell::Cell;

    use serde::ser::{SerializeStruct, Serializer};

    /// How payloads are written on this thread now.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Mode {
        /// From their value (every serializer).
        Value,
        /// From their compact text (see [`super::compact_texts`]).
        Compact,
        /// From their text where it is their canonical text (see
        /// [`super::canonical_texts`]).
        Canonical,
    }

    thread_local! {
        static MODE: Cell<Mode> = const { Cell::new(Mode::Value) };
    }

    pub(crate) fn mode() -> Mode {
        MODE.with(Cell::get)
    }

    /// serde_json's raw value protocol (see `fast_json`): its text
    /// serializer copies the text as it is.
    pub(super) fn text<S: Serializer>(text: &str, serializer: S) -> Result<S::Ok, S::Error> {
        let mut raw = serializer.serialize_struct(crate::fast_json::RAW_VALUE, 1)?;
        raw.serialize_field(crate::fast_json::RAW_VALUE, text)?;
        raw.end()
    }

    /// Restores the mode as it was, also when `f` panics.
    pub(super) struct Restore(Mode);

    impl Drop for Restore {
        fn drop(&mut self) {
            MODE.with(|m| m.set(self.0));
        }
    }

    pub(super) fn set(mode: Mode) -> Restore {
        Restore(MODE.with(|m| m.replace(mode)))
    }
}

/// Runs `f` with every payload serialized from its [`Payload::text`], as
/// one raw fragment, instead of written again from its value: for a
/// compact serde_json writer only (a raw fragment is copied as it is; a
/// pretty writer would not indent it, and other serializers read it back
/// as a value). The store's dehydrating writer uses it, which cuts a
/// payload's text as it would the value's (issue #30).
#[cfg(feature = "runtime")]
pub fn compact_texts<R>(f: impl FnOnce() -> R) -> R {
    let _restore = raw::set(raw::Mode::Compact);
    f()
}

/// Runs `f` with every payload whose text is its canonical JSON (RFC 8785:
/// the usual case, see `call_id::canonical_of`) serialized from that text
/// as one raw fragment: for the canonical writer (`canonical_ser`), which
/// copies such a fragment as it is; a payload's text is written once for
/// its call id, its cache key and the bundle's integrity hash (issue #30).
#[cfg(feature = "runtime")]
pub(crate) fn canonical_texts<R>(f: impl FnOnce() -> R) -> R {
    let _restore = raw::set(raw::Mode::Canonical);
    f()
}

/// Whether payloads are being written from their canonical texts (see
/// [`canonical_texts`]).
#[cfg(feature = "runtime")]
pub(crate) fn canonical_texts_on() -> bool {
    raw::mode() == raw::Mode::Canonical
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Payload {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        <Value as utoipa::PartialSchema>::schema()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Payload {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A payload is its value to every reader: the same JSON both ways,
    /// equal to it, printed as it; a copy shares it, a change does not
    /// reach the other copies.
    #[test]
    fn a_payload_is_its_value_and_copies_share_it() {
        let value = json!({"note": "x".repeat(300), "n": [1, 2.5, null], "s": "é\"\\"});
        let p = Payload::from(value.clone());
        assert_eq!(
            serde_json::to_string(&p).expect("ser"),
            serde_json::to_string(&value).expect("ser")
        );
        assert_eq!(
            serde_json::to_string_pretty(&p).expect("ser"),
            serde_json::to_string_pretty(&value).expect("ser")
        );
        let back: Payload = serde_json::from_str(&value.to_string()).expect("de");
        assert_eq!(back, value);
        assert_eq!(value, back);
        assert_eq!(format!("{p:?}"), format!("{value:?}"));
        assert_eq!(p.to_string(), value.to_string());
        let mut copy = p.clone();
        assert!(
            std::ptr::eq(p.value(), copy.value()),
            "a copy shares the value"
        );
        copy["n"] = json!(0);
        assert_eq!(p, value, "the original is unchanged");
        assert_eq!(copy["n"], 0);
        assert_eq!(Value::from(p), value);
        assert_eq!(Payload::default(), Value::Null);
    }

    /// A payload's text is its value's compact JSON, written again after a
    /// change; within `compact_texts` a compact writer copies it.
    #[test]
    #[cfg(feature = "runtime")]
    fn a_payload_is_written_from_its_text_where_asked() {
        let value = json!({"note": "x".repeat(300), "n": [1, -2, 2.5], "k": {"é": "\u{1}"}});
        let mut p = Payload::from(value.clone());
        assert_eq!(p.text(), serde_json::to_string(&value).expect("ser"));
        p["n"] = json!(null);
        assert_eq!(
            p.text(),
            serde_json::to_string(&*p).expect("ser"),
            "a change writes it again"
        );
        {
            let map = std::collections::BTreeMap::from([("input", p.clone())]);
            let record = json!({ "input": p.value() });
            let written = compact_texts(|| serde_json::to_string(&map)).expect("ser");
            assert_eq!(written, record.to_string());
            assert_eq!(
                serde_json::to_string_pretty(&map).expect("ser"),
                serde_json::to_string_pretty(&record).expect("ser"),
                "outside it, written from the value"
            );
        }
    }
}
