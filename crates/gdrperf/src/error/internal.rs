//! What this program should have ruled out, typed: each variant is one promise of the code that
//! did not hold (most of them made by the configuration checks, which refuse the run first), so
//! a test can ask which, and a user's report names it. None is the user's or the peer's fault.

use crate::memory_kind::MemoryKind;

/// A bug, reported instead of a panic; shown after "internal error (please report it): ".
#[derive(Debug, thiserror::Error)]
pub enum InternalError {
    /// The configuration refuses `-d auto` without a GPU kind in `--mem`.
    #[error("-d/--ib-dev auto with --mem {memory} and no GPU got past the configuration")]
    AutoDeviceWithoutGpu { memory: MemoryKind },

    /// Placements give every placement of a `-d auto` run a GPU to be near.
    #[error("-d/--ib-dev auto reached a placement with no GPU to be near")]
    AutoPlacementWithoutGpu,

    /// The configuration always selects a memory kind, and a GPU for GPU kinds.
    #[error("nothing to run: no memory kind or no GPU selected")]
    NothingToRun,

    /// The roles give a server its listening socket before the session.
    #[error("a server needs a listening socket")]
    ServerWithoutListener,

    /// The control channel's peer is the address it connected from.
    #[error("the control channel's peer '{peer}' is no socket address")]
    PeerNotSocketAddress { peer: String },

    /// A lane's thread panicked instead of returning its error.
    #[error("a lane thread panicked")]
    LanePanicked,

    /// The loopback's server thread panicked instead of returning its error.
    #[error("the loopback server thread panicked")]
    LoopbackServerPanicked,

    /// The thread writing a `--concurrent` run's rows ended before the lanes.
    #[error("the run's writer has stopped")]
    WriterStopped,

    /// This side's report is plain data: serde_json cannot fail on it.
    #[error("encoding this side's report: {source}")]
    EncodeReport { source: serde_json::Error },

    /// The QPs of one side share one memory kind, staged or not.
    #[error("every QP of a side has the same memory")]
    MixedMemory,

    /// A staged receive is set up only on staged memory.
    #[error("a staged receive needs a staged buffer")]
    NoStagedBuffer,

    /// The configuration refuses staged memory in both directions.
    #[error("staged memory runs one direction at a time")]
    StagedBothDirections,

    /// `SendConfig::from_args` refuses `--validate` with GPU memory on a receiving side.
    #[error("--validate reached a receiver on {memory} memory, which has no host-memory ring")]
    ValidateWithoutHostRing { memory: MemoryKind },

    /// `prepare` sets a sender's credits up before `measure` uses them.
    #[error("a sender needs its credits set up in prepare")]
    SenderWithoutCredits,

    /// `prepare` posts a receiving side's receives before `measure` uses them.
    #[error("a receiving side needs its receives posted in prepare")]
    ReceivesNotPosted,

    /// Receives are posted once per QP of the session.
    #[error("receives were posted for another number of QPs")]
    ReceiveQueueCount,

    /// Buffers are sized for the sweep's largest message.
    #[error("message size {size} does not fit the buffer")]
    MessageTooLarge { size: usize },

    /// `PingPong::for_write` polls the last byte between two host memories only.
    #[error("the last-byte poll needs memory the CPU can read, and this side's buffer is {memory} memory")]
    LastBytePollUnreadable { memory: MemoryKind },

    /// Staged memory is never polled for the last byte.
    #[error(
        "staged memory cannot be polled for the last byte (the NIC writes the bounce buffer, not the payload)"
    )]
    StagedLastBytePoll,

    /// The staged latency engine runs only on staged memory.
    #[error("the staged latency engine needs staged memory, and this side's is {memory}")]
    StagedLatencyWithoutStaging { memory: MemoryKind },

    /// A latency size takes at least one sample before its figures are made.
    #[error("no latency sample was taken")]
    NoLatencySample,

    /// `--raw-samples`, `-H` and `-U` keep every sample (the recorder is sized for `-n`).
    #[error("--raw-samples, -H, -U: the {size}-byte run kept no exact samples (more than -n were taken)")]
    NoExactSamples { size: usize },
}
