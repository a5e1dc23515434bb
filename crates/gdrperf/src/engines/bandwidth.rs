//! The streaming engine of the bandwidth tests: keep every QP's send queue full, retire
//! completions, time it.
//!
//! perftest's method: up to `tx_depth` work requests outstanding per QP, only one in `cq_mod`
//! signaled (fewer completions to poll at high message rates), the clock started at the first
//! post and stopped at the last completion. Each completion tells how far its QP has come, since a
//! signaled completion implies that every earlier request of that QP is done too.
//!
//! The same loop streams WRITEs, READs and 8-byte atomics. A reader whose memory is staged lands
//! each READ (each atomic's fetched value) in its own slot of the bounce ring and copies it in
//! once its completion is seen; a slot is read into again only after that copy finished
//! ([`QueueMemory::ready_to_land`]).

use std::time::Duration;

use gdrperf_stats::{BandwidthMeter, BandwidthReport};

use crate::engines::atomic::{atomic_operation, LastFetch};
use crate::engines::meter::{phase_meter, warn_if_not_stored};
use crate::engines::stream_book::{
    events_to_store, list_signal_interval, post_list_length, signal_interval, whole_lists, StreamBook,
};
use crate::error::{Error, Result};
use crate::exchange::{Control, ExchangeError};
use crate::harness::session::{Session, SessionParts};
use crate::memory::buffers::pattern_seed;
use crate::memory::queue_memory::{signal_every, Direct, QueueMemory, Ring, Staged, Stamps};
use crate::options::config::StopRule;
use crate::options::latency::AtomicOperation;
use crate::verbs::completion::opcode;
use crate::verbs::{CompletionQueue, Inline, Operation, RcQueuePair, RemoteBuffer, SendRequest};

/// The one-sided operations a stream can consist of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamOperation {
    Write,
    Read,
    /// 8-byte atomics on one counter per QP at [`ATOMIC_COUNTER_OFFSET`] of the peer's buffer,
    /// each advancing it by 1; the fetched values land where a READ would.
    Atomic(AtomicOperation),
}

/// Where a stream's atomics find their counter in the peer's buffer: past the 8 bytes where its
/// own fetched values land, so that with `-b` neither direction overwrites the other's counter.
pub const ATOMIC_COUNTER_OFFSET: u64 = 64;

impl StreamOperation {
    fn expected_opcode(self) -> u32 {
        match self {
            StreamOperation::Write => opcode::RDMA_WRITE,
            StreamOperation::Read => opcode::RDMA_READ,
            StreamOperation::Atomic(AtomicOperation::FetchAndAdd) => opcode::FETCH_AND_ADD,
            StreamOperation::Atomic(AtomicOperation::CompareAndSwap) => opcode::COMPARE_AND_SWAP,
        }
    }

