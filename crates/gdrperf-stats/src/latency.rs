//! Latency samples: an HDR histogram for every sample, an exact buffer when it fits.
//!
//! # Why two stores
//!
//! * The **HDR histogram** (`hdrhistogram::Histogram<u64>`, 1 ns resolution, 3 significant
//!   digits) has a fixed size (about 200 KiB for a 60 s range) however long the run, so it can
//!   take every sample of a multi-hour soak test. Its percentiles are exact to 3 significant
//!   digits (a value of 1.234 µs is known to within 1 ns; 12.34 µs within 10 ns).
//! * The **exact buffer** (one `u64` per sample, reserved up front) gives true order statistics
//!   and the raw sample dump (perftest's `-H`). It is only kept when the configured iteration
//!   count is at most [`EXACT_SAMPLE_LIMIT`] (8 MB of samples), which covers every perftest-style
//!   latency run.
//!
//! Independently of both, the recorder keeps the exact minimum, maximum, sum and sum of squares
//! (shifted by the first sample, in 128-bit integers), so `t_min`, `t_max`, `t_avg` and `t_stdev`
//! are always exact, whichever store the percentiles come from.
//!
//! # Hot path
//!
//! [`LatencyRecorder::record`] never allocates and never fails: the histogram's range is fixed
//! (auto-resize off), values above it are recorded as the histogram's maximum and counted in
//! [`LatencySummary::saturated`] (never dropped), and the exact buffer only ever pushes below its
//! reserved capacity.
//!
//! # Percentile definition
//!
//! Percentiles use the *nearest-rank* definition, the same one `hdrhistogram`'s
//! `value_at_quantile` uses: the q-quantile of n sorted samples is the sample of rank
//! `max(1, ⌈q·n⌉)`. So `t_typical` (the median) is the sample of rank ⌈n/2⌉. perftest instead reads
//! `delta[⌈0.99·n⌉]` (one rank higher) after dropping its largest samples; gdrperf drops nothing.

use crate::error::StatsError;
use crate::units::nanos_to_micros;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Largest configured iteration count for which exact samples are kept.
pub const EXACT_SAMPLE_LIMIT: u64 = 1_000_000;

/// Default highest trackable latency: 60 s. Generous, because a sample above it is clamped, and a
/// stalled link or a paused process can produce multi-second samples that must stay visible.
pub const DEFAULT_MAX_TRACKABLE_NANOS: u64 = 60_000_000_000;

/// Significant decimal digits the histogram keeps (HdrHistogram's customary 3).
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// Where a summary's percentiles (and median) came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PercentileSource {
    /// Sorted exact samples: true order statistics.
    ExactSamples,
    /// The HDR histogram: within 3 significant digits, clamped into the exact `[t_min, t_max]`.
    Histogram,
}

/// Records latency samples in nanoseconds. See the module documentation.
#[derive(Debug, Clone)]
pub struct LatencyRecorder {
    histogram: Histogram<u64>,
    /// `histogram.high()`, cached: the clamp bound checked on every sample.
    max_trackable_nanos: u64,
    /// Reserved once; `None` when the expected count exceeds [`EXACT_SAMPLE_LIMIT`].
    exact_samples: Option<Vec<u64>>,
    exact_samples_not_stored: u64,
    saturated: u64,
    moments: Moments,
}

/// Exact running moments. Samples are shifted by the first sample before squaring, so that the
/// variance is computed from deviations of similar size to the spread (no catastrophic
/// cancellation when the mean is large compared with the spread), and accumulated in integers so
/// the sums themselves carry no rounding error.
#[derive(Debug, Clone, Copy, Default)]
struct Moments {
    count: u64,
    min: u64,
    max: u64,
    shift: u64,
    shifted_sum: i128,
    shifted_sum_of_squares: u128,
}

impl Moments {
    #[inline]
    fn add(&mut self, nanos: u64) {
        if self.count == 0 {
            self.shift = nanos;
            self.min = nanos;
            self.max = nanos;
        }
        self.count += 1;
        self.min = self.min.min(nanos);
        self.max = self.max.max(nanos);
        let deviation = i128::from(nanos) - i128::from(self.shift);
        let magnitude = u128::from(nanos.abs_diff(self.shift));
        self.shifted_sum = self.shifted_sum.saturating_add(deviation);
        self.shifted_sum_of_squares = self.shifted_sum_of_squares.saturating_add(magnitude * magnitude);
    }

