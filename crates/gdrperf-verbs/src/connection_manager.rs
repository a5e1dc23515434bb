//! Connecting the queue pairs through the RDMA connection manager: `-R`, perftest's `--rdma_cm`.
//!
//! Without `-R` each side reads the other's QP number, PSN and GID from the TCP hello and moves
//! its QPs to RTR and RTS itself ([`RcQueuePair::connect`]). With `-R` the path comes from
//! rdma_cm, as on fabrics where peers are found by IP address (RoCE with several GIDs or VLANs
//! per port, InfiniBand with IPoIB): the client resolves the server's address to a device, port,
//! source GID and route, and the kernel's CM swaps QP numbers and PSNs in its REQ/REP/RTU
//! handshake. gdrperf's TCP channel still carries the parameters, keys and results; rdma_cm only
//! connects. One cm id per QP, connected one after another, as perftest does (`-q N` makes N).
//!
//! Unlike perftest, which creates its QPs on the cm id (`rdma_create_qp`) and lets librdmacm move
//! them, the QPs stay ours (made on our protection domain, with our sizes, before connecting):
//! librdmacm's user-managed QP mode, where `rdma_init_qp_attr` gives each transition's attributes
//! and we apply them. Two consequences: the device rdma_cm resolves the address to must be the
//! one the run opened (checked, with the fix in the error), and the attributes both paths share
//! (MTU, read depth, RNR timer, retry counts) are set as [`RcQueuePair::connect`] sets them, so
//! `-R` changes how the peer is found, never what is measured.
//!
//! Who may connect (issue 44): a server binds its rdma_cm port when it makes its resources (the
//! port goes in its hello) but listens only after the TCP admission ([`CmEnd::listen`], then it
//! tells the client on the control channel), and accepts only the admitted client's requests,
//! checked by [`crate::rdma_cm_admission`]: the source address and the per-run secret of its
//! hello in the request's private data. A stranger's request is rejected and the wait goes on.
//! The raw calls this needs (private data, `rdma_reject`, addresses, the ToS option) are in
//! [`crate::rdma_cm`]; sideway 0.4.3 exposes none of them.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sideway::ibverbs::queue_pair::QueuePairState;

use crate::rdma_cm::{CmEvent, CmEventKind, CmId, EventChannel};
use crate::rdma_cm_admission::{vet_request, CmRefusal, CmSecret};
use crate::{Device, Gid, PathSettings, RcQueuePair, Result, VerbsError};

/// How long address and route resolution may take, each (perftest's 2000 ms).
const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);

/// rdma_cm ports a server tries, from its TCP port up, before giving up: another run (or another
/// lane of this one, still listening) may hold the first. The port is told to the client in the
/// hello, so any free one does.
const PORTS_TRIED: u16 = 64;

/// How often a wait for a CM event also looks at the peer (a failure it reported on the control
/// channel ends the wait at once, with its reason).
const POLL_INTERVAL: Duration = Duration::from_millis(2);

/// This side's rdma_cm state for one set of QPs: a server's bound (later listening) id until its
/// QPs are connected, then the cm ids of the connections, kept as long as the QPs (dropping one
/// sends a disconnect).
pub struct CmEnd {
    channel: Arc<EventChannel>,
    listener: Option<CmId>,
    listening_port: Option<u16>,
    /// A server's secret for this set of QPs, for its hello.
    secret: Option<CmSecret>,
    /// Requests that passed the check while the server waited for something else (the client's
    /// next QP, arriving before the previous one's ESTABLISHED event).
    vetted: VecDeque<CmId>,
    connections: Vec<CmId>,
    /// How the connections were made, for the run header ("to 192.0.2.2 rdma_cm port 18515").
    made: String,
    /// Requests rejected, for the run header.
    refused: usize,
}

/// Who a [`CmEnd`] connects with.
#[derive(Debug, Clone, Copy)]
pub enum CmPeer<'a> {
    /// A client: the server's rdma_cm address and port, the secret of its hello, and `-T`'s
    /// type of service (`None`: rdma_cm's default, set in configfs).
    Client { server: SocketAddr, secret: &'a CmSecret, type_of_service: Option<u8> },
    /// A server: the address its TCP admission let the client in from.
    Server { admitted: IpAddr },
}