    fn name(self) -> &'static str {
        match self {
            StreamOperation::Write => "RDMA WRITE",
            StreamOperation::Read => "RDMA READ",
            StreamOperation::Atomic(AtomicOperation::FetchAndAdd) => "atomic FETCH_AND_ADD",
            StreamOperation::Atomic(AtomicOperation::CompareAndSwap) => "atomic CMP_AND_SWAP",
        }
    }

    /// Whether what the peer sends back lands in this side's buffer (a READ's data, an atomic's
    /// fetched value), rather than this side's data going out.
    pub fn fetches(self) -> bool {
        !matches!(self, StreamOperation::Write)
    }

    /// The `message`-th request of a size on a QP (from 0, warm-up included) to the peer's
    /// buffer at `remote_address`.
    #[inline]
    fn request(self, message: u64, remote_address: u64, rkey: u32) -> Operation {
        match self {
            StreamOperation::Write => Operation::Write { remote_address, rkey },
            StreamOperation::Read => Operation::Read { remote_address, rkey },
            StreamOperation::Atomic(atomic) => {
                atomic_operation(atomic, remote_address + ATOMIC_COUNTER_OFFSET, rkey, message)
            }
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
    /// `-D`: whole seconds left out of the measurement at each end (`-f`).
    pub margin_seconds: u64,
    /// How long without any completion before we call the peer gone.
    pub stall_timeout: Duration,
    /// The receiver is staged: write each message into its own slot of the peer's bounce ring
    /// with immediate data (so the receiver learns of every arrival to copy it onward), and post
    /// no message into a slot before the receiver's credit says it copied the last one out of it.
    pub notify_receiver: bool,
    /// `-I`: post every request inline (the CPU copies the payload into the work request). Set
    /// only for WRITEs from host memory, whose bytes the CPU can read.
    pub inline: bool,
    /// `--validate`: a staged sender stamps each message with its index.
    pub validate: bool,
    /// `-l/--post_list`: requests per post call, chained (perftest's post list); 1 posts all the
    /// room the queue has in one call. Never above 1 with staged memory (refused before).
    pub post_list: u32,
    /// `--write-with-imm` (gdr-write-bw): each WRITE carries immediate data, which consumes one of
    /// the receiver's receives (it counts them, `engines::immediate_receive`).
    pub with_immediate: bool,
    /// The test hook of [`BenchConfig::shared_bounce_for_tests`](crate::options::config::BenchConfig).
    pub shared_bounce_for_tests: bool,
}

pub use crate::engines::credits::CREDIT_RECEIVES;
/// Work-request id bit of a credit receive (sender) or a credit send (receiver).
pub(crate) const CREDIT_FLAG: u64 = 1 << 63;

/// What a stream did in one size: the measurement and, for the atomics' data check, each QP's
/// requests (warm-up included) and where its last one's answer landed.
pub struct Streamed {
    pub report: BandwidthReport,
    pub last: Vec<LastFetch>,
}

/// Streams `plan.size`-byte messages over every QP of `session` and returns the measurement.
///
/// The engine is generic over the memory ([`QueueMemory`]): host and GPU memory run it with
/// [`Direct`] (no hooks left after inlining), staged memory with [`Staged`] (its ring and
/// copy-ahead window). The choice is made here, once per size.
pub fn stream(session: &mut Session, plan: &StreamPlan) -> Result<Streamed> {
    let remotes: Vec<RemoteBuffer> =
        (0..session.local.queue_pairs.len()).map(|index| session.remote_buffer(index)).collect();
    let SessionParts { queue_pairs, completion_queue, buffers, control, .. } = session.parts();
    let link = Link { queue_pairs, completion_queue, control, remotes };
    if !buffers.first().is_some_and(|buffer| buffer.is_staged()) {
        let mut memories: Vec<Direct> = buffers.iter().map(|buffer| Direct::new(buffer, plan.size)).collect();
        // Every message uses the same bytes: the start of the buffer.
        return stream_with(link, plan, &mut memories, |_, _| 0);
    }
    let mut memories = Vec::with_capacity(buffers.len());
    let mut rings = Vec::with_capacity(buffers.len());
    for (index, buffer) in buffers.iter_mut().enumerate() {
        let ring = Ring::new(buffer.region().len(), plan.tx_depth, plan.size);
        rings.push(ring);
        let stamped = plan.notify_receiver;
        // An atomic's fetched value is no pattern: its check is the counter's (engines::one_sided).
        let checks_pattern = plan.validate && !matches!(plan.operation, StreamOperation::Atomic(_));
        let stamps = checks_pattern.then(|| Stamps { seed: pattern_seed(plan.size, index), stamped });
        memories.push(
            Staged::new(buffer, ring, plan.size, stamps)
                .ok_or_else(|| Error::Internal(crate::error::InternalError::MixedMemory))?,
        );
    }
    // A message lands in (and is copied in to) its ring slot.
    stream_with(link, plan, &mut memories, |index, message| rings[index].range(message, plan.size).start)
}

/// The parts of a session the stream drives.
struct Link<'a> {
    queue_pairs: &'a mut [RcQueuePair],
    completion_queue: &'a mut CompletionQueue,
    control: &'a mut Control,
    remotes: Vec<RemoteBuffer>,
}

