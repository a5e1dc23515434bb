//! Copy time: how long the copy engine of a side was busy during a size.
//!
//! A staged side copies every message between its payload and its bounce ring, and several
//! copies are in flight at once (a window of copies out running ahead of the posts, copies in
//! queued behind each other). Summing each copy's own start-to-finish time counts the time two
//! copies overlap twice, so a sum can exceed the run's wall time. The figure reported as
//! `copy_time_s` is instead the time during which at least one copy was running: the length of
//! the union of the copies' `[start, end)` intervals, [`busy_nanos`].
//!
//! A copy's interval runs from the moment it was started (queued on a CUDA stream, or begun on
//! the CPU) to the moment the engine saw it finished; both ends are read on one clock.
//!
//! `gdrperf copy-bw` times copies of one size waited for one at a time; [`one_at_a_time`] makes
//! its figures from those samples: the median (the same nearest rank as a latency bench's
//! `t_typical`), the least, and the rate they add up to.

use crate::latency::nearest_rank_index;
use crate::units::Bandwidth;

/// One copy's `[start, end)`, in nanoseconds on one clock. An interval whose end is not after
/// its start is empty and adds nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyInterval {
    pub start: u64,
    pub end: u64,
}

/// The nanoseconds covered by at least one of `intervals` (the length of their union):
/// overlapping and nested copies count once, disjoint ones add up, touching ones join.
/// Order does not matter.
pub fn busy_nanos(intervals: &[CopyInterval]) -> u64 {
    let mut sorted: Vec<CopyInterval> =
        intervals.iter().copied().filter(|interval| interval.end > interval.start).collect();
    sorted.sort_unstable_by_key(|interval| interval.start);
    let mut busy = 0;
    let mut current: Option<CopyInterval> = None;
    for interval in sorted {
        current = match current {
            Some(run) if interval.start <= run.end => {
                Some(CopyInterval { end: run.end.max(interval.end), ..run })
            }
            Some(run) => {
                busy += run.end - run.start;
                Some(interval)
            }
            None => Some(interval),
        };
    }
    busy + current.map_or(0, |run| run.end - run.start)
}

/// Figures of copies of one size, each waited for before the next was started.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OneAtATime {
    /// Nearest rank ⌈n/2⌉ of the sorted samples, as a latency bench's `t_typical`.
    pub median_nanos: u64,
    pub min_nanos: u64,
    /// The samples' bytes over their summed times: what a caller copying one message at a time
    /// gets, slower than the queued rate by each copy's fixed cost.
    pub rate: Bandwidth,
}

/// The figures of `sample_nanos`, each the time of one copy of `size_bytes` from its start to
/// the wait's return; `None` without samples.
pub fn one_at_a_time(size_bytes: u64, sample_nanos: &[u64]) -> Option<OneAtATime> {
    let min_nanos = *sample_nanos.iter().min()?;
    let mut sorted = sample_nanos.to_vec();
    sorted.sort_unstable();
    let median_nanos = sorted[nearest_rank_index(0.5, sorted.len())];
    let summed: u64 = sample_nanos.iter().sum();
    let rate = Bandwidth::from_bytes_and_nanos(size_bytes * sample_nanos.len() as u64, summed);
    Some(OneAtATime { median_nanos, min_nanos, rate })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_copy_at_a_time_gives_median_least_and_summed_rate() {
        // Four copies of 1000 bytes taking 5, 1, 3 and 11 us: sorted 1, 3, 5, 11; the median is
        // rank ceil(4/2) = 2, 3 us (the lower middle, as t_typical); 4000 bytes in 20 us: 0.2 GB/s.
        let figures = one_at_a_time(1000, &[5_000, 1_000, 3_000, 11_000]).unwrap();
        assert_eq!(figures.median_nanos, 3_000);
        assert_eq!(figures.min_nanos, 1_000);
        assert_eq!(figures.rate.gbyte_per_second(), 0.2);
        // Odd count: the middle one.
        assert_eq!(one_at_a_time(1000, &[5_000, 1_000, 3_000]).unwrap().median_nanos, 3_000);
        assert_eq!(one_at_a_time(1000, &[]), None);
    }

    fn spans(pairs: &[(u64, u64)]) -> Vec<CopyInterval> {
        pairs.iter().map(|&(start, end)| CopyInterval { start, end }).collect()
    }

    #[test]
    fn no_copies_no_time() {
        assert_eq!(busy_nanos(&[]), 0);
        assert_eq!(busy_nanos(&spans(&[(5, 5), (9, 3)])), 0, "empty and reversed intervals add nothing");
    }

    #[test]
    fn disjoint_copies_add_up() {
        // 10 + 5 + 1, with gaps between.
        assert_eq!(busy_nanos(&spans(&[(0, 10), (20, 25), (100, 101)])), 16);
    }

    #[test]
    fn overlapping_copies_count_once() {
        // Three queued copies: [0,10) [5,15) [12,20) cover 0..20 once, where a sum says 28.
        assert_eq!(busy_nanos(&spans(&[(0, 10), (5, 15), (12, 20)])), 20);
    }

    #[test]
    fn nested_copies_count_once() {
        assert_eq!(busy_nanos(&spans(&[(0, 100), (10, 20), (30, 90)])), 100);
    }

    #[test]
    fn touching_copies_join_without_gap_or_double_count() {
        assert_eq!(busy_nanos(&spans(&[(0, 10), (10, 20), (20, 30)])), 30);
    }

    #[test]
    fn order_does_not_matter() {
        // Copies seen finished out of their start order (two streams): [40,50) [0,30) [25,45).
        assert_eq!(busy_nanos(&spans(&[(40, 50), (0, 30), (25, 45)])), 50);
        assert_eq!(busy_nanos(&spans(&[(0, 30), (25, 45), (40, 50), (60, 70)])), 60);
    }

    #[test]
    fn never_exceeds_the_span_from_first_start_to_last_end() {
        let intervals = spans(&[(0, 7), (1, 9), (2, 8), (3, 10), (4, 6)]);
        assert_eq!(busy_nanos(&intervals), 10);
        let summed: u64 = intervals.iter().map(|interval| interval.end - interval.start).sum();
        assert!(summed > 10, "the old sum ({summed}) exceeded the wall time");
    }
}
