//! The peak on hand-built timelines (answers computed by hand in the comments) and, on random
//! timelines, the fast search against perftest's all-pairs search.

use super::*;
use proptest::prelude::*;

fn post(nanos: u64, posted_before: u64) -> PostMark {
    PostMark { nanos, posted_before }
}

fn done(nanos: u64, completed: u64) -> CompletionMark {
    CompletionMark { nanos, completed }
}

/// One QP, tx depth 4, cq_mod 2: 4 posted at 0, then 2 more each time 2 complete, 200 ns apart.
fn steady() -> (Vec<PostMark>, Vec<CompletionMark>) {
    let posts = vec![post(0, 0), post(1000, 4), post(1200, 6), post(1400, 8)];
    let completions = vec![done(1000, 2), done(1200, 4), done(1400, 6), done(1600, 8), done(1800, 10)];
    (posts, completions)
}

#[test]
fn steady_stream_peak_is_the_best_post_to_completion_span() {
    // Candidates by hand: 0→1800: 10/1800; 1000(4)→1800: 6/800 = 0.0075; 1000(4)→1600: 4/600;
    // 1200(6)→1800: 4/600; 1400(8)→1800: 2/400. Best: 6 messages in 800 ns.
    let (posts, completions) = steady();
    assert_eq!(peak_span(&posts, &completions, 1), Some(PeakSpan { messages: 6, nanos: 800 }));
    assert_eq!(peak_span_brute_force(&posts, &completions, 1), Some(PeakSpan { messages: 6, nanos: 800 }));
}

#[test]
fn bunched_completions_do_not_raise_the_peak() {
    // The last three CQEs are seen by two polls 1 ns apart. The old completion-window peak
    // read 6 messages in 1 ns. Spans still start at posts: 1000(4)→1800: 6/800 is the best, the
    // same as the steady stream's, and 0→1800: 10/1800 the next.
    let posts = vec![post(0, 0), post(1000, 4)];
    let completions = vec![done(1000, 2), done(1799, 4), done(1800, 6), done(1800, 8), done(1800, 10)];
    let bunched = peak_span(&posts, &completions, 1).unwrap();
    assert_eq!(bunched, PeakSpan { messages: 6, nanos: 800 });
    let (steady_posts, steady_completions) = steady();
    let steady = peak_span(&steady_posts, &steady_completions, 1).unwrap();
    assert!(!bunched.is_faster_than(&steady));
}

#[test]
fn a_stall_leaves_the_peak_to_the_spans_around_it() {
    // 1 ms without completions between 1200 and 100 000. Spans across the stall are slow; the
    // best is 100 000(8)→100 400: 2 messages in 400 ns (0→1200 gives 4 in 1200, slower).
    let posts = vec![post(0, 0), post(1000, 4), post(1200, 6), post(100_000, 8)];
    let completions =
        vec![done(1000, 2), done(1200, 4), done(100_000, 6), done(100_200, 8), done(100_400, 10)];
    assert_eq!(peak_span(&posts, &completions, 1), Some(PeakSpan { messages: 2, nanos: 400 }));
}

#[test]
fn several_queue_pairs_count_together() {
    // QP0 posts 2 at 0, QP1 2 at 10; QP1's complete first (500), QP0's at 600; QP0 posts 2 at
    // 600, QP1 2 at 610; completions at 1100 and 1190. By hand the best is 600(4)→1190(8):
    // 4/590 = 0.006780, ahead of 0→1190: 8/1190 = 0.006723 and 0→600: 4/600 = 0.006667.
    let posts = vec![post(0, 0), post(10, 2), post(600, 4), post(610, 6)];
    let completions = vec![done(500, 2), done(600, 4), done(1100, 6), done(1190, 8)];
    assert_eq!(peak_span(&posts, &completions, 1), Some(PeakSpan { messages: 4, nanos: 590 }));
}

#[test]
fn a_post_that_no_completion_covers_spans_nothing() {
    assert_eq!(peak_span(&[post(0, 0)], &[], 1), None);
    // The batch posted after 2 completed: no completion after it includes its messages.
    assert_eq!(peak_span(&[post(100, 2)], &[done(200, 2)], 1), None);
    // Same instant: no time has passed, no span.
    assert_eq!(peak_span(&[post(200, 0)], &[done(200, 2)], 1), None);
}

