//! The one place where runtimes and latencies are recorded.

use std::time::Duration;

use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer, V2Serializer};
use serde::{Deserialize, Serialize};

/// Runtimes are recorded in microseconds: a job runtime needs no finer grain.
const RUNTIME_UNIT_NS: u64 = 1_000;
/// Lock latencies are recorded in nanoseconds: a 20 us loopback round trip needs sub-microsecond
/// buckets for 0.1 % precision.
const LATENCY_UNIT_NS: u64 = 1;
/// Highest recordable value in units: about 11.6 days of microseconds, 16.7 minutes of
/// nanoseconds. Larger values saturate and are counted, so a broken spec cannot hide.
const HIGHEST_UNITS: u64 = 1_000_000_000_000;
/// Three significant digits: percentiles carry at most 0.1 % quantisation error.
const SIGNIFICANT_DIGITS: u8 = 3;

/// Errors from reading a serialised histogram.
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    /// The base64 text was not a valid HdrHistogram V2 encoding.
    #[error("not a valid base64 HdrHistogram V2 encoding: {0}")]
    Decode(String),
}

/// An HdrHistogram of durations, plus the exact figures a histogram cannot give: count, sum,
/// minimum, maximum and the number of values above each registered threshold.
///
/// Everything in it is an integer, so merging per-thread histograms gives the same result
/// whatever the number of threads or the order of merging.
#[derive(Clone, Debug)]
pub struct RuntimeHistogram {
    histogram: Histogram<u64>,
    unit_ns: u64,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
    saturated: u64,
    thresholds: Vec<Threshold>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Threshold {
    limit_ns: u64,
    above: u64,
}

/// What a histogram knows exactly and its HdrHistogram encoding rounds to buckets: written beside
/// an interval log (`exact.json`), so that a histogram read back, and histograms of several shards
/// added, are exactly the ones recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExactFigures {
    /// Values recorded.
    pub count: u64,
    /// Their sum in nanoseconds.
    pub sum_ns: u128,
    /// The smallest, in nanoseconds (`u64::MAX` when empty).
    pub min_ns: u64,
    /// The largest, in nanoseconds.
    pub max_ns: u64,
    /// Values above the highest trackable one.
    pub saturated: u64,
    /// Values strictly above each registered limit.
    pub thresholds: Vec<ThresholdCount>,
}

/// Values strictly above one limit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdCount {
    /// The limit in nanoseconds.
    pub limit_ns: u64,
    /// Values above it.
    pub above: u64,
}

impl Default for RuntimeHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl RuntimeHistogram {
    /// An empty histogram for job runtimes (microsecond buckets, up to 11.6 days).
    pub fn new() -> Self {
        Self::with_unit(RUNTIME_UNIT_NS)
    }

    /// An empty histogram for operation latencies (nanosecond buckets, up to 16.7 minutes).
    pub fn for_latency() -> Self {
        Self::with_unit(LATENCY_UNIT_NS)
    }

    fn with_unit(unit_ns: u64) -> Self {
        Self {
            histogram: Histogram::new_with_bounds(1, HIGHEST_UNITS, SIGNIFICANT_DIGITS)
                .expect("static histogram bounds are valid"),
            unit_ns,
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            saturated: 0,
            thresholds: Vec::new(),
        }
    }

    /// An empty histogram that also counts, exactly, the values strictly above each limit.
    pub fn with_thresholds(limits: &[Duration]) -> Self {
        let mut h = Self::new();
        h.thresholds = limits
            .iter()
            .map(|l| Threshold {
                limit_ns: duration_ns(*l),
                above: 0,
            })
            .collect();
        h
    }

