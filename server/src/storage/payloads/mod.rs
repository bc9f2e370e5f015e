//! Each payload stored once per run (issue 30).
//!
//! A tool call's input and output travel through many texts of a run: its
//! events, its invocation record, the node's outputs, the replay bundle,
//! the run's record, the node's checkpoint. Each of those texts is stored
//! *dehydrated*: every JSON value of at least [`MIN_PAYLOAD`] bytes that
//! follows one of the [`ANCHORS`] keys is cut out, kept once in the
//! `payloads` table under its key (the BLAKE3 of its bytes, or for a
//! payload that holds payloads, of its skeleton and refs: see [`key_of`]),
//! and replaced in the text by the four bytes `null`. What is stored is that *skeleton* (still valid
//! JSON) and its refs, `[[offset,"hash"],...]`: the offsets of those
//! `null`s in the skeleton, ascending. A payload is itself dehydrated the
//! same way (an `outputs` payload refers to its calls' `input` payloads).
//!
//! Reading splices each payload back in place of the four bytes at its
//! offset, so `inflate(dehydrate(t)) == t` byte for byte for any text,
//! whatever it means: nothing is re-serialized. Payloads are scoped to the
//! run (the key is `(run_id, hash)`, deleted with it), so no reference
//! counting is needed and no run can probe another's payloads.
//!
//! A row's skeleton is kept compressed when that makes it smaller, else as
//! is ([`CODEC_RAW`]): a skeleton shorter than [`ZSTD_FROM`] as an LZ4
//! block ([`CODEC_LZ4`]) when that saves a quarter, any other as a zstd
//! frame ([`CODEC_ZSTD`], level [`ZSTD_LEVEL`]) when that saves 10% (see
//! `encode`). Rows written before may be zstd at any size, or raw deflated
//! ([`CODEC_DEFLATE`]), and stay readable. Reading decompresses to at most
//! the row's `size` bytes (a skeleton is never longer than the text it
//! stands for), so a bad or oversized stream is an error, never a panic or
//! an unbounded buffer.
//!
//! zstd replaced deflate on the write path because a 1 KB payload is
//! short: miniz_oxide builds and zeroes a compressor of about 300 KB for
//! each one (37-186 us per 1 KB payload measured), while one zstd context
//! per thread, reused, compresses it in about 6 us to the same size. LZ4
//! then took the short ones (issue #30): zstd still builds its entropy
//! tables for each 1 KB payload, about 32K instructions of a sequential
//! tool call's 578K, where LZ4, which has no entropy stage, takes a few
//! thousand. Where LZ4 finds too few repeats (random letters, base64)
//! zstd's entropy coding still saves a third, so such a text goes on to
//! zstd, as does a long one (a page an HTTP call fetched), whose ratio
//! matters more than the time.
//!
//! Dehydrating (scanning, hashing and compressing) happens on the run's own
//! task; the group writer only stores the rows it is given.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::*;

mod write;

/// The smallest value worth cutting out: below it, a reference and a row
/// cost more than they save.
pub const MIN_PAYLOAD: usize = 256;

/// The object keys whose values are payloads: envelope `input`/`output`,
/// a model's tool call `arguments`, a tool result's `content`, a node's
/// `inputs`/`outputs`, a node record's `bundle`.
const ANCHORS: [&[u8]; 7] = [
    b"input",
    b"output",
    b"inputs",
    b"outputs",
    b"arguments",
    b"content",
    b"bundle",
];

/// `payloads.codec`: `data` is the skeleton as is.
pub const CODEC_RAW: i64 = 0;
/// `payloads.codec`: `data` is the skeleton raw deflated (RFC 1951, no
/// zlib header). Read only: rows of earlier versions.
pub const CODEC_DEFLATE: i64 = 1;
/// `payloads.codec`: `data` is the skeleton as one zstd frame (RFC 8878)
/// that states its content size.
pub const CODEC_ZSTD: i64 = 2;
/// `payloads.codec`: `data` is the skeleton's length (4 bytes, little
/// endian) and then the skeleton as one LZ4 block (no frame).
pub const CODEC_LZ4: i64 = 3;
/// Skeletons this long or longer are compressed with zstd, shorter ones
/// with LZ4 (see the module's documentation).
pub const ZSTD_FROM: usize = 64 * 1024;
/// The zstd level: the fastest regular one, which the run path pays for
/// (a 1 KB payload per tool call); higher levels gain little on such short
/// texts.
pub const ZSTD_LEVEL: i32 = 1;

thread_local! {
    /// One zstd context per thread: creating one costs more than
    /// compressing a short payload with it.
    static ZSTD_COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
    static ZSTD_DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// How deep payloads may nest when read back (three levels in practice:
/// bundle, outputs, input). More means the stored data is corrupt.
const MAX_DEPTH: usize = 16;

/// A text as stored: the skeleton and its refs (`None`: the text itself).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dehydrated {
    pub text: String,
    pub refs: Option<String>,
}

/// A payload cut from one of an object's own keys (see
/// [`PayloadSet::dehydrate_object`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopPayload {
    pub key: String,
    /// Where its value was in the object's text.
    pub range: std::ops::Range<usize>,
    pub hash: String,
}

/// Payload keys: 64 hex digits, hashed with foldhash (the standard
/// library's SipHash took about 3% of a sequential call's instructions
/// over these sets; the keys are BLAKE3 digests, nothing an attacker picks
/// to collide).
pub type KeySet = HashSet<String, foldhash::fast::RandomState>;

/// What a run's writes know of its payloads, handed from one write's
/// [`PayloadSet`] to the next (see [`PayloadSet::known`]).
#[derive(Debug, Default)]
pub struct Known {
    /// Payloads the run's committed writes stored: referred to, not stored
    /// again.
    pub stored: KeySet,
    /// The rows of writes still in flight, by key (see [`Known::pend`]): a
    /// later write that refers to one of them carries the same row again
    /// (a write in flight may fail), as encoded then, instead of
    /// compressing its text again (issue #30: a node's checkpoint holds
    /// every input of its calls, and the run's events that carry them may
    /// still be queued behind it, or the other way round).
    pending: HashMap<String, PayloadRow, foldhash::fast::RandomState>,
    hashes: HashMemo,
    /// The buffer values are written into (see `write.rs`), kept from one
    /// write to the next.
    buffer: Vec<u8>,
}

impl Known {
    /// `rows` go with a write now in flight: until it ends
    /// ([`Known::settled`]), a later write that refers to one carries this
    /// row again instead of encoding it again.
    pub fn pend(&mut self, rows: &[PayloadRow]) {
        for row in rows {
            if !self.pending.contains_key(&row.hash) {
                self.pending.insert(row.hash.clone(), row.clone());
            }
        }
    }

    /// A write that carried the payloads `hashes` ended: their rows are no
    /// longer pending, and `committed` ones are stored.
    pub fn settled(&mut self, hashes: Vec<String>, committed: bool) {
        for hash in &hashes {
            self.pending.remove(hash);
        }
        if committed {
            self.stored.extend(hashes);
        }
    }
}

impl From<KeySet> for Known {
    fn from(stored: KeySet) -> Self {
        Self {
            stored,
            ..Self::default()
        }
    }
}

/// The largest text whose key [`HashMemo`] keeps: a bigger one (a
/// bundle, a node's outputs) is cut again where it is met again, and keyed
/// by what is left of it (see [`key_of`]).
const MEMO_MAX_TEXT: usize = 64 * 1024;
/// The most text one run's [`HashMemo`] keeps (a copy of texts the run
/// holds anyway, for as long as it runs); past it texts are keyed each
/// time, as without it.
const MEMO_MAX_BYTES: usize = 1 << 20;

/// Payload texts' keys by text (issue #30). A tool's input is in about
/// ten texts of a run (its events, its invocation record, the bundle's
/// exchange and envelope, the node's outputs) and BLAKE3 of 1 KB costs
/// about 7K instructions; finding it again costs a fast hash of the text
/// and one comparison. Kept for one run only.
#[derive(Debug, Default)]
struct HashMemo {
    hashes: HashMap<Box<[u8]>, String, foldhash::fast::RandomState>,
    bytes: usize,
}

