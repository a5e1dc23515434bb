//! The sending half of the SEND stream: fills every QP's send queue as far as its phase, its
//! credits and (staged) its finished copies allow, retires the completions, feeds the meter and
//! moves from the warm-up to the measured phase.

use std::time::Duration;

use gdrperf_stats::{BandwidthMeter, BandwidthReport, RunClock};

use crate::engines::credits::SenderCredits;
use crate::engines::meter::{phase_meter, warn_if_not_stored};
use crate::engines::stream_book::{
    events_to_store, list_signal_interval, post_list_length, signal_interval, whole_lists,
};
use crate::error::{ConfigError, Error, PostListRule, Result};
use crate::memory::queue_memory::QueueMemory;
use crate::options::config::StopRule;
use crate::verbs::completion::opcode;
use crate::verbs::{Inline, Operation, RcQueuePair, SendRequest, WorkCompletion};

use super::plan::{split_id, unexpected, work_request_id, SendPlan, PHASE_END};

/// When a phase of sending ends.
#[derive(Debug, Clone, Copy)]
enum Limit {
    Messages(u64),
    Time(Duration),
}

#[derive(Debug, Clone, Copy, Default)]
struct SendQueue {
    posted: u64,
    completed: u64,
    /// The phase's last (immediate-carrying) message is posted.
    ended: bool,
    /// Messages of the earlier phases of this size: message numbers (a staged ring's slots and
    /// stamps) run on across phases.
    base: u64,
}

pub(super) struct Sender<'c> {
    queues: Vec<SendQueue>,
    /// One way: the credits held for the receiver's posted receives.
    credits: Option<&'c mut SenderCredits>,
    /// The current phase's limit; `None` once the measured phase is over.
    limit: Option<Limit>,
    measuring: bool,
    measured_limit: Limit,
    plan: SendPlan,
    clock: RunClock,
    meter: BandwidthMeter,
    retired_now: u64,
}

