//! The bandwidth loop's own work, apart from the verbs calls: how many requests each QP may post,
//! which are signalled, which completions are legitimate, when to read the clock, what to record,
//! and when silence means a dead peer. Kept apart from the verbs so that a benchmark
//! (`benches/stream_loop.rs`) can time exactly this work against a stand-in queue.
//!
//! # Clock reads
//!
//! One reading per poll that retired something (it stamps the completions, is the stamp of the
//! posts that follow into the room they left, and resets the stall timer), and one per
//! [`EMPTY_POLLS_PER_LOOK`] empty polls (for the stall check and `-D`'s end). A post is stamped with
//! the latest reading, taken no later than the post, so a post-to-completion span can only be
//! measured longer than it was: the peak errs low, never high.
//!
//! # Signalling and the stall check
//!
//! perftest signals one request in `cq_mod`. At large messages that is a lot of bytes between two
//! completions (100 × 4 MiB = 400 MiB, 12 s at Soft-RoCE's ~32 MiB/s), and a stall detector that
//! waits a fixed time for the next completion mistakes a long batch for a dead peer. So a request
//! is signalled at least every [`SIGNAL_EVERY_BYTES`]: the signal interval is
//! `min(cq_mod, max(1, SIGNAL_EVERY_BYTES / size))` (see [`signal_interval`]). Below 1 MiB with
//! the default `cq_mod` of 100 nothing changes; at 4 MiB every 16th request is signalled, 2 s of
//! Soft-RoCE's ~32 MiB/s. (16 MiB was tried first: in the Soft-RoCE VM, gdr-write-bw at 1 MiB
//! with `-n 64` then signalled 4 requests where perftest signals 1 and read half perftest's
//! bandwidth, results/softroce/write_bw-vs-perftest.csv of tag figures-measured-3b08d75.) A dead
//! peer is still noticed after `stall_timeout` without completions, as before.

use std::time::Duration;

use gdrperf_stats::{BandwidthMeter, RunClock};

use crate::options::config::StopRule;

/// Most bytes between two signalled requests of one QP.
pub const SIGNAL_EVERY_BYTES: u64 = 64 << 20;

/// Empty polls between two clock reads.
pub const EMPTY_POLLS_PER_LOOK: u32 = 64;

/// Bits of the work-request id that hold the message's sequence number; the QP index sits above.
pub const SEQUENCE_BITS: u32 = 40;

/// Requests per signalled request: `cq_mod`, lowered so that no more than [`SIGNAL_EVERY_BYTES`]
/// go unsignalled.
pub fn signal_interval(cq_mod: u32, size: usize) -> u64 {
    let by_bytes = (SIGNAL_EVERY_BYTES / (size.max(1) as u64)).max(1);
    u64::from(cq_mod.max(1)).min(by_bytes)
}

/// The signal interval under `-l N`: the largest divisor of `N` not above `interval`, so that
/// every list's last request is signalled, as perftest's (its `-Q` divides the list); `interval`
/// itself without a list. A list whose end went unsignalled would leave its tail uncompleted in
/// the books, and a next list needing that room would never be posted (a stall).
pub fn list_signal_interval(interval: u64, post_list: u64) -> u64 {
    let interval = interval.max(1);
    if post_list <= 1 {
        return interval;
    }
    (1..=interval.min(post_list)).rev().find(|divisor| post_list.is_multiple_of(*divisor)).unwrap_or(1)
}

/// Events a `-D` run reserves room for, per second of its duration: one event every ~4 µs, more
/// than Soft-RoCE or a moderated hardware stream raises; a faster stream (small messages, every
/// request signalled, on hardware) fills the store, and the rest is counted and said (the row's
/// `peak_events_not_stored` and a warning), never silently cut.
pub const TIMED_EVENTS_PER_SECOND: u64 = 1 << 18;

/// Most events any one store reserves (16 bytes each): 64 MiB.
pub const MOST_STORED_EVENTS: u64 = 1 << 22;