    /// Records one value in nanoseconds.
    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        let units = (ns / self.unit_ns).max(1);
        if units > HIGHEST_UNITS {
            self.saturated += 1;
        }
        self.histogram.saturating_record(units);
        for t in &mut self.thresholds {
            t.above += u64::from(ns > t.limit_ns);
        }
    }

    /// Records one duration.
    pub fn record(&mut self, d: Duration) {
        self.record_ns(duration_ns(d));
    }

    /// Adds every value of `other` to this histogram. Both must count the same thresholds.
    pub fn merge(&mut self, other: &RuntimeHistogram) {
        assert_eq!(
            self.thresholds.len(),
            other.thresholds.len(),
            "merging histograms with different thresholds"
        );
        assert_eq!(
            self.unit_ns, other.unit_ns,
            "merging histograms with different units"
        );
        self.histogram
            .add(&other.histogram)
            .expect("histograms share their bounds");
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.saturated += other.saturated;
        for (mine, theirs) in self.thresholds.iter_mut().zip(&other.thresholds) {
            debug_assert_eq!(mine.limit_ns, theirs.limit_ns);
            mine.above += theirs.above;
        }
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Values that exceeded the recordable range (about 11.6 days) and were clamped to it.
    pub fn saturated(&self) -> u64 {
        self.saturated
    }

    /// Exact smallest value, or zero when empty.
    pub fn min(&self) -> Duration {
        if self.count == 0 {
            Duration::ZERO
        } else {
            Duration::from_nanos(self.min_ns)
        }
    }

    /// Exact largest value, or zero when empty.
    pub fn max(&self) -> Duration {
        Duration::from_nanos(self.max_ns)
    }

    /// Exact arithmetic mean, or zero when empty.
    pub fn mean(&self) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        let ns = self.sum_ns / u128::from(self.count);
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// The value at quantile `q` (0.999 for P99.9), within 0.1 %, never outside [min, max].
    pub fn quantile(&self, q: f64) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        let units = self.histogram.value_at_quantile(q.clamp(0.0, 1.0));
        let ns = self
            .histogram
            .median_equivalent(units)
            .saturating_mul(self.unit_ns);
        Duration::from_nanos(ns.clamp(self.min_ns, self.max_ns))
    }

    /// Every recorded value (its bucket's median, within [min, max], in seconds) with its count,
    /// ascending: the distribution as a step function, for quantile and PIT lookups.
    pub fn recorded_s(&self) -> Vec<(f64, u64)> {
        self.histogram
            .iter_recorded()
            .map(|v| {
                let ns = self
                    .histogram
                    .median_equivalent(v.value_iterated_to())
                    .saturating_mul(self.unit_ns)
                    .clamp(self.min_ns, self.max_ns);
                (ns as f64 * 1e-9, v.count_at_value())
            })
            .collect()
    }

    /// The value of the `rank`-th smallest sample (1-based), within 0.1 %.
    pub fn value_at_rank(&self, rank: u64) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        let rank = rank.clamp(1, self.count);
        // hdrhistogram maps a quantile to the smallest value whose cumulative count reaches
        // ceil(q * count); asking just below rank/count lands on exactly that rank.
        let q = (rank as f64 - 0.5) / self.count as f64;
        self.quantile(q)
    }

    /// The exact number of values strictly above `limit`, if `limit` was registered with
    /// [`RuntimeHistogram::with_thresholds`].
    pub fn count_above(&self, limit: Duration) -> Option<u64> {
        let limit_ns = duration_ns(limit);
        self.thresholds
            .iter()
            .find(|t| t.limit_ns == limit_ns)
            .map(|t| t.above)
    }

    /// The histogram encoded as HdrHistogram V2 (uncompressed) in base64, in its unit
    /// ([`Self::unit_name`]), readable by every HdrHistogram implementation.
    pub fn to_base64_v2(&self) -> String {
        use base64::Engine as _;
        let mut bytes = Vec::new();
        V2Serializer::new()
            .serialize(&self.histogram, &mut bytes)
            .expect("serialising to memory cannot fail");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Reads the percentile-bearing part of a runtime histogram (microseconds) back from
    /// [`Self::to_base64_v2`]. The exact figures (sum, min, max) are re-derived from the buckets,
    /// so they are as precise as the histogram itself.
    pub fn from_base64_v2(text: &str) -> Result<Self, HistogramError> {
        Self::decode_v2(text, RUNTIME_UNIT_NS)
    }

    /// The figures [`Self::with_exact`] restores.
    pub fn exact(&self) -> ExactFigures {
        ExactFigures {
            count: self.count,
            sum_ns: self.sum_ns,
            min_ns: self.min_ns,
            max_ns: self.max_ns,
            saturated: self.saturated,
            thresholds: self
                .thresholds
                .iter()
                .map(|t| ThresholdCount {
                    limit_ns: t.limit_ns,
                    above: t.above,
                })
                .collect(),
        }
    }

    /// This histogram (read back from its log) with the exact figures written beside it. Refused
    /// when they do not describe the same values (another count).
    pub fn with_exact(mut self, exact: &ExactFigures) -> Result<Self, HistogramError> {
        if exact.count != self.count {
            return Err(HistogramError::Decode(format!(
                "the exact figures count {} values and the histogram {}",
                exact.count, self.count
            )));
        }
        self.sum_ns = exact.sum_ns;
        self.min_ns = exact.min_ns;
        self.max_ns = exact.max_ns;
        self.saturated = exact.saturated;
        self.thresholds = exact
            .thresholds
            .iter()
            .map(|t| Threshold {
                limit_ns: t.limit_ns,
                above: t.above,
            })
            .collect();
        Ok(self)
    }

    fn decode_v2(text: &str, unit_ns: u64) -> Result<Self, HistogramError> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| HistogramError::Decode(e.to_string()))?;
        let decoded: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| HistogramError::Decode(format!("{e:?}")))?;
        // Histograms of other settings have other buckets: adding them would not be exact.
        if decoded.sigfig() != SIGNIFICANT_DIGITS || decoded.high() != HIGHEST_UNITS {
            return Err(HistogramError::Decode(format!(
                "recorded with {} significant digits up to {}, but lockbench records {SIGNIFICANT_DIGITS} up to {HIGHEST_UNITS}",
                decoded.sigfig(),
                decoded.high()
            )));
        }
        let mut h = Self::with_unit(unit_ns);
        for v in decoded.iter_recorded() {
            let units = v.value_iterated_to();
            let n = v.count_at_value();
            h.histogram.saturating_record_n(units, n);
            h.count += n;
            h.sum_ns += u128::from(units * unit_ns) * u128::from(n);
            h.min_ns = h.min_ns.min(units * unit_ns);
            h.max_ns = h.max_ns.max(units * unit_ns);
        }
        Ok(h)
    }

    /// The same values in microseconds (a runtime histogram's unit), for a log that must hold
    /// one unit: each recorded bucket is recorded again at its value. Sub-microsecond detail is
    /// lost; the exact count, sum, minimum and maximum are kept.
    pub fn in_microseconds(&self) -> RuntimeHistogram {
        if self.unit_ns == RUNTIME_UNIT_NS {
            return self.clone();
        }
        let mut out = Self::with_unit(RUNTIME_UNIT_NS);
        for v in self.histogram.iter_recorded() {
            let ns = v.value_iterated_to() * self.unit_ns;
            out.histogram
                .saturating_record_n((ns / RUNTIME_UNIT_NS).max(1), v.count_at_value());
        }
        out.count = self.count;
        out.sum_ns = self.sum_ns;
        out.min_ns = self.min_ns;
        out.max_ns = self.max_ns;
        out.saturated = self.saturated;
        out
    }

    /// The underlying HdrHistogram, in [`Self::unit_name`] units, for writers of interval logs.
    pub fn hdr(&self) -> &Histogram<u64> {
        &self.histogram
    }

    /// The unit of the underlying HdrHistogram's values.
    pub fn unit_name(&self) -> &'static str {
        if self.unit_ns == LATENCY_UNIT_NS {
            "nanoseconds"
        } else {
            "microseconds"
        }
    }
}

