use super::*;

#[test]
fn zero_message_size_is_rejected() {
    assert!(matches!(BandwidthMeter::new(0, 8), Err(StatsError::ZeroMessageSize)));
}

#[test]
fn report_without_completions_is_an_error() {
    let meter = BandwidthMeter::new(64, 8).unwrap();
    assert!(matches!(meter.report(), Err(StatsError::NoCompletions)));
}

#[test]
fn completions_only_at_time_zero_are_an_error_not_infinity() {
    let mut meter = BandwidthMeter::new(64, 8).unwrap();
    meter.record_completion(0, 4);
    meter.record_completion(0, 4);
    assert!(matches!(meter.report(), Err(StatsError::ZeroElapsedTime { messages: 8 })));
}

#[test]
fn empty_polls_and_empty_posts_are_not_events() {
    let mut meter = BandwidthMeter::new(64, 8).unwrap();
    meter.record_post(0, 0);
    meter.record_completion(100, 0);
    meter.record_completion(200, 1);
    assert_eq!(meter.marks().0.len(), 0);
    let report = meter.report().unwrap();
    assert_eq!(report.completion_events, 1);
}

#[test]
fn steady_run_figures_by_hand() {
    // 1000-byte messages; the steady timeline of the peak's tests: 10 messages, last seen at
    // 1800 ns. Average 10 000 B / 1.8 µs. The peak, perftest's search over every post and every
    // later completion that covers the post's first message: from the post at 1000 (4 before
    // it) to the completion at 1800 (10 done), 6 messages in 800 ns = 7.5 GB/s; the others are
    // slower (0 -> 1800: 10 in 1800; 1000 -> 1600: 4 in 600; 1200 -> 1800: 4 in 600; 1400 ->
    // 1800: 2 in 400; 0 -> 1000: 2 in 1000).
    let mut meter = BandwidthMeter::new(1000, 8).unwrap();
    meter.record_post(0, 4);
    meter.record_completion(1000, 2);
    meter.record_post(1000, 2);
    meter.record_completion(1200, 2);
    meter.record_post(1200, 2);
    meter.record_completion(1400, 2);
    meter.record_post(1400, 2);
    meter.record_completion(1600, 2);
    meter.record_completion(1800, 2);
    let report = meter.report().unwrap();
    assert_eq!(report.elapsed_nanos, 1800);
    assert!((report.average.bytes_per_second() - 10_000.0 / 1.8e-6).abs() < 1e-3);
    assert_eq!(report.peak_span, Some(PeakSpan { messages: 6, nanos: 800 }));
    assert!((report.peak.unwrap().bytes_per_second() - 7.5e9).abs() < 1e-3);
    assert!((report.message_rate.messages_per_second() - 10.0 / 1.8e-6).abs() < 1e-6);
}

#[test]
fn one_completion_event_gives_a_peak_as_perftest() {
    // perftest prints a peak from one signalled completion: size / (tcompleted - tposted).
    // 100 messages of 4096 B posted at 0, all seen at 5000 ns: 409 600 B / 5 µs = 81.92 GB/s,
    // the average too.
    let mut meter = BandwidthMeter::new(4096, 8).unwrap();
    meter.record_post(0, 100);
    meter.record_completion(5000, 100);
    let report = meter.report().unwrap();
    assert_eq!(report.peak_span, Some(PeakSpan { messages: 100, nanos: 5000 }));
    assert!((report.peak.unwrap().bytes_per_second() - 81.92e9).abs() < 1e-3);
    assert_eq!(report.messages, 100);
}

#[test]
fn a_late_batch_polled_at_once_gives_perftests_peak() {
    // The demo's case (-t 64 -Q 8): one post of 64, each completion retiring 8, but a poll sees
    // many at once: events at 6400 (16 done), 6500 (64 done). A second post of 36 at 6400 (64
    // before it), all seen at 9000. Spans: 0 -> 6400: 16 in 6400; 0 -> 6500: 64 in 6500;
    // 0 -> 9000: 100 in 9000 (0.0111/ns); 6400 -> 9000: 36 in 2600 (0.0138/ns), the fastest.
    let mut meter = BandwidthMeter::new(1000, 8).unwrap();
    meter.record_post(0, 64);
    meter.record_completion(6400, 16);
    meter.record_post(6400, 36);
    meter.record_completion(6500, 48);
    meter.record_completion(9000, 36);
    assert_eq!(meter.report().unwrap().peak_span, Some(PeakSpan { messages: 36, nanos: 2600 }));
}

