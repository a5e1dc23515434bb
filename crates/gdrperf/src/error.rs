//! One error type for the harness, wrapping the layers below it whole (the verbs calls'
//! [`gdrperf_verbs::VerbsError`], the control channel's [`gdrperf_exchange::ExchangeError`]).
//!
//! Each variant names what failed and, where we know one, what the user can do about it: an
//! RDMA benchmark fails mostly for reasons outside the program (no driver, port down, peer
//! gone), so the message must point at the fix, not at our code.

use std::io;

mod configuration;
pub(crate) mod cpu_placement;
mod internal;
mod protocol;

pub use configuration::ConfigError;
pub use internal::InternalError;
pub use protocol::ProtocolError;

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
    CpuPlacement(#[from] cpu_placement::CpuPlacementError),

    #[error(transparent)]
    Signal(#[from] gdrperf_process::SignalError),

    /// Where in the sweep an error struck, so that a dead peer or a failed completion names
    /// the size and the peer.
    #[error("at {at} with peer {peer}: {source}")]
    Sweep { at: String, peer: String, source: Box<Error> },
}

/// Shorthand used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;
    use gdrperf_verbs::VerbsError;

    #[test]
    fn a_lane_error_keeps_its_type_and_its_chain() {
        let cause =
            Error::from(VerbsError::PortDown { device: "rxe0".into(), port: 1, state: "DOWN".into() });
        let error = Error::Lane { lane: 2, source: Box::new(cause) };
        assert!(error.to_string().starts_with("lane 2: port 1 of rxe0 is DOWN, not ACTIVE"), "{error}");
        // thiserror hands out the Box itself as the source.
        let source = error.source().and_then(|source| source.downcast_ref::<Box<Error>>());
        assert!(
            matches!(source.map(|boxed| &**boxed), Some(Error::Verbs(VerbsError::PortDown { port: 1, .. }))),
            "{source:?}"
        );
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

    #[test]
    fn a_protocol_error_reads_as_the_peer_out_of_step() {
        let error = Error::from(ProtocolError::SizeOutsideSweep { size: 4096 });
        assert_eq!(
            error.to_string(),
            "the peer is out of step with this side: client asked for size 4096, not in the agreed sweep"
        );
        let error = Error::from(ProtocolError::WrongImmediate { sequence: 3, immediate: None, expected: 4 });
        assert_eq!(
            error.to_string(),
            "the peer is out of step with this side: ping-pong out of step: message 3 arrived with immediate \
             None, expected 4"
        );
    }
}
