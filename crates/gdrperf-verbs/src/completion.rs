//! Completion queues, polled without allocating.
//!
//! We create a plain CQ (`ibv_create_cq`), not an extended one: rdma-core 44's rxe provider
//! (Debian 12) has broken extended-CQ polling, fixed upstream in v55, and a plain CQ is what
//! every provider supports. sideway's own poller allocates a `Vec` per call, which would sit in
//! the timed loop, so we poll through a work-completion array allocated once.

use std::io;
use std::mem::MaybeUninit;
use std::sync::Arc;

use rdma_mummy_sys::{ibv_poll_cq, ibv_wc};
use sideway::ibverbs::completion::{BasicCompletionQueue, CompletionQueue as _, GenericCompletionQueue};

pub use crate::work_request::{status_name, WorkCompletion};
use crate::{simulated, Device, Result, VerbsError};

/// How many completions one poll can return: large enough that a CQ-moderated sweep drains in
/// one call, small enough to stay in cache.
const POLL_BATCH: usize = 64;

/// Opcodes of work completions (the subset the benchmarks use), as libibverbs numbers them.
pub mod opcode {
    pub const SEND: u32 = rdma_mummy_sys::ibv_wc_opcode::IBV_WC_SEND;
    pub const RDMA_WRITE: u32 = rdma_mummy_sys::ibv_wc_opcode::IBV_WC_RDMA_WRITE;
    pub const RDMA_READ: u32 = rdma_mummy_sys::ibv_wc_opcode::IBV_WC_RDMA_READ;
    pub const COMPARE_AND_SWAP: u32 = rdma_mummy_sys::ibv_wc_opcode::IBV_WC_COMP_SWAP;
    pub const FETCH_AND_ADD: u32 = rdma_mummy_sys::ibv_wc_opcode::IBV_WC_FETCH_ADD;
    pub const RECV: u32 = rdma_mummy_sys::ibv_wc_opcode::IBV_WC_RECV;
    pub const RECV_RDMA_WITH_IMM: u32 = rdma_mummy_sys::ibv_wc_opcode::IBV_WC_RECV_RDMA_WITH_IMM;
}

/// A completion queue with its own preallocated poll array.
pub struct CompletionQueue {
    backend: Backend,
}

/// A real device's CQ, or the simulated NIC's.
enum Backend {
    Verbs { queue: Arc<BasicCompletionQueue>, scratch: Box<[ibv_wc]> },
    Simulated(simulated::CompletionQueue),
}

impl CompletionQueue {
    /// Creates a CQ able to hold `depth` completions (send and receive queues of every QP
    /// attached to it together must not overrun it).
    pub fn new(device: &Device, depth: u32) -> Result<CompletionQueue> {
        if device.is_simulated() {
            return Ok(CompletionQueue { backend: Backend::Simulated(simulated::CompletionQueue::new()) });
        }
        let queue = device
            .context()?
            .create_cq_builder()
            .setup_cqe(depth)
            .build()
            .map_err(|error| VerbsError::CreateCq { depth, source: io::Error::other(error) })?;
        // SAFETY: ibv_wc is plain old data; all-zero is a valid value.
        let scratch =
            (0..POLL_BATCH).map(|_| unsafe { MaybeUninit::<ibv_wc>::zeroed().assume_init() }).collect();
        Ok(CompletionQueue { backend: Backend::Verbs { queue, scratch } })
    }

    /// The handle sideway's queue-pair builder takes (`None` on the simulated NIC).
    pub(crate) fn handle(&self) -> Option<GenericCompletionQueue> {
        match &self.backend {
            Backend::Verbs { queue, .. } => Some(GenericCompletionQueue::from(Arc::clone(queue))),
            Backend::Simulated(_) => None,
        }
    }

    /// The simulated NIC's queue (`None` on a real device).
    pub(crate) fn simulated(&self) -> Option<&simulated::CompletionQueue> {
        match &self.backend {
            Backend::Verbs { .. } => None,
            Backend::Simulated(queue) => Some(queue),
        }
    }

    /// Polls once and hands each completion to `each`. Returns how many there were.
    ///
    /// A callback rather than an iterator keeps the borrow of the scratch array inside this call
    /// and lets the caller use `?` inside, with its own error type. Errors from `each` stop the
    /// walk.
    pub fn poll<E: From<VerbsError>>(
        &mut self,
        mut each: impl FnMut(WorkCompletion) -> Result<(), E>,
    ) -> Result<usize, E> {
        let (queue, scratch) = match &mut self.backend {
            Backend::Verbs { queue, scratch } => (queue, scratch),
            Backend::Simulated(queue) => return queue.poll(each),
        };
        // SAFETY: the CQ is alive (we hold it) and scratch has room for POLL_BATCH entries.
        let found = unsafe { ibv_poll_cq(queue.cq().as_ptr(), scratch.len() as i32, scratch.as_mut_ptr()) };
        if found < 0 {
            return Err(VerbsError::PollCq(io::Error::from_raw_os_error(-found)).into());
        }
        for raw in &scratch[..found as usize] {
            let has_immediate = raw.wc_flags & rdma_mummy_sys::ibv_wc_flags::IBV_WC_WITH_IMM.0 != 0;
            each(WorkCompletion {
                wr_id: raw.wr_id,
                status: raw.status,
                opcode: raw.opcode,
                byte_len: raw.byte_len,
                vendor_err: raw.vendor_err,
                // SAFETY: the union holds immediate data whenever IBV_WC_WITH_IMM is set.
                immediate: has_immediate
                    .then(|| u32::from_be(unsafe { raw.imm_data_invalidated_rkey_union.imm_data })),
            })?;
        }
        Ok(found as usize)
    }
}
