//! The streaming engine of the bandwidth tests: keep every QP's send queue full, retire
//! completions, time it.
//!
//! perftest's method: up to `tx_depth` work requests outstanding per QP, only one in `cq_mod`
//! signaled (fewer completions to poll at high message rates), the clock started at the first
//! post and stopped at the last completion. Each completion tells how far its QP has come, since a
//! signaled completion implies that every earlier request of that QP is done too.

use std::time::{Duration, Instant};

use gdrperf_stats::{BandwidthMeter, BandwidthReport, RunClock};

use crate::error::{Error, Result};
use crate::exchange::{Control, ExchangeError};
use crate::harness::buffers::pattern_seed;
use crate::harness::config::StopRule;
use crate::harness::memory::{
    shared_bounce_for_tests, signal_every, Direct, QueueMemory, Ring, Staged, Stamps,
};
use crate::harness::session::{Session, SessionParts};
use crate::verbs::completion::opcode;
use crate::verbs::{CompletionQueue, Inline, Operation, RcQueuePair, RemoteBuffer, SendRequest};

/// The one-sided operations a stream can consist of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamOperation {
    Write,
    Read,
}

impl StreamOperation {
    fn expected_opcode(self) -> u32 {
        match self {
            StreamOperation::Write => opcode::RDMA_WRITE,
            StreamOperation::Read => opcode::RDMA_READ,
        }
    }

    fn name(self) -> &'static str {
        match self {
            StreamOperation::Write => "RDMA WRITE",
            StreamOperation::Read => "RDMA READ",
        }
    }
}

/// How one size is streamed.
#[derive(Debug, Clone, Copy)]
pub struct StreamPlan {
    pub size: usize,
    pub operation: StreamOperation,
    pub stop: StopRule,
    pub warmup: u64,
    pub tx_depth: u32,
    pub cq_mod: u32,
    /// How long without any completion before we call the peer gone.
    pub stall_timeout: Duration,
    /// The receiver is staged: write each message into its own slot of the peer's bounce ring
    /// with immediate data (so the receiver learns of every arrival to copy it onward), and post
    /// no message into a slot before the receiver's credit says it copied the last one out of it.
    pub notify_receiver: bool,
    /// `--validate`: a staged sender stamps each message with its index.
    pub validate: bool,
}

/// Receives a sender keeps posted for a staged receiver's credits (once per connection; each
/// is reposted as it is consumed).
pub const CREDIT_RECEIVES: u32 = 16;
/// Work-request id bit of a credit receive (sender) or a credit send (receiver).
pub(crate) const CREDIT_FLAG: u64 = 1 << 63;

/// Bits of the work-request id that hold the message's sequence number; the QP index sits above.
const SEQUENCE_BITS: u32 = 40;

/// Streams `plan.size`-byte messages over every QP of `session` and returns the measurement.
///
/// The engine is generic over the memory ([`QueueMemory`]): host and GPU memory run it with
/// [`Direct`] (no hooks left after inlining), staged memory with [`Staged`] (its ring and
/// copy-ahead window). The choice is made here, once per size.
pub fn stream(session: &mut Session, plan: &StreamPlan) -> Result<BandwidthReport> {
    let remotes: Vec<RemoteBuffer> =
        (0..session.local.queue_pairs.len()).map(|index| session.remote_buffer(index)).collect();
    let SessionParts { queue_pairs, completion_queue, buffers, control, .. } = session.parts();
    let link = Link { queue_pairs, completion_queue, control, remotes };
    if !buffers.first().is_some_and(|buffer| buffer.is_staged()) {
        let mut memories: Vec<Direct> = buffers.iter().map(|buffer| Direct::new(buffer, plan.size)).collect();
        return stream_with(link, plan, &mut memories);
    }
    let mut memories = Vec::with_capacity(buffers.len());
    for (index, buffer) in buffers.iter_mut().enumerate() {
        let ring = Ring::new(buffer.region().len(), plan.tx_depth, plan.size);
        let stamped = plan.notify_receiver;
        let stamps = plan.validate.then(|| Stamps { seed: pattern_seed(plan.size, index), stamped });
        memories.push(
            Staged::new(buffer, ring, plan.size, stamps)
                .ok_or_else(|| Error::Internal("every QP of a side has the same memory".into()))?,
        );
    }
    stream_with(link, plan, &mut memories)
}

/// The parts of a session the stream drives.
struct Link<'a> {
    queue_pairs: &'a mut [RcQueuePair],
    completion_queue: &'a mut CompletionQueue,
    control: &'a mut Control,
    remotes: Vec<RemoteBuffer>,
}

