//! Bandwidth and message rate, measured the way perftest's `ib_write_bw` does.
//!
//! # What the harness feeds in
//!
//! A bandwidth test posts a stream of equal-sized messages and polls the completion queue (CQ).
//! With CQ moderation (`--cq-mod`, perftest's `cq_mod`), only every `cq_mod`-th work request is
//! signalled, so one completion entry *retires* `cq_mod` messages at once. The engine records:
//!
//! * per **post call**, [`BandwidthMeter::record_post`]: "at `t_ns`, `messages` more were posted",
//!   stamped with the latest clock reading the engine already has (taken no later than the post;
//!   no extra clock read per message or per post);
//! * per **completion event**, [`BandwidthMeter::record_completion`]: "at `t_ns`, `messages` more
//!   were observed complete", stamped with one clock read after the poll that saw them.
//!
//! All timestamps are nanoseconds since the first post (one [`crate::RunClock`] started just
//! before the first `post_send`). Counts are over all QPs together, as perftest's `totscnt` and
//! `totccnt`.
//!
//! # Definitions
//!
//! * **Average bandwidth** = `messages × message_size / t_last`, where `t_last` is the time of the
//!   last completion and the first post is time 0: perftest's
//!   `bw_avg = size × iters / (tcompleted[last] − tposted[0])`.
//! * **Message rate** = `messages / t_last`, in Mpps like perftest's `MsgRate`.
//! * **Peak bandwidth** = perftest's: the fastest span from a post to a later completion, see
//!   [`crate::peak`], over spans of at least [`MIN_COMPLETION_EVENTS_FOR_PEAK`] (one)
//!   completion event, as perftest's own search: a run with a completion has a peak. A span of
//!   one or two events can be shorter than one poll's lag and one post's stamp resolve (it was
//!   measured at 2× the link in the Soft-RoCE VM); the figure is still perftest's on
//!   the same timeline, and the rows mark it when it is above the path's ceiling (`peak_note`)
//!   instead of hiding it (a rule of 4 events left 16 of the demo's 23 rows empty).
//! * **Measurement window** (`-D`, [`BandwidthMeter::set_window`]): perftest's duration mode
//!   counts only the completions seen between the end of the ramp-up margin and the start of the
//!   drain margin, over that window's length. When a window is set, the average and message rate
//!   are `messages completed in [start, end) × size / (end − start)`, counted per message: a
//!   completion event retiring `m` messages stands for messages that completed since the event
//!   before it, so its messages are spread evenly over that interval and only those that fall
//!   inside the window count ([`messages_between`]). Counting whole events instead would put up
//!   to `cq_mod` messages (64 MiB at 1 MiB) on one side of a window edge, and an average could
//!   exceed what the link carries.
//!
//! # Memory and the hot path
//!
//! Recording never allocates: post and completion marks live in vectors sized up front from the
//! expected event count. Past that, events still count in the average and the window (kept
//! online), are left out of the peak's search (which then looks at the stored prefix: every
//! span it sees is real, so the peak can only err low) and are tallied in
//! [`BandwidthReport::timeline_events_not_stored`]: nothing is silently lost.

use crate::error::StatsError;
use crate::peak::{peak_span, CompletionMark, PeakSpan, PostMark};
use crate::units::{Bandwidth, MessageRate};
use serde::Serialize;

/// Completion events a peak's span holds at least (see the module documentation): one, as
/// perftest's search.
pub const MIN_COMPLETION_EVENTS_FOR_PEAK: u64 = 1;

/// Of `messages` that completed over `(previous, now]`, spread evenly (message `k` of them at
/// `previous + (now − previous) × k / messages`, the last at `now`), how many fall in
/// `[start, end)`. All of them at `now` when no time passed.
pub fn messages_between(previous: u64, now: u64, messages: u64, start: u64, end: u64) -> u64 {
    if now <= previous {
        return if now >= start && now < end { messages } else { 0 };
    }
    let (span, count) = (u128::from(now - previous), u128::from(messages));
    // Message k is at or after `start` when span × k ≥ count × (start − previous).
    let first = match start.checked_sub(previous) {
        None | Some(0) => 1,
        Some(offset) => (count * u128::from(offset)).div_ceil(span).max(1),
    };
    // And before `end` when span × k < count × (end − previous).
    let last = match end.checked_sub(previous) {
        None | Some(0) => return 0,
        Some(offset) => ((count * u128::from(offset)).div_ceil(span) - 1).min(count),
    };
    (last + 1).saturating_sub(first) as u64
}

