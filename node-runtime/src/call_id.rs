//! Deterministic call ids and canonical JSON.
//!
//! ```text
//! call_id = lowercase hex BLAKE3(
//!     "glassbox.call_id.v1" 0x00 name "@" version 0x00 canonical_input 0x00 n )
//! ```
//!
//! - `canonical_input` is the RFC 8785 (JCS) canonical JSON of the validated
//!   input, so key order and white space never change an id.
//! - `n` (decimal) counts the *earlier* calls in the same agent run with the
//!   same `name@version` and the same canonical input. An id therefore does
//!   not change when unrelated calls come before it, is the same across runs
//!   and replays, and repeated identical calls get distinct ids (n = 0, 1, ...).
//! - The 0x00 separators cannot occur inside the parts (tool refs are
//!   printable and canonical JSON escapes control characters), so no two
//!   different triples hash the same bytes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::payload::Payload;

const DOMAIN: &[u8] = b"glassbox.call_id.v1";

/// RFC 8785 canonical JSON text of a value.
///
/// Fast path: when the value has no fractional numbers, no integer beyond
/// +-2^53 and only ASCII object keys, the canonical form is exactly
/// serde_json's compact output (objects are `BTreeMap`s, so keys come out
/// sorted, and ASCII byte order is UTF-16 order; strings are escaped the
/// same way; such integers print the same as ECMAScript numbers). Anything
/// else goes through `serde_json_canonicalizer`. A property test checks the
/// two agree.
pub fn canonical_json(value: &Value) -> String {
    match fast_path(value) {
        // `serde_json::to_string` writes straight into a buffer; `Display`
        // (`value.to_string()`) goes through a formatter and is twice as slow.
        Fast::Plain => plain_text(value),
        // RFC 8785 writes an integral float as an integer (2.0 -> "2"); the
        // formatter does so as it writes, without a converted copy.
        Fast::IntegralFloats => {
            let mut out = Vec::with_capacity(256);
            let mut ser = serde_json::Serializer::with_formatter(&mut out, IntegralFloats);
            // Long strings escaped by SIMD, the same bytes (`fast_json`).
            #[cfg(feature = "runtime")]
            let written = crate::fast_json::FastValue(value).serialize(&mut ser);
            #[cfg(not(feature = "runtime"))]
            let written = value.serialize(&mut ser);
            match written {
                Ok(()) => String::from_utf8(out).unwrap_or_else(|_| canonical_json_general(value)),
                Err(_) => canonical_json_general(value),
            }
        }
        Fast::No => canonical_json_general(value),
    }
}

/// serde_json's compact output of `value`: long strings escaped by SIMD
/// in the native build (`fast_json`), the same bytes.
fn plain_text(value: &Value) -> String {
    #[cfg(feature = "runtime")]
    return crate::fast_json::to_string(value);
    #[cfg(not(feature = "runtime"))]
    serde_json::to_string(value).unwrap_or_else(|_| canonical_json_general(value))
}

/// serde_json's compact output, except that a float is written as an
/// integer. Used only where [`fast_path`] found every float integral and
/// within +-2^53 (`-0.0` is written `0`, as RFC 8785 says).
struct IntegralFloats;

impl serde_json::ser::Formatter for IntegralFloats {
    fn write_f64<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        value: f64,
    ) -> std::io::Result<()> {
        serde_json::ser::CompactFormatter.write_i64(writer, value as i64)
    }
}

/// [`canonical_json`] of a payload: its text (written once for every
/// record that shares it, see [`Payload::text`]) when that is canonical
/// already, as it is for the usual value (ASCII keys, integers within
/// +-2^53; serde_json writes a map's keys in order).
pub fn canonical_of(payload: &Payload) -> std::borrow::Cow<'_, str> {
    #[cfg(feature = "runtime")]
    if fast_path(payload) == Fast::Plain {
        return std::borrow::Cow::Borrowed(payload.text());
    }
    std::borrow::Cow::Owned(canonical_json(payload))
}

/// The general RFC 8785 implementation (`serde_json_canonicalizer`).
pub fn canonical_json_general(value: &Value) -> String {
    // Serializing a `serde_json::Value` cannot fail: its keys are strings and
    // its numbers are finite.
    serde_json_canonicalizer::to_string(value).expect("a serde_json::Value always canonicalizes")
}

