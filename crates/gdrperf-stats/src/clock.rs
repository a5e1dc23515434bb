//! The run clock: turns `std::time::Instant` into the `u64` nanosecond timestamps the meters store.
//!
//! Why a wrapper at all: the meters keep timestamps as `u64` nanoseconds since one origin (8 bytes
//! each, plain integer arithmetic, trivially serialisable), and every caller must use the *same*
//! origin, namely the clock read taken just before the first work request is posted. Putting that
//! origin in one small value makes "nanoseconds since what?" impossible to get wrong.
//!
//! `Instant` is CLOCK_MONOTONIC on Linux, read through the vDSO: no system call, a few tens of
//! nanoseconds per read (see `benches/per_sample.rs`), and it never goes backwards.

use std::time::Instant;

/// A monotonic clock whose zero is the start of a measurement (perftest's `tposted[0]`).
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    origin: Instant,
}

impl RunClock {
    /// Starts the clock now. Call this immediately before posting the first work request, so that
    /// bandwidth is measured from the first post exactly as perftest does.
    pub fn start() -> Self {
        Self { origin: Instant::now() }
    }

    /// Starts the clock at an `Instant` the caller already read (e.g. the one taken for the first
    /// post), so no second clock read is needed.
    pub fn starting_at(origin: Instant) -> Self {
        Self { origin }
    }

    /// The origin as an `Instant`, for converting back to wall-clock-relative durations.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// Nanoseconds elapsed since the origin.
    ///
    /// Saturates at `u64::MAX` (584 years) instead of wrapping, and reads 0 for an instant before
    /// the origin, so the result is always a valid, ordered timestamp.
    #[inline]
    pub fn now_nanos(&self) -> u64 {
        self.nanos_at(Instant::now())
    }

    /// Nanoseconds from the origin to `instant` (0 if `instant` is earlier than the origin).
    #[inline]
    pub fn nanos_at(&self, instant: Instant) -> u64 {
        let elapsed = instant.saturating_duration_since(self.origin);
        // Seconds and sub-second nanoseconds in u64 arithmetic: cheaper than `as_nanos()`'s u128
        // on this per-sample path.
        elapsed.as_secs().saturating_mul(1_000_000_000).saturating_add(u64::from(elapsed.subsec_nanos()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn nanos_at_measures_from_the_origin() {
        let origin = Instant::now();
        let clock = RunClock::starting_at(origin);
        assert_eq!(clock.nanos_at(origin + Duration::from_micros(1500)), 1_500_000);
    }

    #[test]
    fn whole_seconds_and_fractions_both_count() {
        let origin = Instant::now();
        let clock = RunClock::starting_at(origin);
        assert_eq!(clock.nanos_at(origin + Duration::new(3, 250)), 3_000_000_250);
    }

    #[test]
    fn instants_before_the_origin_read_zero_instead_of_panicking() {
        let earlier = Instant::now();
        let clock = RunClock::starting_at(earlier + Duration::from_secs(1));
        assert_eq!(clock.nanos_at(earlier), 0);
    }

    #[test]
    fn successive_reads_never_go_backwards() {
        let clock = RunClock::start();
        let first = clock.now_nanos();
        let second = clock.now_nanos();
        assert!(second >= first);
    }
}
