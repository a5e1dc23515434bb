//! Writing latency distributions in the formats HdrHistogram's tools read.
//!
//! * [`write_percentile_distribution`]: the `.hgrm` text that Java's
//!   `AbstractHistogram.outputPercentileDistribution` and `HistogramLogProcessor` print, and that
//!   HdrHistogram's online plotter (`plotFiles.html`) reads to draw percentile curves.
//! * [`write_v2_histogram`] / [`read_v2_histogram`]: the binary V2 encoding (uncompressed), a
//!   lossless copy of the histogram that can be re-read, merged or re-plotted later.
//! * [`LatencyIntervalLog`]: an interval log (one compressed histogram per interval, the format of
//!   Java's `HistogramLogWriter`), so a long run shows *when* the tail happened, not only that it did.
//! * [`write_raw_samples`]: every sample, one per line (perftest's `-H`/`-U` dumps).
//!
//! Histograms hold nanoseconds; the `.hgrm` text is written in microseconds (scaling ratio 1000)
//! because that is the unit latency plots are read in.

use crate::error::HdrOutputError;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer, V2Serializer};
use hdrhistogram::Histogram;
use std::io::{self, BufWriter, Read, Write};
use std::num::NonZeroU32;
use std::time::{Duration, SystemTime};

/// Layout of the `.hgrm` percentile table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PercentileTableFormat {
    /// Rows per halving of the distance to 100% (Java's `percentileTicksPerHalfDistance`). 5, the
    /// Java default, gives rows at 0%, 10%, ... 50%, 55%, ... 75%, 77.5%, ... so the tail gets
    /// ever finer rows.
    pub ticks_per_half_distance: NonZeroU32,
    /// Histogram values are divided by this before printing (Java's `outputValueUnitScalingRatio`);
    /// 1000 turns nanoseconds into microseconds.
    pub value_unit_scaling_ratio: f64,
}

impl Default for PercentileTableFormat {
    /// Java's defaults for nanosecond data printed in microseconds: 5 ticks, ratio 1000.
    fn default() -> Self {
        Self {
            ticks_per_half_distance: NonZeroU32::new(5).expect("5 is not zero"),
            value_unit_scaling_ratio: 1000.0,
        }
    }
}

/// Writes `histogram` as an `.hgrm` percentile distribution, byte-compatible with Java's
/// `outputPercentileDistribution` (non-CSV form):
///
/// ```text
///        Value     Percentile TotalCount 1/(1-Percentile)
///
///        1.000 0.000000000000          1           1.00
///        1.900 0.100000000000       1001           1.11
///        ...
///       10.007 0.999902343750      10000       10240.00
///       10.007 1.000000000000      10000
/// #[Mean    =        5.500, StdDeviation   =        2.598]
/// #[Max     =       10.007, Total count    =        10000]
/// #[Buckets =           26, SubBuckets     =         2048]
/// ```
///
/// (10 000 samples spread evenly over 1–10 µs, recorded in ns, printed in µs.)
///
/// Values are printed with as many decimals as the histogram has significant digits; the last row
/// (percentile 1.0) has no `1/(1-Percentile)` column, as in Java. Mean and standard deviation in the
/// footer are the histogram's own (bucket-midpoint) estimates, so the footer describes exactly
/// the data in the table.
pub fn write_percentile_distribution<W: Write>(
    histogram: &Histogram<u64>,
    out: &mut W,
    format: PercentileTableFormat,
) -> Result<(), HdrOutputError> {
    write_percentile_table(histogram, out, format).map_err(HdrOutputError::WritePercentiles)
}

fn write_percentile_table<W: Write>(
    histogram: &Histogram<u64>,
    out: &mut W,
    format: PercentileTableFormat,
) -> io::Result<()> {
    let mut out = BufWriter::new(out);
    let decimals = usize::from(histogram.sigfig());
    let ratio = format.value_unit_scaling_ratio;
    writeln!(out, "{:>12} {:>14} {:>10} {:>14}\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)")?;
    // The quantile iterator never ends on an empty histogram's (non-existent) last value, so only
    // iterate when there is something to print; an empty table with a footer is still valid.
    if !histogram.is_empty() {
        let mut total_count: u64 = 0;
        for step in histogram.iter_quantiles(format.ticks_per_half_distance.get()) {
            total_count += step.count_since_last_iteration();
            let value = step.value_iterated_to() as f64 / ratio;
            let quantile = step.quantile_iterated_to();
            if quantile < 1.0 {
                let inverse = 1.0 / (1.0 - quantile);
                writeln!(out, "{value:12.decimals$} {quantile:2.12} {total_count:10} {inverse:14.2}")?;
            } else {
                writeln!(out, "{value:12.decimals$} {quantile:2.12} {total_count:10}")?;
            }
        }
    }
    let mean = histogram.mean() / ratio;
    let deviation = histogram.stdev() / ratio;
    let max = histogram.max() as f64 / ratio;
    writeln!(out, "#[Mean    = {mean:12.decimals$}, StdDeviation   = {deviation:12.decimals$}]")?;
    writeln!(out, "#[Max     = {max:12.decimals$}, Total count    = {:12}]", histogram.len())?;
    writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        histogram.buckets(),
        sub_bucket_count(histogram.sigfig())
    )?;
    out.flush()
}

