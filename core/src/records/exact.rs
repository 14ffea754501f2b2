//! `exact.json`: the exact figures of every histogram in a directory's interval log, by tag
//! ([`ExactFigures`]), so that reading the log back, and adding the logs of several shards, gives
//! exactly the histograms recorded.

use serde::{Deserialize, Serialize};

use crate::histogram::{ExactFigures, RuntimeHistogram};

/// The file's name.
pub const EXACT: &str = "exact.json";

/// The whole file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExactRecord {
    /// One entry per histogram of the log, in its order.
    pub histograms: Vec<TaggedExact>,
}

/// The exact figures of one tagged histogram.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaggedExact {
    /// The histogram's tag in the log.
    pub tag: String,
    /// Its figures.
    pub figures: ExactFigures,
}

impl ExactRecord {
    /// The record of `entries`, tagged as in the log beside it.
    pub fn of(entries: &[(String, &RuntimeHistogram)]) -> Self {
        ExactRecord {
            histograms: entries
                .iter()
                .map(|(tag, h)| TaggedExact {
                    tag: crate::histogram::log_tag(tag),
                    figures: h.exact(),
                })
                .collect(),
        }
    }
}