/// Room to reserve for the completion events of a measured phase, over `queue_count` QPs that
/// signal one request in `signal_every` (the effective interval: [`signal_interval`], lowered for
/// staged memory) and always the last one: `ceil(iterations / signal_every)` per QP for `-n`
/// (each event retires at least one signalled request), [`TIMED_EVENTS_PER_SECOND`] for each
/// second of `-D`; at most [`MOST_STORED_EVENTS`].
pub fn events_to_store(stop: StopRule, signal_every: u64, queue_count: u64) -> usize {
    let events = match stop {
        StopRule::Iterations(iterations) => {
            iterations.div_ceil(signal_every.max(1)).saturating_mul(queue_count.max(1))
        }
        StopRule::Duration(duration) => duration.as_secs().max(1).saturating_mul(TIMED_EVENTS_PER_SECOND),
    };
    events.min(MOST_STORED_EVENTS) as usize
}

/// One QP's counts.
#[derive(Debug, Clone, Copy, Default)]
pub struct QueueProgress {
    pub posted: u64,
    pub completed: u64,
}

/// A completion the book did not expect (wrong QP, sequence or opcode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unexpected;

/// The loop's state apart from the verbs objects.
#[derive(Debug)]
pub struct StreamBook {
    pub progress: Vec<QueueProgress>,
    tx_depth: u64,
    signal_every: u64,
    /// Messages per QP, or `None` for a timed run.
    target: Option<u64>,
    clock: RunClock,
    now_nanos: u64,
    last_progress_nanos: u64,
    empty_polls: u32,
    stall_nanos: u64,
    /// Whether the last [`StreamBook::after_poll`] read the clock.
    looked: bool,
}

impl StreamBook {
    /// Starts the run's clock: call just before the first post.
    pub fn start(
        queue_count: usize,
        tx_depth: u32,
        signal_every: u64,
        target: Option<u64>,
        stall_timeout: Duration,
    ) -> StreamBook {
        StreamBook {
            progress: vec![QueueProgress::default(); queue_count],
            tx_depth: u64::from(tx_depth),
            signal_every,
            target,
            clock: RunClock::start(),
            now_nanos: 0,
            last_progress_nanos: 0,
            empty_polls: 0,
            stall_nanos: u64::try_from(stall_timeout.as_nanos()).unwrap_or(u64::MAX),
            looked: false,
        }
    }

    /// The latest clock reading, nanoseconds since the first post.
    pub fn now_nanos(&self) -> u64 {
        self.now_nanos
    }

    /// How many requests QP `index` may post now: the room in its send queue, up to the target;
    /// a timed run posts whole signal groups only, so that the last one posted is signalled.
    #[inline]
    pub fn room(&self, index: usize) -> u64 {
        let state = self.progress[index];
        let room = self.tx_depth - (state.posted - state.completed);
        match self.target {
            Some(target) => room.min(target - state.posted),
            None => self.whole_groups(room),
        }
    }

    /// `count` rounded down to whole signal groups in a timed run; unchanged otherwise.
    #[inline]
    pub fn whole_groups(&self, count: u64) -> u64 {
        match self.target {
            Some(_) => count,
            None => count - count % self.signal_every,
        }
    }

    /// Whether the request numbered `sequence` (from 1) is signalled.
    #[inline]
    pub fn is_signaled(&self, sequence: u64) -> bool {
        sequence.is_multiple_of(self.signal_every) || Some(sequence) == self.target
    }

    /// The work-request id of QP `index`'s request `sequence`.
    #[inline]
    pub fn work_request_id(index: usize, sequence: u64) -> u64 {
        ((index as u64) << SEQUENCE_BITS) | sequence
    }

    /// Notes that QP `index` posted `count` more, stamping the post with the latest reading.
    #[inline]
    pub fn posted(&mut self, index: usize, count: u64, meter: Option<&mut BandwidthMeter>) {
        self.progress[index].posted += count;
        if let Some(meter) = meter {
            meter.record_post(self.now_nanos, count);
        }
    }

    /// Whether the last poll was followed by a clock read: the moment for the loop's other
    /// looks around (the peer's health), so that an empty poll costs no system call.
    #[inline]
    pub fn looked(&self) -> bool {
        self.looked
    }

    /// Whether every QP has posted its target (always false in a timed run).
    pub fn all_posted(&self) -> bool {
        self.target.is_some_and(|target| self.progress.iter().all(|state| state.posted >= target))
    }

