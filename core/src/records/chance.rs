//! A chance per run with its 95 % interval, how it was estimated and what it cost: the figure
//! `ttl` prices today's TTL, the recommended one, the heartbeat lease and the job's runner with.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How a chance per run was estimated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChanceMethod {
    /// Plain replays: the count of runs that exceeded, with a Clopper-Pearson interval.
    Replays,
    /// Subset simulation over the replays' latent random numbers.
    SubsetSimulation,
    /// None by construction: the model has no such run (no profile stalls; a hold that covers
    /// the skew).
    NotInModel,
}

impl ChanceMethod {
    /// Its name in a parenthesis: "subset simulation".
    pub fn short(self) -> &'static str {
        match self {
            ChanceMethod::Replays => "counted",
            ChanceMethod::SubsetSimulation => "subset simulation",
            ChanceMethod::NotInModel => "none in the model",
        }
    }

    /// How a sentence names it.
    pub fn said(self) -> &'static str {
        match self {
            ChanceMethod::Replays => "counted over plain replays",
            ChanceMethod::SubsetSimulation => "estimated by subset simulation",
            ChanceMethod::NotInModel => "none by construction of the model",
        }
    }
}

/// A chance per run with its 95 % interval and what it cost.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Chance {
    /// The estimate.
    pub p: f64,
    /// Its 95 % interval.
    pub lower: f64,
    pub upper: f64,
    /// How it was made.
    pub method: ChanceMethod,
    /// Model runs it cost.
    pub runs: u64,
    /// Seconds it took (wall time; the estimate does not depend on it).
    #[serde(rename = "elapsed_s", default)]
    pub seconds: f64,
}

impl Chance {
    /// Events a year at `runs_per_year`: the estimate and its interval.
    pub fn per_year(&self, runs_per_year: f64) -> [f64; 3] {
        [self.p, self.lower, self.upper].map(|p| p * runs_per_year)
    }

    /// "2.1e-9 per run (95 % interval 1.6e-9 to 2.8e-9)", or "below 3.0e-16 per run (95 % upper
    /// bound)" when no run of the estimate got there.
    pub fn per_run_said(&self) -> String {
        let pct = |p: f64| crate::format_percent(p);
        if self.method == ChanceMethod::NotInModel {
            "none per run (the model has no such run)".to_string()
        } else if self.p == 0.0 {
            format!("below {} per run (95 % upper bound)", pct(self.upper))
        } else {
            format!(
                "{} per run (95 % interval {} to {})",
                pct(self.p),
                pct(self.lower),
                pct(self.upper)
            )
        }
    }

    /// "0.0011 a year (95 % interval 0.0008 to 0.0015), one in 910 years", or "at most ... a
    /// year (95 % upper bound), at least one in ... years".
    pub fn per_year_said(&self, runs_per_year: f64) -> String {
        let n = |x: f64| crate::format_per_year(x);
        let [p, lower, upper] = self.per_year(runs_per_year);
        if self.method == ChanceMethod::NotInModel {
            "none a year".to_string()
        } else if p == 0.0 {
            format!(
                "at most {} a year (95 % upper bound): at least {} years between",
                n(upper),
                crate::format_years_between(upper)
            )
        } else {
            format!(
                "{} a year (95 % interval {} to {}): {} years between (95 % interval {} to {})",
                n(p),
                n(lower),
                n(upper),
                crate::format_years_between(p),
                crate::format_years_between(upper),
                crate::format_years_between(lower)
            )
        }
    }

    /// Events a year in few words: "at most 2.3e-6 a year" (none seen), or "0.64 a year (0.59 to
    /// 0.69)".
    pub fn per_year_short(&self, runs_per_year: f64) -> String {
        let n = |x: f64| crate::format_per_year(x);
        let [p, lower, upper] = self.per_year(runs_per_year);
        if self.method == ChanceMethod::NotInModel {
            "none a year".to_string()
        } else if p == 0.0 {
            format!("at most {} a year", n(upper))
        } else {
            format!("{} a year ({} to {})", n(p), n(lower), n(upper))
        }
    }

    /// The years between events in few words: "431,065+ years between" (none seen), or
    /// "1.6 years between".
    pub fn years_between_short(&self, runs_per_year: f64) -> String {
        let [p, _, upper] = self.per_year(runs_per_year);
        if self.method == ChanceMethod::NotInModel {
            "never".to_string()
        } else if p == 0.0 {
            format!("{}+ years between", crate::format_years_between(upper))
        } else {
            format!("{} years between", crate::format_years_between(p))
        }
    }

    /// What it cost: "subset simulation, 184,000 model runs, 9.2 s".
    pub fn cost_said(&self) -> String {
        match self.method {
            ChanceMethod::Replays => {
                format!("{} replays", crate::format_count(self.runs))
            }
            ChanceMethod::SubsetSimulation if self.seconds > 0.0 => format!(
                "subset simulation, {} model runs, {}",
                crate::format_count(self.runs),
                crate::format_readable(Duration::from_secs_f64(self.seconds))
            ),
            ChanceMethod::SubsetSimulation => format!(
                "subset simulation, {} model runs",
                crate::format_count(self.runs)
            ),
            ChanceMethod::NotInModel => "no model runs: none by construction".to_string(),
        }
    }
}
