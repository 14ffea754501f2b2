//! The values of flags, checked where clap parses them (`value_parser` in cli.rs): a number, a
//! duration or a seed, each with its range. A bad one is refused before any command starts, in
//! clap's one line, which names the flag: `invalid value '0' for '--trials <N>': expected 1 to
//! 1000, got 0`. The options' own refusals (src/options/parse.rs) use the same words. A leaf: it
//! imports no module of the binary.

use std::fmt::Display;
use std::ops::RangeInclusive;
use std::str::FromStr;
use std::time::Duration;

/// Most worker threads accepted; more would only add contention on 2-64 core machines.
pub const MAX_THREADS: usize = 1024;
/// Most trials per fault-lab cell: each takes a few TTLs.
pub const MAX_TRIALS: u32 = 1000;
/// The fault lab's TTL range: each trial lasts a few TTLs.
pub const LAB_TTL: RangeInclusive<Duration> = Duration::from_millis(200)..=Duration::from_secs(60);
/// Most contenders in one bench run: each holds a connection or session of its own.
pub const MAX_CONTENDERS: usize = 256;
/// Most workers in one live replay.
pub const MAX_WORKERS: usize = 16;
/// Most live runs in one replay.
pub const MAX_RUNS: u32 = 10_000;
/// Largest volume multiplier accepted.
pub const MAX_SCALE: f64 = 1e6;

/// `text` as a number (underscores allowed, as in `20_000`), or what was expected instead.
pub fn number<T: FromStr>(text: &str, expected: &str) -> Result<T, String> {
    text.trim()
        .replace('_', "")
        .parse()
        .map_err(|_| format!("expected {expected}, got \"{text}\""))
}

/// A whole number of `what` in `range`.
pub fn whole<T>(text: &str, what: &str, range: RangeInclusive<T>) -> Result<T, String>
where
    T: FromStr + PartialOrd + Display,
{
    let n: T = number(text, &format!("a whole number of {what}"))?;
    if range.contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "expected {} to {}, got {n}",
            range.start(),
            range.end()
        ))
    }
}

/// `--seed`.
pub fn seed(text: &str) -> Result<u64, String> {
    number(text, "a whole number from 0 to 2^64-1")
}

/// `--replays`.
pub fn replays(text: &str) -> Result<u64, String> {
    whole(text, "replays", 1..=lockbench_workloads::MAX_REPLAYS)
}

/// `--threads`.
pub fn threads(text: &str) -> Result<usize, String> {
    whole(text, "threads", 1..=MAX_THREADS)
}

/// A volume multiplier (`--scale`, `--target-scale`).
pub fn scale(text: &str) -> Result<f64, String> {
    let x: f64 = number(text, "a volume multiplier such as 1 or 10")?;
    if x.is_finite() && x > 0.0 && x <= MAX_SCALE {
        Ok(x)
    } else {
        Err(format!(
            "expected a multiplier above 0 and at most {MAX_SCALE}, got {text}"
        ))
    }
}

/// `ttl --safety-factor`.
pub fn safety_factor(text: &str) -> Result<f64, String> {
    let f: f64 = number(text, "a factor such as 3")?;
    if f.is_finite() && (1.0..=100.0).contains(&f) {
        Ok(f)
    } else {
        Err(format!(
            "expected a factor from 1 to 100 (default {}), got {f}",
            lockbench_analysis::DEFAULT_SAFETY_FACTOR
        ))
    }
}

/// `ttl --current-ttl`: a TTL above zero.
pub fn current_ttl(text: &str) -> Result<Duration, String> {
    let d = lockbench_workloads::duration::parse(text)?;
    if d.is_zero() {
        return Err("expected a TTL above zero".into());
    }
    Ok(d)
}

/// `ttl --runs-per-year`, checked as a spec's `runs_per_year` is.
pub fn runs_per_year(text: &str) -> Result<lockbench_workloads::Frequency, String> {
    let n: f64 = number(text, "a number of runs such as 12")?;
    lockbench_workloads::Frequency::of_flag(n)
}

/// `ttl --max-lease-risk`. Below 1e-7 the replays the bound needs (about 6 / P) pass
/// `MAX_REPLAYS`.
pub fn lease_risk(text: &str) -> Result<f64, String> {
    let p: f64 = number(text, "a chance per run such as 1e-4")?;
    if p.is_finite() && (1e-7..=0.5).contains(&p) {
        Ok(p)
    } else {
        Err(format!(
            "expected a chance per run from 1e-7 to 0.5, got {p}"
        ))
    }
}

/// `--accepted-double-runs-per-year`: a positive count a year.
pub fn budget(text: &str) -> Result<f64, String> {
    let x: f64 = number(text, "a count a year such as 0.01 (one in a century)")?;
    lockbench_workloads::check_budget(x).map(|()| x)
}

