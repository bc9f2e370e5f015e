//! RFC 8785 (JCS) text of a `Serialize` value written straight from it,
//! without building a [`serde_json::Value`] first (issue #30).
//!
//! A replay bundle's integrity hash is taken over the canonical text of
//! each of its records (envelopes, exchanges, the config); going through
//! `serde_json::to_value` built a tree of maps and strings for each one,
//! only to write it out and drop it: two thirds of the hash's time.
//!
//! Only the subset whose canonical text serde_json writes as is takes this
//! path: strings, booleans, null, integers within +-2^53, floats with such
//! an integral value (written as integers, as RFC 8785 says) or not finite
//! (null, as `to_value` makes them), and objects whose keys are ASCII (so
//! byte order is UTF-16 order) and unique. Anything else (another float,
//! a bigger integer, a non-ASCII or non-string key, bytes, a raw value that
//! is not a string) makes [`to_string`] return `None`, and the caller takes
//! the `Value` path; a test checks both give the same text.
//!
//! An object's members are written as they come, then put in key order
//! once the object ends (one copy of its text, none when the keys came in
//! order already, as a map's do).

use std::borrow::Cow;

use serde::ser::{self, Serialize};

/// The canonical text of `value`, or `None` outside the subset above.
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Option<String> {
    let mut out = Vec::with_capacity(256);
    // A payload whose text is canonical comes as that text.
    crate::payload::canonical_texts(|| value.serialize(Writer { out: &mut out })).ok()?;
    // Only JSON text and escaped strings were written.
    String::from_utf8(out).ok()
}

const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// serde_json's name for a raw value; `fast_json` writes long strings as
/// one (their escaped text).
const RAW_VALUE: &str = "$serde_json::private::RawValue";

/// Outside the subset: the caller takes the `Value` path.
#[derive(Debug)]
pub struct Unsupported;

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("outside the canonical fast path")
    }
}

impl std::error::Error for Unsupported {}

impl ser::Error for Unsupported {
    fn custom<T: std::fmt::Display>(_msg: T) -> Self {
        Unsupported
    }
}

type Result<T = ()> = std::result::Result<T, Unsupported>;

struct Writer<'a> {
    out: &'a mut Vec<u8>,
}

/// `s` as a JSON string: serde_json's escapes, which are RFC 8785's,
/// written by SIMD (`fast_json::escape_into`) instead of a byte at a time.
fn escaped(out: &mut Vec<u8>, s: &str) -> Result {
    crate::fast_json::escape_into(s, out);
    Ok(())
}

fn integer(out: &mut Vec<u8>, magnitude: u64, negative: bool) -> Result {
    if magnitude > MAX_SAFE_INTEGER {
        return Err(Unsupported);
    }
    if negative && magnitude != 0 {
        out.push(b'-');
    }
    use std::io::Write;
    write!(out, "{magnitude}").map_err(|_| Unsupported)
}

impl<'a> ser::Serializer for Writer<'a> {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Seq<'a>;
    type SerializeMap = Object<'a>;
    type SerializeStruct = Object<'a>;
    type SerializeStructVariant = Object<'a>;

