//! Dehydrating as a value is serialized (issue #30).
//!
//! [`PayloadSet::dehydrate`] cuts a text that exists already: serde_json
//! writes the whole text, then a scan finds each anchored value again and
//! copies what is left into the skeleton. For the texts a run writes from
//! its own values (its events, a node's checkpoint, its record) that whole
//! text is only ever an intermediate: at a long run's end it is megabytes
//! (a node's record holds its outputs and its bundle, which repeat every
//! call's input several times), grown by doubling, so most of a run's
//! fresh memory, and every page of it a page fault (about 2.4 us each on
//! the machines this runs on, more than the scan's instructions).
//!
//! [`PayloadSet::serialize`] writes the skeleton directly, with the
//! [`Writer`] here: a serde serializer that writes serde_json's compact
//! text byte for byte (numbers by serde_json's own formatter, strings and
//! keys escaped by SIMD, `fast_json`'s escaper, which escapes exactly as
//! serde_json does) and watches object keys. When the value of an anchored
//! key ends and its text (counting what was cut from it) is at least
//! [`MIN_PAYLOAD`] bytes, the bytes it left in the buffer (its own
//! skeleton) become its payload and give way to `null` and a ref, just as
//! the scan would have cut them. Inner values are cut before the values
//! that hold them, so a payload that holds payloads arrives as its
//! skeleton and refs, which is what its key is made of (see `key_of`); its
//! whole text is never written. A raw fragment (a long string escaped
//! ahead, or a [`node_runtime::Payload`]'s text, see
//! `node_runtime::payload::compact_texts`) is copied, an object or array
//! cut as the scan cuts it. The result is the same skeleton, refs and rows
//! as `dehydrate(serde_json::to_string(value))`, byte for byte (the tests
//! check it on arbitrary JSON and on the run's own records).
//!
//! It replaced serde_json's serializer with a formatter hooked into its
//! keys: serde_json escapes every string, keys included, one byte at a
//! time, and a run's texts are mostly short keys and strings (the largest
//! single cost of a sequential call's instructions).

use serde::ser::{self, Error as _, Serialize};
use serde_json::ser::{CompactFormatter, Formatter};

use super::{refs_text, Dehydrated, PayloadSet, TopPayload, ANCHORS, MIN_PAYLOAD};

type Error = serde_json::Error;
type Result<T = ()> = std::result::Result<T, Error>;

/// serde_json's token for a raw value (`fast_json`).
const RAW_VALUE: &str = node_runtime::fast_json::RAW_VALUE;

/// An object's value being written.
struct Open {
    /// Its key is one of the [`ANCHORS`].
    anchor: bool,
    /// Its key, when it is an anchor of the outermost object (for
    /// [`TopPayload`]).
    top_key: Option<String>,
    /// Where the value starts in the buffer.
    start: usize,
    /// How many refs were taken before it.
    refs: usize,
    /// [`Writer::extra`] before it.
    extra: usize,
}

/// The serializer: serde_json's compact text into `buf`, cut as it goes.
pub(super) struct Writer<'a> {
    buf: Vec<u8>,
    set: &'a mut PayloadSet,
    /// The payloads cut so far and not inside another one cut since: where
    /// their `null` is in the buffer, and their key.
    refs: Vec<(usize, String)>,
    /// How much longer the whole text is than the buffer: each payload cut
    /// stands in it for its text's length, less the four bytes of `null`.
    extra: usize,
    /// Objects and arrays open (the outermost object's keys are at 1).
    depth: usize,
    /// The payloads cut from the outermost object's own keys, when asked.
    top: Option<Vec<TopPayload>>,
}

