//! Work requests and their completions: what a program posts to a queue pair and what comes
//! back, as plain data. The device wrappers (`queue_pair`, `completion`, `memory`) and the
//! simulated NIC (`simulated`) both speak it, so it sits under all of them.

use std::ffi::CStr;

use rdma_mummy_sys::ibv_wc_status_str;

use crate::VerbsError;

/// A scatter/gather entry: local bytes a work request reads from or lands in.
///
/// Its fields are private: a slice is made only by [`MemoryRegion::slice`](crate::MemoryRegion::slice) (inside the
/// region), [`LocalSlice::sub`] (inside a slice) or [`LocalSlice::empty`], so it always names
/// bytes of a registered region (or none). The NIC checks the key: a slice of a region that was
/// deregistered since fails with a protection error, it never reaches other memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalSlice {
    address: u64,
    len: u32,
    lkey: u32,
}

impl LocalSlice {
    pub fn address(&self) -> u64 {
        self.address
    }

    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn lkey(&self) -> u32 {
        self.lkey
    }

    /// A slice of a registered region: made by [`MemoryRegion::slice`](crate::MemoryRegion::slice) alone.
    pub(crate) fn new(address: u64, len: u32, lkey: u32) -> LocalSlice {
        LocalSlice { address, len, lkey }
    }

    /// No bytes: a receive that only signals (write with immediate, a credit), or a zero-byte SEND.
    pub const fn empty() -> LocalSlice {
        LocalSlice { address: 0, len: 0, lkey: 0 }
    }

    /// A slice of made-up memory, for unit tests that play the NIC's part on plain buffers
    /// (the harness's too, through the `test-support` feature its tests turn on).
    #[cfg(any(test, feature = "test-support"))]
    pub fn for_tests(address: u64, len: u32) -> LocalSlice {
        LocalSlice { address, len, lkey: 7 }
    }

    /// `len` bytes at `offset` inside this slice (a message's slot of a registered ring).
    ///
    /// # Panics
    /// Where they would reach past the slice: a slice never names bytes outside its region.
    #[inline]
    pub fn sub(&self, offset: usize, len: usize) -> LocalSlice {
        assert!(
            offset.checked_add(len).is_some_and(|end| end <= self.len as usize),
            "slice outside the registered region"
        );
        LocalSlice { address: self.address + offset as u64, len: len as u32, lkey: self.lkey }
    }
}

/// One work request for the send queue.
#[derive(Debug, Clone, Copy)]
pub struct SendRequest {
    pub wr_id: u64,
    /// Only signaled requests produce a completion: CQ moderation signals one in `cq_mod`.
    pub signaled: bool,
    pub local: LocalSlice,
    pub operation: Operation,
    /// Copy the payload into the work request itself (small messages, lower latency).
    pub inline: Inline,
}

/// Whether a send carries its payload inside the work request. Copying it there makes the CPU
/// read the bytes of the request's `local` slice while [`RcQueuePair::post_send`](crate::RcQueuePair::post_send) runs, so
/// asking for it is `unsafe`: a slice is a copy of an address, and nothing ties its lifetime to
/// the memory's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Inline(bool);

impl Inline {
    /// The NIC reads the payload itself (from registered memory, by key).
    pub const NO: Inline = Inline(false);

    /// The payload is copied into the work request.
    ///
    /// # Safety
    /// The `local` slice of every request posted with it must name host memory that is alive
    /// and readable (its region registered, its allocation not freed) when `post_send` runs.
    pub const unsafe fn yes() -> Inline {
        Inline(true)
    }

    pub fn is_inline(self) -> bool {
        self.0
    }
}

/// The operation a [`SendRequest`] performs. Immediate values are in host byte order: the
/// wire (and `ibv_send_wr`) carries them big-endian, so they are converted when posted, as
/// [`crate::WorkCompletion::immediate`] converts them back. The atomics work on the 8
/// bytes at `remote_address` (fetch-and-add adds `add`; compare-and-swap writes `swap` where they
/// hold `compare`), and their old value lands in the request's local slice.
#[derive(Debug, Clone, Copy)]
pub enum Operation {
    Write { remote_address: u64, rkey: u32 },
    WriteWithImmediate { remote_address: u64, rkey: u32, immediate: u32 },
    Read { remote_address: u64, rkey: u32 },
    Send,
    SendWithImmediate { immediate: u32 },
    FetchAndAdd { remote_address: u64, rkey: u32, add: u64 },
    CompareAndSwap { remote_address: u64, rkey: u32, compare: u64, swap: u64 },
}

impl Operation {
    pub fn name(&self) -> &'static str {
        match self {
            Operation::Write { .. } => "RDMA WRITE",
            Operation::WriteWithImmediate { .. } => "RDMA WRITE with immediate",
            Operation::Read { .. } => "RDMA READ",
            Operation::Send => "SEND",
            Operation::SendWithImmediate { .. } => "SEND with immediate",
            Operation::FetchAndAdd { .. } => "atomic FETCH_AND_ADD",
            Operation::CompareAndSwap { .. } => "atomic CMP_AND_SWAP",
        }
    }
}

/// One finished work request, copied out of the provider's array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkCompletion {
    pub wr_id: u64,
    pub status: u32,
    pub opcode: u32,
    pub byte_len: u32,
    pub vendor_err: u32,
    /// Immediate data (host byte order) of a RECV or RECV_RDMA_WITH_IMM carrying one.
    pub immediate: Option<u32>,
}

impl WorkCompletion {
    pub fn is_success(&self) -> bool {
        self.status == rdma_mummy_sys::ibv_wc_status::IBV_WC_SUCCESS
    }

    /// Turns a failed completion into an error naming the status, the operation and a hint.
    pub fn error(&self, op: &'static str, bytes: usize) -> VerbsError {
        use rdma_mummy_sys::ibv_wc_status as status;
        let hint = match self.status {
            status::IBV_WC_REM_ACCESS_ERR => {
                "; the peer's rkey/address did not match its memory region (stale or foreign key?)"
            }
            status::IBV_WC_RETRY_EXC_ERR => {
                "; the peer did not answer: is it alive, and are GID/MTU right (-x, -m)?"
            }
            status::IBV_WC_RNR_RETRY_EXC_ERR => "; the peer had no receive posted (raise -r/--rx-depth)",
            status::IBV_WC_LOC_PROT_ERR | status::IBV_WC_LOC_ACCESS_ERR => {
                "; local memory registration does not cover the buffer"
            }
            status::IBV_WC_WR_FLUSH_ERR => "; the queue pair had already failed: see the first error",
            status::IBV_WC_LOC_LEN_ERR => "; message larger than the receive buffer",
            _ => "",
        };
        VerbsError::Completion {
            status_name: status_name(self.status),
            status: self.status,
            vendor_err: self.vendor_err,
            op,
            bytes,
            hint,
        }
    }
}

/// libibverbs' name for a completion status ("remote access error", ...).
pub fn status_name(status: u32) -> String {
    // SAFETY: ibv_wc_status_str returns a static string for any value ("unknown" otherwise).
    unsafe {
        let name = ibv_wc_status_str(status);
        if name.is_null() {
            format!("status {status}")
        } else {
            CStr::from_ptr(name).to_string_lossy().into_owned()
        }
    }
}
