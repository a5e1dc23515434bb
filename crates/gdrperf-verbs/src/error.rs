//! The verbs layer's errors: one variant per call that can fail.
//!
//! Each variant names the call that failed and, where we know one, what the user can do about
//! it: an RDMA benchmark fails mostly for reasons outside the program (no driver, port down,
//! peer gone), so the message must point at the fix, not at our code. The harness wraps this type
//! whole (its messages unchanged), and matches on it where a failure means the peer died.

use std::io;

/// Everything that can go wrong in a verbs call.
#[derive(Debug, thiserror::Error)]
pub enum VerbsError {
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

    #[error("memory allocation of {len} bytes failed")]
    Allocation { len: usize },

    /// `-R`: rdma_cm routes the address through another device or port than this run's. Bad
    /// input like the harness's configuration errors, so it reads as one.
    #[error(
        "invalid configuration: -R/--rdma_cm: rdma_cm routes {address} through another RDMA device or port ({other} port {port}) \
         than this run's {device} port {device_port}: pick that device with -d/--ib-dev and -i/--ib-port, or \
         give the address of {device}'s interface"
    )]
    RdmaCmRoute { address: String, other: String, port: u8, device: String, device_port: u8 },

    /// `-R`: a server could not draw its per-run secret (`rdma_cm_admission`).
    #[error("-R: reading the server's rdma_cm secret from /dev/urandom failed: {0}")]
    RdmaCmSecret(#[source] io::Error),

    /// `-R`: `rdma_reject` of a stranger's connection request failed.
    #[error("rdma_cm: rdma_reject of a stranger's connection request failed: {0}")]
    RdmaCmReject(#[source] io::Error),

    /// `-R -T`: `rdma_set_option(RDMA_OPTION_ID_TOS)` failed.
    #[error("rdma_cm: rdma_set_option(RDMA_OPTION_ID_TOS, {tos}) for -T/--tos failed: {source} (needs a kernel whose rdma_cm takes a ToS, and CAP_NET_ADMIN for some values)")]
    RdmaCmTypeOfService { tos: u8, source: io::Error },

    /// `-R`: the server rejected this client's connection request.
    #[error(
        "rdma_cm: the server at {server} rejected the connection (status {status}){}",
        match reason {
            Some(reason) => format!(": \"{reason}\": the server accepts only the client its TCP admission let in, from that client's address, with the run secret of its hello; is the rdma_cm address ({server}) reached from the same interface as the TCP channel?"),
            None => ": is the server started with -R, on the port its hello gave?".to_string(),
        }
    )]
    RdmaCmRejected { server: String, status: i32, reason: Option<String> },

    /// `-R`: [`crate::connection_manager::CmEnd::connect`] on a client (no listener) was given
    /// no server address: a caller's bug, reported instead of a panic.
    #[error("internal error (please report it): an rdma_cm client needs the server's address")]
    NoServerAddress,

    /// `-R`: [`crate::connection_manager::CmEnd::connect`] was told to accept on a client's end
    /// (no listener, no secret): a caller's bug, reported instead of a panic.
    #[error("internal error (please report it): an rdma_cm client's end was asked to accept connections")]
    NotAServer,

    /// The simulated NIC (`simulated0`) was asked for something only a kernel device does.
    #[error("the simulated NIC (simulated0) does not support {what}: use a real RDMA device or Soft-RoCE (scripts/softroce.sh)")]
    NotOnSimulatedNic { what: &'static str },

    /// `GDRPERF_SIMULATED_NIC` holds something other than `1` or `key=value` pairs it knows.
    #[error("invalid configuration: GDRPERF_SIMULATED_NIC={value:?}: {reason} (e.g. GDRPERF_SIMULATED_NIC=rate=25,latency=2)")]
    SimulatedSettings { value: String, reason: String },

    /// The simulated NIC was asked to connect to a QP number it does not hold: the peer is in
    /// another process (the simulated NIC connects QPs of one process only) or gone.
    #[error(
        "the simulated NIC has no queue pair {queue_pair} in this process: server and client must run in one \
         process over it (--loopback, or two threads), cross-process runs are not supported"
    )]
    SimulatedPeer { queue_pair: u32 },

    /// `-R`: rdma_cm delivered a connection request without its cm id: a bug below us,
    /// reported instead of a panic.
    #[error("internal error (please report it): a connection request without its cm id")]
    RequestWithoutId,
}

/// Shorthand used across the crate.
pub type Result<T, E = VerbsError> = std::result::Result<T, E>;

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
    fn verbs_errors_keep_their_source_and_show_the_errno() {
        use sideway::ibverbs::queue_pair::{ModifyQueuePairErrorKind, PostSendError};
        let errno = || io::Error::from_raw_os_error(22);
        let error =
            VerbsError::ModifyQp { state: "RTR", source: ModifyQueuePairErrorKind::Ibverbs(errno()).into() };
        assert!(
            error.to_string().starts_with("ibv_modify_qp to RTR failed: modify queue pair failed: "),
            "{error}"
        );
        assert!(error.to_string().contains(&errno().to_string()), "{error}");
        assert!(error
            .source()
            .is_some_and(|source| source.is::<sideway::ibverbs::queue_pair::ModifyQueuePairError>()));
        let error = VerbsError::PostSend { op: "RDMA READ", source: PostSendError::Ibverbs(errno()) };
        assert!(error.to_string().contains(&errno().to_string()), "{error}");
        assert!(error.source().is_some_and(|source| source.is::<PostSendError>()));
        let error = VerbsError::PostRecv { source: errno() };
        assert!(error.source().is_some_and(|source| source.is::<io::Error>()));
        // Calls whose variant holds an io::Error keep sideway's error inside it, not its text.
        let error = VerbsError::CreateQp {
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
    fn a_route_through_another_device_reads_as_a_configuration_error() {
        let error = VerbsError::RdmaCmRoute {
            address: "192.0.2.2".into(),
            other: "mlx5_1".into(),
            port: 2,
            device: "rxe0".into(),
            device_port: 1,
        };
        assert!(
            error.to_string().starts_with(
                "invalid configuration: -R/--rdma_cm: rdma_cm routes 192.0.2.2 through another RDMA device \
                 or port (mlx5_1 port 2) than this run's rxe0 port 1: pick that device"
            ),
            "{error}"
        );
    }
}
