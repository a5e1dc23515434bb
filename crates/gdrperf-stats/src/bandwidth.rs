//! Bandwidth and message rate, measured the way perftest's `ib_write_bw` does.
//!
//! # What the harness feeds in
//!
//! A bandwidth test posts a stream of equal-sized messages and polls the completion queue (CQ).
//! With CQ moderation (`--cq-mod`, perftest's `cq_mod`), only every `cq_mod`-th work request is
//! signalled, so one completion entry *retires* `cq_mod` messages at once. The harness therefore
//! reports *completion events*: "at `t_ns`, `messages` more messages were observed complete"
//! ([`BandwidthMeter::record_completion`]). All timestamps are nanoseconds since the first post
//! (take them from one [`crate::RunClock`] started just before the first `post_send`).
//!
//! # Definitions
//!
//! * **Average bandwidth** = `messages × message_size / t_last`, where `t_last` is the time of the
//!   last completion and the first post is time 0. This is exactly perftest's
//!   `bw_avg = size × iters / (tcompleted[last] − tposted[0])`.
//! * **Message rate** = `messages / t_last`, reported in Mpps like perftest's `MsgRate`.
//! * **Peak bandwidth** = the fastest *completion window*. Window *k* runs from the previous
//!   completion event `t[k−1]` (for the first window: the first post, time 0) to event `t[k]`, and
//!   holds the messages event *k* retired:
//!
//!   `peak = max_k  messages[k] × message_size / (t[k] − t[k−1])`
//!
//!   With one event per signalled completion this is `size × cq_mod / (t[k] − t[k−1])`.
//!   Events stamped with the *same* nanosecond as the previous one (several CQEs returned by one
//!   poll and stamped with one clock read) add their messages to that previous window instead of
//!   forming a zero-length window: they were observed at the same instant, so they were retired
//!   within the same interval, and a zero-length window would make the peak infinite.
//!   Messages stamped at time 0 itself (before any window closed) are carried into the first
//!   window.
//!
//! ## How this differs from perftest's peak
//!
//! perftest (`print_report_bw` in `perftest_parameters.c`) keeps `tposted[i]` and `tcompleted[j]`
//! for every message and takes the smallest per-message time over *all* spans from a post to a
//! later moderated completion, `min over i ≤ j of (tcompleted[j] − tposted[i]) / (j − i + 1)`, an
//! O(n²/cq_mod) search. Every such span contains at least one full post-to-completion latency, so
//! perftest's peak is pulled towards the average; ours, measured completion to completion, is
//! the rate the pipe actually drained at in its best window, and on the same run it typically
//! reads higher than perftest's peak. It needs no per-message post times and is computed online in
//! O(1) per event. (For contiguous runs of our
//! windows a wider span can never beat its best single window, because the rate of a union of
//! windows lies between the rates of its parts, so our maximum over single windows is also the
//! maximum over all completion-to-completion spans.)
//!
//! # Memory and the hot path
//!
//! [`BandwidthMeter::record_completion`] never allocates. The per-event timeline (for plotting
//! bandwidth over time) lives in vectors sized up front from the expected event count; when a run
//! produces more events than expected, further events are still counted, still update the
//! running peak and average (those are maintained online, independent of the timeline), and
//! are tallied in [`BandwidthReport::timeline_events_not_stored`], so nothing is silently lost.

use crate::error::StatsError;
use crate::units::{Bandwidth, MessageRate};
use serde::Serialize;

/// One observed completion event, as stored in the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CompletionEvent {
    /// Nanoseconds since the first post.
    pub nanos: u64,
    /// Messages this event retired.
    pub messages: u32,
}

/// A completion window: `messages` retired in `nanos` nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CompletionWindow {
    /// Messages retired in the window.
    pub messages: u64,
    /// Length of the window in nanoseconds (> 0 for any window that was closed).
    pub nanos: u64,
}

impl CompletionWindow {
    /// Whether this window drained messages faster than `other`.
    ///
    /// Compares `m1/t1 > m2/t2` as `m1·t2 > m2·t1` in 128-bit integers: exact, and no division
    /// on the hot path.
    fn is_faster_than(&self, other: &CompletionWindow) -> bool {
        u128::from(self.messages) * u128::from(other.nanos)
            > u128::from(other.messages) * u128::from(self.nanos)
    }
}

/// Accumulates completion events of one bandwidth run. See the module documentation for the exact
/// definitions of average and peak.
#[derive(Debug, Clone)]
pub struct BandwidthMeter {
    message_size_bytes: u64,
    total_messages: u64,
    completion_events: u64,
    last_completion_nanos: u64,
    /// Messages stamped at time 0, waiting for the first window to close.
    messages_before_first_window: u64,
    /// The most recently closed window; same-instant events are merged into it.
    last_window: Option<CompletionWindow>,
    /// The fastest window so far.
    peak_window: Option<CompletionWindow>,
    clamped_timestamps: u64,
    timeline_nanos: Vec<u64>,
    timeline_messages: Vec<u32>,
    timeline_events_not_stored: u64,
}

