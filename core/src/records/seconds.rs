//! `Duration`s as seconds in JSON and CSV (`#[serde(with = "seconds")]`), for fields whose name
//! ends in `_s`; rounded to the microsecond, refused when negative or not a number.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

/// Writes a duration as seconds.
pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(super::codec::round_micro(d.as_secs_f64()))
}

/// Reads seconds back into a duration.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let seconds = f64::deserialize(d)?;
    Duration::try_from_secs_f64(seconds).map_err(|_| {
        serde::de::Error::custom(format!(
            "{seconds} is not a duration in seconds (expected a number of seconds, 0 or more)"
        ))
    })
}

/// An optional duration as seconds, `null` when absent (`#[serde(with = "seconds::option")]`).
pub mod option {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes an optional duration as seconds or `null`.
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    /// Reads seconds or `null` back.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let seconds = Option::<f64>::deserialize(d)?;
        seconds
            .map(|s| {
                Duration::try_from_secs_f64(s).map_err(|_| {
                    serde::de::Error::custom(format!(
                        "{s} is not a duration in seconds (expected a number of seconds, 0 or more)"
                    ))
                })
            })
            .transpose()
    }
}
