//! Memory the NIC may touch: page-aligned host buffers and their registrations.
//!
//! Registration pins the pages and gives two keys: the `lkey`, which our own work requests
//! quote, and the `rkey`, which we hand to the peer so that its NIC may read or write here.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::io;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sideway::ibverbs::memory_region::MemoryRegion as SidewayMemoryRegion;
use sideway::ibverbs::AccessFlags;

use crate::protection_domain::{Backend, ProtectionDomain};
use crate::simulated::{self, CopiedMemory};
pub use crate::work_request::LocalSlice;
use crate::{Result, VerbsError};

/// Alignment of host buffers: a page, so that registration pins whole pages of ours alone and
/// the NIC's DMA starts on a boundary.
const PAGE: usize = 4096;

/// A zeroed, page-aligned heap buffer. Unlike a `Vec<u8>`, it never moves or reallocates, which
/// a registered buffer must not do.
pub struct HostBuffer {
    pointer: NonNull<u8>,
    layout: Layout,
}

// SAFETY: HostBuffer owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for HostBuffer {}
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    pub fn new(len: usize) -> Result<HostBuffer> {
        let layout = Layout::from_size_align(len.max(1), PAGE).map_err(|_| VerbsError::Allocation { len })?;
        // SAFETY: the layout has a non-zero size.
        let pointer = NonNull::new(unsafe { alloc_zeroed(layout) }).ok_or(VerbsError::Allocation { len })?;
        Ok(HostBuffer { pointer, layout })
    }

    pub fn len(&self) -> usize {
        self.layout.size()
    }

    pub fn is_empty(&self) -> bool {
        self.layout.size() == 0
    }

    /// The virtual address the NIC uses for this buffer.
    pub fn address(&self) -> u64 {
        self.pointer.as_ptr() as u64
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the allocation is valid and initialised (zeroed) for its whole size.
        unsafe { std::slice::from_raw_parts(self.pointer.as_ptr(), self.layout.size()) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusive access from Rust's side.
        unsafe { std::slice::from_raw_parts_mut(self.pointer.as_ptr(), self.layout.size()) }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this very layout.
        unsafe { dealloc(self.pointer.as_ptr(), self.layout) }
    }
}

/// What a peer may do to a region, or through a QP: the least its test needs. An rkey is access
/// for anyone on the fabric who learns it, so a region opens only what the test uses: the
/// read_lat server's buffer is read, the write tests' buffers are written, the atomic_lat
/// server's counter is updated atomically, the send tests' buffers and every buffer that is
/// never advertised (validation rings) are neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteAccess {
    /// Local use only (receives, copies, the source of our own requests).
    None,
    /// The peer may RDMA READ it.
    Read,
    /// The peer may RDMA WRITE it.
    Write,
    /// The peer may run 8-byte atomics on it (fetch-and-add, compare-and-swap).
    Atomic,
}

impl RemoteAccess {
    /// The verbs flags: always local write (receives and READ results land here), plus the
    /// one remote right asked for.
    pub fn flags(self) -> AccessFlags {
        match self {
            RemoteAccess::None => AccessFlags::LocalWrite,
            RemoteAccess::Read => AccessFlags::LocalWrite | AccessFlags::RemoteRead,
            RemoteAccess::Write => AccessFlags::LocalWrite | AccessFlags::RemoteWrite,
            RemoteAccess::Atomic => AccessFlags::LocalWrite | AccessFlags::RemoteAtomic,
        }
    }
}

/// PCIe relaxed ordering on a registration (`IBV_ACCESS_RELAXED_ORDERING`): asked for by
/// default, as perftest does (`setup_mr_flags` in perftest_resources.c, unless
/// `--disable_pcie_relaxed`), so that a gdrperf figure and a perftest figure describe the same
/// configuration. rdma-core defines the flag as an optional one (`IBV_ACCESS_OPTIONAL_FIRST`,
/// bit 20): a kernel or device that cannot honour it ignores it. Whether the NIC then sets the
/// attribute on its PCIe writes (mlx5 does only where the device reports the capability and
/// the function's Device Control allows it) is not visible from user space, so "asked" is the
/// most a run can say of a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelaxedOrdering {
    /// Not asked for (`--disable_pcie_relaxed`).
    Off,
    /// Asked for, and the registration took the flag.
    Asked,
    /// Asked for, but the registration failed with the flag and succeeded without it: an
    /// rdma-core or kernel that predates optional access flags (rdma-core older than v28 passes
    /// the bit to a kernel that refuses unknown bits).
    Refused,
}

