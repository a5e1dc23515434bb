//! HDR output: the .hgrm table parses as HdrHistogram's plotter expects, V2 round-trips, interval
//! logs read back with the per-interval samples, raw dumps hold every sample.

mod common;

use common::{base64_decode, bimodal_samples, uniform_samples};
use gdrperf_stats::hdr_output::RAW_SAMPLES_HEADER;
use gdrperf_stats::hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use gdrperf_stats::hdrhistogram::serialization::Deserializer;
use gdrperf_stats::hdrhistogram::Histogram;
use gdrperf_stats::{
    read_v2_histogram, write_percentile_distribution, write_raw_samples, write_v2_histogram, HdrOutputError,
    LatencyIntervalLog, LatencyRecorder, PercentileTableFormat, RawSampleOrder,
};
use std::time::{Duration, SystemTime};

const HGRM_HEADER: &str = "       Value     Percentile TotalCount 1/(1-Percentile)";

fn recorder_with(samples: &[u64]) -> LatencyRecorder {
    let mut recorder = LatencyRecorder::new(samples.len() as u64).unwrap();
    for &sample in samples {
        recorder.record(sample);
    }
    recorder
}

fn hgrm_text(histogram: &Histogram<u64>) -> String {
    let mut out = Vec::new();
    write_percentile_distribution(histogram, &mut out, PercentileTableFormat::default()).unwrap();
    String::from_utf8(out).unwrap()
}

struct HgrmRow {
    value: f64,
    percentile: f64,
    total_count: u64,
    inverse: Option<f64>,
}

fn parse_rows(text: &str) -> Vec<HgrmRow> {
    text.lines()
        .skip(2)
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let columns: Vec<&str> = line.split_whitespace().collect();
            assert!(columns.len() == 3 || columns.len() == 4, "bad row {line:?}");
            HgrmRow {
                value: columns[0].parse().unwrap(),
                percentile: columns[1].parse().unwrap(),
                total_count: columns[2].parse().unwrap(),
                inverse: columns.get(3).map(|c| c.parse().unwrap()),
            }
        })
        .collect()
}

fn footer_value(text: &str, label: &str) -> String {
    let start = text.find(label).unwrap_or_else(|| panic!("{label} missing")) + label.len();
    let rest = &text[start..];
    let end = rest.find([',', ']']).unwrap();
    rest[..end].trim().trim_start_matches('=').trim().to_owned()
}

#[test]
fn hgrm_table_parses_with_monotonic_columns_and_a_final_row_at_one() {
    for samples in [uniform_samples(50_000, 7), bimodal_samples(50_000, 8)] {
        let recorder = recorder_with(&samples);
        let histogram = recorder.histogram();
        let text = hgrm_text(histogram);
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(HGRM_HEADER));
        assert_eq!(lines.next(), Some(""));

        let rows = parse_rows(&text);
        assert!(rows.len() > 20, "only {} rows", rows.len());
        assert_eq!(rows[0].percentile, 0.0);
        assert_eq!(rows[0].value, histogram.min() as f64 / 1000.0, "first row is the minimum, in µs");
        for pair in rows.windows(2) {
            assert!(pair[1].value >= pair[0].value, "values must not decrease");
            assert!(pair[1].percentile > pair[0].percentile, "percentiles must increase");
            assert!(pair[1].total_count >= pair[0].total_count, "counts must not decrease");
        }
        for row in &rows[..rows.len() - 1] {
            assert!((0.0..1.0).contains(&row.percentile));
            let inverse = row.inverse.expect("non-final rows have 1/(1-Percentile)");
            assert!((inverse - 1.0 / (1.0 - row.percentile)).abs() < 0.01);
        }
        let last = rows.last().unwrap();
        assert_eq!(last.percentile, 1.0);
        assert!(last.inverse.is_none(), "the final row has three columns, as in Java");
        assert_eq!(last.total_count, samples.len() as u64);
        assert_eq!(last.value, histogram.max() as f64 / 1000.0);

        assert_eq!(footer_value(&text, "Total count"), samples.len().to_string());
        assert_eq!(footer_value(&text, "#[Max"), format!("{:.3}", histogram.max() as f64 / 1000.0));
        assert_eq!(footer_value(&text, "SubBuckets"), "2048");
        let mean: f64 = footer_value(&text, "#[Mean").parse().unwrap();
        assert!((mean - histogram.mean() / 1000.0).abs() < 1e-3);
    }
}

#[test]
fn hgrm_ticks_follow_javas_five_per_half_distance() {
    // 100 000 distinct values: every requested percentile lands on a distinct row.
    let samples: Vec<u64> = (1..=100_000).collect();
    let text = hgrm_text(recorder_with(&samples).histogram());
    let percentiles: Vec<f64> = parse_rows(&text).iter().map(|row| row.percentile).collect();
    let expected_start = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.775, 0.8];
    for (got, want) in percentiles.iter().zip(expected_start) {
        assert!((got - want).abs() < 1e-12, "{percentiles:?}");
    }
}