/// `landed_at(qp, message)`: where in QP `qp`'s buffer message `message` landed.
fn stream_with<M: QueueMemory>(
    mut link: Link,
    plan: &StreamPlan,
    memories: &mut [M],
    landed_at: impl Fn(usize, u64) -> usize,
) -> Result<Streamed> {
    let mut progress = vec![Progress::default(); memories.len()];
    if plan.warmup > 0 {
        run(&mut link, plan, memories, &mut progress, Limit::Messages(plan.warmup), None)?;
    }
    let queue_count = link.queue_pairs.len() as u64;
    // Post calls: at most one per message (a staged sender posts each copy as it finishes).
    let expected_events = events_to_store(plan.stop, signal_group(plan, memories), queue_count);
    let expected_posts = events_to_store(plan.stop, 1, queue_count);
    let mut meter = phase_meter(plan.size, plan.stop, plan.margin_seconds, expected_events, expected_posts)?;
    let limit = match plan.stop {
        StopRule::Iterations(iterations) => Limit::Messages(iterations),
        StopRule::Duration(duration) => Limit::Time(duration),
    };
    run(&mut link, plan, memories, &mut progress, limit, Some(&mut meter))?;
    let report = meter
        .report()
        .map_err(|source| Error::Figure {
            what: format!("no bandwidth measured at {} bytes", plan.size),
            source,
        })
        .inspect(warn_if_not_stored)?;
    let last = progress.iter().enumerate().map(|(index, state)| LastFetch {
        posted: state.phase_start,
        at: landed_at(index, state.phase_start.saturating_sub(1)),
    });
    Ok(Streamed { report, last: last.collect() })
}

/// Requests per signalled request: `cq_mod`, lowered so that no more than
/// [`SIGNAL_EVERY_BYTES`](crate::engines::stream_book::SIGNAL_EVERY_BYTES) go unsignalled (a long
/// moderated batch is not a dead peer) and so that a staged memory's slots free up in time.
/// Under `-l`, every list's last request is signalled ([`list_signal_interval`]).
fn signal_group<M: QueueMemory>(plan: &StreamPlan, memories: &[M]) -> u64 {
    let interval = signal_every(plan.cq_mod, memories).min(signal_interval(plan.cq_mod, plan.size));
    list_signal_interval(interval, u64::from(plan.post_list))
}

#[derive(Debug, Clone, Copy)]
enum Limit {
    Messages(u64),
    Time(Duration),
}

/// One QP's messages in a size, numbered across the warm-up and measured phases (the slots
/// and stamps of a staged ring follow these numbers on both sides); the phase's own counts, from
/// 1, are the [`StreamBook`]'s.
#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    /// Messages the staged receiver has copied in and credited.
    credited: u64,
    /// Messages posted (and completed) before the current phase.
    phase_start: u64,
    /// A staged reader: messages whose READ completed and whose copy in has started.
    landed: u64,
}

