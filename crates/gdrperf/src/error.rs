//! One error type for the harness, wrapping the layers below it whole (the verbs calls'
//! [`gdrperf_verbs::VerbsError`], the control channel's [`gdrperf_exchange::ExchangeError`]).
//!
//! Each variant names what failed and, where we know one, what the user can do about it: an
//! RDMA benchmark fails mostly for reasons outside the program (no driver, port down, peer
//! gone), so the message must point at the fix, not at our code.
//!
//! The typed parts (bad input, broken promises, the peer out of step, CPU placement) are in this
//! same file, which names nothing else of the crate, so every module can return these errors.

use std::io;

use crate::memory_kind::MemoryKind;

/// Everything that can go wrong below the bench binaries.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A verbs call failed; its message is the verbs layer's, unchanged.
    #[error(transparent)]
    Verbs(#[from] gdrperf_verbs::VerbsError),

    /// A completion the engine did not expect at this point of its protocol (the verbs layer
    /// only reports what arrived; the engine knows what should have).
    #[error("unexpected work completion: wr_id {wr_id:#x}, opcode {opcode} while waiting for {expected}")]
    UnexpectedCompletion { wr_id: u64, opcode: u32, expected: &'static str },

    /// An engine's wait for completions saw none within `--timeout`.
    #[error("no completion progress for {seconds} s while {during}; is the peer still alive? (raise --timeout if the link is this slow)")]
    Stalled { seconds: u64, during: String },

    #[error(transparent)]
    Exchange(#[from] gdrperf_exchange::ExchangeError),

    #[error(transparent)]
    Cuda(#[from] gdrperf_cuda::CudaError),

    #[error("data check failed at {bytes} bytes: first mismatch at offset {offset} (expected {expected:#04x}, found {found:#04x})")]
    Validation { bytes: usize, offset: usize, expected: u8, found: u8 },

    #[error("writing results to {path}: {source}")]
    Output { path: String, source: io::Error },

    /// Bad user input: parameters that cannot work on this machine or with this peer. The
    /// error names the flag to change and the value given ([`ConfigError`]).
    #[error("invalid configuration: {0}")]
    Config(#[from] ConfigError),

    /// An acceptance threshold this run cannot apply: a share of a port rate the device does
    /// not report, or a threshold on a figure this benchmark's rows do not have.
    #[error("invalid configuration: {flag}: {source}")]
    Threshold { flag: &'static str, source: gdrperf_threshold::ThresholdError },

    /// `-d/--ib-dev auto` could not read the PCIe topology.
    #[error("invalid configuration: --ib-dev auto: {source}")]
    NearestNic { source: gdrperf_topology::TopologyError },

    /// The peer did something the run's protocol does not allow at this point: a size outside
    /// the agreed sweep, a message of the wrong length, a ping-pong out of step.
    #[error("the peer is out of step with this side: {0}")]
    Protocol(#[from] ProtocolError),

    /// The peer's end-of-size report did not decode.
    #[error("the server's report for {size} bytes is malformed: {source}")]
    PeerReport { size: usize, source: serde_json::Error },

    /// A figure could not be computed from what was recorded (no completion recorded, a
    /// histogram that could not be built).
    #[error("{what}: {source}")]
    Figure { what: String, source: gdrperf_stats::StatsError },

    /// Something this program should have ruled out: a bug, reported instead of a panic.
    #[error("internal error (please report it): {0}")]
    Internal(#[from] InternalError),

    /// A lane of a `--concurrent` run failed: the lane's own error, kept whole.
    #[error("lane {lane}: {source}")]
    Lane { lane: usize, source: Box<Error> },

    /// The loopback's listening socket.
    #[error("loopback listener: {source}")]
    Loopback { source: io::Error },

    /// `--cpu`/`--numa-node` asked for CPUs this process cannot have, or pinning failed.
    #[error("CPU placement: {0}")]
    CpuPlacement(#[from] CpuPlacementError),

    #[error(transparent)]
    Signal(#[from] gdrperf_exchange::process::SignalError),

    /// Where in the sweep an error struck, so that a dead peer or a failed completion names
    /// the size and the peer.
    #[error("at {at} with peer {peer}: {source}")]
    Sweep { at: String, peer: String, source: Box<Error> },
}

/// Shorthand used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

// ---------------------------------------------------------------------------------------
// Bad user input, typed: each variant names the flag as the user spells it (`-s/--size`), the
// value given where there is one, and what the flag allows, so that a caller can match on the
// flag and a user reads what to change.
//
// The harness checks the whole command line once, before any device is opened or socket bound
// (`options::config`); the few variants that need the peer or the machine (placements that do
// not pair up, a device list that does not fit the GPUs) are the only ones made later, as soon
// as what they need is known. rdma_cm's route, known only once the verbs layer resolved it, is
// that layer's `VerbsError::RdmaCmRoute`, which reads as the same kind of message.

/// A configuration this run cannot use; shown after "invalid configuration: ".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A value outside the range the flag takes.
    #[error("{flag} must be {allowed}, not {value}")]
    OutOfRange { flag: &'static str, value: String, allowed: &'static str },

    /// A value above a limit of the hardware or of this program; `limit` says which and why.
    #[error("{flag} {value} is above {limit}")]
    AboveLimit { flag: &'static str, value: u64, limit: String },

    /// A value that is not what the flag takes; `problem` says what it should look like.
    #[error("{flag} {value}: {problem}")]
    Malformed { flag: &'static str, value: String, problem: String },

    /// A flag that the rest of the command line rules out (or that asks for nothing, like an
    /// empty token); `reason` names the other flag and what to do instead.
    #[error("{flag} {reason}")]
    Conflict { flag: &'static str, reason: String },

    /// `-b` with staged memory: a staged side has one bounce ring per QP, which both directions
    /// would share.
    #[error("staged memory runs one direction at a time: drop -b/--bidirectional")]
    StagedBidirectional,

    /// `-D` with a staged receiver of WRITEs: it counts the messages it copies in, and a timed
    /// run agrees on no count beforehand.
    #[error("a staged receiver counts the messages it copies: use -n/--iters, not -D/--duration")]
    StagedReceiverDuration,

    /// `-l/--post_list` with staged memory: a staged side posts each message as its copy
    /// finishes, not in lists of a fixed length.
    #[error("staged memory posts each message as its copy finishes: drop -l/--post_list")]
    StagedPostList,

    /// `-l/--post_list N` in a combination perftest refuses (`perftest_parameters.c`), or one
    /// whose lists never fit the send queue.
    #[error("-l/--post_list {post_list}: {rule}")]
    PostList { post_list: u32, rule: PostListRule },

    /// `--mem` (and `--gpu`) lists on the two sides that cannot pair up, round by round.
    #[error(
        "the two sides list {} and {} memory placements ([{}] here, [{}] there): \
         they pair up in order, so give both sides as many, or one side a single one",
        .ours.len().max(1), .theirs.len().max(1), .ours.join(", "), .theirs.join(", ")
    )]
    Placements { ours: Vec<String>, theirs: Vec<String> },

    /// The peer lists more placements (so rounds, or lanes) than any node has: each would cost
    /// this side a context, QPs and registered memory, so the count is refused before any is built.
    #[error(
        "the peer lists {theirs} memory placements and this side {ours}; at most {limit} pair up (each round or lane builds QPs and registers memory): give fewer --mem/--gpu entries"
    )]
    TooManyPlacements { ours: usize, theirs: usize, limit: usize },

    /// A server turned a connecting peer away (a `--concurrent` lane from another client or out
    /// of order, a wrong token): what it tells the peer and logs.
    #[error("{reason}")]
    PeerRefused { reason: String },
}

/// The rule an `-l/--post_list` broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PostListRule {
    /// perftest: "Number of iterations must be a multiple of post list size".
    #[error("-n/--iters {iterations} must be a multiple of the post list's size (as perftest)")]
    IterationsNotMultiple { iterations: u64 },
    /// perftest: "Post list size must be a multiple of CQ moderation".
    #[error("the post list's size must be a multiple of -Q/--cq-mod {cq_mod} (as perftest)")]
    NotMultipleOfCqMod { cq_mod: u32 },
    /// A list longer than the send queue is never posted (perftest waits for room that never
    /// comes); gdrperf says so instead.
    #[error("above -t/--tx-depth {tx_depth}: a list longer than the send queue is never posted")]
    AboveTxDepth { tx_depth: u32 },
    /// gdr-send-bw: a list longer than the credits the receiver's posted receives come back as
    /// is never posted either (`-r`, or fewer where `--validate`'s ring holds fewer).
    #[error(
        "above the {credits} messages the receiver's posted receives credit at once: raise its -r/--rx-depth or lower -l"
    )]
    AboveCredits { credits: u64 },
}

impl ConfigError {
    /// [`ConfigError::OutOfRange`]: `flag` was given `value`, and takes `allowed`.
    pub fn out_of_range(flag: &'static str, value: impl ToString, allowed: &'static str) -> ConfigError {
        ConfigError::OutOfRange { flag, value: value.to_string(), allowed }
    }

    /// [`ConfigError::Conflict`]: `flag` is ruled out for `reason`.
    pub fn conflict(flag: &'static str, reason: impl Into<String>) -> ConfigError {
        ConfigError::Conflict { flag, reason: reason.into() }
    }

    /// [`ConfigError::Malformed`]: `value` of `flag` is not what it takes (`problem` says why).
    pub fn malformed(flag: &'static str, value: &str, problem: impl ToString) -> ConfigError {
        ConfigError::Malformed { flag, value: value.to_string(), problem: problem.to_string() }
    }
}

// ---------------------------------------------------------------------------------------
// What this program should have ruled out, typed: each variant is one promise of the code that
// did not hold (most of them made by the configuration checks, which refuse the run first), so
// a test can ask which, and a user's report names it. None is the user's or the peer's fault.

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

// ---------------------------------------------------------------------------------------
// The peer out of step, typed: each variant is one rule of the run's protocol that the peer's
// messages or completions broke, with the numbers that show it, so that a caller can match on
// the rule and a user reads which side sent what.

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

    /// `-R` on both sides, yet the server's hello names no rdma_cm port to connect to, or no
    /// run secret to connect with.
    #[error("the server's hello gives no rdma_cm {missing} for -R")]
    NoRdmaCmPort { missing: &'static str },

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

// ---------------------------------------------------------------------------------------
// Why a thread cannot run where it was asked to, and the kernel's CPU list format those
// messages (and the run header) spell CPUs in. Here, below the rest of the crate, so that the
// crate's error can hold it without reaching up into `node`.

/// A placement this process cannot have, or a pinning that failed; shown after "CPU placement: ".
#[derive(Debug, thiserror::Error)]
pub enum CpuPlacementError {
    /// `--cpu` lists CPUs outside this process's CPU set (Slurm's, `taskset`'s).
    #[error(
        "--cpu {}: CPU {} not available to this process (it may use {})",
        format_cpu_list(.asked), format_cpu_list(.refused), format_cpu_list(.allowed)
    )]
    CpusNotAllowed { asked: Vec<usize>, refused: Vec<usize>, allowed: Vec<usize> },

    /// `--numa-node` names a node sysfs does not list (`known`: those it does).
    #[error(
        "--numa-node {node}: no such NUMA node (this machine has {})",
        if .known.is_empty() { "no NUMA information".to_string() } else { join(.known) }
    )]
    NoSuchNode { node: u32, known: Vec<u32> },

    /// `--numa-node`'s CPUs are all outside this process's CPU set.
    #[error(
        "--numa-node {node}: none of its CPUs ({}) is available to this process (it may use {})",
        format_cpu_list(.cpus), format_cpu_list(.allowed)
    )]
    NodeNotAllowed { node: u32, cpus: Vec<usize>, allowed: Vec<usize> },

    /// `sched_setaffinity` refused the chosen CPUs (`placement`: their description, as the
    /// run header gives it).
    #[error("cannot pin to {placement}: {source}")]
    Pin { placement: String, source: io::Error },

    /// A `--concurrent` lane's thread could not be pinned to its lane's placement.
    #[error("lane thread: {source}")]
    LaneThread { source: io::Error },
}

/// "0, 1, 2": node numbers as a sentence lists them.
fn join(nodes: &[u32]) -> String {
    nodes.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// The kernel's CPU list format from a sorted list: [0, 1, 2, 3, 8] -> "0-3,8".
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut index = 0;
    while index < cpus.len() {
        let first = cpus[index];
        let mut last = first;
        while index + 1 < cpus.len() && cpus[index + 1] == last + 1 {
            index += 1;
            last = cpus[index];
        }
        parts.push(if first == last { first.to_string() } else { format!("{first}-{last}") });
        index += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests;
