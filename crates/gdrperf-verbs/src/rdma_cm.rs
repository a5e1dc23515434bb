//! librdmacm's calls that `-R` needs and sideway 0.4.3 does not expose, as safe RAII types: a
//! connection request's source address and private data, private data in `rdma_connect`,
//! `rdma_reject`, and `rdma_set_option(RDMA_OPTION_ID_TOS)`.
//!
//! The calls go through rdma-mummy-sys, the raw layer under sideway (it dlopens librdmacm, so a
//! node without it fails at the first call, with the hint in the error, not at start-up). The
//! QPs stay ours (user-managed QP mode): `rdma_init_qp_attr` gives each transition's attributes
//! as an `ibv_qp_attr`, which sideway's [`QueuePairAttribute::from`] turns into what
//! [`crate::RcQueuePair`] applies.
//!
//! Ownership follows librdmacm's rules: a [`CmId`] keeps its [`EventChannel`] alive (a channel is
//! destroyed after its ids), and every event is copied into an owned [`CmEvent`] and acknowledged
//! at once, inside [`EventChannel::next_event`], so that `rdma_destroy_id` (which waits for the
//! id's events to be acknowledged) never blocks on one of ours.

use std::ffi::{c_void, CStr};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;

use rdma_mummy_sys::{
    ibv_qp_attr, rdma_accept, rdma_ack_cm_event, rdma_bind_addr, rdma_cm_event, rdma_cm_event_type,
    rdma_cm_id, rdma_conn_param, rdma_connect, rdma_create_event_channel, rdma_create_id,
    rdma_destroy_event_channel, rdma_destroy_id, rdma_establish, rdma_event_channel, rdma_get_cm_event,
    rdma_init_qp_attr, rdma_listen, rdma_port_space, rdma_reject, rdma_resolve_addr, rdma_resolve_route,
    rdma_set_option,
};
use sideway::ibverbs::queue_pair::{QueuePairAttribute, QueuePairState};

/// `RDMA_OPTION_ID` and `RDMA_OPTION_ID_TOS` of `<rdma/rdma_cma.h>` (an anonymous enum there,
/// which bindgen does not carry over): the level and the name of the type-of-service option.
const RDMA_OPTION_ID: i32 = 0;
const RDMA_OPTION_ID_TOS: i32 = 0;

/// The most private data `rdma_connect` carries in the TCP port space (`RDMA_PS_TCP`: the IB CM
/// REQ's 92 bytes less rdma_cm's 36-byte header, rdma_cma.h's note on `rdma_connect`).
pub const CONNECT_PRIVATE_DATA_MAX: usize = 56;

/// The kinds of event the connection set-up waits for; any other is [`CmEventKind::Other`],
/// named by librdmacm's `rdma_event_str` number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmEventKind {
    AddressResolved,
    AddressError,
    RouteResolved,
    RouteError,
    ConnectRequest,
    ConnectResponse,
    ConnectError,
    Unreachable,
    Rejected,
    Established,
    Disconnected,
    Other(u32),
}

impl CmEventKind {
    fn of(raw: u32) -> CmEventKind {
        use rdma_cm_event_type as raw_kind;
        match raw {
            raw_kind::RDMA_CM_EVENT_ADDR_RESOLVED => CmEventKind::AddressResolved,
            raw_kind::RDMA_CM_EVENT_ADDR_ERROR => CmEventKind::AddressError,
            raw_kind::RDMA_CM_EVENT_ROUTE_RESOLVED => CmEventKind::RouteResolved,
            raw_kind::RDMA_CM_EVENT_ROUTE_ERROR => CmEventKind::RouteError,
            raw_kind::RDMA_CM_EVENT_CONNECT_REQUEST => CmEventKind::ConnectRequest,
            raw_kind::RDMA_CM_EVENT_CONNECT_RESPONSE => CmEventKind::ConnectResponse,
            raw_kind::RDMA_CM_EVENT_CONNECT_ERROR => CmEventKind::ConnectError,
            raw_kind::RDMA_CM_EVENT_UNREACHABLE => CmEventKind::Unreachable,
            raw_kind::RDMA_CM_EVENT_REJECTED => CmEventKind::Rejected,
            raw_kind::RDMA_CM_EVENT_ESTABLISHED => CmEventKind::Established,
            raw_kind::RDMA_CM_EVENT_DISCONNECTED => CmEventKind::Disconnected,
            other => CmEventKind::Other(other),
        }
    }
}

