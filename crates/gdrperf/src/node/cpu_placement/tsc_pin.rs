//! Keeping a latency loop's thread on one CPU while it reads the TSC (`engines::latency`'s
//! host and staged loops call it around each size). Here, beside the placement, because it is
//! the same question (which CPU a measuring thread runs on) and must respect its answer.
//!
//! A latency sample subtracts two TSC readings. Where the TSCs of different CPUs are not known to
//! be in step (see [`gdrperf_stats::ClockFacts::tsc_synchronized_across_cpus`]: the Soft-RoCE VM,
//! whose kernel runs on the HPET, is such a place), a thread that migrates between the two reads
//! subtracts readings of two counters. So the measuring thread is pinned to the CPU it runs on
//! for the length of the size, unless it is already held to one CPU (a placement chose it: that
//! choice stands) or the TSC is synchronized (then migrating is harmless and the scheduler is left
//! free). `libc::sched_setaffinity` directly: the one call needed, and `libc` is already a
//! dependency (a CPU-affinity crate would add a dependency for two lines).

use gdrperf_stats::{ClockSource, SampleClock};

/// Restores the thread's previous CPU set when dropped.
pub(crate) struct PinGuard {
    previous: libc::cpu_set_t,
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        // SAFETY: `previous` is a valid cpu_set_t read by sched_getaffinity; pid 0 is this thread.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.previous);
        }
    }
}

/// Pins this thread to its current CPU when `clock` reads a TSC not known to be synchronized
/// across CPUs and the thread may run on more than one CPU. `None` when nothing was changed.
pub(crate) fn pin_for_tsc(clock: &SampleClock) -> Option<PinGuard> {
    if !matches!(clock.source(), ClockSource::Tsc { .. }) || clock.facts().tsc_synchronized_across_cpus() {
        return None;
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the calls get its true size.
    unsafe {
        let mut previous: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut previous) != 0
            || libc::CPU_COUNT(&previous) <= 1
        {
            return None;
        }
        let cpu = usize::try_from(libc::sched_getcpu()).ok()?;
        let mut only: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut only);
        (libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &only) == 0)
            .then_some(PinGuard { previous })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed_cpus() -> i32 {
        // SAFETY: as in pin_for_tsc.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set), 0);
            libc::CPU_COUNT(&set)
        }
    }

    #[test]
    fn a_pin_holds_one_cpu_and_is_undone_on_drop() {
        let before = allowed_cpus();
        let clock = SampleClock::new();
        match pin_for_tsc(&clock) {
            Some(guard) => {
                assert_eq!(allowed_cpus(), 1);
                drop(guard);
                assert_eq!(allowed_cpus(), before);
            }
            // Monotonic clock, synchronized TSC, or one CPU allowed: nothing to do.
            None => assert_eq!(allowed_cpus(), before),
        }
        assert!(pin_for_tsc(&SampleClock::monotonic()).is_none());
    }
}
