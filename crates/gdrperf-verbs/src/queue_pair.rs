//! Reliable-connected queue pairs: creation, the INIT -> RTR -> RTS handshake, posting.
//!
//! A QP is born in RESET and is moved to INIT here. Its peer's [`Endpoint`] (QP number, packet
//! sequence number, LID/GID) arrives out of band; [`RcQueuePair::connect`] then takes it to
//! ready-to-receive and ready-to-send. We use the extended QP API (`ibv_wr_*`): posting through
//! it allocates nothing, unlike sideway's basic post path.

use std::io;
use std::ptr::null_mut;

use rdma_mummy_sys::{ibv_post_recv, ibv_recv_wr, ibv_sge};
use serde::{Deserialize, Serialize};
use sideway::ibverbs::address::{AddressHandleAttribute, Gid as SidewayGid};
use sideway::ibverbs::queue_pair::{
    ExtendedQueuePair, PostSendGuard, QueuePair, QueuePairAttribute, QueuePairState, SendOperationFlags,
    SetInlineData, SetScatterGatherEntry, WorkRequestFlags,
};
use std::sync::Arc;

use crate::device::{Gid, GidChoice, Mtu};
use crate::memory::{LocalSlice, RemoteAccess};
use crate::protection_domain::{Backend, ProtectionDomain};
pub use crate::work_request::{Inline, Operation, SendRequest};
use crate::{simulated, CompletionQueue, Result, VerbsError};

/// How deep the queues of a new QP are and how much data a send may carry inline.
#[derive(Debug, Clone, Copy)]
pub struct QueuePairSizes {
    pub send_depth: u32,
    pub recv_depth: u32,
    pub max_inline: u32,
}

/// What a peer needs to address our QP: exchanged over TCP before connecting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    pub qp_number: u32,
    pub psn: u32,
    pub lid: u16,
    /// Present on RoCE (and on IB when a GID index was asked for): then the GRH routes.
    pub gid: Option<Gid>,
}

/// Path settings both ends must agree on; the smaller MTU of the two ports wins.
#[derive(Debug, Clone, Copy)]
pub struct PathSettings {
    pub port: u8,
    pub mtu: Mtu,
    pub local_gid: Option<GidChoice>,
    /// Outstanding RDMA READs a QP may issue and accept (bounded by the device).
    pub read_depth: u8,
    /// InfiniBand service level (`-S`), in the address vector.
    pub service_level: u8,
    /// The GRH's traffic class (`-T`; RoCE: the IP header's DSCP and ECN byte), where a GRH is used.
    pub traffic_class: u8,
}

/// The receiver's RNR NAK timer (IB encoding 12: 0.64 ms), with rdma_cm as without it.
pub(crate) const MIN_RNR_TIMER: u8 = 12;

/// The local ACK timeout (IB encoding 14: 4.096 us x 2^14, about 67 ms), with rdma_cm as without it.
pub(crate) const ACK_TIMEOUT: u8 = 14;

/// A reliable-connected queue pair.
pub struct RcQueuePair {
    queue_pair: QueuePairBackend,
    psn: u32,
    sizes: QueuePairSizes,
}

/// A real device's QP, or the simulated NIC's.
enum QueuePairBackend {
    Verbs(ExtendedQueuePair),
    Simulated(simulated::QueuePairHandle),
}

impl RcQueuePair {
    /// Creates the QP on `pd`, both queues completing into `cq`, and moves it to INIT, letting
    /// the peer's requests do `access` (as the regions it will reach; see [`RemoteAccess`]).
    pub fn new(
        pd: &Arc<ProtectionDomain>,
        cq: &CompletionQueue,
        sizes: QueuePairSizes,
        port: u8,
        access: RemoteAccess,
    ) -> Result<RcQueuePair> {
        let (pd, handle) = match (pd.backend(), cq.handle(), cq.simulated()) {
            (Backend::Verbs(pd), Some(handle), _) => (pd, handle),
            (Backend::Simulated(pd), _, Some(cq)) => {
                let queue_pair = QueuePairBackend::Simulated(simulated::create_qp(
                    pd,
                    cq,
                    (sizes.send_depth, sizes.recv_depth, sizes.max_inline),
                    access.flags(),
                ));
                return Ok(RcQueuePair { queue_pair, psn: random_psn(), sizes });
            }
            _ => {
                return Err(VerbsError::CreateQp {
                    send_depth: sizes.send_depth,
                    recv_depth: sizes.recv_depth,
                    source: io::Error::other("the protection domain and the CQ are of different devices"),
                })
            }
        };
        let mut builder = pd.create_qp_builder();
        if access == RemoteAccess::Atomic {
            // sideway's extended QP offers SEND, WRITE and READ only unless told; the atomics
            // are asked for where the test runs them (both sides of atomic_lat share its access).
            builder.setup_send_ops_flags(
                SendOperationFlags::Send
                    | SendOperationFlags::SendWithImmediate
                    | SendOperationFlags::Write
                    | SendOperationFlags::WriteWithImmediate
                    | SendOperationFlags::Read
                    | SendOperationFlags::AtomicFetchAndAdd
                    | SendOperationFlags::AtomicCompareAndSwap,
            );
        }
        let mut queue_pair = builder
            .setup_send_cq(handle.clone())
            .setup_recv_cq(handle)
            .setup_max_send_wr(sizes.send_depth)
            .setup_max_recv_wr(sizes.recv_depth)
            .setup_max_inline_data(sizes.max_inline)
            .build_ex()
            .map_err(|error| VerbsError::CreateQp {
                send_depth: sizes.send_depth,
                recv_depth: sizes.recv_depth,
                source: io::Error::other(error),
            })?;
        let mut attributes = QueuePairAttribute::new();
        attributes
            .setup_state(QueuePairState::Init)
            .setup_pkey_index(0)
            .setup_port(port)
            .setup_access_flags(access.flags());
        queue_pair.modify(&attributes).map_err(|error| modify_error("INIT", error))?;
        Ok(RcQueuePair { queue_pair: QueuePairBackend::Verbs(queue_pair), psn: random_psn(), sizes })
    }

