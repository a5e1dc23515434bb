//! Prints which clock gdrperf's latency samples use on this machine and what one read costs:
//! `cargo run --release -p gdrperf-stats --example clock_source`.

use gdrperf_stats::SampleClock;
use std::time::Instant;

fn main() {
    let clock = SampleClock::new();
    let reads = 200_000u32;
    let started = Instant::now();
    for _ in 0..reads {
        std::hint::black_box(clock.now());
    }
    let sample_clock = started.elapsed() / reads;
    let started = Instant::now();
    for _ in 0..reads / 20 {
        std::hint::black_box(Instant::now());
    }
    let monotonic = started.elapsed() / (reads / 20);
    println!("sample clock: {:?}, {sample_clock:?} per read; Instant::now(): {monotonic:?} per read", clock.source());
}
