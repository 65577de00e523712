//! Character classes of D18 and UTF-8-safe byte truncation.

/// `true` for the bidirectional override and isolate characters of D18
/// (U+202A-U+202E, U+2066-U+2069).
pub(crate) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `true` for the characters D18 replaces in display text: C0 controls
/// except `\t`, `\n`, `\r`; DEL; C1 controls; bidi overrides and isolates.
pub(crate) fn is_replaced_in_display(c: char) -> bool {
    match c {
        '\t' | '\n' | '\r' => false,
        '\u{0}'..='\u{1F}' | '\u{7F}'..='\u{9F}' => true,
        _ => is_bidi_control(c),
    }
}

/// `true` for the characters rejected in identifiers, codes and names:
/// every Unicode control (`Cc`: C0, DEL, C1, `\t\n\r` included), the bidi
/// overrides and isolates, the bidi marks (U+061C, U+200E, U+200F) and the
/// line and paragraph separators (U+2028, U+2029). The class as the
/// contract states it, char by char: the reference the byte scan
/// [`contains_forbidden_in_name`] (what the sanitizer calls) is tested
/// against.
#[cfg(test)]
pub(crate) fn is_forbidden_in_name(c: char) -> bool {
    c.is_control()
        || is_bidi_control(c)
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{2028}' | '\u{2029}'
        )
}

/// `0x01` in every byte of a `u64`.
const LO: u64 = 0x0101_0101_0101_0101;
/// `0x80` in every byte of a `u64`.
const HI: u64 = 0x8080_8080_8080_8080;

/// Non-zero when a byte of `x` is below `n` (`n <= 0x80`). SWAR: no false
/// negatives, and the lowest flagged byte is a true one.
#[inline]
fn below(x: u64, n: u8) -> u64 {
    x.wrapping_sub(LO * u64::from(n)) & !x & HI
}

/// Non-zero when a byte of `x` equals `b` (same guarantees as [`below`]).
#[inline]
fn has(x: u64, b: u8) -> u64 {
    let y = x ^ (LO * u64::from(b));
    y.wrapping_sub(LO) & !y & HI
}

/// The eight bytes at `i` as a `u64`; `0` (a block every scan looks at
/// closely) if there are not eight.
#[inline]
fn word(b: &[u8], i: usize) -> u64 {
    b.get(i..i.wrapping_add(8))
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
        .map_or(0, u64::from_le_bytes)
}

/// A string shorter than eight bytes as a `u64`, padded with `a` (which no
/// scan looks at).
#[inline]
fn padded(b: &[u8]) -> u64 {
    let mut a = [b'a'; 8];
    for (d, s) in a.iter_mut().zip(b) {
        *d = *s;
    }
    u64::from_le_bytes(a)
}

/// `0x20` in every byte: the bit that tells `0xC2` from `0xE2`.
const BIT5: u64 = LO * 0x20;

/// The blocks [`find_replaced_in_display`] looks at: the `0x80` bit set in
/// each byte that is a C0 control, DEL, or a lead byte `0xC2` or `0xE2`
/// (`b & 0xDF == 0xC2` matches exactly those two); possibly also in some
/// bytes above a flagged one (never below the first true one).
#[inline]
fn display_suspects(x: u64) -> u64 {
    let m = below(x, 0x20) | has(x, 0x7F);
    if x & HI == 0 {
        return m;
    }
    m | has(x & !BIT5, 0xC2)
}

/// The blocks [`contains_forbidden_in_name`] looks at: like
/// [`display_suspects`], plus the lead byte `0xD8`.
#[inline]
fn name_suspects(x: u64) -> u64 {
    let m = below(x, 0x20) | has(x, 0x7F);
    if x & HI == 0 {
        return m;
    }
    m | has(x & !BIT5, 0xC2) | has(x, 0xD8)
}

/// The first `j` in `base + (flagged byte positions of mask)`, lowest first,
/// for which `hit(b, j)` holds.
#[inline]
fn first_hit(
    b: &[u8],
    base: usize,
    mut mask: u64,
    hit: &impl Fn(&[u8], usize) -> bool,
) -> Option<usize> {
    while mask != 0 {
        let j = base + (mask.trailing_zeros() / 8) as usize;
        if hit(b, j) {
            return Some(j);
        }
        mask &= mask - 1;
    }
    None
}