const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Whether `serde_json` can write a value's RFC 8785 form: numbers are
/// integers within +-2^53 (or floats with such an integral value, written
/// as integers), keys are ASCII (so byte order is UTF-16 order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fast {
    Plain,
    IntegralFloats,
    No,
}

fn fast_path(value: &Value) -> Fast {
    match value {
        Value::Null | Value::Bool(_) | Value::String(_) => Fast::Plain,
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                if u <= MAX_SAFE_INTEGER {
                    Fast::Plain
                } else {
                    Fast::No
                }
            } else if let Some(i) = n.as_i64() {
                if i.unsigned_abs() <= MAX_SAFE_INTEGER {
                    Fast::Plain
                } else {
                    Fast::No
                }
            } else {
                match n.as_f64() {
                    Some(f) if f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64 => {
                        Fast::IntegralFloats
                    }
                    _ => Fast::No,
                }
            }
        }
        Value::Array(items) => items.iter().map(fast_path).max().unwrap_or(Fast::Plain),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| if k.is_ascii() { fast_path(v) } else { Fast::No })
            .max()
            .unwrap_or(Fast::Plain),
    }
}

/// The call id of the `n`-th identical call (`n` from 0).
pub fn call_id(name: &str, version: &str, canonical_input: &str, n: u64) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(DOMAIN);
    hasher.update(&[0]);
    hasher.update(name.as_bytes());
    hasher.update(b"@");
    hasher.update(version.as_bytes());
    hasher.update(&[0]);
    hasher.update(canonical_input.as_bytes());
    hasher.update(&[0]);
    hasher.update(n.to_string().as_bytes());
    hasher.finalize().to_hex().to_string()
}

/// Hands out call ids for one agent run, counting identical calls. It
/// serializes with the run, so a resumed run continues the count.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallIdAllocator {
    /// `name@version` NUL canonical input -> calls so far.
    seen: BTreeMap<String, u64>,
}

impl CallIdAllocator {
    pub fn new() -> Self {
        Self::default()
    }