    /// Whether everything posted has completed.
    pub fn drained(&self) -> bool {
        self.progress.iter().all(|state| state.completed == state.posted)
    }

    /// Accounts a signalled completion: how many requests of its QP it retires.
    #[inline]
    pub fn complete(&mut self, work_request_id: u64) -> Result<u64, Unexpected> {
        let index = (work_request_id >> SEQUENCE_BITS) as usize;
        let sequence = work_request_id & ((1 << SEQUENCE_BITS) - 1);
        let state = self
            .progress
            .get_mut(index)
            .filter(|state| sequence > state.completed && sequence <= state.posted)
            .ok_or(Unexpected)?;
        let retired = sequence - state.completed;
        state.completed = sequence;
        Ok(retired)
    }

    /// Progress that retires none of our requests (a staged receiver's credit): reads the clock
    /// and restarts the stall timer, recording nothing.
    #[inline]
    pub fn other_progress(&mut self) {
        self.now_nanos = self.clock.now_nanos();
        self.last_progress_nanos = self.now_nanos;
        self.empty_polls = 0;
        self.looked = true;
    }

    /// After a poll that retired `retired` requests: reads the clock when something retired (and
    /// records the event) or once in [`EMPTY_POLLS_PER_LOOK`] empty polls. Returns `false` when
    /// nothing has completed for the stall timeout.
    #[inline]
    pub fn after_poll(&mut self, retired: u64, meter: Option<&mut BandwidthMeter>) -> bool {
        self.looked = true;
        if retired > 0 {
            self.now_nanos = self.clock.now_nanos();
            self.last_progress_nanos = self.now_nanos;
            self.empty_polls = 0;
            if let Some(meter) = meter {
                meter.record_completion(self.now_nanos, retired as u32);
            }
            return true;
        }
        self.empty_polls += 1;
        if self.empty_polls < EMPTY_POLLS_PER_LOOK {
            self.looked = false;
            return true;
        }
        self.empty_polls = 0;
        self.now_nanos = self.clock.now_nanos();
        self.now_nanos - self.last_progress_nanos <= self.stall_nanos
    }
}

/// How many of `room` requests to post now with lists of `post_list`: whole lists only, unless
/// `room` is all that is `left` of the phase (its last list may be short).
pub fn whole_lists(post_list: u32, room: u64, left: Option<u64>) -> u64 {
    let list = u64::from(post_list.max(1));
    if left == Some(room) {
        room
    } else {
        room - room % list
    }
}

