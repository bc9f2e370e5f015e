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
//! [`PayloadSet::serialize`] writes the skeleton directly: serde_json's own
//! serializer, whose [`Formatter`] here watches object keys. When the value
//! of an anchored key ends and its text (counting what was cut from it) is
//! at least [`MIN_PAYLOAD`] bytes, the bytes it left in the buffer (its own
//! skeleton) become its payload and give way to `null` and a ref, just as
//! the scan would have cut them. Inner values are cut before the values
//! that hold them, so a payload that holds payloads arrives as its
//! skeleton and refs, which is what its key is made of (see `key_of`); its
//! whole text is never written. The result is the same skeleton, refs and
//! rows as `dehydrate(serde_json::to_string(value))`, byte for byte (the
//! tests check it on arbitrary JSON), at the cost of one serialization.

use std::io;

use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

use super::{refs_text, Dehydrated, PayloadSet, TopPayload, ANCHORS, MIN_PAYLOAD};

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
    /// [`Cuts::extra`] before it.
    extra: usize,
}

/// What the formatter tracks as the value is written.
#[derive(Default)]
struct Cuts {
    /// The payloads cut so far and not inside another one cut since:
    /// where their `null` is in the buffer, and their key.
    refs: Vec<(usize, String)>,
    /// How much longer the whole text is than the buffer: each payload cut
    /// stands in it for its text's length, less the four bytes of `null`.
    extra: usize,
    /// Objects and arrays open (the outermost object's keys are at 1).
    depth: usize,
    /// Where the key being written starts.
    key_start: usize,
    /// Whether the key just written is an anchor, and its text when it is
    /// one of the outermost object's.
    anchor: bool,
    top_key: Option<String>,
    open: Vec<Open>,
    /// The payloads cut from the outermost object's own keys, when asked.
    top: Option<Vec<TopPayload>>,
}

/// serde_json's compact formatter, cutting anchored values as they end.
/// It writes into its own buffer (the serializer's writer is a sink): a
/// run's texts are mostly short keys and strings, and a shared buffer
/// behind the writer cost more per piece than writing them.
struct Cutter<'a> {
    buf: &'a mut Vec<u8>,
    set: &'a mut PayloadSet,
    cuts: &'a mut Cuts,
}

/// Formatter methods that write as the compact formatter does, into the
/// buffer.
macro_rules! compact {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[inline]
        fn $name<W: ?Sized + io::Write>(&mut self, _: &mut W $(, $arg: $ty)*) -> io::Result<()> {
            CompactFormatter.$name(&mut *self.buf $(, $arg)*)
        }
    )*};
}

impl Cutter<'_> {
    /// The value `open` ended: cut it when it is big enough.
    fn end_value(&mut self, open: Open) {
        let buf = &mut *self.buf;
        let cuts = &mut *self.cuts;
        let whole = buf.len() - open.start + (cuts.extra - open.extra);
        if whole < MIN_PAYLOAD {
            return;
        }
        // serde_json writes UTF-8, and a value starts after a `:` and ends
        // where the buffer does.
        let Ok(skeleton) = std::str::from_utf8(&buf[open.start..]) else {
            return;
        };
        let inner: Vec<(usize, String)> = cuts
            .refs
            .drain(open.refs..)
            .map(|(at, hash)| (at - open.start, hash))
            .collect();
        let hash = self.set.add_cut(skeleton, inner, whole);
        buf.truncate(open.start);
        buf.extend_from_slice(b"null");
        cuts.refs.push((open.start, hash.clone()));
        cuts.extra = open.extra + whole - 4;
        if let (Some(top), Some(key)) = (cuts.top.as_mut(), open.top_key) {
            let at = open.start + open.extra;
            top.push(TopPayload {
                key,
                range: at..at + whole,
                hash,
            });
        }
    }
}