impl BandwidthMeter {
    /// Creates a meter for messages of `message_size_bytes`, reserving timeline space for
    /// `expected_completion_events` events (typically `iterations / cq_mod`, rounded up).
    ///
    /// The reservation is the only allocation this meter ever makes; 12 bytes per event.
    pub fn new(message_size_bytes: u64, expected_completion_events: usize) -> Result<Self, StatsError> {
        if message_size_bytes == 0 {
            return Err(StatsError::ZeroMessageSize);
        }
        Ok(Self {
            message_size_bytes,
            total_messages: 0,
            completion_events: 0,
            last_completion_nanos: 0,
            messages_before_first_window: 0,
            last_window: None,
            peak_window: None,
            clamped_timestamps: 0,
            timeline_nanos: Vec::with_capacity(expected_completion_events),
            timeline_messages: Vec::with_capacity(expected_completion_events),
            timeline_events_not_stored: 0,
        })
    }

    /// Records that at `nanos` (since the first post) `messages` more messages were observed
    /// complete. Never allocates; O(1).
    ///
    /// * `messages == 0` is ignored: an empty poll retires nothing and is not an event.
    /// * A timestamp earlier than the previous event's (only possible if the caller mixed clocks)
    ///   is raised to the previous event's time, which keeps every window non-negative, and is
    ///   counted in [`BandwidthReport::clamped_timestamps`] so the report shows it happened.
    #[inline]
    pub fn record_completion(&mut self, nanos: u64, messages: u32) {
        if messages == 0 {
            return;
        }
        let nanos = if nanos < self.last_completion_nanos {
            self.clamped_timestamps += 1;
            self.last_completion_nanos
        } else {
            nanos
        };
        let window_start = self.last_completion_nanos;
        self.total_messages += u64::from(messages);
        self.completion_events += 1;
        self.last_completion_nanos = nanos;
        self.store_in_timeline(nanos, messages);

        if nanos > window_start {
            let window = CompletionWindow {
                messages: u64::from(messages) + std::mem::take(&mut self.messages_before_first_window),
                nanos: nanos - window_start,
            };
            self.last_window = Some(window);
            self.offer_peak_candidate(window);
        } else if let Some(window) = self.last_window.as_mut() {
            // Observed at the same instant as the previous event: same window.
            window.messages += u64::from(messages);
            let merged = *window;
            self.offer_peak_candidate(merged);
        } else {
            // Stamped at time 0, before any window exists.
            self.messages_before_first_window += u64::from(messages);
        }
    }

    #[inline]
    fn store_in_timeline(&mut self, nanos: u64, messages: u32) {
        // `push` below capacity never reallocates; past capacity we count instead of growing.
        if self.timeline_nanos.len() < self.timeline_nanos.capacity()
            && self.timeline_messages.len() < self.timeline_messages.capacity()
        {
            self.timeline_nanos.push(nanos);
            self.timeline_messages.push(messages);
        } else {
            self.timeline_events_not_stored += 1;
        }
    }

    #[inline]
    fn offer_peak_candidate(&mut self, window: CompletionWindow) {
        match self.peak_window {
            Some(peak) if !window.is_faster_than(&peak) => {}
            _ => self.peak_window = Some(window),
        }
    }

    /// Message size this meter was built for.
    pub fn message_size_bytes(&self) -> u64 {
        self.message_size_bytes
    }

    /// Messages recorded so far (for progress lines on long runs).
    pub fn total_messages(&self) -> u64 {
        self.total_messages
    }

    /// Time of the latest completion, in nanoseconds since the first post.
    pub fn last_completion_nanos(&self) -> u64 {
        self.last_completion_nanos
    }

    /// The stored completion events, in the order recorded (timestamps after clamping). Holds at
    /// most the expected event count given to [`BandwidthMeter::new`].
    pub fn timeline(&self) -> impl ExactSizeIterator<Item = CompletionEvent> + '_ {
        self.timeline_nanos
            .iter()
            .zip(&self.timeline_messages)
            .map(|(&nanos, &messages)| CompletionEvent { nanos, messages })
    }

    /// Timeline slots reserved at construction (for tests and capacity planning).
    pub fn timeline_capacity(&self) -> usize {
        self.timeline_nanos.capacity().min(self.timeline_messages.capacity())
    }

    /// Computes the report. O(1), so it can also be called mid-run for progress output.
    ///
    /// Fails when nothing was recorded or when no time has elapsed since the first post, the two
    /// cases in which a bandwidth is undefined.
    pub fn report(&self) -> Result<BandwidthReport, StatsError> {
        if self.total_messages == 0 {
            return Err(StatsError::NoCompletions);
        }
        let peak_window =
            self.peak_window.ok_or(StatsError::ZeroElapsedTime { messages: self.total_messages })?;
        let elapsed_nanos = self.last_completion_nanos;
        let bytes = self.total_messages.saturating_mul(self.message_size_bytes);
        let peak_bytes = peak_window.messages.saturating_mul(self.message_size_bytes);
        Ok(BandwidthReport {
            message_size_bytes: self.message_size_bytes,
            messages: self.total_messages,
            bytes,
            completion_events: self.completion_events,
            elapsed_nanos,
            average: Bandwidth::from_bytes_and_nanos(bytes, elapsed_nanos),
            peak: Bandwidth::from_bytes_and_nanos(peak_bytes, peak_window.nanos),
            peak_window,
            message_rate: MessageRate::from_messages_and_nanos(self.total_messages, elapsed_nanos),
            clamped_timestamps: self.clamped_timestamps,
            timeline_events_not_stored: self.timeline_events_not_stored,
        })
    }
}

