//! The aggregate of several lanes run at once (`--concurrent`): what the node moved, over the
//! wall time it took.
//!
//! Summing each lane's own rate counts a fast lane's rate for time in which it had already
//! finished. The aggregate is instead **all lanes' bytes over the common wall interval**, from the
//! earliest lane's first post to the latest lane's last completion:
//!
//! `aggregate = Σ bytes_i / (max end_i − min start_i)`
//!
//! and the message rate likewise. It never exceeds the sum of the lanes' rates and equals it
//! when all lanes span the same interval. (perftest has no such figure: one process is one lane.)

/// One lane's contribution: what it moved, and when (nanoseconds on a clock shared by the lanes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneSpan {
    pub bytes: u64,
    pub messages: u64,
    pub start_nanos: u64,
    pub end_nanos: u64,
}

/// All lanes over their common wall interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AggregateRate {
    pub bytes_per_second: f64,
    pub messages_per_second: f64,
    /// The common interval's length.
    pub nanos: u64,
}

/// The aggregate of `lanes`; `None` without lanes or when the common interval has no length.
pub fn aggregate_rate(lanes: &[LaneSpan]) -> Option<AggregateRate> {
    let start = lanes.iter().map(|lane| lane.start_nanos).min()?;
    let end = lanes.iter().map(|lane| lane.end_nanos).max()?;
    let nanos = end.checked_sub(start).filter(|&nanos| nanos > 0)?;
    let seconds = nanos as f64 / 1e9;
    let bytes: u64 = lanes.iter().map(|lane| lane.bytes).sum();
    let messages: u64 = lanes.iter().map(|lane| lane.messages).sum();
    Some(AggregateRate {
        bytes_per_second: bytes as f64 / seconds,
        messages_per_second: messages as f64 / seconds,
        nanos,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(bytes: u64, messages: u64, start_nanos: u64, end_nanos: u64) -> LaneSpan {
        LaneSpan { bytes, messages, start_nanos, end_nanos }
    }

    #[test]
    fn a_lane_that_finished_early_does_not_count_its_rate_twice() {
        // Lane 0: 1 GB in 1 s; lane 1: 1 GB in 2 s, both from 0. Sum of rates: 1.5 GB/s; the node
        // moved 2 GB in 2 s: 1 GB/s.
        let rate = aggregate_rate(&[
            lane(1_000_000_000, 1000, 0, 1_000_000_000),
            lane(1_000_000_000, 1000, 0, 2_000_000_000),
        ])
        .unwrap();
        assert_eq!(rate.nanos, 2_000_000_000);
        assert_eq!(rate.bytes_per_second, 1e9);
        assert_eq!(rate.messages_per_second, 1000.0);
    }

    #[test]
    fn lanes_over_the_same_interval_sum() {
        let rate = aggregate_rate(&[lane(500, 5, 100, 600), lane(1500, 15, 100, 600)]).unwrap();
        // 2000 B in 500 ns = 4e9 B/s = 1e9 + 3e9, the sum of the lanes' rates.
        assert_eq!(rate.bytes_per_second, 4e9);
        assert_eq!(rate.messages_per_second, 4e7);
    }

    #[test]
    fn staggered_lanes_span_from_the_first_start_to_the_last_end() {
        // [0, 400) and [300, 1000): 1000 ns in all, 3000 B: 3e9 B/s.
        let rate = aggregate_rate(&[lane(1000, 1, 0, 400), lane(2000, 2, 300, 1000)]).unwrap();
        assert_eq!((rate.nanos, rate.bytes_per_second), (1000, 3e9));
    }

    #[test]
    fn no_lanes_or_no_time_is_no_rate() {
        assert_eq!(aggregate_rate(&[]), None);
        assert_eq!(aggregate_rate(&[lane(10, 1, 5, 5)]), None);
    }
}
