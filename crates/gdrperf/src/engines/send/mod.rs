//! The SEND/RECV streaming engine of gdr-send-bw: a sender keeping its queues full, a receiver
//! keeping receives posted, both measured.
//!
//! Unlike an RDMA WRITE, a SEND needs the receiver's cooperation: every message consumes one
//! receive the receiver posted beforehand, and a message that finds none is refused (RNR) and
//! retried later, which costs bandwidth. So the receiver posts `-r/--rx-depth` receives per QP
//! before the sender starts (in `prepare`, before the server says Ready) and reposts each one the
//! moment its completion is polled. Receives cannot be taken back once posted, so they outlive a
//! size: they are posted once per run ([`ReceiveQueues`]) and each receive covers the largest
//! message of the sweep, so it fits whatever size consumes it.
//!
//! The sender works as the WRITE stream does (perftest's method: `-t` outstanding, one signaled
//! in `-Q`, the clock started at the first post). The receiver, which cannot know when the first
//! message was posted, starts its clock at the first receive completion, as perftest's receiver
//! does, and counts every message from there (under `-D`, those of the middle window of its own
//! clock, as the sender does on its clock). The last message of each phase (warm-up, measured)
//! of each QP carries an immediate value, so the receiver knows where the phase ends even in a
//! `-D` run, where no count is agreed.
//!
//! With `--validate` every payload is checked as it is polled, before its receive is reposted:
//! each receive then needs a slot of its own, in a host-memory ring per QP, and the receives kept
//! posted are as many as the ring has slots (the ring is capped at [`plan::VALIDATION_RING_BYTES`]).
//! The ring is host memory, so `--validate` is refused where the benchmark buffers are GPU
//! memory: it would no longer measure receiving into them.
//!
//! Staged memory (`--mem cuda-staged`) copies every message between payload and bounce ring
//! (`memory::queue_memory`): the sender copies each message out into its own slot before posting it,
//! the receiver's receives each land in a slot of its ring, and a receive is reposted only
//! after its message was copied in. One direction at a time. Its `--validate` checks each
//! message, stamped with its index, as it is copied in, instead of a host ring.
//!
//! Every sender holds a credit per receive posted (`engines::credits`): the receiver grants its
//! whole depth at the start of the connection and returns credits in batches as it reposts, with
//! zero-byte SENDs the sender keeps receives for. One way, those are receives of their own
//! (`post_credit_receives`). With `-b` both directions share one receive queue per QP, where a
//! credit lands in whatever receive is next: each side then posts [`CREDIT_RECEIVES`] receives
//! beyond the `-r` it grants (and its send queue has as many entries beyond `-t` for its own
//! credits), so that neither data nor credits ever find the queue empty. A credit is told from
//! data by its immediate value (data carries none, or `PHASE_END`).
//!
//! Ctrl-C stops posting; what is in flight completes, and the size ends with the interruption.
//! A peer that dies or gives up is noticed through the control channel (`check_peer`).

mod plan;
mod receiver;
mod side;

use std::time::{Duration, Instant};

use gdrperf_stats::{BandwidthMeter, BandwidthReport, RunClock};

use crate::engines::bandwidth::duration_window;
use crate::engines::credits::{SenderCredits, CREDIT_RECEIVES};
use crate::engines::stream_book::{events_to_store, signal_interval};
use crate::error::{Error, Result};
use crate::exchange::ExchangeError;
use crate::harness::session::{Session, SessionParts};
use crate::memory::buffers::pattern_seed;
use crate::memory::queue_memory::{signal_every, Direct, QueueMemory, Ring, Staged, Stamps};
use crate::options::config::StopRule;
use crate::verbs::completion::opcode;
use crate::verbs::{CompletionQueue, Inline, Operation, RcQueuePair, SendRequest, WorkCompletion};

pub use plan::SendPlan;
use plan::{split_id, unexpected, work_request_id, CREDIT_FLAG, PHASE_END, RECEIVE_FLAG};
pub use receiver::ReceiveQueues;
use receiver::Receiver;
pub use side::SendStream;

/// What this side measured: its sending, its receiving, or both.
#[derive(Debug, Clone)]
pub struct SendReports {
    pub sent: Option<BandwidthReport>,
    /// `None` also when too few messages came to time (a single one has no duration).
    pub received: Option<BandwidthReport>,
}