    /// The service level and the GRH's traffic class the QP's address holds, read back with
    /// `ibv_query_qp` after [`RcQueuePair::connect`]: what `-S` and `-T` really reached (the run
    /// header prints them; the VM test 10-write-bw checks them on rxe). `None` if the query fails.
    pub fn address_quality_of_service(&self) -> Option<(u8, u8)> {
        let queue_pair = match &self.queue_pair {
            QueuePairBackend::Verbs(queue_pair) => queue_pair,
            QueuePairBackend::Simulated(queue_pair) => return queue_pair.quality_of_service(),
        };
        let mut attributes = std::mem::MaybeUninit::<rdma_mummy_sys::ibv_qp_attr>::zeroed();
        let mut init = std::mem::MaybeUninit::<rdma_mummy_sys::ibv_qp_init_attr>::zeroed();
        let mask = rdma_mummy_sys::ibv_qp_attr_mask::IBV_QP_AV.0 as i32;
        // SAFETY: the QP lives as long as `self`; both structs are plain C data, zeroed, that
        // ibv_query_qp fills, and it keeps no pointer to them.
        let status = unsafe {
            rdma_mummy_sys::ibv_query_qp(
                queue_pair.qp().as_ptr(),
                attributes.as_mut_ptr(),
                mask,
                init.as_mut_ptr(),
            )
        };
        if status != 0 {
            return None;
        }
        // SAFETY: zero-initialised and filled by a successful query.
        let attributes = unsafe { attributes.assume_init() };
        Some((attributes.ah_attr.sl, attributes.ah_attr.grh.traffic_class))
    }

    pub fn qp_number(&self) -> u32 {
        match &self.queue_pair {
            QueuePairBackend::Verbs(queue_pair) => queue_pair.qp_number(),
            QueuePairBackend::Simulated(queue_pair) => queue_pair.number(),
        }
    }

    pub fn sizes(&self) -> QueuePairSizes {
        self.sizes
    }

    /// Our half of the handshake.
    pub fn endpoint(&self, lid: u16, gid: Option<GidChoice>) -> Endpoint {
        Endpoint { qp_number: self.qp_number(), psn: self.psn, lid, gid: gid.map(|choice| choice.gid) }
    }

    /// INIT -> RTR -> RTS towards `remote`.
    pub fn connect(&mut self, remote: &Endpoint, path: &PathSettings) -> Result<()> {
        let queue_pair = match &mut self.queue_pair {
            QueuePairBackend::Verbs(queue_pair) => queue_pair,
            QueuePairBackend::Simulated(queue_pair) => {
                return queue_pair.connect(remote.qp_number, (path.service_level, path.traffic_class))
            }
        };
        let mut address = AddressHandleAttribute::new();
        address.setup_dest_lid(remote.lid).setup_port(path.port).setup_service_level(path.service_level);
        if let (Some(remote_gid), Some(local_gid)) = (remote.gid, path.local_gid) {
            let remote_gid = SidewayGid { raw: remote_gid.0 };
            address.setup_grh(&remote_gid, 0, local_gid.index as u8, 64, path.traffic_class);
        }
        let mut ready_to_receive = QueuePairAttribute::new();
        ready_to_receive
            .setup_state(QueuePairState::ReadyToReceive)
            .setup_path_mtu(path.mtu.to_sideway())
            .setup_dest_qp_num(remote.qp_number)
            .setup_rq_psn(remote.psn)
            .setup_max_dest_read_atomic(path.read_depth)
            .setup_min_rnr_timer(MIN_RNR_TIMER)
            .setup_address_vector(&address);
        queue_pair.modify(&ready_to_receive).map_err(|error| modify_error("RTR", error))?;

        let mut ready_to_send = QueuePairAttribute::new();
        ready_to_send
            .setup_state(QueuePairState::ReadyToSend)
            .setup_sq_psn(self.psn)
            .setup_timeout(ACK_TIMEOUT)
            .setup_retry_cnt(7)
            .setup_rnr_retry(7)
            .setup_max_read_atomic(path.read_depth);
        queue_pair.modify(&ready_to_send).map_err(|error| modify_error("RTS", error))
    }