fn stream_with<M: QueueMemory>(
    mut link: Link,
    plan: &StreamPlan,
    memories: &mut [M],
) -> Result<BandwidthReport> {
    let mut progress = vec![Progress::default(); memories.len()];
    if plan.warmup > 0 {
        run(&mut link, plan, memories, &mut progress, Limit::Messages(plan.warmup), None)?;
    }
    let expected_events = match plan.stop {
        StopRule::Iterations(iterations) => {
            (iterations / signal_every(plan.cq_mod, memories) + 2) as usize * link.queue_pairs.len()
        }
        StopRule::Duration(_) => 1 << 16,
    };
    let mut meter =
        BandwidthMeter::new(plan.size as u64, expected_events.min(1 << 22)).map_err(|source| {
            Error::Figure { what: format!("bandwidth meter for {} bytes", plan.size), source }
        })?;
    let limit = match plan.stop {
        StopRule::Iterations(iterations) => Limit::Messages(iterations),
        StopRule::Duration(duration) => Limit::Time(duration),
    };
    run(&mut link, plan, memories, &mut progress, limit, Some(&mut meter))?;
    meter.report().map_err(|source| Error::Figure {
        what: format!("no bandwidth measured at {} bytes", plan.size),
        source,
    })
}

#[derive(Debug, Clone, Copy)]
enum Limit {
    Messages(u64),
    Time(Duration),
}

/// One QP's messages in a size, numbered across the warm-up and measured phases (the slots
/// and stamps of a staged ring follow these numbers on both sides).
#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    posted: u64,
    completed: u64,
    /// Messages the staged receiver has copied in and credited.
    credited: u64,
    /// Where the current phase started.
    phase_start: u64,
}

fn run<M: QueueMemory>(
    link: &mut Link,
    plan: &StreamPlan,
    memories: &mut [M],
    progress: &mut [Progress],
    limit: Limit,
    mut meter: Option<&mut BandwidthMeter>,
) -> Result<()> {
    for state in progress.iter_mut() {
        state.phase_start = state.posted;
    }
    let shared_bounce = shared_bounce_for_tests();
    let remote_rings: Vec<Option<Ring>> = link
        .remotes
        .iter()
        .map(|remote| match shared_bounce {
            true => Some(Ring { slots: 1, stride: plan.size }),
            false => plan.notify_receiver.then(|| Ring::new(remote.len as usize, plan.tx_depth, plan.size)),
        })
        .collect();
    let cq_mod = signal_every(plan.cq_mod, memories);
    let tx_depth = u64::from(plan.tx_depth);
    let target = match limit {
        Limit::Messages(messages) => Some(messages),
        Limit::Time(_) => None,
    };
    let clock = RunClock::start();
    let mut posting = true;
    let mut last_progress = Instant::now();
    let mut stopped_by = None;
    loop {
        if let Limit::Time(duration) = limit {
            if posting && clock.origin().elapsed() >= duration {
                posting = false;
            }
        }
        // Ctrl-C: post nothing more and let what is in flight complete; a dead peer never
        // completes it, so that ends the loop at once.
        if posting && stopped_by.is_none() {
            stopped_by = link.control.stop_requested();
            posting = stopped_by.is_none();
        }
        link.control.check_peer()?;
        if posting {
            for (index, queue_pair) in link.queue_pairs.iter_mut().enumerate() {
                let state = &mut progress[index];
                let sent = state.posted - state.phase_start;
                let room = tx_depth - (state.posted - state.completed);
                let count = match target {
                    Some(target) => room.min(target - sent),
                    // Timed runs post whole moderation groups only, so that whatever was posted
                    // last is signaled and every request is accounted for at the end.
                    None => room - room % cq_mod,
                };
                let mut count = count;
                if M::COPIES {
                    let end = target.map_or(u64::MAX, |target| state.phase_start + target);
                    let ready = memories[index].ready_to_post(state.posted, state.completed, end)?;
                    count = count.min(ready);
                }
                let remote = link.remotes[index];
                let remote_ring = remote_rings[index];
                if let Some(ring) = remote_ring.filter(|_| !shared_bounce) {
                    // A slot of the receiver's ring is free once its last message was credited.
                    count = count.min(state.credited + ring.slots - state.posted);
                }
                if (M::COPIES || remote_ring.is_some()) && target.is_none() {
                    count -= count % cq_mod;
                }
                if count == 0 {
                    continue;
                }
                let first = state.posted;
                let phase_start = state.phase_start;
                let memory = &memories[index];
                queue_pair.post_send((0..count).map(|offset| {
                    let message = first + offset;
                    let sequence = message - phase_start + 1;
                    let remote_address = match remote_ring {
                        Some(ring) => remote.address + ring.range(message, plan.size).start as u64,
                        None => remote.address,
                    };
                    let operation = match plan.operation {
                        StreamOperation::Write if plan.notify_receiver => Operation::WriteWithImmediate {
                            remote_address,
                            rkey: remote.rkey,
                            immediate: index as u32,
                        },
                        StreamOperation::Write => Operation::Write { remote_address, rkey: remote.rkey },
                        StreamOperation::Read => Operation::Read { remote_address, rkey: remote.rkey },
                    };
                    SendRequest {
                        wr_id: ((index as u64) << SEQUENCE_BITS) | message,
                        signaled: sequence.is_multiple_of(cq_mod) || Some(sequence) == target,
                        local: memory.local(message),
                        operation,
                        inline: Inline::NO,
                    }
                }))?;
                state.posted += count;
            }
            if let Some(target) = target {
                posting = progress.iter().any(|state| state.posted - state.phase_start < target);
            }
        }
        let mut retired_now = 0u64;
        let mut now_nanos = None;
        let size = plan.size;
        let mut credits_now = 0u64;
        let queue_pairs = &mut *link.queue_pairs;
        link.completion_queue.poll(|completion| {
            if completion.wr_id & CREDIT_FLAG != 0 {
                return take_credit(&completion, queue_pairs, progress, &mut credits_now);
            }
            if !completion.is_success() {
                return Err(completion.error(plan.operation.name(), size));
            }
            let index = (completion.wr_id >> SEQUENCE_BITS) as usize;
            let message = completion.wr_id & ((1 << SEQUENCE_BITS) - 1);
            let state =
                progress.get_mut(index).filter(|state| message >= state.completed && message < state.posted);
            let (Some(state), true) = (state, completion.opcode == plan.operation.expected_opcode()) else {
                return Err(Error::UnexpectedCompletion {
                    wr_id: completion.wr_id,
                    opcode: completion.opcode,
                    expected: plan.operation.name(),
                });
            };
            let retired = message + 1 - state.completed;
            state.completed = message + 1;
            retired_now += retired;
            if let Some(meter) = meter.as_deref_mut() {
                let nanos = *now_nanos.get_or_insert_with(|| clock.now_nanos());
                meter.record_completion(nanos, retired as u32);
            }
            Ok(())
        })?;
        if retired_now > 0 || credits_now > 0 {
            last_progress = Instant::now();
        } else if last_progress.elapsed() > plan.stall_timeout {
            return Err(Error::Stalled {
                seconds: plan.stall_timeout.as_secs(),
                during: format!("streaming {} of {} bytes", plan.operation.name(), plan.size),
            });
        }
        // A staged receiver's phase ends when it has copied in (and credited) every message.
        let drained = progress.iter().all(|state| {
            state.completed == state.posted && (!plan.notify_receiver || state.credited == state.posted)
        });
        if !posting && drained {
            // A timed run can stop with copies started that will never be posted.
            for (memory, state) in memories.iter_mut().zip(progress.iter()) {
                memory.finish(state.posted)?;
            }
            return stopped_by.map_or(Ok(()), |signal| Err(ExchangeError::Interrupted(signal).into()));
        }
    }
}

