//! RFC 3339 timestamps (D3): parsed to a precise instant, text kept as sent.

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::ErrorMarker;

/// An RFC 3339 timestamp with a `Z` or numeric offset.
///
/// It never orders events (D3); it is the source of the wire timestamps.
/// The instant is exact to the nanosecond; the original text is kept so that
/// serialization gives back the bytes that arrived.
#[derive(Clone, PartialEq, Eq)]
pub struct Timestamp {
    text: Text,
    /// Whole seconds since the Unix epoch (UTC), floor-rounded.
    secs: i64,
    /// Nanoseconds within `secs`, `0..1_000_000_000`.
    nanos: u32,
}

/// The longest text kept inside the [`Timestamp`] itself: milliseconds
/// with an offset (`2026-08-17T09:00:00.123+02:00`, 29 bytes) and
/// microseconds in UTC (27) fit. A longer text is allocated.
const INLINE: usize = 30;

/// A timestamp's text: inline when short (so that parsing and cloning one
/// allocate nothing), else on the heap.
#[derive(Clone, PartialEq, Eq)]
enum Text {
    /// `len` bytes of `bytes`, the rest zero.
    Inline { len: u8, bytes: [u8; INLINE] },
    /// Longer than [`INLINE`] bytes.
    Heap(Box<str>),
}

impl Text {
    #[inline]
    fn new(text: &str) -> Self {
        let b = text.as_bytes();
        match u8::try_from(b.len()) {
            Ok(len) if b.len() <= INLINE => {
                let mut bytes = [0u8; INLINE];
                bytes[..b.len()].copy_from_slice(b);
                Text::Inline { len, bytes }
            }
            _ => Text::Heap(text.into()),
        }
    }

    /// [`Text::new`] of ASCII bytes, without a UTF-8 check when inline.
    #[inline]
    fn from_ascii(b: &[u8]) -> Option<Self> {
        match u8::try_from(b.len()) {
            Ok(len) if b.len() <= INLINE => {
                let mut bytes = [0u8; INLINE];
                bytes[..b.len()].copy_from_slice(b);
                Some(Text::Inline { len, bytes })
            }
            _ => Some(Text::Heap(std::str::from_utf8(b).ok()?.into())),
        }
    }

    #[inline]
    fn as_str(&self) -> &str {
        match self {
            // Copied from a `str` whole, so valid UTF-8: the check cannot fail.
            Text::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            Text::Heap(s) => s,
        }
    }

    #[inline]
    fn len(&self) -> usize {
        match self {
            Text::Inline { len, .. } => usize::from(*len),
            Text::Heap(s) => s.len(),
        }
    }
}

impl Timestamp {
    /// Parses an RFC 3339 date-time (`2026-08-17T09:00:00.5Z`, `...+02:00`).
    pub fn parse(text: &str) -> Result<Self, TimestampError> {
        let (secs, nanos) = parse_rfc3339(text.as_bytes()).ok_or(TimestampError)?;
        Ok(Timestamp {
            text: Text::new(text),
            secs,
            nanos,
        })
    }

    /// [`Timestamp::parse`] of bytes (the parser's fast path, before it knows
    /// the line is UTF-8): `None` unless they are an ASCII date-time.
    pub(crate) fn parse_ascii(b: &[u8]) -> Option<Self> {
        let (secs, nanos) = parse_rfc3339(b)?;
        // A date-time is ASCII; checked anyway (a word at a time), as the
        // text is kept as is and ASCII is valid UTF-8.
        if !b.is_ascii() {
            return None;
        }
        Some(Timestamp {
            text: Text::from_ascii(b)?,
            secs,
            nanos,
        })
    }