    /// Applies a transition whose attributes came from elsewhere (rdma_cm's, see
    /// [`crate::connection_manager`]); `state` names it in the error.
    pub(crate) fn modify(&mut self, attributes: &QueuePairAttribute, state: &'static str) -> Result<()> {
        match &mut self.queue_pair {
            QueuePairBackend::Verbs(queue_pair) => {
                queue_pair.modify(attributes).map_err(|error| modify_error(state, error))
            }
            QueuePairBackend::Simulated(_) => Err(VerbsError::NotOnSimulatedNic { what: "rdma_cm (-R)" }),
        }
    }

    /// Posts `requests` to the send queue with one doorbell.
    pub fn post_send(&mut self, requests: impl IntoIterator<Item = SendRequest>) -> Result<()> {
        let queue_pair = match &mut self.queue_pair {
            QueuePairBackend::Verbs(queue_pair) => queue_pair,
            QueuePairBackend::Simulated(queue_pair) => return queue_pair.post_send(requests),
        };
        let mut guard = queue_pair.start_post_send();
        let mut last_operation = "send";
        for request in requests {
            last_operation = request.operation.name();
            let flags = if request.signaled { WorkRequestFlags::Signaled } else { WorkRequestFlags::none() };
            let flags = if request.inline.is_inline() { flags | WorkRequestFlags::Inline } else { flags };
            let work_request = guard.construct_wr(request.wr_id, flags);
            let buffer = match request.operation {
                Operation::Write { remote_address, rkey } => work_request.setup_write(rkey, remote_address),
                Operation::WriteWithImmediate { remote_address, rkey, immediate } => {
                    work_request.setup_write_imm(rkey, remote_address, immediate.to_be())
                }
                Operation::Read { remote_address, rkey } => work_request.setup_read(rkey, remote_address),
                Operation::Send => work_request.setup_send(),
                Operation::SendWithImmediate { immediate } => work_request.setup_send_imm(immediate.to_be()),
                Operation::FetchAndAdd { remote_address, rkey, add } => {
                    work_request.setup_atomic_fetch_add(rkey, remote_address, add)
                }
                Operation::CompareAndSwap { remote_address, rkey, compare, swap } => {
                    work_request.setup_atomic_compare_swap(rkey, remote_address, compare, swap)
                }
            };
            let local = request.local;
            if request.inline.is_inline() {
                // SAFETY: whoever made `Inline::yes()` promised that `local` names live host
                // memory; a LocalSlice is made only inside a registered region, so the length holds.
                let bytes =
                    unsafe { std::slice::from_raw_parts(local.address() as *const u8, local.len() as usize) };
                buffer.setup_inline_data(bytes);
            } else {
                // SAFETY: hands the NIC an address and key, nothing is dereferenced here; the NIC
                // checks the key (a deregistered region fails), and registration's contract keeps
                // the memory alive as long as its region.
                unsafe { buffer.setup_sge(local.lkey(), local.address(), local.len()) };
            }
        }
        guard.post().map_err(|source| VerbsError::PostSend { op: last_operation, source })
    }

    /// Posts one receive for `local`. Goes straight to `ibv_post_recv` with a request on the
    /// stack: sideway's receive guard allocates two `Vec`s per call.
    pub fn post_receive(&mut self, wr_id: u64, local: LocalSlice) -> Result<()> {
        let queue_pair = match &self.queue_pair {
            QueuePairBackend::Verbs(queue_pair) => queue_pair,
            QueuePairBackend::Simulated(queue_pair) => return queue_pair.post_receive(wr_id, local),
        };
        let mut scatter = ibv_sge { addr: local.address(), length: local.len(), lkey: local.lkey() };
        let mut request = ibv_recv_wr { wr_id, next: null_mut(), sg_list: &mut scatter, num_sge: 1 };
        let mut bad_request: *mut ibv_recv_wr = null_mut();
        // SAFETY: the QP is alive; request and scatter entry live across the call.
        let status = unsafe { ibv_post_recv(queue_pair.qp().as_ptr(), &mut request, &mut bad_request) };
        if status == 0 {
            Ok(())
        } else {
            Err(VerbsError::PostRecv { source: io::Error::from_raw_os_error(status) })
        }
    }
}

fn modify_error(
    state: &'static str,
    source: sideway::ibverbs::queue_pair::ModifyQueuePairError,
) -> VerbsError {
    VerbsError::ModifyQp { state, source }
}

/// A 24-bit starting packet sequence number. Any value works; a random one keeps packets of a
/// previous run's QP from being mistaken for ours. No RNG crate needed for that.
fn random_psn() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos(),
    );
    (hasher.finish() as u32) & 0x00ff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_fits_in_24_bits() {
        for _ in 0..100 {
            assert!(random_psn() < (1 << 24));
        }
    }
}