    fn serialize_bool(self, v: bool) -> Result {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result {
        integer(self.out, v.unsigned_abs(), v < 0)
    }
    fn serialize_u8(self, v: u8) -> Result {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result {
        integer(self.out, v, false)
    }
    fn serialize_f32(self, v: f32) -> Result {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result {
        if !v.is_finite() {
            // `to_value` makes a non-finite float null.
            return self.serialize_unit();
        }
        if v.fract() != 0.0 || v.abs() > MAX_SAFE_INTEGER as f64 {
            return Err(Unsupported);
        }
        // -0.0 is written 0.
        integer(self.out, v.abs() as u64, v < 0.0)
    }
    fn serialize_char(self, v: char) -> Result {
        escaped(self.out, v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result {
        escaped(self.out, v)
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result {
        Err(Unsupported)
    }
    fn serialize_none(self) -> Result {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _name: &'static str, _i: u32, variant: &'static str) -> Result {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        value: &T,
    ) -> Result {
        // One member: in order by itself.
        self.out.push(b'{');
        escaped(self.out, variant)?;
        self.out.push(b':');
        value.serialize(Writer { out: self.out })?;
        self.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Seq<'a>> {
        self.out.push(b'[');
        Ok(Seq {
            out: self.out,
            first: true,
            variant: false,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'a>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Seq<'a>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Seq<'a>> {
        self.out.push(b'{');
        escaped(self.out, variant)?;
        self.out.extend_from_slice(b":[");
        Ok(Seq {
            out: self.out,
            first: true,
            variant: true,
        })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Object<'a>> {
        Ok(Object::new(self.out, false, false))
    }
    fn serialize_struct(self, name: &'static str, _len: usize) -> Result<Object<'a>> {
        Ok(Object::new(self.out, name == RAW_VALUE, false))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Object<'a>> {
        self.out.push(b'{');
        escaped(self.out, variant)?;
        self.out.push(b':');
        Ok(Object::new(self.out, false, true))
    }
}

struct Seq<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
    /// Inside a tuple variant's `{"variant":`, closed at the end.
    variant: bool,
}

impl Seq<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        if !std::mem::take(&mut self.first) {
            self.out.push(b',');
        }
        value.serialize(Writer { out: self.out })
    }
    fn close(self) -> Result {
        self.out.push(b']');
        if self.variant {
            self.out.push(b'}');
        }
        Ok(())
    }
}

/// The four sequence traits are the same list (`Seq::element`, `Seq::close`).
macro_rules! seq_impl {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Seq<'_> {
            type Ok = ();
            type Error = Unsupported;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
                self.element(value)
            }
            fn end(self) -> Result {
                self.close()
            }
        }
    )*};
}

seq_impl!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// An object being written: its members go to `out` as they come, each
/// as `"key":value` after a comma; `members` holds each one's key and
/// range, to put them in key order at the end when they did not come so
/// (a struct's fields; a map's keys come in order).
struct Object<'a> {
    out: &'a mut Vec<u8>,
    /// Where the object's `{` is.
    start: usize,
    members: Vec<(Cow<'static, str>, std::ops::Range<usize>)>,
    /// The key of the member being written (a map's key comes first).
    key: Option<Cow<'static, str>>,
    /// A raw value's struct: its one field is the value's text.
    raw: bool,
    /// Inside a struct variant's `{"variant":`, closed at the end.
    variant: bool,
}

impl<'a> Object<'a> {
    fn new(out: &'a mut Vec<u8>, raw: bool, variant: bool) -> Self {
        let start = out.len();
        if !raw {
            out.push(b'{');
        }
        Self {
            out,
            start,
            members: Vec::new(),
            key: None,
            raw,
            variant,
        }
    }

    fn member<T: Serialize + ?Sized>(&mut self, key: Cow<'static, str>, value: &T) -> Result {
        if self.raw {
            // `fast_json`'s long string: its escaped text, which is
            // serde_json's (and RFC 8785's) text of that string; or a
            // payload's canonical text (`payload::canonical_texts`, on
            // while this writer runs). Any other raw value (a whole
            // object, say) may not be canonical.
            let text = value.serialize(KeyWriter)?;
            let canonical = text.starts_with('"') || crate::payload::canonical_texts_on();
            if !self.members.is_empty() || !canonical {
                return Err(Unsupported);
            }
            self.out.extend_from_slice(text.as_bytes());
            self.members.push((key, 0..0));
            return Ok(());
        }
        if !key.is_ascii() {
            return Err(Unsupported);
        }
        if !self.members.is_empty() {
            self.out.push(b',');
        }
        let from = self.out.len();
        escaped(self.out, &key)?;
        self.out.push(b':');
        value.serialize(Writer { out: self.out })?;
        self.members.push((key, from..self.out.len()));
        Ok(())
    }

    fn close(mut self) -> Result {
        if self.raw {
            // Written by `member` as is.
            return if self.members.is_empty() {
                Err(Unsupported)
            } else {
                Ok(())
            };
        }
        let in_order = self
            .members
            .windows(2)
            .all(|w| w[0].0.as_bytes() < w[1].0.as_bytes());
        if !in_order {
            self.members
                .sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            if self.members.windows(2).any(|w| w[0].0 == w[1].0) {
                return Err(Unsupported);
            }
            // The members' texts again, in key order.
            let body = self.out.split_off(self.start);
            self.out.push(b'{');
            for (i, (_, range)) in self.members.iter().enumerate() {
                if i > 0 {
                    self.out.push(b',');
                }
                self.out
                    .extend_from_slice(&body[range.start - self.start..range.end - self.start]);
            }
        }
        self.out.push(b'}');
        if self.variant {
            self.out.push(b'}');
        }
        Ok(())
    }
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result {
        self.key = Some(Cow::Owned(key.serialize(KeyWriter)?.into()));
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        let key = self.key.take().ok_or(Unsupported)?;
        self.member(key, value)
    }
    fn end(self) -> Result {
        self.close()
    }
}

/// A struct's and a struct variant's fields are members alike.
macro_rules! struct_impl {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Object<'_> {
            type Ok = ();
            type Error = Unsupported;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result {
                self.member(Cow::Borrowed(key), value)
            }
            fn end(self) -> Result {
                self.close()
            }
        }
    )*};
}

struct_impl!(SerializeStruct, SerializeStructVariant);

/// `fn serialize_x(self, _: T) -> Result<Box<str>> { Err(Unsupported) }`
/// for each `serialize_x(T)`: keys that are not strings.
macro_rules! refuse {
    ($($method:ident($ty:ty)),*) => {$(
        fn $method(self, _v: $ty) -> Result<Box<str>> {
            Err(Unsupported)
        }
    )*};
}

/// A map key: a string (or a char, or a unit variant's name) only.
struct KeyWriter;

impl ser::Serializer for KeyWriter {
    type Ok = Box<str>;
    type Error = Unsupported;
    type SerializeSeq = ser::Impossible<Box<str>, Unsupported>;
    type SerializeTuple = ser::Impossible<Box<str>, Unsupported>;
    type SerializeTupleStruct = ser::Impossible<Box<str>, Unsupported>;
    type SerializeTupleVariant = ser::Impossible<Box<str>, Unsupported>;
    type SerializeMap = ser::Impossible<Box<str>, Unsupported>;
    type SerializeStruct = ser::Impossible<Box<str>, Unsupported>;
    type SerializeStructVariant = ser::Impossible<Box<str>, Unsupported>;

    fn serialize_str(self, v: &str) -> Result<Box<str>> {
        Ok(v.into())
    }
    fn serialize_char(self, v: char) -> Result<Box<str>> {
        Ok(v.to_string().into())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
    ) -> Result<Box<str>> {
        Ok(variant.into())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Box<str>> {
        value.serialize(self)
    }
    refuse!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_bytes(&[u8])
    );
    fn serialize_none(self) -> Result<Box<str>> {
        Err(Unsupported)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<Box<str>> {
        Err(Unsupported)
    }
    fn serialize_unit(self) -> Result<Box<str>> {
        Err(Unsupported)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Box<str>> {
        Err(Unsupported)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _i: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<Box<str>> {
        Err(Unsupported)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(Unsupported)
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        Err(Unsupported)
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(Unsupported)
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _i: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(Unsupported)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        Err(Unsupported)
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct> {
        Err(Unsupported)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _i: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(Unsupported)
    }
}
