//! Latency distributions: what a spec says a call costs, and the exact quantile and CDF of each.
//!
//! Internally every value is in seconds as `f64`: the simulator adds millions of them per second,
//! and a `Duration` per addition would cost more than the sampling itself. Units come back as
//! `Duration` at the edges.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use statrs::function::erf::{erfc, erfc_inv};

use crate::duration;

/// Φ⁻¹(0.99): the standard normal quantile that turns a lognormal's p50 and p99 into sigma.
pub const Z99: f64 = 2.326_347_874_040_840_8;

/// Most samples an empirical latency file may hold; keeps memory bounded.
pub const MAX_EMPIRICAL_SAMPLES: usize = 10_000_000;

/// A latency distribution from a spec, validated.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "LatencyInput")]
pub enum Latency {
    /// Always the same value.
    Constant(f64),
    /// Uniform between `min` and `max` seconds.
    Uniform {
        /// Lower bound, seconds.
        min: f64,
        /// Upper bound, seconds.
        max: f64,
    },
    /// Exponential with the given mean in seconds.
    Exponential {
        /// Mean, seconds.
        mean: f64,
    },
    /// Lognormal given by its median and 99th percentile.
    LogNormal {
        /// ln of the median.
        mu: f64,
        /// Standard deviation of the underlying normal.
        sigma: f64,
    },
    /// Pareto (type I) with minimum `scale` seconds and tail index `shape`, capped at `max`.
    Pareto {
        /// Smallest value, seconds.
        scale: f64,
        /// Tail index; smaller is heavier.
        shape: f64,
        /// Values above this are clamped to it (infinite when the spec sets no cap).
        max: f64,
    },
    /// Measured latencies read from a file, replayed through their interpolated quantile function.
    Empirical {
        /// The file as written in the spec (relative to the spec's folder).
        file: PathBuf,
        /// Unit of bare numbers in the file; `None` when every line carries its own unit.
        unit: Option<f64>,
        /// Sorted samples in seconds; empty until [`Latency::load_files`] runs.
        samples: Arc<[f64]>,
    },
    /// A weighted mixture; weights are normalised to sum to one.
    Mixture(Vec<(f64, Latency)>),
}

/// The TOML shape of a latency: a duration string (a constant) or a table tagged by `dist`.
/// Written by hand rather than `#[serde(untagged)]`, which would swallow the precise errors.
enum LatencyInput {
    Fixed(Duration),
    Table(DistInput),
}

impl<'de> Deserialize<'de> for LatencyInput {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = LatencyInput;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a duration string like \"110ms\" or a table with dist = \"constant\" | \"uniform\" | \"exponential\" | \"lognormal\" | \"pareto\" | \"empirical\" | \"mixture\"",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<LatencyInput, E> {
                duration::parse(v)
                    .map(LatencyInput::Fixed)
                    .map_err(E::custom)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<LatencyInput, A::Error> {
                DistInput::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(LatencyInput::Table)
            }
        }
        d.deserialize_any(Visitor)
    }
}

