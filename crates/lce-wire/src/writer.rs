//! The streaming JSON writer.

use bytes::BytesMut;
use lce_types::FormField;

use crate::WireError;
use crate::escape::Stage;
use crate::float::{
    digit_pair, millis_text, push_i64, push_u64, write_compact_float, write_py_float,
};
use crate::key::Key;

/// How JSON text is laid out and escaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Python's `json.dumps`: separators `", "` and `": "`, floats by Python
    /// `repr`, integers of any size kept digit for digit.
    ///
    /// `ensure_ascii: true` is `json.dumps(obj)` (DA `custom`): every code
    /// point above U+007E, DEL included, becomes `\uXXXX` (lowercase hex,
    /// surrogate pairs above U+FFFF). `ensure_ascii: false` is
    /// `json.dumps(obj, ensure_ascii=False)` (DA `agui`): non-ASCII raw.
    Python {
        /// Escape everything above U+007E as `\uXXXX`.
        ensure_ascii: bool,
    },
    /// serde_json's compact form (standard AG-UI 1.0): separators `,` and
    /// `:`, non-ASCII raw, floats as serde_json (ryu) prints them.
    Compact,
}

impl Style {
    /// The `custom` style: `json.dumps(obj)`.
    pub const PY_ASCII: Style = Style::Python { ensure_ascii: true };
    /// The `agui` style: `json.dumps(obj, ensure_ascii=False)`.
    pub const PY_UTF8: Style = Style::Python {
        ensure_ascii: false,
    };

    /// Whether strings escape every code point above U+007E.
    #[inline]
    pub fn ensure_ascii(self) -> bool {
        matches!(self, Style::Python { ensure_ascii: true })
    }

    /// Separator between items of an object or array.
    #[inline]
    pub(crate) fn item_sep(self) -> &'static [u8] {
        match self {
            Style::Python { .. } => b", ",
            Style::Compact => b",",
        }
    }

    /// Separator between a key and its value.
    #[inline]
    pub(crate) fn key_sep(self) -> &'static [u8] {
        match self {
            Style::Python { .. } => b": ",
            Style::Compact => b":",
        }
    }

    /// [`item_sep`](Self::item_sep) as a little-endian word and its length.
    #[inline]
    fn item_sep_word(self) -> (u64, usize) {
        match self {
            Style::Python { .. } => (u64::from_le_bytes(*b", \0\0\0\0\0\0"), 2),
            Style::Compact => (u64::from(b','), 1),
        }
    }

    /// The closing quote of a key and the key separator, as a little-endian
    /// word and its length; the word's next byte is a quote (a string value
    /// opens there).
    #[inline]
    fn key_end_word(self) -> (u64, usize) {
        match self {
            Style::Python { .. } => (u64::from_le_bytes(*b"\": \"\0\0\0\0"), 3),
            Style::Compact => (u64::from_le_bytes(*b"\":\"\0\0\0\0\0"), 2),
        }
    }
}

/// Number of nesting levels whose "first element" flag lives inline.
const INLINE_LEVELS: usize = 128;

/// Writes JSON text straight into a [`BytesMut`], placing separators itself.
///
/// The writer never validates call order beyond comma placement: calling
/// [`key`](Self::key) outside an object or ending a container that was never
/// begun yields invalid JSON, never a panic. Nesting depth is unbounded (the
/// first 128 levels need no allocation); [`opaque`](Self::opaque) input is
/// bounded by [`crate::MAX_OPAQUE_DEPTH`].
#[derive(Debug)]
pub struct JsonWriter<'a> {
    out: &'a mut BytesMut,
    style: Style,
    /// Current nesting depth; 0 = top level.
    depth: usize,
    /// Bit `d - 1` set: level `d` has had no element yet (`d <= 128`).
    first_bits: u128,
    /// Flags for levels deeper than 128 (empty in practice).
    deep: Vec<bool>,
    /// A key was just written: the next value takes no separator.
    after_key: bool,
    /// Text was copied in unescaped ([`raw`](Self::raw), opaque input): it
    /// may hold a raw CR or LF, which nothing else this writer writes does.
    copied: bool,
}

