//! The verbs a bench calls on the simulated NIC: completion queues and their polling, queue pairs
//! (created, connected, destroyed) and the posting of sends and receives, which queue requests
//! for the NIC thread ([`super::execution`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdma_mummy_sys::ibv_wc_opcode as opcode;
use rdma_mummy_sys::ibv_wc_status as status;
use sideway::ibverbs::AccessFlags;

use super::regions::ProtectionDomain;
use super::state::{lock, shared, CompletionRing, Pending, QpState, QueuePair, Queued};
use crate::work_request::{LocalSlice, Operation, SendRequest, WorkCompletion};
use crate::{Result, VerbsError};

/// A completion queue of the simulated NIC.
pub(crate) struct CompletionQueue {
    ring: CompletionRing,
    scratch: Vec<Queued>,
}

impl CompletionQueue {
    pub(crate) fn new() -> CompletionQueue {
        CompletionQueue { ring: Arc::default(), scratch: Vec::with_capacity(64) }
    }

    /// Up to 64 completions, handed to `each` after the queue's lock is released (`each` may
    /// post, which takes the NIC's lock).
    pub(crate) fn poll<E>(
        &mut self,
        mut each: impl FnMut(WorkCompletion) -> std::result::Result<(), E>,
    ) -> std::result::Result<usize, E> {
        {
            let mut ring = self.ring.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let found = ring.len().min(self.scratch.capacity());
            self.scratch.extend(ring.drain(..found));
        }
        let found = self.scratch.len();
        let mut result = Ok(found);
        for queued in self.scratch.drain(..) {
            if let Some((occupied, slots)) = &queued.frees {
                // Saturating: the slots of a QP in error are freed by its flushes, one each.
                let _ = occupied.fetch_update(Ordering::AcqRel, Ordering::Acquire, |taken| {
                    Some(taken.saturating_sub(*slots))
                });
            }
            if result.is_ok() {
                if let Err(error) = each(queued.completion) {
                    result = Err(error);
                }
            }
        }
        result
    }
}

/// A reliable-connected queue pair of the simulated NIC; dropping it destroys it (a peer's later
/// requests then fail as towards a vanished host).
#[derive(Debug)]
pub(crate) struct QueuePairHandle {
    number: u32,
}

impl Drop for QueuePairHandle {
    fn drop(&mut self) {
        lock().queue_pairs.remove(&self.number);
    }
}

pub(crate) fn create_qp(
    pd: &ProtectionDomain,
    cq: &CompletionQueue,
    (send_depth, recv_depth, max_inline): (u32, u32, u32),
    access: AccessFlags,
) -> QueuePairHandle {
    let mut nic = lock();
    let number = nic.number();
    nic.queue_pairs.insert(
        number,
        QueuePair {
            protection_domain: pd.id,
            port: pd.port,
            completions: Arc::clone(&cq.ring),
            access,
            send_depth,
            recv_depth,
            max_inline,
            peer: None,
            state: QpState::Init,
            receives: VecDeque::new(),
            sends: VecDeque::new(),
            occupied: Arc::default(),
            unsignalled: 0,
            quality_of_service: (0, 0),
        },
    );
    QueuePairHandle { number }
}

impl QueuePairHandle {
    pub(crate) fn number(&self) -> u32 {
        self.number
    }

    /// INIT -> RTS towards the simulated QP `remote` of this process.
    pub(crate) fn connect(&self, remote: u32, quality_of_service: (u8, u8)) -> Result<()> {
        let mut nic = lock();
        if !nic.queue_pairs.contains_key(&remote) {
            return Err(VerbsError::SimulatedPeer { queue_pair: remote });
        }
        let queue_pair = nic
            .queue_pairs
            .get_mut(&self.number)
            .ok_or(VerbsError::SimulatedPeer { queue_pair: self.number })?;
        queue_pair.peer = Some(remote);
        queue_pair.state = QpState::ReadyToSend;
        queue_pair.quality_of_service = quality_of_service;
        Ok(())
    }

    pub(crate) fn quality_of_service(&self) -> Option<(u8, u8)> {
        lock().queue_pairs.get(&self.number).map(|queue_pair| queue_pair.quality_of_service)
    }

