//! serde_json's text of a [`Value`], byte for byte, with long strings
//! escaped by SIMD (issue #30).
//!
//! A tool call's 1 KB argument is written as JSON text about twenty times
//! in a run (its call id, cache key, events, invocation record, the
//! bundle's integrity, the node's record), and serde_json escapes a string
//! one byte at a time: about 9 instructions a byte, 15% of a sequential
//! call's instructions. [`FastValue`] writes a string of at least
//! [`SIMD_FROM`] bytes with `json_escape_simd` (sonic-rs' kernel, a register
//! at a time) and hands serde_json the escaped text as a raw value
//! ([`RawValue`](serde_json::value::RawValue)'s protocol), which it copies
//! as is. Both escape the same characters the same way (`"`, `\`,
//! `\b \t \n \f \r`, other controls as lowercase `\u00xx`, nothing else),
//! which the tests check on every character class and on arbitrary
//! strings, so stored texts, call ids and bundle hashes do not change.
//!
//! The fields that carry payloads serialize through it (`serialize_with =
//! "crate::fast_json::value"`, in the native build). A serializer other
//! than serde_json's text writer (`serde_json::to_value`) gets the same
//! value: it reads the raw text back as a string. Only the native build
//! (`runtime`) has it: the wasm app writes its few payloads the plain way
//! and keeps its size.

use std::collections::BTreeMap;

use serde::ser::{Serialize, Serializer};
use serde_json::Value;

/// Strings at least this long take the SIMD path; below it the escaped
/// copy's allocation costs more than the faster escaping saves.
pub const SIMD_FROM: usize = 128;

/// A [`Value`] that serializes as serde_json's own text, long strings
/// escaped by SIMD.
pub struct FastValue<'a>(pub &'a Value);

impl Serialize for FastValue<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::String(s) => string(s, serializer),
            Value::Array(items) => serializer.collect_seq(items.iter().map(FastValue)),
            Value::Object(map) => {
                serializer.collect_map(map.iter().map(|(k, v)| (k, FastValue(v))))
            }
            other => other.serialize(serializer),
        }
    }
}

/// serde_json's name for a raw value (`serde_json::value::RawValue`'s own
/// `Serialize` writes this struct): its text serializer copies the field's
/// text as is, and `to_value` parses it. `RawValue::from_string` would
/// parse the escaped text again to check it, which costs more than the
/// escaping saves; the escaper's output is a JSON string by construction,
/// and the tests fail if serde_json ever handles the name differently.
pub const RAW_VALUE: &str = "$serde_json::private::RawValue";

fn string<S: Serializer>(s: &str, serializer: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    if s.len() < SIMD_FROM {
        return serializer.serialize_str(s);
    }
    let text = json_escape_simd::escape(s);
    let mut raw = serializer.serialize_struct(RAW_VALUE, 1)?;
    raw.serialize_field(RAW_VALUE, text.as_str())?;
    raw.end()
}

/// `s` as a JSON string (quotes included), appended to `out`: serde_json's
/// bytes, escaped by SIMD whatever the length.
pub fn escape_into(s: &str, out: &mut Vec<u8>) {
    json_escape_simd::escape_into(s, out);
}

/// `serialize_with` for a [`Value`] field.
pub fn value<S: Serializer>(v: &Value, serializer: S) -> Result<S::Ok, S::Error> {
    FastValue(v).serialize(serializer)
}

/// `serialize_with` for a map of [`Value`]s.
pub fn values<S: Serializer>(
    map: &BTreeMap<String, Value>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(map.iter().map(|(k, v)| (k, FastValue(v))))
}