/// One event, copied out of librdmacm's and already acknowledged.
pub struct CmEvent {
    pub kind: CmEventKind,
    pub status: i32,
    /// Which id it is about (compared with [`CmId::same_as`]; never dereferenced).
    id: usize,
    /// The private data it carried (a connection request's, a rejection's), as received: the
    /// CM pads it to its full size with zeros.
    pub private_data: Vec<u8>,
    /// A connection request's new id, ours to accept or reject (and to destroy, by dropping it).
    pub request: Option<CmId>,
}

impl CmEvent {
    /// Whether this event is about `id`.
    pub fn is_about(&self, id: &CmId) -> bool {
        self.id == id.id.as_ptr() as usize
    }
}

/// An rdma_cm event channel (`rdma_create_event_channel`), non-blocking: waits poll it, so that
/// they can also watch the control channel and a deadline.
pub struct EventChannel {
    channel: NonNull<rdma_event_channel>,
}

// SAFETY: the channel is a file descriptor and librdmacm's calls on it are thread-safe; no
// Rust-side state is shared.
unsafe impl Send for EventChannel {}
unsafe impl Sync for EventChannel {}

impl Drop for EventChannel {
    fn drop(&mut self) {
        // SAFETY: created by rdma_create_event_channel; every CmId holds an Arc of this channel,
        // so none is left when this runs.
        unsafe { rdma_destroy_event_channel(self.channel.as_ptr()) }
    }
}

impl EventChannel {
    pub fn new() -> io::Result<Arc<EventChannel>> {
        // SAFETY: no arguments; null on failure with errno set.
        let raw = unsafe { rdma_create_event_channel() };
        let channel = NonNull::new(raw).ok_or_else(io::Error::last_os_error)?;
        let channel = Arc::new(EventChannel { channel });
        // SAFETY: the channel is valid; reading its fd field is reading plain data.
        let fd = unsafe { (*channel.channel.as_ptr()).fd };
        // SAFETY: fcntl on a descriptor this channel owns; flags only.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        // SAFETY: as above.
        if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(channel)
    }

    /// A new id on this channel, in the TCP port space (reliable connections, as perftest's -R).
    pub fn create_id(self: &Arc<Self>) -> io::Result<CmId> {
        let mut raw: *mut rdma_cm_id = std::ptr::null_mut();
        // SAFETY: the channel is valid; `raw` receives the new id; no context pointer is given.
        let status = unsafe {
            rdma_create_id(
                self.channel.as_ptr(),
                &mut raw,
                std::ptr::null_mut(),
                rdma_port_space::RDMA_PS_TCP,
            )
        };
        check(status)?;
        let id = NonNull::new(raw).ok_or_else(|| io::Error::other("rdma_create_id gave no id"))?;
        Ok(CmId { id, _channel: Arc::clone(self) })
    }

    /// The next event, if one is waiting; copied out and acknowledged before it is returned.
    pub fn next_event(self: &Arc<Self>) -> io::Result<Option<CmEvent>> {
        let mut raw: *mut rdma_cm_event = std::ptr::null_mut();
        // SAFETY: the channel is valid; `raw` receives an event librdmacm owns until it is acked.
        let status = unsafe { rdma_get_cm_event(self.channel.as_ptr(), &mut raw) };
        if status != 0 {
            let error = io::Error::last_os_error();
            return match error.kind() {
                io::ErrorKind::WouldBlock => Ok(None),
                _ => Err(error),
            };
        }
        let event = NonNull::new(raw).ok_or_else(|| io::Error::other("rdma_get_cm_event gave no event"))?;
        // SAFETY: a successful get gives a valid event until it is acknowledged below; the
        // private data pointer, when not null, holds `private_data_len` bytes inside it.
        let copied = unsafe {
            let event = event.as_ref();
            let kind = CmEventKind::of(event.event);
            let parameters = event.param.conn;
            let private_data = match parameters.private_data.is_null() {
                true => Vec::new(),
                false => std::slice::from_raw_parts(
                    parameters.private_data.cast::<u8>(),
                    usize::from(parameters.private_data_len),
                )
                .to_vec(),
            };
            // A connection request's id is new, made by librdmacm for us (on this channel).
            let request = match (kind, NonNull::new(event.id)) {
                (CmEventKind::ConnectRequest, Some(id)) => Some(CmId { id, _channel: Arc::clone(self) }),
                _ => None,
            };
            CmEvent { kind, status: event.status, id: event.id as usize, private_data, request }
        };
        // SAFETY: the event came from rdma_get_cm_event and is acknowledged once; nothing of it
        // is used after this (the private data was copied).
        check(unsafe { rdma_ack_cm_event(event.as_ptr()) })?;
        Ok(Some(copied))
    }
}