fn run<M: QueueMemory>(
    link: &mut Link,
    plan: &StreamPlan,
    memories: &mut [M],
    progress: &mut [Progress],
    limit: Limit,
    mut meter: Option<&mut BandwidthMeter>,
) -> Result<()> {
    let shared_bounce = plan.shared_bounce_for_tests;
    let remote_rings: Vec<Option<Ring>> = link
        .remotes
        .iter()
        .map(|remote| match shared_bounce {
            true => Some(Ring { slots: 1, stride: plan.size }),
            false => plan.notify_receiver.then(|| Ring::new(remote.len as usize, plan.tx_depth, plan.size)),
        })
        .collect();
    let (target, time_limit_nanos) = match limit {
        Limit::Messages(messages) => (Some(messages), u64::MAX),
        Limit::Time(duration) => (None, u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)),
    };
    let signal_every = signal_group(plan, memories);
    let mut book = StreamBook::start(memories.len(), plan.tx_depth, signal_every, target, plan.stall_timeout);
    let mut posting = true;
    let mut stopped_by = None;
    loop {
        if posting && target.is_none() && book.now_nanos() >= time_limit_nanos {
            posting = false;
        }
        // Ctrl-C: post nothing more and let what is in flight complete; a dead peer never
        // completes it, so that ends the loop at once.
        if posting && stopped_by.is_none() {
            stopped_by = link.control.stop_requested();
            posting = stopped_by.is_none();
        }
        if posting {
            for (index, queue_pair) in link.queue_pairs.iter_mut().enumerate() {
                let state = &mut progress[index];
                let phase_start = state.phase_start;
                let counts = book.progress[index];
                // The room in the send queue, up to the target; whole signal groups in a timed run.
                let mut count = book.room(index);
                if M::COPIES {
                    let ready = match plan.operation {
                        StreamOperation::Write => memories[index].ready_to_post(
                            phase_start + counts.posted,
                            phase_start + counts.completed,
                            target.map_or(u64::MAX, |target| phase_start + target),
                        )?,
                        // A READ (an atomic's fetched value) lands in the staged ring: into a
                        // slot already copied in.
                        StreamOperation::Read | StreamOperation::Atomic(_) => {
                            memories[index].ready_to_land(phase_start + counts.posted)?
                        }
                    };
                    count = count.min(ready);
                }
                let remote = link.remotes[index];
                let remote_ring = remote_rings[index];
                if let Some(ring) = remote_ring.filter(|_| !shared_bounce) {
                    // A slot of the receiver's ring is free once its last message was credited.
                    count = count.min(state.credited + ring.slots - (phase_start + counts.posted));
                }
                if M::COPIES || remote_ring.is_some() {
                    count = book.whole_groups(count);
                }
                // perftest posts a list only when all of it fits (`scnt + post_list <= tx_depth +
                // ccnt`); the last one of a phase may be short (a warm-up not a multiple of it).
                let left = target.map(|target| target - counts.posted);
                count = whole_lists(plan.post_list, count, left);
                if count == 0 {
                    continue;
                }
                let memory = &memories[index];
                let inline = match plan.inline {
                    // SAFETY: the plan asks for inline requests only from host memory (the
                    // session's buffers, registered and alive for the whole size), see
                    // `OneSidedStream::measure`.
                    true => unsafe { Inline::yes() },
                    false => Inline::NO,
                };
                let request = |offset: u64| {
                    // `sequence` counts this phase's requests from 1; `message` every request
                    // of the size from 0 (a ring slot and a stamp follow it).
                    let sequence = counts.posted + offset + 1;
                    let message = phase_start + sequence - 1;
                    let remote_address = match remote_ring {
                        Some(ring) => remote.address + ring.range(message, plan.size).start as u64,
                        None => remote.address,
                    };
                    let operation = match plan.operation {
                        StreamOperation::Write if plan.notify_receiver || plan.with_immediate => {
                            Operation::WriteWithImmediate {
                                remote_address,
                                rkey: remote.rkey,
                                immediate: index as u32,
                            }
                        }
                        operation => operation.request(message, remote_address, remote.rkey),
                    };
                    (sequence, message, operation)
                };
                // Each call posts one list: `post_list` requests, or all the room there is.
                let list = post_list_length(plan.post_list, count);
                let mut offset = 0;
                while offset < count {
                    let length = list.min(count - offset);
                    let book_ref = &book;
                    queue_pair.post_send((offset..offset + length).map(|offset| {
                        let (sequence, message, operation) = request(offset);
                        SendRequest {
                            wr_id: StreamBook::work_request_id(index, sequence),
                            signaled: book_ref.is_signaled(sequence),
                            local: memory.local(message),
                            operation,
                            inline,
                        }
                    }))?;
                    book.posted(index, length, meter.as_deref_mut());
                    offset += length;
                }
            }
            if target.is_some() {
                posting = !book.all_posted();
            }
        }
        let mut retired_now = 0u64;
        let size = plan.size;
        let mut credits_now = 0u64;
        let queue_pairs = &mut *link.queue_pairs;
        link.completion_queue.poll(|completion| {
            if completion.wr_id & CREDIT_FLAG != 0 {
                return take_credit(&completion, queue_pairs, progress, &book, &mut credits_now);
            }
            if !completion.is_success() {
                return Err(completion.error(plan.operation.name(), size).into());
            }
            let unexpected = || Error::UnexpectedCompletion {
                wr_id: completion.wr_id,
                opcode: completion.opcode,
                expected: plan.operation.name(),
            };
            if completion.opcode != plan.operation.expected_opcode() {
                return Err(unexpected());
            }
            retired_now += book.complete(completion.wr_id).map_err(|_| unexpected())?;
            Ok(())
        })?;
        if M::COPIES && plan.operation.fetches() {
            land(memories, progress, &book)?;
        }
        let alive = if retired_now == 0 && credits_now > 0 {
            // A credit retires none of our requests but shows the receiver alive.
            book.other_progress();
            true
        } else {
            book.after_poll(retired_now, meter.as_deref_mut())
        };
        if !alive {
            return Err(Error::Stalled {
                seconds: plan.stall_timeout.as_secs(),
                during: format!("streaming {} of {} bytes", plan.operation.name(), plan.size),
            });
        }
        // The peer's health is looked at with the clock, not on every empty poll: the check reads
        // the clock itself (a system call where the clocksource is not the TSC).
        if book.looked() {
            link.control.check_peer()?;
        }
        // A staged receiver's phase ends when it has copied in (and credited) every message.
        let drained = book.drained()
            && (!plan.notify_receiver
                || progress
                    .iter()
                    .zip(&book.progress)
                    .all(|(state, counts)| state.credited == state.phase_start + counts.posted));
        if !posting && drained {
            // A timed run can stop with copies started that will never be posted.
            for ((memory, state), counts) in memories.iter_mut().zip(progress.iter_mut()).zip(&book.progress)
            {
                state.phase_start += counts.posted;
                memory.finish(state.phase_start)?;
            }
            return stopped_by.map_or(Ok(()), |signal| Err(ExchangeError::Interrupted(signal).into()));
        }
    }
}