    fn mean(&self) -> f64 {
        self.shift as f64 + self.shifted_sum as f64 / self.count as f64
    }

    /// Population standard deviation (divides by n), matching HdrHistogram's and the `.hgrm`
    /// footer's definition.
    fn standard_deviation(&self) -> f64 {
        let n = self.count as f64;
        let mean_deviation = self.shifted_sum as f64 / n;
        let variance = self.shifted_sum_of_squares as f64 / n - mean_deviation * mean_deviation;
        variance.max(0.0).sqrt()
    }
}

impl LatencyRecorder {
    /// Creates a recorder for a run of `expected_iterations` samples, with the default 60 s range.
    ///
    /// Reserves the exact buffer when `expected_iterations <= EXACT_SAMPLE_LIMIT`.
    pub fn new(expected_iterations: u64) -> Result<Self, StatsError> {
        Self::with_max_trackable(expected_iterations, DEFAULT_MAX_TRACKABLE_NANOS)
    }

    /// Like [`LatencyRecorder::new`] with a chosen highest trackable value (at least 2 ns).
    pub fn with_max_trackable(
        expected_iterations: u64,
        max_trackable_nanos: u64,
    ) -> Result<Self, StatsError> {
        let histogram = Histogram::<u64>::new_with_bounds(1, max_trackable_nanos, SIGNIFICANT_DIGITS)
            .map_err(|source| StatsError::HistogramCreation {
                max_trackable_nanos,
                significant_digits: SIGNIFICANT_DIGITS,
                source,
            })?;
        // new_with_bounds already disables auto-resize; say so explicitly, it is load-bearing:
        // a resize would allocate in the hot path.
        let mut histogram = histogram;
        histogram.auto(false);
        let exact_samples = (expected_iterations <= EXACT_SAMPLE_LIMIT)
            .then(|| Vec::with_capacity(expected_iterations as usize));
        Ok(Self {
            max_trackable_nanos: histogram.high(),
            histogram,
            exact_samples,
            exact_samples_not_stored: 0,
            saturated: 0,
            moments: Moments::default(),
        })
    }

    /// Records one latency sample. Never allocates, never fails. O(1).
    #[inline]
    pub fn record(&mut self, nanos: u64) {
        self.moments.add(nanos);
        if nanos > self.max_trackable_nanos {
            self.saturated += 1;
        }
        self.histogram.saturating_record(nanos.min(self.max_trackable_nanos));
        if let Some(buffer) = self.exact_samples.as_mut() {
            if buffer.len() < buffer.capacity() {
                buffer.push(nanos);
            } else {
                self.exact_samples_not_stored += 1;
            }
        }
    }

    /// Samples recorded so far.
    pub fn count(&self) -> u64 {
        self.moments.count
    }

    /// Samples above the histogram's range (recorded in it as its maximum).
    pub fn saturated(&self) -> u64 {
        self.saturated
    }

    /// The histogram of every sample, for `.hgrm`, V2 and interval-log output.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.histogram
    }

    /// Every sample in recording order, or `None` when the exact buffer was not kept (too many
    /// expected iterations) or could not hold them all (more samples than expected). A partial
    /// dump is never handed out, because it would silently misrepresent the run.
    pub fn exact_samples(&self) -> Option<&[u64]> {
        match &self.exact_samples {
            Some(buffer) if self.exact_samples_not_stored == 0 => Some(buffer),
            _ => None,
        }
    }

    /// Slots reserved for exact samples (0 when there is no exact buffer); for tests and sizing.
    pub fn exact_capacity(&self) -> usize {
        self.exact_samples.as_ref().map_or(0, Vec::capacity)
    }

    /// Computes the summary. Percentiles come from the exact samples when every sample is there
    /// ([`PercentileSource::ExactSamples`]), otherwise from the histogram; min, max, mean and
    /// standard deviation are exact either way.
    ///
    /// Allocates a sorted copy of the exact samples; call it after the timed loop.
    pub fn summary(&self) -> Result<LatencySummary, StatsError> {
        if self.moments.count == 0 {
            return Err(StatsError::NoLatencySamples);
        }
        let (order_statistics, percentile_source) = match self.exact_samples() {
            Some(samples) => {
                let mut sorted = samples.to_vec();
                sorted.sort_unstable();
                (OrderStatistics::from_sorted(&sorted), PercentileSource::ExactSamples)
            }
            None => (
                OrderStatistics::from_histogram(&self.histogram, self.moments.min, self.moments.max),
                PercentileSource::Histogram,
            ),
        };
        Ok(LatencySummary {
            count: self.moments.count,
            t_min_nanos: self.moments.min,
            t_max_nanos: self.moments.max,
            t_typical_nanos: order_statistics.median,
            t_avg_nanos: self.moments.mean(),
            t_stdev_nanos: self.moments.standard_deviation(),
            p99_nanos: order_statistics.p99,
            p99_9_nanos: order_statistics.p99_9,
            p99_99_nanos: order_statistics.p99_99,
            saturated: self.saturated,
            percentile_source,
        })
    }
}