/// One rdma_cm id (`rdma_create_id`, or a connection request's), destroyed on drop
/// (`rdma_destroy_id`, which disconnects a connected one).
pub struct CmId {
    id: NonNull<rdma_cm_id>,
    _channel: Arc<EventChannel>,
}

// SAFETY: librdmacm's calls on one id are made from one thread at a time here (CmId is not
// Sync), and an id may move between threads.
unsafe impl Send for CmId {}

impl Drop for CmId {
    fn drop(&mut self) {
        // SAFETY: the id is valid and ours; its events were all acknowledged in next_event, so
        // the call does not wait. A failure leaves nothing to do.
        unsafe { rdma_destroy_id(self.id.as_ptr()) };
    }
}

impl CmId {
    pub fn same_as(&self, other: &CmId) -> bool {
        self.id == other.id
    }

    pub fn bind(&self, address: SocketAddr) -> io::Result<()> {
        let (mut storage, _) = to_storage(address);
        // SAFETY: a valid id and a sockaddr_storage holding the address; librdmacm copies it.
        check(unsafe { rdma_bind_addr(self.id.as_ptr(), (&raw mut storage).cast()) })
    }

    pub fn listen(&self, backlog: i32) -> io::Result<()> {
        // SAFETY: a valid, bound id.
        check(unsafe { rdma_listen(self.id.as_ptr(), backlog) })
    }

    pub fn resolve_address(&self, destination: SocketAddr, timeout: Duration) -> io::Result<()> {
        let (mut storage, _) = to_storage(destination);
        let milliseconds = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: a valid id, no source address, the destination in a sockaddr_storage that
        // librdmacm copies.
        check(unsafe {
            rdma_resolve_addr(self.id.as_ptr(), std::ptr::null_mut(), (&raw mut storage).cast(), milliseconds)
        })
    }

    pub fn resolve_route(&self, timeout: Duration) -> io::Result<()> {
        let milliseconds = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: a valid id whose address is resolved.
        check(unsafe { rdma_resolve_route(self.id.as_ptr(), milliseconds) })
    }

    /// `rdma_set_option(RDMA_OPTION_ID, RDMA_OPTION_ID_TOS)`: the type of service of this id's
    /// connection (on RoCE the IP header's DSCP and ECN byte, the GRH traffic class), set after
    /// the address is resolved and before the route is, as perftest does.
    pub fn set_type_of_service(&self, tos: u8) -> io::Result<()> {
        let mut value = tos;
        // SAFETY: a valid id; the option value is one byte, as rdma_cma.h documents for TOS,
        // read during the call.
        check(unsafe {
            rdma_set_option(
                self.id.as_ptr(),
                RDMA_OPTION_ID,
                RDMA_OPTION_ID_TOS,
                (&raw mut value).cast::<c_void>(),
                std::mem::size_of::<u8>(),
            )
        })
    }

    /// Connects to the resolved route: QP number `qp_number` (a user-managed QP) and
    /// `private_data` (at most [`CONNECT_PRIVATE_DATA_MAX`] bytes) for the listener to check.
    pub fn connect(&self, qp_number: u32, private_data: &[u8]) -> io::Result<()> {
        let mut parameters = connection_parameters(qp_number, private_data)?;
        // SAFETY: a valid id; the parameters and the private data they point to live through
        // the call, which copies them.
        check(unsafe { rdma_connect(self.id.as_ptr(), &mut parameters) })
    }

    /// Accepts a connection request with our QP `qp_number`.
    pub fn accept(&self, qp_number: u32) -> io::Result<()> {
        let mut parameters = connection_parameters(qp_number, &[])?;
        // SAFETY: a valid connection-request id; the parameters live through the call.
        check(unsafe { rdma_accept(self.id.as_ptr(), &mut parameters) })
    }

    /// Rejects a connection request, with `reason` (ASCII, cut to what the CM carries) in the
    /// rejection's private data for the requester to show.
    pub fn reject(&self, reason: &[u8]) -> io::Result<()> {
        let reason = &reason[..reason.len().min(CONNECT_PRIVATE_DATA_MAX)];
        // SAFETY: a valid connection-request id; the reason lives through the call, which
        // copies it; its length fits the u8.
        check(unsafe { rdma_reject(self.id.as_ptr(), reason.as_ptr().cast(), reason.len() as u8) })
    }