    /// The id for the next call of `name@version` with this input.
    pub fn next(&mut self, name: &str, version: &str, input: &Payload) -> String {
        let canonical = canonical_of(input);
        let id_n = {
            let n = self
                .seen
                .entry(format!("{name}@{version}\0{canonical}"))
                .or_insert(0);
            let current = *n;
            *n += 1;
            current
        };
        call_id(name, version, &canonical, id_n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn id_is_lowercase_hex_blake3() {
        let id = call_id("calculator", "1.0.0", "{}", 0);
        assert_eq!(id.len(), 64);
        assert!(id
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    }

    #[test]
    fn unrelated_calls_do_not_shift_ids() {
        let input: Payload = json!({"expression": "2*3"}).into();
        let mut a = CallIdAllocator::new();
        let alone = a.next("calculator", "1.0.0", &input);
        let mut b = CallIdAllocator::new();
        b.next("http_request", "1.0.0", &json!({"url": "http://x"}).into());
        b.next("calculator", "1.0.0", &json!({"expression": "1"}).into());
        assert_eq!(b.next("calculator", "1.0.0", &input), alone);
    }

    #[test]
    fn repeated_identical_calls_get_distinct_ids() {
        let input: Payload = json!({"a": 1}).into();
        let mut alloc = CallIdAllocator::new();
        let first = alloc.next("t", "1.0.0", &input);
        let second = alloc.next("t", "1.0.0", &input);
        assert_ne!(first, second);
        assert_eq!(first, call_id("t", "1.0.0", &canonical_json(&input), 0));
        assert_eq!(second, call_id("t", "1.0.0", &canonical_json(&input), 1));
    }

    #[test]
    fn fast_path_matches_rfc8785_examples() {
        for v in [
            json!({"b": 1, "a": [true, null, "x\u{1f}\"\\"], "c": {"z": -5, "y": 9007199254740991_u64}}),
            json!({"n": 1.0, "m": 1e21, "k": -0.0}),
            json!({"cost": 0.0, "result": 42.0, "big": 9007199254740992.0, "neg": -3.0}),
            json!([2.0, 2.5, {"x": 1e15}]),
            json!({"\u{e9}": 1, "z": 2}),
            json!(18446744073709551615_u64),
        ] {
            assert_eq!(canonical_json(&v), canonical_json_general(&v), "{v}");
        }
    }

    #[test]
    fn version_is_part_of_the_id() {
        assert_ne!(
            call_id("t", "1.0.0", "{}", 0),
            call_id("t", "1.0.1", "{}", 0)
        );
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            (-(1i64 << 53)..(1i64 << 53)).prop_map(|n| json!(n)),
            (-1.0e12f64..1.0e12).prop_map(|f| json!(f)),
            (-(1i64 << 53)..(1i64 << 53)).prop_map(|n| json!(n as f64)),
            (-1000i64..1000).prop_map(|n| json!(n as f64)),
            "[a-zA-Z0-9 \\u{0}-\\u{1f}\\u{7f}\\u{e9}\\u{2028}\\u{ffff}\\u{1F600}/<>\"\\\\]{0,12}"
                .prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(
                    "[a-zA-Z_\\u{e9}\\u{ff21}\\u{1F600}]{1,6}",
                    inner,
                    0..6
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Rebuilds every object with its keys in reverse order.
    fn reverse_keys(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.reverse();
                let mut out = serde_json::Map::new();
                for (k, v) in entries {
                    out.insert(k.clone(), reverse_keys(v));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(reverse_keys).collect()),
            other => other.clone(),
        }
    }

    proptest! {
        #[test]
        fn key_order_and_whitespace_never_change_the_id(value in arb_json()) {
            let pretty = serde_json::to_string_pretty(&value).expect("ser");
            let reparsed: Value = serde_json::from_str(&pretty).expect("parse");
            let reordered = reverse_keys(&value);
            let a = call_id("t", "1.0.0", &canonical_json(&value), 0);
            prop_assert_eq!(&a, &call_id("t", "1.0.0", &canonical_json(&reparsed), 0));
            prop_assert_eq!(&a, &call_id("t", "1.0.0", &canonical_json(&reordered), 0));
        }

        #[test]
        fn different_n_gives_different_ids(value in arb_json(), n in 0u64..1000, m in 0u64..1000) {
            prop_assume!(n != m);
            let c = canonical_json(&value);
            prop_assert_ne!(call_id("t", "1.0.0", &c, n), call_id("t", "1.0.0", &c, m));
        }

        #[test]
        fn fast_path_equals_rfc8785(value in arb_json()) {
            prop_assert_eq!(canonical_json(&value), canonical_json_general(&value));
        }

        /// The direct writer (`canonical_ser`) gives the very text of the
        /// `Value` path, and takes every value of its subset.
        #[cfg(feature = "runtime")]
        #[test]
        fn direct_canonical_text_equals_the_value_path(value in arb_json()) {
            let direct = crate::canonical_ser::to_string(&value);
            let fast = crate::canonical_ser::to_string(&crate::fast_json::FastValue(&value));
            prop_assert_eq!(&direct, &fast);
            match direct {
                Some(text) => prop_assert_eq!(text, canonical_json(&value)),
                None => prop_assert_eq!(fast_path(&value), Fast::No),
            }
        }

        /// Long strings (written by `fast_json` as raw escaped text) and
        /// every character class, inside an object whose keys come out of
        /// order (a struct's fields do).
        #[cfg(feature = "runtime")]
        #[test]
        fn direct_canonical_text_of_long_strings_and_unordered_keys(
            s in "[\\u{0}-\\u{7f}\\u{80}-\\u{7ff}\\u{800}-\\u{ffff}\\u{10000}-\\u{10ffff}]{0,300}",
            n in -(1i64 << 53)..(1i64 << 53),
        ) {
            #[derive(serde::Serialize)]
            struct Unordered<'a> {
                zeta: crate::fast_json::FastValue<'a>,
                alpha: i64,
                #[serde(rename = "m\"q")]
                quoted: Option<bool>,
                list: Vec<crate::fast_json::FastValue<'a>>,
            }
            let long = Value::String(s.repeat(2));
            let v = Unordered {
                zeta: crate::fast_json::FastValue(&long),
                alpha: n,
                quoted: None,
                list: vec![crate::fast_json::FastValue(&long)],
            };
            let via_value = canonical_json(&serde_json::to_value(&v).expect("to_value"));
            prop_assert_eq!(crate::canonical_ser::to_string(&v), Some(via_value));
        }

        #[test]
        fn canonical_json_round_trips(value in arb_json()) {
            let text = canonical_json(&value);
            let back: Value = serde_json::from_str(&text).expect("canonical JSON is JSON");
            prop_assert_eq!(canonical_json(&back), text);
        }
    }
}
