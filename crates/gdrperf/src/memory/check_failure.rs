//! Why a size's `--validate` check failed on one side ([`CheckFailure`]): typed where it is
//! found, so a caller can tell the failures apart, and said in words only when it is reported.
//! The words travel to the peer as text (the server's result of a size) and are pinned by the
//! tests and the VM scripts, so each variant's text is fixed.

/// One side's data-check failure of a size: the first found, in the words the run reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckFailure {
    /// A byte of QP `queue_pair`'s buffer differs from the pattern its messages carry; `offset`
    /// counts from the start of the buffer.
    #[error("QP {queue_pair}: byte {offset} is {found:#04x}, expected {expected:#04x}")]
    Byte { queue_pair: usize, offset: usize, found: u8, expected: u8 },
    /// A payload received into a slot of QP `queue_pair`'s `--validate` ring (SEND/RECV) differs
    /// from the pattern; `offset` counts from the start of the payload.
    #[error("QP {queue_pair}: a received payload's byte {offset} is {found:#04x}, expected {expected:#04x}")]
    ReceivedPayload { queue_pair: usize, offset: usize, found: u8, expected: u8 },
    /// A staged receiver's check of one message as it was copied in, as that check words it
    /// (which message, which slot, what it carried).
    #[error("QP {queue_pair}: {description}")]
    Message { queue_pair: usize, description: String },
    /// The server's atomic counter did not advance by exactly 1 per atomic: the last of `posted`
    /// atomics fetched `fetched` where `expected` (`posted - 1`) was due.
    #[error(
        "the counter held {fetched} before the last of {posted} atomics, not {expected}: it did not \
         advance by exactly 1 per atomic"
    )]
    AtomicCounter { fetched: u64, posted: u64, expected: u64 },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts are what the peer receives and what the VM scripts look for: spelled out here.
    #[test]
    fn each_failure_reads_as_it_always_has() {
        let cases = [
            (
                CheckFailure::Byte { queue_pair: 1, offset: 17, found: 0, expected: 0x5b },
                "QP 1: byte 17 is 0x00, expected 0x5b",
            ),
            (
                CheckFailure::ReceivedPayload { queue_pair: 0, offset: 3, found: 0xff, expected: 0x0a },
                "QP 0: a received payload's byte 3 is 0xff, expected 0x0a",
            ),
            (
                CheckFailure::Message {
                    queue_pair: 2,
                    description: "message 5 (slot 1 of 8) is short".into(),
                },
                "QP 2: message 5 (slot 1 of 8) is short",
            ),
            (
                CheckFailure::AtomicCounter { fetched: 1015, posted: 1017, expected: 1016 },
                "the counter held 1015 before the last of 1017 atomics, not 1016: it did not advance by \
                 exactly 1 per atomic",
            ),
        ];
        for (failure, text) in cases {
            assert_eq!(failure.to_string(), text);
        }
    }
}