    pub fn establish(&self) -> io::Result<()> {
        // SAFETY: a valid id that received its connect response.
        check(unsafe { rdma_establish(self.id.as_ptr()) })
    }

    /// The attributes that take a QP to `state` on this id's connection.
    pub fn qp_attributes(&self, state: QueuePairState) -> io::Result<QueuePairAttribute> {
        let mut attributes = std::mem::MaybeUninit::<ibv_qp_attr>::zeroed();
        let mut mask = 0;
        // SAFETY: a zeroed ibv_qp_attr whose qp_state tells rdma_init_qp_attr which transition.
        unsafe { (*attributes.as_mut_ptr()).qp_state = state as _ };
        // SAFETY: a valid id, the zeroed struct and the mask, both filled by the call.
        check(unsafe { rdma_init_qp_attr(self.id.as_ptr(), attributes.as_mut_ptr(), &mut mask) })?;
        // SAFETY: zero-initialised and filled by a successful call.
        Ok(QueuePairAttribute::from(unsafe { attributes.assume_init_ref() }, mask))
    }

    /// The RDMA device and port rdma_cm bound this id to (`None` before it is bound to one).
    pub fn device(&self) -> Option<(String, u8)> {
        // SAFETY: a valid id; `verbs` is null or a device context librdmacm keeps open while the
        // id lives, whose device name is a NUL-terminated string of the device list.
        unsafe {
            let id = self.id.as_ref();
            let context = id.verbs.as_ref()?;
            let name = rdma_mummy_sys::ibv_get_device_name(context.device);
            (!name.is_null()).then(|| (CStr::from_ptr(name).to_string_lossy().into_owned(), id.port_num))
        }
    }

    /// The address at the other end: on a connection request, where the request came from.
    pub fn peer_address(&self) -> Option<IpAddr> {
        // SAFETY: a valid id; its route's destination address is plain data librdmacm filled.
        from_storage(unsafe { &self.id.as_ref().route.addr.dst_addr_union.dst_storage })
    }

    /// The address at this end: on a connection request, the address the request came to.
    pub fn local_address(&self) -> Option<IpAddr> {
        // SAFETY: as for peer_address.
        from_storage(unsafe { &self.id.as_ref().route.addr.src_addr_union.src_storage })
    }
}

fn connection_parameters(qp_number: u32, private_data: &[u8]) -> io::Result<rdma_conn_param> {
    if private_data.len() > CONNECT_PRIVATE_DATA_MAX {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "private data over the CM's 56 bytes"));
    }
    // The read depths are advertised as sideway's default does (one each way): with
    // user-managed QPs they reach no QP, each side sets its own (connection_manager's module doc).
    Ok(rdma_conn_param {
        private_data: match private_data.is_empty() {
            true => std::ptr::null(),
            false => private_data.as_ptr().cast(),
        },
        private_data_len: private_data.len() as u8,
        responder_resources: 1,
        initiator_depth: 1,
        flow_control: 0,
        retry_count: 7,
        rnr_retry_count: 7,
        srq: 0,
        qp_num: qp_number,
    })
}

/// A librdmacm status: 0, or -1 with errno set.
fn check(status: i32) -> io::Result<()> {
    match status {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

fn to_storage(address: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data for which all zeroes is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match address {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from(*v4.ip()).to_be() },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&raw mut storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: v6.ip().octets() },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&raw mut storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// An IPv4 or IPv6 address out of a sockaddr_storage; `None` for another family (AF_IB) or none.
fn from_storage(storage: &libc::sockaddr_storage) -> Option<IpAddr> {
    match i32::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let sin = unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let sin6 = unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_go_through_sockaddr_storage_and_back() {
        for address in ["192.0.2.10:18515", "[2001:db8::7]:4791"] {
            let address: SocketAddr = address.parse().unwrap();
            let (storage, _) = to_storage(address);
            assert_eq!(from_storage(&storage), Some(address.ip()));
        }
        // SAFETY: all zeroes is a valid sockaddr_storage (family AF_UNSPEC).
        let empty: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        assert_eq!(from_storage(&empty), None);
    }

    #[test]
    fn private_data_over_the_cm_limit_is_refused_before_any_call() {
        assert!(connection_parameters(7, &[0; CONNECT_PRIVATE_DATA_MAX]).is_ok());
        let refused = connection_parameters(7, &[0; CONNECT_PRIVATE_DATA_MAX + 1]);
        assert!(refused.is_err_and(|error| error.kind() == io::ErrorKind::InvalidInput));
    }
}
