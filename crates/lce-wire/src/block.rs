//! Helpers for scans that read text sixteen bytes at a time as plain loops
//! over a `[u8; 16]`, which the compiler turns into vector instructions with
//! no `unsafe`: [`short_block`] makes a block of a string shorter than that.
//! Used here ([`json_string_len`](crate::json_string_len)) and by
//! `lce-sanitize`'s display-character scan.

/// Copies `N` bytes of `b` from `i` to `w` at `i` (nothing when out of
/// range): a fixed-size move.
#[inline(always)]
fn put<const N: usize>(w: &mut [u8; 16], b: &[u8], i: usize) {
    let end = i.wrapping_add(N);
    if let (Some(d), Some(s)) = (w.get_mut(i..end), b.get(i..end)) {
        d.copy_from_slice(s);
    }
}

/// `b` (under 16 bytes long) as a block, padded with `a`: a byte that
/// neither scan looks for (it is never escaped and never replaced). Two
/// overlapping fixed-size moves (or up to three single bytes), no call.
/// Longer input gives a block of part of it: callers scan it whole instead.
#[inline(always)]
pub fn short_block(b: &[u8]) -> [u8; 16] {
    let n = b.len();
    let mut w = [b'a'; 16];
    if n >= 8 {
        put::<8>(&mut w, b, 0);
        put::<8>(&mut w, b, n - 8);
    } else if n >= 4 {
        put::<4>(&mut w, b, 0);
        put::<4>(&mut w, b, n - 4);
    } else {
        for (d, s) in w.iter_mut().zip(b) {
            *d = *s;
        }
    }
    w
}
