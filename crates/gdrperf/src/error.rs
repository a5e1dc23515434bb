//! One error type for the verbs layer and the harness.
//!
//! Each variant names the call that failed and, where we know one, what the user can do about
//! it: an RDMA benchmark fails mostly for reasons outside the program (no driver, port down,
//! peer gone), so the message must point at the fix, not at our code.

use std::io;

mod configuration;

pub use configuration::ConfigError;

/// Everything that can go wrong below the bench binaries.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "libibverbs.so.1 could not be loaded ({reason}); install rdma-core \
         (Debian/Ubuntu: apt-get install libibverbs1 ibverbs-providers), \
         or run the suite without hardware in a Soft-RoCE VM: scripts/softroce.sh"
    )]
    NoLibibverbs { reason: String },

    #[error(
        "no RDMA device found ({detail}); load a driver (mlx5_ib for ConnectX) or create a Soft-RoCE device \
         (modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0), \
         or run the suite in a Soft-RoCE VM: scripts/softroce.sh"
    )]
    NoDevice { detail: String },

    #[error("RDMA device '{name}' not found; devices present: {available}")]
    UnknownDevice { name: String, available: String },

    #[error("ibv_open_device({device}) failed: {}; check permissions on /dev/infiniband/uverbs*", chain(.source))]
    OpenDevice { device: String, source: io::Error },

    #[error("ibv_query_device({device}) failed: {}", chain(.source))]
    QueryDevice { device: String, source: io::Error },

    #[error("port {port} of {device} does not exist (the device has {port_count} port(s)); pick one with -i/--ib-port")]
    UnknownPort { device: String, port: u8, port_count: u8 },

    #[error("ibv_query_port({device}, port {port}) failed: {}", chain(.source))]
    QueryPort { device: String, port: u8, source: io::Error },

    #[error("port {port} of {device} is {state}, not ACTIVE; check the cable/switch (ibstat) or the netdev under RoCE (ip link)")]
    PortDown { device: String, port: u8, state: String },

    #[error("GID index {index} of {device} port {port} is not usable ({reason}); list GIDs with `show_gids` or `ibv_devinfo -v`")]
    BadGid { device: String, port: u8, index: u32, reason: String },

    #[error("no usable GID on {device} port {port}: a RoCE port needs an IP address on its netdev")]
    NoGid { device: String, port: u8 },

    #[error("ibv_alloc_pd failed: {}", chain(.0))]
    AllocPd(#[source] io::Error),

    #[error("ibv_create_cq (depth {depth}) failed: {}", chain(.source))]
    CreateCq { depth: u32, source: io::Error },

    #[error(
        "ibv_create_qp_ex (send depth {send_depth}, recv depth {recv_depth}) failed: {}; \
             lower -t/--tx-depth or -r/--rx-depth",
        chain(.source)
    )]
    CreateQp { send_depth: u32, recv_depth: u32, source: io::Error },

    /// `-R`: a step of connecting through rdma_cm failed without an error of its own (an event
    /// other than the one awaited, no answer in time); `detail` says why and what to try.
    #[error("rdma_cm: {step}: {detail}")]
    ConnectionManager { step: String, detail: String },

    /// `-R`: an rdma_cm call failed; its error is kept whole (`hint`: what to try, or empty).
    #[error("rdma_cm: {step}: {}{hint}", chain(&**.source))]
    ConnectionManagerCall {
        step: String,
        source: Box<dyn std::error::Error + Send + Sync>,
        hint: &'static str,
    },

    #[error("ibv_modify_qp to {state} failed: {}", chain(.source))]
    ModifyQp { state: &'static str, source: sideway::ibverbs::queue_pair::ModifyQueuePairError },

    #[error("ibv_reg_mr ({what}, {len} bytes) failed: {source}{hint}")]
    RegisterMemory { what: String, len: usize, source: io::Error, hint: &'static str },

    #[error("ibv_post_send ({op}) failed: {}", chain(.source))]
    PostSend { op: &'static str, source: sideway::ibverbs::queue_pair::PostSendError },

    #[error("ibv_post_recv failed: {source}")]
    PostRecv { source: io::Error },

    #[error("ibv_poll_cq failed: {0}")]
    PollCq(#[source] io::Error),

    #[error(
        "work completion error: {status_name} (status {status}, vendor error {vendor_err:#x}) on {op} \
             of {bytes} bytes{hint}"
    )]
    Completion {
        status_name: String,
        status: u32,
        vendor_err: u32,
        op: &'static str,
        bytes: usize,
        hint: &'static str,
    },

    #[error("unexpected work completion: wr_id {wr_id:#x}, opcode {opcode} while waiting for {expected}")]
    UnexpectedCompletion { wr_id: u64, opcode: u32, expected: &'static str },

    #[error("no completion progress for {seconds} s while {during}; is the peer still alive? (raise --timeout if the link is this slow)")]
    Stalled { seconds: u64, during: String },

    #[error(transparent)]
    Exchange(#[from] crate::exchange::ExchangeError),

    #[error(transparent)]
    Cuda(#[from] gdrperf_cuda::CudaError),

    #[error("memory allocation of {len} bytes failed")]
    Allocation { len: usize },

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
    Protocol(String),

    /// The peer's end-of-size report did not decode.
    #[error("the server's report for {size} bytes is malformed: {source}")]
    PeerReport { size: usize, source: serde_json::Error },

    /// A figure could not be computed from what was recorded (no completion recorded, a
    /// histogram that could not be built).
    #[error("{what}: {source}")]
    Figure { what: String, source: gdrperf_stats::StatsError },

    /// Something this program should have ruled out: a bug, reported instead of a panic.
    #[error("internal error (please report it): {0}")]
    Internal(String),

    /// A lane of a `--concurrent` run failed: the lane's own error, kept whole.
    #[error("lane {lane}: {source}")]
    Lane { lane: usize, source: Box<Error> },

    /// The loopback's listening socket.
    #[error("loopback listener: {source}")]
    Loopback { source: io::Error },

    /// `--cpu`/`--numa-node` asked for CPUs this process cannot have, or pinning failed.
    #[error("CPU placement: {0}")]
    CpuPlacement(String),

    #[error(transparent)]
    Signal(#[from] crate::harness::stop::SignalError),

    /// Where in the sweep an error struck, so that a dead peer or a failed completion names
    /// the size and the peer.
    #[error("at {at} with peer {peer}: {source}")]
    Sweep { at: String, peer: String, source: Box<Error> },
}

/// Shorthand used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// "outer: inner: innermost": a verbs error's message with its causes, so that the errno under
/// sideway's wrapper errors shows where only the message is printed (the bench binaries print
/// `error: {error}`); the source itself is kept for callers that walk the chain.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn a_lane_error_keeps_its_type_and_its_chain() {
        let cause = Error::PortDown { device: "rxe0".into(), port: 1, state: "DOWN".into() };
        let error = Error::Lane { lane: 2, source: Box::new(cause) };
        assert!(error.to_string().starts_with("lane 2: port 1 of rxe0 is DOWN, not ACTIVE"), "{error}");
        // thiserror hands out the Box itself as the source.
        let source = error.source().and_then(|source| source.downcast_ref::<Box<Error>>());
        assert!(matches!(source.map(|boxed| &**boxed), Some(Error::PortDown { port: 1, .. })), "{source:?}");
    }

    #[test]
    fn verbs_errors_keep_their_source_and_show_the_errno() {
        use sideway::ibverbs::queue_pair::{ModifyQueuePairErrorKind, PostSendError};
        let errno = || io::Error::from_raw_os_error(22);
        let error =
            Error::ModifyQp { state: "RTR", source: ModifyQueuePairErrorKind::Ibverbs(errno()).into() };
        assert!(
            error.to_string().starts_with("ibv_modify_qp to RTR failed: modify queue pair failed: "),
            "{error}"
        );
        assert!(error.to_string().contains(&errno().to_string()), "{error}");
        assert!(error
            .source()
            .is_some_and(|source| source.is::<sideway::ibverbs::queue_pair::ModifyQueuePairError>()));
        let error = Error::PostSend { op: "RDMA READ", source: PostSendError::Ibverbs(errno()) };
        assert!(error.to_string().contains(&errno().to_string()), "{error}");
        assert!(error.source().is_some_and(|source| source.is::<PostSendError>()));
        let error = Error::PostRecv { source: errno() };
        assert!(error.source().is_some_and(|source| source.is::<io::Error>()));
        // Calls whose variant holds an io::Error keep sideway's error inside it, not its text.
        let error = Error::CreateQp {
            send_depth: 8,
            recv_depth: 8,
            source: io::Error::other(PostSendError::Ibverbs(errno())),
        };
        assert!(error.to_string().contains(&errno().to_string()), "{error}");
        let inner =
            error.source().and_then(|source| source.downcast_ref::<io::Error>()).and_then(io::Error::get_ref);
        assert!(inner.is_some_and(|inner| inner.is::<PostSendError>()), "{inner:?}");
    }

    #[test]
    fn a_figure_error_chains_the_statistics_error() {
        let error = Error::Figure {
            what: "no bandwidth measured at 4096 bytes".into(),
            source: gdrperf_stats::StatsError::NoCompletions,
        };
        assert!(
            error.to_string().starts_with("no bandwidth measured at 4096 bytes: no completions"),
            "{error}"
        );
        let source = error.source().and_then(|source| source.downcast_ref::<gdrperf_stats::StatsError>());
        assert!(matches!(source, Some(gdrperf_stats::StatsError::NoCompletions)));
    }
}