impl HashMemo {
    /// The key given to `text` before, if it was kept.
    fn get(&self, text: &[u8]) -> Option<String> {
        if text.len() > MEMO_MAX_TEXT {
            return None;
        }
        self.hashes.get(text).cloned()
    }

    /// Keeps `text`'s key, within the memo's bounds.
    fn keep(&mut self, text: &[u8], hash: &str) {
        if text.len() <= MEMO_MAX_TEXT && self.bytes + text.len() <= MEMO_MAX_BYTES {
            self.bytes += text.len();
            self.hashes.insert(text.into(), hash.to_string());
        }
    }
}

/// A text cut: its skeleton and its refs.
type Cut<'t> = (Cow<'t, str>, Vec<(usize, String)>);

/// The payloads cut from the texts of one write, each once.
#[derive(Debug, Default)]
pub struct PayloadSet {
    rows: Vec<PayloadRow>,
    seen: KeySet,
    known: Known,
}

impl PayloadSet {
    /// A set that leaves out the payloads the run's committed writes
    /// stored and reuses the hashes its earlier writes took; given back by
    /// [`Self::into_known`].
    pub fn known(known: Known) -> Self {
        Self {
            known,
            ..Self::default()
        }
    }

    /// The rows to store, and the [`Known`] given to [`Self::known`] with
    /// the hashes this set took.
    pub fn into_known(self) -> (Vec<PayloadRow>, Known) {
        (self.rows, self.known)
    }

    /// The text with its payloads cut out (the skeleton is kept inline).
    pub fn dehydrate(&mut self, text: &str) -> Dehydrated {
        let (text, refs) = self.cut(text, None);
        Dehydrated {
            text: text.into_owned(),
            refs: refs_text(&refs),
        }
    }

    /// [`Self::dehydrate`] of an object's text, also naming the payloads
    /// cut from its own keys (not from deeper down): each key's value as
    /// the range of `text` it was and its hash.
    pub fn dehydrate_object(&mut self, text: &str) -> (Dehydrated, Vec<TopPayload>) {
        let mut top = Vec::new();
        let (skeleton, refs) = self.cut(text, Some(&mut top));
        let d = Dehydrated {
            text: skeleton.into_owned(),
            refs: refs_text(&refs),
        };
        (d, top)
    }

    /// The whole text as one payload when it is big enough (the stored
    /// skeleton is then `null`), else as [`Self::dehydrate`]. For columns
    /// that are themselves a payload another text carries (a node's
    /// outputs, a bundle).
    pub fn dehydrate_whole(&mut self, text: &str) -> Dehydrated {
        if text.len() < MIN_PAYLOAD {
            return self.dehydrate(text);
        }
        let hash = self.add(text, None);
        Dehydrated {
            text: "null".into(),
            refs: refs_text(&[(0, hash)]),
        }
    }

    /// A text stored whole as the payload `hash`, which a committed write
    /// of the run stored already (see [`Self::dehydrate_whole`]).
    pub fn stored_whole(hash: &str) -> Dehydrated {
        Dehydrated {
            text: "null".into(),
            refs: refs_text(&[(0, hash.to_string())]),
        }
    }

    /// An invocation record as stored: its input and output are the very
    /// payloads its events carry, each kept whole.
    pub fn dehydrate_invocation(&mut self, row: &mut InvocationRow) {
        let d = self.dehydrate_whole(&row.input);
        (row.input, row.input_refs) = (d.text, d.refs);
        if let Some(output) = &row.output {
            let d = self.dehydrate_whole(output);
            (row.output, row.output_refs) = (Some(d.text), d.refs);
        }
    }

    /// The rows to store (each payload once).
    pub fn into_rows(self) -> Vec<PayloadRow> {
        self.rows
    }

    /// Keeps `text` as a payload (once) and returns its key (see
    /// [`key_of`]). A text the run stored or this set kept is known by its
    /// memo without being cut; else it is cut here, unless `cut` brings its
    /// skeleton and refs already (a scan that found its end cut it).
    fn add<'t>(&mut self, text: &'t str, cut: Option<Cut<'t>>) -> String {
        let memo = self.known.hashes.get(text.as_bytes());
        if let Some(hash) = &memo {
            if self.seen.contains(hash) || self.known.stored.contains(hash) {
                return hash.clone();
            }
        }
        let (skeleton, refs) = cut.unwrap_or_else(|| self.cut(text, None));
        let refs = refs_text(&refs);
        let hash = memo.unwrap_or_else(|| {
            let hash = key_of(skeleton.as_bytes(), refs.as_deref());
            self.known.hashes.keep(text.as_bytes(), &hash);
            hash
        });
        let skeleton = match skeleton {
            Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
            Cow::Owned(s) => Cow::Owned(s.into_bytes()),
        };
        self.keep_row(hash, skeleton, refs, text.len())
    }

    /// [`Self::add`] of a value already cut as it was written (see
    /// `write.rs`): its skeleton, its refs (offsets in the skeleton) and
    /// the length of the whole text it stands for. A value with no refs
    /// is its own text, known by the memo; one with refs is keyed by its
    /// skeleton and refs, as `key_of` keys it, without its whole text.
    fn add_cut(&mut self, skeleton: &[u8], refs: Vec<(usize, String)>, whole: usize) -> String {
        let refs = refs_text(&refs);
        let hash = if refs.is_some() {
            key_of(skeleton, refs.as_deref())
        } else {
            match self.known.hashes.get(skeleton) {
                Some(hash) => hash,
                None => {
                    let hash = key_of(skeleton, None);
                    self.known.hashes.keep(skeleton, &hash);
                    hash
                }
            }
        };
        self.keep_row(hash, Cow::Borrowed(skeleton), refs, whole)
    }

    /// The payload `hash` goes with this write unless the run stored it or
    /// this set has it already: as the row of a write in flight when one
    /// carries it, else encoded here. `size`: the length of its whole text.
    fn keep_row(
        &mut self,
        hash: String,
        skeleton: Cow<'_, [u8]>,
        refs: Option<String>,
        size: usize,
    ) -> String {
        if !self.known.stored.contains(&hash) && self.seen.insert(hash.clone()) {
            if let Some(row) = self.known.pending.get(&hash) {
                self.rows.push(row.clone());
                return hash;
            }
            let (codec, data) = encode(skeleton);
            self.rows.push(PayloadRow {
                hash: hash.clone(),
                codec,
                size: i64::try_from(size).unwrap_or(i64::MAX),
                data,
                refs,
            });
        }
        hash
    }

    /// One pass over `text`: each anchored value of at least
    /// [`MIN_PAYLOAD`] bytes becomes `null` and a ref. The scan tracks
    /// strings and nesting, so nothing inside a string is ever taken for a
    /// key; text that is not JSON is only cut less, never altered. `top`:
    /// where to name the values cut from the outermost object's own keys.
    fn cut<'t>(&mut self, text: &'t str, top: Option<&mut Vec<TopPayload>>) -> Cut<'t> {
        // A whole text's scan always ends.
        self.scan(text, true, top)
            .map_or_else(|| (Cow::Borrowed(text), Vec::new()), |(_, cut)| cut)
    }

    /// [`Self::cut`] of all of `text` (`whole`), or of the object or array
    /// that opens it, then its length: an anchored object or array is cut
    /// in the same pass that finds where it ends, instead of being scanned
    /// once to find its end and again to cut it, at every level it is
    /// nested in (issue #30: a node's checkpoint holds its bundle, which
    /// holds its outputs, which hold every call's input). `None` when
    /// not `whole` and the value does not close; whatever it cut then is
    /// cut again, the same, by the scan that called it, which goes on
    /// inside the value.
    fn scan<'t>(
        &mut self,
        text: &'t str,
        whole: bool,
        mut top: Option<&mut Vec<TopPayload>>,
    ) -> Option<(usize, Cut<'t>)> {
        let b = text.as_bytes();
        let mut skeleton = String::new();
        let mut refs = Vec::new();
        let mut copied = 0;
        // true: an object.
        let mut stack: Vec<bool> = Vec::new();
        let mut expect_key = false;
        let mut i = 0;
        let mut end = None;
        while i < b.len() {
            match b[i] {
                b'"' => {
                    let Some(key_end) = string_end(b, i) else {
                        break;
                    };
                    if expect_key && stack.last() == Some(&true) {
                        expect_key = false;
                        if ANCHORS.contains(&&b[i + 1..key_end - 1]) {
                            let colon = skip_ws(b, key_end);
                            if b.get(colon) == Some(&b':') {
                                let v = skip_ws(b, colon + 1);
                                let value = match b.get(v) {
                                    Some(b'{' | b'[') => self
                                        .scan(&text[v..], false, None)
                                        .map(|(len, cut)| (v + len, Some(cut))),
                                    _ => scalar_end(b, v).map(|ve| (ve, None)),
                                };
                                if let Some((ve, parts)) = value {
                                    if ve - v >= MIN_PAYLOAD {
                                        let hash = self.add(&text[v..ve], parts);
                                        if let Some(top) = top.as_mut().filter(|_| stack.len() == 1)
                                        {
                                            top.push(TopPayload {
                                                key: String::from_utf8_lossy(
                                                    &b[i + 1..key_end - 1],
                                                )
                                                .into_owned(),
                                                range: v..ve,
                                                hash: hash.clone(),
                                            });
                                        }
                                        if skeleton.is_empty() && whole {
                                            skeleton.reserve(text.len() / 2);
                                        }
                                        skeleton.push_str(&text[copied..v]);
                                        refs.push((skeleton.len(), hash));
                                        skeleton.push_str("null");
                                        copied = ve;
                                        i = ve;
                                        continue;
                                    }
                                    // A short object or array holds nothing
                                    // to cut (a payload is longer), and its
                                    // scan has passed it.
                                    if parts.is_some() {
                                        i = ve;
                                        continue;
                                    }
                                }
                            }
                        }
                    }
                    i = key_end;
                    continue;
                }
                b'{' => {
                    stack.push(true);
                    expect_key = true;
                }
                b'[' => {
                    stack.push(false);
                    expect_key = false;
                }
                b'}' | b']' => {
                    stack.pop();
                    expect_key = false;
                    if !whole && stack.is_empty() {
                        end = Some(i + 1);
                        break;
                    }
                }
                b',' => expect_key = stack.last() == Some(&true),
                _ => {}
            }
            i += 1;
        }
        let end = match end {
            Some(end) => end,
            None if whole => text.len(),
            None => return None,
        };
        if refs.is_empty() {
            return Some((end, (Cow::Borrowed(&text[..end]), refs)));
        }
        skeleton.push_str(&text[copied..end]);
        Some((end, (Cow::Owned(skeleton), refs)))
    }
}

