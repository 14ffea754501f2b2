//! Durations in specs are strings with a unit ("110ms", "4.2s", "2m"), parsed by humantime.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// Parses a spec duration, with an error that says what was expected.
pub fn parse(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    if trimmed.starts_with('-') {
        return Err(format!(
            "expected a non-negative duration with a unit, like \"110ms\", got \"{text}\""
        ));
    }
    humantime::parse_duration(trimmed).map_err(|e| {
        // humantime's own words name a byte offset ("expected number at 0"); only an unknown unit
        // says more than the expectation below.
        let why = match e {
            humantime::DurationError::UnknownUnit { unit, .. } => {
                format!(": \"{unit}\" is not a unit (ns, us, ms, s, m, h, d)")
            }
            _ => String::new(),
        };
        format!("expected a duration with a unit, like \"110ms\" or \"4.2s\", got \"{text}\"{why}")
    })
}

/// Serde adapter: a duration string with a unit.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    struct Visitor;
    impl serde::de::Visitor<'_> for Visitor {
        type Value = Duration;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a duration string with a unit, like \"110ms\"")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Duration, E> {
            parse(v).map_err(E::custom)
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Duration, E> {
            Err(E::custom(format!(
                "expected a duration string with a unit, like \"{v}ms\" or \"{v}s\", got the bare number {v}"
            )))
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Duration, E> {
            Err(E::custom(format!(
                "expected a duration string with a unit, like \"{v}s\", got the bare number {v}"
            )))
        }
    }
    d.deserialize_any(Visitor)
}

/// Serde adapter for an optional duration string.
pub fn deserialize_option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    #[derive(Deserialize)]
    struct Wrapped(#[serde(deserialize_with = "deserialize")] Duration);
    Option::<Wrapped>::deserialize(d).map(|o| o.map(|w| w.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_units_and_fractions() {
        assert_eq!(parse("110ms").unwrap(), Duration::from_millis(110));
        assert_eq!(parse("4.2s").unwrap(), Duration::from_millis(4200));
        assert_eq!(parse("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse("1h 30m").unwrap(), Duration::from_secs(5400));
    }

    #[test]
    fn rejects_negative_and_unitless() {
        assert!(parse("-5s").unwrap_err().contains("non-negative"));
        assert!(parse("5").unwrap_err().contains("with a unit"));
        assert!(parse("fast").is_err());
    }
}