impl Formatter for Cutter<'_> {
    compact! {
        write_null();
        write_bool(value: bool);
        write_i8(value: i8);
        write_i16(value: i16);
        write_i32(value: i32);
        write_i64(value: i64);
        write_i128(value: i128);
        write_u8(value: u8);
        write_u16(value: u16);
        write_u32(value: u32);
        write_u64(value: u64);
        write_u128(value: u128);
        write_f32(value: f32);
        write_f64(value: f64);
        write_number_str(value: &str);
        begin_string();
        end_string();
        write_string_fragment(fragment: &str);
        write_char_escape(char_escape: CharEscape);
        write_byte_array(value: &[u8]);
        begin_array_value(first: bool);
        end_array_value();
        write_raw_fragment(fragment: &str);
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.cuts.depth += 1;
        self.buf.push(b'[');
        Ok(())
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.cuts.depth -= 1;
        self.buf.push(b']');
        Ok(())
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.cuts.depth += 1;
        self.buf.push(b'{');
        Ok(())
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.cuts.depth -= 1;
        self.buf.push(b'}');
        Ok(())
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        _: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if !first {
            self.buf.push(b',');
        }
        self.cuts.key_start = self.buf.len();
        Ok(())
    }

    fn end_object_key<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        // The key as written, quotes and escapes included: what the scan
        // compares too.
        let key = &self.buf[self.cuts.key_start..];
        let name = key
            .strip_prefix(b"\"")
            .and_then(|k| k.strip_suffix(b"\""))
            .filter(|k| ANCHORS.contains(k));
        self.cuts.anchor = name.is_some();
        self.cuts.top_key = name
            .filter(|_| self.cuts.depth == 1 && self.cuts.top.is_some())
            .map(|k| String::from_utf8_lossy(k).into_owned());
        Ok(())
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.buf.push(b':');
        let cuts = &mut *self.cuts;
        cuts.open.push(Open {
            anchor: std::mem::take(&mut cuts.anchor),
            top_key: cuts.top_key.take(),
            start: self.buf.len(),
            refs: cuts.refs.len(),
            extra: cuts.extra,
        });
        Ok(())
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        if let Some(open) = self.cuts.open.pop().filter(|o| o.anchor) {
            self.end_value(open);
        }
        Ok(())
    }
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
    ) -> Result<Dehydrated, serde_json::Error> {
        self.write(value, None).map(|(d, _)| d)
    }

    /// [`PayloadSet::serialize`], also naming the payloads cut from the
    /// outermost object's own keys (as [`PayloadSet::dehydrate_object`]).
    pub fn serialize_object<T: Serialize + ?Sized>(
        &mut self,
        value: &T,
    ) -> Result<(Dehydrated, Vec<TopPayload>), serde_json::Error> {
        self.write(value, Some(Vec::new()))
            .map(|(d, top)| (d, top.unwrap_or_default()))
    }

    fn write<T: Serialize + ?Sized>(
        &mut self,
        value: &T,
        top: Option<Vec<TopPayload>>,
    ) -> Result<(Dehydrated, Option<Vec<TopPayload>>), serde_json::Error> {
        // The run's buffer, grown once: a text written here is copied out
        // at its length (a value cut shrinks the text, and a string with
        // the capacity of what it held would keep that memory for as long
        // as the write waits in the writer's queue).
        let mut buf = std::mem::take(&mut self.known.buffer);
        buf.clear();
        let mut cuts = Cuts {
            top,
            ..Cuts::default()
        };
        let formatter = Cutter {
            buf: &mut buf,
            set: self,
            cuts: &mut cuts,
        };
        let mut serializer = serde_json::Serializer::with_formatter(io::sink(), formatter);
        value.serialize(&mut serializer)?;
        drop(serializer);
        let text = std::str::from_utf8(&buf).map(str::to_owned).map_err(|e| {
            <serde_json::Error as serde::ser::Error>::custom(format!("not UTF-8: {e}"))
        });
        if buf.capacity() <= MAX_KEPT_BUFFER {
            self.known.buffer = buf;
        }
        let text = text?;
        let d = Dehydrated {
            text,
            refs: refs_text(&cuts.refs),
        };
        Ok((d, cuts.top))
    }
}