/// Posts the receives a one-way sender keeps for the receiver's credits (once per connection).
pub(crate) fn post_credit_receives(queue_pairs: &mut [RcQueuePair]) -> Result<SenderCredits> {
    for (index, queue_pair) in queue_pairs.iter_mut().enumerate() {
        for _ in 0..CREDIT_RECEIVES.min(queue_pair.sizes().recv_depth) {
            queue_pair.post_receive(credit_receive_id(index), crate::verbs::LocalSlice::empty())?;
        }
    }
    Ok(SenderCredits::new(queue_pairs.len()))
}

fn credit_receive_id(index: usize) -> u64 {
    work_request_id(true, index, 0) | CREDIT_FLAG
}

/// What the SEND stream keeps for one connection across sizes (in the session's
/// [`Connection`](crate::harness::session::Connection)): receives cannot be taken back once
/// posted.
#[derive(Default)]
pub(crate) struct SendConnection {
    /// The receives, with their `--validate` ring or staged slots.
    pub(crate) receive_queues: Option<ReceiveQueues>,
    /// A one-way SEND stream's credits, its receives for them posted.
    pub(crate) send_credits: Option<SenderCredits>,
}

/// Streams one size on this side: sends, receives, or both at once, until both are done.
///
/// Generic over the memory ([`QueueMemory`]), chosen here once per size: [`Direct`] for host
/// and GPU memory, [`Staged`] (with its ring) for staged memory.
pub fn stream_send(session: &mut Session, plan: &SendPlan) -> Result<SendReports> {
    let SessionParts { queue_pairs, completion_queue, buffers, control, connection } = session.parts();
    let SendConnection { receive_queues, send_credits } = connection.state::<SendConnection>();
    let receives = receive_queues.as_mut();
    let credits = send_credits.as_mut();
    let link = Link { queue_pairs, completion_queue, control, credits };
    if !buffers.first().is_some_and(|buffer| buffer.is_staged()) {
        let mut memories: Vec<Direct> = buffers.iter().map(|buffer| Direct::new(buffer, plan.size)).collect();
        return stream_with(link, plan, receives, &mut memories);
    }
    // Staged: one direction at a time, so the ring is either the sender's or the receives'.
    let mut memories = Vec::with_capacity(buffers.len());
    for (index, buffer) in buffers.iter_mut().enumerate() {
        let ring = match (plan.sends, receives.as_deref()) {
            (false, Some(queues)) => queues.staged_ring().unwrap_or(Ring { slots: 1, stride: plan.size }),
            _ => Ring::new(buffer.region().len(), plan.tx_depth, plan.size),
        };
        let stamps =
            plan.validate.then(|| Stamps { seed: pattern_seed(plan.size, index), stamped: plan.peer_staged });
        memories.push(
            Staged::new(buffer, ring, plan.size, stamps)
                .ok_or_else(|| Error::Internal(crate::error::InternalError::MixedMemory))?,
        );
    }
    stream_with(link, plan, receives, &mut memories)
}

/// The parts of a session the stream drives.
struct Link<'a> {
    queue_pairs: &'a mut [RcQueuePair],
    completion_queue: &'a mut CompletionQueue,
    control: &'a mut crate::exchange::Control,
    credits: Option<&'a mut SenderCredits>,
}