impl RelaxedOrdering {
    /// The word the run header, the CSV and the JSON use.
    pub fn word(self) -> &'static str {
        match self {
            RelaxedOrdering::Off => "off",
            RelaxedOrdering::Asked => "asked",
            RelaxedOrdering::Refused => "refused",
        }
    }
}

/// Registers with `flags` plus relaxed ordering when `ordering` asks for it; where that fails
/// with EINVAL or EOPNOTSUPP (the answer of a stack that does not know the optional flag),
/// registers once more without it and says so.
fn register_with_ordering<T, E>(
    flags: AccessFlags,
    ordering: RelaxedOrdering,
    register: impl Fn(AccessFlags) -> std::result::Result<T, E>,
    errno: impl Fn(&E) -> Option<i32>,
) -> std::result::Result<(T, RelaxedOrdering), E> {
    if ordering == RelaxedOrdering::Off {
        return register(flags).map(|region| (region, RelaxedOrdering::Off));
    }
    match register(flags | AccessFlags::RelaxedOrdering) {
        Ok(region) => Ok((region, RelaxedOrdering::Asked)),
        Err(error) if matches!(errno(&error), Some(libc::EINVAL | libc::EOPNOTSUPP)) => {
            register(flags).map(|region| (region, RelaxedOrdering::Refused))
        }
        Err(error) => Err(error),
    }
}

/// The bytes of a dma-buf to register: `len` bytes from `offset` of the buffer `fd`, given the
/// I/O virtual address `address`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaBufRange {
    pub fd: RawFd,
    pub offset: u64,
    pub address: u64,
    pub len: usize,
}

/// A registered region: keys plus the address range they cover.
/// Not `Clone`: a copy would keep the keys (the rkey a peer writes through) while the pages they
/// cover can be freed by the owner of the original; one owner, borrowed by reference.
pub struct MemoryRegion {
    region: Registration,
    address: u64,
    len: usize,
    relaxed_ordering: RelaxedOrdering,
}

/// The device's registration: a real one, or the simulated NIC's (see [`crate::simulated`]).
enum Registration {
    Verbs(Arc<SidewayMemoryRegion>),
    Simulated(simulated::RegisteredRegion),
}

impl MemoryRegion {
    /// Registers `len` bytes at virtual address `address` (host memory, or GPU memory when the
    /// nvidia-peermem module lets the NIC driver resolve device pointers), with relaxed ordering
    /// as `ordering` asks ([`RelaxedOrdering::Asked`] or [`RelaxedOrdering::Off`]).
    ///
    /// # Safety
    /// The range must stay valid (not freed, not moved) for as long as the region lives.
    pub unsafe fn register(
        pd: &Arc<ProtectionDomain>,
        address: u64,
        len: usize,
        what: &str,
        access: RemoteAccess,
        ordering: RelaxedOrdering,
    ) -> Result<MemoryRegion> {
        let pd = match pd.backend() {
            Backend::Verbs(pd) => pd,
            Backend::Simulated(pd) => {
                let region = simulated::register(pd, address, len, access.flags(), None);
                return Ok(MemoryRegion {
                    region: Registration::Simulated(region),
                    address,
                    len,
                    relaxed_ordering: ordering,
                });
            }
        };
        // SAFETY: the caller keeps `address..address + len` valid for the region's life.
        let registered = register_with_ordering(
            access.flags(),
            ordering,
            |flags| unsafe { pd.reg_mr(address as usize, len, flags) },
            |error| source_of(error).raw_os_error(),
        );
        let (region, relaxed_ordering) = registered.map_err(|error| VerbsError::RegisterMemory {
            what: what.to_string(),
            len,
            source: source_of(&error),
            hint: if what.contains("GPU") {
                "; GPU memory through ibv_reg_mr needs the nvidia-peermem module (modprobe nvidia-peermem), or use --gdr dmabuf"
            } else {
                "; check `ulimit -l` (locked memory) for your user"
            },
        })?;
        Ok(MemoryRegion { region: Registration::Verbs(region), address, len, relaxed_ordering })
    }