/// `bytes` as one zstd frame, with this thread's context.
fn zstd_compress(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    ZSTD_COMPRESSOR.with_borrow_mut(|slot| {
        let compressor = match slot {
            Some(c) => c,
            None => slot.insert(zstd::bulk::Compressor::new(ZSTD_LEVEL)?),
        };
        compressor.compress(bytes)
    })
}

/// A zstd frame's bytes, at most `limit` of them, with this thread's
/// context.
fn zstd_decompress(data: &[u8], limit: usize) -> std::io::Result<Vec<u8>> {
    ZSTD_DECOMPRESSOR.with_borrow_mut(|slot| {
        let decompressor = match slot {
            Some(d) => d,
            None => slot.insert(zstd::bulk::Decompressor::new()?),
        };
        decompressor.decompress(data, limit)
    })
}

/// A skeleton as stored. A short one is an LZ4 block when that saves at
/// least a quarter (text with repeats: JSON, logs, the same value again);
/// a long one, or a short one LZ4 cannot shrink that much (random text,
/// base64, hashes: without entropy coding LZ4 saves nothing there, where
/// zstd saves a third of a 36-letter alphabet), is a zstd frame when that
/// saves at least 10%; else the skeleton is kept as is.
fn encode(skeleton: Cow<'_, [u8]>) -> (i64, Vec<u8>) {
    if skeleton.len() < ZSTD_FROM {
        let packed = lz4_flex::block::compress_prepend_size(&skeleton);
        if packed.len().saturating_mul(4) <= skeleton.len().saturating_mul(3) {
            return (CODEC_LZ4, packed);
        }
    }
    match zstd_compress(&skeleton) {
        Ok(packed) if packed.len().saturating_mul(10) <= skeleton.len().saturating_mul(9) => {
            (CODEC_ZSTD, packed)
        }
        _ => (CODEC_RAW, skeleton.into_owned()),
    }
}

/// An LZ4 row's skeleton: the length its first 4 bytes state, at most
/// `limit`, and exactly that many bytes from the block after them. Nothing
/// is allocated for a stated length beyond `limit`.
fn lz4_decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    let (length, block) = data
        .split_first_chunk::<4>()
        .ok_or("bad LZ4 row: no length")?;
    let length = u32::from_le_bytes(*length) as usize;
    if length > limit {
        return Err(format!(
            "bad LZ4 row: {length} bytes is past its size {limit}"
        ));
    }
    let mut out = vec![0; length];
    // Into a buffer of the stated length: a block that writes past it is
    // an error (`decompress` may panic there instead).
    let written = lz4_flex::block::decompress_into(block, &mut out)
        .map_err(|e| format!("bad LZ4 block: {e}"))?;
    if written != length {
        return Err(format!("bad LZ4 block: {written} bytes, not {length}"));
    }
    Ok(out)
}

/// The skeleton a stored row holds: a compressed one decompresses to at
/// most `size` bytes (the length of the text it stands for); anything else
/// is an error.
fn decode(codec: i64, size: i64, data: &[u8]) -> Result<Cow<'_, str>, String> {
    let limit = || usize::try_from(size).map_err(|_| format!("bad size {size}"));
    let bytes = match codec {
        CODEC_RAW => {
            return std::str::from_utf8(data)
                .map(Cow::Borrowed)
                .map_err(|e| format!("not UTF-8: {e}"))
        }
        CODEC_DEFLATE => miniz_oxide::inflate::decompress_to_vec_with_limit(data, limit()?)
            .map_err(|e| format!("bad deflate stream: {e}"))?,
        CODEC_ZSTD => {
            zstd_decompress(data, limit()?).map_err(|e| format!("bad zstd frame: {e}"))?
        }
        CODEC_LZ4 => lz4_decompress(data, limit()?)?,
        other => return Err(format!("unknown codec {other}")),
    };
    String::from_utf8(bytes)
        .map(Cow::Owned)
        .map_err(|e| format!("not UTF-8: {e}"))
}

