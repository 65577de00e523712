//! Helpers shared by this crate's unit tests.

/// Applies byte edits to `bytes`: each `(pos, op, byte)` overwrites (`op`
/// 0), removes (1) or inserts (otherwise) at `pos` modulo the length + 1.
pub(crate) fn apply_edits(bytes: &mut Vec<u8>, edits: impl IntoIterator<Item = (usize, u8, u8)>) {
    for (pos, op, byte) in edits {
        let at = pos % (bytes.len() + 1);
        match op {
            0 if at < bytes.len() => bytes[at] = byte,
            1 if at < bytes.len() => {
                bytes.remove(at);
            }
            _ => bytes.insert(at, byte),
        }
    }
}