#[test]
fn a_peak_span_holds_the_minimum_of_completion_events() {
    // Two quick events then a slow stretch: the fastest span is 4 messages in 250 ns (the first
    // post to the second event, 2 events); spans of at least 3 events must reach the third,
    // from a post before the first.
    let posts = [post(0, 0), post(100, 2), post(150, 4)];
    let completions = [done(200, 2), done(250, 4), done(1000, 6)];
    assert_eq!(peak_span(&posts, &completions, 1), Some(PeakSpan { messages: 4, nanos: 250 }));
    assert_eq!(peak_span(&posts, &completions, 2), Some(PeakSpan { messages: 4, nanos: 250 }));
    assert_eq!(peak_span(&posts, &completions, 3), Some(PeakSpan { messages: 6, nanos: 1000 }));
    assert_eq!(peak_span(&posts, &completions, 4), None);
}

/// A FIFO pipe that serves one message per `service` ns and shows a completion `latency` ns
/// later, driven like the engine: fill the send queue up to `depth`, signal every `cq_mod`-th
/// message (and the last), poll `poll_delay` ns after a signalled message completes, and
/// record everything that poll sees at that poll's time.
fn simulate(
    messages: u64,
    depth: u64,
    cq_mod: u64,
    service: u64,
    latency: u64,
    poll_delays: &[u64],
) -> (Vec<PostMark>, Vec<CompletionMark>) {
    let (mut posts, mut completions) = (Vec::new(), Vec::new());
    let mut seen_at: Vec<u64> = Vec::new();
    let (mut now, mut posted, mut completed, mut server_free, mut poll) = (0u64, 0u64, 0u64, 0u64, 0usize);
    while completed < messages {
        let count = (depth - (posted - completed)).min(messages - posted);
        if count > 0 {
            posts.push(post(now, posted));
            for _ in 0..count {
                server_free = server_free.max(now) + service;
                seen_at.push(server_free + latency);
            }
            posted += count;
        }
        let signalled = |index: u64| (index + 1).is_multiple_of(cq_mod) || index + 1 == messages;
        let next =
            (completed..posted).find(|&index| signalled(index)).expect("a signalled message in flight");
        now = now.max(seen_at[next as usize]) + poll_delays[poll % poll_delays.len()];
        poll += 1;
        let in_flight = completed..posted;
        for index in in_flight {
            if signalled(index) && seen_at[index as usize] <= now {
                completions.push(done(now, index + 1));
                completed = index + 1;
            }
        }
    }
    (posts, completions)
}

fn same_rate(left: Option<PeakSpan>, right: Option<PeakSpan>) -> bool {
    match (left, right) {
        (Some(left), Some(right)) => !left.is_faster_than(&right) && !right.is_faster_than(&left),
        (None, None) => true,
        _ => false,
    }
}

proptest! {
    #[test]
    fn fast_search_equals_perftests_all_pairs_search(
        steps in proptest::collection::vec((0u64..50, 1u64..6, 0u64..40, 0u64..6), 1..60),
        min_events in 1usize..6,
    ) {
        // Random interleavings of posts and completions, times and counts non-decreasing.
        let (mut posts, mut completions) = (Vec::new(), Vec::new());
        let (mut now, mut posted, mut completed) = (0u64, 0u64, 0u64);
        for (post_gap, post_count, done_gap, done_count) in steps {
            now += post_gap;
            posts.push(post(now, posted));
            posted += post_count;
            now += done_gap;
            let done_count = done_count.min(posted - completed);
            if done_count > 0 {
                completed += done_count;
                completions.push(done(now, completed));
            }
        }
        let fast = peak_span(&posts, &completions, min_events);
        let brute = peak_span_brute_force(&posts, &completions, min_events);
        prop_assert!(same_rate(fast, brute), "fast {fast:?} brute {brute:?}");
    }

    #[test]
    fn the_peak_never_beats_the_pipe_and_never_falls_below_the_average(
        messages in 1u64..300,
        depth_groups in 1u64..8,
        cq_mod in 1u64..16,
        service in 1u64..500,
        latency in 0u64..5000,
        poll_delays in proptest::collection::vec(0u64..3000, 1..8),
    ) {
        let (posts, completions) = simulate(messages, depth_groups * cq_mod, cq_mod, service, latency, &poll_delays);
        let peak = peak_span(&posts, &completions, 1).expect("a run with completions has a peak");
        // No span moves messages faster than the pipe serves them.
        prop_assert!(u128::from(peak.messages) * u128::from(service) <= u128::from(peak.nanos));
        // The whole run (first post to last completion) is one of the spans.
        let last = completions.last().unwrap();
        let whole = PeakSpan { messages: last.completed, nanos: last.nanos };
        prop_assert!(!whole.is_faster_than(&peak));
        prop_assert!(same_rate(peak_span_brute_force(&posts, &completions, 1), Some(peak)));
    }
}
