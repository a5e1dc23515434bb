//! Per-sample cost of gdrperf's measurement hot path.
//!
//! The question this answers: does measuring perturb what is measured? A latency sample costs one
//! clock read plus one `LatencyRecorder::record` (histogram bucket increment + exact-buffer push);
//! a bandwidth event costs one clock read plus one `BandwidthMeter::record_completion`. RDMA
//! round trips are 1–3 µs and small-message completions arrive every few tens of ns at line rate,
//! so these costs must sit well under a microsecond, and ideally in the tens of nanoseconds.
//!
//! Run: `cargo bench -p gdrperf-stats --bench per_sample` (add
//! `-- --warm-up-time 1 --measurement-time 3` for a quick look).
//!
//! Recorders are rebuilt outside the timed region every `EXACT_SAMPLE_LIMIT` samples, so every
//! timed sample takes the full path (exact buffer and timeline below capacity), never the cheaper
//! "buffer full" branch.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use gdrperf_stats::latency::EXACT_SAMPLE_LIMIT;
use gdrperf_stats::{BandwidthMeter, LatencyRecorder, RunClock};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// A cheap, deterministic spread of plausible latencies (1–3 µs), so the histogram touches many
/// buckets rather than hitting one cache line.
fn synthetic_latency_nanos(index: u64) -> u64 {
    1_000 + (index.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 53)
}

/// Runs `body` over `iterations` samples in chunks that fit a fresh recorder built by `setup`,
/// timing only the loops.
fn timed_in_chunks<S>(
    iterations: u64,
    mut setup: impl FnMut(u64) -> S,
    mut body: impl FnMut(&mut S, u64),
) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iterations {
        let chunk = (iterations - done).min(EXACT_SAMPLE_LIMIT);
        let mut state = setup(chunk);
        let start = Instant::now();
        for index in 0..chunk {
            body(&mut state, index);
        }
        total += start.elapsed();
        black_box(&state);
        done += chunk;
    }
    total
}

fn clock_read(c: &mut Criterion) {
    let mut group = c.benchmark_group("clock");
    group.throughput(Throughput::Elements(1));
    group.bench_function("Instant::now", |b| b.iter(Instant::now));
    let clock = RunClock::start();
    group.bench_function("RunClock::now_nanos", |b| b.iter(|| clock.now_nanos()));
    group.finish();
}

fn latency_sample(c: &mut Criterion) {
    let mut group = c.benchmark_group("latency_sample");
    group.throughput(Throughput::Elements(1));
    group.bench_function("record_only", |b| {
        b.iter_custom(|iterations| {
            timed_in_chunks(
                iterations,
                |chunk| LatencyRecorder::new(chunk).expect("default recorder"),
                |recorder, index| recorder.record(black_box(synthetic_latency_nanos(index))),
            )
        })
    });
    group.bench_function("clock_read+record", |b| {
        b.iter_custom(|iterations| {
            let clock = RunClock::start();
            timed_in_chunks(
                iterations,
                |chunk| (LatencyRecorder::new(chunk).expect("default recorder"), clock.now_nanos()),
                |(recorder, previous), _| {
                    let now = clock.now_nanos();
                    recorder.record(now - *previous);
                    *previous = now;
                },
            )
        })
    });
    group.finish();
}

fn bandwidth_event(c: &mut Criterion) {
    let mut group = c.benchmark_group("bandwidth_event");
    group.throughput(Throughput::Elements(1));
    let meter_for = |chunk: u64| BandwidthMeter::new(65_536, chunk as usize).expect("valid size");
    group.bench_function("record_completion_only", |b| {
        b.iter_custom(|iterations| {
            timed_in_chunks(iterations, meter_for, |meter, index| {
                meter.record_completion(black_box(synthetic_latency_nanos(index) + index * 4_096), 4)
            })
        })
    });
    group.bench_function("clock_read+record_completion", |b| {
        b.iter_custom(|iterations| {
            let clock = RunClock::start();
            timed_in_chunks(iterations, meter_for, |meter, _| meter.record_completion(clock.now_nanos(), 4))
        })
    });
    group.finish();
}

criterion_group!(benches, clock_read, latency_sample, bandwidth_event);
criterion_main!(benches);