/// An HdrHistogram interval log holding one tagged histogram per entry, as HdrHistogram's own log
/// readers (Java's `HistogramLogReader`, Python's `hdrh`) read it: each histogram in the
/// compressed V2 encoding (cookie `0x1c849314`) that the interval-log format carries, after the
/// `#[StartTime]` and `#[BaseTime]` lines the Java writer emits. Every entry is a whole run, not an
/// interval of a time series: they all sit at timestamp 0 of a log that starts at the epoch. A
/// comment names the unit; every entry must be in the first entry's unit. Commas and whitespace
/// in tags become `_`.
pub fn interval_log(comment: &str, entries: &[(String, &RuntimeHistogram)]) -> Vec<u8> {
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
    let unit = entries
        .first()
        .map_or("microseconds", |(_, h)| h.unit_name());
    assert!(
        entries.iter().all(|(_, h)| h.unit_name() == unit),
        "one interval log holds one unit"
    );
    let mut bytes = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut writer = IntervalLogWriterBuilder::new()
        .add_comment(comment)
        .add_comment(&format!("values in {unit}"))
        .with_start_time(std::time::UNIX_EPOCH)
        .with_base_time(std::time::UNIX_EPOCH)
        .with_max_value_divisor(1.0)
        .begin_log_with(&mut bytes, &mut serializer)
        .expect("writing to memory cannot fail");
    for (tag, h) in entries {
        let clean = log_tag(tag);
        writer
            .write_histogram(h.hdr(), Duration::ZERO, Duration::ZERO, Tag::new(&clean))
            .expect("writing to memory cannot fail");
    }
    drop(writer);
    bytes
}

