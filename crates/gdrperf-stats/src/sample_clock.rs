//! The clock read around every latency sample, made as cheap as the machine allows.
//!
//! A latency sample costs two clock reads, and at least one of them lands inside the measured
//! interval. `Instant::now()` is a vDSO read of the TSC on most hosts (about 20 ns), but where the
//! kernel's clocksource is not the TSC (virtual machines, notably the Soft-RoCE VM under QEMU TCG,
//! whose clocksource is the HPET) every read is a system call and a device access costing
//! microseconds: more than a Soft-RoCE round trip's own variation. perftest reads the cycle
//! counter for the same reason. [`SampleClock`] reads the TSC directly when it is invariant
//! (`constant_tsc` and `nonstop_tsc`) and its rate, measured twice at start-up against the
//! monotonic clock, agrees with itself; otherwise it falls back to `Instant::now()`.
//!
//! It hands out `Instant`s (origin + cycles x ns/cycle, plain arithmetic), so the bookkeeping
//! around samples (stop rule, interval log) is unchanged whichever source runs. A timed loop
//! takes a raw [`Stamp`] instead ([`SampleClock::stamp`]: the bare RDTSC, as perftest's
//! `get_cycles`) and converts it after the sample has ended ([`SampleClock::instant`]): the
//! conversion (a floating-point multiply and a 64-bit division, both emulated helpers under QEMU
//! TCG, 100 ns and more there) would otherwise sit inside the interval, after the start read.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Where [`SampleClock`] reads time from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClockSource {
    /// `Instant::now()`: the kernel's monotonic clock.
    Monotonic,
    /// The CPU's invariant time-stamp counter, scaled by the measured rate.
    Tsc { nanos_per_cycle: f64 },
}

/// A monotonic clock for timing individual samples. Cheap to copy.
#[derive(Debug, Clone, Copy)]
pub struct SampleClock {
    source: ClockSource,
    origin: Instant,
    origin_cycles: u64,
}

/// How long each of the two calibration windows lasts: long enough that the two reads at its
/// ends (microseconds at worst) are under 0.05% of it.
const CALIBRATION_WINDOW: Duration = Duration::from_millis(10);

/// The two measured rates must agree this closely for the TSC to be trusted.
const CALIBRATION_AGREEMENT: f64 = 0.002;

/// A raw clock reading, to be turned into an `Instant` by the [`SampleClock`] that took it once
/// the timed interval is over. Cycles since the clock's origin (TSC), or nanoseconds since it
/// (monotonic clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stamp(u64);

impl SampleClock {
    /// The TSC when it is invariant and calibrates consistently, else the monotonic clock.
    /// Takes 30 to 40 ms (the calibration windows) on x86-64, up to 120 ms where windows disagree.
    ///
    /// The calibration runs once per process (the first call) and every later clock shares its
    /// result: a sweep measures every size with the same source and rate, and one bad
    /// calibration window cannot switch sources in the middle of a run.
    pub fn new() -> SampleClock {
        match calibrated_nanos_per_cycle() {
            Some(nanos_per_cycle) => SampleClock {
                source: ClockSource::Tsc { nanos_per_cycle },
                origin: Instant::now(),
                origin_cycles: read_cycles(),
            },
            None => SampleClock::monotonic(),
        }
    }

    /// Always `Instant::now()` (for comparison, and where the TSC is not wanted).
    pub fn monotonic() -> SampleClock {
        SampleClock { source: ClockSource::Monotonic, origin: Instant::now(), origin_cycles: 0 }
    }

    pub fn source(&self) -> ClockSource {
        self.source
    }

    /// What this run's clock is, for the run header and the JSON metadata.
    pub fn facts(&self) -> ClockFacts {
        let (source, cycles_per_nanosecond) = match self.source {
            ClockSource::Monotonic => ("monotonic", None),
            ClockSource::Tsc { nanos_per_cycle } => ("tsc", Some(1.0 / nanos_per_cycle)),
        };
        ClockFacts {
            source,
            tsc_ghz: cycles_per_nanosecond,
            invariant_tsc: invariant_tsc(),
            kernel_clocksource: kernel_clocksource(),
        }
    }

    /// Now, as an `Instant`.
    #[inline]
    pub fn now(&self) -> Instant {
        self.instant(self.stamp())
    }

    /// Now, raw: the cheapest read there is (RDTSC alone on the TSC). Convert it with
    /// [`SampleClock::instant`] outside the timed interval.
    #[inline]
    pub fn stamp(&self) -> Stamp {
        match self.source {
            ClockSource::Monotonic => Stamp(nanos(self.origin.elapsed())),
            ClockSource::Tsc { .. } => Stamp(read_cycles().wrapping_sub(self.origin_cycles)),
        }
    }

