//! Time as the pod printer reads and prints it: Kubernetes' RFC 3339 timestamps in, ages
//! out the way kubectl prints them (apimachinery's `duration.HumanDuration`).
//!
//! Pure arithmetic: the caller passes "now" (the gateway's clock, or WASI's in a plugin),
//! so this crate reads no clock and tests pin every age.

/// Seconds since the Unix epoch of an RFC 3339 timestamp as Kubernetes writes them
/// (`2024-05-01T12:00:00Z`, fractions and offsets accepted).
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    // Skip a fraction, then read the zone: Z or ±hh:mm.
    let mut rest = &text[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        rest = frac.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let offset = match rest {
        "Z" | "z" => 0,
        zone if zone.len() == 6 => {
            let sign = match &zone[..1] {
                "+" => 1,
                "-" => -1,
                _ => return None,
            };
            let h: i64 = zone[1..3].parse().ok()?;
            let m: i64 = zone[4..6].parse().ok()?;
            sign * (h * 3600 + m * 60)
        }
        _ => return None,
    };
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// An age the way kubectl prints it (apimachinery's `duration.HumanDuration`: `45s`,
/// `5m3s`, `3h`, `2d5h`, `1y20d`): precise when young, coarser as it grows. One second
/// in the future still reads `0s`, to forgive clocks a little apart; more is `<invalid>`.
pub fn human_age(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_timestamp("2024-03-01T00:00:00Z"), Some(1_709_251_200));
        assert_eq!(
            parse_timestamp("2024-03-01T01:00:00+01:00"),
            Some(1_709_251_200)
        );
        assert_eq!(
            parse_timestamp("2024-03-01T00:00:00.123Z"),
            Some(1_709_251_200)
        );
        assert_eq!(parse_timestamp("yesterday"), None);
    }

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        for (s, want) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (5, "5s"),
            (45, "45s"),
            (119, "119s"),
            (300, "5m"),
            (303, "5m3s"),
            (330, "5m30s"),
            (600, "10m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60, "3h1m"),
            (3 * 3600 + 600, "3h10m"),
            (30 * 3600, "30h"),
            (2 * 86_400, "2d"),
            (2 * 86_400 + 5 * 3600, "2d5h"),
            (20 * 86_400, "20d"),
            (800 * 86_400, "2y70d"),
            (3 * 365 * 86_400 + 86_400, "3y1d"),
            (9 * 365 * 86_400, "9y"),
        ] {
            assert_eq!(human_age(s), want, "{s}");
        }
    }
}
