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
//! and we apply them. sideway's `rdmacm` module wraps all of that, so nothing here is `unsafe`.
//! Two consequences: the device rdma_cm resolves the address to must be the one the run opened
//! (checked, with the fix in the error), and the attributes both paths share (MTU, read depth,
//! RNR timer, retry counts) are set as [`RcQueuePair::connect`] sets them, so `-R` changes how
//! the peer is found, never what is measured.
//!
//! sideway's `ConnectionParameter` sets only the QP number (its default advertises one outstanding
//! READ each way, retry counts 7, no private data). That is enough: with user-managed QPs the
//! CM's advertised read depths reach no QP, each side sets its own from [`PathSettings`] (both
//! gdrperf, both the same), so nothing needs a raw binding.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sideway::ibverbs::queue_pair::{QueuePairAttribute, QueuePairState};
use sideway::rdmacm::communication_manager::{
    ConnectionParameter, Event, EventChannel, EventType, GetEventErrorKind, Identifier, PortSpace,
};

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

/// This side's rdma_cm state for one set of QPs: a server's listener until its QPs are connected,
/// then the cm ids of the connections, kept as long as the QPs (dropping one sends a disconnect).
pub struct CmEnd {
    channel: Arc<EventChannel>,
    listener: Option<Arc<Identifier>>,
    listening_port: Option<u16>,
    connections: Vec<Arc<Identifier>>,
    /// How the connections were made, for the run header ("to 192.0.2.2 rdma_cm port 18515").
    made: String,
}

impl CmEnd {
    /// A client's end: an event channel, no listener.
    pub fn client() -> Result<CmEnd> {
        Ok(CmEnd {
            channel: open_channel()?,
            listener: None,
            listening_port: None,
            connections: Vec::new(),
            made: String::new(),
        })
    }