/// The `0x80` bit set in each byte of `x` that is not printable ASCII
/// (`0x20..=0x7E`) when `x` has no byte over `0x7F` (no carry then crosses a
/// byte: `b + 1 <= 0x80`, `b + 0x60 <= 0xDF`); with a byte over `0x7F` at
/// least that byte is flagged. So it is zero exactly when all eight bytes
/// are printable ASCII.
#[inline(always)]
fn not_printable(x: u64) -> u64 {
    (x | x.wrapping_add(LO) | !x.wrapping_add(LO * 0x60)) & HI
}

/// `true` when every byte of `b` is printable ASCII (`0x20..=0x7E`): the
/// common case for identifiers and names, where nothing is forbidden. One
/// branch per string: the blocks' flags are or-ed together, the last
/// (partial or whole) block read as the last eight bytes. Identifiers of 9
/// to 16 bytes (the usual run, conversation and message ids) are two loads
/// and no loop.
#[inline]
fn printable_ascii_only(b: &[u8]) -> bool {
    let n = b.len();
    let Some(last) = n.checked_sub(8) else {
        return b.iter().all(|c| (0x20..0x7F).contains(c));
    };
    let mut acc = not_printable(word(b, 0)) | not_printable(word(b, last));
    let mut i = 8;
    while i < last {
        acc |= not_printable(word(b, i));
        i += 8;
    }
    acc == 0
}

/// The index of the first byte `i` for which `hit(b, i)` holds, looking
/// only at the bytes `suspects` flags, 8-byte block by block. `suspects`
/// must flag (set the `0x80` bit of) every byte where `hit` can hold; it may
/// flag more, `hit` decides. The last, partial block is read as the string's
/// last eight bytes (its bytes already looked at are masked off), or padded
/// when the string is shorter.
///
/// The blocks nothing flags are skipped here, in a loop small enough to
/// need no saved registers; from the first flagged block on,
/// [`scan_closely`] takes over.
#[inline(always)]
fn scan(
    b: &[u8],
    suspects: impl Fn(u64) -> u64,
    hit: impl Fn(&[u8], usize) -> bool,
) -> Option<usize> {
    let n = b.len();
    let mut blocks = b.chunks_exact(8);
    let mut i = 0;
    for block in &mut blocks {
        let Ok(w) = <[u8; 8]>::try_from(block) else {
            break;
        };
        if suspects(u64::from_le_bytes(w)) != 0 {
            return scan_closely(b, i, &suspects, &hit);
        }
        i += 8;
    }
    if i < n && tail_suspects(b, i, &suspects) != 0 {
        return scan_closely(b, i, &suspects, &hit);
    }
    None
}

/// The flags of `suspects` for the bytes from `i` (the last, partial block:
/// `n - i < 8`), at their positions in `b[n - 8..]` (or in `b` when it is
/// shorter than eight bytes).
#[inline(always)]
fn tail_suspects(b: &[u8], i: usize, suspects: &impl Fn(u64) -> u64) -> u64 {
    let n = b.len();
    match n.checked_sub(8) {
        // The last eight bytes: the first `8 - (n - i)` were looked at.
        Some(last) => suspects(word(b, last)) & (!0u64 << ((8 - (n - i)) * 8)),
        None => suspects(padded(b)),
    }
}

/// [`scan`] from the block at `i` (a multiple of 8) on, looking closely at
/// each flagged byte.
#[inline(never)]
fn scan_closely(
    b: &[u8],
    mut i: usize,
    suspects: &impl Fn(u64) -> u64,
    hit: &impl Fn(&[u8], usize) -> bool,
) -> Option<usize> {
    let n = b.len();
    while i + 8 <= n {
        let m = suspects(word(b, i));
        if m != 0 {
            if let Some(j) = first_hit(b, i, m, hit) {
                return Some(j);
            }
        }
        i += 8;
    }
    if i >= n {
        return None;
    }
    let m = tail_suspects(b, i, suspects);
    first_hit(b, n.saturating_sub(8), m, hit)
}

