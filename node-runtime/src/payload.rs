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

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A JSON value shared by the records that carry it (see the module docs).
#[derive(Clone, PartialEq, Default)]
pub struct Payload(Arc<Value>);

impl Payload {
    pub fn new(value: Value) -> Self {
        Self(Arc::new(value))
    }

    /// The value, copied only when another record still holds it.
    pub fn into_value(self) -> Value {
        Arc::try_unwrap(self.0).unwrap_or_else(|shared| (*shared).clone())
    }

    /// The value itself.
    pub fn value(&self) -> &Value {
        &self.0
    }
}

impl Deref for Payload {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0
    }
}

impl DerefMut for Payload {
    /// The value to change, copied first when another record holds it.
    fn deref_mut(&mut self) -> &mut Value {
        Arc::make_mut(&mut self.0)
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

impl PartialEq<Value> for Payload {
    fn eq(&self, other: &Value) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<Payload> for Value {
    fn eq(&self, other: &Payload) -> bool {
        *self == *other.0
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize_value(&self.0, serializer)
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
}
