//! Deterministic clocks: the instant generated runs start at, and RFC 3339
//! timestamps computed from milliseconds without reading any clock.

use std::fmt::Write as _;

/// `2026-08-17T09:00:00.000Z` in milliseconds since the Unix epoch: where the
/// corpus generator's clock and [`RunBuilder`](crate::RunBuilder)'s clock
/// start.
pub const START_MS: i64 = 1_786_957_200_000;

/// `ms` (milliseconds since the Unix epoch, UTC) as RFC 3339 with
/// milliseconds and `Z`, e.g. `2026-08-17T09:00:00.000Z` for [`START_MS`].
///
/// ```
/// use lce_testkit::time::{START_MS, rfc3339_ms};
/// assert_eq!(rfc3339_ms(START_MS + 1), "2026-08-17T09:00:00.001Z");
/// ```
pub fn rfc3339_ms(ms: i64) -> String {
    let mut out = String::with_capacity(24);
    write_rfc3339_ms(&mut out, ms);
    out
}

/// Appends `ms` to `out` as [`rfc3339_ms`] writes it.
pub(crate) fn write_rfc3339_ms(out: &mut String, ms: i64) {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    );
}

/// Year, month (1-12) and day (1-31) of a count of days since 1970-01-01,
/// proleptic Gregorian (Howard Hinnant's `civil_from_days`).
///
/// ```
/// use lce_testkit::time::civil_from_days;
/// assert_eq!(civil_from_days(0), (1970, 1, 1));
/// assert_eq!(civil_from_days(-1), (1969, 12, 31));
/// ```
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_and_day_boundaries() {
        assert_eq!(rfc3339_ms(START_MS), "2026-08-17T09:00:00.000Z");
        assert_eq!(
            rfc3339_ms(START_MS + 15 * 3_600_000 + 1),
            "2026-08-18T00:00:00.001Z"
        );
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
