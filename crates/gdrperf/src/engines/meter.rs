//! The bandwidth meter of a streaming engine's measured phase, made in one place for the WRITE
//! and READ stream, the SEND sender and the SEND receiver, so that all three reserve their
//! store up front (nothing allocates while streaming) and count `-D` over the same window.

use std::time::Duration;

use gdrperf_stats::{BandwidthMeter, BandwidthReport};

use crate::error::{Error, Result};
use crate::options::config::StopRule;
use crate::options::perftest_defaults::measurement_window;

/// The meter of one measured phase of `size`-byte messages, with room for `completion_events`
/// completion marks and `post_calls` post marks; under `-D` (`stop`) it counts only the
/// completions inside [`duration_window`] of `margin_seconds`.
pub fn phase_meter(
    size: usize,
    stop: StopRule,
    margin_seconds: u64,
    completion_events: usize,
    post_calls: usize,
) -> Result<BandwidthMeter> {
    let mut meter = BandwidthMeter::with_capacities(size as u64, completion_events, post_calls)
        .map_err(|source| Error::Figure { what: format!("bandwidth meter for {size} bytes"), source })?;
    if let StopRule::Duration(duration) = stop {
        let (start, end) = duration_window(duration, margin_seconds);
        meter.set_window(start, end);
    }
    Ok(meter)
}

/// `-D`'s measurement window, perftest's (`catch_alarm` in `perftest_resources.c`): between a
/// ramp-up and a drain margin of `margin_seconds` (`-f`, else `duration / 4` whole seconds: see
/// [`duration_margin`](crate::options::perftest_defaults::duration_margin)), in nanoseconds since
/// the first post. Only completions seen inside it count, over its length. `-D` is a whole number
/// of seconds.
pub fn duration_window(duration: Duration, margin_seconds: u64) -> (u64, u64) {
    measurement_window(duration.as_secs(), margin_seconds)
}

/// Says on stderr when a bandwidth store filled up: the peak was then searched over the stored
/// part of the run (the row's `peak_events_not_stored` says how many marks were left out).
pub(crate) fn warn_if_not_stored(report: &BandwidthReport) {
    if report.timeline_events_not_stored > 0 {
        eprintln!(
            "warning: {} post/completion marks of the {}-byte run did not fit the store reserved for them: \
             BW peak is over the stored part of the run only (average and message rate count every message)",
            report.timeline_events_not_stored, report.message_size_bytes
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_duration_window_leaves_the_margin_at_each_end() {
        let window = |seconds, margin| duration_window(Duration::from_secs(seconds), margin);
        assert_eq!(window(4, 1), (1_000_000_000, 3_000_000_000));
        assert_eq!(window(2, 0), (0, 2_000_000_000));
        // -D 10 -f 3: measured from 3 s to 7 s.
        assert_eq!(window(10, 3), (3_000_000_000, 7_000_000_000));
        assert_eq!(window(0, 0), (0, 0));
    }
}