impl Writer<'_> {
    fn escape(&mut self, s: &str) {
        node_runtime::fast_json::escape_into(s, &mut self.buf);
    }

    fn open(&mut self, byte: u8) {
        self.depth += 1;
        self.buf.push(byte);
    }

    fn close(&mut self, byte: u8) {
        self.depth -= 1;
        self.buf.push(byte);
    }

    /// Before a key: the separator, and where the key starts.
    fn key_start(&mut self, first: bool) -> usize {
        if !first {
            self.buf.push(b',');
        }
        self.buf.len()
    }

    /// After the key that started at `at`: opens its value.
    fn value_start(&mut self, at: usize) -> Open {
        // The key as written, quotes and escapes included: what the scan
        // compares too.
        let name = self.buf[at..]
            .strip_prefix(b"\"")
            .and_then(|k| k.strip_suffix(b"\""))
            .filter(|k| ANCHORS.contains(k));
        let top_key = name
            .filter(|_| self.depth == 1 && self.top.is_some())
            .map(|k| String::from_utf8_lossy(k).into_owned());
        let anchor = name.is_some();
        self.buf.push(b':');
        Open {
            anchor,
            top_key,
            start: self.buf.len(),
            refs: self.refs.len(),
            extra: self.extra,
        }
    }

    /// The value `open` ended: cut it when it is anchored and big enough.
    fn value_end(&mut self, open: Open) {
        if !open.anchor {
            return;
        }
        let whole = self.buf.len() - open.start + (self.extra - open.extra);
        if whole < MIN_PAYLOAD {
            return;
        }
        let inner: Vec<(usize, String)> = self
            .refs
            .drain(open.refs..)
            .map(|(at, hash)| (at - open.start, hash))
            .collect();
        let hash = self.set.add_cut(&self.buf[open.start..], inner, whole);
        self.buf.truncate(open.start);
        self.buf.extend_from_slice(b"null");
        self.refs.push((open.start, hash.clone()));
        self.extra = open.extra + whole - 4;
        if let (Some(top), Some(key)) = (self.top.as_mut(), open.top_key) {
            let at = open.start + open.extra;
            top.push(TopPayload {
                key,
                range: at..at + whole,
                hash,
            });
        }
    }

    /// One key and its value, the key written by `key`.
    fn entry<T: Serialize + ?Sized>(
        &mut self,
        first: bool,
        key: impl FnOnce(&mut Self) -> Result,
        value: &T,
    ) -> Result {
        let at = self.key_start(first);
        key(self)?;
        let open = self.value_start(at);
        value.serialize(&mut *self)?;
        self.value_end(open);
        Ok(())
    }

    /// A raw fragment: a long string escaped ahead, copied as is, or a
    /// payload's whole text, cut as the scan cuts it where it meets the
    /// value: its anchored values inside become refs, so its skeleton, refs
    /// and key are those its value would give.
    fn raw(&mut self, fragment: &str) {
        if fragment.len() >= MIN_PAYLOAD && matches!(fragment.as_bytes()[0], b'{' | b'[') {
            if let Some((len, (skeleton, refs))) = self.set.scan(fragment, false, None) {
                if len == fragment.len() {
                    let at = self.buf.len();
                    self.buf.extend_from_slice(skeleton.as_bytes());
                    self.extra += fragment.len() - skeleton.len();
                    self.refs
                        .extend(refs.into_iter().map(|(offset, hash)| (at + offset, hash)));
                    return;
                }
            }
        }
        self.buf.extend_from_slice(fragment.as_bytes());
    }

    /// A number as serde_json writes it.
    fn number(&mut self, write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> Result {
        write(&mut self.buf).map_err(Error::io)
    }
}

/// The serializer methods of booleans and integers: each writes its value
/// by serde_json's formatter, through `$via` (the writer's `number`, a
/// key's `quoted`).
macro_rules! scalars {
    ($via:ident) => {
        scalars! { @ $via;
            serialize_bool(bool) => write_bool;
            serialize_i8(i8) => write_i8;
            serialize_i16(i16) => write_i16;
            serialize_i32(i32) => write_i32;
            serialize_i64(i64) => write_i64;
            serialize_i128(i128) => write_i128;
            serialize_u8(u8) => write_u8;
            serialize_u16(u16) => write_u16;
            serialize_u32(u32) => write_u32;
            serialize_u64(u64) => write_u64;
            serialize_u128(u128) => write_u128;
        }
    };
    (@ $via:ident; $($method:ident($ty:ty) => $write:ident;)*) => {$(
        fn $method(self, v: $ty) -> Result {
            self.$via(|b| CompactFormatter.$write(b, v))
        }
    )*};
}