/// `serde_json::to_string(v)`, the same bytes.
pub fn to_string(v: &Value) -> String {
    // A `Value` always serializes: its keys are strings.
    serde_json::to_string(&FastValue(v)).unwrap_or_else(|_| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn same(v: &Value) {
        assert_eq!(to_string(v), serde_json::to_string(v).expect("serializes"));
        assert_eq!(
            serde_json::to_string_pretty(&FastValue(v)).expect("serializes"),
            serde_json::to_string_pretty(v).expect("serializes")
        );
        assert_eq!(
            serde_json::to_value(FastValue(v)).expect("serializes"),
            *v,
            "to_value reads the text back"
        );
    }

    #[test]
    fn every_character_class_is_escaped_as_serde_json_does() {
        // Each of the first 256 code points, then the awkward ones, at the
        // start, middle and end of a long string and alone in one.
        let specials: Vec<char> = (0u32..256)
            .filter_map(char::from_u32)
            .chain([
                '\u{2028}',
                '\u{2029}',
                '\u{feff}',
                '\u{fffd}',
                '\u{ffff}',
                '\u{1F600}',
                '\u{10FFFF}',
            ])
            .collect();
        let pad = "a".repeat(SIMD_FROM);
        for c in specials {
            for s in [
                format!("{c}{pad}"),
                format!("{pad}{c}{pad}"),
                format!("{pad}{c}"),
                c.to_string().repeat(SIMD_FROM),
            ] {
                same(&Value::String(s));
            }
        }
    }

    #[test]
    fn nested_values_and_short_strings_are_unchanged() {
        let long = "x\"y\\z\n\u{1}é".repeat(40);
        same(&json!({
            "a": [1, -2, 2.5, 1e21, null, true, "short", long],
            "b": {"c": {"d": long, "e": []}, "f": {}},
            long.clone(): long,
        }));
        same(&json!(long));
        same(&json!([]));
    }

    /// The typed carriers of payloads: each long string is in their text
    /// as serde_json writes it (struct fields keep their declared order, so
    /// the `Value` tests above are the byte-for-byte check), the text reads
    /// back to the same data, and `to_value` (which reads the raw strings
    /// back) gives the same value as parsing the text.
    #[test]
    fn payload_fields_serialize_as_before() {
        use crate::agent_event::AgentEvent;
        use crate::chat::{Message, ProviderToolCall};
        use crate::envelope::ToolEnvelope;
        let long = "quote \" back \\ nl \n tab \t nul \u{0} del \u{7f} é \u{2028} 😀 ".repeat(8);
        let plain = serde_json::to_string(&long).expect("serializes");
        let input = json!({"note": long, "n": [1, 2.5, {"deep": long}]});
        let mut envelope = ToolEnvelope::failed(
            "id".into(),
            "t".into(),
            "1.0.0".into(),
            input.clone(),
            crate::error::ToolError::unknown("x"),
            "a".into(),
            "b".into(),
        );
        envelope.output = json!([long]).into();
        let check = |text: String, value: Value, times: usize| {
            assert_eq!(text.matches(&plain).count(), times, "{text}");
            assert_eq!(serde_json::from_str::<Value>(&text).expect("JSON"), value);
        };
        fn round<T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(
            t: &T,
        ) -> (String, Value) {
            let text = serde_json::to_string(t).expect("serializes");
            assert_eq!(&serde_json::from_str::<T>(&text).expect("reads back"), t);
            (text, serde_json::to_value(t).expect("serializes"))
        }
        let (text, value) = round(&envelope);
        check(text, value, 3);
        let (text, value) = round(&AgentEvent::ToolCallStarted {
            call_id: "id".into(),
            tool: "t@1.0.0".into(),
            input: input.clone().into(),
        });
        check(text, value, 2);
        let (text, value) = round(&Message::ToolResult {
            provider_call_id: "p".into(),
            name: "t".into(),
            content: input.clone().into(),
            is_error: false,
        });
        check(text, value, 2);
        let (text, value) = round(&ProviderToolCall {
            id: "p".into(),
            name: "t".into(),
            arguments: input.into(),
        });
        check(text, value, 2);
    }

    proptest! {
        #[test]
        fn any_string_is_written_as_serde_json_writes_it(
            s in "[\\u{0}-\\u{7f}\\u{80}-\\u{7ff}\\u{800}-\\u{ffff}\\u{10000}-\\u{10ffff}]{0,400}",
            repeat in 1usize..4,
        ) {
            let v = Value::String(s.repeat(repeat));
            prop_assert_eq!(to_string(&v), serde_json::to_string(&v).expect("serializes"));
        }
    }
}
