//! The peer out of step, typed: each variant is one rule of the run's protocol that the peer's
//! messages or completions broke, with the numbers that show it, so that a caller can match on
//! the rule and a user reads which side sent what.

/// A step of the run's protocol the peer did not keep; shown after "the peer is out of step with
/// this side: ".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// The client started a size the two sides did not agree on.
    #[error("client asked for size {size}, not in the agreed sweep")]
    SizeOutsideSweep { size: usize },

    /// The hello's endpoints and buffers do not pair with this side's QPs.
    #[error("peer offered {endpoints} QPs and {buffers} buffers, we have {queue_pairs} QPs")]
    QueuePairCount { endpoints: usize, buffers: usize, queue_pairs: usize },

    /// A buffer of the peer's hello cannot hold the sweep's largest message.
    #[error(
        "peer's buffer of QP {queue_pair} is {len} bytes, shorter than the largest message ({largest} bytes)"
    )]
    ShortBuffer { queue_pair: usize, len: u64, largest: u64 },

    /// `-R` on both sides, yet the server's hello names no rdma_cm port to connect to.
    #[error("the server's hello gives no rdma_cm port for -R")]
    NoRdmaCmPort,

    /// A staged receiver returned credits for more messages than were sent to it.
    #[error("QP {queue_pair}: the staged receiver credited {credited} messages, {sent} were sent")]
    OverCredited { queue_pair: usize, credited: u64, sent: u64 },

    /// A SEND of another size than the one under way arrived.
    #[error(
        "QP {queue_pair} received a {received}-byte message during the {size}-byte size (do both sides sweep the same sizes?)"
    )]
    MessageSize { queue_pair: usize, received: u32, size: usize },

    /// A warm-up or measured phase ended after another number of messages than agreed.
    #[error(
        "QP {queue_pair} received {received} messages in a phase of {expected} (do both sides use the same -n and --warmup?)"
    )]
    PhaseCount { queue_pair: usize, received: u64, expected: u64 },

    /// An immediate that no gdr-send-bw sender sends.
    #[error("QP {queue_pair} received immediate {immediate:#x}, not a gdr-send-bw sender")]
    UnknownImmediate { queue_pair: usize, immediate: u32 },

    /// Ping-pong: the server sent the STOP that ends a timed run, which only the client may.
    #[error("ping-pong out of step: the server sent STOP, which only the client may send")]
    ServerSentStop,

    /// Ping-pong: the client stopped after another number of messages than agreed.
    #[error("ping-pong out of step: the client sent {sent} messages before STOP, {agreed} were agreed")]
    StopCount { sent: u64, agreed: u64 },

    /// Ping-pong: more SEND completions than SENDs posted.
    #[error("ping-pong out of step: more send completions than sends")]
    MoreSendCompletions,

    /// Ping-pong over SEND: a message of another size than the one under way.
    #[error("ping-pong out of step: received {received} bytes, expected {expected}")]
    PingPongSize { received: u32, expected: usize },

    /// Ping-pong: a message that is not the one due next.
    #[error(
        "ping-pong out of step: message {sequence} arrived with immediate {immediate:?}, expected {expected}"
    )]
    WrongImmediate { sequence: u64, immediate: Option<u32>, expected: u32 },
}
