//! How durations and counts are printed for people. Machine-readable output uses plain numbers
//! with the unit in the field name instead.

use std::time::Duration;

/// Prints a duration with a unit fitted to its size: `850 us`, `12.3 ms`, `241.7 s`, `3h 45m 37s`.
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 1e-3 {
        format!("{:.0} us", secs * 1e6)
    } else if secs < 1.0 {
        format!("{:.1} ms", secs * 1e3)
    } else if secs < 3600.0 {
        format!("{secs:.1} s")
    } else {
        format_hms(d)
    }
}

/// [`format_duration`] of a number of seconds; a negative number prints as zero.
pub fn format_duration_s(seconds: f64) -> String {
    format_duration(Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or(Duration::MAX))
}

/// Prints whole hours, minutes and seconds: `3h 45m 37s`, `26m 19s`, `42s`.
pub fn format_hms(d: Duration) -> String {
    let total = d.as_secs_f64().round() as u64;
    let (h, m, s) = (total / 3600, (total % 3600) / 60, total % 60);
    if h > 0 {
        format!("{h}h {m:02}m {s:02}s")
    } else if m > 0 {
        format!("{m}m {s:02}s")
    } else {
        format!("{s}s")
    }
}

/// Prints seconds with one decimal and thousands separators: `4,512.3 s`.
pub fn format_seconds(d: Duration) -> String {
    let tenths = (d.as_secs_f64() * 10.0).round() as u64;
    format!("{}.{} s", format_count(tenths / 10), tenths % 10)
}

/// Prints a chance: `0`, `1.2 %` from one in a hundred, `4.87e-5` below.
pub fn format_chance(p: f64) -> String {
    if p == 0.0 {
        "0".to_string()
    } else if p >= 0.01 {
        format!("{:.1} %", p * 100.0)
    } else {
        format!("{p:.2e}")
    }
}

/// Prints a count with thousands separators: `1,800`.
pub fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(format_duration(Duration::from_micros(850)), "850 us");
        assert_eq!(format_duration(Duration::from_micros(12_340)), "12.3 ms");
        assert_eq!(format_duration(Duration::from_millis(241_700)), "241.7 s");
        assert_eq!(format_duration(Duration::from_secs(13_537)), "3h 45m 37s");
        assert_eq!(format_hms(Duration::from_secs(1_579)), "26m 19s");
        assert_eq!(format_hms(Duration::from_secs(42)), "42s");
    }

    #[test]
    fn counts_and_seconds_get_separators() {
        assert_eq!(format_count(0), "0");
        assert_eq!(format_count(999), "999");
        assert_eq!(format_count(1_800), "1,800");
        assert_eq!(format_count(1_000_000), "1,000,000");
        assert_eq!(
            format_seconds(Duration::from_millis(4_512_340)),
            "4,512.3 s"
        );
    }
}
