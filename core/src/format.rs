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

/// Prints a duration in the unit that fits its size, with three significant figures: `0.30 us`,
/// `850 us`, `12.3 ms`, `1.54 s`, `423 s`, `44.3 min`, `3.50 h`. Seconds run to 999 s, minutes to
/// 99.9 min; no figure needs more than three digits before its decimal point.
pub fn format_readable(d: Duration) -> String {
    let secs = d.as_secs_f64();
    let (value, unit) = if secs < 999.5e-6 {
        (secs * 1e6, "us")
    } else if secs < 0.9995 {
        (secs * 1e3, "ms")
    } else if secs < 999.5 {
        (secs, "s")
    } else if secs < 5997.0 {
        (secs / 60.0, "min")
    } else {
        (secs / 3600.0, "h")
    };
    format!("{} {unit}", three_figures(value))
}

/// [`format_readable`] of a number of seconds; a negative number prints as zero.
pub fn format_readable_s(seconds: f64) -> String {
    format_readable(Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or(Duration::MAX))
}

/// [`format_readable`] of a number of microseconds; a negative number prints as zero.
pub fn format_readable_us(us: f64) -> String {
    format_readable_s(us / 1e6)
}

/// A latency percentile `q` in microseconds where `count` samples support it (one beyond it: 100
/// for P99, 1,000 for P99.9), else the largest with its count: "421 us", "max of 153: 2.10 ms".
pub fn format_tail_us(q: f64, value_us: f64, count: u64, max_us: f64) -> String {
    if crate::stats::percentile_supported(q, count) {
        format_readable_us(value_us)
    } else {
        format!(
            "max of {}: {}",
            format_count(count),
            format_readable_us(max_us)
        )
    }
}

/// A number with three significant figures (at least the whole part): `0.300`, `12.3`, `850`,
/// `12,605`.
fn three_figures(v: f64) -> String {
    if v >= 999.5 {
        format_count(v.round() as u64)
    } else if v >= 99.95 {
        format!("{v:.0}")
    } else if v >= 9.995 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
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

/// A runtime in a table column: seconds with separators from a second up (`4,452.3 s`), so that
/// a column compares at a glance instead of mixing `2368.7 s` and `1h 14m 12s`; below a second,
/// [`format_duration`].
pub fn format_column(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format_seconds(d)
    } else {
        format_duration(d)
    }
}

/// A long duration in seconds (what a config file takes) and in hours and minutes (what a
/// person grasps): `1,578.8 s (26m 19s)`; under a minute, [`format_duration`].
pub fn format_long(d: Duration) -> String {
    if d >= Duration::from_secs(60) {
        format!("{} ({})", format_seconds(d), format_hms(d))
    } else {
        format_duration(d)
    }
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

/// A chance as a percentage with two decimals ("99.85 %", "0.15 %"), or as a plain number below
/// 0.01 % ("1.50e-5"), where a percentage would read as zero.
pub fn format_percent(p: f64) -> String {
    if p == 0.0 || p >= 1e-4 {
        format!("{:.2} %", p * 100.0)
    } else {
        format!("{p:.2e}")
    }
}

/// The UTC calendar date of a Unix time: `2026-12-01`.
pub fn format_date(unix_s: u64) -> String {
    // Howard Hinnant's days-to-civil, for days since 1970-01-01.
    let z = (unix_s / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// A yearly count of events in the figures that fit it: `262` (not `262.3606`), `3.40`, `0.0060`,
/// `3.1e-7` (a count too small for four decimals keeps its two figures).
pub fn format_per_year(x: f64) -> String {
    if x >= 100.0 {
        format_count(x.round() as u64)
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else if x == 0.0 || x >= 1e-3 {
        format!("{x:.4}")
    } else {
        format!("{x:.1e}")
    }
}

/// The years between two events that happen `per_year` times a year: `0.00026` (about two
/// hours), `0.02` (a week), `3.4`, `1,200`, `2.5e9`, and `never` for none at all.
pub fn format_years_between(per_year: f64) -> String {
    if per_year <= 0.0 {
        return "never".to_string();
    }
    let years = 1.0 / per_year;
    if years >= 1e6 {
        format!("{years:.1e}")
    } else if years >= 100.0 {
        format_count(years.round() as u64)
    } else if years >= 1.0 {
        format!("{years:.1}")
    } else if years >= 0.01 {
        format!("{years:.2}")
    } else {
        // Two significant figures: 0.00026 (about two hours), not 0.00.
        let decimals = (-years.log10()).ceil() as usize + 1;
        format!("{years:.decimals$}")
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
    fn years_between_keep_two_figures_below_a_hundredth() {
        assert_eq!(format_years_between(3_776.0), "0.00026");
        assert_eq!(format_years_between(12.0), "0.08");
        assert_eq!(format_years_between(0.3), "3.3");
        assert_eq!(format_years_between(0.0), "never");
    }

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
    fn readable_durations_keep_three_figures_in_a_fitting_unit() {
        let cases = [
            (0.3e-6, "0.30 us"),
            (850e-6, "850 us"),
            (12.34e-3, "12.3 ms"),
            (999.7e-3, "1.00 s"),
            (1.5356, "1.54 s"),
            (86.0, "86.0 s"),
            (423.0, "423 s"),
            (2_656.0, "44.3 min"),
            (4_201.6, "70.0 min"),
            (12_604.9, "3.50 h"),
            (3_600.0 * 5_000.0, "5,000 h"),
        ];
        for (seconds, printed) in cases {
            assert_eq!(format_readable_s(seconds), printed, "{seconds} s");
        }
        assert_eq!(format_readable_us(7_068.0), "7.07 ms");
        assert_eq!(format_readable_s(-1.0), "0.00 us");
    }

    #[test]
    fn columns_keep_seconds_from_a_second_and_long_durations_add_hours() {
        assert_eq!(format_column(Duration::from_millis(4_452_300)), "4,452.3 s");
        assert_eq!(format_column(Duration::from_micros(12_340)), "12.3 ms");
        assert_eq!(
            format_long(Duration::from_millis(1_578_800)),
            "1,578.8 s (26m 19s)"
        );
        assert_eq!(format_long(Duration::from_millis(42_500)), "42.5 s");
    }

    #[test]
    fn dates_are_utc_calendar_days() {
        assert_eq!(format_date(0), "1970-01-01");
        assert_eq!(format_date(951_782_400), "2000-02-29");
        assert_eq!(format_date(1_796_146_356), "2026-12-01");
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