/// The nearest-rank index (0-based) of quantile `q` among `n` sorted samples, computed with the
/// same floating-point expression as `hdrhistogram::Histogram::value_at_quantile`, so the exact
/// and histogram paths pick the same rank.
pub fn nearest_rank_index(quantile: f64, n: usize) -> usize {
    let rank = (quantile.min(1.0) * n as f64).ceil() as usize;
    rank.clamp(1, n.max(1)) - 1
}

/// The percentiles a summary reports.
struct OrderStatistics {
    median: u64,
    p99: u64,
    p99_9: u64,
    p99_99: u64,
}

impl OrderStatistics {
    fn from_sorted(sorted: &[u64]) -> Self {
        let at = |quantile: f64| sorted[nearest_rank_index(quantile, sorted.len())];
        Self { median: at(0.5), p99: at(0.99), p99_9: at(0.999), p99_99: at(0.9999) }
    }

    /// HDR reports the highest value equivalent to the bucket holding the rank; the exact min
    /// and max are known, so values are clamped into them (a p99.99 above the true max would be
    /// an artefact of bucketing, not a measurement).
    fn from_histogram(histogram: &Histogram<u64>, min: u64, max: u64) -> Self {
        let at = |quantile: f64| histogram.value_at_quantile(quantile).clamp(min, max);
        Self { median: at(0.5), p99: at(0.99), p99_9: at(0.999), p99_99: at(0.9999) }
    }
}

/// Summary of a latency run, in integer nanoseconds (mean and deviation in floating point).
///
/// Field names follow perftest's columns (`t_min`, `t_max`, `t_typical`, `t_avg`, `t_stdev`,
/// `99%`, `99.9%`), plus 99.99%. Unlike perftest, `t_stdev` is a true floating-point standard
/// deviation (perftest truncates each deviation to an integer number of µs, so its stdev reads
/// about 0 for sub-µs jitter).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Samples summarised.
    pub count: u64,
    /// Smallest sample (exact).
    pub t_min_nanos: u64,
    /// Largest sample (exact, even when above the histogram's range).
    pub t_max_nanos: u64,
    /// Median, nearest rank ⌈n/2⌉.
    pub t_typical_nanos: u64,
    /// Arithmetic mean (exact).
    pub t_avg_nanos: f64,
    /// Population standard deviation (exact up to floating-point rounding).
    pub t_stdev_nanos: f64,
    /// 99th percentile.
    pub p99_nanos: u64,
    /// 99.9th percentile.
    pub p99_9_nanos: u64,
    /// 99.99th percentile.
    pub p99_99_nanos: u64,
    /// Samples above the histogram's range (clamped there; only matters for
    /// [`PercentileSource::Histogram`] percentiles).
    pub saturated: u64,
    /// Where the median and percentiles came from.
    pub percentile_source: PercentileSource,
}