/// One observed completion event, as stored in the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CompletionEvent {
    /// Nanoseconds since the first post.
    pub nanos: u64,
    /// Messages this event retired.
    pub messages: u64,
}

/// `-D`'s measurement window and what completed inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MeasurementWindow {
    /// Start of the window, nanoseconds since the first post (end of the ramp-up margin).
    pub start_nanos: u64,
    /// End of the window (start of the drain margin).
    pub end_nanos: u64,
    /// Messages whose completion was seen at `start_nanos <= t < end_nanos`.
    pub messages: u64,
}

/// Accumulates the posts and completions of one bandwidth run. See the module documentation for
/// the exact definitions.
#[derive(Debug, Clone)]
pub struct BandwidthMeter {
    message_size_bytes: u64,
    total_posted: u64,
    total_messages: u64,
    completion_events: u64,
    last_completion_nanos: u64,
    clamped_timestamps: u64,
    window: Option<MeasurementWindow>,
    posts: Vec<PostMark>,
    completions: Vec<CompletionMark>,
    timeline_events_not_stored: u64,
}

impl BandwidthMeter {
    /// Creates a meter for messages of `message_size_bytes`, reserving room for
    /// `expected_completion_events` completion events and as many post calls (typically
    /// `iterations / cq_mod`, rounded up, per QP).
    ///
    /// The reservation is the only allocation this meter ever makes; 32 bytes per event.
    pub fn new(message_size_bytes: u64, expected_completion_events: usize) -> Result<Self, StatsError> {
        Self::with_capacities(message_size_bytes, expected_completion_events, expected_completion_events)
    }

    /// As [`BandwidthMeter::new`], with room for `expected_post_calls` post marks (an engine that
    /// may post one message at a time reserves one per message).
    pub fn with_capacities(
        message_size_bytes: u64,
        expected_completion_events: usize,
        expected_post_calls: usize,
    ) -> Result<Self, StatsError> {
        if message_size_bytes == 0 {
            return Err(StatsError::ZeroMessageSize);
        }
        Ok(Self {
            message_size_bytes,
            total_posted: 0,
            total_messages: 0,
            completion_events: 0,
            last_completion_nanos: 0,
            clamped_timestamps: 0,
            window: None,
            posts: Vec::with_capacity(expected_post_calls),
            completions: Vec::with_capacity(expected_completion_events),
            timeline_events_not_stored: 0,
        })
    }

    /// Measures the average over `[start_nanos, end_nanos)` only (`-D`'s middle window). Call
    /// before the run.
    pub fn set_window(&mut self, start_nanos: u64, end_nanos: u64) {
        self.window = Some(MeasurementWindow { start_nanos, end_nanos, messages: 0 });
    }

    /// Records that `messages` more were posted in one call, at `nanos` or later. O(1), never
    /// allocates. A meter that records no post (a receiver, which only sees arrivals) measures
    /// its peak from its clock's origin.
    #[inline]
    pub fn record_post(&mut self, nanos: u64, messages: u64) {
        if messages == 0 {
            return;
        }
        if self.posts.len() < self.posts.capacity() {
            self.posts.push(PostMark { nanos, posted_before: self.total_posted });
        } else {
            self.timeline_events_not_stored += 1;
        }
        self.total_posted += messages;
    }

    /// Records that at `nanos` (since the first post) `messages` more messages were observed
    /// complete. Never allocates; O(1).
    ///
    /// * `messages == 0` is ignored: an empty poll retires nothing and is not an event.
    /// * A timestamp earlier than the previous event's (only possible if the caller mixed clocks)
    ///   is raised to the previous event's time and counted in
    ///   [`BandwidthReport::clamped_timestamps`].
    #[inline]
    pub fn record_completion(&mut self, nanos: u64, messages: u32) {
        if messages == 0 {
            return;
        }
        let messages = u64::from(messages);
        let previous_nanos = self.last_completion_nanos;
        let nanos = if nanos < self.last_completion_nanos {
            self.clamped_timestamps += 1;
            self.last_completion_nanos
        } else {
            nanos
        };
        self.total_messages += messages;
        self.completion_events += 1;
        self.last_completion_nanos = nanos;
        if let Some(window) = self.window.as_mut() {
            window.messages +=
                messages_between(previous_nanos, nanos, messages, window.start_nanos, window.end_nanos);
        }
        if self.completions.len() < self.completions.capacity() {
            self.completions.push(CompletionMark { nanos, completed: self.total_messages });
        } else {
            self.timeline_events_not_stored += 1;
        }
    }