/// `true` when a character of [`is_replaced_in_display`] starts in one of
/// the first 14 lanes of `block`, or in any lane when the block ends the
/// string (valid UTF-8 then has each sequence whole in the block); never
/// `true` for a block without one. A plain loop over a fixed-size block
/// with no branch inside, each lane looking at itself and the next two
/// bytes of the block, which the compiler turns into a few vector
/// instructions (SSE2 on x86-64, portable elsewhere). Out of line, so that
/// it keeps that form.
#[inline(never)]
fn display_block_hit(block: &[u8; 16]) -> bool {
    // First the bytes that can start one: C0 but `\t \n \r`, DEL, and the
    // lead bytes `0xC2` and `0xE2` (`c & 0xDF == 0xC2`). Most text has none.
    let suspects = block.iter().fold(0u8, |any, &c| {
        any | (u8::from(c < 0x20)
            & u8::from(c != b'\t')
            & u8::from(c != b'\n')
            & u8::from(c != b'\r'))
            | u8::from(c == 0x7F)
            | u8::from(c & 0xDF == 0xC2)
    });
    if suspects == 0 {
        return false;
    }
    // The block shifted down by one and two lanes, zero-filled.
    let x = u128::from_le_bytes(*block);
    let next1 = (x >> 8).to_le_bytes();
    let next2 = (x >> 16).to_le_bytes();
    let hits = block
        .iter()
        .zip(next1)
        .zip(next2)
        .fold(0u8, |any, ((&c, c1), c2)| {
            // C0 but `\t \n \r`, and DEL.
            let control = (u8::from(c < 0x20)
                & u8::from(c != b'\t')
                & u8::from(c != b'\n')
                & u8::from(c != b'\r'))
                | u8::from(c == 0x7F);
            // C1: `0xC2 0x80..=0x9F`.
            let c1_control = u8::from(c == 0xC2) & u8::from(c1 & 0xE0 == 0x80);
            // Bidi: `0xE2 0x80 0xAA..=0xAE`, `0xE2 0x81 0xA6..=0xA9`.
            let bidi = u8::from(c == 0xE2)
                & ((u8::from(c1 == 0x80) & u8::from(c2.wrapping_sub(0xAA) < 5))
                    | (u8::from(c1 == 0x81) & u8::from(c2.wrapping_sub(0xA6) < 4)));
            any | control | c1_control | bidi
        });
    hits != 0
}

/// `true` when `b` (valid UTF-8) may hold a character of
/// [`is_replaced_in_display`]: exactly when it does. Blocks of 16 bytes 14
/// apart (a sequence starting in the last two lanes of a block is looked at
/// again whole in the next), the last block the string's last 16 bytes.
#[inline]
fn any_replaced_in_display(b: &[u8]) -> bool {
    let n = b.len();
    let Some(last) = n.checked_sub(16) else {
        return display_block_hit(&lce_wire::block::short_block(b));
    };
    let block = |i: usize| {
        b.get(i..i.wrapping_add(16))
            .and_then(|w| <&[u8; 16]>::try_from(w).ok())
    };
    let mut i = 0;
    while i < last {
        if block(i).is_some_and(display_block_hit) {
            return true;
        }
        i += 14;
    }
    block(last).is_some_and(display_block_hit)
}

/// The byte index of the first character of [`is_replaced_in_display`] in
/// `s`, if any; the same as `s.find(is_replaced_in_display)`, by a byte scan.
/// The common case, none, is [`any_replaced_in_display`]'s 16-byte blocks;
/// when there is one, [`find_replaced_in_display_words`] finds where.
pub(crate) fn find_replaced_in_display(s: &str) -> Option<usize> {
    if !any_replaced_in_display(s.as_bytes()) {
        return None;
    }
    find_replaced_in_display_words(s)
}

/// [`find_replaced_in_display`] eight bytes at a time: the byte index of the
/// first character of [`is_replaced_in_display`] in `s`, if any; the same as `s.find(is_replaced_in_display)`, by a byte scan.
/// Eight bytes at a time, only the bytes that are a C0 control, DEL, or one
/// of the lead bytes `0xC2` (C1: `0xC2 0x80..=0x9F`) and `0xE2` (bidi:
/// `0xE2 0x80 0xAA..=0xAE`, `0xE2 0x81 0xA6..=0xA9`) are looked at closely:
/// other text, ASCII or not, passes at a few instructions per block. In
/// valid UTF-8 `0xC2` and `0xE2` are only lead bytes, so the index is a
/// character boundary.
#[inline(never)]
fn find_replaced_in_display_words(s: &str) -> Option<usize> {
    scan(s.as_bytes(), display_suspects, |b, i| match b.get(i) {
        Some(b'\t' | b'\n' | b'\r') | None => false,
        Some(0..=0x1F | 0x7F) => true,
        Some(0xC2) => matches!(b.get(i + 1), Some(0x80..=0x9F)),
        Some(0xE2) => matches!(
            (b.get(i + 1), b.get(i + 2)),
            (Some(0x80), Some(0xAA..=0xAE)) | (Some(0x81), Some(0xA6..=0xA9))
        ),
        Some(_) => false,
    })
}

