//! The SEND stream's loop over one size (see the module docs of `send`): the memory picked once per size,
//! then one loop that posts the sender's messages, polls every completion and hands each to the
//! sender or the receiver, until both halves are done; and what a connection keeps across sizes.

use std::time::Instant;

use gdrperf_stats::BandwidthReport;

use crate::engines::credits::{SenderCredits, CREDIT_RECEIVES};
use crate::error::{Error, Result};
use crate::exchange::ExchangeError;
use crate::harness::session::{Session, SessionParts};
use crate::memory::buffers::pattern_seed;
use crate::memory::queue_memory::{signal_every, Direct, QueueMemory, Ring, Staged, Stamps};
use crate::verbs::completion::opcode;
use crate::verbs::{CompletionQueue, RcQueuePair, WorkCompletion};

use super::plan::{unexpected, work_request_id, SendPlan, CREDIT_FLAG, PHASE_END, RECEIVE_FLAG};
use super::receiver::{ReceiveQueues, Receiver};
use super::sender::Sender;

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
    // A staged ring's slots are freed by completions: signal at least once per half ring; and
    // it holds at most half a ring ready besides what is on the wire, so a longer -l list is cut
    // to that (the list, not the run, gives way).
    let window = memories.iter().map(QueueMemory::window).min().unwrap_or(u64::MAX);
    let post_list = u64::from(plan.post_list.max(1)).min(window) as u32;
    let plan = &SendPlan { cq_mod: signal_every(plan.cq_mod, memories) as u32, post_list, ..*plan };
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

#[cfg(test)]
mod tests {
    use super::*;

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
