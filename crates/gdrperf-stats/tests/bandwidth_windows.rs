//! Bandwidth average and peak on synthetic completion sequences with hand-computed answers.

mod common;

use common::SplitMix64;
use gdrperf_stats::{BandwidthMeter, CompletionWindow};

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() <= expected.abs() * 1e-12
}

#[test]
fn steady_stream_with_one_fast_window() {
    // 4 KiB messages, cq_mod = 8: each signalled completion retires 8 messages (32 KiB).
    // Completions at 800, 1600, 2000, 2800, 3600 ns: windows of 800, 800, 400, 800, 800 ns.
    let mut meter = BandwidthMeter::new(4096, 5).unwrap();
    for nanos in [800, 1_600, 2_000, 2_800, 3_600] {
        meter.record_completion(nanos, 8);
    }
    let report = meter.report().unwrap();
    assert_eq!(report.messages, 40);
    assert_eq!(report.bytes, 163_840);
    assert_eq!(report.elapsed_nanos, 3_600);
    assert_eq!(report.peak_window, CompletionWindow { messages: 8, nanos: 400 });
    // Peak: 32768 B / 400 ns = 81.92 B/ns = 8.192e10 B/s = 78125 MiB/s = 655.36 Gb/s.
    assert!(close(report.peak.bytes_per_second(), 8.192e10));
    assert!(close(report.peak.mib_per_second(), 78_125.0));
    assert!(close(report.peak.gbit_per_second(), 655.36));
    // Average: 163840 B / 3600 ns = 4.5511e10 B/s = 43402.777... MiB/s = 364.0888... Gb/s.
    assert!(close(report.average.mib_per_second(), 163_840.0 / 3_600.0 * 1e9 / 1_048_576.0));
    assert!(close(report.average.mib_per_second(), 43_402.777_777_777_78));
    assert!(close(report.average.gbit_per_second(), 364.088_888_888_888_9));
    // Message rate: 40 messages / 3.6 µs = 11.111 Mpps.
    assert!(close(report.message_rate.mpps(), 11.111_111_111_111_11));
}

#[test]
fn first_window_starts_at_the_first_post() {
    // One completion of 16 messages of 1 MiB at 1 ms: peak and average are both 16 GiB/s.
    let mut meter = BandwidthMeter::new(1 << 20, 1).unwrap();
    meter.record_completion(1_000_000, 16);
    let report = meter.report().unwrap();
    assert_eq!(report.peak_window, CompletionWindow { messages: 16, nanos: 1_000_000 });
    assert!(close(report.peak.mib_per_second(), 16_000.0));
    assert_eq!(report.peak, report.average);
}

#[test]
fn partial_last_window_counts_its_actual_messages() {
    // iterations = 10, cq_mod = 4: completions retire 4, 4, then the final explicitly signalled 2.
    // Windows: 4 msg / 1000 ns, 4 msg / 1000 ns, 2 msg / 200 ns (the fastest: 0.01 msg/ns).
    let mut meter = BandwidthMeter::new(1000, 3).unwrap();
    meter.record_completion(1_000, 4);
    meter.record_completion(2_000, 4);
    meter.record_completion(2_200, 2);
    let report = meter.report().unwrap();
    assert_eq!(report.peak_window, CompletionWindow { messages: 2, nanos: 200 });
    assert!(close(report.peak.bytes_per_second(), 1.0e10)); // 2000 B / 200 ns
    assert!(close(report.average.bytes_per_second(), 10_000.0 / 2_200.0 * 1e9));
}

#[test]
fn completions_seen_by_one_poll_share_one_window() {
    // Two CQEs polled together and stamped with one clock read at 1000 ns, then one at 2000 ns.
    // The first window holds 8 messages in 1000 ns, not 4 in 1000 ns plus 4 in 0 ns (= infinity).
    let mut meter = BandwidthMeter::new(100, 3).unwrap();
    meter.record_completion(1_000, 4);
    meter.record_completion(1_000, 4);
    meter.record_completion(2_000, 4);
    let report = meter.report().unwrap();
    assert_eq!(report.peak_window, CompletionWindow { messages: 8, nanos: 1_000 });
    assert!(close(report.peak.bytes_per_second(), 8.0e8));
    assert_eq!(report.completion_events, 3);
}