impl LatencySummary {
    /// `t_min` in µs.
    pub fn t_min_micros(&self) -> f64 {
        nanos_to_micros(self.t_min_nanos as f64)
    }
    /// `t_max` in µs.
    pub fn t_max_micros(&self) -> f64 {
        nanos_to_micros(self.t_max_nanos as f64)
    }
    /// `t_typical` (median) in µs.
    pub fn t_typical_micros(&self) -> f64 {
        nanos_to_micros(self.t_typical_nanos as f64)
    }
    /// `t_avg` in µs.
    pub fn t_avg_micros(&self) -> f64 {
        nanos_to_micros(self.t_avg_nanos)
    }
    /// `t_stdev` in µs.
    pub fn t_stdev_micros(&self) -> f64 {
        nanos_to_micros(self.t_stdev_nanos)
    }
    /// 99th percentile in µs.
    pub fn p99_micros(&self) -> f64 {
        nanos_to_micros(self.p99_nanos as f64)
    }
    /// 99.9th percentile in µs.
    pub fn p99_9_micros(&self) -> f64 {
        nanos_to_micros(self.p99_9_nanos as f64)
    }
    /// 99.99th percentile in µs.
    pub fn p99_99_micros(&self) -> f64 {
        nanos_to_micros(self.p99_99_nanos as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_without_samples_is_an_error() {
        let recorder = LatencyRecorder::new(10).unwrap();
        assert!(matches!(recorder.summary(), Err(StatsError::NoLatencySamples)));
    }

    #[test]
    fn a_range_below_two_nanoseconds_is_a_creation_error() {
        assert!(matches!(
            LatencyRecorder::with_max_trackable(10, 1),
            Err(StatsError::HistogramCreation { max_trackable_nanos: 1, .. })
        ));
    }

    #[test]
    fn histogram_never_auto_resizes() {
        let recorder = LatencyRecorder::new(10).unwrap();
        assert!(!recorder.histogram().is_auto_resize());
        assert!(recorder.histogram().high() >= DEFAULT_MAX_TRACKABLE_NANOS);
    }

    #[test]
    fn exact_buffer_is_kept_up_to_the_limit_only() {
        assert_eq!(
            LatencyRecorder::new(EXACT_SAMPLE_LIMIT).unwrap().exact_capacity() as u64,
            EXACT_SAMPLE_LIMIT
        );
        assert_eq!(LatencyRecorder::new(EXACT_SAMPLE_LIMIT + 1).unwrap().exact_capacity(), 0);
    }

    #[test]
    fn samples_above_the_range_are_clamped_and_counted_not_dropped() {
        let mut recorder = LatencyRecorder::with_max_trackable(4, 1_000_000).unwrap();
        let high = recorder.histogram().high();
        for sample in [500, 600, 5_000_000, 7_000_000] {
            recorder.record(sample);
        }
        assert_eq!(recorder.saturated(), 2);
        assert_eq!(recorder.histogram().len(), 4, "every sample is in the histogram");
        assert_eq!(recorder.histogram().count_at(high), 2);
        let summary = recorder.summary().unwrap();
        assert_eq!(summary.saturated, 2);
        assert_eq!(summary.t_max_nanos, 7_000_000, "the true maximum survives");
    }

    #[test]
    fn more_samples_than_expected_switch_percentiles_to_the_histogram() {
        let mut recorder = LatencyRecorder::new(100).unwrap();
        let capacity = recorder.exact_capacity();
        for sample in 0..(capacity as u64 + 50) {
            recorder.record(1000 + sample);
        }
        assert_eq!(recorder.exact_capacity(), capacity, "the exact buffer must never grow");
        assert!(recorder.exact_samples().is_none(), "no partial dump");
        let summary = recorder.summary().unwrap();
        assert_eq!(summary.percentile_source, PercentileSource::Histogram);
        assert_eq!(summary.count, capacity as u64 + 50);
    }

    #[test]
    fn nearest_rank_matches_the_textbook_definition() {
        // n = 4: median is rank 2, p99 is rank 4.
        assert_eq!(nearest_rank_index(0.5, 4), 1);
        assert_eq!(nearest_rank_index(0.99, 4), 3);
        assert_eq!(nearest_rank_index(0.0, 4), 0);
        assert_eq!(nearest_rank_index(1.0, 4), 3);
        // n = 5: median is rank 3.
        assert_eq!(nearest_rank_index(0.5, 5), 2);
    }

    #[test]
    fn micros_helpers_divide_by_one_thousand() {
        let mut recorder = LatencyRecorder::new(2).unwrap();
        recorder.record(1500);
        recorder.record(2500);
        let summary = recorder.summary().unwrap();
        assert_eq!(summary.t_min_micros(), 1.5);
        assert_eq!(summary.t_max_micros(), 2.5);
        assert_eq!(summary.t_avg_micros(), 2.0);
        assert_eq!(summary.t_stdev_micros(), 0.5);
        assert_eq!(summary.t_typical_micros(), 1.5);
    }
}
