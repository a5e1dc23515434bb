//! The streaming engine of the bandwidth tests: keep every QP's send queue full, retire
//! completions, time it.
//!
//! perftest's method: up to `tx_depth` work requests outstanding per QP, only one in `cq_mod`
//! signaled (fewer completions to poll at high message rates), the clock started at the first
//! post and stopped at the last completion. Each completion tells how far its QP has come, since a
//! signaled completion implies that every earlier request of that QP is done too.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use gdrperf_stats::{BandwidthMeter, BandwidthReport, RunClock};

use crate::error::{Error, Result};
use crate::exchange::ExchangeError;
use crate::harness::config::StopRule;
use crate::harness::session::Session;
use crate::harness::staging::{CopyId, Stager};
use crate::verbs::completion::opcode;
use crate::verbs::{Operation, SendRequest};

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
    /// Write with immediate data, so that each message also completes a receive at the peer:
    /// a staged receiver must learn of every arrival to copy it onward.
    pub notify_receiver: bool,
}

/// Bits of the work-request id that hold the message's sequence number; the QP index sits above.
const SEQUENCE_BITS: u32 = 40;

/// Streams `plan.size`-byte messages over every QP of `session` and returns the measurement.
pub fn stream(session: &mut Session, plan: &StreamPlan) -> Result<BandwidthReport> {
    if plan.warmup > 0 {
        run(session, plan, Limit::Messages(plan.warmup), None)?;
    }
    let expected_events = match plan.stop {
        StopRule::Iterations(iterations) => {
            (iterations / u64::from(plan.cq_mod) + 2) as usize * session.local.queue_pairs.len()
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
    run(session, plan, limit, Some(&mut meter))?;
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

#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    posted: u64,
    completed: u64,
    /// Staged buffers only: copies out to the bounce buffer started, and finished but not yet posted.
    copies_started: u64,
    copies_ready: u64,
}

/// Staged senders: keeps up to `window` copies out to the bounce buffer running ahead of the
/// posts, so that the copy of the next message overlaps the wire time of the previous ones, and
/// returns how many finished copies wait to be posted. Every message is copied: staging is
/// measured at its true cost, not once per size.
fn stage_ahead(
    stager: &mut dyn Stager,
    pending: &mut VecDeque<CopyId>,
    state: &mut Progress,
    size: usize,
    target: Option<u64>,
    window: u64,
) -> Result<u64> {
    let limit = target.unwrap_or(u64::MAX);
    while (pending.len() as u64) < window && state.copies_started < limit {
        pending.push_back(stager.begin_out(0..size)?);
        state.copies_started += 1;
    }
    while let Some(&copy) = pending.front() {
        if !stager.poll(copy)? {
            break;
        }
        pending.pop_front();
        state.copies_ready += 1;
    }
    Ok(state.copies_ready)
}

fn run(
    session: &mut Session,
    plan: &StreamPlan,
    limit: Limit,
    mut meter: Option<&mut BandwidthMeter>,
) -> Result<()> {
    let queue_count = session.local.queue_pairs.len();
    let mut progress = vec![Progress::default(); queue_count];
    let mut pending_copies: Vec<VecDeque<CopyId>> = vec![VecDeque::new(); queue_count];
    let remotes: Vec<_> = (0..queue_count).map(|index| session.remote_buffer(index)).collect();
    let locals: Vec<_> = session.local.buffers.iter().map(|buffer| buffer.slice(plan.size)).collect();
    let cq_mod = u64::from(plan.cq_mod);
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
            stopped_by = session.control.stop_requested();
            posting = stopped_by.is_none();
        }
        session.control.check_peer()?;
        if posting {
            for (index, queue_pair) in session.local.queue_pairs.iter_mut().enumerate() {
                let state = &mut progress[index];
                let room = tx_depth - (state.posted - state.completed);
                let count = match target {
                    Some(target) => room.min(target - state.posted),
                    // Timed runs post whole moderation groups only, so that whatever was posted
                    // last is signaled and every request is accounted for at the end.
                    None => room - room % cq_mod,
                };
                let staged = session.local.buffers[index].stager();
                let staged_sender = staged.is_some();
                let count = match staged {
                    None => count,
                    Some(stager) => {
                        let ready = stage_ahead(
                            stager,
                            &mut pending_copies[index],
                            state,
                            plan.size,
                            target,
                            tx_depth,
                        )?;
                        let usable = count.min(ready);
                        if target.is_none() {
                            usable - usable % cq_mod
                        } else {
                            usable
                        }
                    }
                };
                if count == 0 {
                    continue;
                }
                let first = state.posted;
                let operation = match plan.operation {
                    StreamOperation::Write if plan.notify_receiver => Operation::WriteWithImmediate {
                        remote_address: remotes[index].address,
                        rkey: remotes[index].rkey,
                        immediate: index as u32,
                    },
                    StreamOperation::Write => {
                        Operation::Write { remote_address: remotes[index].address, rkey: remotes[index].rkey }
                    }
                    StreamOperation::Read => {
                        Operation::Read { remote_address: remotes[index].address, rkey: remotes[index].rkey }
                    }
                };
                let local = locals[index];
                queue_pair.post_send((1..=count).map(|offset| {
                    let sequence = first + offset;
                    SendRequest {
                        wr_id: ((index as u64) << SEQUENCE_BITS) | sequence,
                        signaled: sequence % cq_mod == 0 || Some(sequence) == target,
                        local,
                        operation,
                        inline: false,
                    }
                }))?;
                state.posted += count;
                if staged_sender {
                    state.copies_ready -= count;
                }
            }
            if let Some(target) = target {
                posting = progress.iter().any(|state| state.posted < target);
            }
        }
        let mut retired_now = 0u64;
        let mut now_nanos = None;
        let size = plan.size;
        session.local.completion_queue.poll(|completion| {
            if !completion.is_success() {
                return Err(completion.error(plan.operation.name(), size));
            }
            let index = (completion.wr_id >> SEQUENCE_BITS) as usize;
            let sequence = completion.wr_id & ((1 << SEQUENCE_BITS) - 1);
            let state = progress
                .get_mut(index)
                .filter(|state| sequence > state.completed && sequence <= state.posted);
            let (Some(state), true) = (state, completion.opcode == plan.operation.expected_opcode()) else {
                return Err(Error::UnexpectedCompletion {
                    wr_id: completion.wr_id,
                    opcode: completion.opcode,
                    expected: plan.operation.name(),
                });
            };
            let retired = sequence - state.completed;
            state.completed = sequence;
            retired_now += retired;
            if let Some(meter) = meter.as_deref_mut() {
                let nanos = *now_nanos.get_or_insert_with(|| clock.now_nanos());
                meter.record_completion(nanos, retired as u32);
            }
            Ok(())
        })?;
        if retired_now > 0 {
            last_progress = Instant::now();
        } else if last_progress.elapsed() > plan.stall_timeout {
            return Err(Error::Stalled {
                seconds: plan.stall_timeout.as_secs(),
                during: format!("streaming {} of {} bytes", plan.operation.name(), plan.size),
            });
        }
        if !posting && progress.iter().all(|state| state.completed == state.posted) {
            // A timed run can stop with copies started that will never be posted.
            for buffer in &mut session.local.buffers {
                if let Some(stager) = buffer.stager() {
                    stager.finish()?;
                }
            }
            return stopped_by.map_or(Ok(()), |signal| Err(ExchangeError::Interrupted(signal).into()));
        }
    }
}