impl<'c> Sender<'c> {
    pub(super) fn new(
        plan: &SendPlan,
        queue_count: usize,
        credits: Option<&'c mut SenderCredits>,
    ) -> Result<Sender<'c>> {
        let measured_limit = match plan.stop {
            StopRule::Iterations(iterations) => Limit::Messages(iterations),
            StopRule::Duration(duration) => Limit::Time(duration),
        };
        // Signalled as `post` does: every `signal_interval` (credits may lower it further once
        // the receiver's depth is known; what then does not fit is counted and said).
        let signal_every =
            list_signal_interval(signal_interval(plan.cq_mod, plan.size), u64::from(plan.post_list));
        let expected_events = events_to_store(plan.stop, signal_every, queue_count as u64);
        let expected_posts = events_to_store(plan.stop, 1, queue_count as u64);
        let meter = phase_meter(plan.size, plan.stop, plan.margin_seconds, expected_events, expected_posts)?;
        let (limit, measuring) =
            if plan.warmup > 0 { (Limit::Messages(plan.warmup), false) } else { (measured_limit, true) };
        Ok(Sender {
            queues: vec![SendQueue::default(); queue_count],
            credits,
            limit: Some(limit),
            measuring,
            measured_limit,
            plan: *plan,
            clock: RunClock::start(),
            meter,
            retired_now: 0,
        })
    }

    /// Messages posted per QP in this size, all phases.
    pub(super) fn messages(&self) -> Vec<u64> {
        self.queues.iter().map(|state| state.base + state.posted).collect()
    }

    pub(super) fn done(&self) -> bool {
        self.limit.is_none()
    }

    /// Every request posted so far is complete.
    pub(super) fn drained(&self) -> bool {
        self.queues.iter().all(|state| state.completed == state.posted)
    }

    /// Fills every QP's send queue as far as the phase allows.
    pub(super) fn post<M: QueueMemory>(
        &mut self,
        queue_pairs: &mut [RcQueuePair],
        memories: &mut [M],
    ) -> Result<()> {
        let Some(limit) = self.limit else { return Ok(()) };
        let (tx_depth, mut cq_mod) =
            (u64::from(self.plan.tx_depth), signal_interval(self.plan.cq_mod, self.plan.size));
        if let Some(credits) = self.credits.as_deref() {
            // Nothing to post before the receiver's first grant; then a timed run's whole groups
            // must fit in the credits that come back.
            let Some(largest) = credits.largest_group() else { return Ok(()) };
            cq_mod = cq_mod.min(largest.max(1));
            // A list is posted only when credits cover all of it (perftest's `scnt + post_list
            // - credit_buf < rx_depth`): one longer than the credits that come back never is.
            if u64::from(self.plan.post_list) > largest {
                return Err(ConfigError::PostList {
                    post_list: self.plan.post_list,
                    rule: PostListRule::AboveCredits { credits: largest },
                }
                .into());
            }
        }
        // Every list's last message signalled, so a list's room always comes back.
        let list = u64::from(self.plan.post_list.max(1));
        cq_mod = list_signal_interval(cq_mod, list);
        let out_of_time = match limit {
            Limit::Time(duration) => self.clock.origin().elapsed() >= duration,
            Limit::Messages(_) => false,
        };
        for (index, queue_pair) in queue_pairs.iter_mut().enumerate() {
            let state = &mut self.queues[index];
            let mut room = tx_depth - (state.posted - state.completed);
            if let Some(credits) = self.credits.as_deref() {
                room = room.min(credits.available(index));
            }
            // Room for a whole list, or for what is left of a counted phase.
            let needed = match limit {
                Limit::Messages(target) => list.min(target - state.posted),
                Limit::Time(_) => list,
            };
            if state.ended || room < needed.max(1) {
                continue;
            }
            // The last message of the phase is the one numbered `last`.
            let (count, last) = match limit {
                Limit::Messages(target) => (room.min(target - state.posted), target),
                // A timed phase ends with a whole list, its last message marked.
                Limit::Time(_) if out_of_time => (list, state.posted + list),
                // Whole moderation groups only, so the last one posted is always signaled.
                Limit::Time(_) => (room - room % cq_mod, u64::MAX),
            };
            // Whole lists only (perftest's `scnt + post_list <= tx_depth + ccnt`), but for the
            // phase's last, which may be short.
            let left = (last != u64::MAX).then(|| last - state.posted);
            let count = whole_lists(list as u32, count, left);
            if count == 0 {
                continue;
            }
            // Staged memory posts only messages whose copy out has finished.
            let count = if M::COPIES {
                let base = state.base;
                let end = if last == u64::MAX { u64::MAX } else { base + last };
                let ready =
                    memories[index].ready_to_post(base + state.posted, base + state.completed, end)?;
                let usable = count.min(ready);
                let usable = if last == u64::MAX { usable - usable % cq_mod } else { usable };
                whole_lists(list as u32, usable, left)
            } else {
                count
            };
            if count == 0 {
                continue;
            }
            let inline = match self.plan.inline {
                // SAFETY: the plan asks for inline sends only from host memory (the session's
                // buffers, registered and alive for the whole size), see `SendStream::measure`.
                true => unsafe { Inline::yes() },
                false => Inline::NO,
            };
            let (first, base) = (state.posted, state.base);
            let memory = &memories[index];
            // Each call posts one list: `list` messages, or without -l all of them.
            let length = post_list_length(list as u32, count);
            let mut offset = 0;
            while offset < count {
                let end = (offset + length).min(count);
                queue_pair.post_send((first + offset + 1..=first + end).map(|sequence| SendRequest {
                    wr_id: work_request_id(false, index, sequence),
                    signaled: sequence.is_multiple_of(cq_mod) || sequence == last,
                    local: memory.local(base + sequence - 1),
                    operation: if sequence == last {
                        Operation::SendWithImmediate { immediate: PHASE_END }
                    } else {
                        Operation::Send
                    },
                    inline,
                }))?;
                offset = end;
            }
            state.posted += count;
            state.ended = state.posted == last;
            if let Some(credits) = self.credits.as_deref_mut() {
                credits.spend(index, count);
            }
            if self.measuring {
                // Stamped with the latest reading: no later than this post.
                self.meter.record_post(self.meter.last_completion_nanos(), count);
            }
        }
        Ok(())
    }

    /// The receiver's credit: its immediate says how many receives it reposted; the credit's
    /// own receive is reposted at once.
    pub(super) fn take_credit(
        &mut self,
        completion: &WorkCompletion,
        queue_pairs: &mut [RcQueuePair],
    ) -> Result<()> {
        if !completion.is_success() {
            return Err(completion.error("receive of a credit", 0).into());
        }
        let (index, _) = split_id(completion.wr_id);
        if index >= queue_pairs.len() {
            return Err(unexpected(completion, "a credit from the receiver"));
        }
        self.grant(completion, index)?;
        Ok(queue_pairs[index].post_receive(completion.wr_id, crate::verbs::LocalSlice::empty())?)
    }

    /// Takes in the credit `completion` carries for QP `index` (its immediate: how many
    /// receives the peer reposted).
    pub(super) fn grant(&mut self, completion: &WorkCompletion, index: usize) -> Result<()> {
        let granted = match (self.credits.as_deref_mut(), completion.immediate) {
            (Some(credits), Some(count)) => credits.grant(index, u64::from(count)),
            _ => None,
        };
        granted.ok_or_else(|| unexpected(completion, "a credit from the receiver"))
    }

    pub(super) fn complete(&mut self, completion: &WorkCompletion) -> Result<()> {
        if !completion.is_success() {
            return Err(completion.error("SEND", self.plan.size).into());
        }
        let (index, sequence) = split_id(completion.wr_id);
        let state =
            self.queues.get_mut(index).filter(|state| sequence > state.completed && sequence <= state.posted);
        let (Some(state), opcode::SEND) = (state, completion.opcode) else {
            return Err(unexpected(completion, "SEND"));
        };
        if self.measuring {
            self.retired_now += sequence - state.completed;
        }
        state.completed = sequence;
        Ok(())
    }

    /// Feeds the meter (one clock read per poll) and moves to the next phase when every QP's
    /// phase is posted and complete.
    pub(super) fn after_poll(&mut self) {
        if self.retired_now > 0 {
            self.meter.record_completion(self.clock.now_nanos(), self.retired_now as u32);
            self.retired_now = 0;
        }
        if self.limit.is_none()
            || !self.queues.iter().all(|state| state.ended && state.completed == state.posted)
        {
            return;
        }
        if self.measuring {
            self.limit = None;
        } else {
            self.queues.iter_mut().for_each(|state| {
                *state = SendQueue { base: state.base + state.posted, ..SendQueue::default() }
            });
            self.measuring = true;
            self.limit = Some(self.measured_limit);
            // The next loop turn posts at once: this is perftest's "first post".
            self.clock = RunClock::start();
        }
    }

    pub(super) fn report(self) -> Result<BandwidthReport> {
        let size = self.plan.size;
        self.meter
            .report()
            .map_err(|source| Error::Figure {
                what: format!("no send bandwidth measured at {size} bytes"),
                source,
            })
            .inspect(warn_if_not_stored)
    }
}