/// A staged reader: every READ completed since the last poll has landed in its ring slot (a
/// signalled completion implies the QP's earlier ones), and its copy in starts now.
fn land<M: QueueMemory>(memories: &mut [M], progress: &mut [Progress], book: &StreamBook) -> Result<()> {
    for ((memory, state), counts) in memories.iter_mut().zip(progress.iter_mut()).zip(&book.progress) {
        while state.landed < state.phase_start + counts.completed {
            memory.landed(state.landed, state.landed)?;
            state.landed += 1;
        }
    }
    Ok(())
}

/// A staged receiver's credit: its immediate says how many more messages it copied in; the
/// receive is reposted at once.
fn take_credit(
    completion: &crate::verbs::WorkCompletion,
    queue_pairs: &mut [RcQueuePair],
    progress: &mut [Progress],
    book: &StreamBook,
    credits_now: &mut u64,
) -> Result<()> {
    if !completion.is_success() {
        return Err(completion.error("receive of a credit", 0).into());
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
    let posted = state.phase_start + book.progress.get(index).map_or(0, |counts| counts.posted);
    if state.credited + credit > posted {
        return Err(Error::Protocol(crate::error::ProtocolError::OverCredited {
            queue_pair: index,
            credited: state.credited + credit,
            sent: posted,
        }));
    }
    state.credited += credit;
    *credits_now += credit;
    Ok(queue_pair.post_receive(completion.wr_id, crate::verbs::LocalSlice::empty())?)
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
