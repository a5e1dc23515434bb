//! The receiving half of gdr-send-bw: the receives kept posted across sizes ([`ReceiveQueues`],
//! with the `--validate` ring), and the receiver that counts, checks and reposts them during a
//! size ([`Receiver`]). A staged receiver's receives land in the slots of its bounce ring, and
//! each message is copied in (and, with `--validate`, checked) before its receive is reposted.

use gdrperf_stats::{BandwidthMeter, BandwidthReport, RunClock};

use crate::engines::credits::{ReceiverCredits, CREDIT_RECEIVES};
use crate::engines::meter::{phase_meter, warn_if_not_stored};
use crate::engines::stream_book::events_to_store;
use crate::error::{Error, Result};
use crate::harness::session::Session;
use crate::memory::buffers::{find_mismatch, pattern_seed};
use crate::memory::check_failure::CheckFailure;
use crate::memory::queue_memory::{QueueMemory, Ring};
use crate::options::config::StopRule;
use crate::verbs::completion::opcode;
use crate::verbs::{
    HostBuffer, Inline, LocalSlice, MemoryRegion, Operation, RcQueuePair, RelaxedOrdering, RemoteAccess,
    SendRequest, WorkCompletion,
};

use super::plan::{
    split_id, unexpected, work_request_id, SendPlan, CREDIT_FLAG, PHASE_END, VALIDATION_RING_BYTES,
};

/// One side's receives, posted once and kept posted for the whole run.
pub struct ReceiveQueues {
    queues: Vec<QueueReceives>,
    validate: bool,
    /// The first payload that failed its check in the current size.
    failure: Option<CheckFailure>,
    /// Staged memory: the receives' slots in the bounce ring (one per receive, each as long as
    /// the sweep's largest message).
    staged_ring: Option<Ring>,
    /// The credits owed to the sender as receives are reposted.
    credits: ReceiverCredits,
}

struct QueueReceives {
    /// Where non-validating receives land: the QP's whole benchmark buffer (staged: the ring).
    target: LocalSlice,
    ring: Option<ValidationRing>,
    /// Staged memory: receive `k` lands in slot `k` of this ring.
    staged: Option<Ring>,
    slots: u32,
    /// Receives posted beyond `slots` for the peer's credits (`-b`: see the module docs).
    reserved: u32,
}

/// Host memory with one slot per posted receive. The region is declared first so that it is
/// deregistered before the memory is freed.
struct ValidationRing {
    region: MemoryRegion,
    memory: HostBuffer,
    stride: usize,
}

impl ReceiveQueues {
    /// Posts `rx_depth` receives per QP (with `validate`, one per slot of a ring sized for
    /// `max_size`-byte messages), all of them owed to the sender as its first grant. With
    /// `shared` (`-b`: this side sends too, and the peer's credits land in these receives),
    /// [`CREDIT_RECEIVES`] more per QP, kept for those credits and never granted.
    pub fn post(
        session: &mut Session,
        rx_depth: u32,
        validate: bool,
        max_size: usize,
        shared: bool,
    ) -> Result<ReceiveQueues> {
        let local = &mut session.local;
        let queue_count = local.queue_pairs.len();
        let mut queues = Vec::with_capacity(queue_count);
        let mut staged_ring = None;
        for index in 0..queue_count {
            let buffer = &local.buffers[index];
            // A staged payload is checked message by message as it is copied in: its messages
            // must land in the bounce ring, to be copied in from there.
            let staged = buffer.is_staged().then(|| Ring::new(buffer.region().len(), rx_depth, max_size));
            staged_ring = staged_ring.or(staged);
            if shared && staged.is_some() {
                return Err(Error::Internal(crate::error::InternalError::StagedBothDirections));
            }
            let reserved = if shared { CREDIT_RECEIVES } else { 0 };
            let use_ring = validate && staged.is_none();
            if use_ring && buffer.host_bytes().is_none() {
                // `SendConfig::from_args` refuses --validate with cuda memory on a receiving side.
                return Err(Error::Internal(crate::error::InternalError::ValidateWithoutHostRing {
                    memory: buffer.kind(),
                }));
            }
            let target = buffer.slice(buffer.region().len());
            let (ring, slots) = if let Some(staged) = staged {
                (None, staged.slots as u32)
            } else if use_ring {
                let slots =
                    (VALIDATION_RING_BYTES / (max_size.max(1) * queue_count)).clamp(1, rx_depth as usize);
                let memory = HostBuffer::new((slots + reserved as usize) * max_size)?;
                // SAFETY: the memory is stored next to the region, which is dropped first.
                let region = unsafe {
                    MemoryRegion::register(
                        &local.protection_domain,
                        memory.address(),
                        memory.len(),
                        "receive validation ring",
                        // Never advertised: only our own receives land in it.
                        RemoteAccess::None,
                        // As the benchmark buffer asked (the ring is read after completions,
                        // whose visibility relaxed ordering does not change).
                        match buffer.region().relaxed_ordering() {
                            RelaxedOrdering::Off => RelaxedOrdering::Off,
                            RelaxedOrdering::Asked | RelaxedOrdering::Refused => RelaxedOrdering::Asked,
                        },
                    )?
                };
                (Some(ValidationRing { region, memory, stride: max_size }), slots as u32)
            } else {
                (None, rx_depth)
            };
            let queue = QueueReceives { target, ring, staged, slots, reserved };
            for slot in 0..queue.slots + queue.reserved {
                local.queue_pairs[index]
                    .post_receive(work_request_id(true, index, u64::from(slot)), queue.slot(slot))?;
            }
            queues.push(queue);
        }
        let depth = queues.first().map_or(0, |queue| u64::from(queue.slots));
        // One way the send queue carries credits only; with -b it has CREDIT_RECEIVES entries
        // for them beyond the data's -t (see gdr-send-bw's setup).
        let send_depth = match shared {
            true => CREDIT_RECEIVES,
            false => local.queue_pairs.first().map_or(1, |queue_pair| queue_pair.sizes().send_depth),
        };
        let credits = ReceiverCredits::new(queue_count, depth, send_depth);
        Ok(ReceiveQueues { queues, validate, failure: None, staged_ring, credits })
    }