/// How a [`CmEnd::connect`] waits: `timeout` for each QP; `give_up`, asked while waiting, ends
/// the wait with its error (the peer reported a failure on the control channel); `on_refusal`
/// hears of each request a server rejected (its source address and why).
pub struct CmWait<'a, E> {
    pub timeout: Duration,
    pub give_up: &'a mut dyn FnMut() -> Option<E>,
    pub on_refusal: &'a mut dyn FnMut(Option<IpAddr>, &CmRefusal),
}

impl CmEnd {
    /// A client's end: an event channel, no listener.
    pub fn client() -> Result<CmEnd> {
        Ok(CmEnd::new(open_channel()?, None, None, None))
    }

    /// A server's end, bound to `address` at the first free rdma_cm port from `first_port` on,
    /// not yet listening ([`CmEnd::listen`]), with a fresh secret for its hello.
    pub fn server(address: IpAddr, first_port: u16) -> Result<CmEnd> {
        let channel = open_channel()?;
        let secret = CmSecret::random().map_err(VerbsError::RdmaCmSecret)?;
        let mut last_error = None;
        for port in (0..PORTS_TRIED).filter_map(|offset| first_port.checked_add(offset)) {
            let id = channel.create_id().map_err(|error| cm_error("rdma_create_id", error))?;
            match id.bind(SocketAddr::new(address, port)) {
                Ok(()) => return Ok(CmEnd::new(channel, Some(id), Some(port), Some(secret))),
                Err(error) => last_error = Some(error),
            }
        }
        let step =
            format!("rdma_bind_addr({address}, ports {first_port} and the {} after it)", PORTS_TRIED - 1);
        Err(match last_error {
            Some(error) => cm_error(&step, error),
            None => VerbsError::ConnectionManager { step, detail: "no port to try above -p/--port".into() },
        })
    }

    fn new(
        channel: Arc<EventChannel>,
        listener: Option<CmId>,
        listening_port: Option<u16>,
        secret: Option<CmSecret>,
    ) -> CmEnd {
        CmEnd {
            channel,
            listener,
            listening_port,
            secret,
            vetted: VecDeque::new(),
            connections: Vec::new(),
            made: String::new(),
            refused: 0,
        }
    }

    /// The rdma_cm port a server is bound to (for its hello); `None` on a client.
    pub fn listening_port(&self) -> Option<u16> {
        self.listening_port
    }

    /// A server's secret for this set of QPs (for its hello); `None` on a client.
    pub fn secret(&self) -> Option<&CmSecret> {
        self.secret.as_ref()
    }

    /// A server starts listening: once its client is admitted, never before.
    pub fn listen(&mut self) -> Result<()> {
        match &self.listener {
            Some(listener) => listener.listen(64).map_err(|error| cm_error("rdma_listen", error)),
            None => Ok(()),
        }
    }

    /// Connects `queue_pairs` in order. A server accepts one connection request per QP on its
    /// listener, from the admitted client only; a client connects each to the server. Each QP
    /// goes INIT -> RTR -> RTS with rdma_cm's attributes (address vector, QP numbers, PSNs) and
    /// `path`'s settings. The error type is the caller's, so that its reason for giving up comes
    /// back to it unchanged.
    pub fn connect<E: From<VerbsError>>(
        &mut self,
        device: &Device,
        queue_pairs: &mut [RcQueuePair],
        path: &PathSettings,
        peer: CmPeer<'_>,
        wait: CmWait<'_, E>,
    ) -> Result<(), E> {
        let expected = DeviceMatch { name: device.name().to_string(), port: path.port };
        let CmWait { timeout, give_up, on_refusal } = wait;
        for queue_pair in queue_pairs.iter_mut() {
            let waiter = Waiter { channel: &self.channel, deadline: Instant::now() + timeout };
            let id = match peer {
                CmPeer::Server { admitted } => {
                    let secret = self.secret.clone().ok_or(VerbsError::NotAServer)?;
                    let mut gate = Gate { admitted, secret: &secret, refused: &mut self.refused, on_refusal };
                    accept_one(&waiter, &mut gate, &mut self.vetted, &expected, queue_pair, path, give_up)?
                }
                CmPeer::Client { server, secret, type_of_service } => {
                    let request = Request { server, secret, type_of_service };
                    connect_one(&waiter, &expected, queue_pair, path, &request, give_up)?
                }
            };
            self.connections.push(id);
        }
        // All QPs are connected: the port is free for the next set (a later lane or placement),
        // and a stranger's request still queued is turned away with the listener.
        self.listener = None;
        self.vetted.clear();
        self.made = match (peer, self.listening_port) {
            (CmPeer::Client { server, .. }, _) => {
                format!("to {} rdma_cm port {}", server.ip(), server.port())
            }
            (CmPeer::Server { admitted }, Some(port)) => {
                format!("accepted from {admitted} only, on rdma_cm port {port}")
            }
            (CmPeer::Server { .. }, None) => String::new(),
        };
        Ok(())
    }