    /// Message size this meter was built for.
    pub fn message_size_bytes(&self) -> u64 {
        self.message_size_bytes
    }

    /// Messages recorded complete so far (for progress lines on long runs).
    pub fn total_messages(&self) -> u64 {
        self.total_messages
    }

    /// Time of the latest completion, in nanoseconds since the first post.
    pub fn last_completion_nanos(&self) -> u64 {
        self.last_completion_nanos
    }

    /// The stored completion events, in the order recorded (timestamps after clamping).
    pub fn timeline(&self) -> impl ExactSizeIterator<Item = CompletionEvent> + '_ {
        let mut before = 0;
        self.completions.iter().map(move |mark| {
            let event = CompletionEvent { nanos: mark.nanos, messages: mark.completed - before };
            before = mark.completed;
            event
        })
    }

    /// The stored post and completion marks, for the peak's search or for plotting.
    pub fn marks(&self) -> (&[PostMark], &[CompletionMark]) {
        (&self.posts, &self.completions)
    }

    /// Timeline slots reserved at construction (for tests and capacity planning).
    pub fn timeline_capacity(&self) -> usize {
        self.completions.capacity()
    }

    /// Computes the report: O(n log n) in the stored events, for the peak. Call after the run.
    ///
    /// Fails when nothing was recorded or when no time has elapsed since the first post (or, with
    /// a window, when the window is empty or saw no completion): the cases in which a bandwidth
    /// is undefined.
    pub fn report(&self) -> Result<BandwidthReport, StatsError> {
        if self.total_messages == 0 {
            return Err(StatsError::NoCompletions);
        }
        if self.last_completion_nanos == 0 {
            return Err(StatsError::ZeroElapsedTime { messages: self.total_messages });
        }
        let (messages, elapsed_nanos) = match self.window {
            None => (self.total_messages, self.last_completion_nanos),
            Some(window) => {
                let length = window.end_nanos.saturating_sub(window.start_nanos);
                if window.messages == 0 || length == 0 {
                    return Err(StatsError::EmptyWindow {
                        start_nanos: window.start_nanos,
                        end_nanos: window.end_nanos,
                    });
                }
                (window.messages, length)
            }
        };
        let origin = [PostMark { nanos: 0, posted_before: 0 }];
        let posts = if self.posts.is_empty() { &origin[..] } else { &self.posts[..] };
        let peak_span = (self.completion_events >= MIN_COMPLETION_EVENTS_FOR_PEAK)
            .then(|| peak_span(posts, &self.completions, MIN_COMPLETION_EVENTS_FOR_PEAK as usize))
            .flatten();
        let bytes = messages.saturating_mul(self.message_size_bytes);
        Ok(BandwidthReport {
            message_size_bytes: self.message_size_bytes,
            messages,
            bytes,
            completion_events: self.completion_events,
            elapsed_nanos,
            average: Bandwidth::from_bytes_and_nanos(bytes, elapsed_nanos),
            peak: peak_span.map(|span| {
                Bandwidth::from_bytes_and_nanos(
                    span.messages.saturating_mul(self.message_size_bytes),
                    span.nanos,
                )
            }),
            peak_span,
            message_rate: MessageRate::from_messages_and_nanos(messages, elapsed_nanos),
            window: self.window,
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
    /// Messages the average counts (all completed, or those completed inside `-D`'s window).
    pub messages: u64,
    /// Bytes moved (`messages × message_size_bytes`).
    pub bytes: u64,
    /// Completion events recorded (one per signalled CQE, or per poll, as the harness chose).
    pub completion_events: u64,
    /// Time the average is taken over: first post to last completion, or the window's length.
    pub elapsed_nanos: u64,
    /// `bytes / elapsed`, perftest's `BW average`.
    pub average: Bandwidth,
    /// perftest's `BW peak` (see [`crate::peak`]); `None` when no completion came after a post.
    pub peak: Option<Bandwidth>,
    /// The span the peak was measured over, so that a peak can be judged.
    pub peak_span: Option<PeakSpan>,
    /// `messages / elapsed`, perftest's `MsgRate`.
    pub message_rate: MessageRate,
    /// `-D`'s window, when one was set.
    pub window: Option<MeasurementWindow>,
    /// Events whose timestamp went backwards and was raised to the previous one (0 in a correct
    /// harness).
    pub clamped_timestamps: u64,
    /// Post or completion marks counted but not kept for the peak's search because more arrived
    /// than were reserved.
    pub timeline_events_not_stored: u64,
}

#[cfg(test)]
mod tests;