/// `true` when `s` contains a character of [`is_forbidden_in_name`]; the
/// same as `s.chars().any(is_forbidden_in_name)`, by a byte scan like
/// [`find_replaced_in_display`]'s: only the bytes that are a C0 control,
/// DEL, or the lead bytes `0xC2` (C1), `0xD8` (U+061C) and `0xE2` (U+200E,
/// U+200F, U+2028-U+202E, U+2066-U+2069) are looked at closely.
#[inline]
pub(crate) fn contains_forbidden_in_name(s: &str) -> bool {
    !printable_ascii_only(s.as_bytes()) && contains_forbidden_closely(s.as_bytes())
}

/// [`contains_forbidden_in_name`] for a string that is not all printable
/// ASCII (out of line: the common case needs none of its registers).
#[inline(never)]
fn contains_forbidden_closely(b: &[u8]) -> bool {
    scan(b, name_suspects, |b, i| match b.get(i) {
        Some(0..=0x1F | 0x7F) => true,
        Some(0xC2) => matches!(b.get(i + 1), Some(0x80..=0x9F)),
        Some(0xD8) => b.get(i + 1) == Some(&0x9C),
        Some(0xE2) => matches!(
            (b.get(i + 1), b.get(i + 2)),
            (Some(0x80), Some(0x8E | 0x8F | 0xA8..=0xAE)) | (Some(0x81), Some(0xA6..=0xA9))
        ),
        _ => false,
    })
    .is_some()
}

/// `s` with every character of [`is_replaced_in_display`] replaced by
/// U+FFFD, and how many were replaced, when `first` is
/// `find_replaced_in_display(s)` (not `None`: the common case, nothing to
/// replace, is that byte scan alone and allocates nothing). Idempotent:
/// U+FFFD is never replaced.
pub(crate) fn replace_display_controls_from(s: &str, first: usize) -> (String, u32) {
    let (head, tail) = s.split_at_checked(first).unwrap_or((s, ""));
    let mut out = String::with_capacity(s.len() + 8);
    out.push_str(head);
    let mut n: u32 = 0;
    for c in tail.chars() {
        if is_replaced_in_display(c) {
            out.push('\u{FFFD}');
            n = n.saturating_add(1);
        } else {
            out.push(c);
        }
    }
    (out, n)
}