    /// A server's end, listening on `address` at the first free rdma_cm port from `first_port`
    /// on. Listening starts before the hellos are swapped, so a client never meets a closed port.
    pub fn server(address: IpAddr, first_port: u16) -> Result<CmEnd> {
        let channel = open_channel()?;
        let mut last_error = None;
        for port in (0..PORTS_TRIED).filter_map(|offset| first_port.checked_add(offset)) {
            let listener =
                channel.create_id(PortSpace::Tcp).map_err(|error| cm_error("rdma_create_id", error))?;
            match listener.bind_addr(SocketAddr::new(address, port)) {
                Ok(()) => {
                    listener.listen(64).map_err(|error| cm_error("rdma_listen", error))?;
                    return Ok(CmEnd {
                        channel,
                        listener: Some(listener),
                        listening_port: Some(port),
                        connections: Vec::new(),
                        made: String::new(),
                    });
                }
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

    /// The rdma_cm port a server listens on (for its hello); `None` on a client.
    pub fn listening_port(&self) -> Option<u16> {
        self.listening_port
    }

    /// Connects `queue_pairs` in order. A server accepts one connection request per QP on its
    /// listener; a client connects each to `peer` (the server's address and rdma_cm port). Each QP
    /// goes INIT -> RTR -> RTS with rdma_cm's attributes (address vector, QP numbers, PSNs) and
    /// `path`'s settings. `give_up` is asked while waiting: an error it returns (the peer reported
    /// a failure on the control channel) ends the wait; so does `timeout` for each QP. The error
    /// type is the caller's, so that its reason for giving up comes back to it unchanged.
    pub fn connect<E: From<VerbsError>>(
        &mut self,
        device: &Device,
        queue_pairs: &mut [RcQueuePair],
        path: &PathSettings,
        peer: Option<SocketAddr>,
        timeout: Duration,
        give_up: &mut dyn FnMut() -> Option<E>,
    ) -> Result<(), E> {
        let expected = DeviceMatch::of(device, path.port)?;
        for queue_pair in queue_pairs.iter_mut() {
            let waiter = Waiter { channel: &self.channel, deadline: Instant::now() + timeout };
            let id = match (&self.listener, peer) {
                (Some(_), _) => accept_one(&waiter, &expected, queue_pair, path, give_up)?,
                (None, Some(peer)) => connect_one(&waiter, &expected, queue_pair, path, peer, give_up)?,
                (None, None) => return Err(VerbsError::NoServerAddress.into()),
            };
            self.connections.push(id);
        }
        // All QPs are connected: the port is free for the next set (a later lane or placement).
        self.listener = None;
        self.made = match (peer, self.listening_port) {
            (Some(peer), _) => format!("to {} rdma_cm port {}", peer.ip(), peer.port()),
            (None, Some(port)) => format!("accepted on rdma_cm port {port}"),
            (None, None) => String::new(),
        };
        Ok(())
    }
}

/// How a run's QPs were connected, for its header and metadata: through rdma_cm (`-R`), with
/// the address or port, or from the hellos on the TCP channel.
pub fn describe(rdma_cm: Option<&CmEnd>) -> String {
    match rdma_cm {
        Some(end) => format!(
            "rdma_cm (-R): {} connection(s) {}, address and route resolved by the RDMA CM",
            end.connections.len(),
            end.made
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

/// The device and port a cm id must land on: the ones our QPs were made on.
struct DeviceMatch {
    name: String,
    guid: u64,
    port: u8,
}

impl DeviceMatch {
    fn of(device: &Device, port: u8) -> Result<DeviceMatch> {
        let attributes = device.context()?.query_device().map_err(|error| VerbsError::QueryDevice {
            device: device.name().to_string(),
            source: std::io::Error::other(error),
        })?;
        Ok(DeviceMatch { name: device.name().to_string(), guid: attributes.node_guid().as_u64(), port })
    }

    /// rdma_cm picked a device by routing `address`: it must be ours, or our QP numbers mean
    /// nothing to it.
    fn check(&self, id: &Identifier, address: &str) -> Result<()> {
        let context = id.get_device_context().ok_or_else(|| VerbsError::ConnectionManager {
            step: format!("address {address}"),
            detail: "rdma_cm bound it to no RDMA device".into(),
        })?;
        let guid = context.query_device().map(|attributes| attributes.node_guid().as_u64()).ok();
        if guid != Some(self.guid) || id.port() != self.port {
            return Err(VerbsError::RdmaCmRoute {
                address: address.to_string(),
                guid: guid.unwrap_or(0),
                port: id.port(),
                device: self.name.clone(),
                device_port: self.port,
            });
        }
        Ok(())
    }
}

/// Waits for CM events on one channel, within a deadline.
struct Waiter<'a> {
    channel: &'a Arc<EventChannel>,
    deadline: Instant,
}

impl Waiter<'_> {
    /// The next event, which must be `wanted` (for `step`); a failure event becomes an error
    /// naming `step` and the event.
    fn expect<E: From<VerbsError>>(
        &self,
        wanted: EventType,
        step: &str,
        give_up: &mut dyn FnMut() -> Option<E>,
    ) -> Result<Event, E> {
        loop {
            match self.channel.get_cm_event() {
                Ok(event) if event.event_type() == wanted => return Ok(event),
                Ok(event) => {
                    return Err(VerbsError::ConnectionManager {
                        step: step.to_string(),
                        detail: describe_event(&event.event_type(), event.status()),
                    }
                    .into())
                }
                Err(error) if matches!(error.0, GetEventErrorKind::NoEvent) => {}
                Err(error) => return Err(cm_error("rdma_get_cm_event", error).into()),
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
}

/// Server: one connection request, for `queue_pair`; its QP taken to RTS, then accepted.
fn accept_one<E: From<VerbsError>>(
    waiter: &Waiter,
    expected: &DeviceMatch,
    queue_pair: &mut RcQueuePair,
    path: &PathSettings,
    give_up: &mut dyn FnMut() -> Option<E>,
) -> Result<Arc<Identifier>, E> {
    let request =
        waiter.expect(EventType::ConnectRequest, "waiting for the client's rdma_cm connection", give_up)?;
    let id = request.cm_id().ok_or(VerbsError::RequestWithoutId)?;
    drop(request);
    let result = (|| {
        expected.check(&id, "the client's connection request")?;
        ready(&id, queue_pair, path)?;
        let mut parameters = ConnectionParameter::default();
        parameters.setup_qp_number(queue_pair.qp_number());
        id.accept(parameters).map_err(|error| cm_error("rdma_accept", error))?;
        waiter.expect(EventType::Established, "waiting for the client to establish the connection", give_up)
    })();
    result.map(|_established| id)
}

/// Client: resolves `peer` and its route, connects `queue_pair` to it, completes on the reply.
fn connect_one<E: From<VerbsError>>(
    waiter: &Waiter,
    expected: &DeviceMatch,
    queue_pair: &mut RcQueuePair,
    path: &PathSettings,
    peer: SocketAddr,
    give_up: &mut dyn FnMut() -> Option<E>,
) -> Result<Arc<Identifier>, E> {
    let id = waiter.channel.create_id(PortSpace::Tcp).map_err(|error| cm_error("rdma_create_id", error))?;
    let resolving = format!("resolving {} to an RDMA device (rdma_resolve_addr)", peer.ip());
    id.resolve_addr(None, peer, RESOLVE_TIMEOUT).map_err(|error| cm_error(&resolving, error))?;
    waiter.expect(EventType::AddressResolved, &resolving, give_up)?;
    expected.check(&id, &peer.ip().to_string())?;
    id.resolve_route(RESOLVE_TIMEOUT).map_err(|error| cm_error("rdma_resolve_route", error))?;
    waiter.expect(EventType::RouteResolved, &format!("resolving the route to {}", peer.ip()), give_up)?;
    let mut parameters = ConnectionParameter::default();
    parameters.setup_qp_number(queue_pair.qp_number());
    id.connect(parameters).map_err(|error| cm_error("rdma_connect", error))?;
    let connecting = format!("connecting to {peer} (is the server started with -R?)");
    let reply = waiter.expect(EventType::ConnectResponse, &connecting, give_up)?;
    drop(reply);
    ready(&id, queue_pair, path)?;
    id.establish().map_err(|error| cm_error("rdma_establish", error))?;
    Ok(id)
}

/// RTR and RTS with rdma_cm's attributes for `id` (address vector, remote QP number, PSNs),
/// and the settings [`RcQueuePair::connect`] uses for everything else.
fn ready(id: &Identifier, queue_pair: &mut RcQueuePair, path: &PathSettings) -> Result<()> {
    let mut ready_to_receive = id
        .get_qp_attr(QueuePairState::ReadyToReceive)
        .map_err(|error| cm_error("rdma_init_qp_attr(RTR)", error))?;
    ready_to_receive
        .setup_path_mtu(path.mtu.to_sideway())
        .setup_max_dest_read_atomic(path.read_depth)
        .setup_min_rnr_timer(super::queue_pair::MIN_RNR_TIMER);
    queue_pair.modify(&ready_to_receive, "RTR")?;
    let mut ready_to_send: QueuePairAttribute = id
        .get_qp_attr(QueuePairState::ReadyToSend)
        .map_err(|error| cm_error("rdma_init_qp_attr(RTS)", error))?;
    ready_to_send
        .setup_timeout(super::queue_pair::ACK_TIMEOUT)
        .setup_retry_cnt(7)
        .setup_rnr_retry(7)
        .setup_max_read_atomic(path.read_depth);
    queue_pair.modify(&ready_to_send, "RTS")
}

fn open_channel() -> Result<Arc<EventChannel>> {
    let channel = EventChannel::new().map_err(|error| VerbsError::ConnectionManagerCall {
        step: "rdma_create_event_channel".into(),
        source: Box::new(error),
        hint: "; -R needs librdmacm and the rdma_ucm kernel module (/dev/infiniband/rdma_cm)",
    })?;
    channel
        .set_nonblocking(true)
        .map_err(|error| cm_error("setting the event channel non-blocking", error))?;
    Ok(channel)
}

/// A failure event in words, with the hint a reader needs.
fn describe_event(event: &EventType, status: i32) -> String {
    let hint = match event {
        EventType::AddressError => {
            ": the address does not resolve to an RDMA device (is it an address of an RDMA interface?)"
        }
        EventType::RouteError => ": no route to it over RDMA",
        EventType::Rejected => ": the peer rejected it (is it started with -R, on the port its hello gave?)",
        EventType::Unreachable => ": the peer does not answer over RDMA",
        EventType::ConnectError => ": the connection failed",
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
    fn another_host_is_left_alone() {
        let server = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));
        assert_eq!(rdma_cm_address(server, Some(mapped(192, 0, 2, 1))), server);
    }
}
