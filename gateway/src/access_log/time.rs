//! A line's time, written without a time library or an allocation: RFC 3339 in UTC with
//! milliseconds (`2026-12-02T07:58:37.123Z`, JSON and templates) and nginx's
//! `$time_local` (`02/Dec/2026:07:58:37 +0000`, `combined`; leafgate writes UTC).

use std::cell::Cell;
use std::time::{SystemTime, UNIX_EPOCH};

/// `t` as [`Civil::rfc3339`] writes it, the calendar worked out once a second on each
/// thread: a line's time is mostly the second the thread's last line had, and then only
/// its milliseconds are written anew.
pub fn rfc3339(t: SystemTime) -> [u8; 24] {
    thread_local! {
        /// The second last written (`u64::MAX`: none yet) and its text.
        static LAST: Cell<(u64, [u8; 24])> = const { Cell::new((u64::MAX, [0; 24])) };
    }
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    LAST.with(|last| {
        let (second, mut text) = last.get();
        if second == secs {
            digits(&mut text[20..23], since.subsec_millis());
            return text;
        }
        let text = Civil::of(t).rfc3339();
        last.set((secs, text));
        text
    })
}

/// A time split into its calendar parts, in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millis: u32,
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

impl Civil {
    /// `t` in UTC (a time before 1970 is written as 1970's start).
    pub fn of(t: SystemTime) -> Civil {
        let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = i64::try_from(since.as_secs()).unwrap_or(i64::MAX);
        let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        let (year, month, day) = civil_from_days(days);
        let rest = u32::try_from(rest).unwrap_or(0);
        Civil {
            year,
            month,
            day,
            hour: rest / 3600,
            minute: rest / 60 % 60,
            second: rest % 60,
            millis: since.subsec_millis(),
        }
    }

    /// `2026-12-02T07:58:37.123Z` (a year past 9999 is written as 9999).
    pub fn rfc3339(&self) -> [u8; 24] {
        let mut t = *b"0000-00-00T00:00:00.000Z";
        digits(&mut t[0..4], self.year.clamp(0, 9999) as u32);
        digits(&mut t[5..7], self.month);
        digits(&mut t[8..10], self.day);
        digits(&mut t[11..13], self.hour);
        digits(&mut t[14..16], self.minute);
        digits(&mut t[17..19], self.second);
        digits(&mut t[20..23], self.millis);
        t
    }

    /// nginx's `$time_local` in UTC: `02/Dec/2026:07:58:37 +0000`.
    pub fn nginx_local(&self) -> [u8; 26] {
        let mut t = *b"00/Mon/0000:00:00:00 +0000";
        digits(&mut t[0..2], self.day);
        let month = MONTHS[(self.month as usize).saturating_sub(1) % 12];
        t[3..6].copy_from_slice(month.as_bytes());
        digits(&mut t[7..11], self.year.clamp(0, 9999) as u32);
        digits(&mut t[12..14], self.hour);
        digits(&mut t[15..17], self.minute);
        digits(&mut t[18..20], self.second);
        t
    }
}

/// Writes `n`'s last `to.len()` decimal digits into `to`, zero-padded.
fn digits(to: &mut [u8], mut n: u32) {
    for d in to.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, from his paper on date algorithms).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let month = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::{Civil, rfc3339};

    fn both(secs: u64, millis: u64) -> (String, String) {
        let c = Civil::of(UNIX_EPOCH + Duration::from_millis(secs * 1000 + millis));
        (
            String::from_utf8(c.rfc3339().to_vec()).unwrap(),
            String::from_utf8(c.nginx_local().to_vec()).unwrap(),
        )
    }

    #[test]
    fn times_read_as_rfc3339_and_as_nginx_writes_them() {
        assert_eq!(
            both(0, 0),
            (
                "1970-01-01T00:00:00.000Z".into(),
                "01/Jan/1970:00:00:00 +0000".into()
            )
        );
        // `date -u -d @1796198317`: Wed Dec  2 07:58:37 UTC 2026.
        assert_eq!(
            both(1_796_198_317, 123),
            (
                "2026-12-02T07:58:37.123Z".into(),
                "02/Dec/2026:07:58:37 +0000".into()
            )
        );
        // A leap day, and the last second of a year.
        assert_eq!(both(951_782_400, 5).0, "2000-02-29T00:00:00.005Z");
        assert_eq!(both(1_704_067_199, 999).0, "2023-12-31T23:59:59.999Z");
    }

    #[test]
    fn the_second_kept_from_the_last_line_writes_as_the_calendar_does() {
        // Within one second, across a second, a day, back in time, and before 1970.
        let at = |ms: i64| {
            let t = if ms >= 0 {
                UNIX_EPOCH + Duration::from_millis(ms as u64)
            } else {
                UNIX_EPOCH - Duration::from_millis(ms.unsigned_abs())
            };
            (rfc3339(t), Civil::of(t).rfc3339())
        };
        for ms in [
            1_796_198_317_123,
            1_796_198_317_999,
            1_796_198_318_000,
            1_796_198_318_001,
            1_796_256_000_000,
            1_796_198_317_500,
            -5,
            0,
            1,
        ] {
            let (kept, worked_out) = at(ms);
            assert_eq!(kept, worked_out, "{ms}");
        }
    }
}