impl<'a, 'w> ser::Serializer for &'a mut Writer<'w> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Seq<'a, 'w>;
    type SerializeTuple = Seq<'a, 'w>;
    type SerializeTupleStruct = Seq<'a, 'w>;
    type SerializeTupleVariant = Seq<'a, 'w>;
    type SerializeMap = Map<'a, 'w>;
    type SerializeStruct = Map<'a, 'w>;
    type SerializeStructVariant = Map<'a, 'w>;

    scalars!(number);
    fn serialize_f32(self, v: f32) -> Result {
        if !v.is_finite() {
            return self.serialize_unit();
        }
        self.number(|b| CompactFormatter.write_f32(b, v))
    }
    fn serialize_f64(self, v: f64) -> Result {
        if !v.is_finite() {
            return self.serialize_unit();
        }
        self.number(|b| CompactFormatter.write_f64(b, v))
    }
    fn serialize_char(self, v: char) -> Result {
        self.escape(v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result {
        self.escape(v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result {
        use ser::SerializeSeq;
        let mut seq = self.serialize_seq(Some(v.len()))?;
        for b in v {
            seq.serialize_element(b)?;
        }
        seq.end()
    }
    fn serialize_none(self) -> Result {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result {
        self.buf.extend_from_slice(b"null");
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
        self.open(b'{');
        self.entry(true, |w| w.serialize_str(variant), value)?;
        self.close(b'}');
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Seq<'a, 'w>> {
        self.open(b'[');
        Ok(Seq {
            w: self,
            first: true,
            variant: None,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'a, 'w>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Seq<'a, 'w>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Seq<'a, 'w>> {
        self.open(b'{');
        let at = self.key_start(true);
        self.escape(variant);
        let open = self.value_start(at);
        self.open(b'[');
        Ok(Seq {
            w: self,
            first: true,
            variant: Some(open),
        })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Map<'a, 'w>> {
        self.open(b'{');
        Ok(Map {
            w: self,
            first: true,
            key: None,
            variant: None,
            raw: false,
        })
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Map<'a, 'w>> {
        if name == RAW_VALUE {
            return Ok(Map {
                w: self,
                first: true,
                key: None,
                variant: None,
                raw: true,
            });
        }
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Map<'a, 'w>> {
        self.open(b'{');
        let at = self.key_start(true);
        self.escape(variant);
        let open = self.value_start(at);
        self.open(b'{');
        Ok(Map {
            w: self,
            first: true,
            key: None,
            variant: Some(open),
            raw: false,
        })
    }
}

/// An array being written (or a tuple variant's, `{"variant":[...]}`).
pub(super) struct Seq<'a, 'w> {
    w: &'a mut Writer<'w>,
    first: bool,
    variant: Option<Open>,
}

impl Seq<'_, '_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        if !std::mem::take(&mut self.first) {
            self.w.buf.push(b',');
        }
        value.serialize(&mut *self.w)
    }

    fn finish(self) -> Result {
        self.w.close(b']');
        if let Some(open) = self.variant {
            self.w.value_end(open);
            self.w.close(b'}');
        }
        Ok(())
    }
}

/// The four sequence traits are the same list (`Seq::element`,
/// `Seq::finish`).
macro_rules! seq_impl {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Seq<'_, '_> {
            type Ok = ();
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
                self.element(value)
            }
            fn end(self) -> Result {
                self.finish()
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

/// An object being written (a map, a struct, a struct variant's
/// `{"variant":{...}}`), or a raw value (`raw`: one field, its text).
pub(super) struct Map<'a, 'w> {
    w: &'a mut Writer<'w>,
    first: bool,
    /// A map's key written, its value not yet: where it starts.
    key: Option<usize>,
    variant: Option<Open>,
    raw: bool,
}

impl Map<'_, '_> {
    fn finish(self) -> Result {
        if self.raw {
            return Ok(());
        }
        self.w.close(b'}');
        if let Some(open) = self.variant {
            self.w.value_end(open);
            self.w.close(b'}');
        }
        Ok(())
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result {
        if self.raw {
            return value.serialize(RawText(&mut *self.w));
        }
        let first = std::mem::take(&mut self.first);
        self.w
            .entry(first, |w| ser::Serializer::serialize_str(w, key), value)
    }
}

impl ser::SerializeMap for Map<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result {
        let first = std::mem::take(&mut self.first);
        let at = self.w.key_start(first);
        key.serialize(KeyWriter { w: &mut *self.w })?;
        self.key = Some(at);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        let at = self
            .key
            .take()
            .ok_or_else(|| Error::custom("a map value without its key"))?;
        let open = self.w.value_start(at);
        value.serialize(&mut *self.w)?;
        self.w.value_end(open);
        Ok(())
    }
    fn end(self) -> Result {
        self.finish()
    }
}

/// A struct and a struct variant are the same fields (`Map::field`).
macro_rules! struct_impl {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Map<'_, '_> {
            type Ok = ();
            type Error = Error;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result {
                self.field(key, value)
            }
            fn end(self) -> Result {
                self.finish()
            }
        }
    )*};
}

struct_impl!(SerializeStruct, SerializeStructVariant);

fn key_must_be_a_string() -> Error {
    Error::custom("key must be a string")
}

/// A map key, as serde_json writes one: a string, or a number, a boolean
/// or a char in quotes; anything else is an error.
struct KeyWriter<'a, 'w> {
    w: &'a mut Writer<'w>,
}

impl KeyWriter<'_, '_> {
    fn quoted(self, write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> Result {
        self.w.buf.push(b'"');
        write(&mut self.w.buf).map_err(Error::io)?;
        self.w.buf.push(b'"');
        Ok(())
    }
}

/// Serializer methods that refuse what they are given with `$error`.
macro_rules! refused {
    ($error:expr; $($method:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {$(
        fn $method(self $(, $arg: $ty)*) -> Result<$ret> {
            $(let _ = $arg;)*
            Err($error)
        }
    )*};
}

/// The compound types of a serializer that writes one scalar (a key, a
/// raw value's text): none can be serialized.
macro_rules! no_compounds {
    () => {
        type SerializeSeq = ser::Impossible<(), Error>;
        type SerializeTuple = ser::Impossible<(), Error>;
        type SerializeTupleStruct = ser::Impossible<(), Error>;
        type SerializeTupleVariant = ser::Impossible<(), Error>;
        type SerializeMap = ser::Impossible<(), Error>;
        type SerializeStruct = ser::Impossible<(), Error>;
        type SerializeStructVariant = ser::Impossible<(), Error>;
    };
}

impl ser::Serializer for KeyWriter<'_, '_> {
    type Ok = ();
    type Error = Error;
    no_compounds!();

    fn serialize_str(self, v: &str) -> Result {
        self.w.escape(v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result {
        self.w.escape(v.encode_utf8(&mut [0; 4]));
        Ok(())
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
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result {
        value.serialize(self)
    }
    fn serialize_f32(self, v: f32) -> Result {
        if !v.is_finite() {
            return Err(Error::custom(
                "float key must be finite (got NaN or +/-inf)",
            ));
        }
        self.quoted(|b| CompactFormatter.write_f32(b, v))
    }
    fn serialize_f64(self, v: f64) -> Result {
        if !v.is_finite() {
            return Err(Error::custom(
                "float key must be finite (got NaN or +/-inf)",
            ));
        }
        self.quoted(|b| CompactFormatter.write_f64(b, v))
    }
    scalars!(quoted);
    refused! { key_must_be_a_string();
        serialize_bytes(v: &[u8]) -> ();
        serialize_none() -> ();
        serialize_unit() -> ();
        serialize_unit_struct(name: &'static str) -> ();
        serialize_seq(len: Option<usize>) -> Self::SerializeSeq;
        serialize_tuple(len: usize) -> Self::SerializeTuple;
        serialize_tuple_struct(name: &'static str, len: usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(name: &'static str, i: u32, variant: &'static str, len: usize) -> Self::SerializeTupleVariant;
        serialize_map(len: Option<usize>) -> Self::SerializeMap;
        serialize_struct(name: &'static str, len: usize) -> Self::SerializeStruct;
        serialize_struct_variant(name: &'static str, i: u32, variant: &'static str, len: usize) -> Self::SerializeStructVariant;
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _i: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result {
        Err(key_must_be_a_string())
    }
}

/// A raw value's one field (a string), handed to [`Writer::raw`] as it is
/// borrowed, not copied first.
struct RawText<'a, 'w>(&'a mut Writer<'w>);

impl ser::Serializer for RawText<'_, '_> {
    type Ok = ();
    type Error = Error;
    no_compounds!();

    fn serialize_str(self, v: &str) -> Result {
        self.0.raw(v);
        Ok(())
    }
    refused! { raw_expected();
        serialize_bool(v: bool) -> ();
        serialize_i8(v: i8) -> ();
        serialize_i16(v: i16) -> ();
        serialize_i32(v: i32) -> ();
        serialize_i64(v: i64) -> ();
        serialize_u8(v: u8) -> ();
        serialize_u16(v: u16) -> ();
        serialize_u32(v: u32) -> ();
        serialize_u64(v: u64) -> ();
        serialize_f32(v: f32) -> ();
        serialize_f64(v: f64) -> ();
        serialize_char(v: char) -> ();
        serialize_bytes(v: &[u8]) -> ();
        serialize_none() -> ();
        serialize_unit() -> ();
        serialize_unit_struct(name: &'static str) -> ();
        serialize_unit_variant(name: &'static str, i: u32, variant: &'static str) -> ();
        serialize_seq(len: Option<usize>) -> Self::SerializeSeq;
        serialize_tuple(len: usize) -> Self::SerializeTuple;
        serialize_tuple_struct(name: &'static str, len: usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(name: &'static str, i: u32, variant: &'static str, len: usize) -> Self::SerializeTupleVariant;
        serialize_map(len: Option<usize>) -> Self::SerializeMap;
        serialize_struct(name: &'static str, len: usize) -> Self::SerializeStruct;
        serialize_struct_variant(name: &'static str, i: u32, variant: &'static str, len: usize) -> Self::SerializeStructVariant;
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result {
        Err(raw_expected())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _value: &T,
    ) -> Result {
        Err(raw_expected())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _i: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result {
        Err(raw_expected())
    }
}

fn raw_expected() -> Error {
    Error::custom("a raw value is its text")
}

/// The largest buffer a run keeps between writes (one a huge text grew is
/// let go).
const MAX_KEPT_BUFFER: usize = 1 << 20;

impl PayloadSet {
    /// `value`'s JSON text dehydrated (see [`PayloadSet::dehydrate`]),
    /// written as its skeleton without its whole text being made: the
    /// same result as `dehydrate(&serde_json::to_string(value)?)`.
    pub fn serialize<T: Serialize + ?Sized>(
        &mut self,
        value: &T,
    ) -> std::result::Result<Dehydrated, serde_json::Error> {
        self.write(value, None).map(|(d, _)| d)
    }

    /// [`PayloadSet::serialize`], also naming the payloads cut from the
    /// outermost object's own keys (as [`PayloadSet::dehydrate_object`]).
    pub fn serialize_object<T: Serialize + ?Sized>(
        &mut self,
        value: &T,
    ) -> std::result::Result<(Dehydrated, Vec<TopPayload>), serde_json::Error> {
        self.write(value, Some(Vec::new()))
            .map(|(d, top)| (d, top.unwrap_or_default()))
    }

    fn write<T: Serialize + ?Sized>(
        &mut self,
        value: &T,
        top: Option<Vec<TopPayload>>,
    ) -> std::result::Result<(Dehydrated, Option<Vec<TopPayload>>), serde_json::Error> {
        // The run's buffer, grown once: a text written here is copied out
        // at its length (a value cut shrinks the text, and a string with
        // the capacity of what it held would keep that memory for as long
        // as the write waits in the writer's queue).
        let mut buf = std::mem::take(&mut self.known.buffer);
        buf.clear();
        let mut w = Writer {
            buf,
            set: self,
            refs: Vec::new(),
            extra: 0,
            depth: 0,
            top,
        };
        // Payloads from their text, written once for the run's records.
        let written = node_runtime::payload::compact_texts(|| value.serialize(&mut w));
        let Writer { buf, refs, top, .. } = w;
        // Only JSON text and escaped strings were written.
        let text = written.and_then(|()| {
            String::from_utf8(buf.clone()).map_err(|e| Error::custom(format!("not UTF-8: {e}")))
        });
        if buf.capacity() <= MAX_KEPT_BUFFER {
            self.known.buffer = buf;
        }
        let d = Dehydrated {
            text: text?,
            refs: refs_text(&refs),
        };
        Ok((d, top))
    }
}
