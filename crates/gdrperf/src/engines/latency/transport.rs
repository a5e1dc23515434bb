//! How the two sides of a ping-pong pass the message back and forth ([`PingPong`]), what its
//! messages carry (markers, immediates, work-request ids) and where they land in a side's
//! buffer: what the host and staged loops, the wire and the set-up agree on.

use crate::memory_kind::MemoryKind;
use crate::verbs::completion::opcode;
use crate::verbs::{Operation, RemoteBuffer};

/// How the two sides of a ping-pong pass the message back and forth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PingPong {
    /// RDMA WRITE; the receiver spins on the last byte of its buffer (CPU-visible memory only).
    WritePollLastByte,
    /// RDMA WRITE_WITH_IMM; the receiver waits for the receive completion it produces.
    WriteWithImmediate,
    /// SEND; the receiver waits for the receive completion.
    Send,
}

impl PingPong {
    /// The WRITE ping-pong between memories `local` and `remote`: the last-byte poll where both
    /// are host memory (CPU-visible; a staged payload is not what the NIC writes) and immediate
    /// data was not asked for, else WRITE_WITH_IMM. Both sides reach the same answer.
    pub fn for_write(local: MemoryKind, remote: MemoryKind, write_with_imm: bool) -> PingPong {
        if local == MemoryKind::Host && remote == MemoryKind::Host && !write_with_imm {
            PingPong::WritePollLastByte
        } else {
            PingPong::WriteWithImmediate
        }
    }

    /// Whether each side must keep receives posted.
    pub fn uses_receives(self) -> bool {
        self != PingPong::WritePollLastByte
    }

    /// How arrival is detected, for the `arrival` column of result rows.
    pub fn arrival(self) -> &'static str {
        match self {
            PingPong::WritePollLastByte => "poll_last_byte",
            PingPong::WriteWithImmediate => "write_imm_completion",
            PingPong::Send => "recv_completion",
        }
    }

    pub(super) fn operation_name(self) -> &'static str {
        match self {
            PingPong::WritePollLastByte => "RDMA WRITE",
            PingPong::WriteWithImmediate => "RDMA WRITE with immediate",
            PingPong::Send => "SEND",
        }
    }

    /// The message numbered `sequence` (a request from the client, or the server's answer).
    #[inline]
    pub(super) fn message(self, sequence: u64, remote: RemoteBuffer) -> Operation {
        self.carrying(sequence_immediate(sequence), Operation::Send, remote)
    }

    /// The client's last message of a size: "no more requests".
    pub(super) fn stop(self, remote: RemoteBuffer) -> Operation {
        self.carrying(STOP_IMMEDIATE, Operation::SendWithImmediate { immediate: STOP_IMMEDIATE }, remote)
    }

    /// A message of this transport into `remote`: a WRITE_WITH_IMM carries `immediate`, a
    /// ping-pong of SENDs posts `send` (a plain WRITE carries nothing: its marker byte speaks).
    #[inline]
    fn carrying(self, immediate: u32, send: Operation, remote: RemoteBuffer) -> Operation {
        match self {
            PingPong::WritePollLastByte => {
                Operation::Write { remote_address: remote.address, rkey: remote.rkey }
            }
            PingPong::WriteWithImmediate => {
                Operation::WriteWithImmediate { remote_address: remote.address, rkey: remote.rkey, immediate }
            }
            PingPong::Send => send,
        }
    }

    pub(super) fn receive_opcode(self) -> u32 {
        match self {
            PingPong::WriteWithImmediate => opcode::RECV_RDMA_WITH_IMM,
            _ => opcode::RECV,
        }
    }
}

/// Receives each side keeps posted in a ping-pong: at least two, so that one is always posted
/// while the other is being replaced, and the replacement can wait until after the answer.
pub const PING_PONG_RECEIVES: u32 = 8;