fn stream_with<M: QueueMemory>(
    link: Link,
    plan: &SendPlan,
    receives: Option<&mut ReceiveQueues>,
    memories: &mut [M],
) -> Result<SendReports> {
    // A staged ring's slots are freed by completions: signal at least once per half ring.
    let plan = &SendPlan { cq_mod: signal_every(plan.cq_mod, memories) as u32, ..*plan };
    let queue_count = link.queue_pairs.len();
    let Link { queue_pairs, completion_queue, control, credits } = link;
    if plan.sends && credits.is_none() {
        return Err(Error::Internal(crate::error::InternalError::SenderWithoutCredits));
    }
    let mut sender = if plan.sends { Some(Sender::new(plan, queue_count, credits)?) } else { None };
    let mut receiver = match (plan.receives, receives) {
        (false, _) => None,
        (true, Some(queues)) => Some(Receiver::new(plan, queue_count, queues)?),
        (true, None) => return Err(Error::Internal(crate::error::InternalError::ReceivesNotPosted)),
    };
    let mut last_progress = Instant::now();
    let mut stopped_by = None;
    loop {
        // Ctrl-C: post nothing more and let what is in flight complete; the receiving half
        // cannot finish (the peer's phase ends will not come), so it is abandoned.
        if stopped_by.is_none() {
            stopped_by = control.stop_requested();
        }
        control.check_peer()?;
        if let Some(sender) = sender.as_mut() {
            if stopped_by.is_none() {
                sender.post(queue_pairs, memories)?;
            }
        }
        let found = completion_queue.poll(|completion| {
            if completion.wr_id & CREDIT_FLAG != 0 {
                return match (completion.wr_id & RECEIVE_FLAG != 0, sender.as_mut(), receiver.as_mut()) {
                    (true, Some(sender), _) => sender.take_credit(&completion, queue_pairs),
                    (false, _, Some(receiver)) => receiver.credit_sent(&completion),
                    _ => Err(unexpected(&completion, "a credit on a side that neither sends nor receives")),
                };
            }
            if completion.wr_id & RECEIVE_FLAG != 0 && is_shared_credit(&completion) {
                // -b: the peer's credit landed in a data receive (see the module docs).
                return match (receiver.as_mut(), sender.as_mut()) {
                    (Some(receiver), Some(sender)) => {
                        let index = receiver.repost_reserved(&completion, queue_pairs)?;
                        sender.grant(&completion, index)
                    }
                    _ => {
                        Err(unexpected(&completion, "a credit only where both directions share the receives"))
                    }
                };
            }
            if completion.wr_id & RECEIVE_FLAG != 0 {
                match receiver.as_mut() {
                    Some(receiver) => receiver.complete(&completion, queue_pairs, memories),
                    None => Err(unexpected(&completion, "no receive on a sending-only side")),
                }
            } else {
                match sender.as_mut() {
                    Some(sender) => sender.complete(&completion),
                    None => Err(unexpected(&completion, "no send on a receiving-only side")),
                }
            }
        })?;
        if let Some(sender) = sender.as_mut() {
            sender.after_poll();
        }
        if let Some(receiver) = receiver.as_mut() {
            receiver.after_poll();
            receiver.send_credits(queue_pairs)?;
        }
        if found > 0 {
            last_progress = Instant::now();
        } else if last_progress.elapsed() > plan.stall_timeout {
            return Err(Error::Stalled {
                seconds: plan.stall_timeout.as_secs(),
                during: format!("streaming SEND/RECV of {} bytes", plan.size),
            });
        }
        if let Some(signal) = stopped_by {
            if sender.as_ref().is_none_or(Sender::drained) {
                return Err(ExchangeError::Interrupted(signal).into());
            }
            continue;
        }
        let sending_done = sender.as_ref().is_none_or(Sender::done);
        let receiving_done = receiver.as_ref().is_none_or(Receiver::done);
        if sending_done && receiving_done {
            break;
        }
    }
    // A timed run can end with copies out started that were never posted.
    let posted = sender.as_ref().map(Sender::messages);
    for (index, memory) in memories.iter_mut().enumerate() {
        memory.finish(posted.as_ref().map_or(0, |posted| posted[index]))?;
    }
    let sent = sender.map(Sender::report).transpose()?;
    let received = receiver.and_then(Receiver::report);
    Ok(SendReports { sent, received })
}

/// A credit on a receive shared with data (`-b`): a successful zero-byte message whose
/// immediate is a count, where data carries no immediate or [`PHASE_END`].
fn is_shared_credit(completion: &WorkCompletion) -> bool {
    completion.is_success()
        && completion.opcode == opcode::RECV
        && completion.byte_len == 0
        && completion.immediate.is_some_and(|immediate| immediate != PHASE_END)
}

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