    /// Registers `len` bytes at `address` that the simulated NIC reaches through `memory`'s
    /// copies (GPU memory: the CPU cannot dereference a device pointer). Only the simulated NIC
    /// takes it; a real device registers GPU memory with [`MemoryRegion::register`] (peermem) or
    /// [`MemoryRegion::register_dmabuf`]. The simulated NIC has no PCIe: `ordering` is only
    /// recorded, as asked.
    pub fn register_copied(
        pd: &Arc<ProtectionDomain>,
        address: u64,
        len: usize,
        memory: Arc<dyn CopiedMemory>,
        access: RemoteAccess,
        ordering: RelaxedOrdering,
    ) -> Result<MemoryRegion> {
        match pd.backend() {
            Backend::Simulated(pd) => {
                let region = simulated::register(pd, address, len, access.flags(), Some(memory));
                Ok(MemoryRegion {
                    region: Registration::Simulated(region),
                    address,
                    len,
                    relaxed_ordering: ordering,
                })
            }
            Backend::Verbs(_) => Err(VerbsError::RegisterMemory {
                what: "memory reached by copies".to_string(),
                len,
                source: io::Error::from_raw_os_error(libc::EINVAL),
                hint: "; only the simulated NIC copies; register device memory with peermem or dma-buf",
            }),
        }
    }

    /// Registers a dma-buf (GPU memory exported by the CUDA driver) at I/O virtual address
    /// `range.address`, so that remote peers can use the same address they would with peermem;
    /// relaxed ordering as `ordering` asks.
    ///
    /// # Safety
    /// `range.fd` must be a dma-buf covering `range.offset..range.offset + range.len` that
    /// outlives the region.
    pub unsafe fn register_dmabuf(
        pd: &Arc<ProtectionDomain>,
        range: DmaBufRange,
        what: &str,
        access: RemoteAccess,
        ordering: RelaxedOrdering,
    ) -> Result<MemoryRegion> {
        let pd = match pd.backend() {
            Backend::Verbs(pd) => pd,
            Backend::Simulated(_) => {
                return Err(VerbsError::NotOnSimulatedNic { what: "dma-buf registration" })
            }
        };
        let DmaBufRange { fd, offset, address, len } = range;
        // SAFETY: the caller guarantees `fd` covers `offset..offset + len` and outlives the region.
        let registered = register_with_ordering(
            access.flags(),
            ordering,
            |flags| unsafe { pd.reg_dmabuf_mr(offset, len, address, fd, flags) },
            |error| source_of(error).raw_os_error(),
        );
        let (region, relaxed_ordering) = registered.map_err(|error| {
            VerbsError::RegisterMemory {
                what: what.to_string(),
                len,
                source: source_of(&error),
                hint: "; dma-buf registration needs rdma-core >= 34, a kernel >= 5.12 with the NIC driver's dma-buf \
                       support, and NVIDIA's open kernel modules; or try --gdr peermem",
            }
        })?;
        Ok(MemoryRegion { region: Registration::Verbs(region), address, len, relaxed_ordering })
    }

    /// Whether relaxed ordering was asked for and taken by the registration.
    pub fn relaxed_ordering(&self) -> RelaxedOrdering {
        self.relaxed_ordering
    }

    pub fn lkey(&self) -> u32 {
        match &self.region {
            Registration::Verbs(region) => region.lkey(),
            Registration::Simulated(region) => region.key(),
        }
    }

    pub fn rkey(&self) -> u32 {
        match &self.region {
            Registration::Verbs(region) => region.rkey(),
            Registration::Simulated(region) => region.key(),
        }
    }

