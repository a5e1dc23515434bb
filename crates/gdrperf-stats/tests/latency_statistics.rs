//! Latency summaries against reference computations on known distributions.

mod common;

use common::{
    bimodal_samples, long_tail_samples, sorted_percentile, two_pass_mean_and_deviation, uniform_samples,
};
use gdrperf_stats::latency::EXACT_SAMPLE_LIMIT;
use gdrperf_stats::{LatencyRecorder, LatencySummary, PercentileSource};

const SAMPLES: usize = 200_000;
const QUANTILES: [f64; 4] = [0.5, 0.99, 0.999, 0.9999];

fn distributions() -> [(&'static str, Vec<u64>); 3] {
    [
        ("uniform", uniform_samples(SAMPLES, 1)),
        ("bimodal", bimodal_samples(SAMPLES, 2)),
        ("long-tail", long_tail_samples(SAMPLES, 3)),
    ]
}

fn summarise(samples: &[u64], expected_iterations: u64) -> LatencySummary {
    let mut recorder = LatencyRecorder::new(expected_iterations).unwrap();
    for &sample in samples {
        recorder.record(sample);
    }
    recorder.summary().unwrap()
}

fn reported_percentiles(summary: &LatencySummary) -> [u64; 4] {
    [summary.t_typical_nanos, summary.p99_nanos, summary.p99_9_nanos, summary.p99_99_nanos]
}

#[test]
fn exact_buffer_percentiles_equal_sort_based_percentiles() {
    for (name, samples) in distributions() {
        let summary = summarise(&samples, SAMPLES as u64);
        assert_eq!(summary.percentile_source, PercentileSource::ExactSamples, "{name}");
        for (reported, quantile) in reported_percentiles(&summary).into_iter().zip(QUANTILES) {
            assert_eq!(reported, sorted_percentile(&samples, quantile), "{name} q={quantile}");
        }
        assert_eq!(summary.t_min_nanos, *samples.iter().min().unwrap(), "{name}");
        assert_eq!(summary.t_max_nanos, *samples.iter().max().unwrap(), "{name}");
        assert_eq!(summary.count, SAMPLES as u64);
    }
}

#[test]
fn histogram_percentiles_agree_with_sort_based_within_three_significant_digits() {
    for (name, samples) in distributions() {
        // More expected iterations than the exact limit: no exact buffer, HDR percentiles.
        let summary = summarise(&samples, EXACT_SAMPLE_LIMIT + 1);
        assert_eq!(summary.percentile_source, PercentileSource::Histogram, "{name}");
        for (reported, quantile) in reported_percentiles(&summary).into_iter().zip(QUANTILES) {
            let exact = sorted_percentile(&samples, quantile);
            // HDR reports the top of the bucket holding the exact value: never below it, and
            // at most one part in 10^3 above it.
            assert!(reported >= exact, "{name} q={quantile}: {reported} < {exact}");
            let relative = (reported - exact) as f64 / exact as f64;
            assert!(relative <= 1e-3, "{name} q={quantile}: {reported} vs {exact} ({relative:e})");
        }
        // min, max stay exact on the histogram path too.
        assert_eq!(summary.t_min_nanos, *samples.iter().min().unwrap(), "{name}");
        assert_eq!(summary.t_max_nanos, *samples.iter().max().unwrap(), "{name}");
    }
}

#[test]
fn histogram_quantiles_agree_with_sorting_across_the_whole_range() {
    let samples = long_tail_samples(SAMPLES, 4);
    let mut recorder = LatencyRecorder::new(SAMPLES as u64).unwrap();
    for &sample in &samples {
        recorder.record(sample);
    }
    for step in 1..=100 {
        let quantile = f64::from(step) / 100.0;
        let exact = sorted_percentile(&samples, quantile);
        let from_histogram = recorder.histogram().value_at_quantile(quantile);
        assert!(
            recorder.histogram().equivalent(exact, from_histogram),
            "q={quantile}: {exact} vs {from_histogram}"
        );
    }
}

#[test]
fn mean_and_deviation_match_a_two_pass_reference_on_both_paths() {
    for (name, samples) in distributions() {
        let (mean, deviation) = two_pass_mean_and_deviation(&samples);
        for expected_iterations in [SAMPLES as u64, EXACT_SAMPLE_LIMIT + 1] {
            let summary = summarise(&samples, expected_iterations);
            assert!(
                (summary.t_avg_nanos - mean).abs() <= mean * 1e-12,
                "{name}: {} vs {mean}",
                summary.t_avg_nanos
            );
            assert!(
                (summary.t_stdev_nanos - deviation).abs() <= deviation * 1e-9,
                "{name}: {} vs {deviation}",
                summary.t_stdev_nanos
            );
        }
    }
}

#[test]
fn sub_microsecond_jitter_gives_a_nonzero_deviation() {
    // perftest's integer stdev reads 0 here; ours must not.
    let samples = [1_900, 2_000, 2_100, 2_000];
    let summary = summarise(&samples, 4);
    let (_, deviation) = two_pass_mean_and_deviation(&samples);
    assert!((summary.t_stdev_nanos - deviation).abs() < 1e-9);
    assert!((summary.t_stdev_micros() - 0.070_710_678).abs() < 1e-6);
}

#[test]
fn deviation_survives_a_large_mean_with_a_tiny_spread() {
    // 30 s latencies jittering by 1 ns: sum-of-squares formulas without shifting lose all digits.
    let samples: Vec<u64> = (0..30_000).map(|i| 30_000_000_000 + i % 3).collect();
    let summary = summarise(&samples, samples.len() as u64);
    assert!((summary.t_stdev_nanos - (2.0_f64 / 3.0).sqrt()).abs() < 1e-9, "{}", summary.t_stdev_nanos);
    assert!((summary.t_avg_nanos - 30_000_000_001.0).abs() < 1e-6);
}

#[test]
fn recording_never_grows_the_exact_buffer_or_the_histogram() {
    let mut recorder = LatencyRecorder::new(10_000).unwrap();
    let buffer_capacity = recorder.exact_capacity();
    let histogram_slots = recorder.histogram().distinct_values();
    for sample in long_tail_samples(10_000, 5).into_iter().chain([u64::MAX, 0]) {
        recorder.record(sample);
    }
    assert_eq!(recorder.exact_capacity(), buffer_capacity);
    assert_eq!(recorder.histogram().distinct_values(), histogram_slots);
    assert_eq!(recorder.count(), 10_002);
    assert!(recorder.exact_samples().is_none(), "two samples beyond the reservation: no partial dump");
    assert_eq!(recorder.saturated(), 1);
}

#[test]
fn summary_serialises_with_nanosecond_fields_and_its_source() {
    let summary = summarise(&[1_000, 2_000, 3_000], 3);
    let json = serde_json::to_value(summary).unwrap();
    assert_eq!(json["t_typical_nanos"], 2_000);
    assert_eq!(json["t_avg_nanos"], 2_000.0);
    assert_eq!(json["count"], 3);
    assert_eq!(json["percentile_source"], "exact_samples");
}