/// The immediate value of the STOP message; sequence immediates stay below it.
pub(super) const STOP_IMMEDIATE: u32 = u32::MAX;
/// Marker bytes of the last-byte poll: the client's are 1..=127, the server's 128..=254, STOP is
/// 255 and a reset byte is 0, so a byte never holds, before an arrival, the value it waits for.
pub(super) const STOP_MARKER: u8 = 255;
pub(super) const RESET_MARKER: u8 = 0;

pub(super) fn sequence_immediate(sequence: u64) -> u32 {
    (sequence % (1 << 31)) as u32
}

pub(super) fn client_marker(sequence: u64) -> u8 {
    1 + (sequence % 127) as u8
}

pub(super) fn server_marker(sequence: u64) -> u8 {
    128 + (sequence % 127) as u8
}

/// Work-request ids: one message in flight each way, so the kind is all an id needs to say.
pub(super) const SEND_ID: u64 = 1;
pub(super) const RECEIVE_ID: u64 = 2;

/// The buffer a ping-pong side needs for messages up to `largest_message`: a sending half and a
/// landing half (see the module docs), each a whole number of pages, as perftest lays them out:
/// a 2-byte message then lands a page away from the one going out, not in the same cache line.
pub fn ping_pong_buffer_len(largest_message: usize) -> usize {
    2 * largest_message.next_multiple_of(HALF_ALIGNMENT)
}

/// The unit of a ping-pong buffer's halves: a page.
const HALF_ALIGNMENT: usize = 4096;

/// Where the landing half of a `len`-byte ping-pong buffer starts.
pub fn landing_offset(len: usize) -> usize {
    len / 2
}

/// The landing half of the peer's buffer: where our writes go.
pub(super) fn landing(remote: RemoteBuffer) -> RemoteBuffer {
    let offset = landing_offset(remote.len as usize) as u64;
    RemoteBuffer { address: remote.address + offset, rkey: remote.rkey, len: remote.len - offset }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the STOP message carries the STOP immediate; a plain WRITE says STOP by its marker.
    #[test]
    fn each_transport_sends_its_stop_and_its_messages_as_such() {
        let remote = RemoteBuffer { address: 0x1000, rkey: 7, len: 64 };
        let write = |operation| matches!(operation, Operation::Write { remote_address: 0x1000, rkey: 7 });
        assert!(write(PingPong::WritePollLastByte.message(5, remote)));
        assert!(write(PingPong::WritePollLastByte.stop(remote)));
        assert!(matches!(
            PingPong::WriteWithImmediate.message(5, remote),
            Operation::WriteWithImmediate { remote_address: 0x1000, rkey: 7, immediate: 5 }
        ));
        assert!(matches!(
            PingPong::WriteWithImmediate.stop(remote),
            Operation::WriteWithImmediate { immediate: STOP_IMMEDIATE, .. }
        ));
        assert!(matches!(PingPong::Send.message(5, remote), Operation::Send));
        assert!(matches!(
            PingPong::Send.stop(remote),
            Operation::SendWithImmediate { immediate: STOP_IMMEDIATE }
        ));
    }

    #[test]
    fn markers_of_the_two_sides_never_meet_and_always_change() {
        for sequence in 0..1000u64 {
            let (client, server) = (client_marker(sequence), server_marker(sequence));
            assert!((1..=127).contains(&client), "{client}");
            assert!((128..=254).contains(&server), "{server}");
            assert_ne!(client_marker(sequence + 1), client, "consecutive client markers differ");
            assert_ne!(server_marker(sequence + 1), server);
            for reserved in [STOP_MARKER, RESET_MARKER] {
                assert_ne!(client, reserved);
                assert_ne!(server, reserved);
            }
        }
    }

    #[test]
    fn sequence_immediates_never_read_as_stop() {
        for sequence in [0, 1, (1 << 31) - 1, 1 << 31, u64::from(u32::MAX), u64::MAX] {
            assert_ne!(sequence_immediate(sequence), STOP_IMMEDIATE, "{sequence}");
        }
        assert_eq!(sequence_immediate(5), 5);
    }
}
