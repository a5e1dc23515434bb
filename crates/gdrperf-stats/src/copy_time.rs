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

#[cfg(test)]
mod tests {
    use super::*;

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