    pub fn address(&self) -> u64 {
        self.address
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// What the peer needs to read or write this region.
    pub fn remote(&self) -> RemoteBuffer {
        RemoteBuffer { address: self.address, rkey: self.rkey(), len: self.len as u64 }
    }

    /// A local scatter/gather entry covering `len` bytes at `offset`: the only way to make a
    /// [`LocalSlice`] that names bytes.
    ///
    /// # Panics
    /// Where the bytes reach past the region.
    pub fn slice(&self, offset: usize, len: usize) -> LocalSlice {
        assert!(
            offset.checked_add(len).is_some_and(|end| end <= self.len),
            "slice outside the registered region"
        );
        LocalSlice::new(self.address + offset as u64, len as u32, self.lkey())
    }
}

/// The errno hidden inside sideway's registration error, for the message.
fn source_of(error: &sideway::ibverbs::memory_region::RegisterMemoryRegionError) -> io::Error {
    use sideway::ibverbs::memory_region::RegisterMemoryRegionErrorKind as Kind;
    match &error.0 {
        Kind::Ibverbs(inner) => inner
            .raw_os_error()
            .map(io::Error::from_raw_os_error)
            .unwrap_or_else(|| io::Error::other(inner.to_string())),
        other => io::Error::other(other.to_string()),
    }
}

/// A peer's registered buffer, as exchanged out of band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteBuffer {
    pub address: u64,
    pub rkey: u32,
    pub len: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_buffer_is_page_aligned_zeroed_and_writable() {
        let mut buffer = HostBuffer::new(10_000).unwrap();
        assert_eq!(buffer.address() % PAGE as u64, 0);
        assert!(buffer.as_slice().iter().all(|byte| *byte == 0));
        buffer.as_mut_slice()[9_999] = 7;
        assert_eq!(buffer.as_slice()[9_999], 7);
        assert_eq!(buffer.len(), 10_000);
    }

    /// A stand-in for ibv_reg_mr: refuses the flags in `refused` with `errno`, and records
    /// the flags of every call.
    fn registration(
        refused: Option<(AccessFlags, i32)>,
        calls: &std::cell::RefCell<Vec<AccessFlags>>,
    ) -> impl Fn(AccessFlags) -> std::result::Result<(), i32> + '_ {
        move |flags| {
            calls.borrow_mut().push(flags);
            match refused {
                Some((bad, errno)) if flags == bad => Err(errno),
                _ => Ok(()),
            }
        }
    }

    #[test]
    fn relaxed_ordering_is_asked_for_unless_off() {
        let calls = std::cell::RefCell::new(Vec::new());
        let base = RemoteAccess::Write.flags();
        let asked =
            register_with_ordering(base, RelaxedOrdering::Asked, registration(None, &calls), |e| Some(*e));
        assert_eq!(asked, Ok(((), RelaxedOrdering::Asked)));
        assert_eq!(calls.borrow().as_slice(), &[base | AccessFlags::RelaxedOrdering]);
        calls.borrow_mut().clear();
        let off =
            register_with_ordering(base, RelaxedOrdering::Off, registration(None, &calls), |e| Some(*e));
        assert_eq!(off, Ok(((), RelaxedOrdering::Off)));
        assert_eq!(calls.borrow().as_slice(), &[base]);
    }

    #[test]
    fn a_stack_that_refuses_the_flag_gets_a_plain_registration_and_says_so() {
        let base = RemoteAccess::Read.flags();
        let with = base | AccessFlags::RelaxedOrdering;
        for errno in [libc::EINVAL, libc::EOPNOTSUPP] {
            let calls = std::cell::RefCell::new(Vec::new());
            let outcome = register_with_ordering(
                base,
                RelaxedOrdering::Asked,
                registration(Some((with, errno)), &calls),
                |e| Some(*e),
            );
            assert_eq!(outcome, Ok(((), RelaxedOrdering::Refused)));
            assert_eq!(calls.borrow().as_slice(), &[with, base]);
        }
        // Any other failure (locked memory, a bad address) is the registration's own: no retry.
        let calls = std::cell::RefCell::new(Vec::new());
        let outcome = register_with_ordering(
            base,
            RelaxedOrdering::Asked,
            registration(Some((with, 12)), &calls),
            |e| Some(*e),
        );
        assert_eq!(outcome, Err(12));
        assert_eq!(calls.borrow().len(), 1);
    }
}
