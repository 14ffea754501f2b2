//! How often a job runs: a spec's `schedule` (a period such as "1m", or a cron expression such as
//! "0 3 * * *") or its `runs_per_year`, turned into the runs a year that every yearly figure
//! (double executions a year, the price of today's TTL) multiplies by. A spec that says neither is
//! assumed monthly, and says so.

use std::time::Duration;

use lockbench_core::records::ttl::RunsPerYearFrom;

/// Seconds in the 365-day year every yearly figure counts in.
pub const YEAR_S: f64 = 365.0 * 86_400.0;

/// Runs a year assumed when the spec gives no schedule.
pub const ASSUMED_RUNS_PER_YEAR: f64 = 12.0;

/// The shortest period a schedule may have.
const MIN_PERIOD: Duration = Duration::from_secs(1);

/// How often the job runs, with where that figure comes from.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Frequency {
    /// Runs in a 365-day year.
    pub runs_per_year: f64,
    /// Where the figure comes from, as the results record it.
    pub from: RunsPerYearFrom,
}

impl Frequency {
    /// The frequency when nothing says: monthly, recorded as an assumption.
    pub fn assumed() -> Self {
        Frequency {
            runs_per_year: ASSUMED_RUNS_PER_YEAR,
            from: RunsPerYearFrom::Assumed,
        }
    }

    /// The frequency a spec's `[workload]` gives by its `schedule` or its `runs_per_year`
    /// (assumed monthly with neither); an error names the field and what was expected.
    pub fn of_workload(
        schedule: Option<&str>,
        runs: Option<f64>,
    ) -> Result<Self, (String, String)> {
        match (schedule, runs) {
            (Some(_), Some(_)) => Err((
                "workload.runs_per_year".into(),
                "expected either schedule or runs_per_year, not both: the schedule already says how often the job runs".into(),
            )),
            (Some(text), None) => Ok(Frequency {
                runs_per_year: runs_per_year(text).map_err(|m| ("workload.schedule".into(), m))?,
                from: RunsPerYearFrom::Schedule {
                    schedule: text.trim().to_string(),
                },
            }),
            (None, Some(n)) => Ok(Frequency {
                runs_per_year: checked(n).map_err(|m| ("workload.runs_per_year".into(), m))?,
                from: RunsPerYearFrom::Spec,
            }),
            (None, None) => Ok(Frequency::assumed()),
        }
    }
}

/// The frequency `--runs-per-year N` gives, checked as the spec's `runs_per_year` is.
impl Frequency {
    /// `n` runs a year from the flag; an error says what was expected.
    pub fn of_flag(n: f64) -> Result<Self, String> {
        Ok(Frequency {
            runs_per_year: checked(n)?,
            from: RunsPerYearFrom::Flag,
        })
    }
}

/// A number of runs a year, above 0 and at most one a second.
fn checked(n: f64) -> Result<f64, String> {
    if n.is_finite() && n > 0.0 && n <= YEAR_S {
        Ok(n)
    } else {
        Err(format!(
            "expected a number of runs a year above 0 and at most one a second, got {n}"
        ))
    }
}

/// Runs a year of a schedule: a period with a unit ("1m", "24h") or a five-field cron expression
/// ("*/5 * * * *", "0 3 * * *", "@daily"), counted over a 365-day year.
pub fn runs_per_year(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let expected = "expected a period with a unit such as \"1m\" or \"24h\", or a cron expression of five fields such as \"0 3 * * *\" or \"@daily\"";
    if text.is_empty() {
        return Err(format!("{expected}, got an empty string"));
    }
    if text.starts_with('@') || text.split_whitespace().count() == 5 {
        return Cron::parse(text)
            .map(|c| c.runs_per_year() as f64)
            .map_err(|why| format!("{expected}: \"{text}\": {why}"));
    }
    let period = crate::duration::parse(text).map_err(|_| format!("{expected}, got \"{text}\""))?;
    if period < MIN_PERIOD || period.as_secs_f64() > 10.0 * YEAR_S {
        return Err(format!(
            "expected a period from 1s to ten years, got \"{text}\""
        ));
    }
    Ok(YEAR_S / period.as_secs_f64())
}