    /// Queues `requests` (all or none: a post beyond the send depth fails with ENOMEM, as a
    /// full send queue does).
    pub(crate) fn post_send(&self, requests: impl IntoIterator<Item = SendRequest>) -> Result<()> {
        let requests: Vec<SendRequest> = requests.into_iter().collect();
        let operation = requests.last().map_or("send", |request| request.operation.name());
        let full = |errno| VerbsError::PostSend {
            op: operation,
            source: sideway::ibverbs::queue_pair::PostSendError::Ibverbs(std::io::Error::from_raw_os_error(
                errno,
            )),
        };
        let mut nic = lock();
        let now = Instant::now();
        let settings = nic.settings;
        let port = nic.queue_pairs.get(&self.number).ok_or(full(libc::EINVAL))?.port;
        let mut port_free_at = nic.port_free_at[port].max(now);
        let queue_pair = nic.queue_pairs.get_mut(&self.number).ok_or(full(libc::EINVAL))?;
        if queue_pair.state == QpState::Init {
            return Err(full(libc::EINVAL));
        }
        let taken = queue_pair.occupied.load(Ordering::Acquire);
        // A QP in error takes every request (each is flushed), as a real one does.
        if queue_pair.state != QpState::Error
            && taken as usize + requests.len() > queue_pair.send_depth as usize
        {
            return Err(full(libc::ENOMEM));
        }
        // An inline request longer than the QP's max_inline_data is refused at the post, as a
        // real provider does (rxe: EINVAL in validate_send_wr).
        if requests
            .iter()
            .any(|request| request.inline.is_inline() && request.local.len() > queue_pair.max_inline)
        {
            return Err(full(libc::EINVAL));
        }
        // The test hook of `post_list=N`: a call of any other length is refused, but for calls of
        // zero-byte requests only (gdr-send-bw's credits, posted one at a time as perftest
        // posts its own bookkeeping: they are not the bench's lists).
        let carries_data = requests.iter().any(|request| !request.local.is_empty());
        if carries_data && settings.post_list.is_some_and(|length| requests.len() != length as usize) {
            return Err(full(libc::EINVAL));
        }
        queue_pair.occupied.fetch_add(requests.len() as u32, Ordering::AcqRel);
        for request in requests {
            queue_pair.unsignalled += 1;
            let slots = if request.signaled { std::mem::take(&mut queue_pair.unsignalled) } else { 0 };
            let bytes = match request.operation {
                Operation::FetchAndAdd { .. } | Operation::CompareAndSwap { .. } => 8,
                _ => request.local.len() as usize,
            };
            port_free_at += Duration::from_secs_f64(bytes as f64 / settings.bytes_per_second);
            queue_pair.sends.push_back(Pending {
                request,
                due: port_free_at + settings.latency,
                slots,
                rnr_retries: 0,
            });
        }
        nic.port_free_at[port] = port_free_at;
        drop(nic);
        shared().work.notify_all();
        Ok(())
    }

    /// Queues one receive (ENOMEM beyond the receive depth).
    pub(crate) fn post_receive(&self, wr_id: u64, local: LocalSlice) -> Result<()> {
        let mut nic = lock();
        let queue_pair = nic
            .queue_pairs
            .get_mut(&self.number)
            .ok_or(VerbsError::PostRecv { source: std::io::Error::from_raw_os_error(libc::EINVAL) })?;
        if queue_pair.receives.len() >= queue_pair.recv_depth as usize {
            return Err(VerbsError::PostRecv { source: std::io::Error::from_raw_os_error(libc::ENOMEM) });
        }
        if queue_pair.state == QpState::Error {
            push(&queue_pair.completions, flushed(wr_id, opcode::IBV_WC_RECV), None);
            return Ok(());
        }
        queue_pair.receives.push_back((wr_id, local));
        drop(nic);
        // A SEND waiting for a receive (RNR) may go now.
        shared().work.notify_all();
        Ok(())
    }
}

pub(super) fn push(ring: &CompletionRing, completion: WorkCompletion, frees: Option<(Arc<AtomicU32>, u32)>) {
    ring.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push_back(Queued { completion, frees });
}

pub(super) fn flushed(wr_id: u64, opcode: u32) -> WorkCompletion {
    WorkCompletion {
        wr_id,
        status: status::IBV_WC_WR_FLUSH_ERR,
        opcode,
        byte_len: 0,
        vendor_err: 0,
        immediate: None,
    }
}
