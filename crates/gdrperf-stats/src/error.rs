//! Errors of the statistics crate: one variant per call that can fail, each saying what to do.

use hdrhistogram::serialization::interval_log::IntervalLogWriterError;
use hdrhistogram::serialization::{DeserializeError, V2DeflateSerializeError, V2SerializeError};
use hdrhistogram::{AdditionError, CreationError, SubtractionError};
use std::io;
use thiserror::Error;

/// Errors from building or reading the meters ([`crate::BandwidthMeter`], [`crate::LatencyRecorder`]).
#[derive(Debug, Error)]
pub enum StatsError {
    /// `BandwidthMeter::new` was given a zero message size.
    #[error("message size must be at least 1 byte, got 0; check the -s/--size value")]
    ZeroMessageSize,

    /// `BandwidthMeter::report` was called before any completion was recorded.
    #[error(
        "no completions were recorded, so bandwidth is undefined; \
         the run posted no work or the harness never called record_completion"
    )]
    NoCompletions,

    /// `BandwidthMeter::report`: every completion carries the first post's timestamp.
    #[error(
        "all {messages} completed messages are stamped at the first post's instant (0 ns), so \
         bandwidth is undefined; completion timestamps must be nanoseconds since the first post \
         (use RunClock started just before the first post)"
    )]
    ZeroElapsedTime {
        /// Messages recorded at time zero.
        messages: u64,
    },

    /// `-D`'s measurement window saw no completion, or has no length.
    #[error(
        "no completion inside the measurement window {start_nanos} ns .. {end_nanos} ns \
         (a -D run shorter than its margins, or a peer that stopped early)"
    )]
    EmptyWindow {
        /// Start of the window, nanoseconds since the first post.
        start_nanos: u64,
        /// End of the window.
        end_nanos: u64,
    },

    /// `LatencyRecorder::new` could not build its histogram.
    #[error(
        "cannot create the latency histogram (1 ns .. {max_trackable_nanos} ns, \
         {significant_digits} significant digits): {source}"
    )]
    HistogramCreation {
        /// Highest trackable value requested.
        max_trackable_nanos: u64,
        /// Significant decimal digits requested.
        significant_digits: u8,
        /// hdrhistogram's reason.
        source: CreationError,
    },

    /// `LatencyRecorder::summary` was called before any sample was recorded.
    #[error(
        "no latency samples were recorded, so there is nothing to summarise; \
         check that the iteration count (-n) is at least 1 and the warm-up did not consume it all"
    )]
    NoLatencySamples,
}

/// Errors from writing or reading HDR output files (module [`crate::hdr_output`]).
#[derive(Debug, Error)]
pub enum HdrOutputError {
    /// `write_percentile_distribution` could not write the `.hgrm` text.
    #[error(
        "writing the .hgrm percentile distribution failed: {0}; check the output path and free disk space"
    )]
    WritePercentiles(#[source] io::Error),

    /// `write_v2_histogram` could not encode or write the histogram.
    #[error("writing the V2-encoded histogram failed: {0}; check the output path and free disk space")]
    WriteV2(#[source] V2SerializeError),

    /// `read_v2_histogram` could not decode the input.
    #[error("reading a V2-encoded histogram failed: {0}; is the file a gdrperf/HdrHistogram .hdr file?")]
    ReadV2(#[source] DeserializeError),

    /// `LatencyIntervalLog::new` was given a tag HdrHistogram's log format cannot hold.
    #[error("interval log tag {0:?} is invalid: tags may not be empty or contain ',', ' ', '\\r' or '\\n'")]
    InvalidTag(String),

    /// `LatencyIntervalLog::new` could not write the log header.
    #[error("writing the interval log header failed: {0}; check the output path and free disk space")]
    WriteIntervalHeader(#[source] io::Error),

    /// `LatencyIntervalLog::write_interval` was given an end time before the previous interval's end.
    #[error(
        "interval end {end_nanos} ns is before the previous interval's end {previous_end_nanos} ns; \
         interval ends must come from one RunClock and be passed in order"
    )]
    IntervalEndsBackwards {
        /// End of the previously written interval.
        previous_end_nanos: u64,
        /// The end time passed now.
        end_nanos: u64,
    },

    /// `LatencyIntervalLog::write_interval`: the cumulative histogram has a different range than
    /// the first one the log saw.
    #[error(
        "the cumulative histogram's range changed between intervals ({0}); \
         pass the same LatencyRecorder's histogram every time"
    )]
    IntervalHistogramRange(#[source] AdditionError),

    /// `LatencyIntervalLog::write_interval`: the cumulative histogram holds fewer samples than at
    /// the previous interval.
    #[error(
        "the cumulative histogram lost samples since the previous interval ({0}); \
         it must only grow: do not reset the recorder while an interval log is open"
    )]
    IntervalHistogramShrank(#[source] SubtractionError),

    /// `LatencyIntervalLog::write_interval` could not encode or write one interval line.
    #[error("writing an interval log line failed: {0}; check the output path and free disk space")]
    WriteInterval(#[source] IntervalLogWriterError<V2DeflateSerializeError>),

    /// `LatencyIntervalLog::into_inner` could not flush the last lines.
    #[error("flushing the interval log failed: {0}; check the output path and free disk space")]
    FlushIntervalLog(#[source] io::Error),

    /// `write_raw_samples` could not write the sample dump.
    #[error("writing the raw latency samples failed: {0}; check the output path and free disk space")]
    WriteRawSamples(#[source] io::Error),
}