/// The longest prefix of `s` that is at most `max_bytes` long and ends on a
/// character boundary: truncation never splits a UTF-8 sequence.
pub(crate) fn truncate_to_bytes(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut cut = max_bytes;
    while cut > 0 && !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.get(..cut).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::borrow::Cow;

    /// The block scans find each suspect kind inside whole eight-byte
    /// blocks, at every offset (DEL and the C1, U+061C lead bytes are found
    /// by the byte-equality test `has`).
    #[test]
    fn block_scans_find_suspects_at_every_offset() {
        for c in ['\u{7F}', '\u{85}', '\u{9F}', '\u{061C}'] {
            for at in 0..16 {
                let s = format!("{}{c}{}", "a".repeat(at), "b".repeat(24));
                assert!(contains_forbidden_in_name(&s), "{c:?} at {at}");
                let display = c != '\u{061C}';
                assert_eq!(
                    find_replaced_in_display(&s),
                    display.then_some(at),
                    "{c:?} at {at}"
                );
            }
        }
        // A block of nothing but the searched byte.
        let dels = "\u{7F}".repeat(16);
        assert!(contains_forbidden_in_name(&dels));
        assert_eq!(find_replaced_in_display(&dels), Some(0));
        // Near misses: the same lead bytes before other characters.
        for c in ['\u{A0}', '\u{061D}', 'é'] {
            let s = format!("{}{c}{}", "a".repeat(9), "b".repeat(24));
            assert!(!contains_forbidden_in_name(&s), "{c:?}");
            assert_eq!(find_replaced_in_display(&s), None, "{c:?}");
        }
    }

    /// The byte scan and the replacement as one call, as the sanitizer
    /// makes them: the text (borrowed when nothing changed) and how many
    /// characters were replaced.
    fn replace_display_controls(s: &str) -> (Cow<'_, str>, u32) {
        match find_replaced_in_display(s) {
            None => (Cow::Borrowed(s), 0),
            Some(first) => {
                let (out, n) = replace_display_controls_from(s, first);
                (Cow::Owned(out), n)
            }
        }
    }

    #[test]
    fn display_classes() {
        for c in [
            '\u{0}', '\u{1b}', '\u{7f}', '\u{85}', '\u{9f}', '\u{202e}', '\u{2066}',
        ] {
            assert!(is_replaced_in_display(c), "{c:?}");
        }
        for c in ['\t', '\n', '\r', 'a', '\u{200e}', '\u{a0}', '\u{fffd}'] {
            assert!(!is_replaced_in_display(c), "{c:?}");
        }
        assert!(is_forbidden_in_name('\t'));
        assert!(is_forbidden_in_name('\u{200f}'));
        assert!(!is_forbidden_in_name('é'));
    }

    #[test]
    fn replace_counts() {
        let (t, n) = replace_display_controls("a\u{1}b\u{202e}c\n");
        assert_eq!(t, "a\u{fffd}b\u{fffd}c\n");
        assert_eq!(n, 2);
        assert!(matches!(
            replace_display_controls("plain").0,
            Cow::Borrowed(_)
        ));
    }

    fn interesting() -> impl Strategy<Value = String> {
        let c = prop_oneof![
            any::<char>(),
            prop::sample::select(vec![
                '\t', '\n', '\r', '\u{0}', '\u{1f}', ' ', '~', '\u{7f}', '\u{80}', '\u{9f}',
                '\u{a0}', '\u{c0}', '\u{61b}', '\u{61c}', '\u{61d}', '\u{200d}', '\u{200e}',
                '\u{200f}', '\u{2010}', '\u{2027}', '\u{2028}', '\u{2029}', '\u{202a}', '\u{202e}',
                '\u{202f}', '\u{2065}', '\u{2066}', '\u{2069}', '\u{206a}', '\u{fffd}', 'é', '😀',
                'a',
            ]),
            Just('x'),
        ];
        prop::collection::vec(c, 0..40).prop_map(|v| v.into_iter().collect())
    }

    /// The char-by-char replacement this module used before the byte scan:
    /// the reference the fast path must match exactly.
    fn replace_by_chars(s: &str) -> (String, u32) {
        let mut n = 0u32;
        let out = s
            .chars()
            .map(|c| {
                if is_replaced_in_display(c) {
                    n += 1;
                    '\u{FFFD}'
                } else {
                    c
                }
            })
            .collect();
        (out, n)
    }

    proptest! {
        #[test]
        fn byte_scans_match_char_scans(s in interesting(), t in any::<String>()) {
            for s in [&s, &t] {
                let (fast, n) = replace_display_controls(s);
                prop_assert_eq!((fast.into_owned(), n), replace_by_chars(s));
                prop_assert_eq!(find_replaced_in_display(s), s.find(is_replaced_in_display));
                prop_assert_eq!(
                    contains_forbidden_in_name(s),
                    s.chars().any(is_forbidden_in_name)
                );
            }
        }
    }

    #[test]
    fn byte_scans_every_char() {
        // Each scalar value behind 0 to 9 bytes of ASCII (at every position
        // of a block, across a block boundary) and before 0, 2 or 7 more: in
        // a whole block, in the partial last block read as the last eight
        // bytes (new or already looked at), or in a string under 8 bytes.
        for c in ('\u{0}'..='\u{3000}').chain(['\u{fffd}', '\u{10ffff}']) {
            for (pre, post) in
                (0..=9).flat_map(|p| ["", "zz", "zzzzzzz"].map(|post| (&"abcdefghi"[..p], post)))
            {
                let s = format!("{pre}{c}{post}");
                assert_eq!(
                    find_replaced_in_display(&s),
                    s.find(is_replaced_in_display),
                    "{c:?}"
                );
                assert_eq!(
                    contains_forbidden_in_name(&s),
                    s.chars().any(is_forbidden_in_name),
                    "{c:?}"
                );
            }
        }
    }

    #[test]
    fn printable_ascii_only_is_exact() {
        // Every byte value at every position of strings of 1 to 17 bytes
        // (whole blocks, a partial last block, under eight bytes), among
        // printable ASCII that sits at the edges of the range.
        for n in 1..=17usize {
            for at in 0..n {
                for v in 0..=255u8 {
                    let mut b: Vec<u8> = (0..n).map(|i| [b' ', b'~', b'a'][i % 3]).collect();
                    b[at] = v;
                    assert_eq!(
                        printable_ascii_only(&b),
                        b.iter().all(|c| (0x20..=0x7E).contains(c)),
                        "{n} {at} {v:#x}"
                    );
                }
            }
        }
        assert!(printable_ascii_only(b""));
    }

    proptest! {
        #[test]
        fn printable_ascii_only_matches_the_byte_test(
            b in proptest::collection::vec(prop_oneof![
                8 => 0x20u8..0x7F,
                1 => any::<u8>(),
                1 => prop::sample::select(vec![0x00u8, 0x1F, 0x20, 0x7E, 0x7F, 0x80, 0xFF]),
            ], 0..41),
        ) {
            prop_assert_eq!(
                printable_ascii_only(&b),
                b.iter().all(|c| (0x20..=0x7E).contains(c))
            );
        }
    }

    proptest! {
        #[test]
        fn block_scan_matches_the_char_scan(s in interesting(), t in interesting()) {
            // Also longer strings, so that sequences fall across blocks.
            let long = format!("{s}{t}{s}");
            for s in [&s, &t, &long] {
                prop_assert_eq!(
                    any_replaced_in_display(s.as_bytes()),
                    s.chars().any(is_replaced_in_display)
                );
                prop_assert_eq!(find_replaced_in_display(s), s.find(is_replaced_in_display));
            }
        }
    }

    #[test]
    fn block_scan_every_position() {
        // Each multi-byte character next to the classes (and a few that are
        // replaced) at every byte position of strings up to 48 bytes, among
        // ASCII or among other sequences with the same lead bytes.
        let cs = [
            '\u{0}', '\t', '\n', '\r', '\u{1f}', '\u{7f}', '\u{80}', '\u{9f}', '\u{a0}', '°',
            '\u{2029}', '\u{202a}', '\u{202e}', '\u{202f}', '\u{2065}', '\u{2066}', '\u{2069}',
            '\u{206a}', '✓', 'é', '😀',
        ];
        for fill in ["a", "°", "✓"] {
            for c in cs {
                for pre in 0..=40usize {
                    for post in [0usize, 1, 2, 3, 7] {
                        let s = format!("{}{c}{}", "z".repeat(pre), fill.repeat(post));
                        assert_eq!(
                            any_replaced_in_display(s.as_bytes()),
                            s.chars().any(is_replaced_in_display),
                            "{s:?}"
                        );
                        let s = format!("{}{c}", fill.repeat(pre / 2));
                        assert_eq!(
                            any_replaced_in_display(s.as_bytes()),
                            s.chars().any(is_replaced_in_display),
                            "{s:?}"
                        );
                    }
                }
            }
        }
    }

    proptest! {
        #[test]
        fn byte_truncation_is_a_maximal_char_boundary_prefix(
            a in interesting(),
            b in interesting(),
            max in 0usize..100,
        ) {
            let s = format!("{a}{b}");
            let t = truncate_to_bytes(&s, max);
            prop_assert!(s.starts_with(t));
            prop_assert!(t.len() <= max);
            if s.len() > max {
                prop_assert!(t.len() + 4 > max, "not maximal");
            } else {
                prop_assert_eq!(t, s.as_str());
            }
        }
    }

    #[test]
    fn truncation_keeps_boundaries() {
        assert_eq!(truncate_to_bytes("héllo", 2), "h");
        assert_eq!(truncate_to_bytes("héllo", 3), "hé");
        assert_eq!(truncate_to_bytes("😀", 3), "");
        assert_eq!(truncate_to_bytes("abc", 0), "");
        assert_eq!(truncate_to_bytes("abc", 9), "abc");
    }
}
