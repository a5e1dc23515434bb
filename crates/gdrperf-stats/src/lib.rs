//! gdrperf's measurement statistics: what a benchmark's hot loop records, and what it reports.
//!
//! The bench binaries do three things with this crate, in this order:
//!
//! 1. **Before the timed loop**, size everything: a [`BandwidthMeter`] or a [`LatencyRecorder`]
//!    reserves all the memory it will ever use, so that recording allocates nothing and cannot
//!    perturb the measurement.
//! 2. **In the timed loop**, read the clock ([`RunClock::now_nanos`], a vDSO read of
//!    `CLOCK_MONOTONIC`) and record: [`BandwidthMeter::record_post`] per post call (with a reading it already has),
//!    [`BandwidthMeter::record_completion`] per completion event,
//!    [`LatencyRecorder::record`] per round trip. Both are O(1), never allocate, never fail.
//! 3. **After the loop**, report: [`BandwidthMeter::report`] gives perftest's average and peak
//!    bandwidth and message rate ([`BandwidthReport`]); [`LatencyRecorder::summary`] gives
//!    perftest's latency columns with true floating-point deviation and tail percentiles
//!    ([`LatencySummary`]); [`hdr_output`] writes the distribution for HdrHistogram's plotter and
//!    log tools.
//!
//! ```
//! use gdrperf_stats::{BandwidthMeter, LatencyRecorder, RunClock};
//!
//! // A write_bw run: 4 KiB messages, tx depth 8, one signalled completion per 4 messages.
//! let mut meter = BandwidthMeter::new(4096, 1000)?;
//! meter.record_post(0, 8); // 8 posted at the start
//! meter.record_completion(2_000, 4); // the first 4 seen complete at 2 µs
//! meter.record_post(2_000, 4); // 4 more posted into the room they left
//! meter.record_completion(3_000, 4);
//! meter.record_post(3_000, 4);
//! meter.record_completion(4_000, 4);
//! meter.record_completion(5_000, 4);
//! let report = meter.report()?;
//! // Peak: perftest's fastest post-to-completion span, here 16 messages from 0 to 5 µs (the
//! // later posts' spans are slower: 8 in 3 µs from 2 µs, 4 in 2 µs from 3 µs).
//! assert_eq!(report.peak_span.map(|span| (span.messages, span.nanos)), Some((16, 5_000)));
//! assert!((report.average.gbit_per_second() - 16.0 * 4096.0 * 8.0 / 5_000.0).abs() < 1e-9);
//! assert_eq!(report.message_rate.mpps(), 16.0 / 5_000.0 * 1e3); // 16 messages in 5 µs
//!
//! // A write_lat run: samples in nanoseconds from one clock.
//! let clock = RunClock::start();
//! let mut latency = LatencyRecorder::new(3)?;
//! for sample in [1_200, 1_100, 1_300] {
//!     latency.record(sample);
//! }
//! let _elapsed = clock.now_nanos();
//! assert_eq!(latency.summary()?.t_typical_nanos, 1_200);
//! # Ok::<(), gdrperf_stats::StatsError>(())
//! ```

pub mod aggregate;
pub mod bandwidth;
pub mod clock;
pub mod copy_time;
pub mod error;
pub mod hdr_output;
pub mod latency;
pub mod peak;
pub mod sample_clock;
pub mod units;

pub use aggregate::{aggregate_rate, AggregateRate, LaneSpan};
pub use bandwidth::{BandwidthMeter, BandwidthReport, CompletionEvent, MeasurementWindow};
pub use clock::RunClock;
pub use copy_time::{busy_nanos, one_at_a_time, CopyInterval, OneAtATime};
pub use error::{HdrOutputError, StatsError};
pub use hdr_output::{
    read_v2_histogram, write_percentile_distribution, write_perftest_listing, write_raw_samples,
    write_v2_histogram, LatencyIntervalLog, PercentileTableFormat, RawSampleOrder,
};
pub use latency::{LatencyRecorder, LatencySummary, PercentileSource};
pub use peak::{CompletionMark, PeakSpan, PostMark};
pub use sample_clock::{ClockFacts, ClockSource, SampleClock, Stamp};
pub use units::{Bandwidth, MessageRate};

/// Re-exported so callers name the same `Histogram` type this crate returns.
pub use hdrhistogram;