/// Requests per post call: the post list, or with none (1) all `count` at once.
pub fn post_list_length(post_list: u32, count: u64) -> u64 {
    if post_list > 1 {
        u64::from(post_list)
    } else {
        count.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_hold_every_event_that_will_be_signalled() {
        use std::time::Duration;
        // 4 MiB with -Q 100 and -n 5000: signalled every 16 (64 MiB), 312 groups and the last.
        let every = signal_interval(100, 4 << 20);
        assert_eq!(events_to_store(StopRule::Iterations(5000), every, 1), 313);
        assert_eq!(events_to_store(StopRule::Iterations(5000), every, 4), 4 * 313);
        // A multiple of the interval: the last request is a group's own signal.
        assert_eq!(events_to_store(StopRule::Iterations(4992), every, 1), 312);
        // Every request signalled (perftest's rule above 8 KiB): one event each.
        assert_eq!(events_to_store(StopRule::Iterations(5000), 1, 2), 10_000);
        // -D: by the second, no longer a flat 65536; and never more than the most.
        assert_eq!(events_to_store(StopRule::Duration(Duration::from_secs(4)), 1, 1), 4 << 18);
        assert_eq!(events_to_store(StopRule::Duration(Duration::from_secs(600)), 1, 1), 1 << 22);
        assert_eq!(events_to_store(StopRule::Iterations(u64::MAX), 1, 1024), 1 << 22);
    }

    #[test]
    fn large_messages_are_signalled_at_least_every_64_mib() {
        assert_eq!(signal_interval(100, 4096), 100);
        assert_eq!(signal_interval(100, 1 << 20), 64);
        assert_eq!(signal_interval(100, 4 << 20), 16);
        assert_eq!(signal_interval(100, 64 << 20), 1);
        assert_eq!(signal_interval(100, 256 << 20), 1);
        assert_eq!(signal_interval(1, 8), 1);
    }

    #[test]
    fn completions_retire_up_to_their_sequence_and_strangers_are_refused() {
        let mut book = StreamBook::start(2, 8, 4, Some(8), Duration::from_secs(10));
        assert_eq!(book.room(1), 8);
        book.posted(1, 8, None);
        assert_eq!(book.room(1), 0);
        assert!(book.is_signaled(4) && book.is_signaled(8) && !book.is_signaled(5));
        assert_eq!(book.complete(StreamBook::work_request_id(1, 4)), Ok(4));
        // 4 slots free, but the target of 8 is all posted.
        assert_eq!(book.room(1), 0);
        assert_eq!(book.complete(StreamBook::work_request_id(1, 4)), Err(Unexpected));
        assert_eq!(book.complete(StreamBook::work_request_id(0, 1)), Err(Unexpected));
        assert_eq!(book.complete(StreamBook::work_request_id(5, 1)), Err(Unexpected));
        assert_eq!(book.complete(StreamBook::work_request_id(1, 8)), Ok(4));
        assert!(book.drained());
    }

    #[test]
    fn a_timed_run_posts_whole_groups() {
        let book = StreamBook::start(1, 10, 4, None, Duration::from_secs(10));
        assert_eq!(book.room(0), 8);
        assert!(!book.all_posted());
    }

    #[test]
    fn silence_longer_than_the_timeout_is_a_stall() {
        let mut book = StreamBook::start(1, 8, 4, Some(8), Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        let verdicts: Vec<bool> = (0..EMPTY_POLLS_PER_LOOK).map(|_| book.after_poll(0, None)).collect();
        // Only the last empty poll reads the clock, and it finds the run silent too long.
        assert_eq!(verdicts.iter().filter(|&&alive| !alive).count(), 1);
        assert!(!verdicts[verdicts.len() - 1]);
        assert!(book.looked(), "the last empty poll of a round reads the clock");
        assert!(book.after_poll(1, None) && book.looked());
        assert!(book.after_poll(0, None) && !book.looked());
        let mut book = StreamBook::start(1, 8, 4, Some(8), Duration::from_secs(60));
        assert!((0..EMPTY_POLLS_PER_LOOK).all(|_| book.after_poll(0, None)));
    }

    /// `-l 4`: only whole lists go into the room (perftest's `scnt + post_list <= tx_depth +
    /// ccnt`), except the phase's last, which may be short; without `-l` all the room in one call.
    #[test]
    fn lists_are_whole_except_a_phases_last() {
        assert_eq!(whole_lists(4, 15, Some(100)), 12);
        assert_eq!(whole_lists(4, 3, Some(100)), 0, "a list that does not fit waits for room");
        assert_eq!(whole_lists(4, 3, Some(3)), 3, "the warm-up's short last list");
        assert_eq!(whole_lists(4, 15, None), 12, "a timed run");
        assert_eq!(whole_lists(1, 15, Some(100)), 15);
        assert_eq!(post_list_length(4, 12), 4);
        assert_eq!(post_list_length(1, 12), 12);
    }

    /// Under a list every list's end is signalled: 8 MiB messages lower the interval to 8 (64 MiB
    /// between signals), which does not divide a list of 12, so 6 is taken.
    #[test]
    fn a_lists_last_request_is_always_signalled() {
        assert_eq!(list_signal_interval(8, 12), 6);
        assert_eq!(list_signal_interval(100, 4), 4, "-Q defaults to the list's size");
        assert_eq!(list_signal_interval(2, 4), 2);
        assert_eq!(list_signal_interval(5, 7), 1);
        assert_eq!(list_signal_interval(8, 1), 8, "no list: the interval");
        for (interval, list) in (1..40u64).flat_map(|interval| (2..40u64).map(move |list| (interval, list))) {
            let every = list_signal_interval(interval, list);
            assert!(list % every == 0 && every <= interval, "{interval}, {list}: {every}");
        }
    }
}
