//! The length of a string written as compact JSON (`serde_json`'s escaping,
//! [`Style::Compact`](crate::Style::Compact)), counted without writing it:
//! the validator measures every event's canonical size with it.

/// The lane numbers of a 16-byte block.
const LANES: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/// The escape bytes `serde_json` adds to the bytes of `block` from lane
/// `from` on: [`escape_extra`] summed over them. Written as plain loops
/// over a fixed-size block with no branch inside, which the compiler turns
/// into a few vector instructions (SSE2 on x86-64, portable elsewhere): a
/// first test for any byte to escape, then, only when there is one, the
/// count (at most `5 * 16`, so it fits a byte). Out of line: inlined in a
/// loop, the compiler widens the sum and loses the vector form.
#[inline(never)]
fn block16_escapes(block: &[u8; 16], from: u8) -> u8 {
    let any = block.iter().fold(0u8, |any, &c| {
        any | u8::from(c < 0x20) | u8::from(c == b'"') | u8::from(c == b'\\')
    });
    if any == 0 {
        return 0;
    }
    block.iter().zip(LANES).fold(0u8, |sum, (&c, lane)| {
        let quote = u8::from(c == b'"') | u8::from(c == b'\\');
        let control = u8::from(c < 0x20);
        // `\b \t \n \f \r` (8, 9, 10, 12, 13) take one more byte, other
        // controls five (`\u00XX`).
        let short = u8::from(c.wrapping_sub(8) < 6) & u8::from(c != 11);
        let extra = (quote | control) + ((control & !short) << 2);
        let keep = u8::from(lane >= from).wrapping_neg();
        sum.wrapping_add(extra & keep)
    })
}

/// The length of `s` as a JSON string written by `serde_json` (quotes
/// included): `"` and `\` and the short control escapes take 2 bytes, other
/// C0 controls 6 (`\u00XX`), everything else is written as is. Sixteen
/// bytes at a time ([`block16_escapes`]), the last partial block read as the
/// string's last sixteen bytes with the lanes already counted left out (or
/// padded, when the string is shorter).
///
/// A string of [`LONG_FROM`] bytes or more (tool results, long argument
/// fragments) is counted by [`escapes_long`] instead.
#[inline]
pub fn json_string_len(s: &str) -> u64 {
    let b = s.as_bytes();
    let n = b.len();
    let len = 2 + n as u64;
    if n >= LONG_FROM {
        return len + escapes_long(b);
    }
    let Some(last) = n.checked_sub(16) else {
        return len + u64::from(block16_escapes(&crate::block::short_block(b), 0));
    };
    let block = |i: usize| {
        b.get(i..i.wrapping_add(16))
            .and_then(|w| <&[u8; 16]>::try_from(w).ok())
    };
    let mut extra = 0;
    let mut i = 0;
    while i < last {
        if let Some(w) = block(i) {
            extra += u64::from(block16_escapes(w, 0));
        }
        i += 16;
    }
    // The last sixteen bytes: the first `i - last` were counted above.
    if let Some(w) = block(last) {
        extra += u64::from(block16_escapes(w, (i - last) as u8));
    }
    len + extra
}

/// The length from which [`json_string_len`] counts with [`escapes_long`]: below
/// it, its eight-byte words cost fewer instructions than the blocks.
const LONG_FROM: usize = 64;

/// The length from which [`json_string_len`] scans a string [`LONG`] bytes at a
/// time.
const LONG: usize = 32;

/// The escape bytes `serde_json` adds to `b` (at least [`LONG`] bytes long),
/// [`LONG`] bytes at a time: each block is first tested for a byte to
/// escape, then, only if it has one, its escapes are counted. Both are
/// plain loops over a fixed-size block with no branch inside, which the
/// compiler turns into a few vector instructions (SSE2 on x86-64), a
/// fraction of an instruction per byte. The bytes after the last whole
/// block are tested as the string's last [`LONG`] bytes and, only if that
/// has an escape, counted one by one.
#[inline(never)]
fn escapes_long(b: &[u8]) -> u64 {
    let mut extra = 0;
    let mut blocks = b.chunks_exact(LONG);
    for block in &mut blocks {
        if let Ok(block) = <&[u8; LONG]>::try_from(block) {
            if block_has_escape(block) {
                extra += block_escapes(block);
            }
        }
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        let last = b
            .len()
            .checked_sub(LONG)
            .and_then(|i| b.get(i..))
            .and_then(|t| <&[u8; LONG]>::try_from(t).ok());
        if last.is_none_or(block_has_escape) {
            extra += rest.iter().map(|&c| escape_extra(c)).sum::<u64>();
        }
    }
    extra
}

