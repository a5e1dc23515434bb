//! Peak bandwidth, perftest's way: the fastest span from a post to a later completion.
//!
//! # The definition
//!
//! perftest (`print_report_bw` in `src/perftest_parameters.c`) keeps, for every message, the time
//! it was posted (`tposted[i]`) and, for every signalled completion, the time it was seen
//! (`tcompleted[j]`, `j` the running count of completed messages minus one), and takes
//!
//! `peak = size / min over i ≤ j of (tcompleted[j] − tposted[i]) / (j − i + 1)`.
//!
//! Every span starts at a post and ends at a completion, so it holds at least one whole
//! post-to-completion time: completions that arrive bunched together (one poll returning many
//! CQEs) cannot shrink a span and cannot raise the peak.
//!
//! gdrperf records one [`PostMark`] per *post call* (a batch of work requests handed to the NIC
//! together, stamped with a clock reading taken no later than the call) and one
//! [`CompletionMark`] per completion event (stamped no earlier than the poll that saw it). The
//! peak is
//!
//! `peak = size × max over (post b, completion e) of (completed_e − posted_before_b) / (t_e − t_b)`
//!
//! over the pairs in which the batch's first message is among those completed
//! (`posted_before_b < completed_e`) and time has passed (`t_e > t_b`). This is perftest's
//! minimum with `i` restricted to the first message of a batch (within a batch all messages carry
//! the batch's stamp, and for one stamp the first message gives the longest span, so the best
//! `i` of a batch is its first) and `j` to the completion events (perftest's `j` steps over the
//! `cq_mod` boundaries, which are the same events). Because post stamps are never late and
//! completion stamps never early, a span can only be measured longer than it was, never shorter:
//! the peak errs low.
//!
//! # Computing it in O(n log n)
//!
//! The ratio is the slope from the point `(t_b, posted_before_b)` to `(t_e, completed_e)`. For a
//! fixed completion the best post is where the line from the completion touches the lower convex
//! hull of the eligible post points from below, and along that hull the slope rises and then
//! falls, so a binary search finds it. Eligible posts form a prefix that grows with `e`, and they
//! arrive in time order, so the hull is built incrementally (Andrew's monotone chain). All
//! comparisons are exact in `i128`. [`peak_span_brute_force`] is perftest's O(n·m) search, kept to
//! test this one against.

use serde::Serialize;

/// A post call: `posted_before` messages had been posted (all QPs together) when a batch was
/// posted at `nanos` (a reading taken no later than the call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PostMark {
    pub nanos: u64,
    pub posted_before: u64,
}

/// A completion event: `completed` messages (all QPs together) were known complete at `nanos`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CompletionMark {
    pub nanos: u64,
    pub completed: u64,
}

/// The span the peak was measured over: `messages` completed in `nanos` nanoseconds, from a
/// post to a completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PeakSpan {
    pub messages: u64,
    pub nanos: u64,
}

impl PeakSpan {
    /// Whether `self` is a strictly higher rate than `other` (exact: `m1·t2 > m2·t1`).
    pub fn is_faster_than(&self, other: &PeakSpan) -> bool {
        u128::from(self.messages) * u128::from(other.nanos)
            > u128::from(other.messages) * u128::from(self.nanos)
    }
}

/// The fastest post-to-completion span (see the module documentation) that holds at least
/// `min_events` completion events (a post's first message is among those the span's first
/// event completed), or `None` when no such span spans any time. Both slices must be in
/// recording order (times and counts non-decreasing), as the engines record them.
pub fn peak_span(posts: &[PostMark], completions: &[CompletionMark], min_events: usize) -> Option<PeakSpan> {
    let mut hull: Vec<(i128, i128)> = Vec::new();
    let mut next_post = 0;
    let mut best: Option<PeakSpan> = None;
    let min_events = min_events.max(1);
    for (index, completion) in completions.iter().enumerate() {
        let query = (i128::from(completion.nanos), i128::from(completion.completed));
        // The span's first event: `min_events - 1` events before this one.
        let Some(first_event) = index.checked_sub(min_events - 1).map(|first| completions[first]) else {
            continue;
        };
        while let Some(post) = posts.get(next_post) {
            if post.posted_before >= first_event.completed || post.nanos >= completion.nanos {
                break;
            }
            push_lower_hull(&mut hull, (i128::from(post.nanos), i128::from(post.posted_before)));
            next_post += 1;
        }
        if hull.is_empty() {
            continue;
        }
        let touching = hull[tangent_index(&hull, query)];
        let span = PeakSpan { messages: (query.1 - touching.1) as u64, nanos: (query.0 - touching.0) as u64 };
        if best.is_none_or(|best| span.is_faster_than(&best)) {
            best = Some(span);
        }
    }
    best
}

/// perftest's search, every eligible pair: O(posts × completions). The reference [`peak_span`]
/// is tested against.
pub fn peak_span_brute_force(
    posts: &[PostMark],
    completions: &[CompletionMark],
    min_events: usize,
) -> Option<PeakSpan> {
    let mut best: Option<PeakSpan> = None;
    let min_events = min_events.max(1);
    for post in posts {
        for (index, completion) in completions.iter().enumerate() {
            let Some(first_event) = index.checked_sub(min_events - 1).map(|first| completions[first]) else {
                continue;
            };
            if post.posted_before >= first_event.completed || post.nanos >= completion.nanos {
                continue;
            }
            let span = PeakSpan {
                messages: completion.completed - post.posted_before,
                nanos: completion.nanos - post.nanos,
            };
            if best.is_none_or(|best| span.is_faster_than(&best)) {
                best = Some(span);
            }
        }
    }
    best
}

/// `(b − a) × (c − a)`: positive when `a → b → c` turns left.
fn cross(a: (i128, i128), b: (i128, i128), c: (i128, i128)) -> i128 {
    (b.0 - a.0) * (c.1 - a.1) - (b.1 - a.1) * (c.0 - a.0)
}

/// Adds a point to the right end of a lower hull. A point at the same time as the hull's last
/// one has more messages before it, so it can never give a faster span: it is dropped.
fn push_lower_hull(hull: &mut Vec<(i128, i128)>, point: (i128, i128)) {
    if let Some(&last) = hull.last() {
        if last.0 == point.0 {
            return;
        }
    }
    while hull.len() >= 2 && cross(hull[hull.len() - 2], hull[hull.len() - 1], point) <= 0 {
        hull.pop();
    }
    hull.push(point);
}

/// Whether the slope from `a` to `query` is below the slope from `b` to `query` (both strictly
/// left of the query).
fn slope_below(a: (i128, i128), b: (i128, i128), query: (i128, i128)) -> bool {
    (query.1 - a.1) * (query.0 - b.0) < (query.1 - b.1) * (query.0 - a.0)
}

/// The hull vertex with the steepest line to `query`: the slope rises along the hull up to the
/// tangent point and falls after it, so the first vertex not beaten by its successor is it.
fn tangent_index(hull: &[(i128, i128)], query: (i128, i128)) -> usize {
    let (mut low, mut high) = (0, hull.len() - 1);
    while low < high {
        let middle = (low + high) / 2;
        if slope_below(hull[middle], hull[middle + 1], query) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}

#[cfg(test)]
mod tests;
