//! The streaming engine of the bandwidth tests: keep every QP's send queue full, retire
//! completions, time it.
//!
//! perftest's method: up to `tx_depth` work requests outstanding per QP, only one in `cq_mod`
//! signaled (fewer completions to poll at high message rates), the clock started at the first
//! post and stopped at the last completion. Each completion tells how far its QP has come, since a
//! signaled completion implies that every earlier request of that QP is done too.

use std::collections::VecDeque;
use std::time::Duration;

use gdrperf_stats::{BandwidthMeter, BandwidthReport};

use crate::error::{Error, Result};
use crate::exchange::ExchangeError;
use crate::harness::config::StopRule;
use crate::harness::session::Session;
use crate::harness::staging::{CopyId, Stager};
use crate::harness::stream_book::{signal_interval, StreamBook};
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

/// Streams `plan.size`-byte messages over every QP of `session` and returns the measurement.
pub fn stream(session: &mut Session, plan: &StreamPlan) -> Result<BandwidthReport> {
    if plan.warmup > 0 {
        run(session, plan, Limit::Messages(plan.warmup), None)?;
    }
    let queue_count = session.local.queue_pairs.len() as u64;
    let signal_every = signal_interval(plan.cq_mod, plan.size);
    // Post calls: at most one per message (a staged sender posts each copy as it finishes).
    let (expected_events, expected_posts) = match plan.stop {
        StopRule::Iterations(iterations) => {
            ((iterations / signal_every + 2) * queue_count, iterations.saturating_mul(queue_count))
        }
        StopRule::Duration(_) => (1 << 16, 1 << 16),
    };
    let capacity = |count: u64| count.min(1 << 22) as usize;
    let mut meter = BandwidthMeter::with_capacities(
        plan.size as u64,
        capacity(expected_events),
        capacity(expected_posts),
    )
    .map_err(|source| Error::Figure { what: format!("bandwidth meter for {} bytes", plan.size), source })?;
    if let StopRule::Duration(duration) = plan.stop {
        let (start, end) = duration_window(duration);
        meter.set_window(start, end);
    }
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

/// `-D`'s measurement window, perftest's (`catch_alarm` in `perftest_resources.c`, margin
/// `duration / 4` by default in `perftest_parameters.c`): from the end of a ramp-up margin of a
/// quarter of the duration to the start of an equal drain margin, in nanoseconds since the first
/// post. Only completions seen inside it count, over its length.
pub fn duration_window(duration: Duration) -> (u64, u64) {
    let total = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    let margin = total / 4;
    (margin, total - margin)
}

#[derive(Debug, Clone, Copy)]
enum Limit {
    Messages(u64),
    Time(Duration),
}

/// Staged senders' copies out.
#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    /// Copies out to the bounce buffer started, and finished but not yet posted.
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
    let mut pending_copies: Vec<VecDeque<CopyId>> = vec![VecDeque::new(); queue_count];
    let remotes: Vec<_> = (0..queue_count).map(|index| session.remote_buffer(index)).collect();
    let locals: Vec<_> = session.local.buffers.iter().map(|buffer| buffer.slice(plan.size)).collect();
    let tx_depth = u64::from(plan.tx_depth);
    let (target, time_limit_nanos) = match limit {
        Limit::Messages(messages) => (Some(messages), u64::MAX),
        Limit::Time(duration) => (None, u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)),
    };
    let signal_every = signal_interval(plan.cq_mod, plan.size);
    let mut staged_progress = vec![Progress::default(); queue_count];
    let mut book = StreamBook::start(queue_count, plan.tx_depth, signal_every, target, plan.stall_timeout);
    let mut posting = true;
    let mut stopped_by = None;
    loop {
        if posting && target.is_none() && book.now_nanos() >= time_limit_nanos {
            posting = false;
        }
        // Ctrl-C: post nothing more and let what is in flight complete; a dead peer never
        // completes it, so that ends the loop at once.
        if posting && stopped_by.is_none() {
            stopped_by = session.control.stop_requested();
            posting = stopped_by.is_none();
        }
        if posting {
            for (index, queue_pair) in session.local.queue_pairs.iter_mut().enumerate() {
                let count = book.room(index);
                let count = match session.local.buffers[index].stager() {
                    None => count,
                    Some(stager) => {
                        let state = &mut staged_progress[index];
                        let ready = stage_ahead(
                            stager,
                            &mut pending_copies[index],
                            state,
                            plan.size,
                            target,
                            tx_depth,
                        )?;
                        let usable = book.whole_groups(count.min(ready));
                        state.copies_ready -= usable;
                        usable
                    }
                };
                if count == 0 {
                    continue;
                }
                let first = book.progress[index].posted;
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
                let book_ref = &book;
                queue_pair.post_send((1..=count).map(|offset| {
                    let sequence = first + offset;
                    SendRequest {
                        wr_id: StreamBook::work_request_id(index, sequence),
                        signaled: book_ref.is_signaled(sequence),
                        local,
                        operation,
                        inline: false,
                    }
                }))?;
                book.posted(index, count, meter.as_deref_mut());
            }
            if target.is_some() {
                posting = !book.all_posted();
            }
        }
        let mut retired_now = 0u64;
        let size = plan.size;
        session.local.completion_queue.poll(|completion| {
            if !completion.is_success() {
                return Err(completion.error(plan.operation.name(), size));
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
        if !book.after_poll(retired_now, meter.as_deref_mut()) {
            return Err(Error::Stalled {
                seconds: plan.stall_timeout.as_secs(),
                during: format!("streaming {} of {} bytes", plan.operation.name(), plan.size),
            });
        }
        // The peer's health is looked at with the clock, not on every empty poll: the check reads
        // the clock itself (a system call where the clocksource is not the TSC).
        if book.looked() {
            session.control.check_peer()?;
        }
        if !posting && book.drained() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_duration_window_leaves_a_quarter_at_each_end() {
        assert_eq!(duration_window(Duration::from_secs(4)), (1_000_000_000, 3_000_000_000));
        // 5 s: margins of 1.25 s.
        assert_eq!(duration_window(Duration::from_secs(5)), (1_250_000_000, 3_750_000_000));
        assert_eq!(duration_window(Duration::ZERO), (0, 0));
    }
}