/// `true` when a byte of `block` is a C0 control, `"` or `\`. (Written as
/// a maximum of flags: the compiler vectorizes it in fewer instructions
/// than the same test with `||` or `|`, about one per byte instead of 1.4.)
#[inline]
fn block_has_escape(block: &[u8; LONG]) -> bool {
    block.iter().fold(0u8, |any, &c| {
        any.max(u8::from(c < 0x20))
            .max(u8::from(c == b'"'))
            .max(u8::from(c == b'\\'))
    }) != 0
}

/// [`escape_extra`] summed over `block`, without branches (at most
/// `5 * LONG`, so it fits a byte).
#[inline]
fn block_escapes(block: &[u8; LONG]) -> u64 {
    u64::from(block.iter().fold(0u8, |sum, &c| {
        let quote = u8::from(c == b'"' || c == b'\\');
        // `\b \t \n \f \r` (8, 9, 10, 12, 13) take one more byte, other
        // controls five (`\u00XX`).
        let short = c.wrapping_sub(8) < 6 && c != 11;
        let control = match (c < 0x20, short) {
            (false, _) => 0,
            (true, true) => 1,
            (true, false) => 5,
        };
        sum.wrapping_add(quote + control)
    }))
}

/// The bytes `serde_json` adds when it writes the byte `c` in a string.
#[inline]
fn escape_extra(c: u8) -> u64 {
    match c {
        b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
        0..=0x1f => 5,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn str_len_is_exact(
            s in "[a-z \"\\\\\u{0}-\u{1f}\u{7f}\u{80}é😀]{0,40}",
            t in any::<String>(),
            long in "[a-z \"\\\\\u{0}-\u{1f}\u{7f}\u{80}é😀]{0,200}",
            sparse in proptest::collection::vec("[a-zé😀 ]{0,40}|[\"\\\\\u{0}-\u{1f}]", 0..40)
                .prop_map(|v| v.concat()),
        ) {
            for s in [&s, &t, &long, &sparse] {
                let json = serde_json::to_string(s).unwrap_or_default();
                prop_assert_eq!(json_string_len(s), json.len() as u64);
                // And what this crate writes in the compact style.
                let mut out = bytes::BytesMut::new();
                crate::write_json_string(&mut out, s, crate::Style::Compact);
                prop_assert_eq!(json_string_len(s), out.len() as u64);
            }
        }
    }

    /// The plain byte-by-byte count [`json_string_len`]'s blocks replace.
    fn str_len_by_bytes(s: &str) -> u64 {
        2 + s.len() as u64 + s.bytes().map(escape_extra).sum::<u64>()
    }

    proptest! {
        #[test]
        fn str_len_matches_the_byte_count(
            s in proptest::collection::vec(prop_oneof![
                any::<char>(),
                prop::sample::select(vec![
                    '\0', '\u{7}', '\u{8}', '\t', '\n', '\u{b}', '\u{c}', '\r', '\u{e}',
                    '\u{1f}', ' ', '"', '\\', '~', '\u{7f}', '\u{80}', '\u{9f}', '\u{a2}',
                    '\u{208}', '\u{2028}', '\u{202e}', 'é', '😀', 'a',
                ]),
            ], 0..40).prop_map(|v| v.into_iter().collect::<String>()),
        ) {
            prop_assert_eq!(json_string_len(&s), str_len_by_bytes(&s));
        }
    }

    #[test]
    fn block16_escapes_every_byte_every_lane() {
        for from in 0..=16u8 {
            for lane in 0..16usize {
                for v in 0..=255u8 {
                    let mut block = [b'!'; 16];
                    block[lane] = v;
                    block[(lane + 5) % 16] = b'"';
                    let want: u64 = block
                        .iter()
                        .skip(usize::from(from))
                        .map(|&c| escape_extra(c))
                        .sum();
                    assert_eq!(
                        u64::from(block16_escapes(&block, from)),
                        want,
                        "{from} {lane} {v:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn str_len_every_ascii_at_every_position() {
        // Strings of 0 to 17 bytes and a few up to 72 (under eight, whole
        // words, a partial last word; under `LONG`, whole blocks, a partial
        // last block), each ASCII character and a few others at each
        // position, among bytes next to the escaped ones.
        let others = ['é', '😀', '\u{7f}', '\u{80}'];
        for n in (0..=17usize).chain([31, 32, 33, 39, 40, 47, 63, 64, 65, 72]) {
            for at in 0..n.max(1) {
                for c in ('\0'..='\u{7f}').chain(others) {
                    let s: String = (0..n)
                        .map(|i| {
                            if i == at {
                                c
                            } else {
                                ['!', '#', '[', ']'][i % 4]
                            }
                        })
                        .collect();
                    let json = serde_json::to_string(&s).unwrap_or_default();
                    assert_eq!(json_string_len(&s), json.len() as u64, "{s:?}");
                }
            }
        }
    }
}