    /// [`Timestamp::parse_ascii`] of the 24-byte form most producers write,
    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`, reusing the date, hour and minute of
    /// `last` when the first 17 bytes are the same as its: then only the
    /// seconds and milliseconds are read. Anything else (another form, or a
    /// tail that does not read as `SS.mmmZ`) is parsed whole, and remembered
    /// in `last` when it has that form. The result is always
    /// `parse_ascii(b)`'s.
    #[inline]
    pub(crate) fn parse_ms_utc(b: &[u8; 24], last: &mut LastMinute) -> Option<Self> {
        let (prefix, tail) = b.split_at(17);
        let Some((second, millis)) = ms_utc_tail(tail) else {
            return Timestamp::parse_ascii(b);
        };
        let secs = match last.minute {
            Some((ref p, base)) if p[..] == *prefix => base + i64::from(second),
            _ => {
                let t = Timestamp::parse_ascii(b)?;
                let mut p = [0u8; 17];
                p.copy_from_slice(prefix);
                last.minute = Some((p, t.secs - i64::from(second)));
                return Some(t);
            }
        };
        // The prefix was checked when it was remembered, the tail just now:
        // all ASCII, and the same date-time `parse_rfc3339` would read.
        Some(Timestamp {
            text: Text::from_ascii(b)?,
            secs,
            nanos: millis * 1_000_000,
        })
    }

    /// The timestamp of `secs` seconds and `nanos` nanoseconds after the Unix
    /// epoch, written as UTC with nanosecond precision trimmed of zeros.
    pub fn from_unix(secs: i64, nanos: u32) -> Option<Self> {
        if nanos >= 1_000_000_000 {
            return None;
        }
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        if !(0..=9999).contains(&y) {
            return None;
        }
        let mut text = format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            rem / 3600,
            (rem / 60) % 60,
            rem % 60
        );
        if nanos > 0 {
            let frac = format!("{nanos:09}");
            text.push('.');
            text.push_str(frac.trim_end_matches('0'));
        }
        text.push('Z');
        Some(Timestamp {
            text: Text::new(&text),
            secs,
            nanos,
        })
    }

    /// 1970-01-01T00:00:00Z.
    pub fn unix_epoch() -> Self {
        Timestamp {
            text: Text::new("1970-01-01T00:00:00Z"),
            secs: 0,
            nanos: 0,
        }
    }

    /// The current time from the system clock (the epoch if the clock is
    /// set before 1970 or after 9999).
    pub fn now() -> Self {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        i64::try_from(now.as_secs())
            .ok()
            .and_then(|secs| Timestamp::from_unix(secs, now.subsec_nanos()))
            .unwrap_or_else(Timestamp::unix_epoch)
    }

    /// The text as it arrived.
    pub fn as_str(&self) -> &str {
        self.text.as_str()
    }

    /// The length of the text in bytes (`as_str().len()`, without reading it).
    pub fn text_len(&self) -> usize {
        self.text.len()
    }

    /// Whole seconds since the Unix epoch (floor).
    pub fn unix_seconds(&self) -> i64 {
        self.secs
    }

    /// Nanoseconds past [`Timestamp::unix_seconds`].
    pub fn subsec_nanos(&self) -> u32 {
        self.nanos
    }

    /// Milliseconds since the Unix epoch, floor-rounded (AG-UI 1.0 wire).
    pub fn unix_millis(&self) -> i64 {
        self.secs
            .saturating_mul(1000)
            .saturating_add(i64::from(self.nanos / 1_000_000))
    }

    /// Microseconds since the Unix epoch, floor-rounded (Python `datetime`
    /// keeps microseconds).
    pub fn unix_micros(&self) -> i64 {
        self.secs
            .saturating_mul(1_000_000)
            .saturating_add(i64::from(self.nanos / 1000))
    }

    /// Unix seconds as Python's `datetime.timestamp()` computes them: the
    /// microsecond count divided by 10^6, correctly rounded.
    #[allow(clippy::cast_precision_loss)]
    pub fn unix_seconds_f64(&self) -> f64 {
        // |micros| < 2^53 for every year 0..=9999, so the conversion is exact
        // and the division is the correctly rounded quotient, as in Python.
        self.unix_micros() as f64 / 1_000_000.0
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({})", self.as_str())
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text is not an RFC 3339 date-time with an offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not an RFC 3339 date-time with an offset")]
pub struct TimestampError;

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Timestamp::parse(&text).map_err(|_| {
            D::Error::custom(
                ErrorMarker::InvalidTimestamp
                    .message("expected RFC 3339 date-time with offset, like 2026-08-17T09:00:00Z"),
            )
        })
    }
}

fn digits(b: &[u8], at: usize, n: usize) -> Option<u32> {
    let s = b.get(at..at + n)?;
    let mut v = 0u32;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u32::from(c - b'0');
    }
    Some(v)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(y) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// The masks that check one little-endian word of fixed-width date-time
/// text against `pattern`: `D` a digit, `T` `T` or `t`, any other byte
/// itself. Returns `(mask, want, digits_add, digits_mask)`: a word `x` fits
/// when `x & mask == want` (each digit is `0x30..=0x3f`, each other byte is
/// right) and `(x + digits_add) & digits_mask == digits_mask & want` (each
/// digit is at most `9`: adding 6 keeps its high nibble at 3).
const fn word_pattern(pattern: &[u8; 8]) -> (u64, u64, u64, u64) {
    let (mut mask, mut want, mut add, mut dmask) = (0u64, 0u64, 0u64, 0u64);
    let mut k = 0;
    while k < 8 {
        let shift = 8 * k;
        let (m, w, a, d) = match pattern[k] {
            b'D' => (0xf0u64, 0x30u64, 0x06u64, 0xf0u64),
            b'T' => (0xdf, b'T' as u64, 0, 0),
            c => (0xff, c as u64, 0, 0),
        };
        mask |= m << shift;
        want |= w << shift;
        add |= a << shift;
        dmask |= d << shift;
        k += 1;
    }
    (mask, want, add, dmask)
}

/// `true` when the word `x` fits the masks of [`word_pattern`].
#[inline(always)]
fn fits(x: u64, (mask, want, add, dmask): (u64, u64, u64, u64)) -> bool {
    // When the first test holds, each digit is below 0x40 and adding 6
    // carries into no other byte.
    (x & mask == want) & (x.wrapping_add(add) & dmask == want & dmask)
}

/// Each pair of digit values `a` (byte `k`) and `b` (byte `k + 1`) of `d`
/// as `10a + b` in byte `k`.
#[inline(always)]
fn pairs(d: u64) -> u64 {
    d.wrapping_mul(10).wrapping_add(d >> 8)
}

/// The date, hour and minute (`YYYY-MM-DDTHH:MM:`, 17 bytes) of the last
/// `YYYY-MM-DDTHH:MM:SS.mmmZ` timestamp [`Timestamp::parse_ms_utc`] parsed
/// whole, with its seconds since the epoch at second `00`. Consecutive
/// events of a stream mostly share them.
#[derive(Clone, Debug, Default)]
pub(crate) struct LastMinute {
    minute: Option<([u8; 17], i64)>,
}

/// The second (`0..=59`) and milliseconds of `SS.mmmZ` (or `z`), as
/// [`parse_rfc3339`] reads them; `None` for any other 7 bytes.
#[inline]
fn ms_utc_tail(t: &[u8]) -> Option<(u32, u32)> {
    let &[s1, s2, b'.', m1, m2, m3, b'Z' | b'z'] = t else {
        return None;
    };
    let d = |c: u8| {
        let v = c.wrapping_sub(b'0');
        (v < 10).then_some(u32::from(v))
    };
    let second = d(s1)? * 10 + d(s2)?;
    if second > 59 {
        return None;
    }
    Some((second, d(m1)? * 100 + d(m2)? * 10 + d(m3)?))
}

fn parse_rfc3339(b: &[u8]) -> Option<(i64, u32)> {
    // `YYYY-MM-DDTHH:MM:SS` is fixed-width: read it as three words (the
    // last overlapping the second), checked and converted a word at a time
    // (this runs once per event).
    const W0: (u64, u64, u64, u64) = word_pattern(b"DDDD-DD-");
    const W1: (u64, u64, u64, u64) = word_pattern(b"DDTDD:DD");
    const W2: (u64, u64, u64, u64) = word_pattern(b"DD:DD:DD");
    let p: &[u8; 19] = b.get(..19)?.try_into().ok()?;
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&p[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let x0 = word(0);
    let x1 = word(8);
    let x2 = word(11);
    if !(fits(x0, W0) & fits(x1, W1) & fits(x2, W2)) {
        return None;
    }
    // The digit values, the other bytes zeroed, paired.
    let values =
        |x: u64, w: (u64, u64, u64, u64)| pairs(x.wrapping_sub(w.1 & w.3) & (w.3 | (w.3 >> 4)));
    let (p0, p1, p2) = (values(x0, W0), values(x1, W1), values(x2, W2));
    let byte = |x: u64, k: u32| (x >> (8 * k)) as u32 & 0xff;
    let year = i64::from(byte(p0, 0) * 100 + byte(p0, 2));
    let month = byte(p0, 5);
    let day = byte(p1, 0);
    let hour = byte(p1, 3);
    let minute = byte(p1, 6);
    let second = byte(p2, 6);
    if !fields_in_range(year, month, day, hour, minute, second) {
        return None;
    }
    let mut i = 19;
    let mut nanos = 0u32;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while let Some(&c @ b'0'..=b'9') = b.get(i) {
            if i - start < 9 {
                nanos = nanos * 10 + u32::from(c - b'0');
            }
            i += 1;
        }
        let n = i - start;
        if n == 0 {
            return None;
        }
        if n < 9 {
            nanos *= POW10[9 - n];
        }
    }
    let offset_secs = zone_offset(b, i)?;
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second) - offset_secs;
    Some((secs, nanos))
}

/// The zone that ends an RFC 3339 timestamp, at `b[i..]`: `Z` (or `z`) or
/// `+HH:MM`/`-HH:MM` (hours at most 23, minutes at most 59), and nothing
/// after it. Its offset from UTC in seconds; `None` for anything else.
#[inline]
fn zone_offset(b: &[u8], i: usize) -> Option<i64> {
    let (offset_secs, end) = match b.get(i)? {
        b'Z' | b'z' => (0, i + 1),
        sign @ (b'+' | b'-') => {
            let oh = digits(b, i + 1, 2)?;
            if b.get(i + 3) != Some(&b':') {
                return None;
            }
            let om = digits(b, i + 4, 2)?;
            if oh > 23 || om > 59 {
                return None;
            }
            let v = i64::from(oh * 3600 + om * 60);
            (if *sign == b'-' { -v } else { v }, i + 6)
        }
        _ => return None,
    };
    (end == b.len()).then_some(offset_secs)
}

/// Whether a date and time name one: month 1 to 12, a day the month has
/// (leap years included), hour 0 to 23, minute and second 0 to 59 (RFC
/// 3339's leap second 60 is not taken).
#[inline]
fn fields_in_range(year: i64, month: u32, day: u32, hour: u32, minute: u32, second: u32) -> bool {
    (1..=12).contains(&month)
        && day != 0
        && day <= days_in_month(year, month)
        && hour <= 23
        && minute <= 59
        && second <= 59
}

const POW10: [u32; 10] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use proptest::prelude::*;

    use super::*;

    /// A reference oracle: the date and time read field by field and the
    /// fraction read as text, apart from the parser on purpose, so the
    /// properties compare the fast parser's word-at-a-time reading and its
    /// digit arithmetic with code they do not share. The range check and
    /// the zone are the parser's own (`fields_in_range`, `zone_offset`):
    /// the explicit cases below hold those to known values.
    fn parse_rfc3339_reference(b: &[u8]) -> Option<(i64, u32)> {
        let year = i64::from(digits(b, 0, 4)?);
        if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
            return None;
        }
        let month = digits(b, 5, 2)?;
        let day = digits(b, 8, 2)?;
        if !matches!(b.get(10), Some(b'T' | b't')) {
            return None;
        }
        let hour = digits(b, 11, 2)?;
        if b.get(13) != Some(&b':') || b.get(16) != Some(&b':') {
            return None;
        }
        let minute = digits(b, 14, 2)?;
        let second = digits(b, 17, 2)?;
        if !fields_in_range(year, month, day, hour, minute, second) {
            return None;
        }
        // The fraction, read as text: its first nine digits, padded with
        // zeros on the right, are the nanoseconds.
        let fraction = match b.get(19) {
            Some(b'.') => b.get(20..)?,
            _ => &[],
        };
        let n = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if b.get(19) == Some(&b'.') && n == 0 {
            return None;
        }
        let mut nine = *b"000000000";
        let kept = n.min(9);
        nine[..kept].copy_from_slice(&fraction[..kept]);
        let nanos: u32 = std::str::from_utf8(&nine).ok()?.parse().ok()?;
        let i = if n == 0 { 19 } else { 20 + n };
        let offset_secs = zone_offset(b, i)?;
        let days = days_from_civil(year, month, day);
        let secs = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second) - offset_secs;
        Some((secs, nanos))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn parse_matches_the_reference(
            secs in -62_135_596_800i64..253_402_300_799,
            nanos in 0u32..1_000_000_000,
            edits in proptest::collection::vec((any::<usize>(), 0..3u8, prop::sample::select(vec![
                b'0', b'1', b'2', b'3', b'5', b'9', b'-', b':', b'.', b'T', b't', b'Z', b'z', b'+',
                b' ', b'/', b'a', 0xff, b'?', b'@', 0x3a, 0x3c, 0x30 | 0x80, 0xf9, 0xfa, 0x54 | 0x80,
                0x0d, b'm',
            ])), 0..3),
            digits_kept in 0usize..12,
        ) {
            let t = Timestamp::from_unix(secs, nanos).unwrap();
            let mut text = t.as_str().as_bytes().to_vec();
            // vary the fraction's length
            if let Some(dot) = text.iter().position(|&c| c == b'.') {
                let end = text.len() - 1;
                let keep = (dot + 1 + digits_kept).min(end);
                text.splice(keep..end, std::iter::repeat_n(b'7', digits_kept.saturating_sub(end - dot - 1)));
            }
            crate::test_util::apply_edits(&mut text, edits);
            prop_assert_eq!(parse_rfc3339(&text), parse_rfc3339_reference(&text));
        }
    }

    #[test]
    fn parses_utc_and_offsets() {
        let t = Timestamp::parse("2026-08-17T00:00:00Z").unwrap();
        assert_eq!(t.unix_seconds(), 1_786_924_800);
        assert_eq!(t.unix_seconds_f64(), 1_786_924_800.0);
        let t = Timestamp::parse("2026-08-17T02:00:00.123456789+02:00").unwrap();
        assert_eq!(t.unix_seconds(), 1_786_924_800);
        assert_eq!(t.subsec_nanos(), 123_456_789);
        assert_eq!(t.unix_millis(), 1_786_924_800_123);
        assert_eq!(t.unix_seconds_f64(), 1_786_924_800.123_456);
        let t = Timestamp::parse("1969-12-31T23:59:59.5Z").unwrap();
        assert_eq!((t.unix_seconds(), t.subsec_nanos()), (-1, 500_000_000));
        assert_eq!(t.unix_millis(), -500);
    }

    /// Instants of every kind of date: January and February (counted in
    /// the year before by the day arithmetic), leap days, century years,
    /// before 1970; checked against Python's `datetime`.
    #[test]
    fn dates_are_the_instants_they_name() {
        for (text, millis) in [
            ("2024-02-29T00:00:00Z", 1_709_164_800_000),
            ("2000-01-01T00:00:00Z", 946_684_800_000),
            ("2026-01-31T23:59:59Z", 1_769_903_999_000),
            ("1600-02-01T00:00:00Z", -11_673_417_600_000),
            ("2100-03-01T00:00:00Z", 4_107_542_400_000),
            ("1970-01-01T00:00:00Z", 0),
            ("1970-01-01T23:59:00+23:59", 0),
            ("1970-01-01T00:00:00-23:59", 86_340_000),
        ] {
            assert_eq!(
                Timestamp::parse(text).unwrap().unix_millis(),
                millis,
                "{text}"
            );
        }
    }

    #[test]
    fn text_is_kept_exactly_inline_or_not() {
        // 20 to 40 bytes: across the inline bound (30) both ways.
        for digits in 0..=14usize {
            for zone in ["Z", "+02:00"] {
                let frac = if digits == 0 {
                    String::new()
                } else {
                    format!(".{}", "1234567890123456"[..digits].to_owned())
                };
                let text = format!("2026-08-17T09:00:00{frac}{zone}");
                let t = Timestamp::parse(&text).unwrap();
                assert_eq!(t.as_str(), text);
                assert_eq!(t.text_len(), text.len());
                assert_eq!(t.to_string(), text);
                assert_eq!(serde_json::to_string(&t).unwrap(), format!("\"{text}\""));
                let copy = t.clone();
                assert_eq!(copy, t);
                assert_eq!(copy.as_str(), text);
                assert_eq!(Timestamp::parse(&text).unwrap(), t);
                assert_eq!(Timestamp::parse_ascii(text.as_bytes()), Some(t.clone()));
            }
        }
        let a = Timestamp::parse("2026-08-17T09:00:00Z").unwrap();
        let b = Timestamp::parse("2026-08-17T09:00:00.000Z").unwrap();
        // Same instant, other text: not equal (the text is part of it).
        assert_eq!(a.unix_millis(), b.unix_millis());
        assert_ne!(a, b);
    }

    proptest! {
        /// Whatever the remembered minute, `parse_ms_utc` gives what
        /// `parse_ascii` gives: for valid 24-byte timestamps in and across
        /// minutes, and for every byte of them changed to anything.
        #[test]
        fn parse_ms_utc_is_parse_ascii(
            steps in proptest::collection::vec(
                (
                    0usize..4,
                    prop_oneof![0u32..62, 55u32..62],
                    prop_oneof![0u32..1000, 0u32..10],
                    0usize..24,
                    any::<u8>(),
                    any::<bool>(),
                ),
                1..24,
            ),
        ) {
            let minutes = [
                "2026-08-17T09:00:", "2026-08-17T09:01:", "2024-02-29T23:59:",
                "2026-02-29T00:00:",
            ];
            let mut last = LastMinute::default();
            for (m, second, millis, at, byte, mutate) in steps {
                let text = format!("{}{second:02}.{millis:03}Z", minutes[m]);
                let mut b: [u8; 24] = text.as_bytes().try_into().unwrap();
                if mutate {
                    b[at] = byte;
                }
                prop_assert_eq!(
                    Timestamp::parse_ms_utc(&b, &mut last),
                    Timestamp::parse_ascii(&b),
                    "{:?}", String::from_utf8_lossy(&b)
                );
            }
        }
    }

    #[test]
    fn parse_ms_utc_reuses_the_minute_only_when_its_bytes_match() {
        let mut last = LastMinute::default();
        let first = Timestamp::parse_ms_utc(b"2026-08-17T09:00:59.999Z", &mut last).unwrap();
        assert!(last.minute.is_some());
        let next = Timestamp::parse_ms_utc(b"2026-08-17T09:00:00.001z", &mut last).unwrap();
        assert_eq!(next.unix_millis(), first.unix_millis() - 59_998);
        assert_eq!(next.as_str(), "2026-08-17T09:00:00.001z");
        // Same minute bytes, seconds out of range or not a millisecond tail:
        // parsed whole, and refused like `parse_ascii` refuses them.
        for bad in [
            b"2026-08-17T09:00:60.000Z",
            b"2026-08-17T09:00:0a.000Z",
            b"2026-08-17T09:00:00.12Zx",
        ] {
            assert_eq!(Timestamp::parse_ms_utc(bad, &mut last), None);
        }
        // A new minute is parsed whole and remembered.
        let other = Timestamp::parse_ms_utc(b"2026-08-17T10:00:00.000Z", &mut last).unwrap();
        assert_eq!(
            other.unix_millis(),
            first.unix_millis() + 3_600_001 - 60_000
        );
        // The remembered minute is what is read: a planted base shows
        // through (the prefix is compared, not parsed again).
        let mut planted = LastMinute {
            minute: Some((*b"2026-08-17T09:00:", 1_000)),
        };
        let t = Timestamp::parse_ms_utc(b"2026-08-17T09:00:07.250Z", &mut planted).unwrap();
        assert_eq!(t.unix_millis(), 1_007_250);
    }

    #[test]
    fn rejects_non_rfc3339() {
        for bad in [
            "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z",
            "2026-01-00T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-08-17T00:60:00Z",
            "2026-08-17T00:00:60Z",
            "2026-08-17T00:00:00+00:60",
            "2026-08-17T00:00:00+24:00",
            "2026-08-17T00:00:00",
            "2026-08-17 00:00:00Z",
            "2026-08-17T24:00:00Z",
            "2026-08-17T00:00:00.Z",
            "2026-08-17T00:00:00+0200",
            "2026-08-17T00:00:00Zjunk",
            "",
            "２０２６-08-17T00:00:00Z",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad}");
        }
        assert!(Timestamp::parse("2024-02-29T00:00:00Z").is_ok());
    }

    #[test]
    fn from_unix_round_trips() {
        let t = Timestamp::from_unix(1_786_924_800, 500_000_000).unwrap();
        assert_eq!(t.as_str(), "2026-08-17T00:00:00.5Z");
        assert_eq!(Timestamp::parse(t.as_str()).unwrap(), t);
    }
}