/// Lowercase hex BLAKE3 of a payload's bytes.
pub fn hash_of(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// The BLAKE3 key context of a payload that holds payloads of its own.
const SKELETON_KEY_CONTEXT: &str = "glassbox 2026-11-29 payload skeleton and refs";

/// A payload's key, from what is stored of it: a payload with none of
/// its own (`refs` is `None`; its skeleton is its text) is keyed by the
/// BLAKE3 of its bytes ([`hash_of`]); one that holds payloads, by BLAKE3
/// in its own key context of its skeleton, its refs text and the
/// skeleton's length, so its key names its content through theirs (a
/// Merkle tree) without hashing what they hold again: a node's outputs
/// or a bundle, hundreds of kilobytes at a long run's end, repeats every
/// call's input (issue #30). The cut is deterministic, so the same text
/// always has the same key. Rows written before this kept a composite
/// payload under the BLAKE3 of its whole text; they are read as before
/// (a key is only looked up), and a text stored again gets the new key.
fn key_of(skeleton: &[u8], refs: Option<&str>) -> String {
    let Some(refs) = refs else {
        return blake3::hash(skeleton).to_hex().to_string();
    };
    let mut hasher = blake3::Hasher::new_derive_key(SKELETON_KEY_CONTEXT);
    hasher.update(skeleton);
    hasher.update(refs.as_bytes());
    hasher.update(&(skeleton.len() as u64).to_le_bytes());
    hasher.finalize().to_hex().to_string()
}

/// A payload's refs as stored, `[[offset,"key"],...]`: serde_json's text of
/// them, byte for byte (a composite payload's key hashes it). The keys are
/// lowercase hex, which JSON writes as it is, so the text is put together
/// directly instead of through serde_json's escaping writer, a byte at a
/// time (issue #30); any other key goes through serde_json.
fn refs_text(refs: &[(usize, String)]) -> Option<String> {
    if refs.is_empty() {
        return None;
    }
    // Every byte checked without stopping early, so the check runs on
    // SIMD lanes; a key of another store is rare enough to pay twice.
    let hex = |key: &str| {
        key.bytes().fold(true, |ok, b| {
            ok & (b.is_ascii_digit() | (b'a'..=b'f').contains(&b))
        })
    };
    if !refs.iter().all(|(_, key)| hex(key)) {
        return serde_json::to_string(refs).ok();
    }
    // A ref is its key and at most 26 bytes more: `,[`, 20 digits, `,"`, `"]`.
    let mut text = String::with_capacity(2 + refs.iter().map(|(_, k)| k.len() + 26).sum::<usize>());
    let mut digits = itoa::Buffer::new();
    text.push('[');
    for (i, (offset, key)) in refs.iter().enumerate() {
        text.push_str(if i == 0 { "[" } else { ",[" });
        text.push_str(digits.format(*offset));
        text.push_str(",\"");
        text.push_str(key);
        text.push_str("\"]");
    }
    text.push(']');
    Some(text)
}

fn parse_refs(refs: Option<&str>) -> Result<Vec<(usize, String)>, String> {
    match refs {
        None => Ok(Vec::new()),
        Some(t) => serde_json::from_str(t).map_err(|e| format!("bad refs: {e}")),
    }
}

/// The index just past the string that opens at `i`; `None` when it does
/// not close.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() {
        j = quote_or_backslash(b, j);
        match b.get(j)? {
            b'\\' => j += 2,
            _ => return Some(j + 1),
        }
    }
    None
}

/// The index of the first `"` or `\` at or after `j` (`b.len()` when there
/// is none), by `memchr2` (many bytes at a time): payloads are mostly long
/// strings, and every text a run stores is scanned through them a few
/// times (issue #30).
fn quote_or_backslash(b: &[u8], j: usize) -> usize {
    b.get(j..)
        .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
        .map_or(b.len(), |k| j + k)
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// The index just past the string, number or literal that starts at `v`
/// (an object or an array is cut as it is scanned: see
/// [`PayloadSet::scan`]); `None` when a string does not close.
fn scalar_end(b: &[u8], v: usize) -> Option<usize> {
    match b.get(v)? {
        b'"' => string_end(b, v),
        _ => {
            let mut j = v;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            Some(j)
        }
    }
}

/// A `payloads` row as read.
#[derive(Debug, Clone)]
pub(super) struct StoredPayload {
    pub codec: i64,
    pub size: i64,
    pub data: Vec<u8>,
    pub refs: Option<String>,
}

/// Puts payloads back into skeletons, each payload inflated once.
pub(super) struct Inflater<'a> {
    rows: &'a HashMap<String, StoredPayload>,
    done: HashMap<String, Arc<str>>,
}

impl<'a> Inflater<'a> {
    pub(super) fn new(rows: &'a HashMap<String, StoredPayload>) -> Self {
        Self {
            rows,
            done: HashMap::new(),
        }
    }

    /// The text a skeleton and its refs stand for.
    pub(super) fn inflate(&mut self, skeleton: &str, refs: Option<&str>) -> Result<String, String> {
        let refs = parse_refs(refs)?;
        self.splice(skeleton, &refs, 0)
    }

    fn splice(
        &mut self,
        skeleton: &str,
        refs: &[(usize, String)],
        depth: usize,
    ) -> Result<String, String> {
        if refs.is_empty() {
            return Ok(skeleton.to_string());
        }
        let mut pieces = Vec::with_capacity(refs.len());
        let mut at = 0;
        let mut len = skeleton.len();
        for (offset, hash) in refs {
            let end = offset.checked_add(4).unwrap_or(usize::MAX);
            if *offset < at || skeleton.get(*offset..end) != Some("null") {
                return Err(format!("a ref at {offset} does not point at a `null`"));
            }
            let payload = self.payload(hash, depth)?;
            len += payload.len();
            pieces.push((at, *offset, payload));
            at = end;
        }
        let mut out = String::with_capacity(len);
        for (from, to, payload) in pieces {
            out.push_str(&skeleton[from..to]);
            out.push_str(&payload);
        }
        out.push_str(&skeleton[at..]);
        Ok(out)
    }

    fn payload(&mut self, hash: &str, depth: usize) -> Result<Arc<str>, String> {
        if let Some(text) = self.done.get(hash) {
            return Ok(text.clone());
        }
        if depth >= MAX_DEPTH {
            return Err(format!("payload {hash} nests too deep"));
        }
        let row = self
            .rows
            .get(hash)
            .ok_or_else(|| format!("payload {hash} is missing"))?;
        let data =
            decode(row.codec, row.size, &row.data).map_err(|e| format!("payload {hash}: {e}"))?;
        let refs = parse_refs(row.refs.as_deref()).map_err(|e| format!("payload {hash}: {e}"))?;
        let text = self.splice(&data, &refs, depth + 1)?;
        if i64::try_from(text.len()).ok() != Some(row.size) {
            return Err(format!(
                "payload {hash} inflates to {} bytes, not {}",
                text.len(),
                row.size
            ));
        }
        if cfg!(debug_assertions)
            && key_of(data.as_bytes(), row.refs.as_deref()) != hash
            && hash_of(&text) != hash
        {
            return Err(format!("payload {hash} does not match its key"));
        }
        let text: Arc<str> = text.into();
        self.done.insert(hash.to_string(), text.clone());
        Ok(text)
    }
}

impl Store {
    /// Stores payloads of run `run_id` (one already stored is kept).
    pub async fn put_payloads(&self, run_id: &str, rows: &[PayloadRow]) -> Result<(), StoreError> {
        let rows = rows.iter().map(|p| payload_args(run_id, p)).collect();
        self.write_values(&PAYLOADS, rows).await
    }