/// `tag` as an interval log holds it: commas and whitespace become `_`.
pub(crate) fn log_tag(tag: &str) -> String {
    tag.chars()
        .map(|c| {
            if c == ',' || c.is_whitespace() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// Reads an interval log written by [`interval_log`] back: each tagged histogram, in the unit the
/// log's comment names (microseconds unless it says nanoseconds).
pub fn read_interval_log(text: &str) -> Result<Vec<(String, RuntimeHistogram)>, HistogramError> {
    let unit_ns = if text.contains("#values in nanoseconds") {
        LATENCY_UNIT_NS
    } else {
        RUNTIME_UNIT_NS
    };
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix("Tag=") else {
            continue;
        };
        let fields: Vec<&str> = rest.split(',').collect();
        let [tag, _, _, _, payload] = fields[..] else {
            return Err(HistogramError::Decode(format!(
                "line {}: expected Tag=TAG,start,interval,max,histogram",
                n + 1
            )));
        };
        let h = RuntimeHistogram::decode_v2(payload, unit_ns)
            .map_err(|e| HistogramError::Decode(format!("line {}: {e}", n + 1)))?;
        out.push((tag.to_string(), h));
    }
    Ok(out)
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod log_tests {
    use super::*;

    #[test]
    fn interval_logs_read_back_with_their_unit() {
        let mut runtimes = RuntimeHistogram::new();
        runtimes.record(Duration::from_secs(240));
        let mut latency = RuntimeHistogram::for_latency();
        latency.record(Duration::from_micros(93));
        for (h, expected) in [
            (&runtimes, Duration::from_secs(240)),
            (&latency, Duration::from_micros(93)),
        ] {
            let log = interval_log("test", &[("a/b, c".to_string(), h)]);
            let read = read_interval_log(std::str::from_utf8(&log).unwrap()).unwrap();
            assert_eq!(read.len(), 1);
            assert_eq!(read[0].0, "a/b__c");
            let q = read[0].1.quantile(0.5).as_secs_f64();
            assert!((q / expected.as_secs_f64() - 1.0).abs() < 0.002, "{q}");
        }
        assert!(read_interval_log("Tag=x,1,2\n").is_err());
    }

    #[test]
    fn logs_carry_the_compressed_encoding_and_the_java_writers_header() {
        let mut h = RuntimeHistogram::new();
        h.record(Duration::from_secs(3));
        let log = String::from_utf8(interval_log("test", &[("x".to_string(), &h)])).unwrap();
        assert!(
            log.contains("#[StartTime: 0.000 (seconds since epoch)"),
            "{log}"
        );
        assert!(
            log.contains("#[BaseTime: 0.000 (seconds since epoch)]"),
            "{log}"
        );
        let payload = log.lines().find_map(|l| l.strip_prefix("Tag=x,")).unwrap();
        let encoded = payload.rsplit(',').next().unwrap();
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        assert_eq!(
            bytes[..4],
            [0x1c, 0x84, 0x93, 0x14],
            "the compressed V2 cookie"
        );
        // The plain V2 form, as earlier logs held it, still reads back.
        let plain = log.replace(encoded, &h.to_base64_v2());
        let read = read_interval_log(&plain).unwrap();
        assert_eq!(
            read[0].1.quantile(0.5),
            read_interval_log(&log).unwrap()[0].1.quantile(0.5)
        );
    }

    #[test]
    fn nanoseconds_convert_to_microseconds_keeping_the_exact_figures() {
        let mut ns = RuntimeHistogram::for_latency();
        for us in [90u64, 93, 1_200] {
            ns.record(Duration::from_micros(us));
        }
        let us = ns.in_microseconds();
        assert_eq!(us.unit_name(), "microseconds");
        assert_eq!(us.count(), 3);
        assert_eq!(us.max(), Duration::from_micros(1_200));
        let q = us.quantile(0.5).as_secs_f64() * 1e6;
        assert!((q - 93.0).abs() < 0.5, "{q}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn constant_values_report_exactly() {
        let mut h = RuntimeHistogram::new();
        for _ in 0..1000 {
            h.record(Duration::from_millis(198_000));
        }
        for q in [0.0, 0.5, 0.99, 0.999, 1.0] {
            assert_eq!(h.quantile(q), Duration::from_secs(198));
        }
        assert_eq!(h.mean(), Duration::from_secs(198));
    }

    #[test]
    fn latency_histograms_resolve_nanoseconds() {
        let mut h = RuntimeHistogram::for_latency();
        for ns in [23_100u64, 23_400, 23_700] {
            h.record_ns(ns);
        }
        let p50 = h.quantile(0.5).as_nanos() as f64;
        assert!((p50 / 23_400.0 - 1.0).abs() < 1e-3, "p50 {p50}");
        assert_eq!(h.unit_name(), "nanoseconds");
    }

    #[test]
    fn thresholds_count_strictly_above() {
        let limit = Duration::from_secs(300);
        let mut h = RuntimeHistogram::with_thresholds(&[limit]);
        h.record(Duration::from_secs(299));
        h.record(Duration::from_secs(300));
        h.record(Duration::from_secs(301));
        assert_eq!(h.count_above(limit), Some(1));
        assert_eq!(h.count_above(Duration::from_secs(1)), None);
    }

    #[test]
    fn base64_round_trip_keeps_percentiles() {
        let mut h = RuntimeHistogram::new();
        for i in 1..=10_000u64 {
            h.record_ns(i * 1_000_000);
        }
        let back = RuntimeHistogram::from_base64_v2(&h.to_base64_v2()).unwrap();
        assert_eq!(back.count(), h.count());
        for q in [0.5, 0.9, 0.99, 0.999] {
            let (a, b) = (h.quantile(q).as_secs_f64(), back.quantile(q).as_secs_f64());
            assert!((a - b).abs() / a < 2e-3, "q={q}: {a} vs {b}");
        }
    }

    #[test]
    fn rank_lookup_matches_order_statistics() {
        let mut h = RuntimeHistogram::new();
        for i in 1..=1000u64 {
            h.record(Duration::from_secs(i));
        }
        for rank in [1u64, 10, 500, 999, 1000] {
            let got = h.value_at_rank(rank).as_secs_f64();
            assert!(
                (got - rank as f64).abs() / (rank as f64) < 1e-3,
                "rank {rank}: {got}"
            );
        }
    }

    #[test]
    fn interval_log_reads_back() {
        use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
        let mut h = RuntimeHistogram::new();
        h.record(Duration::from_secs(240));
        let bytes = interval_log("test", &[("billing/baseline/scale=1".to_string(), &h)]);
        let tags: Vec<String> = IntervalLogIterator::new(&bytes)
            .filter_map(|e| match e {
                Ok(LogEntry::Interval(i)) => i.tag().map(|t| t.as_str().to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(tags, vec!["billing/baseline/scale=1".to_string()]);
    }

    proptest! {
        #[test]
        fn merging_is_order_independent(values in proptest::collection::vec(1u64..10_000_000_000_000, 1..200), split in 0usize..200) {
            let split = split.min(values.len());
            let limit = [Duration::from_secs(1000)];
            let mut whole = RuntimeHistogram::with_thresholds(&limit);
            values.iter().for_each(|v| whole.record_ns(*v));
            let mut left = RuntimeHistogram::with_thresholds(&limit);
            let mut right = RuntimeHistogram::with_thresholds(&limit);
            values[..split].iter().for_each(|v| left.record_ns(*v));
            values[split..].iter().for_each(|v| right.record_ns(*v));
            right.merge(&left);
            prop_assert_eq!(right.count(), whole.count());
            prop_assert_eq!(right.mean(), whole.mean());
            prop_assert_eq!(right.max(), whole.max());
            prop_assert_eq!(right.min(), whole.min());
            prop_assert_eq!(right.quantile(0.999), whole.quantile(0.999));
            prop_assert_eq!(right.count_above(limit[0]), whole.count_above(limit[0]));
        }
    }
}