    /// The local address rdma_cm connected the first QP from (client) or to (server): its GID
    /// is the one the connection uses, whatever `-x` said, as in perftest.
    pub fn local_address(&self) -> Option<IpAddr> {
        self.connections.first().and_then(CmId::local_address)
    }
}

/// How a run's QPs were connected, for its header and metadata: through rdma_cm (`-R`), with
/// the address or port, or from the hellos on the TCP channel.
pub fn describe(rdma_cm: Option<&CmEnd>) -> String {
    match rdma_cm {
        Some(end) => format!(
            "rdma_cm (-R): {} connection(s) {}, address and route resolved by the RDMA CM{}",
            end.connections.len(),
            end.made,
            match end.refused {
                0 => String::new(),
                refused => format!("; {refused} stranger request(s) rejected"),
            }
        ),
        None => "QP numbers, PSNs and GIDs swapped on the TCP channel (no -R)".into(),
    }
}

/// The address a client hands rdma_cm for a server it reached at `peer` over TCP: the same,
/// except that a loopback address (a `--loopback` run, or `localhost`) becomes the IPv4 address
/// of this side's RoCE GID when it has one, since rdma_cm resolves 127.0.0.1 to a device only
/// where the RDMA device sits on the loopback interface (Soft-RoCE on `lo`).
pub fn rdma_cm_address(peer: IpAddr, local_gid: Option<Gid>) -> IpAddr {
    let Some(gid) = local_gid else { return peer };
    match std::net::Ipv6Addr::from(gid.0).to_ipv4_mapped() {
        Some(own) if peer.is_loopback() && !own.is_loopback() && !own.is_unspecified() => IpAddr::V4(own),
        _ => peer,
    }
}

/// The GID RoCE derives from an IP address (IPv4-mapped for IPv4): what to look up in the GID
/// table for the address rdma_cm connected from.
pub fn gid_of_address(address: IpAddr) -> Gid {
    match address.to_canonical() {
        IpAddr::V4(v4) => Gid(v4.to_ipv6_mapped().octets()),
        IpAddr::V6(v6) => Gid(v6.octets()),
    }
}

/// The device and port a cm id must land on: the ones our QPs were made on.
struct DeviceMatch {
    name: String,
    port: u8,
}

impl DeviceMatch {
    /// rdma_cm picked a device by routing `address`: it must be ours, or our QP numbers mean
    /// nothing to it.
    fn check(&self, id: &CmId, address: &str) -> Result<()> {
        let (name, port) = id.device().ok_or_else(|| VerbsError::ConnectionManager {
            step: format!("address {address}"),
            detail: "rdma_cm bound it to no RDMA device".into(),
        })?;
        if name != self.name || port != self.port {
            return Err(VerbsError::RdmaCmRoute {
                address: address.to_string(),
                other: name,
                port,
                device: self.name.clone(),
                device_port: self.port,
            });
        }
        Ok(())
    }
}

/// A server's check of connection requests: who was admitted, with which secret, and what to do
/// with a request refused.
struct Gate<'a> {
    admitted: IpAddr,
    secret: &'a CmSecret,
    refused: &'a mut usize,
    on_refusal: &'a mut dyn FnMut(Option<IpAddr>, &CmRefusal),
}