#[test]
fn hgrm_of_an_empty_histogram_is_header_and_footer_only() {
    let recorder = LatencyRecorder::new(1).unwrap();
    let text = hgrm_text(recorder.histogram());
    assert!(text.starts_with(HGRM_HEADER));
    assert!(parse_rows(&text).is_empty());
    assert_eq!(footer_value(&text, "Total count"), "0");
}

#[test]
fn v2_encoding_round_trips_exactly() {
    let samples = bimodal_samples(20_000, 9);
    let recorder = recorder_with(&samples);
    let original = recorder.histogram();
    let mut encoded = Vec::new();
    let written = write_v2_histogram(original, &mut encoded).unwrap();
    assert_eq!(written, encoded.len());
    let decoded = read_v2_histogram(&mut encoded.as_slice()).unwrap();
    assert_eq!(decoded.len(), original.len());
    assert_eq!((decoded.min(), decoded.max()), (original.min(), original.max()));
    assert_eq!(
        (decoded.low(), decoded.high(), decoded.sigfig()),
        (original.low(), original.high(), original.sigfig())
    );
    let recorded = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
        h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
    };
    assert_eq!(recorded(&decoded), recorded(original));
}

#[test]
fn reading_garbage_as_v2_is_an_error() {
    let garbage = b"definitely not a histogram";
    assert!(matches!(read_v2_histogram(&mut &garbage[..]), Err(HdrOutputError::ReadV2(_))));
}

#[test]
fn interval_log_holds_each_intervals_own_samples() {
    let run_start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let mut recorder = LatencyRecorder::new(100).unwrap();
    let mut log = LatencyIntervalLog::new(Vec::new(), run_start, Some("size=4096")).unwrap();
    let intervals: [&[u64]; 3] = [&[1_000, 2_000], &[3_000, 4_000, 5_000], &[]];
    for (index, samples) in intervals.iter().enumerate() {
        for &sample in *samples {
            recorder.record(sample);
        }
        log.write_interval(recorder.histogram(), (index as u64 + 1) * 1_000_000_000).unwrap();
    }
    let bytes = log.into_inner().unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains("#[StartTime: 1700000000.000"), "{text}");
    assert!(text.contains("\"StartTimestamp\",\"Interval_Length\""), "{text}");

    let mut saw_start_time = false;
    let mut seen = Vec::new();
    for entry in IntervalLogIterator::new(&bytes) {
        match entry.unwrap() {
            LogEntry::StartTime(time) => {
                saw_start_time = true;
                assert_eq!(time, Duration::from_secs(1_700_000_000));
            }
            LogEntry::BaseTime(time) => assert_eq!(time, Duration::from_secs(1_700_000_000)),
            LogEntry::Interval(interval) => {
                assert_eq!(interval.tag().map(|t| t.as_str()), Some("size=4096"));
                let encoded = base64_decode(interval.encoded_histogram());
                let histogram: Histogram<u64> =
                    Deserializer::new().deserialize(&mut encoded.as_slice()).unwrap();
                seen.push((interval.start_timestamp(), interval.duration(), histogram));
            }
        }
    }
    assert!(saw_start_time);
    assert_eq!(seen.len(), 3);
    for (index, ((start, length, histogram), samples)) in seen.iter().zip(intervals).enumerate() {
        assert_eq!(*start, Duration::from_secs(index as u64));
        assert_eq!(*length, Duration::from_secs(1));
        assert_eq!(histogram.len(), samples.len() as u64, "interval {index}");
        for &sample in samples {
            assert_eq!(histogram.count_at(sample), 1, "interval {index} sample {sample}");
        }
    }
}

#[test]
fn interval_log_rejects_backwards_ends_and_shrinking_histograms() {
    let mut recorder = LatencyRecorder::new(10).unwrap();
    recorder.record(1_000);
    recorder.record(2_000);
    let mut log = LatencyIntervalLog::new(Vec::new(), SystemTime::now(), None).unwrap();
    log.write_interval(recorder.histogram(), 2_000).unwrap();
    assert!(matches!(
        log.write_interval(recorder.histogram(), 1_000),
        Err(HdrOutputError::IntervalEndsBackwards { previous_end_nanos: 2_000, end_nanos: 1_000 })
    ));
    let fresh = LatencyRecorder::new(10).unwrap();
    let mut smaller = fresh.histogram().clone();
    smaller.record(1_000).unwrap();
    assert!(matches!(log.write_interval(&smaller, 3_000), Err(HdrOutputError::IntervalHistogramShrank(_))));
}

#[test]
fn raw_dump_has_a_unit_header_and_every_sample() {
    let samples = [3_000, 1_000, 2_000, 1_000];
    let mut as_recorded = Vec::new();
    write_raw_samples(&samples, RawSampleOrder::AsRecorded, &mut as_recorded).unwrap();
    assert_eq!(
        String::from_utf8(as_recorded).unwrap(),
        format!("{RAW_SAMPLES_HEADER}\n3000\n1000\n2000\n1000\n")
    );
    let mut sorted = Vec::new();
    write_raw_samples(&samples, RawSampleOrder::Sorted, &mut sorted).unwrap();
    assert_eq!(String::from_utf8(sorted).unwrap(), "latency_ns\n1000\n1000\n2000\n3000\n");
}