/// The result of a bandwidth run. Serialises to JSON with every unit spelled out.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BandwidthReport {
    /// Bytes per message.
    pub message_size_bytes: u64,
    /// Messages completed.
    pub messages: u64,
    /// Bytes moved (`messages × message_size_bytes`).
    pub bytes: u64,
    /// Completion events recorded (one per signalled CQE, or per poll, as the harness chose).
    pub completion_events: u64,
    /// Time from the first post to the last completion.
    pub elapsed_nanos: u64,
    /// `bytes / elapsed`, perftest's `BW average`.
    pub average: Bandwidth,
    /// Fastest completion window, see the module documentation.
    pub peak: Bandwidth,
    /// The window the peak was measured over, so a suspicious peak can be judged (a window of a
    /// few nanoseconds means the harness stamped completions too coarsely).
    pub peak_window: CompletionWindow,
    /// `messages / elapsed`, perftest's `MsgRate`.
    pub message_rate: MessageRate,
    /// Events whose timestamp went backwards and was raised to the previous one (0 in a correct
    /// harness).
    pub clamped_timestamps: u64,
    /// Events counted in every statistic but not kept in the timeline because more arrived than
    /// were reserved.
    pub timeline_events_not_stored: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_message_size_is_rejected() {
        assert!(matches!(BandwidthMeter::new(0, 8), Err(StatsError::ZeroMessageSize)));
    }

    #[test]
    fn report_without_completions_is_an_error() {
        let meter = BandwidthMeter::new(64, 8).unwrap();
        assert!(matches!(meter.report(), Err(StatsError::NoCompletions)));
    }

    #[test]
    fn completions_only_at_time_zero_are_an_error_not_infinity() {
        let mut meter = BandwidthMeter::new(64, 8).unwrap();
        meter.record_completion(0, 4);
        meter.record_completion(0, 4);
        assert!(matches!(meter.report(), Err(StatsError::ZeroElapsedTime { messages: 8 })));
    }

    #[test]
    fn empty_polls_are_not_events() {
        let mut meter = BandwidthMeter::new(64, 8).unwrap();
        meter.record_completion(100, 0);
        meter.record_completion(200, 1);
        let report = meter.report().unwrap();
        assert_eq!(report.completion_events, 1);
        assert_eq!(report.peak_window, CompletionWindow { messages: 1, nanos: 200 });
    }

    #[test]
    fn backwards_timestamps_are_clamped_and_counted() {
        let mut meter = BandwidthMeter::new(1000, 8).unwrap();
        meter.record_completion(1000, 1);
        meter.record_completion(900, 1);
        let report = meter.report().unwrap();
        assert_eq!(report.clamped_timestamps, 1);
        assert_eq!(report.elapsed_nanos, 1000);
        // The clamped event joins the first window: 2 messages in 1000 ns.
        assert_eq!(report.peak_window, CompletionWindow { messages: 2, nanos: 1000 });
        let stored: Vec<_> = meter.timeline().map(|event| event.nanos).collect();
        assert_eq!(stored, vec![1000, 1000]);
    }

    #[test]
    fn recording_past_the_reservation_keeps_capacity_and_counts_the_overflow() {
        let mut meter = BandwidthMeter::new(4096, 16).unwrap();
        let reserved = meter.timeline_capacity();
        let events = reserved as u64 + 1000;
        for event in 1..=events {
            meter.record_completion(event * 100, 2);
        }
        assert_eq!(meter.timeline_capacity(), reserved, "the timeline must never grow");
        assert_eq!(meter.timeline().len(), reserved);
        let report = meter.report().unwrap();
        assert_eq!(report.timeline_events_not_stored, events - reserved as u64);
        assert_eq!(report.messages, events * 2, "overflowing events still count");
        assert_eq!(report.elapsed_nanos, events * 100);
    }

    #[test]
    fn window_comparison_is_exact_for_equal_rates() {
        let slow = CompletionWindow { messages: 2, nanos: 10 };
        let same = CompletionWindow { messages: 4, nanos: 20 };
        assert!(!same.is_faster_than(&slow));
        assert!(CompletionWindow { messages: 5, nanos: 20 }.is_faster_than(&slow));
    }
}