/// Saved writer state, to roll back a failed [`JsonWriter::opaque`].
pub(crate) struct Checkpoint {
    len: usize,
    depth: usize,
    first_bits: u128,
    deep_len: usize,
    cur_first: bool,
    after_key: bool,
}

impl<'a> JsonWriter<'a> {
    /// A writer appending to `out` in `style`.
    #[inline]
    pub fn new(out: &'a mut BytesMut, style: Style) -> Self {
        JsonWriter {
            out,
            style,
            depth: 0,
            first_bits: 0,
            deep: Vec::new(),
            after_key: false,
            copied: false,
        }
    }

    /// The style this writer uses.
    #[inline]
    pub fn style(&self) -> Style {
        self.style
    }

    /// Current nesting depth (0 at top level).
    #[inline]
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The bytes written so far (the whole buffer, including what was in it
    /// before this writer was made).
    #[inline]
    pub fn buffer(&self) -> &BytesMut {
        self.out
    }

    fn get_first(&self, level: usize) -> bool {
        if level == 0 {
            false
        } else if level <= INLINE_LEVELS {
            self.first_bits & (1u128 << (level - 1)) != 0
        } else {
            self.deep
                .get(level - INLINE_LEVELS - 1)
                .copied()
                .unwrap_or(false)
        }
    }

    fn set_first(&mut self, level: usize, v: bool) {
        if level == 0 {
        } else if level <= INLINE_LEVELS {
            let bit = 1u128 << (level - 1);
            if v {
                self.first_bits |= bit;
            } else {
                self.first_bits &= !bit;
            }
        } else if let Some(slot) = self.deep.get_mut(level - INLINE_LEVELS - 1) {
            *slot = v;
        }
    }

    /// Writes the separator a new value (or key) needs, if any.
    #[inline]
    pub(crate) fn pre_value(&mut self) {
        if self.after_key {
            self.after_key = false;
            return;
        }
        if self.depth == 0 {
            return;
        }
        if self.get_first(self.depth) {
            self.set_first(self.depth, false);
        } else {
            self.out.extend_from_slice(self.style.item_sep());
        }
    }

    /// The separator a new value (or key) needs, as a little-endian word
    /// and its length (0: none), followed by an opening quote; the state is
    /// updated as [`pre_value`](Self::pre_value) does.
    #[inline]
    fn sep_and_quote(&mut self) -> (u64, usize) {
        let quote = u64::from(b'"');
        if self.after_key {
            self.after_key = false;
            return (quote, 1);
        }
        if self.depth == 0 {
            return (quote, 1);
        }
        if self.get_first(self.depth) {
            self.set_first(self.depth, false);
            (quote, 1)
        } else {
            let (sep, n) = self.style.item_sep_word();
            (sep | (quote << (8 * n)), n + 1)
        }
    }

    fn push_level(&mut self) {
        self.depth += 1;
        if self.depth > INLINE_LEVELS {
            self.deep.push(true);
        } else {
            self.set_first(self.depth, true);
        }
    }

    fn pop_level(&mut self) {
        if self.depth > INLINE_LEVELS {
            self.deep.pop();
        }
        self.depth = self.depth.saturating_sub(1);
        self.after_key = false;
    }

    pub(crate) fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            len: self.out.len(),
            depth: self.depth,
            first_bits: self.first_bits,
            deep_len: self.deep.len(),
            cur_first: self.get_first(self.depth),
            after_key: self.after_key,
        }
    }

    pub(crate) fn rollback(&mut self, cp: &Checkpoint) {
        self.out.truncate(cp.len);
        self.depth = cp.depth;
        self.first_bits = cp.first_bits;
        self.deep.truncate(cp.deep_len);
        self.set_first(cp.depth, cp.cur_first);
        self.after_key = cp.after_key;
    }

    /// Direct access to the output, for the opaque transcoder.
    #[inline]
    pub(crate) fn out_mut(&mut self) -> &mut BytesMut {
        self.copied = true;
        self.out
    }

    /// Marks that a key has been written.
    #[inline]
    pub(crate) fn set_after_key(&mut self) {
        self.after_key = true;
    }

    /// Starts an object: `{`.
    pub fn begin_object(&mut self) {
        self.pre_value();
        self.out.extend_from_slice(b"{");
        self.push_level();
    }

    /// Ends an object: `}`.
    pub fn end_object(&mut self) {
        self.out.extend_from_slice(b"}");
        self.pop_level();
    }

    /// Starts an array: `[`.
    pub fn begin_array(&mut self) {
        self.pre_value();
        self.out.extend_from_slice(b"[");
        self.push_level();
    }

    /// Ends an array: `]`.
    pub fn end_array(&mut self) {
        self.out.extend_from_slice(b"]");
        self.pop_level();
    }

    /// Writes an object key and the key separator; the next call writes its
    /// value.
    pub fn key(&mut self, k: &str) {
        self.key_ref(KeyRef::Text(k));
    }

    /// [`key`](Self::key) for a key fixed at build time.
    pub fn key_k(&mut self, k: &Key) {
        self.key_ref(KeyRef::of(k));
    }

    #[inline]
    fn key_ref(&mut self, k: KeyRef<'_>) {
        let mut st = Stage::new();
        self.open_member(&mut st, k, false);
        st.flush(self.out);
        self.after_key = true;
    }

    /// Whether text was copied in without escaping (raw or opaque JSON):
    /// only then can what this writer wrote hold a raw CR or LF.
    #[inline]
    pub(crate) fn copied(&self) -> bool {
        self.copied
    }

    /// Stages the separator the member needs, its key and the key separator,
    /// then with `quote` the opening quote of a string value.
    #[inline]
    fn open_member(&mut self, st: &mut Stage, k: KeyRef<'_>, quote: bool) {
        let open = self.sep_and_quote();
        self.member_head(st, open, k, quote);
    }

    /// [`open_member`](Self::open_member) with the separator and opening
    /// quote (`open`: word and length) already known.
    #[inline(always)]
    fn member_head(&mut self, st: &mut Stage, open: (u64, usize), k: KeyRef<'_>, quote: bool) {
        let (close, close_len) = self.style.key_end_word();
        st.put(self.out, open.0, open.1);
        self.put_key(st, k);
        st.put(self.out, close, close_len + usize::from(quote));
    }

    /// Stages the text of `k`, escaped.
    #[inline]
    fn put_key(&mut self, st: &mut Stage, k: KeyRef<'_>) {
        match k {
            KeyRef::Plain(words, len) => put_words(st, self.out, words, len),
            KeyRef::Text(text) => st.escaped(self.out, text, self.style.ensure_ascii()),
        }
    }

    /// Writes the members of a flat object in order, through one stage and
    /// one copy to the output, as the matching `field_*_k` calls would.
    ///
    /// A non-finite [`Member::F64`] gives [`WireError::NonFinite`] and
    /// nothing is written.
    pub fn members(&mut self, members: &[Member<'_>]) -> Result<(), WireError> {
        if has_non_finite(members) {
            return Err(WireError::NonFinite);
        }
        // The first member takes whatever separator the position needs.
        let open = self.sep_and_quote();
        let mut st = Stage::new();
        self.stage_members(&mut st, open, members)?;
        st.flush(self.out);
        Ok(())
    }

    /// Writes a whole flat object `{...}` of `members` as a value, through
    /// one stage and one copy to the output: the bytes
    /// [`begin_object`](Self::begin_object), [`members`](Self::members) and
    /// [`end_object`](Self::end_object) would write.
    ///
    /// A non-finite [`Member::F64`] gives [`WireError::NonFinite`] and
    /// nothing is written.
    pub fn object(&mut self, members: &[Member<'_>]) -> Result<(), WireError> {
        if has_non_finite(members) {
            return Err(WireError::NonFinite);
        }
        // The value's separator, with `{` where a string's quote would be.
        let (open, open_len) = self.sep_and_quote();
        let brace = u64::from(b'"' ^ b'{') << (8 * (open_len - 1));
        let mut st = Stage::new();
        st.put(self.out, open ^ brace, open_len);
        self.stage_members(&mut st, (u64::from(b'"'), 1), members)?;
        st.put(self.out, u64::from(b'}'), 1);
        st.flush(self.out);
        Ok(())
    }

    /// Stages `members` (all finite), the first opened with `open`
    /// (separator and opening quote), every later one with the item
    /// separator.
    #[inline(always)]
    fn stage_members(
        &mut self,
        st: &mut Stage,
        mut open: (u64, usize),
        members: &[Member<'_>],
    ) -> Result<(), WireError> {
        let quote = u64::from(b'"');
        let (sep, sep_len) = self.style.item_sep_word();
        let next = (sep | (quote << (8 * sep_len)), sep_len + 1);
        for m in members {
            match *m {
                Member::OptStr(_, None) => continue,
                Member::OptStr(k, Some(v)) => {
                    self.member_head(st, open, KeyRef::of(k), true);
                    st.escaped(self.out, v, self.style.ensure_ascii());
                    st.put(self.out, quote, 1);
                }
                Member::I64(k, v) => {
                    self.member_head(st, open, KeyRef::of(k), false);
                    let (words, len) = int_words(v);
                    put_words(st, self.out, &words, len);
                }
                Member::StrList(k, items) => {
                    let (mid, mid_len) = self.style.key_end_word();
                    // The key's end, with `[` where a string's quote would be.
                    let mid_mask = (1u64 << (8 * mid_len)) - 1;
                    let mid = (mid & mid_mask) | (u64::from(b'[') << (8 * mid_len));
                    st.put(self.out, open.0, open.1);
                    self.put_key(st, KeyRef::of(k));
                    st.put(self.out, mid, mid_len + 1);
                    for (i, item) in items.iter().enumerate() {
                        if i == 0 {
                            st.put(self.out, quote, 1);
                        } else {
                            st.put(self.out, next.0, next.1);
                        }
                        st.escaped(self.out, item, self.style.ensure_ascii());
                        st.put(self.out, quote, 1);
                    }
                    st.put(self.out, u64::from(b']'), 1);
                }
                Member::Str(k, v) => {
                    self.member_head(st, open, KeyRef::of(k), true);
                    st.escaped(self.out, v, self.style.ensure_ascii());
                    st.put(self.out, quote, 1);
                }
                Member::Const(k, v) => {
                    self.member_head(st, open, KeyRef::of(k), true);
                    self.put_key(st, KeyRef::of(v));
                    st.put(self.out, quote, 1);
                }
                Member::F64(k, v) => {
                    self.member_head(st, open, KeyRef::of(k), false);
                    self.stage_f64(st, v)?;
                }
            }
            open = next;
        }
        Ok(())
    }

    /// Stages the finite float `v`: whole milliseconds as staged words,
    /// others (after a flush) through the general float writers, which give
    /// the same text for every value.
    #[inline]
    fn stage_f64(&mut self, st: &mut Stage, v: f64) -> Result<(), WireError> {
        if let Some(text) = millis_text(v) {
            let ([w0, w1, w2], len) = text.words();
            st.put(self.out, w0, len.min(8));
            if len > 8 {
                st.put(self.out, w1, (len - 8).min(8));
            }
            if len > 16 {
                st.put(self.out, w2, len - 16);
            }
            return Ok(());
        }
        st.flush(self.out);
        match self.style {
            Style::Python { .. } => write_py_float(self.out, v),
            Style::Compact => write_compact_float(self.out, v),
        }
    }

    /// Writes a string value.
    pub fn string(&mut self, s: &str) {
        let (open, open_len) = self.sep_and_quote();
        let mut st = Stage::new();
        st.put(self.out, open, open_len);
        st.escaped(self.out, s, self.style.ensure_ascii());
        st.put(self.out, u64::from(b'"'), 1);
        st.flush(self.out);
    }

    /// Writes an unsigned integer value.
    pub fn u64(&mut self, v: u64) {
        self.pre_value();
        push_u64(self.out, v);
    }

    /// Writes a signed integer value.
    pub fn i64(&mut self, v: i64) {
        self.pre_value();
        push_i64(self.out, v);
    }

    /// Writes `true` or `false`.
    pub fn bool(&mut self, v: bool) {
        self.pre_value();
        self.out
            .extend_from_slice(if v { b"true" as &[u8] } else { b"false" });
    }

    /// Writes `null`.
    pub fn null(&mut self) {
        self.pre_value();
        self.out.extend_from_slice(b"null");
    }

    /// Writes a float value: Python `repr` in [`Style::Python`], serde_json's
    /// form in [`Style::Compact`] (see [`crate::write_compact_float`]).
    ///
    /// NaN and infinities give [`WireError::NonFinite`] and write nothing.
    pub fn f64(&mut self, v: f64) -> Result<(), WireError> {
        if !v.is_finite() {
            return Err(WireError::NonFinite);
        }
        self.pre_value();
        match self.style {
            Style::Python { .. } => write_py_float(self.out, v),
            Style::Compact => write_compact_float(self.out, v),
        }
    }

    /// Appends pre-formatted JSON text as one value, unchanged.
    ///
    /// The caller vouches that `json` is one JSON value in this writer's
    /// style; use [`opaque`](Self::opaque) for text from elsewhere.
    pub fn raw(&mut self, json: &str) {
        self.copied = true;
        self.pre_value();
        self.out.extend_from_slice(json.as_bytes());
    }

    /// Writes `raw_json` (one valid JSON value, any whitespace and escapes)
    /// re-laid in this writer's style, without building a tree.
    ///
    /// Key order is kept. Strings are decoded and re-escaped; in
    /// [`Style::Python`] numbers are printed as `json.dumps(json.loads(..))`
    /// would (integers digit for digit, `-0` as `0`, float lexemes by
    /// Python `repr`); in [`Style::Compact`] number lexemes are copied.
    ///
    /// Duplicate keys are written as they appear (Python's `json.loads`
    /// would keep only the last value, at the first key's position).
    ///
    /// On error nothing is written and the writer is unchanged.
    pub fn opaque(&mut self, raw_json: &str) -> Result<(), WireError> {
        let cp = self.checkpoint();
        let r = crate::opaque::transcode(self, raw_json);
        if r.is_err() {
            self.rollback(&cp);
        }
        r
    }

    /// Writes `"k": "v"`.
    pub fn field_str(&mut self, k: &str, v: &str) {
        self.field_str_ref(KeyRef::Text(k), v);
    }

    /// [`field_str`](Self::field_str) for a key fixed at build time.
    pub fn field_str_k(&mut self, k: &Key, v: &str) {
        self.field_str_ref(KeyRef::of(k), v);
    }

    #[inline]
    fn field_str_ref(&mut self, k: KeyRef<'_>, v: &str) {
        // One stage for the whole member: a single copy to the output.
        let mut st = Stage::new();
        self.open_member(&mut st, k, true);
        st.escaped(self.out, v, self.style.ensure_ascii());
        st.put(self.out, u64::from(b'"'), 1);
        st.flush(self.out);
    }

    /// Writes `"k": ["a", "b", ...]`, an array of strings, as
    /// [`key`](Self::key), [`begin_array`](Self::begin_array), one
    /// [`string`](Self::string) per item and [`end_array`](Self::end_array)
    /// would.
    pub fn field_str_array<S: AsRef<str>>(&mut self, k: &str, items: &[S]) {
        let quote = u64::from(b'"');
        let (open, open_len) = self.sep_and_quote();
        let (mid, mid_len) = self.style.key_end_word();
        // The key's end, with `[` where a string value's quote would be.
        let mid_mask = (1u64 << (8 * mid_len)) - 1;
        let mid = (mid & mid_mask) | (u64::from(b'[') << (8 * mid_len));
        let (sep, sep_len) = self.style.item_sep_word();
        let sep = sep | (quote << (8 * sep_len));
        let ensure_ascii = self.style.ensure_ascii();
        let mut st = Stage::new();
        st.put(self.out, open, open_len);
        st.escaped(self.out, k, ensure_ascii);
        st.put(self.out, mid, mid_len + 1);
        for (i, item) in items.iter().enumerate() {
            if i == 0 {
                st.put(self.out, quote, 1);
            } else {
                st.put(self.out, sep, sep_len + 1);
            }
            st.escaped(self.out, item.as_ref(), ensure_ascii);
            st.put(self.out, quote, 1);
        }
        st.put(self.out, u64::from(b']'), 1);
        st.flush(self.out);
    }

    /// Writes `"k": v` for an unsigned integer.
    pub fn field_u64(&mut self, k: &str, v: u64) {
        self.key(k);
        self.u64(v);
    }

    /// Writes `"k": v` for a signed integer.
    pub fn field_i64(&mut self, k: &str, v: i64) {
        self.key(k);
        self.i64(v);
    }

    /// Writes `"k": true|false`.
    pub fn field_bool(&mut self, k: &str, v: bool) {
        self.key(k);
        self.bool(v);
    }

    /// Writes `"k": null`.
    pub fn field_null(&mut self, k: &str) {
        self.key(k);
        self.null();
    }

    /// Writes `"k": <float>`; on error (non-finite) nothing is written.
    pub fn field_f64(&mut self, k: &str, v: f64) -> Result<(), WireError> {
        self.field_f64_ref(KeyRef::Text(k), v)
    }

    /// [`field_f64`](Self::field_f64) for a key fixed at build time.
    pub fn field_f64_k(&mut self, k: &Key, v: f64) -> Result<(), WireError> {
        self.field_f64_ref(KeyRef::of(k), v)
    }

    #[inline]
    fn field_f64_ref(&mut self, k: KeyRef<'_>, v: f64) -> Result<(), WireError> {
        if !v.is_finite() {
            return Err(WireError::NonFinite);
        }
        let mut st = Stage::new();
        self.open_member(&mut st, k, false);
        let r = self.stage_f64(&mut st, v);
        st.flush(self.out);
        r
    }

    /// Writes `"k": <raw json>` (see [`raw`](Self::raw)).
    pub fn field_raw(&mut self, k: &str, json: &str) {
        self.key(k);
        self.raw(json);
    }

    /// Writes `"k": <opaque json>` (see [`opaque`](Self::opaque)); on error
    /// nothing is written, not even the key.
    pub fn field_opaque(&mut self, k: &str, raw_json: &str) -> Result<(), WireError> {
        let cp = self.checkpoint();
        self.key(k);
        let r = crate::opaque::transcode(self, raw_json);
        if r.is_err() {
            self.rollback(&cp);
        }
        r
    }
}

/// A key as [`JsonWriter`] receives it.
#[derive(Clone, Copy)]
enum KeyRef<'k> {
    /// A [`Key`] that needs no escape: its words and length.
    Plain(&'k [u64; 4], usize),
    /// Any key, escaped as it is written.
    Text(&'k str),
}

impl<'k> KeyRef<'k> {
    #[inline]
    fn of(k: &'k Key) -> Self {
        match k.plain_words() {
            Some((words, len)) => KeyRef::Plain(words, len),
            None => KeyRef::Text(k.as_str()),
        }
    }
}

/// Stages the first `len` bytes of `words` (a [`Key`]'s packing).
#[inline]
pub(crate) fn put_words(st: &mut Stage, out: &mut BytesMut, words: &[u64; 4], len: usize) {
    let mut left = len;
    for &w in words {
        if left == 0 {
            break;
        }
        let n = left.min(8);
        st.put(out, w, n);
        left -= n;
    }
}

/// One member of a flat object, for [`JsonWriter::members`].
#[derive(Clone, Copy, Debug)]
pub enum Member<'a> {
    /// `"k": "v"`, as [`JsonWriter::field_str_k`] writes it.
    Str(&'a Key, &'a str),
    /// `"k": "v"` with a string value fixed at build time (such as an event
    /// type): the same bytes as `Str(k, v.as_str())`.
    Const(&'a Key, &'a Key),
    /// `"k": <float>`, as [`JsonWriter::field_f64_k`] writes it.
    F64(&'a Key, f64),
    /// `"k": <integer>`, as [`JsonWriter::key_k`] then
    /// [`JsonWriter::i64`] write it.
    I64(&'a Key, i64),
    /// `"k": "v"` when `Some(v)` (as [`Member::Str`]); nothing at all, not
    /// even a separator, when `None`.
    OptStr(&'a Key, Option<&'a str>),
    /// `"k": ["a", "b", ...]`, as [`JsonWriter::field_str_array`] writes it.
    StrList(&'a Key, &'a [String]),
}

/// Whether any [`Member::F64`] of `members` is NaN or infinite.
#[inline]
fn has_non_finite(members: &[Member<'_>]) -> bool {
    members
        .iter()
        .any(|m| matches!(m, Member::F64(_, v) if !v.is_finite()))
}

/// The decimal text of `v` (with `-` when negative) as little-endian words,
/// for [`put_words`], and its length.
#[inline]
fn int_words(v: i64) -> ([u64; 4], usize) {
    // Digits right-aligned to END, then read as words from the first one
    // (the buffer runs far enough past END for four whole words).
    const END: usize = 32;
    let mut buf = [0u8; 64];
    let mut i = END;
    let mut u = v.unsigned_abs();
    while u >= 100 {
        i -= 2;
        if let Some(slot) = buf.get_mut(i..i + 2) {
            slot.copy_from_slice(&digit_pair((u % 100) as usize));
        }
        u /= 100;
    }
    if u >= 10 {
        i -= 2;
        if let Some(slot) = buf.get_mut(i..i + 2) {
            slot.copy_from_slice(&digit_pair(u as usize));
        }
    } else {
        i -= 1;
        if let Some(slot) = buf.get_mut(i) {
            *slot = b'0' + u as u8;
        }
    }
    if v < 0 {
        i -= 1;
        if let Some(slot) = buf.get_mut(i) {
            *slot = b'-';
        }
    }
    let len = END - i;
    let mut words = [0u64; 4];
    for (k, w) in words.iter_mut().enumerate() {
        let mut b = [0u8; 8];
        if let Some(src) = buf.get(i + 8 * k..i + 8 * k + 8) {
            b.copy_from_slice(src);
        }
        *w = u64::from_le_bytes(b);
    }
    (words, len)
}

/// An interrupt's form field (`input_fields[i]`) as a JSON object with the
/// canonical member names in DA's order, absent members left out: what
/// `custom`'s `input_required`, DA's `agui` and `agui-v1` interrupts all
/// write, in the writer's style. Here because both encoder crates need it
/// and neither depends on the other.
pub fn write_form_field(w: &mut JsonWriter<'_>, f: &FormField) -> Result<(), WireError> {
    w.begin_object();
    w.field_str("field_name", &f.field_name);
    if let Some(v) = &f.field_label {
        w.field_str("field_label", v);
    }
    if let Some(v) = &f.field_description {
        w.field_str("field_description", v);
    }
    w.field_str("field_type", &f.field_type);
    if let Some(v) = &f.field_values {
        w.field_opaque("field_values", v.get())?;
    }
    if let Some(v) = f.required {
        w.field_bool("required", v);
    }
    if let Some(v) = &f.default_value {
        w.field_opaque("default_value", v.get())?;
    }
    if let Some(v) = &f.placeholder {
        w.field_str("placeholder", v);
    }
    w.end_object();
    Ok(())
}
