//! Float text: Python `repr` and serde_json's (ryu's) compact form.
//!
//! Both start from the same shortest round-trip digits, which Rust's `{:e}`
//! formatting yields; only the layout rules differ. No heap allocation.

use core::fmt::Write as _;

use bytes::BytesMut;

use crate::WireError;

/// A fixed stack buffer that `core::fmt` can write into.
struct StackBuf {
    buf: [u8; 48],
    len: usize,
}

impl core::fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(core::fmt::Error)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(core::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Shortest round-trip decimal digits of a finite float:
/// `value = (-1)^neg × 0.d1d2…dn × 10^(exp + 1)`, i.e. `d1.d2…dn × 10^exp`.
struct Decimal {
    neg: bool,
    digits: [u8; 20],
    n: usize,
    /// Scientific exponent: the power of ten of the first digit.
    exp: i32,
}

impl Decimal {
    fn digits(&self) -> &[u8] {
        self.digits.get(..self.n).unwrap_or(&[])
    }
}

/// Formats `args` into a fresh stack buffer.
fn stack_format(args: core::fmt::Arguments<'_>) -> Result<StackBuf, WireError> {
    let mut sb = StackBuf {
        buf: [0; 48],
        len: 0,
    };
    sb.write_fmt(args).map_err(|_| WireError::NonFinite)?;
    Ok(sb)
}

impl StackBuf {
    fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}

/// Decomposes a finite `v` into its shortest round-trip digits, choosing
/// among equally short candidates the one closest to `v`, ties to even
/// (what Python's `repr` and serde_json print).
fn decompose(v: f64) -> Result<Decimal, WireError> {
    if !v.is_finite() {
        return Err(WireError::NonFinite);
    }
    decompose_by_format(v)
}

/// `|v| * 1000` as an integer when `v` has at most three decimals and
/// `1 <= |v| < 10^12`, such as every `agui` frame's timestamp (Unix seconds
/// with milliseconds, `ms / 1000.0`); `None` otherwise.
///
/// It applies when `v` is exactly the double nearest to `m / 1000` for an
/// integer `m`. That decimal then round-trips, and it is the shortest that
/// does: any other decimal with as few digits is a different multiple of
/// 0.001, at least 0.001 away, while doubles below 10^12 are less than 2^-12
/// apart, so it cannot round to the same double.
#[inline]
fn millis(v: f64) -> Option<u64> {
    let a = v.abs();
    if !(1.0..1e12).contains(&a) {
        return None;
    }
    // The nearest integer to `a * 1000` (< 10^15 < 2^50, so adding 0.5 is
    // exact and truncation rounds half up; `f64::round` is a libm call on
    // baseline x86-64). Only the exact check below decides.
    let m = (a * 1000.0 + 0.5) as u64;
    // 1000 <= m < 10^15 < 2^53: exact as a float, and the division is the
    // correctly rounded quotient, the double nearest `m / 1000`.
    if m as f64 / 1000.0 != a {
        return None;
    }
    Some(m)
}

/// [`decompose`] through `core::fmt`, for any finite value.
fn decompose_by_format(v: f64) -> Result<Decimal, WireError> {
    // `{:e}` prints the shortest digits that round-trip, e.g. `-1.2345e-5`,
    // but on an exact tie between two shortest candidates it may pick the
    // odd one (`-1101730524277610.25` gives `…103e15`, Python `…102e15`).
    let shortest = stack_format(format_args!("{v:e}"))?;
    let d = parse_exp_form(shortest.bytes())?;
    // The correctly rounded n-digit form (ties to even) is the closest
    // n-digit decimal; when it round-trips it is the answer.
    let exact = stack_format(format_args!("{v:.prec$e}", prec = d.n.saturating_sub(1)))?;
    if exact.bytes() != shortest.bytes() {
        let round_trips = core::str::from_utf8(exact.bytes())
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .is_some_and(|back| back.to_bits() == v.to_bits());
        if round_trips {
            return parse_exp_form(exact.bytes());
        }
    }
    Ok(d)
}

/// Parses Rust's `{:e}` output (`-1.2345e-5`, `5e-324`, `0e0`).
fn parse_exp_form(text: &[u8]) -> Result<Decimal, WireError> {
    let mut d = Decimal {
        neg: false,
        digits: [0; 20],
        n: 0,
        exp: 0,
    };
    let mut it = text.iter().copied().peekable();
    if it.peek() == Some(&b'-') {
        d.neg = true;
        it.next();
    }
    for b in it.by_ref() {
        match b {
            b'0'..=b'9' => {
                let slot = d.digits.get_mut(d.n).ok_or(WireError::NonFinite)?;
                *slot = b;
                d.n += 1;
            }
            b'.' => {}
            b'e' => break,
            _ => return Err(WireError::NonFinite),
        }
    }
    let mut exp_neg = false;
    let mut exp: i32 = 0;
    for b in it {
        match b {
            b'-' => exp_neg = true,
            b'0'..=b'9' => exp = exp.saturating_mul(10).saturating_add(i32::from(b - b'0')),
            _ => return Err(WireError::NonFinite),
        }
    }
    d.exp = if exp_neg { -exp } else { exp };
    // Defensive: drop trailing zeros of the mantissa (keep one digit).
    while d.n > 1 && d.digits.get(d.n - 1) == Some(&b'0') {
        d.n -= 1;
    }
    if d.n == 0 {
        return Err(WireError::NonFinite);
    }
    Ok(d)
}

/// Appends `n` ASCII zeros.
fn push_zeros(out: &mut BytesMut, n: usize) {
    const Z: [u8; 32] = [b'0'; 32];
    let mut left = n;
    while left > 0 {
        let k = left.min(Z.len());
        out.extend_from_slice(Z.get(..k).unwrap_or(&[]));
        left -= k;
    }
}

/// Appends a small non-negative integer in decimal, at least `min_digits`
/// long (zero-padded on the left).
fn push_exp_digits(out: &mut BytesMut, e: u32, min_digits: usize) {
    let len = e.checked_ilog10().map_or(1, |l| l as usize + 1);
    for _ in len..min_digits {
        out.extend_from_slice(b"0");
    }
    push_u64(out, u64::from(e));
}

/// Writes the fixed (non-scientific) form `digits × 10^(exp - n + 1)`.
/// Returns after writing; integral values get `.0`.
fn push_fixed(out: &mut BytesMut, d: &Decimal) {
    let digits = d.digits();
    if d.exp >= 0 {
        let int_len = d.exp.unsigned_abs() as usize + 1;
        if digits.len() <= int_len {
            out.extend_from_slice(digits);
            push_zeros(out, int_len - digits.len());
            out.extend_from_slice(b".0");
        } else {
            let (a, b) = digits.split_at(int_len);
            out.extend_from_slice(a);
            out.extend_from_slice(b".");
            out.extend_from_slice(b);
        }
    } else {
        out.extend_from_slice(b"0.");
        push_zeros(out, (d.exp.unsigned_abs() as usize).saturating_sub(1));
        out.extend_from_slice(digits);
    }
}

/// Writes the mantissa of the scientific form: `d1` or `d1.d2…dn`.
fn push_sci_mantissa(out: &mut BytesMut, d: &Decimal) {
    let digits = d.digits();
    if let Some((first, rest)) = digits.split_first() {
        out.extend_from_slice(&[*first]);
        if !rest.is_empty() {
            out.extend_from_slice(b".");
            out.extend_from_slice(rest);
        }
    }
}

/// Writes `v` exactly as Python's `repr(float)` (and so `json.dumps`) does.
///
/// Shortest round-trip digits; integral values keep a `.0` (`1.0`,
/// `100000.0`, `-0.0`); scientific form when the decimal exponent is below -4
/// or at least 16, with a sign and at least two exponent digits (`1e+16`,
/// `1e-07`, `1.5e+300`). NaN and infinities give [`WireError::NonFinite`] and
/// write nothing.
pub fn write_py_float(out: &mut BytesMut, v: f64) -> Result<(), WireError> {
    if push_millis(out, v) {
        return Ok(());
    }
    push_decimal(out, &decompose(v)?, PY_STYLE);
    Ok(())
}

/// How a [`Decimal`] is laid out: the decimal exponents written in fixed
/// form, and the fewest digits of an exponent.
#[derive(Clone, Copy)]
struct Style {
    /// The lowest and one past the highest exponent written in fixed form.
    fixed: (i32, i32),
    exp_digits: usize,
}

/// Python's `repr`: fixed for 1e-4 <= |v| < 1e16, `1e-05`, `1e+16`.
const PY_STYLE: Style = Style {
    fixed: (-4, 16),
    exp_digits: 2,
};

/// serde_json 1.0.154: fixed for 1e-5 <= |v| < 1e16, `1e-7`, `1e+16`.
const COMPACT_STYLE: Style = Style {
    fixed: (-5, 16),
    exp_digits: 1,
};

/// Writes `d` in `style`.
fn push_decimal(out: &mut BytesMut, d: &Decimal, style: Style) {
    if d.neg {
        out.extend_from_slice(b"-");
    }
    if (style.fixed.0..style.fixed.1).contains(&d.exp) {
        push_fixed(out, d);
    } else {
        push_sci_mantissa(out, d);
        out.extend_from_slice(if d.exp < 0 { b"e-" } else { b"e+" });
        push_exp_digits(out, d.exp.unsigned_abs(), style.exp_digits);
    }
}

/// Two decimal digits for every value 0..100.
static DIGIT_PAIRS: [[u8; 2]; 100] = build_digit_pairs();

/// The two ASCII digits of `n` (below 100).
#[inline]
pub(crate) fn digit_pair(n: usize) -> [u8; 2] {
    DIGIT_PAIRS.get(n).copied().unwrap_or([b'0'; 2])
}

const fn build_digit_pairs() -> [[u8; 2]; 100] {
    let mut t = [[0u8; 2]; 100];
    let mut i = 0;
    while i < 100 {
        t[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    t
}

/// Where the integer digits of a [`MillisText`] end (the `.` goes here).
const MILLIS_POINT: usize = 16;

/// The text of a value [`millis`] accepts, laid out in a fixed buffer: at
/// most 17 bytes (`-`, 12 integer digits, `.`, 3 decimals) from `start`,
/// with at least 24 bytes of buffer from `start` on, so that three whole
/// words can always be read there.
pub(crate) struct MillisText {
    buf: [u8; 40],
    start: usize,
    end: usize,
}

impl MillisText {
    /// The text.
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        self.buf.get(self.start..self.end).unwrap_or(&[])
    }

    /// The text as up to three little-endian words (garbage past the end)
    /// and its length.
    #[inline]
    pub(crate) fn words(&self) -> ([u64; 3], usize) {
        let word = |k: usize| {
            let mut w = [0u8; 8];
            if let Some(src) = self.buf.get(self.start + 8 * k..self.start + 8 * k + 8) {
                w.copy_from_slice(src);
            }
            u64::from_le_bytes(w)
        };
        ([word(0), word(1), word(2)], self.end - self.start)
    }
}

/// Lays out a value [`millis`] accepts straight from its integer count of
/// milliseconds: the integer part, `.`, the decimals without trailing
/// zeros (`.0` for none). Both styles write such values (1 <= |v| < 10^12)
/// in fixed form. `None` for any other value.
#[inline]
pub(crate) fn millis_text(v: f64) -> Option<MillisText> {
    let m = millis(v)?;
    // Decimals: `d1 d2 d3`, trailing zeros dropped, `0` for none (the
    // buffer is all zeros already).
    let frac = m % 1000;
    let end = MILLIS_POINT
        + if frac % 100 == 0 {
            2
        } else if frac % 10 == 0 {
            3
        } else {
            4
        };
    let mut t = MillisText {
        buf: [b'0'; 40],
        start: MILLIS_POINT,
        end,
    };
    let buf = &mut t.buf;
    let mut pair_at = |at: usize, p: u64| {
        if let (Some(slot), Some(pair)) = (buf.get_mut(at..at + 2), DIGIT_PAIRS.get(p as usize)) {
            slot.copy_from_slice(pair);
        }
    };
    pair_at(MILLIS_POINT + 1, frac / 10);
    pair_at(MILLIS_POINT + 2, frac % 100);
    // Integer digits, two at a time, right to left (at least one: m >= 1000).
    let mut int = m / 1000;
    let mut i = MILLIS_POINT;
    while int >= 100 {
        i -= 2;
        pair_at(i, int % 100);
        int /= 100;
    }
    if int >= 10 {
        i -= 2;
        pair_at(i, int);
    } else {
        i -= 1;
        pair_at(i - 1, int);
    }
    if let Some(dot) = t.buf.get_mut(MILLIS_POINT) {
        *dot = b'.';
    }
    if v.is_sign_negative() {
        i -= 1;
        if let Some(sign) = t.buf.get_mut(i) {
            *sign = b'-';
        }
    }
    t.start = i;
    Some(t)
}

/// Writes a value [`millis`] accepts (see [`millis_text`]); `false`,
/// nothing written, for any other value.
fn push_millis(out: &mut BytesMut, v: f64) -> bool {
    match millis_text(v) {
        Some(t) => {
            out.extend_from_slice(t.bytes());
            true
        }
        None => false,
    }
}

/// Writes `v` exactly as `serde_json` 1.0.154 (the workspace's locked
/// version, which formats with `zmij`) does: shortest round-trip digits, `.0`
/// on integral values in fixed form, fixed form for decimal exponents -5
/// through 15, otherwise `1e+16`, `1.5e+300`, `1e-7` (a sign, no zero
/// padding). Older serde_json releases (ryu) wrote `1e16`; both parse to the
/// same value. NaN and infinities give [`WireError::NonFinite`] and write
/// nothing.
pub fn write_compact_float(out: &mut BytesMut, v: f64) -> Result<(), WireError> {
    if push_millis(out, v) {
        return Ok(());
    }
    push_decimal(out, &decompose(v)?, COMPACT_STYLE);
    Ok(())
}

/// Appends the decimal digits of `v`.
pub(crate) fn push_u64(out: &mut BytesMut, v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        if let Some(slot) = buf.get_mut(i) {
            *slot = b'0' + (v % 10) as u8;
        }
        v /= 10;
        if v == 0 || i == 0 {
            break;
        }
    }
    out.extend_from_slice(buf.get(i..).unwrap_or(&[]));
}

/// Appends the decimal digits of `v`, with a `-` when negative.
pub(crate) fn push_i64(out: &mut BytesMut, v: i64) {
    if v < 0 {
        out.extend_from_slice(b"-");
    }
    push_u64(out, v.unsigned_abs());
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Checks the millisecond writer against the `core::fmt` path, in both
    /// styles, wherever it applies.
    fn check(v: f64) -> Result<(), TestCaseError> {
        for style in [PY_STYLE, COMPACT_STYLE] {
            let mut fast = BytesMut::new();
            if !push_millis(&mut fast, v) {
                prop_assert!(fast.is_empty());
                continue;
            }
            let slow = decompose_by_format(v).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let mut reference = BytesMut::new();
            push_decimal(&mut reference, &slow, style);
            prop_assert_eq!(&fast[..], &reference[..], "{:e}", v);
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn millis_fast_path_matches_format(ms in 1000u64..1_000_000_000_000_000, neg: bool) {
            let v = ms as f64 / 1000.0;
            prop_assert!(millis(v).is_some(), "{v} should take the fast path");
            check(if neg { -v } else { v })?;
        }

        #[test]
        fn fast_path_never_disagrees(bits: u64) {
            check(f64::from_bits(bits))?;
        }

        #[test]
        fn near_millis_values(ms in 1000u64..1_000_000_000_000_000, ulps in -3i64..=3) {
            let v = ms as f64 / 1000.0;
            let w = f64::from_bits(v.to_bits().wrapping_add_signed(ulps));
            check(w)?;
        }
    }

    /// Every millisecond around the edges where the text changes length or
    /// form: each power of ten of seconds up to 10^12 (where the fast path
    /// stops), the ends of years 1970 and 9999 and of the 32-bit second
    /// range, both signs; `.0`, one, two and three decimals all occur.
    #[test]
    fn millis_edges_match_format() {
        let mut centres: Vec<u64> = (0..=12).map(|k| 10u64.pow(k) * 1000).collect();
        centres.extend([
            31_536_000_000,      // 1971-01-01
            253_402_300_800_000, // 10000-01-01
            2_147_483_648_000,   // 2^31 s
            4_294_967_296_000,   // 2^32 s
            1_786_957_200_000,   // the corpus' epoch
        ]);
        for c in centres {
            for ms in c.saturating_sub(3000).max(1000)..c + 3000 {
                let v = ms as f64 / 1000.0;
                check(v).unwrap_or_else(|e| panic!("{v}: {e}"));
                check(-v).unwrap_or_else(|e| panic!("{v}: {e}"));
            }
        }
    }

    #[test]
    fn typical_timestamps() {
        for (v, text) in [
            (1_786_957_200.0, "1786957200.0"),
            (1_786_957_200.5, "1786957200.5"),
            (1_786_957_200.123, "1786957200.123"),
            (1_786_957_200.12, "1786957200.12"),
            (1.001, "1.001"),
            (999_999_999_999.999, "999999999999.999"),
            (-2.05, "-2.05"),
        ] {
            assert!(millis(v).is_some(), "{v}");
            let mut out = BytesMut::new();
            write_py_float(&mut out, v).unwrap();
            assert_eq!(&out[..], text.as_bytes());
            let mut out = BytesMut::new();
            write_compact_float(&mut out, v).unwrap();
            assert_eq!(&out[..], text.as_bytes());
        }
        // Outside the range: the general path.
        assert!(millis(0.5).is_none());
        assert!(millis(1e12).is_none());
        assert!(millis(1.0001).is_none());
    }
}