#[test]
fn completions_at_the_first_post_instant_join_the_first_window() {
    let mut meter = BandwidthMeter::new(100, 2).unwrap();
    meter.record_completion(0, 4);
    meter.record_completion(500, 4);
    let report = meter.report().unwrap();
    assert_eq!(report.peak_window, CompletionWindow { messages: 8, nanos: 500 });
}

/// The peak recomputed offline from the stored timeline, the slow and obvious way: group events
/// by timestamp, then take the best ratio of messages to gap between distinct timestamps.
fn offline_peak(timeline: &[(u64, u32)]) -> (u64, u64) {
    let mut groups: Vec<(u64, u64)> = Vec::new();
    for &(nanos, messages) in timeline {
        match groups.last_mut() {
            Some(last) if last.0 == nanos => last.1 += u64::from(messages),
            _ => groups.push((nanos, u64::from(messages))),
        }
    }
    let mut previous = 0;
    let mut carried = 0;
    let mut best = (0_u64, 1_u64);
    for (nanos, messages) in groups {
        if nanos == 0 {
            carried += messages;
            continue;
        }
        let window = (messages + carried, nanos - previous);
        carried = 0;
        if (window.0 as f64 / window.1 as f64) > (best.0 as f64 / best.1 as f64) {
            best = window;
        }
        previous = nanos;
    }
    best
}

#[test]
fn online_peak_equals_offline_recomputation_on_random_sequences() {
    let mut rng = SplitMix64::new(42);
    for _ in 0..200 {
        let events = rng.between(1, 300) as usize;
        let mut meter = BandwidthMeter::new(rng.between(1, 1 << 20), events).unwrap();
        let mut nanos = 0;
        let mut timeline = Vec::new();
        for _ in 0..events {
            // One in four events shares the previous timestamp (batched poll).
            if rng.between(0, 3) != 0 {
                nanos += rng.between(1, 5_000);
            }
            let messages = rng.between(1, 64) as u32;
            meter.record_completion(nanos, messages);
            timeline.push((nanos, messages));
        }
        let stored: Vec<(u64, u32)> = meter.timeline().map(|event| (event.nanos, event.messages)).collect();
        assert_eq!(stored, timeline);
        if nanos == 0 {
            assert!(meter.report().is_err());
            continue;
        }
        let report = meter.report().unwrap();
        let (messages, window_nanos) = offline_peak(&timeline);
        // Equal rates, possibly from different windows: compare the ratio exactly.
        assert_eq!(
            u128::from(report.peak_window.messages) * u128::from(window_nanos),
            u128::from(messages) * u128::from(report.peak_window.nanos),
            "{:?} vs {:?}",
            report.peak_window,
            (messages, window_nanos)
        );
        assert_eq!(report.messages, timeline.iter().map(|&(_, m)| u64::from(m)).sum::<u64>());
        assert!(report.peak.bytes_per_second() >= report.average.bytes_per_second());
    }
}

#[test]
fn report_serialises_every_unit() {
    let mut meter = BandwidthMeter::new(1 << 20, 1).unwrap();
    meter.record_completion(1_000_000_000, 1);
    let json = serde_json::to_value(meter.report().unwrap()).unwrap();
    assert_eq!(json["average"]["mib_per_second"], 1.0);
    assert_eq!(json["average"]["bytes_per_second"], 1_048_576.0);
    assert_eq!(json["average"]["gbit_per_second"], 0.008_388_608);
    assert_eq!(json["message_rate"]["mpps"], 1e-6);
    assert_eq!(json["peak_window"]["nanos"], 1_000_000_000);
}