#[test]
fn a_meter_without_posts_measures_from_its_origin() {
    // A receiver: arrivals of 2 at 1000, 1200, 1400 and 1500. Spans start at 0: 2 in 1000,
    // 4 in 1200, 6 in 1400, 8 in 1500 ns, the fastest.
    let mut meter = BandwidthMeter::new(8, 8).unwrap();
    for nanos in [1000, 1200, 1400, 1500] {
        meter.record_completion(nanos, 2);
    }
    assert_eq!(meter.report().unwrap().peak_span, Some(PeakSpan { messages: 8, nanos: 1500 }));
}

#[test]
fn the_window_counts_only_completions_inside_it() {
    // -D 4 s with perftest's 1 s margins: window [1 s, 3 s). Completions every 0.5 s, 10 each:
    // those at 1.0, 1.5, 2.0, 2.5 s count (40 messages), over 2 s.
    let second = 1_000_000_000;
    let mut meter = BandwidthMeter::new(100, 16).unwrap();
    meter.set_window(second, 3 * second);
    meter.record_post(0, 80);
    for half in 1..=8 {
        meter.record_completion(half * second / 2, 10);
    }
    let report = meter.report().unwrap();
    assert_eq!(report.messages, 40);
    assert_eq!(report.elapsed_nanos, 2 * second);
    assert!((report.average.bytes_per_second() - 2000.0).abs() < 1e-9);
    assert_eq!(report.window.unwrap().messages, 40);
}

#[test]
fn an_empty_window_is_an_error() {
    let mut meter = BandwidthMeter::new(100, 4).unwrap();
    meter.set_window(1000, 2000);
    meter.record_completion(3000, 1);
    assert!(matches!(meter.report(), Err(StatsError::EmptyWindow { start_nanos: 1000, end_nanos: 2000 })));
}

#[test]
fn backwards_timestamps_are_clamped_and_counted() {
    let mut meter = BandwidthMeter::new(1000, 8).unwrap();
    meter.record_completion(1000, 1);
    meter.record_completion(900, 1);
    let report = meter.report().unwrap();
    assert_eq!(report.clamped_timestamps, 1);
    assert_eq!(report.elapsed_nanos, 1000);
    let stored: Vec<_> = meter.timeline().map(|event| (event.nanos, event.messages)).collect();
    assert_eq!(stored, vec![(1000, 1), (1000, 1)]);
}

#[test]
fn recording_past_the_reservation_keeps_capacity_and_counts_the_overflow() {
    let mut meter = BandwidthMeter::new(4096, 16).unwrap();
    let reserved = meter.timeline_capacity();
    let events = reserved as u64 + 1000;
    for event in 1..=events {
        meter.record_completion(event * 100, 2);
    }
    assert_eq!(meter.timeline_capacity(), reserved, "the timeline must never grow");
    assert_eq!(meter.timeline().len(), reserved);
    let report = meter.report().unwrap();
    assert_eq!(report.timeline_events_not_stored, events - reserved as u64);
    assert_eq!(report.messages, events * 2, "overflowing events still count");
    assert_eq!(report.elapsed_nanos, events * 100);
}

#[test]
fn a_window_counts_the_messages_of_an_event_that_fall_inside_it() {
    // 4 messages over (0, 400]: at 100, 200, 300, 400.
    assert_eq!(messages_between(0, 400, 4, 150, 350), 2);
    assert_eq!(messages_between(0, 400, 4, 100, 400), 3, "the window's end is open");
    assert_eq!(messages_between(0, 400, 4, 0, 1000), 4);
    assert_eq!(messages_between(0, 400, 4, 401, 1000), 0);
    assert_eq!(messages_between(0, 400, 4, 0, 100), 0);
    assert_eq!(messages_between(500, 500, 7, 400, 600), 7, "no time passed: all at once");
    assert_eq!(messages_between(500, 500, 7, 501, 600), 0);
    // 64 messages of 1 MiB signalled once, the window's edge in the middle: those from the 32nd
    // (at 1500 exactly) on count.
    assert_eq!(messages_between(1_000, 2_000, 64, 1_500, 10_000), 33);
}

#[test]
fn a_window_average_is_never_above_the_delivery_rate() {
    // A steady 1 message per 100 ns signalled every 64 messages (an event every 6.4 µs), and a
    // window whose edges cut events: whole-event counting would give up to 64 extra messages.
    let mut meter = BandwidthMeter::new(1 << 20, 1024).unwrap();
    meter.set_window(10_000, 30_000);
    for event in 1..=10u64 {
        meter.record_completion(event * 6_400, 64);
    }
    let report = meter.report().unwrap();
    assert_eq!(report.messages, 200, "20 µs at one message per 100 ns");
}