impl Gate<'_> {
    /// A connection request vetted: `Some` if it is the admitted client's; otherwise rejected
    /// (with the reason in the rejection), reported, its id destroyed, and `None`.
    fn vet(&mut self, request: CmId, private_data: &[u8]) -> Result<Option<CmId>> {
        let source = request.peer_address();
        match vet_request(self.admitted, self.secret, source, request.local_address(), private_data) {
            Ok(()) => Ok(Some(request)),
            Err(refusal) => {
                request.reject(refusal.reason()).map_err(VerbsError::RdmaCmReject)?;
                *self.refused += 1;
                (self.on_refusal)(source, &refusal);
                Ok(None)
            }
        }
    }

    /// `event` if it is anything but a connection request; a request is vetted, and kept in
    /// `vetted` if it passes.
    fn sort(&mut self, event: CmEvent, vetted: &mut VecDeque<CmId>) -> Result<Option<CmEvent>> {
        if event.kind != CmEventKind::ConnectRequest {
            return Ok(Some(event));
        }
        let CmEvent { request, private_data, .. } = event;
        let request = request.ok_or(VerbsError::RequestWithoutId)?;
        vetted.extend(self.vet(request, &private_data)?);
        Ok(None)
    }
}

/// Waits for CM events on one channel, within a deadline.
struct Waiter<'a> {
    channel: &'a Arc<EventChannel>,
    deadline: Instant,
}