    /// The texts that `(skeleton, refs)` pairs of run `run_id` stand for,
    /// in order; a pair without refs is its text already. A missing or bad
    /// payload is [`StoreError::Corrupt`].
    pub async fn inflate(
        &self,
        run_id: &str,
        texts: Vec<(String, Option<String>)>,
    ) -> Result<Vec<String>, StoreError> {
        if texts.iter().all(|(_, refs)| refs.is_none()) {
            return Ok(texts.into_iter().map(|(t, _)| t).collect());
        }
        let corrupt = |e: String| StoreError::Corrupt(format!("run {run_id}: {e}"));
        let mut want: Vec<String> = Vec::new();
        for (_, refs) in &texts {
            want.extend(
                parse_refs(refs.as_deref())
                    .map_err(corrupt)?
                    .into_iter()
                    .map(|(_, h)| h),
            );
        }
        let mut asked: HashSet<String> = HashSet::new();
        let mut rows: HashMap<String, StoredPayload> = HashMap::new();
        // One round per level of nesting.
        while !want.is_empty() {
            want.retain(|h| asked.insert(h.clone()));
            let mut nested = Vec::new();
            for chunk in want.chunks(MAX_PARAMS - 1) {
                let marks: Vec<String> = (2..chunk.len() + 2).map(|n| format!("${n}")).collect();
                let sql = format!(
                    "SELECT hash, codec, size, data, refs FROM payloads WHERE run_id = $1 AND hash IN ({})",
                    marks.join(", ")
                );
                let mut query =
                    sqlx::query_as::<_, (String, i64, i64, Vec<u8>, Option<String>)>(&sql)
                        .persistent(false)
                        .bind(run_id);
                for h in chunk {
                    query = query.bind(h);
                }
                for (hash, codec, size, data, refs) in query.fetch_all(self.pool()).await? {
                    let inner = parse_refs(refs.as_deref())
                        .map_err(|e| corrupt(format!("payload {hash}: {e}")))?;
                    nested.extend(inner.into_iter().map(|(_, h)| h));
                    rows.insert(
                        hash,
                        StoredPayload {
                            codec,
                            size,
                            data,
                            refs,
                        },
                    );
                }
            }
            want = nested;
        }
        let mut inflater = Inflater::new(&rows);
        texts
            .into_iter()
            .map(|(text, refs)| match refs {
                None => Ok(text),
                Some(refs) => inflater.inflate(&text, Some(&refs)).map_err(corrupt),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The refs text is serde_json's, byte for byte: a composite
    /// payload's key hashes it, so the same content keeps its key.
    #[test]
    fn refs_text_is_serde_jsons_text() {
        let hex = hash_of("a payload");
        for refs in [
            vec![(0, hex.clone())],
            vec![
                (9, hex.clone()),
                (1_000_000, hash_of("another")),
                (usize::MAX, hex.clone()),
            ],
            // Not a key this store makes: still serde_json's text.
            vec![
                (3, "quote\" and \\ back\u{1}".to_string()),
                (4, hex.clone()),
            ],
            vec![(5, "\u{e9}t\u{e9}".to_string())],
        ] {
            assert_eq!(
                refs_text(&refs),
                serde_json::to_string(&refs).ok(),
                "{refs:?}"
            );
            assert_eq!(parse_refs(refs_text(&refs).as_deref()), Ok(refs));
        }
        assert_eq!(refs_text(&[]), None);
    }

    /// The memo gives back the key kept for a text, only for that text,
    /// and keeps no more than its bounds.
    #[test]
    fn the_hash_memo_keeps_each_texts_key_within_bounds() {
        let mut memo = HashMemo::default();
        let a = "a".repeat(1024);
        let b = format!("{}b", "a".repeat(1023));
        assert_eq!(memo.get(a.as_bytes()), None);
        memo.keep(a.as_bytes(), "ka");
        memo.keep(b.as_bytes(), "kb");
        assert_eq!(
            (memo.get(a.as_bytes()), memo.get(b.as_bytes())),
            (Some("ka".into()), Some("kb".into()))
        );
        assert_eq!((memo.hashes.len(), memo.bytes), (2, 2048));
        let big = "c".repeat(MEMO_MAX_TEXT + 1);
        memo.keep(big.as_bytes(), "kc");
        assert_eq!(
            memo.get(big.as_bytes()),
            None,
            "a text over the limit is not kept"
        );
        assert_eq!(memo.hashes.len(), 2);
        let mut full = HashMemo {
            bytes: MEMO_MAX_BYTES - 10,
            ..HashMemo::default()
        };
        full.keep(a.as_bytes(), "ka");
        assert!(full.hashes.is_empty(), "a full memo keeps no more");
    }

    /// A payload with none of its own is keyed by the BLAKE3 of its text;
    /// one that holds payloads, by its skeleton and refs: the same text
    /// the same key, another text (or the same skeleton with another
    /// payload in it) another key, and never its whole text's hash.
    #[test]
    fn a_payload_that_holds_payloads_is_keyed_by_its_skeleton_and_refs() {
        let input = |c: &str| format!("{{\"note\":\"{}\"}}", c.repeat(300));
        let outputs = |c: &str| {
            format!(
                "{{\"calls\":[{{\"input\":{}}}],\"pad\":\"{}\"}}",
                input(c),
                "p".repeat(300)
            )
        };
        let key = |text: &str| {
            let mut set = PayloadSet::default();
            let hash = set.add(text, None);
            (hash, set.into_rows())
        };
        let (leaf, rows) = key(&input("x"));
        assert_eq!((leaf, rows.len()), (hash_of(&input("x")), 1));
        let (x, rows) = key(&outputs("x"));
        assert_eq!(rows.len(), 2, "the outputs and the input they hold");
        let row = rows.iter().find(|r| r.hash == x).expect("the outputs' row");
        let skeleton = decode(row.codec, row.size, &row.data).expect("decodes");
        assert_eq!(x, key_of(skeleton.as_bytes(), row.refs.as_deref()));
        assert_ne!(x, hash_of(&outputs("x")));
        assert_eq!(key(&outputs("x")).0, x, "the same text, the same key");
        assert_ne!(key(&outputs("y")).0, x, "another input, another key");
        // Both kinds inflate back, each checked against its key.
        let mut set = PayloadSet::default();
        let d = set.dehydrate_whole(&outputs("x"));
        let rows = stored(set.into_rows());
        let back = Inflater::new(&rows)
            .inflate(&d.text, d.refs.as_deref())
            .expect("inflates");
        assert_eq!(back, outputs("x"));
    }

    /// A composite payload stored by an earlier version, under the BLAKE3
    /// of its whole text, is read as before.
    #[test]
    fn a_composite_row_keyed_by_its_whole_text_stays_readable() {
        let inner = format!("{{\"note\":\"{}\"}}", "z".repeat(300));
        let outer = format!("{{\"input\":{inner}}}");
        let mut rows = stored(vec![PayloadRow {
            hash: hash_of(&inner),
            codec: CODEC_RAW,
            size: inner.len() as i64,
            data: inner.clone().into_bytes(),
            refs: None,
        }]);
        let skeleton = "{\"input\":null}";
        let refs = refs_text(&[(9, hash_of(&inner))]);
        rows.insert(
            hash_of(&outer),
            StoredPayload {
                codec: CODEC_RAW,
                size: outer.len() as i64,
                data: skeleton.as_bytes().to_vec(),
                refs,
            },
        );
        let whole = refs_text(&[(0, hash_of(&outer))]);
        let back = Inflater::new(&rows)
            .inflate("null", whole.as_deref())
            .expect("an earlier version's row inflates");
        assert_eq!(back, outer);
    }

    /// A set made from what an earlier one knew refers to the payloads
    /// stored before and stores the new ones once.
    #[test]
    fn a_set_from_what_is_known_stores_only_new_payloads() {
        let old = format!("{{\"input\":\"{}\"}}", "x".repeat(300));
        let new = format!("{{\"input\":\"{}\"}}", "y".repeat(300));
        let mut first = PayloadSet::default();
        first.dehydrate(&old);
        let (rows, mut known) = first.into_known();
        known.stored.extend(rows.iter().map(|r| r.hash.clone()));
        let mut second = PayloadSet::known(known);
        let again = second.dehydrate(&old);
        let fresh = second.dehydrate(&new);
        let (rows2, known) = second.into_known();
        assert_eq!(rows2.len(), 1, "only the new payload");
        assert_ne!(again.refs, fresh.refs);
        assert_eq!(known.stored.len(), 1);
        assert_eq!(known.hashes.hashes.len(), 2);
    }

    /// A write that refers to a payload of a write still in flight carries
    /// that write's very row; once that write is committed, the payload is
    /// referred to without a row, and once it failed, it is encoded anew.
    #[test]
    fn a_payload_in_flight_is_carried_again_as_encoded() {
        let text = format!("{{\"input\":\"{}\"}}", "x".repeat(300));
        let set_of = |known: Known| {
            let mut set = PayloadSet::known(known);
            set.dehydrate(&text);
            set.into_known()
        };
        let (rows, mut known) = set_of(Known::default());
        assert_eq!(rows.len(), 1);
        known.pend(&rows);
        // A row that cannot come from encoding this text: carried as is.
        let marked = PayloadRow {
            data: b"as pending".to_vec(),
            ..rows[0].clone()
        };
        known.pending.insert(marked.hash.clone(), marked.clone());
        let (again, mut known) = set_of(known);
        assert_eq!(
            again,
            std::slice::from_ref(&marked),
            "the pending row, not encoded again"
        );
        known.settled(vec![marked.hash.clone()], false);
        let (anew, mut known) = set_of(known);
        assert_eq!(anew, rows, "a failed write's payload is encoded anew");
        known.pend(&anew);
        known.settled(vec![marked.hash.clone()], true);
        assert!(known.pending.is_empty());
        let (none, _) = set_of(known);
        assert!(none.is_empty(), "a committed payload is referred to");
    }

    /// Every text back from its skeleton, refs and payload rows.
    fn round_trip(text: &str) -> (String, usize) {
        let mut set = PayloadSet::default();
        let d = set.dehydrate(text);
        let w = set.dehydrate_whole(text);
        let rows = stored(set.into_rows());
        let mut inflater = Inflater::new(&rows);
        let back = inflater
            .inflate(&d.text, d.refs.as_deref())
            .expect("inflates");
        let whole = inflater
            .inflate(&w.text, w.refs.as_deref())
            .expect("inflates whole");
        assert_eq!(whole, text);
        (back, rows.len())
    }

    fn big(n: usize) -> String {
        "x".repeat(n)
    }

    /// `n` pseudo-random printable ASCII characters (no `"` or `\`): on a
    /// text this short, deflate cannot save 10% (about 6.6 bits a
    /// character, plus its code tables).
    fn noise(n: usize, mut seed: u64) -> String {
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let c = b' ' + (seed % 95) as u8;
                if c == b'"' || c == b'\\' {
                    '#'
                } else {
                    char::from(c)
                }
            })
            .collect()
    }

    fn stored(rows: Vec<PayloadRow>) -> HashMap<String, StoredPayload> {
        rows.into_iter()
            .map(|p| {
                (
                    p.hash,
                    StoredPayload {
                        codec: p.codec,
                        size: p.size,
                        data: p.data,
                        refs: p.refs,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn each_codec_round_trips() {
        for (text, codec) in [
            (format!("{{\"note\":\"{}\"}}", big(1024)), CODEC_LZ4),
            (format!("{{\"note\":\"{}\"}}", big(ZSTD_FROM)), CODEC_ZSTD),
            // Short, but without repeats for LZ4: zstd's entropy coding.
            (format!("\"{}\"", noise(1024, 3)), CODEC_ZSTD),
            (format!("\"{}\"", noise(260, 7)), CODEC_RAW),
        ] {
            let mut set = PayloadSet::default();
            let d = set.dehydrate_whole(&text);
            let rows = set.into_rows();
            assert_eq!(rows.len(), 1);
            assert_eq!(rows[0].codec, codec, "{text}");
            assert_eq!(rows[0].size, text.len() as i64);
            if codec != CODEC_RAW {
                assert!(rows[0].data.len() * 10 <= text.len() * 9);
            } else {
                assert_eq!(rows[0].data, text.as_bytes());
            }
            let rows = stored(rows);
            let back = Inflater::new(&rows)
                .inflate(&d.text, d.refs.as_deref())
                .expect("inflates");
            assert_eq!(back, text);
        }
        // A compressed payload refers to a raw one.
        let text =
            serde_json::json!({"outputs": {"a": {"input": noise(260, 11)}, "pad": big(600)}})
                .to_string();
        let mut set = PayloadSet::default();
        let d = set.dehydrate(&text);
        let rows = set.into_rows();
        let codecs: Vec<i64> = rows.iter().map(|r| r.codec).collect();
        assert_eq!(codecs, [CODEC_RAW, CODEC_LZ4], "the input, the outputs");
        let rows = stored(rows);
        let back = Inflater::new(&rows)
            .inflate(&d.text, d.refs.as_deref())
            .expect("inflates");
        assert_eq!(back, text);
    }

    /// One payload of `text`, stored as `codec` with `data`.
    fn one_row(hash: &str, codec: i64, size: i64, data: Vec<u8>) -> HashMap<String, StoredPayload> {
        HashMap::from([(
            hash.to_string(),
            StoredPayload {
                codec,
                size,
                data,
                refs: None,
            },
        )])
    }

    #[test]
    fn rows_of_earlier_versions_stay_readable() {
        // Deflate (codec 1) was the codec before zstd, and zstd (codec 2)
        // compressed short payloads too before LZ4.
        let text = format!("{{\"note\":\"{}\"}}", big(1024));
        let mut set = PayloadSet::default();
        let d = set.dehydrate_whole(&text);
        let row = set.into_rows().remove(0);
        assert_eq!(row.codec, CODEC_LZ4);
        let deflated = miniz_oxide::deflate::compress_to_vec(text.as_bytes(), 1);
        let zstd = zstd::bulk::compress(text.as_bytes(), ZSTD_LEVEL).expect("compresses");
        for (codec, data) in [(CODEC_DEFLATE, deflated), (CODEC_ZSTD, zstd)] {
            let rows = one_row(&row.hash, codec, row.size, data);
            let back = Inflater::new(&rows)
                .inflate(&d.text, d.refs.as_deref())
                .expect("inflates");
            assert_eq!(back, text, "codec {codec}");
        }
    }

    #[test]
    fn bad_streams_are_corrupt_not_panics() {
        let text = format!("{{\"note\":\"{}\"}}", big(1024));
        let mut set = PayloadSet::default();
        let d = set.dehydrate_whole(&text);
        let row = set.into_rows().remove(0);
        assert_eq!(row.codec, CODEC_LZ4);
        let refs = d.refs.expect("refs");
        let size = row.size;
        let deflated = miniz_oxide::deflate::compress_to_vec(text.as_bytes(), 1);
        let zstd = zstd::bulk::compress(text.as_bytes(), ZSTD_LEVEL).expect("compresses");
        let mut lz4_block_cut = row.data.clone();
        lz4_block_cut.truncate(lz4_block_cut.len() - 1);
        let mut lz4_longer = row.data.clone();
        lz4_longer[..4].copy_from_slice(&(size as u32 + 1).to_le_bytes());
        let mut lz4_shorter = row.data.clone();
        lz4_shorter[..4].copy_from_slice(&(size as u32 - 1).to_le_bytes());
        // LZ4 rows whose stated length and block disagree, or that state
        // more than fits in any block: nothing that large is allocated.
        for data in [
            lz4_block_cut,
            lz4_longer,
            lz4_shorter,
            vec![0xff, 0xff, 0xff, 0xff, 0],
            vec![1, 2, 3],
        ] {
            let rows = one_row(&row.hash, CODEC_LZ4, i64::MAX, data);
            assert!(Inflater::new(&rows).inflate(&d.text, Some(&refs)).is_err());
        }
        for (codec, good) in [
            (CODEC_LZ4, row.data.clone()),
            (CODEC_ZSTD, zstd),
            (CODEC_DEFLATE, deflated),
        ] {
            let mut garbage = good.clone();
            garbage[0] ^= 0xff;
            let other = if codec == CODEC_ZSTD {
                CODEC_DEFLATE
            } else {
                CODEC_ZSTD
            };
            let cases: Vec<(i64, i64, Vec<u8>)> = vec![
                // not the codec's format at all
                (codec, size, b"this is no compressed stream".to_vec()),
                (codec, size, garbage),
                (codec, size, Vec::new()),
                // truncated
                (codec, size, good[..good.len() / 2].to_vec()),
                // decompresses past the row's size
                (codec, size - 1, good.clone()),
                (codec, 0, good.clone()),
                (codec, -1, good.clone()),
                // raw bytes read as compressed, compressed read as raw or
                // as the other codec
                (codec, size, text.clone().into_bytes()),
                (CODEC_RAW, size, good.clone()),
                (other, size, good.clone()),
                (4, size, good.clone()),
                (-1, size, good),
            ];
            for (codec, size, data) in cases {
                let len = data.len();
                let rows = one_row(&row.hash, codec, size, data);
                assert!(
                    Inflater::new(&rows).inflate(&d.text, Some(&refs)).is_err(),
                    "codec {codec}, size {size}, {len} bytes",
                );
            }
        }
        // Streams that decompress to bytes that are not UTF-8.
        let not_utf8 = [0xff; 1024];
        for (codec, data) in [
            (CODEC_LZ4, lz4_flex::block::compress_prepend_size(&not_utf8)),
            (
                CODEC_ZSTD,
                zstd::bulk::compress(&not_utf8, ZSTD_LEVEL).expect("compresses"),
            ),
            (
                CODEC_DEFLATE,
                miniz_oxide::deflate::compress_to_vec(&not_utf8, 1),
            ),
        ] {
            let rows = one_row(&row.hash, codec, 2048, data);
            assert!(Inflater::new(&rows).inflate(&d.text, Some(&refs)).is_err());
        }
    }

    #[test]
    fn anchored_big_values_are_cut_once_and_nested() {
        let input = serde_json::json!({"data": {"note": big(1024)}, "program": ".note"});
        let envelope = serde_json::json!({"input": input, "output": 1024, "call_id": "c"});
        let text = serde_json::json!({
            "outputs": {"tools_by_id": {"c": envelope}, "last_tool": envelope},
            "arguments": input,
            "other": input,
            "s": "\"input\":".to_string() + &big(300),
        })
        .to_string();
        let mut set = PayloadSet::default();
        let d = set.dehydrate(&text);
        // `outputs` and `arguments` are cut; `other` is no anchor; the
        // string that reads like a key is no key.
        let refs: Vec<(usize, String)> = parse_refs(d.refs.as_deref()).expect("refs");
        assert_eq!(refs.len(), 2);
        assert!(d.text.contains("\"other\":{"));
        assert!(serde_json::from_str::<serde_json::Value>(&d.text).is_ok());
        // Rows: the input (`arguments`, and inside `outputs` twice), outputs.
        let rows = set.into_rows();
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(rows[0].hash, hash_of(&input.to_string()));
        assert_eq!(round_trip(&text).0, text);
    }

    /// An object's own keys' payloads are named with their place in its
    /// text (what a node's checkpoint hands to the run's end); those cut
    /// from deeper down are not, nor are values too short to cut.
    #[test]
    fn an_objects_own_payloads_are_named_with_their_range() {
        let input = serde_json::json!({"data": {"note": big(1024)}});
        let bundle = serde_json::json!({"envelopes": [{"input": input}], "x": big(300)});
        let text = serde_json::json!({
            "bundle": bundle,
            "inputs": {"a": 1},
            "node_id": "n",
            "outputs": {"tools_by_id": {"c": {"input": input}}},
        })
        .to_string();
        let mut set = PayloadSet::default();
        let (d, top) = set.dehydrate_object(&text);
        assert_eq!(
            d,
            PayloadSet::default().dehydrate(&text),
            "the same skeleton and refs"
        );
        let named: Vec<(&str, &str)> = top
            .iter()
            .map(|t| (t.key.as_str(), &text[t.range.clone()]))
            .collect();
        let (bundle, outputs) = (bundle.to_string(), text_of(&text, "outputs"));
        assert_eq!(
            named,
            [("bundle", bundle.as_str()), ("outputs", outputs.as_str())]
        );
        for t in &top {
            let value = &text[t.range.clone()];
            assert_eq!(t.hash, PayloadSet::default().add(value, None), "its key");
        }
    }

    /// The text of a top-level key's value, as serde_json writes it.
    fn text_of(object: &str, key: &str) -> String {
        let v: serde_json::Value = serde_json::from_str(object).expect("JSON");
        v[key].to_string()
    }
    #[test]
    fn the_word_scan_finds_what_the_byte_scan_finds() {
        let text = format!("ab\\\"{}\"c{}\\", big(17), big(9));
        let b = text.as_bytes();
        for j in 0..=b.len() {
            let naive = (j..b.len())
                .find(|&k| b[k] == b'"' || b[k] == b'\\')
                .unwrap_or(b.len());
            assert_eq!(quote_or_backslash(b, j), naive, "from {j}");
        }
    }

    #[test]
    fn small_and_broken_texts_are_kept_as_they_are() {
        for text in ["", "{", "{\"input\":", "{\"input\":\"abc", "[1,2", "null"] {
            let mut set = PayloadSet::default();
            let d = set.dehydrate(text);
            assert_eq!((d.text.as_str(), d.refs), (text, None));
        }
        let unterminated = format!("{{\"input\":[\"{}\"", big(400));
        assert_eq!(PayloadSet::default().dehydrate(&unterminated).refs, None);
        assert_eq!(round_trip(&unterminated).0, unterminated);
        // An anchored object that never closes is not a payload, but what
        // closes inside it is cut, once, and nothing is stored unreferred.
        let inner = format!("{{\"note\":\"{}\"}}", big(400));
        let unclosed = format!("{{\"outputs\":{{\"calls\":[{{\"input\":{inner}}}]");
        let mut set = PayloadSet::default();
        let d = set.dehydrate(&unclosed);
        let rows = set.into_rows();
        assert_eq!(rows.len(), 1, "only the input");
        assert_eq!(rows[0].hash, hash_of(&inner));
        assert_eq!(
            d.refs,
            refs_text(&[(unclosed.find(&inner).unwrap_or(0), hash_of(&inner))])
        );
        assert_eq!(round_trip(&unclosed).0, unclosed);
    }

    #[test]
    fn bad_refs_are_errors_not_panics() {
        let rows = HashMap::new();
        let mut inflater = Inflater::new(&rows);
        for (skeleton, refs) in [
            ("null", "[[0,\"h\"]]"),
            ("nul", "[[0,\"h\"]]"),
            ("null", "[[18446744073709551615,\"h\"]]"),
            ("null", "not json"),
            ("énull", "[[1,\"h\"]]"),
        ] {
            assert!(
                inflater.inflate(skeleton, Some(refs)).is_err(),
                "{skeleton} {refs}"
            );
        }
        let mut rows = HashMap::new();
        rows.insert(
            "h".to_string(),
            StoredPayload {
                codec: 0,
                size: 4,
                data: b"null".to_vec(),
                refs: Some("[[0,\"h\"]]".into()),
            },
        );
        let mut inflater = Inflater::new(&rows);
        assert!(
            inflater.inflate("null", Some("[[0,\"h\"]]")).is_err(),
            "a cycle"
        );
    }

    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        let key = prop_oneof![
            Just("input".to_string()),
            Just("output".to_string()),
            Just("outputs".to_string()),
            Just("arguments".to_string()),
            Just("content".to_string()),
            Just("bundle".to_string()),
            "[a-z\"\\\\]{0,6}",
        ];
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<i64>().prop_map(serde_json::Value::from),
            "[a-z\"\\\\é{}:, ]{0,300}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
                prop::collection::btree_map(key.clone(), inner, 0..6)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn json_like_text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("{".to_string()),
            Just("}".to_string()),
            Just("[".to_string()),
            Just("]".to_string()),
            Just(",".to_string()),
            Just(":".to_string()),
            Just(" ".to_string()),
            Just("\"input\"".to_string()),
            Just("\"outputs\": ".to_string()),
            Just("\"".to_string()),
            Just("\\".to_string()),
            Just("null".to_string()),
            "[a-zé\"\\\\ ]{0,300}",
        ];
        prop::collection::vec(piece, 0..40).prop_map(|p| p.concat())
    }

    proptest! {
        #[test]
        fn json_round_trips_byte_for_byte(value in json_value()) {
            let text = value.to_string();
            prop_assert_eq!(round_trip(&text).0, text.clone());
            let pretty = serde_json::to_string_pretty(&value).expect("pretty");
            prop_assert_eq!(round_trip(&pretty).0, pretty.clone());
        }

        #[test]
        fn any_string_is_escaped_as_serde_json_escapes_it(s in any::<String>(), pad in 0usize..200) {
            let s = format!("{s}{}", "p".repeat(pad));
            let value = serde_json::json!({"k": s, s.clone(): [s.clone()]});
            let w = PayloadSet::default().serialize(&value).expect("ser");
            prop_assert_eq!(w.text, serde_json::to_string(&value).expect("ser"));
        }

        #[test]
        fn any_text_round_trips_byte_for_byte(text in json_like_text()) {
            prop_assert_eq!(round_trip(&text).0, text.clone());
        }

        /// Cutting a value as it is written gives what cutting its text
        /// gives: the same skeleton, refs, top-level payloads and rows,
        /// whatever the set knew before (here: the value's text cut once
        /// already, so its leaves are known by the memo and stored).
        #[test]
        fn a_value_cut_as_written_is_its_text_cut(value in json_value(), stored in any::<bool>()) {
            let text = serde_json::to_string(&value).expect("serializes");
            let set_of = || {
                if !stored {
                    return PayloadSet::default();
                }
                let mut first = PayloadSet::default();
                first.dehydrate(&text);
                let (rows, mut known) = first.into_known();
                known.stored.extend(rows.iter().map(|r| r.hash.clone()));
                PayloadSet::known(known)
            };
            let (mut by_text, mut as_written) = (set_of(), set_of());
            let (d, top) = by_text.dehydrate_object(&text);
            let (w, written_top) = as_written.serialize_object(&value).expect("serializes");
            prop_assert_eq!(&w, &d);
            prop_assert_eq!(written_top, top);
            prop_assert_eq!(as_written.into_rows(), by_text.into_rows());
            prop_assert_eq!(PayloadSet::default().serialize(&value).expect("serializes"), d);
        }
    }

    /// Every shape of serde's data model is written as serde_json writes
    /// it (numbers, escapes, variants, keys that are not strings), and cut
    /// as its text is.
    #[test]
    fn every_shape_is_written_as_serde_json_writes_it() {
        #[derive(serde::Serialize)]
        enum E {
            Unit,
            New(u8),
            Tuple(i32, String),
            Struct { input: String, x: f64 },
        }
        #[derive(serde::Serialize)]
        struct Unit;
        #[derive(serde::Serialize)]
        struct Wrap(i64);
        #[derive(serde::Serialize)]
        struct All {
            b: bool,
            i: (i8, i16, i32, i64, i128),
            u: (u8, u16, u32, u64, u128),
            f: (f32, f64, f64, f64, f64),
            c: char,
            s: &'static str,
            #[serde(with = "serde_bytes_like")]
            bytes: Vec<u8>,
            none: Option<u8>,
            some: Option<&'static str>,
            unit: (),
            unit_struct: Unit,
            wrap: Wrap,
            e: Vec<E>,
            ints: BTreeMap<i64, u8>,
            bools: BTreeMap<bool, u8>,
            chars: BTreeMap<char, u8>,
            empty: BTreeMap<String, u8>,
            input: E,
            output: Vec<E>,
        }
        mod serde_bytes_like {
            pub fn serialize<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(v)
            }
        }
        use std::collections::BTreeMap;
        let long = format!("\u{1}\"\\\n\té😀{}\u{7f}\u{2028}", "y".repeat(300));
        let all = All {
            b: true,
            i: (-8, -16, -32, i64::MIN, i128::MIN),
            u: (8, 16, 32, u64::MAX, u128::MAX),
            f: (1.5, -0.0, 1e21, f64::NAN, 1.0 / 3.0),
            c: '\u{0}',
            s: "short \" \\ \u{1f} é",
            bytes: vec![0, 1, 255],
            none: None,
            some: Some("x"),
            unit: (),
            unit_struct: Unit,
            wrap: Wrap(-1),
            e: vec![
                E::Unit,
                E::New(1),
                E::Tuple(-2, "t".into()),
                E::Struct {
                    input: "i".into(),
                    x: 2.5,
                },
            ],
            ints: BTreeMap::from([(-1, 1), (2, 2)]),
            bools: BTreeMap::from([(false, 0), (true, 1)]),
            chars: BTreeMap::from([('"', 0), ('é', 1)]),
            empty: BTreeMap::new(),
            input: E::Struct {
                input: long.clone(),
                x: f64::INFINITY,
            },
            output: vec![E::Tuple(0, long.clone()), E::New(3)],
        };
        let text = serde_json::to_string(&all).expect("ser");
        let mut by_text = PayloadSet::default();
        let d = by_text.dehydrate(&text);
        let mut written = PayloadSet::default();
        assert_eq!(written.serialize(&all).expect("ser"), d);
        assert_eq!(written.into_rows(), by_text.into_rows());
        assert!(d.refs.is_some(), "the long input and output are cut");
        let small = All {
            input: E::Unit,
            output: vec![],
            ..all
        };
        assert_eq!(
            PayloadSet::default().serialize(&small).expect("ser").text,
            serde_json::to_string(&small).expect("ser")
        );
        #[derive(serde::Serialize)]
        struct Keyed(BTreeMap<Vec<u8>, u8>);
        assert!(PayloadSet::default()
            .serialize(&Keyed(BTreeMap::from([(vec![1], 1)])))
            .is_err());
    }

    /// A payload written from its text (as the run's texts are) is cut as
    /// its value would be: the anchored values inside it become refs of
    /// their own, and the skeleton, refs and rows are the text's cut.
    #[test]
    fn a_payload_written_from_its_text_is_cut_as_its_value() {
        let inner = serde_json::json!({"content": [{"text": big(400)}], "n": 1});
        for output in [
            inner.clone(),
            serde_json::json!([inner.clone(), big(300)]),
            serde_json::json!(big(500)),
            serde_json::json!(7),
        ] {
            let envelope = node_runtime::ToolEnvelope {
                output: output.into(),
                ..node_runtime::ToolEnvelope::failed(
                    "c".into(),
                    "t".into(),
                    "1".into(),
                    serde_json::json!({"q": big(300)}),
                    node_runtime::ToolError::unknown("x"),
                    "t0".into(),
                    "t1".into(),
                )
            };
            let event = serde_json::json!({"type": "ToolCallFinished"});
            let text = serde_json::to_string(&(&event, &envelope)).expect("ser");
            let mut by_text = PayloadSet::default();
            let d = by_text.dehydrate(&text);
            let mut written = PayloadSet::default();
            let w = written.serialize(&(&event, &envelope)).expect("ser");
            assert_eq!(w, d);
            assert_eq!(written.into_rows(), by_text.into_rows());
        }
    }

    /// The texts a run writes from its values cut as their texts do, and
    /// inflate back to serde_json's text: an event holding an envelope and
    /// a record whose outputs and bundle hold the same input.
    #[test]
    fn a_records_payloads_are_cut_as_it_is_written() {
        let input = serde_json::json!({"note": big(1024), "i": 7});
        let envelope = serde_json::json!({"call_id": "c1", "input": input, "output": big(300)});
        let record = serde_json::json!({
            "node_id": "agent",
            "outputs": {"tools_by_id": {"c1": envelope}, "last_tool": envelope},
            "bundle": {"envelopes": [envelope], "exchanges": [{"response": {"tool_calls": [{"arguments": input}]}}]},
            "inputs": {},
        });
        let text = record.to_string();
        let mut set = PayloadSet::default();
        let (w, top) = set.serialize_object(&record).expect("serializes");
        let keys: Vec<&str> = top.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(keys, ["bundle", "outputs"]);
        for t in &top {
            assert_eq!(
                t.hash,
                PayloadSet::default().add(&text[t.range.clone()], None)
            );
        }
        let rows = set.into_rows();
        assert_eq!(
            rows.len(),
            4,
            "the input, the output, the outputs and the bundle, each once"
        );
        let stored = stored(rows);
        let back = Inflater::new(&stored)
            .inflate(&w.text, w.refs.as_deref())
            .expect("inflates");
        assert_eq!(back, text);
    }
}
