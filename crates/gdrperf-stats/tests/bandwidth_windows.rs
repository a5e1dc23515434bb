//! Bandwidth average and peak through the public API, on synthetic runs with hand-computed
//! answers (the peak's search itself is tested in `src/peak/tests.rs`).

use gdrperf_stats::{BandwidthMeter, PeakSpan};

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() <= expected.abs() * 1e-12
}

#[test]
fn steady_stream_units_by_hand() {
    // 4 KiB messages, tx depth 16, cq_mod 8: 16 posted at 0, then 8 more after each completion.
    // Completions at 800, 1600, 2400, 2560 ns (8 each), posts at 800 and 1600.
    let mut meter = BandwidthMeter::new(4096, 8).unwrap();
    meter.record_post(0, 16);
    meter.record_completion(800, 8);
    meter.record_post(800, 8);
    meter.record_completion(1_600, 8);
    meter.record_post(1_600, 8);
    meter.record_completion(2_400, 8);
    meter.record_completion(2_560, 8);
    let report = meter.report().unwrap();
    assert_eq!((report.messages, report.bytes, report.elapsed_nanos), (32, 131_072, 2_560));
    // Spans by hand: 0→2560: 32/2560 = 0.0125 msg/ns; 800(16)→2560: 16/1760 = 0.0091;
    // 1600(24)→2560: 8/960 = 0.0083; 0→2400: 24/2400 = 0.01. Best: 0.0125 msg/ns = 51.2 B/ns.
    assert_eq!(report.peak_span, Some(PeakSpan { messages: 32, nanos: 2_560 }));
    let peak = report.peak.unwrap();
    assert!(close(peak.bytes_per_second(), 5.12e10));
    assert!(close(peak.mib_per_second(), 5.12e10 / 1_048_576.0));
    assert!(close(peak.gbit_per_second(), 409.6));
    assert!(close(report.average.bytes_per_second(), 5.12e10));
    assert!(close(report.message_rate.mpps(), 12.5));
}

#[test]
fn two_polls_a_nanosecond_apart_do_not_make_a_peak_of_their_own() {
    // The case that showed "BW peak 1236 MiB/s next to BW average 31 MiB/s": the last CQEs seen by
    // two polls 1 ns apart. Completion-to-completion that read 8 messages in 1 ns; every span
    // starts at a post, so the spans are 8 in 2000 ns and 16 in 2001 ns: the peak is the
    // latter, 16 000 B / 2001 ns, the average.
    let mut meter = BandwidthMeter::new(1000, 8).unwrap();
    meter.record_post(0, 16);
    meter.record_completion(2_000, 8);
    meter.record_completion(2_001, 8);
    let report = meter.report().unwrap();
    assert_eq!(report.peak_span, Some(PeakSpan { messages: 16, nanos: 2_001 }));
    assert!(close(report.peak.unwrap().bytes_per_second(), 16_000.0 / 2_001.0 * 1e9));
    assert!(close(report.average.bytes_per_second(), 16_000.0 / 2_001.0 * 1e9));
}

#[test]
fn partial_last_batch_counts_its_actual_messages() {
    // iterations = 10, cq_mod = 4, tx depth 8: completions retire 4, 4, then the last 2.
    let mut meter = BandwidthMeter::new(1000, 4).unwrap();
    meter.record_post(0, 8);
    meter.record_completion(1_000, 4);
    meter.record_post(1_000, 2);
    meter.record_completion(2_000, 4);
    meter.record_completion(2_200, 2);
    let report = meter.report().unwrap();
    // Spans from 0: 4 in 1000, 8 in 2000, 10 in 2200 ns; from the post at 1000 (8 before it):
    // 2 in 1200. The fastest: 10 in 2200 ns.
    assert_eq!(report.peak_span, Some(PeakSpan { messages: 10, nanos: 2_200 }));
    assert_eq!(report.messages, 10);
    assert!(close(report.average.bytes_per_second(), 10_000.0 / 2_200.0 * 1e9));
}

#[test]
fn report_serialises_every_unit() {
    let mut meter = BandwidthMeter::new(1 << 20, 4).unwrap();
    meter.record_post(0, 4);
    for nanos in [400_000_000, 600_000_000, 800_000_000, 1_000_000_000] {
        meter.record_completion(nanos, 1);
    }
    let json = serde_json::to_value(meter.report().unwrap()).unwrap();
    assert_eq!(json["average"]["mib_per_second"], 4.0);
    assert_eq!(json["average"]["bytes_per_second"], 4_194_304.0);
    assert_eq!(json["message_rate"]["mpps"], 4e-6);
    // The fastest span: the post at 0 to the last completion (1 in 0.4 s, 2 in 0.6 s, 3 in 0.8 s
    // are slower).
    assert_eq!(json["peak_span"]["nanos"], 1_000_000_000);
    assert_eq!(json["peak_span"]["messages"], 4);
    assert_eq!(json["window"], serde_json::Value::Null);
}
