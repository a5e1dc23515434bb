//! The latency loop's own work per turn, without the verbs calls (what the loop itself adds to each sample): what the
//! direct ping-pong initiator does around a post and an arrival (the marker byte, the clock
//! stamp, the samples' bookkeeping, the stop flag, building the request) against a stand-in wire
//! whose peer answers at once. The request goes to `black_box` instead of `ibv_post_send` and
//! the arrival is a byte already there. Reported as time per turn (throughput in elements).
//!
//! Two cases, the two ways [`Samples`] records: `live` converts both stamps to `Instant`s and
//! feeds the recorder every turn (what every run did before; `-D` runs and `--hlog` still do),
//! `deferred` stores the raw stamps and records them after the loop (`-n` runs, as perftest
//! keeps `tposted`). The timing covers the loop alone, as a sample does: the deferred case's
//! recording after the loop (`finish`) is outside it, where it delays no message.
//!
//!   cargo bench -p gdrperf --bench latency_loop
//!
//! Result: results/softroce/latency-loop-bench.txt.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use gdrperf::engines::latency_loop_parts::{Continue, LatencyPlan, LatencySpan, RoundTrip, Samples};
use gdrperf::options::StopRule;
use gdrperf_stats::{SampleClock, Stamp};

/// One size of `turns` measured turns after `warmup`, post to next post (gdrperf's default
/// span), as `direct_ping_pong_initiator` runs it; returns how long the loop took.
fn run(turns: u64, warmup: u64, deferred: bool, clock: SampleClock, stop: &AtomicBool) -> Duration {
    let plan = LatencyPlan {
        size: 2,
        stop: StopRule::Iterations(turns),
        warmup,
        inline: false,
        stall_timeout: Duration::from_secs(10),
        span: LatencySpan::Iteration,
    };
    let mut samples = Samples::new(&plan, None).expect("a recorder").spanning(plan.span);
    if deferred {
        samples = samples.deferring(clock, RoundTrip::Halved);
    }
    let mut marker = [0u8; 2];
    let mut sequence = 0u64;
    let mut open: Option<Stamp> = None;
    let began = Instant::now();
    loop {
        marker[0] = 1 + (sequence % 127) as u8;
        black_box(&mut marker);
        let start = clock.stamp();
        if let Some(previous) = open.take() {
            if samples.record_stamps(&clock, previous, start, RoundTrip::Halved).expect("recorded")
                == Continue::Stop
                || stop.load(Ordering::Relaxed)
            {
                break;
            }
        }
        // What the engine fills per request before the verbs call (`SendRequest`'s fields: id,
        // signal flag, local slice, remote address and key).
        black_box((1u64, true, [0x1000u64, 2], [0x2000 + sequence, 7u64]));
        // The stand-in peer's answer is already there.
        black_box(marker[1]);
        sequence += 1;
        open = Some(start);
    }
    let took = began.elapsed();
    assert_eq!(samples.finish().expect("samples").recorder.count(), turns);
    took
}

fn latency_loop(c: &mut Criterion) {
    let mut group = c.benchmark_group("latency_loop");
    let clock = SampleClock::new();
    let stop = AtomicBool::new(false);
    let turns = 10_000;
    group.throughput(Throughput::Elements(turns));
    for (name, deferred) in [("live", false), ("deferred", true)] {
        group.bench_function(name, |bench| {
            bench.iter_custom(|runs| (0..runs).map(|_| run(turns, 16, deferred, clock, &stop)).sum())
        });
    }
    group.finish();
    println!("clock: {}", clock.facts().describe());
}

criterion_group!(benches, latency_loop);
criterion_main!(benches);