impl Waiter<'_> {
    /// The next event (for `step`); the wait ends at the deadline or when `give_up` says so.
    fn next<E: From<VerbsError>>(
        &self,
        step: &str,
        give_up: &mut dyn FnMut() -> Option<E>,
    ) -> Result<CmEvent, E> {
        loop {
            if let Some(event) =
                self.channel.next_event().map_err(|error| cm_error("rdma_get_cm_event", error))?
            {
                return Ok(event);
            }
            if let Some(error) = give_up() {
                return Err(error);
            }
            if Instant::now() >= self.deadline {
                return Err(VerbsError::ConnectionManager {
                    step: step.to_string(),
                    detail: "no answer within --timeout: is the peer started with -R, and does the address \
                             reach it over RDMA?"
                        .into(),
                }
                .into());
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// The next event, which must be `wanted` (for `step`); a failure event becomes an error
    /// naming `step` and the event.
    fn expect<E: From<VerbsError>>(
        &self,
        wanted: CmEventKind,
        step: &str,
        give_up: &mut dyn FnMut() -> Option<E>,
    ) -> Result<CmEvent, E> {
        let event = self.next(step, give_up)?;
        match event.kind == wanted {
            true => Ok(event),
            false => Err(unexpected(step, &event).into()),
        }
    }
}

/// Server: the admitted client's connection request for `queue_pair` (strangers' rejected on the
/// way), its QP taken to RTS, then accepted and established.
fn accept_one<E: From<VerbsError>>(
    waiter: &Waiter,
    gate: &mut Gate,
    vetted: &mut VecDeque<CmId>,
    expected: &DeviceMatch,
    queue_pair: &mut RcQueuePair,
    path: &PathSettings,
    give_up: &mut dyn FnMut() -> Option<E>,
) -> Result<CmId, E> {
    let waiting = "waiting for the admitted client's rdma_cm connection";
    let id = loop {
        if let Some(id) = vetted.pop_front() {
            break id;
        }
        let event = waiter.next(waiting, give_up)?;
        if let Some(other) = gate.sort(event, vetted)? {
            return Err(unexpected(waiting, &other).into());
        }
    };
    expected.check(&id, "the client's connection request")?;
    ready(&id, queue_pair, path)?;
    id.accept(queue_pair.qp_number()).map_err(|error| cm_error("rdma_accept", error))?;
    let establishing = "waiting for the client to establish the connection";
    loop {
        let event = waiter.next(establishing, give_up)?;
        match gate.sort(event, vetted)? {
            Some(event) if event.kind == CmEventKind::Established && event.is_about(&id) => return Ok(id),
            Some(other) => return Err(unexpected(establishing, &other).into()),
            None => {}
        }
    }
}

/// What a client's connection request carries.
struct Request<'a> {
    server: SocketAddr,
    secret: &'a CmSecret,
    type_of_service: Option<u8>,
}

/// Client: resolves the server's address and route, connects `queue_pair` with the secret in the
/// request, completes on the reply.
fn connect_one<E: From<VerbsError>>(
    waiter: &Waiter,
    expected: &DeviceMatch,
    queue_pair: &mut RcQueuePair,
    path: &PathSettings,
    request: &Request,
    give_up: &mut dyn FnMut() -> Option<E>,
) -> Result<CmId, E> {
    let peer = request.server;
    let id = waiter.channel.create_id().map_err(|error| cm_error("rdma_create_id", error))?;
    let resolving = format!("resolving {} to an RDMA device (rdma_resolve_addr)", peer.ip());
    id.resolve_address(peer, RESOLVE_TIMEOUT).map_err(|error| cm_error(&resolving, error))?;
    waiter.expect(CmEventKind::AddressResolved, &resolving, give_up)?;
    expected.check(&id, &peer.ip().to_string())?;
    if let Some(tos) = request.type_of_service {
        id.set_type_of_service(tos).map_err(|source| VerbsError::RdmaCmTypeOfService { tos, source })?;
    }
    id.resolve_route(RESOLVE_TIMEOUT).map_err(|error| cm_error("rdma_resolve_route", error))?;
    waiter.expect(CmEventKind::RouteResolved, &format!("resolving the route to {}", peer.ip()), give_up)?;
    id.connect(queue_pair.qp_number(), &request.secret.private_data())
        .map_err(|error| cm_error("rdma_connect", error))?;
    let connecting = format!("connecting to {peer}");
    let reply = waiter.next(&connecting, give_up)?;
    match reply.kind {
        CmEventKind::ConnectResponse => {}
        CmEventKind::Rejected => {
            return Err(VerbsError::RdmaCmRejected {
                server: peer.to_string(),
                status: reply.status,
                reason: rejection_reason(&reply.private_data),
            }
            .into())
        }
        _ => return Err(unexpected(&connecting, &reply).into()),
    }
    ready(&id, queue_pair, path)?;
    id.establish().map_err(|error| cm_error("rdma_establish", error))?;
    Ok(id)
}

/// The reason a gdrperf server put in its rejection, if it is one ("gdrperf: ..."): printable
/// ASCII up to the CM's zero padding, or nothing.
fn rejection_reason(private_data: &[u8]) -> Option<String> {
    let text = private_data.split(|byte| *byte == 0).next().unwrap_or_default();
    let text = std::str::from_utf8(text).ok()?;
    (text.starts_with("gdrperf: ")
        && text.chars().all(|character| character.is_ascii_graphic() || character == ' '))
    .then(|| text.to_string())
}

/// RTR and RTS with rdma_cm's attributes for `id` (address vector, remote QP number, PSNs),
/// and the settings [`RcQueuePair::connect`] uses for everything else.
fn ready(id: &CmId, queue_pair: &mut RcQueuePair, path: &PathSettings) -> Result<()> {
    let mut ready_to_receive = id
        .qp_attributes(QueuePairState::ReadyToReceive)
        .map_err(|error| cm_error("rdma_init_qp_attr(RTR)", error))?;
    ready_to_receive
        .setup_path_mtu(path.mtu.to_sideway())
        .setup_max_dest_read_atomic(path.read_depth)
        .setup_min_rnr_timer(super::queue_pair::MIN_RNR_TIMER);
    queue_pair.modify(&ready_to_receive, "RTR")?;
    let mut ready_to_send = id
        .qp_attributes(QueuePairState::ReadyToSend)
        .map_err(|error| cm_error("rdma_init_qp_attr(RTS)", error))?;
    ready_to_send
        .setup_timeout(super::queue_pair::ACK_TIMEOUT)
        .setup_retry_cnt(7)
        .setup_rnr_retry(7)
        .setup_max_read_atomic(path.read_depth);
    queue_pair.modify(&ready_to_send, "RTS")
}

fn open_channel() -> Result<Arc<EventChannel>> {
    EventChannel::new().map_err(|error| VerbsError::ConnectionManagerCall {
        step: "rdma_create_event_channel".into(),
        source: Box::new(error),
        hint: "; -R needs librdmacm and the rdma_ucm kernel module (/dev/infiniband/rdma_cm)",
    })
}

/// An event other than the one a step waits for, as an error naming the step and the event.
fn unexpected(step: &str, event: &CmEvent) -> VerbsError {
    VerbsError::ConnectionManager { step: step.to_string(), detail: describe_event(event.kind, event.status) }
}

/// A failure event in words, with the hint a reader needs.
fn describe_event(event: CmEventKind, status: i32) -> String {
    let hint = match event {
        CmEventKind::AddressError => {
            ": the address does not resolve to an RDMA device (is it an address of an RDMA interface?)"
        }
        CmEventKind::RouteError => ": no route to it over RDMA",
        CmEventKind::Rejected => {
            ": the peer rejected it (is it started with -R, on the port its hello gave?)"
        }
        CmEventKind::Unreachable => ": the peer does not answer over RDMA",
        CmEventKind::ConnectError => ": the connection failed",
        _ => "",
    };
    format!("rdma_cm event {event:?} (status {status}){hint}")
}

/// A failed rdma_cm call at `step`, its error kept whole.
fn cm_error(step: &str, error: impl std::error::Error + Send + Sync + 'static) -> VerbsError {
    VerbsError::ConnectionManagerCall { step: step.to_string(), source: Box::new(error), hint: "" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn mapped(a: u8, b: u8, c: u8, d: u8) -> Gid {
        let mut raw = [0u8; 16];
        raw[10] = 0xff;
        raw[11] = 0xff;
        raw[12..].copy_from_slice(&[a, b, c, d]);
        Gid(raw)
    }

    #[test]
    fn loopback_goes_to_the_address_of_our_roce_gid() {
        let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
        assert_eq!(
            rdma_cm_address(loopback, Some(mapped(10, 0, 0, 7))),
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 7))
        );
        // Soft-RoCE on lo: its GID is 127.0.0.1 itself, kept.
        assert_eq!(rdma_cm_address(loopback, Some(mapped(127, 0, 0, 1))), loopback);
        // InfiniBand (no IPv4-mapped GID) and no GID at all: unchanged.
        let link_local = Gid([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(rdma_cm_address(loopback, Some(link_local)), loopback);
        assert_eq!(rdma_cm_address(loopback, None), loopback);
    }

    #[test]
    fn a_failed_call_keeps_its_error_and_names_the_step() {
        let error = cm_error("rdma_listen", std::io::Error::from_raw_os_error(98));
        assert!(error.to_string().starts_with("rdma_cm: rdma_listen: "), "{error}");
        let source = std::error::Error::source(&error);
        assert!(source.is_some_and(|source| source.is::<std::io::Error>()), "{source:?}");
    }

    #[test]
    fn a_gdrperf_rejection_is_shown_and_anything_else_is_not() {
        let mut data = b"gdrperf: wrong run secret".to_vec();
        data.resize(56, 0);
        assert_eq!(rejection_reason(&data).as_deref(), Some("gdrperf: wrong run secret"));
        assert_eq!(rejection_reason(&[0; 56]), None);
        assert_eq!(rejection_reason(b"gdrperf: \x1b[2J"), None);
        assert_eq!(rejection_reason(b"someone else"), None);
    }

    #[test]
    fn an_address_maps_to_the_gid_roce_gives_it() {
        assert_eq!(gid_of_address(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 10))), mapped(192, 0, 2, 10));
        assert_eq!(gid_of_address("::ffff:192.0.2.10".parse().unwrap()), mapped(192, 0, 2, 10));
        let v6: std::net::Ipv6Addr = "2001:db8::1".parse().unwrap();
        assert_eq!(gid_of_address(IpAddr::V6(v6)), Gid(v6.octets()));
    }

    #[test]
    fn another_host_is_left_alone() {
        let server = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));
        assert_eq!(rdma_cm_address(server, Some(mapped(192, 0, 2, 1))), server);
    }
}
