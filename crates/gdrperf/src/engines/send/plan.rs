//! What the sender and the receiver of the SEND stream share: the plan of a size, the
//! work-request ids both halves post and take apart, and the immediate that ends a phase. Kept
//! apart from the stream loop so that the receiver needs nothing of the module that drives it.

use std::time::Duration;

use crate::error::Error;
use crate::options::config::StopRule;
use crate::verbs::WorkCompletion;

/// How one size is streamed by this side.
#[derive(Debug, Clone, Copy)]
pub struct SendPlan {
    pub size: usize,
    pub stop: StopRule,
    pub warmup: u64,
    pub tx_depth: u32,
    pub cq_mod: u32,
    /// `-l/--post_list`: messages per post call, chained (perftest's post list); 1 posts all the
    /// room there is in one call.
    pub post_list: u32,
    /// `-D`: whole seconds left out of the measurement at each end (`-f`).
    pub margin_seconds: u64,
    pub inline: bool,
    /// This side sends (the client; both sides when bidirectional).
    pub sends: bool,
    /// This side receives (the server; both sides when bidirectional).
    pub receives: bool,
    /// How long without any completion before we call the peer gone.
    pub stall_timeout: Duration,
    /// `--validate`: a staged sender stamps each message with its index.
    pub validate: bool,
    /// The peer's memory is staged too (messages are then stamped: see `memory::queue_memory`).
    pub peer_staged: bool,
}

/// The largest validation ring per side, all QPs together.
pub const VALIDATION_RING_BYTES: usize = 64 << 20;

/// Immediate value marking the last message of a phase.
pub(super) const PHASE_END: u32 = 0x5e4d_e4d0;
/// Work-request ids: the top bit says receive, the QP index sits above the sequence or slot.
pub(super) const RECEIVE_FLAG: u64 = 1 << 63;
/// Work-request id bit of a credit: a receive for one (sender), a SEND of one (receiver).
pub(super) const CREDIT_FLAG: u64 = 1 << 62;
const INDEX_SHIFT: u32 = 40;
pub(super) const LOW_MASK: u64 = (1 << INDEX_SHIFT) - 1;

pub(super) fn work_request_id(receive: bool, queue_pair: usize, low: u64) -> u64 {
    (if receive { RECEIVE_FLAG } else { 0 }) | ((queue_pair as u64) << INDEX_SHIFT) | low
}

pub(super) fn split_id(wr_id: u64) -> (usize, u64) {
    (((wr_id & !(RECEIVE_FLAG | CREDIT_FLAG)) >> INDEX_SHIFT) as usize, wr_id & LOW_MASK)
}

pub(super) fn unexpected(completion: &WorkCompletion, expected: &'static str) -> Error {
    Error::UnexpectedCompletion { wr_id: completion.wr_id, opcode: completion.opcode, expected }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_request_ids_round_trip() {
        for (receive, queue_pair, low) in [(true, 0, 0), (false, 3, 12345), (true, 1023, LOW_MASK)] {
            let id = work_request_id(receive, queue_pair, low);
            assert_eq!(id & RECEIVE_FLAG != 0, receive);
            assert_eq!(split_id(id), (queue_pair, low));
        }
    }
}