    /// The `Instant` of a stamp this clock took.
    #[inline]
    pub fn instant(&self, stamp: Stamp) -> Instant {
        match self.source {
            ClockSource::Monotonic => self.origin + Duration::from_nanos(stamp.0),
            ClockSource::Tsc { nanos_per_cycle } => {
                self.origin + Duration::from_nanos((stamp.0 as f64 * nanos_per_cycle) as u64)
            }
        }
    }
}

impl Default for SampleClock {
    fn default() -> Self {
        SampleClock::new()
    }
}

fn nanos(duration: Duration) -> u64 {
    duration.as_secs().saturating_mul(1_000_000_000).saturating_add(u64::from(duration.subsec_nanos()))
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn read_cycles() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86-64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn read_cycles() -> u64 {
    0
}

/// The TSC's nanoseconds per cycle, if its rate is steady: two measurements that agree where the
/// CPU declares the TSC invariant, three where it does not (virtual CPUs often hide the flags of
/// a TSC that is in fact steady, as QEMU's TCG does). A set that disagrees is measured again, up
/// to [`CALIBRATION_ATTEMPTS`] times: one window that a preemption skewed must not cost a whole
/// run its cheap clock (in the Soft-RoCE VM one start in twelve fell back to the monotonic clock,
/// a 1.4 us system call per read there, before the retries and bracketed reads).
fn tsc_nanos_per_cycle() -> Option<f64> {
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    let windows = if invariant_tsc() { 2 } else { 3 };
    // A first, discarded window: the first pass through the loop pays for page faults (and, under
    // an emulator, for translating the loop), which skews its rate by a percent or more.
    measure_rate();
    (0..CALIBRATION_ATTEMPTS).find_map(|_| {
        let rates: Vec<f64> = (0..windows).map(|_| measure_rate()).collect();
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        let steady = rates.iter().all(|rate| {
            rate.is_finite() && *rate > 0.0 && (rate - mean).abs() / mean < CALIBRATION_AGREEMENT
        });
        steady.then_some(mean)
    })
}

/// The TSC's rate, measured at the first call in this process and shared by every clock after.
fn calibrated_nanos_per_cycle() -> Option<f64> {
    static RATE: OnceLock<Option<f64>> = OnceLock::new();
    *RATE.get_or_init(tsc_nanos_per_cycle)
}

/// The clock a run measures with, as the header and the JSON metadata name it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockFacts {
    /// `tsc` or `monotonic`.
    pub source: &'static str,
    /// The TSC's measured rate (the calibration's), `None` on the monotonic clock.
    pub tsc_ghz: Option<f64>,
    /// `constant_tsc` and `nonstop_tsc` in /proc/cpuinfo.
    pub invariant_tsc: bool,
    /// The kernel's clocksource (/sys/devices/system/clocksource/clocksource0/current_clocksource).
    pub kernel_clocksource: Option<String>,
}

impl ClockFacts {
    /// Whether TSC readings of different CPUs can be compared: the CPU declares the TSC
    /// invariant and the kernel keeps it as its clocksource, which it stops doing when its
    /// cross-CPU synchronisation check fails ("Marking TSC unstable"). Otherwise a measuring
    /// thread must stay on one CPU while it reads the TSC.
    pub fn tsc_synchronized_across_cpus(&self) -> bool {
        self.invariant_tsc && self.kernel_clocksource.as_deref() == Some("tsc")
    }

    /// One line for the run header.
    pub fn describe(&self) -> String {
        let kernel = self.kernel_clocksource.as_deref().unwrap_or("unknown");
        match self.tsc_ghz {
            Some(ghz) => format!(
                "TSC at {ghz:.4} GHz, calibrated once ({}; kernel clocksource {kernel})",
                if self.tsc_synchronized_across_cpus() {
                    "synchronized across CPUs"
                } else {
                    "not known synchronized across CPUs: the measuring thread stays on one CPU"
                }
            ),
            None => format!("monotonic clock (TSC not steady here; kernel clocksource {kernel})"),
        }
    }
}

fn kernel_clocksource() -> Option<String> {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .ok()
        .map(|text| text.trim().to_string())
}

/// How many sets of calibration windows may be tried before the TSC is given up on.
const CALIBRATION_ATTEMPTS: usize = 3;