/// A parsed five-field cron expression: minute, hour, day of month, month, day of week.
struct Cron {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// The day-of-month field is `*` (so only the weekday restricts the day), and likewise.
    any_day: bool,
    any_weekday: bool,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const MONTH_DAYS: [u32; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

impl Cron {
    fn parse(text: &str) -> Result<Cron, String> {
        let expanded = match text.to_ascii_lowercase().as_str() {
            "@yearly" | "@annually" => "0 0 1 1 *".to_string(),
            "@monthly" => "0 0 1 * *".to_string(),
            "@weekly" => "0 0 * * 0".to_string(),
            "@daily" | "@midnight" => "0 0 * * *".to_string(),
            "@hourly" => "0 * * * *".to_string(),
            t if t.starts_with('@') => {
                return Err("not one of @yearly, @monthly, @weekly, @daily, @hourly".to_string());
            }
            t => t.to_string(),
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!("{} fields, expected five", fields.len()));
        }
        let weekdays = field(fields[4], "day of week", 0, 7, &WEEKDAYS)?;
        // 7 is Sunday too.
        let weekdays = (weekdays | (weekdays >> 7)) & 0x7f;
        Ok(Cron {
            minutes: field(fields[0], "minute", 0, 59, &[])?,
            hours: field(fields[1], "hour", 0, 23, &[])?,
            days: field(fields[2], "day of month", 1, 31, &[])?,
            months: field(fields[3], "month", 1, 12, &MONTHS)?,
            weekdays,
            any_day: fields[2] == "*",
            any_weekday: fields[4] == "*",
        })
    }

    /// Runs in a 365-day year that starts on a Thursday (as 2026 does).
    fn runs_per_year(&self) -> u64 {
        let per_day = u64::from(self.minutes.count_ones()) * u64::from(self.hours.count_ones());
        let mut weekday = 4; // Thursday, 1 January
        let mut days = 0;
        for (m, &length) in MONTH_DAYS.iter().enumerate() {
            for day in 1..=length {
                let by_day = self.days & (1 << day) != 0;
                let by_weekday = self.weekdays & (1 << weekday) != 0;
                // Cron's rule: with both fields restricted, either one matching is enough.
                let runs = match (self.any_day, self.any_weekday) {
                    (true, true) => true,
                    (false, true) => by_day,
                    (true, false) => by_weekday,
                    (false, false) => by_day || by_weekday,
                };
                if self.months & (1 << (m + 1)) != 0 && runs {
                    days += 1;
                }
                weekday = (weekday + 1) % 7;
            }
        }
        days * per_day
    }
}

/// One cron field as a bit set of the values it matches: `*`, `5`, `1-5`, `*/15`, `1-30/2`, lists
/// of those, and three-letter names where `names` has them.
fn field(text: &str, what: &str, min: u32, max: u32, names: &[&str]) -> Result<u64, String> {
    let value = |t: &str| -> Result<u32, String> {
        if let Some(i) = names.iter().position(|n| t.eq_ignore_ascii_case(n)) {
            return Ok(i as u32 + min);
        }
        let v: u32 = t
            .parse()
            .map_err(|_| format!("{what} \"{t}\" is not a number"))?;
        if !(min..=max).contains(&v) {
            return Err(format!("{what} {v} is outside {min}-{max}"));
        }
        Ok(v)
    };
    let mut set = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => {
                let step: u32 =
                    s.parse().ok().filter(|s| *s > 0).ok_or_else(|| {
                        format!("{what} step \"{s}\" is not a whole number above 0")
                    })?;
                (r, step)
            }
            None => (part, 1),
        };
        let (low, high) = if range == "*" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a)?, value(b)?)
        } else {
            let v = value(range)?;
            // "5/15" runs from 5 to the end, as cron reads it.
            (v, if step > 1 { max } else { v })
        };
        if low > high {
            return Err(format!("{what} range {low}-{high} runs backwards"));
        }
        for v in (low..=high).step_by(step as usize) {
            set |= 1 << v;
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_divides_the_year() {
        assert_eq!(runs_per_year("1m").unwrap(), 525_600.0);
        assert_eq!(runs_per_year("24h").unwrap(), 365.0);
        assert_eq!(runs_per_year("1d").unwrap(), 365.0);
    }

    #[test]
    fn cron_expressions_are_counted_over_a_year() {
        assert_eq!(runs_per_year("* * * * *").unwrap(), 525_600.0);
        assert_eq!(runs_per_year("*/5 * * * *").unwrap(), 105_120.0);
        assert_eq!(runs_per_year("0 3 * * *").unwrap(), 365.0);
        assert_eq!(runs_per_year("@daily").unwrap(), 365.0);
        assert_eq!(runs_per_year("@hourly").unwrap(), 8_760.0);
        assert_eq!(runs_per_year("@weekly").unwrap(), 52.0);
        // Counts checked against Python's croniter over 2026 (which starts on a Thursday).
        assert_eq!(runs_per_year("5/15 * * * *").unwrap(), 35_040.0);
        assert_eq!(runs_per_year("0 0 1-10/3 * *").unwrap(), 48.0);
        assert_eq!(runs_per_year("0 2 1 * *").unwrap(), 12.0);
        assert_eq!(runs_per_year("@monthly").unwrap(), 12.0);
        assert_eq!(runs_per_year("0 0 1 jan *").unwrap(), 1.0);
        // A year starting on a Thursday has 52 Sundays and 52 Mondays to Fridays, 53 Thursdays.
        assert_eq!(runs_per_year("0 0 * * 0").unwrap(), 52.0);
        assert_eq!(runs_per_year("0 0 * * 7").unwrap(), 52.0);
        assert_eq!(runs_per_year("0 0 * * thu").unwrap(), 53.0);
        assert_eq!(runs_per_year("0 9 * * 1-5").unwrap(), 261.0);
        // Day of month and weekday both restricted: either matches.
        assert_eq!(runs_per_year("0 0 1 * 4").unwrap(), 12.0 + 53.0 - 2.0);
    }

    #[test]
    fn nonsense_is_refused_with_what_was_expected() {
        for bad in [
            "",
            "soon",
            "0s",
            "61 * * * *",
            "* * * *",
            "@fortnightly",
            "5-1 * * * *",
        ] {
            let e = runs_per_year(bad).unwrap_err();
            assert!(e.contains("expected"), "{bad}: {e}");
        }
        assert!(
            runs_per_year("61 * * * *")
                .unwrap_err()
                .contains("minute 61")
        );
    }
}