struct Sender<'c> {
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
    fn new(
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
        let signal_every = signal_interval(plan.cq_mod, plan.size);
        let expected_events = events_to_store(plan.stop, signal_every, queue_count as u64);
        let expected_posts = events_to_store(plan.stop, 1, queue_count as u64);
        let mut meter =
            BandwidthMeter::with_capacities(plan.size as u64, expected_events, expected_posts).map_err(
                |source| Error::Figure { what: format!("bandwidth meter for {} bytes", plan.size), source },
            )?;
        if let StopRule::Duration(duration) = plan.stop {
            let (start, end) = duration_window(duration, plan.margin_seconds);
            meter.set_window(start, end);
        }
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
    fn messages(&self) -> Vec<u64> {
        self.queues.iter().map(|state| state.base + state.posted).collect()
    }

    fn done(&self) -> bool {
        self.limit.is_none()
    }

    /// Every request posted so far is complete.
    fn drained(&self) -> bool {
        self.queues.iter().all(|state| state.completed == state.posted)
    }

    /// Fills every QP's send queue as far as the phase allows.
    fn post<M: QueueMemory>(&mut self, queue_pairs: &mut [RcQueuePair], memories: &mut [M]) -> Result<()> {
        let Some(limit) = self.limit else { return Ok(()) };
        let (tx_depth, mut cq_mod) =
            (u64::from(self.plan.tx_depth), signal_interval(self.plan.cq_mod, self.plan.size));
        if let Some(credits) = self.credits.as_deref() {
            // Nothing to post before the receiver's first grant; then a timed run's whole groups
            // must fit in the credits that come back.
            let Some(largest) = credits.largest_group() else { return Ok(()) };
            cq_mod = cq_mod.min(largest.max(1));
        }
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
            if state.ended || room == 0 {
                continue;
            }
            // The last message of the phase is the one numbered `last`.
            let (count, last) = match limit {
                Limit::Messages(target) => (room.min(target - state.posted), target),
                Limit::Time(_) if out_of_time => (1, state.posted + 1),
                // Whole moderation groups only, so the last one posted is always signaled.
                Limit::Time(_) => (room - room % cq_mod, u64::MAX),
            };
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
                if last == u64::MAX {
                    usable - usable % cq_mod
                } else {
                    usable
                }
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
            queue_pair.post_send((1..=count).map(|offset| {
                let sequence = first + offset;
                SendRequest {
                    wr_id: work_request_id(false, index, sequence),
                    signaled: sequence.is_multiple_of(cq_mod) || sequence == last,
                    local: memory.local(base + sequence - 1),
                    operation: if sequence == last {
                        Operation::SendWithImmediate { immediate: PHASE_END }
                    } else {
                        Operation::Send
                    },
                    inline,
                }
            }))?;
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
    fn take_credit(&mut self, completion: &WorkCompletion, queue_pairs: &mut [RcQueuePair]) -> Result<()> {
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
    fn grant(&mut self, completion: &WorkCompletion, index: usize) -> Result<()> {
        let granted = match (self.credits.as_deref_mut(), completion.immediate) {
            (Some(credits), Some(count)) => credits.grant(index, u64::from(count)),
            _ => None,
        };
        granted.ok_or_else(|| unexpected(completion, "a credit from the receiver"))
    }

    fn complete(&mut self, completion: &WorkCompletion) -> Result<()> {
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
    fn after_poll(&mut self) {
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

    fn report(self) -> Result<BandwidthReport> {
        let size = self.plan.size;
        self.meter
            .report()
            .map_err(|source| Error::Figure {
                what: format!("no send bandwidth measured at {size} bytes"),
                source,
            })
            .inspect(crate::engines::bandwidth::warn_if_not_stored)
    }
}

#[cfg(test)]
mod tests {
    use super::plan::LOW_MASK;
    use super::*;

    #[test]
    fn work_request_ids_round_trip() {
        for (receive, queue_pair, low) in [(true, 0, 0), (false, 3, 12345), (true, 1023, LOW_MASK)] {
            let id = work_request_id(receive, queue_pair, low);
            assert_eq!(id & RECEIVE_FLAG != 0, receive);
            assert_eq!(split_id(id), (queue_pair, low));
        }
    }

    fn receive(byte_len: u32, immediate: Option<u32>) -> WorkCompletion {
        WorkCompletion {
            wr_id: work_request_id(true, 2, 7),
            status: 0,
            opcode: opcode::RECV,
            byte_len,
            immediate,
            vendor_err: 0,
        }
    }

    /// With -b a credit shares the data receives: only a zero-byte message with a count is one.
    #[test]
    fn a_credit_is_told_from_data_on_a_shared_receive() {
        assert!(is_shared_credit(&receive(0, Some(12))));
        assert!(!is_shared_credit(&receive(0, Some(PHASE_END))), "a phase end is data");
        assert!(!is_shared_credit(&receive(4096, None)));
        assert!(!is_shared_credit(&receive(4096, Some(PHASE_END))));
        assert!(!is_shared_credit(&receive(4096, Some(12))), "a credit carries no bytes");
        assert!(
            !is_shared_credit(&WorkCompletion { status: 5, ..receive(0, Some(12)) }),
            "a flushed receive"
        );
    }
}