/// `replay --time-scale`: how much of a second of the job a second of the replay is.
pub fn time_scale(text: &str) -> Result<f64, String> {
    let x: f64 = number(text, "a factor such as 0.05 (1 s of the job takes 50 ms)")?;
    if x.is_finite() && x > 0.0 && x <= 1.0 {
        Ok(x)
    } else {
        Err(format!(
            "expected a factor above 0 and at most 1, got {text}"
        ))
    }
}

/// `replay --workers`.
pub fn workers(text: &str) -> Result<usize, String> {
    whole(text, "workers", 1..=MAX_WORKERS)
}

/// `replay --runs`.
pub fn runs(text: &str) -> Result<u32, String> {
    whole(text, "job runs", 1..=MAX_RUNS)
}

/// `replay --compare-replays`: 0 leaves the comparison out.
pub fn compare_replays(text: &str) -> Result<u64, String> {
    let n: u64 = number(text, "a whole number of simulated replays")?;
    let most = lockbench_workloads::MAX_REPLAYS;
    if n > most {
        return Err(format!("expected at most {most}, got {n}"));
    }
    Ok(n)
}

/// A duration above zero (`replay --ttl`, `bench --ttl`).
pub fn positive_duration(text: &str) -> Result<Duration, String> {
    let d = lockbench_workloads::duration::parse(text)?;
    if d.is_zero() {
        return Err("expected a duration above zero".into());
    }
    Ok(d)
}

/// `--scrape-interval`: 1 s to 10 min, as Prometheus setups have it.
pub fn scrape_interval(text: &str) -> Result<Duration, String> {
    let d = lockbench_workloads::duration::parse(text)?;
    if (Duration::from_secs(1)..=Duration::from_secs(600)).contains(&d) {
        Ok(d)
    } else {
        Err(format!("expected 1s to 10m, got {text}"))
    }
}

/// `--time-to-act`: zero (an automated responder) to a day.
pub fn time_to_act(text: &str) -> Result<Duration, String> {
    let d = lockbench_workloads::duration::parse(text)?;
    if d <= Duration::from_secs(86_400) {
        Ok(d)
    } else {
        Err(format!("expected 0s to 24h, got {text}"))
    }
}

/// A duration, zero allowed (`bench --warmup`, `--hold`).
pub fn duration(text: &str) -> Result<Duration, String> {
    lockbench_workloads::duration::parse(text)
}

/// One of `bench --contenders`' comma-separated levels.
pub fn contenders(text: &str) -> Result<usize, String> {
    let n: usize = number(text, "comma-separated whole numbers such as 1,4,16")?;
    if (1..=MAX_CONTENDERS).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "expected 1 to {MAX_CONTENDERS} contenders, got {n}"
        ))
    }
}

/// `bench --ops`: measured acquisitions per run.
pub fn ops(text: &str) -> Result<u64, String> {
    let n: u64 = number(text, "a whole number of acquisitions")?;
    if n == 0 {
        return Err("expected at least 1".into());
    }
    Ok(n)
}

/// `bench --rate`: arrivals per second of an open loop.
pub fn rate(text: &str) -> Result<f64, String> {
    let rate: f64 = number(text, "arrivals per second such as 1000")?;
    if rate.is_finite() && rate > 0.0 && rate <= 1_000_000.0 {
        Ok(rate)
    } else {
        Err(format!(
            "expected 0 < rate <= 1000000 per second, got {text}"
        ))
    }
}

/// `faults --trials`.
pub fn trials(text: &str) -> Result<u32, String> {
    whole(text, "trials", 1..=MAX_TRIALS)
}

/// `faults --ttl`.
pub fn lab_ttl(text: &str) -> Result<Duration, String> {
    let ttl = lockbench_workloads::duration::parse(text)?;
    if LAB_TTL.contains(&ttl) {
        Ok(ttl)
    } else {
        Err(format!(
            "expected 200ms to 60s (each trial lasts a few TTLs), got \"{text}\""
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_value_names_what_it_expected_and_what_it_got() {
        assert_eq!(seed("1_000"), Ok(1000));
        assert_eq!(
            seed("abc"),
            Err("expected a whole number from 0 to 2^64-1, got \"abc\"".into())
        );
        assert_eq!(replays("20_000"), Ok(20_000));
        assert_eq!(replays("0"), Err("expected 1 to 100000000, got 0".into()));
        assert_eq!(
            replays("-5"),
            Err("expected a whole number of replays, got \"-5\"".into())
        );
        assert_eq!(threads("1025"), Err("expected 1 to 1024, got 1025".into()));
        assert_eq!(trials("3"), Ok(3));
        assert_eq!(lab_ttl("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(
            lab_ttl("0s"),
            Err("expected 200ms to 60s (each trial lasts a few TTLs), got \"0s\"".into())
        );
        assert!(lab_ttl("-1s").is_err());
    }
}