#[derive(Deserialize)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
enum DistInput {
    Constant {
        #[serde(deserialize_with = "duration::deserialize")]
        value: Duration,
    },
    Uniform {
        #[serde(deserialize_with = "duration::deserialize")]
        min: Duration,
        #[serde(deserialize_with = "duration::deserialize")]
        max: Duration,
    },
    Exponential {
        #[serde(deserialize_with = "duration::deserialize")]
        mean: Duration,
    },
    Lognormal {
        #[serde(deserialize_with = "duration::deserialize")]
        p50: Duration,
        #[serde(deserialize_with = "duration::deserialize")]
        p99: Duration,
    },
    Pareto {
        #[serde(deserialize_with = "duration::deserialize")]
        scale: Duration,
        shape: f64,
        #[serde(default, deserialize_with = "duration::deserialize_option")]
        max: Option<Duration>,
    },
    Empirical {
        file: PathBuf,
        unit: Option<String>,
    },
    Mixture {
        components: Vec<ComponentInput>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ComponentInput {
    weight: f64,
    latency: Latency,
}

impl TryFrom<LatencyInput> for Latency {
    type Error = String;

    fn try_from(input: LatencyInput) -> Result<Self, String> {
        let dist = match input {
            LatencyInput::Fixed(d) => return Ok(Latency::Constant(d.as_secs_f64())),
            LatencyInput::Table(dist) => dist,
        };
        Ok(match dist {
            DistInput::Constant { value } => Latency::Constant(value.as_secs_f64()),
            DistInput::Uniform { min, max } => {
                if max < min {
                    return Err(format!(
                        "uniform: expected max >= min, got min {min:?} and max {max:?}"
                    ));
                }
                Latency::Uniform {
                    min: min.as_secs_f64(),
                    max: max.as_secs_f64(),
                }
            }
            DistInput::Exponential { mean } => {
                if mean.is_zero() {
                    return Err("exponential: expected a mean above zero".into());
                }
                Latency::Exponential {
                    mean: mean.as_secs_f64(),
                }
            }
            DistInput::Lognormal { p50, p99 } => {
                if p50.is_zero() {
                    return Err("lognormal: expected p50 above zero".into());
                }
                if p99 <= p50 {
                    return Err(format!(
                        "lognormal: expected p99 above p50, got p50 {p50:?} and p99 {p99:?}"
                    ));
                }
                Latency::lognormal(p50.as_secs_f64(), p99.as_secs_f64())
            }
            DistInput::Pareto { scale, shape, max } => {
                if scale.is_zero() {
                    return Err("pareto: expected scale above zero".into());
                }
                if !(shape.is_finite() && shape > 0.0) {
                    return Err(format!("pareto: expected shape above zero, got {shape}"));
                }
                if let Some(max) = max
                    && max < scale
                {
                    return Err(format!(
                        "pareto: expected max >= scale, got scale {scale:?} and max {max:?}"
                    ));
                }
                Latency::Pareto {
                    scale: scale.as_secs_f64(),
                    shape,
                    max: max.map_or(f64::INFINITY, |m| m.as_secs_f64()),
                }
            }
            DistInput::Empirical { file, unit } => {
                let unit = match unit.as_deref() {
                    None => None,
                    Some("ns") => Some(1e-9),
                    Some("us") => Some(1e-6),
                    Some("ms") => Some(1e-3),
                    Some("s") => Some(1.0),
                    Some(other) => {
                        return Err(format!(
                            "empirical: expected unit \"ns\", \"us\", \"ms\" or \"s\", got \"{other}\""
                        ));
                    }
                };
                Latency::Empirical {
                    file,
                    unit,
                    samples: Arc::from(Vec::new()),
                }
            }
            DistInput::Mixture { components } => {
                if components.is_empty() {
                    return Err("mixture: expected at least one component".into());
                }
                let total: f64 = components.iter().map(|c| c.weight).sum();
                if components
                    .iter()
                    .any(|c| !(c.weight.is_finite() && c.weight >= 0.0))
                    || total <= 0.0
                {
                    return Err("mixture: expected non-negative weights with a positive sum".into());
                }
                Latency::Mixture(
                    components
                        .into_iter()
                        .map(|c| (c.weight / total, c.latency))
                        .collect(),
                )
            }
        })
    }
}

impl Latency {
    /// A lognormal with the given median and 99th percentile, in seconds.
    pub fn lognormal(p50: f64, p99: f64) -> Self {
        Latency::LogNormal {
            mu: p50.ln(),
            sigma: (p99 / p50).ln() / Z99,
        }
    }

    /// Reads every empirical file this latency refers to, relative to `base`. `field` names the
    /// spec field for error messages.
    pub fn load_files(&mut self, base: &Path) -> Result<(), String> {
        match self {
            Latency::Empirical {
                file,
                unit,
                samples,
            } => {
                *samples = read_samples(&base.join(&*file), *unit)?;
                Ok(())
            }
            Latency::Mixture(parts) => parts.iter_mut().try_for_each(|(_, l)| l.load_files(base)),
            _ => Ok(()),
        }
    }

    /// The exact quantile at `u` in [0, 1), in seconds.
    pub fn quantile(&self, u: f64) -> f64 {
        match self {
            Latency::Constant(v) => *v,
            Latency::Uniform { min, max } => min + u * (max - min),
            Latency::Exponential { mean } => -mean * (-u).ln_1p(),
            Latency::LogNormal { mu, sigma } => (mu + sigma * standard_normal_quantile(u)).exp(),
            Latency::Pareto { scale, shape, max } => {
                (scale * (1.0 - u).powf(-1.0 / shape)).min(*max)
            }
            Latency::Empirical { samples, .. } => empirical_quantile(samples, u),
            Latency::Mixture(_) => self.quantile_by_bisection(u),
        }
    }

    /// The probability that a call takes at most `x` seconds.
    pub fn cdf(&self, x: f64) -> f64 {
        match self {
            Latency::Constant(v) => f64::from(u8::from(x >= *v)),
            Latency::Uniform { min, max } => {
                if max > min {
                    ((x - min) / (max - min)).clamp(0.0, 1.0)
                } else {
                    f64::from(u8::from(x >= *min))
                }
            }
            Latency::Exponential { mean } => {
                if x <= 0.0 {
                    0.0
                } else {
                    -(-x / mean).exp_m1()
                }
            }
            Latency::LogNormal { mu, sigma } => {
                if x <= 0.0 {
                    0.0
                } else {
                    0.5 * erfc(-(x.ln() - mu) / (sigma * std::f64::consts::SQRT_2))
                }
            }
            Latency::Pareto { scale, shape, max } => {
                if x < *scale {
                    0.0
                } else if x >= *max {
                    1.0
                } else {
                    1.0 - (scale / x).powf(*shape)
                }
            }
            Latency::Empirical { samples, .. } => empirical_cdf(samples, x),
            Latency::Mixture(parts) => parts.iter().map(|(w, l)| w * l.cdf(x)).sum(),
        }
    }

    /// The mean in seconds (infinite for a Pareto with shape at most one).
    pub fn mean(&self) -> f64 {
        match self {
            Latency::Constant(v) => *v,
            Latency::Uniform { min, max } => (min + max) / 2.0,
            Latency::Exponential { mean } => *mean,
            Latency::LogNormal { mu, sigma } => (mu + sigma * sigma / 2.0).exp(),
            Latency::Pareto { scale, shape, max } => {
                if max.is_finite() {
                    // E[min(X, m)] = scale + integral from scale to m of (scale/x)^shape dx
                    let tail = if (*shape - 1.0).abs() < 1e-12 {
                        scale * (max / scale).ln()
                    } else {
                        scale / (shape - 1.0) * (1.0 - (scale / max).powf(shape - 1.0))
                    };
                    scale + tail
                } else if *shape > 1.0 {
                    scale * shape / (shape - 1.0)
                } else {
                    f64::INFINITY
                }
            }
            Latency::Empirical { samples, .. } => {
                samples.iter().sum::<f64>() / samples.len().max(1) as f64
            }
            Latency::Mixture(parts) => parts.iter().map(|(w, l)| w * l.mean()).sum(),
        }
    }

    fn quantile_by_bisection(&self, u: f64) -> f64 {
        let Latency::Mixture(parts) = self else {
            unreachable!("bisection is only used for mixtures")
        };
        // The mixture's quantile lies between its components' quantiles at the same level.
        let (mut lo, mut hi) = parts
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), (_, l)| {
                let q = l.quantile(u);
                (lo.min(q), hi.max(q))
            });
        lo = lo.min(hi);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if mid <= lo || mid >= hi {
                break;
            }
            if self.cdf(mid) < u {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi
    }
}

/// Φ⁻¹(u) for the standard normal, accurate to double precision (statrs' erfc_inv).
pub fn standard_normal_quantile(u: f64) -> f64 {
    if u <= 0.0 {
        return f64::NEG_INFINITY;
    }
    -std::f64::consts::SQRT_2 * erfc_inv(2.0 * u)
}

/// The interpolated quantile of sorted samples: the `empirical` rule (`u` in [0, 1]), the one
/// convention of [`lockbench_core::stats::quantile_sorted`].
pub(crate) use lockbench_core::stats::quantile_sorted as empirical_quantile;

fn empirical_cdf(sorted: &[f64], x: f64) -> f64 {
    match sorted.len() {
        0 => 1.0,
        1 => f64::from(u8::from(x >= sorted[0])),
        n => {
            if x < sorted[0] {
                return 0.0;
            }
            if x >= sorted[n - 1] {
                return 1.0;
            }
            let i = sorted.partition_point(|v| *v <= x) - 1;
            let width = sorted[i + 1] - sorted[i];
            let frac = if width > 0.0 {
                (x - sorted[i]) / width
            } else {
                1.0
            };
            (i as f64 + frac) / (n - 1) as f64
        }
    }
}

fn read_samples(path: &Path, unit: Option<f64>) -> Result<Arc<[f64]>, String> {
    let text =
        lockbench_core::input::read_input_text(path, lockbench_core::input::InputKind::Samples)
            .map_err(|e| format!("empirical file {}: {e}", path.display()))?;
    let mut samples = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let value = match unit {
            Some(seconds_per_unit) => line
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map(|v| v * seconds_per_unit)
                .ok_or_else(|| format!("expected a non-negative number, got \"{line}\""))
                .map_err(|e| format!("empirical file {}:{}: {e}", path.display(), n + 1))?,
            None => duration::parse(line)
                .map(|d| d.as_secs_f64())
                .map_err(|e| format!("empirical file {}:{}: {e}", path.display(), n + 1))?,
        };
        samples.push(value);
        if samples.len() > MAX_EMPIRICAL_SAMPLES {
            return Err(format!(
                "empirical file {}: more than {MAX_EMPIRICAL_SAMPLES} samples",
                path.display()
            ));
        }
    }
    if samples.is_empty() {
        return Err(format!(
            "empirical file {}: expected at least one latency, found none",
            path.display()
        ));
    }
    samples.sort_by(f64::total_cmp);
    Ok(Arc::from(samples))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<Latency, String> {
        #[derive(Deserialize)]
        struct Holder {
            latency: Latency,
        }
        toml::from_str::<Holder>(text)
            .map(|h| h.latency)
            .map_err(|e| e.message().to_string())
    }