/// A staged receiver's credit: its immediate says how many more messages it copied in; the
/// receive is reposted at once.
fn take_credit(
    completion: &crate::verbs::WorkCompletion,
    queue_pairs: &mut [RcQueuePair],
    progress: &mut [Progress],
    credits_now: &mut u64,
) -> Result<()> {
    if !completion.is_success() {
        return Err(completion.error("receive of a credit", 0));
    }
    let index = (completion.wr_id & !CREDIT_FLAG) as usize;
    let (Some(state), Some(queue_pair), Some(credit)) =
        (progress.get_mut(index), queue_pairs.get_mut(index), completion.immediate)
    else {
        return Err(Error::UnexpectedCompletion {
            wr_id: completion.wr_id,
            opcode: completion.opcode,
            expected: "a credit from the staged receiver",
        });
    };
    let credit = u64::from(credit);
    if state.credited + credit > state.posted {
        return Err(Error::Protocol(format!(
            "QP {index}: the staged receiver credited {} messages, {} were sent",
            state.credited + credit,
            state.posted
        )));
    }
    state.credited += credit;
    *credits_now += credit;
    queue_pair.post_receive(completion.wr_id, crate::verbs::LocalSlice::empty())
}

/// Posts the receives a sender keeps for a staged receiver's credits (once per connection).
pub fn post_credit_receives(queue_pairs: &mut [RcQueuePair]) -> Result<()> {
    for (index, queue_pair) in queue_pairs.iter_mut().enumerate() {
        for _ in 0..CREDIT_RECEIVES.min(queue_pair.sizes().recv_depth) {
            queue_pair.post_receive(CREDIT_FLAG | index as u64, crate::verbs::LocalSlice::empty())?;
        }
    }
    Ok(())
}
