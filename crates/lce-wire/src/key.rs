//! Object keys known when the program is built.

/// Longest key, in bytes, kept as pre-loaded words; longer keys take the
/// general path.
const KEY_MAX: usize = 32;

/// An object key fixed at build time (`const K: Key = Key::new("delta")`),
/// checked once to need no escape in any [`crate::Style`] and kept as
/// little-endian words, so that writing it is a few word stores rather than
/// an escape scan.
///
/// A key that does need an escape (a control char, `"`, `\\`, or anything
/// above U+007E), or is longer than 32 bytes, is still accepted: it is
/// written through the general escaping path, with the same bytes as
/// [`crate::JsonWriter::key`] would write.
#[derive(Clone, Copy, Debug)]
pub struct Key {
    text: &'static str,
    /// The key's bytes, eight per word (byte 0 lowest), zero past the end.
    words: [u64; KEY_MAX / 8],
    /// The key needs no escape and fits in `words`.
    plain: bool,
}

impl Key {
    /// Checks and packs `text`.
    pub const fn new(text: &'static str) -> Key {
        let bytes = text.as_bytes();
        let mut words = [0u64; KEY_MAX / 8];
        let mut plain = bytes.len() <= KEY_MAX;
        let mut i = 0;
        while plain && i < bytes.len() {
            let b = bytes[i];
            if b < 0x20 || b >= 0x7f || b == b'"' || b == b'\\' {
                plain = false;
            } else {
                words[i / 8] |= (b as u64) << (8 * (i % 8));
            }
            i += 1;
        }
        Key { text, words, plain }
    }

    /// The key's text.
    #[inline]
    pub const fn as_str(&self) -> &'static str {
        self.text
    }

    /// The packed words and byte length, when the key needs no escape.
    #[inline]
    pub(crate) fn plain_words(&self) -> Option<(&[u64; KEY_MAX / 8], usize)> {
        if self.plain {
            Some((&self.words, self.text.len()))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_plain_keys_and_refuses_the_rest() {
        let k = Key::new("messageId");
        let (words, len) = k.plain_words().unwrap_or((&[0; 4], 0));
        assert_eq!(len, 9);
        assert_eq!(words[0].to_le_bytes(), *b"messageI");
        assert_eq!(words[1], u64::from(b'd'));
        assert!(Key::new("").plain_words().is_some());
        assert!(
            Key::new("0123456789abcdef0123456789abcdef")
                .plain_words()
                .is_some()
        );
        for bad in [
            "0123456789abcdef0123456789abcdefg",
            "a\"b",
            "a\\b",
            "a\nb",
            "\u{7f}",
            "caf\u{e9}",
        ] {
            assert!(Key::new(bad).plain_words().is_none(), "{bad:?}");
        }
    }
}