/// A monotonic-clock reading and the TSC at the same moment: the TSC is read before and after
/// `Instant::now()`, a few times, and the tightest pair is kept (a preemption or a slow clock read
/// between the two would otherwise count as time in one window's rate).
fn paired_reading() -> (Instant, u64) {
    // (bracket in cycles, the clock's reading, the TSC halfway through the bracket)
    let read = || {
        let before = read_cycles();
        let now = Instant::now();
        let bracket = read_cycles().wrapping_sub(before);
        (bracket, now, before + bracket / 2)
    };
    let tightest =
        (1..PAIRED_READ_TRIES)
            .map(|_| read())
            .fold(read(), |best, next| if next.0 < best.0 { next } else { best });
    (tightest.1, tightest.2)
}

/// Reads per [`paired_reading`].
const PAIRED_READ_TRIES: usize = 5;

/// `constant_tsc` (fixed rate) and `nonstop_tsc` (keeps counting in sleep states) in the flags.
fn invariant_tsc() -> bool {
    let Ok(cpuinfo) = std::fs::read_to_string("/proc/cpuinfo") else { return false };
    let Some(flags) = cpuinfo.lines().find(|line| line.starts_with("flags")) else { return false };
    let has = |flag: &str| flags.split_whitespace().any(|word| word == flag);
    has("constant_tsc") && has("nonstop_tsc")
}

/// Nanoseconds per cycle over one calibration window (busy-waited: a sleep could migrate us).
fn measure_rate() -> f64 {
    let (start, start_cycles) = paired_reading();
    while start.elapsed() < CALIBRATION_WINDOW {
        std::hint::spin_loop();
    }
    let (end, end_cycles) = paired_reading();
    (end - start).as_nanos() as f64 / end_cycles.wrapping_sub(start_cycles) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sources_agree_with_the_monotonic_clock_over_a_busy_wait() {
        for clock in [SampleClock::new(), SampleClock::monotonic()] {
            let (before, reference) = (clock.now(), Instant::now());
            while reference.elapsed() < Duration::from_millis(30) {
                std::hint::spin_loop();
            }
            let (measured, expected) = (clock.now() - before, reference.elapsed());
            let error = (measured.as_secs_f64() - expected.as_secs_f64()).abs() / expected.as_secs_f64();
            assert!(error < 0.05, "{:?}: measured {measured:?} over {expected:?}", clock.source());
        }
    }

    #[test]
    fn stamps_convert_to_the_instants_now_gives() {
        for clock in [SampleClock::new(), SampleClock::monotonic()] {
            let (before, stamp, after) = (clock.now(), clock.stamp(), clock.now());
            let instant = clock.instant(stamp);
            assert!(
                before <= instant && instant <= after,
                "{:?}: {before:?} {instant:?} {after:?}",
                clock.source()
            );
        }
    }

    #[test]
    fn a_paired_reading_lies_between_the_reads_around_it() {
        let (instant_before, cycles_before) = (Instant::now(), read_cycles());
        let (instant, cycles) = paired_reading();
        let (cycles_after, instant_after) = (read_cycles(), Instant::now());
        assert!(instant_before <= instant && instant <= instant_after);
        assert!(cycles_before <= cycles && cycles <= cycles_after, "{cycles_before} {cycles} {cycles_after}");
    }

    #[test]
    fn every_clock_of_a_process_shares_one_calibration() {
        let rates: Vec<ClockSource> = (0..3).map(|_| SampleClock::new().source()).collect();
        assert!(rates.windows(2).all(|pair| pair[0] == pair[1]), "{rates:?}");
    }

    #[test]
    fn facts_name_the_source_and_judge_synchronisation() {
        let facts = ClockFacts {
            source: "tsc",
            tsc_ghz: Some(2.5),
            invariant_tsc: true,
            kernel_clocksource: Some("tsc".into()),
        };
        assert!(facts.tsc_synchronized_across_cpus());
        assert!(facts.describe().starts_with("TSC at 2.5000 GHz"));
        let vm = ClockFacts { kernel_clocksource: Some("hpet".into()), ..facts.clone() };
        assert!(!vm.tsc_synchronized_across_cpus());
        assert!(vm.describe().contains("stays on one CPU"));
        let monotonic = SampleClock::monotonic().facts();
        assert_eq!((monotonic.source, monotonic.tsc_ghz), ("monotonic", None));
    }

    #[test]
    fn readings_never_go_backwards() {
        let clock = SampleClock::new();
        let mut last = clock.now();
        for _ in 0..100_000 {
            let now = clock.now();
            assert!(now >= last, "{:?}", clock.source());
            last = now;
        }
    }
}