    /// The slots staged receives land in (`None` unless the memory is staged).
    pub fn staged_ring(&self) -> Option<Ring> {
        self.staged_ring
    }

    /// Receives kept posted per QP (fewer than `-r` when a validation ring caps them).
    pub fn depth(&self) -> u32 {
        self.queues.first().map(|queue| queue.slots).unwrap_or(0)
    }

    /// The first failed payload check since the last call.
    pub fn take_failure(&mut self) -> Option<CheckFailure> {
        self.failure.take()
    }
}

impl QueueReceives {
    fn slot(&self, slot: u32) -> LocalSlice {
        match (&self.ring, self.staged) {
            (Some(ring), _) => ring.region.slice(slot as usize * ring.stride, ring.stride),
            (None, Some(staged)) => {
                let start = slot as usize * staged.stride;
                self.target.sub(start, staged.stride.min(self.target.len() as usize - start))
            }
            (None, None) => self.target,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReceivePhase {
    Warmup,
    Measured,
    Done,
}

#[derive(Debug, Clone, Copy)]
struct ReceiveQueue {
    phase: ReceivePhase,
    /// Messages received in the current phase.
    count: u64,
}

pub(super) struct Receiver<'q> {
    queues: &'q mut ReceiveQueues,
    states: Vec<ReceiveQueue>,
    plan: SendPlan,
    seeds: Vec<u64>,
    clock: Option<RunClock>,
    meter: BandwidthMeter,
    measured_now: u64,
    /// Messages received per QP in this size, all phases (a staged ring's stamps count these).
    landed: Vec<u64>,
}

impl<'q> Receiver<'q> {
    pub(super) fn new(
        plan: &SendPlan,
        queue_count: usize,
        queues: &'q mut ReceiveQueues,
    ) -> Result<Receiver<'q>> {
        if queues.queues.len() != queue_count {
            return Err(Error::Internal(crate::error::InternalError::ReceiveQueueCount));
        }
        // Every receive is an event of its own.
        let expected_events = events_to_store(plan.stop, 1, queue_count as u64);
        // perftest's receiver under -D (`set_on_first_rx_packet` in perftest_resources.c) starts
        // its margins at its first receive and counts only the middle window: so does ours, on
        // its own clock, which starts at its first measured message.
        let meter = phase_meter(plan.size, plan.stop, plan.margin_seconds, expected_events, expected_events)?;
        let phase = if plan.warmup > 0 { ReceivePhase::Warmup } else { ReceivePhase::Measured };
        queues.failure = None;
        Ok(Receiver {
            queues,
            states: vec![ReceiveQueue { phase, count: 0 }; queue_count],
            plan: *plan,
            seeds: (0..queue_count).map(|index| pattern_seed(plan.size, index)).collect(),
            clock: None,
            meter,
            measured_now: 0,
            landed: vec![0; queue_count],
        })
    }

    /// Every phase end came and no credit SEND is left to complete.
    pub(super) fn done(&self) -> bool {
        self.states.iter().all(|state| state.phase == ReceivePhase::Done) && self.queues.credits.settled()
    }

    /// Sends every QP's due credit (a batch of reposted receives), as the send queue has room.
    pub(super) fn send_credits(&mut self, queue_pairs: &mut [RcQueuePair]) -> Result<()> {
        let credits = &mut self.queues.credits;
        for (index, queue_pair) in queue_pairs.iter_mut().enumerate() {
            if let Some(credit) = credits.due(index) {
                queue_pair.post_send(std::iter::once(SendRequest {
                    wr_id: work_request_id(false, index, 0) | CREDIT_FLAG,
                    signaled: true,
                    local: LocalSlice::empty(),
                    operation: Operation::SendWithImmediate { immediate: credit },
                    inline: Inline::NO,
                }))?;
            }
        }
        Ok(())
    }

    /// A credit SEND completed.
    pub(super) fn credit_sent(&mut self, completion: &WorkCompletion) -> Result<()> {
        if !completion.is_success() {
            return Err(completion.error("SEND of a credit", 0).into());
        }
        match self.queues.credits.completed() {
            Some(()) => Ok(()),
            None => Err(unexpected(completion, "a credit SEND of this receiver")),
        }
    }

    /// `-b`: the peer's credit consumed one of our receives; it goes back at once, kept for
    /// credits (owed to nobody). Returns the QP's index.
    pub(super) fn repost_reserved(
        &mut self,
        completion: &WorkCompletion,
        queue_pairs: &mut [RcQueuePair],
    ) -> Result<usize> {
        let (index, slot) = split_id(completion.wr_id);
        let Some(queue) = self.queues.queues.get(index).filter(|queue| queue.reserved > 0) else {
            return Err(unexpected(completion, "a credit only where both directions share the receives"));
        };
        queue_pairs[index].post_receive(completion.wr_id, queue.slot(slot as u32))?;
        Ok(index)
    }

    /// One received message: check it, repost its receive, advance the phase at a phase end.
    pub(super) fn complete<M: QueueMemory>(
        &mut self,
        completion: &WorkCompletion,
        queue_pairs: &mut [RcQueuePair],
        memories: &mut [M],
    ) -> Result<()> {
        let size = self.plan.size;
        if !completion.is_success() {
            return Err(completion.error("receive", size).into());
        }
        let (index, slot) = split_id(completion.wr_id);
        if index >= self.states.len()
            || index >= self.queues.queues.len()
            || completion.opcode != opcode::RECV
        {
            return Err(unexpected(completion, "a receive completion"));
        }
        let state = &mut self.states[index];
        if completion.byte_len as usize != size {
            return Err(Error::Protocol(crate::error::ProtocolError::MessageSize {
                queue_pair: index,
                received: completion.byte_len,
                size,
            }));
        }
        if state.phase == ReceivePhase::Done {
            return Err(unexpected(completion, "nothing after the phase's last message"));
        }
        if self.queues.validate {
            check_slot(
                &mut self.queues.queues[index],
                &mut self.queues.failure,
                index,
                slot,
                size,
                self.seeds[index],
            );
        }
        if M::COPIES {
            // Copied in (and checked) before the receive goes back: the next message to land in
            // this slot cannot overwrite bytes still being read.
            let message = self.landed[index];
            memories[index].landed(message, slot)?;
            memories[index].wait_copied_in(message, self.plan.stall_timeout)?;
        }
        self.landed[index] += 1;
        let target = self.queues.queues[index].slot(slot as u32);
        queue_pairs[index].post_receive(completion.wr_id, target)?;
        self.queues.credits.reposted(index);
        state.count += 1;
        if state.phase == ReceivePhase::Measured {
            self.measured_now += 1;
        }
        match completion.immediate {
            None => Ok(()),
            Some(PHASE_END) => {
                let expected = match (state.phase, self.plan.stop) {
                    (ReceivePhase::Warmup, _) => Some(self.plan.warmup),
                    (_, StopRule::Iterations(iterations)) => Some(iterations),
                    (_, StopRule::Duration(_)) => None,
                };
                if let Some(expected) = expected.filter(|&expected| expected != state.count) {
                    return Err(Error::Protocol(crate::error::ProtocolError::PhaseCount {
                        queue_pair: index,
                        received: state.count,
                        expected,
                    }));
                }
                state.phase = if state.phase == ReceivePhase::Warmup {
                    ReceivePhase::Measured
                } else {
                    ReceivePhase::Done
                };
                state.count = 0;
                Ok(())
            }
            Some(other) => Err(Error::Protocol(crate::error::ProtocolError::UnknownImmediate {
                queue_pair: index,
                immediate: other,
            })),
        }
    }

    /// The receiver's clock starts at its first measured message (time 0), as perftest's does.
    pub(super) fn after_poll(&mut self) {
        if self.measured_now == 0 {
            return;
        }
        let nanos = match self.clock {
            Some(clock) => clock.now_nanos(),
            None => {
                self.clock = Some(RunClock::start());
                0
            }
        };
        self.meter.record_completion(nanos, self.measured_now as u32);
        self.measured_now = 0;
    }

    pub(super) fn report(self) -> Option<BandwidthReport> {
        self.meter.report().ok().inspect(warn_if_not_stored)
    }
}

/// Checks one received payload in its ring slot against the sender's pattern, then clears the
/// slot so that a later receive which delivered nothing cannot pass on stale bytes.
fn check_slot(
    queue: &mut QueueReceives,
    failure: &mut Option<CheckFailure>,
    index: usize,
    slot: u64,
    size: usize,
    seed: u64,
) {
    let Some(ring) = queue.ring.as_mut() else { return };
    let start = slot as usize * ring.stride;
    let bytes = &mut ring.memory.as_mut_slice()[start..start + size];
    if let Some(mismatch) = find_mismatch(bytes, seed) {
        failure.get_or_insert(CheckFailure::ReceivedPayload {
            queue_pair: index,
            offset: mismatch.offset,
            found: mismatch.found,
            expected: mismatch.expected,
        });
    }
    bytes.fill(0);
}
