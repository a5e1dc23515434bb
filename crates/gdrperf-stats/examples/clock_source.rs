//! Prints which clock gdrperf's latency samples use on this machine, what one read costs, and
//! (x86-64) the TSC rate over one whole second, to check the start-up calibration against and to
//! convert cycle counts from other tools (perftest's `-C`) on the same footing:
//! `cargo run --release -p gdrperf-stats --example clock_source`.

use gdrperf_stats::SampleClock;
use std::time::{Duration, Instant};

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
    println!(
        "sample clock: {:?}, {sample_clock:?} per read; Instant::now(): {monotonic:?} per read",
        clock.source()
    );
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC has no preconditions on x86-64.
        let cycles = || unsafe { core::arch::x86_64::_rdtsc() };
        let (start, start_cycles) = (Instant::now(), cycles());
        std::thread::sleep(Duration::from_secs(1));
        let (elapsed, counted) = (start.elapsed(), cycles() - start_cycles);
        println!("TSC over {elapsed:?}: {:.3} MHz", counted as f64 / elapsed.as_secs_f64() / 1e6);
    }
}