/// Java's `subBucketCount`: the power of two that holds `2 × 10^sigfig` values at unit resolution
/// (2048 for 3 digits). `hdrhistogram` does not expose it, and the footer should match Java's.
fn sub_bucket_count(significant_digits: u8) -> u64 {
    (2 * 10_u64.pow(u32::from(significant_digits))).next_power_of_two()
}

/// Writes `histogram` in HdrHistogram's V2 binary encoding (uncompressed). Returns bytes written.
pub fn write_v2_histogram<W: Write>(
    histogram: &Histogram<u64>,
    out: &mut W,
) -> Result<usize, HdrOutputError> {
    V2Serializer::new().serialize(histogram, out).map_err(HdrOutputError::WriteV2)
}

/// Reads a histogram written by [`write_v2_histogram`] (or any V2 / V2-deflate encoder, e.g. Java's).
pub fn read_v2_histogram<R: Read>(input: &mut R) -> Result<Histogram<u64>, HdrOutputError> {
    Deserializer::new().deserialize(input).map_err(HdrOutputError::ReadV2)
}

/// Order of a raw sample dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawSampleOrder {
    /// As recorded: shows drift and periodic stalls over the run (perftest's `-U`).
    AsRecorded,
    /// Ascending: the empirical distribution (perftest's `-H`).
    Sorted,
}

/// Header line of a raw sample dump: names the unit, and doubles as a CSV column name.
pub const RAW_SAMPLES_HEADER: &str = "latency_ns";

/// Writes every sample, one integer nanosecond value per line, after a [`RAW_SAMPLES_HEADER`]
/// line. Unlike perftest, nothing is trimmed from the tail.
pub fn write_raw_samples<W: Write>(
    samples: &[u64],
    order: RawSampleOrder,
    out: &mut W,
) -> Result<(), HdrOutputError> {
    let sorted;
    let samples = match order {
        RawSampleOrder::AsRecorded => samples,
        RawSampleOrder::Sorted => {
            let mut copy = samples.to_vec();
            copy.sort_unstable();
            sorted = copy;
            &sorted
        }
    };
    let mut out = BufWriter::new(out);
    let result: io::Result<()> = (|| {
        writeln!(out, "{RAW_SAMPLES_HEADER}")?;
        for sample in samples {
            writeln!(out, "{sample}")?;
        }
        out.flush()
    })();
    result.map_err(HdrOutputError::WriteRawSamples)
}

/// The slowest samples perftest leaves out of its sorted listing and its statistics
/// (`LAT_MEASURE_TAIL`, `perftest_parameters.c` beside `print_report_lat`).
pub const PERFTEST_MEASURE_TAIL: usize = 2;

/// perftest's `-H`/`-U` listing (`print_report_lat` in `perftest_parameters.c`): a `#, usec`
/// line, then `i, value` per sample with `i` counting from 1 and the value in microseconds.
/// [`RawSampleOrder::Sorted`] is `-H`: ascending, less the [`PERFTEST_MEASURE_TAIL`] largest
/// (perftest sorts, then shortens the count by the tail before printing);
/// [`RawSampleOrder::AsRecorded`] is `-U`: every sample in the order taken. perftest prints `%g`
/// (six significant digits); this prints the exact nanosecond value in µs (`1.234`), which is the
/// same number for any sample under a millisecond.
pub fn write_perftest_listing<W: Write>(
    samples: &[u64],
    order: RawSampleOrder,
    out: &mut W,
) -> Result<(), HdrOutputError> {
    let mut listed = samples.to_vec();
    if order == RawSampleOrder::Sorted {
        listed.sort_unstable();
        listed.truncate(listed.len().saturating_sub(PERFTEST_MEASURE_TAIL));
    }
    let mut out = BufWriter::new(out);
    let result: io::Result<()> = (|| {
        writeln!(out, "#, usec")?;
        for (index, nanos) in listed.iter().enumerate() {
            writeln!(out, "{}, {}", index + 1, *nanos as f64 / 1000.0)?;
        }
        out.flush()
    })();
    result.map_err(HdrOutputError::WriteRawSamples)
}

/// An HdrHistogram interval log for long runs: one histogram per interval, written as
/// `[Tag=<tag>,]<start s>,<length s>,<max ns>,<base64 V2-deflate histogram>` lines after a header
/// with `StartTime`/`BaseTime` (so interval starts are seconds since the run began).
///
/// The caller passes the *cumulative* histogram ([`crate::LatencyRecorder::histogram`]) at each
/// interval boundary; the log subtracts the previous boundary's copy to get the interval's
/// samples. That keeps the hot path at one histogram record per sample (no second, per-interval
/// histogram to update), and the copies are made at interval boundaries, not per sample.
///
/// The result reads with Java's `HistogramLogProcessor` (pass `-outputValueUnitRatio 1000` for
/// µs, since values are ns) and with `hdrhistogram::serialization::interval_log::IntervalLogIterator`.
pub struct LatencyIntervalLog<W: Write> {
    out: W,
    serializer: V2DeflateSerializer,
    tag: Option<String>,
    previous_cumulative: Option<Histogram<u64>>,
    interval: Option<Histogram<u64>>,
    previous_end_nanos: u64,
}