    #[test]
    fn a_plain_string_is_a_constant() {
        let l = parse(r#"latency = "110ms""#).unwrap();
        assert!(matches!(l, Latency::Constant(v) if (v - 0.110).abs() < 1e-12));
    }

    #[test]
    fn lognormal_p50_p99_round_trips() {
        let l = parse(r#"latency = { dist = "lognormal", p50 = "110ms", p99 = "340ms" }"#).unwrap();
        assert!((l.quantile(0.5) - 0.110).abs() < 1e-9);
        assert!((l.quantile(0.99) - 0.340).abs() < 1e-9);
        assert!((l.cdf(0.340) - 0.99).abs() < 1e-9);
    }

    #[test]
    fn bad_distributions_say_what_was_expected() {
        let e =
            parse(r#"latency = { dist = "lognormal", p50 = "300ms", p99 = "100ms" }"#).unwrap_err();
        assert!(e.contains("expected p99 above p50"), "{e}");
        let e = parse(r#"latency = { dist = "gamma", mean = "1s" }"#).unwrap_err();
        assert!(e.contains("gamma"), "{e}");
        let e = parse(r#"latency = { dist = "exponential", mean = "1s", extra = 1 }"#).unwrap_err();
        assert!(e.contains("extra"), "{e}");
        let e = parse(r#"latency = { dist = "constant", value = "5" }"#).unwrap_err();
        assert!(e.contains("with a unit"), "{e}");
    }

    #[test]
    fn mixture_quantile_inverts_its_cdf() {
        let l = parse(
            r#"latency = { dist = "mixture", components = [
                { weight = 0.97, latency = { dist = "lognormal", p50 = "110ms", p99 = "340ms" } },
                { weight = 0.03, latency = { dist = "lognormal", p50 = "3s", p99 = "12s" } },
            ] }"#,
        )
        .unwrap();
        for u in [0.01, 0.5, 0.9, 0.99, 0.999] {
            assert!((l.cdf(l.quantile(u)) - u).abs() < 1e-9, "u={u}");
        }
    }

    #[test]
    fn empirical_files_load_and_sort() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("lat.txt"), "# measured\n30ms\n10ms\n20ms\n").unwrap();
        let mut l = parse(r#"latency = { dist = "empirical", file = "lat.txt" }"#).unwrap();
        l.load_files(dir.path()).unwrap();
        assert!((l.quantile(0.0) - 0.010).abs() < 1e-12);
        assert!((l.quantile(0.5) - 0.020).abs() < 1e-12);
        std::fs::write(dir.path().join("bad.txt"), "12\n").unwrap();
        let mut l = parse(r#"latency = { dist = "empirical", file = "bad.txt" }"#).unwrap();
        assert!(l.load_files(dir.path()).unwrap_err().contains("bad.txt:1"));
    }

    proptest! {
        #[test]
        fn lognormal_parameterisation_round_trips(p50_ms in 0.01f64..10_000.0, ratio in 1.001f64..100.0) {
            let p50 = p50_ms / 1e3;
            let l = Latency::lognormal(p50, p50 * ratio);
            prop_assert!((l.quantile(0.5) / p50 - 1.0).abs() < 1e-9);
            prop_assert!((l.quantile(0.99) / (p50 * ratio) - 1.0).abs() < 1e-9);
        }

        #[test]
        fn quantile_and_cdf_are_inverse(u in 0.0001f64..0.9999, mean in 0.001f64..10.0, shape in 0.5f64..5.0) {
            for l in [Latency::Exponential { mean }, Latency::Pareto { scale: mean, shape, max: f64::INFINITY }, Latency::lognormal(mean, mean * 3.0)] {
                prop_assert!((l.cdf(l.quantile(u)) - u).abs() < 1e-9);
            }
        }
    }
}