impl<W: Write> LatencyIntervalLog<W> {
    /// Starts a log on `out` and writes its header. `run_start` is the wall-clock time of the
    /// run's [`crate::RunClock`] origin; `tag` (optional) labels every interval, e.g. the message
    /// size, and may not contain `,`, space, `\r` or `\n`.
    pub fn new(mut out: W, run_start: SystemTime, tag: Option<&str>) -> Result<Self, HdrOutputError> {
        if let Some(text) = tag {
            if text.is_empty() || Tag::new(text).is_none() {
                return Err(HdrOutputError::InvalidTag(text.to_owned()));
            }
        }
        let mut serializer = V2DeflateSerializer::new();
        IntervalLogWriterBuilder::new()
            .add_comment(concat!("[Logged with gdrperf-stats ", env!("CARGO_PKG_VERSION"), "]"))
            .add_comment("[Histogram log format version 1.3]")
            .add_comment("[Values are latencies in nanoseconds; Interval_Max is in nanoseconds]")
            .with_start_time(run_start)
            .with_base_time(run_start)
            .begin_log_with(&mut out, &mut serializer)
            .map_err(HdrOutputError::WriteIntervalHeader)?;
        writeln!(
            out,
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        )
        .map_err(HdrOutputError::WriteIntervalHeader)?;
        Ok(Self {
            out,
            serializer,
            tag: tag.map(str::to_owned),
            previous_cumulative: None,
            interval: None,
            previous_end_nanos: 0,
        })
    }

    /// Writes the interval from the previous boundary (or the run start) to `end_nanos` (on the
    /// run's [`crate::RunClock`]), holding the samples `cumulative` gained since then.
    ///
    /// Allocates two histogram copies on the first call only.
    pub fn write_interval(
        &mut self,
        cumulative: &Histogram<u64>,
        end_nanos: u64,
    ) -> Result<(), HdrOutputError> {
        if end_nanos < self.previous_end_nanos {
            return Err(HdrOutputError::IntervalEndsBackwards {
                previous_end_nanos: self.previous_end_nanos,
                end_nanos,
            });
        }
        let previous = self.previous_cumulative.get_or_insert_with(|| Histogram::new_from(cumulative));
        let interval = self.interval.get_or_insert_with(|| Histogram::new_from(cumulative));
        interval.set_to(cumulative).map_err(HdrOutputError::IntervalHistogramRange)?;
        interval.subtract(&*previous).map_err(HdrOutputError::IntervalHistogramShrank)?;
        previous.set_to(cumulative).map_err(HdrOutputError::IntervalHistogramRange)?;

        let start = Duration::from_nanos(self.previous_end_nanos);
        let length = Duration::from_nanos(end_nanos - self.previous_end_nanos);
        let tag = self.tag.as_deref().and_then(Tag::new);
        IntervalLogWriterBuilder::new()
            // No comments or times configured: this writes nothing, it only borrows the writer.
            .begin_log_with(&mut self.out, &mut self.serializer)
            .map_err(HdrOutputError::WriteIntervalHeader)?
            .write_histogram(interval, start, length, tag)
            .map_err(HdrOutputError::WriteInterval)?;
        self.previous_end_nanos = end_nanos;
        Ok(())
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> Result<W, HdrOutputError> {
        self.out.flush().map_err(HdrOutputError::FlushIntervalLog)?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perftest_listings_sort_less_the_two_largest_or_keep_the_order() {
        let samples = [3_000, 1_234, 9_999_000, 2_000, 5_500];
        let listing = |order| {
            let mut out = Vec::new();
            write_perftest_listing(&samples, order, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(listing(RawSampleOrder::Sorted), "#, usec\n1, 1.234\n2, 2\n3, 3\n");
        assert_eq!(listing(RawSampleOrder::AsRecorded), "#, usec\n1, 3\n2, 1.234\n3, 9999\n4, 2\n5, 5.5\n");
        let mut out = Vec::new();
        write_perftest_listing(&[7], RawSampleOrder::Sorted, &mut out).unwrap();
        assert_eq!(out, b"#, usec\n", "fewer samples than the tail: nothing listed");
    }

    #[test]
    fn sub_bucket_count_matches_java_for_common_precisions() {
        assert_eq!(sub_bucket_count(0), 2);
        assert_eq!(sub_bucket_count(2), 256);
        assert_eq!(sub_bucket_count(3), 2048);
        assert_eq!(sub_bucket_count(5), 262_144);
    }

    #[test]
    fn invalid_tags_are_rejected_before_anything_is_written() {
        for bad in ["", "a,b", "a b", "a\nb"] {
            let mut out = Vec::new();
            let result = LatencyIntervalLog::new(&mut out, SystemTime::UNIX_EPOCH, Some(bad));
            assert!(matches!(result, Err(HdrOutputError::InvalidTag(_))), "{bad:?}");
            assert!(out.is_empty());
        }
    }
}
