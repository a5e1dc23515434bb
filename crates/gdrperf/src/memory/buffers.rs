//! The benchmark buffers and their data pattern: the seam between "where the bytes live" and
//! the verbs layer.
//!
//! Each QP owns one buffer as large as the sweep's largest message. Host memory is the baseline;
//! GPU memory (registered through dma-buf or nvidia-peermem) and staged copies plug in here as
//! further kinds of [`Storage`], so that nothing above this file needs to know the difference.

use std::ops::Range;
use std::sync::Arc;

use crate::verbs::ProtectionDomain;
use gdrperf_cuda::{DmaBuf, Gpu, GpuBuffer};

use crate::error::Result;
use crate::memory::check_failure::CheckFailure;
use crate::memory::pattern::{fill_pattern, Mismatch};
pub use crate::memory::pattern::{find_mismatch, pattern_seed};
use crate::memory::staging::Stager;
use crate::memory_kind::MemoryKind;
use crate::options::args::GdrPath;
use crate::verbs::{DmaBufRange, HostBuffer, LocalSlice, MemoryRegion, RelaxedOrdering, RemoteAccess};

/// Where a buffer's bytes live.
pub enum Storage {
    /// Ordinary pageable host memory, page aligned: the baseline every other mode is compared with.
    Host(HostBuffer),
    /// GPU memory the NIC reads and writes directly (GPUDirect RDMA). The dma-buf, when that is
    /// how it was registered, is kept with the memory it exports.
    Gpu { memory: GpuBuffer, path: RegisteredPath, _dmabuf: Option<DmaBuf> },
    /// A payload the NIC does not touch, copied through a registered bounce buffer: the staged
    /// baseline (`cuda-staged`; `host-staged` runs the same path without a GPU).
    Staged { stager: Box<dyn Stager>, kind: MemoryKind },
}

/// How GPU memory was made visible to the NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisteredPath {
    /// `cuMemGetHandleForAddressRange` exported a dma-buf, `ibv_reg_dmabuf_mr` registered it.
    DmaBuf,
    /// `ibv_reg_mr` on the device pointer, resolved by the nvidia-peermem kernel module.
    PeerMem,
    /// The simulated NIC (gdrperf-verbs' `simulated`): it moves the bytes with CUDA copies, no
    /// NIC touches the GPU.
    SimulatedCopies,
}

impl RegisteredPath {
    pub fn label(self) -> &'static str {
        match self {
            RegisteredPath::DmaBuf => "dma-buf",
            RegisteredPath::PeerMem => "nvidia-peermem",
            RegisteredPath::SimulatedCopies => "CUDA copies of the simulated NIC",
        }
    }
}

impl Storage {
    /// What kind of memory this is (named in headers and result rows).
    pub fn kind(&self) -> MemoryKind {
        match self {
            Storage::Host(_) => MemoryKind::Host,
            Storage::Gpu { .. } => MemoryKind::Cuda,
            Storage::Staged { kind, .. } => *kind,
        }
    }
}

/// GPU memory as the simulated NIC reaches it: by synchronous CUDA copies.
struct SimulatedGpuMemory(gdrperf_cuda::GpuCopies);

impl crate::verbs::simulated::CopiedMemory for SimulatedGpuMemory {
    fn read(&self, offset: usize, into: &mut [u8]) -> std::result::Result<(), String> {
        self.0.read_into(offset, into).map_err(|error| error.to_string())
    }

    fn write(&self, offset: usize, bytes: &[u8]) -> std::result::Result<(), String> {
        self.0.write(offset, bytes).map_err(|error| error.to_string())
    }
}

/// The relaxed ordering of a side's buffers, all registered with the same request: refused if
/// any registration refused it, else the first's (off for none).
pub fn relaxed_ordering(buffers: &[BenchBuffer]) -> RelaxedOrdering {
    let mut each = buffers.iter().map(BenchBuffer::relaxed_ordering);
    match each.clone().find(|ordering| *ordering == RelaxedOrdering::Refused) {
        Some(refused) => refused,
        None => each.next().unwrap_or(RelaxedOrdering::Off),
    }
}

/// A registered buffer of one QP.
pub struct BenchBuffer {
    /// Declared before the memory it registers, so that it is deregistered before that memory
    /// is freed (fields drop in order): the NIC never holds freed pages.
    region: MemoryRegion,
    storage: Storage,
    /// Staged buffers: what the engine's per-message checks found during the current size.
    check: MessageCheck,
}

/// The per-message checks of a staged receiver during one size (`--validate`).
#[derive(Debug, Default)]
pub struct MessageCheck {
    /// The first message that failed.
    pub failure: Option<String>,
    /// Messages checked.
    pub checked: u64,
}

impl BenchBuffer {
    /// Allocates `len` bytes of host memory and registers them on `pd`, open to the peer for
    /// `access` (the test's need), with relaxed ordering as `ordering` asks.
    pub fn host(
        pd: &Arc<ProtectionDomain>,
        len: usize,
        access: RemoteAccess,
        ordering: RelaxedOrdering,
    ) -> Result<BenchBuffer> {
        let memory = HostBuffer::new(len)?;
        // SAFETY: the HostBuffer moves into `storage` below and lives as long as the region.
        let region = unsafe {
            MemoryRegion::register(pd, memory.address(), memory.len(), "host buffer", access, ordering)?
        };
        Ok(BenchBuffer { storage: Storage::Host(memory), region, check: MessageCheck::default() })
    }

    /// Allocates `len` bytes on `gpu` and registers them for GPUDirect RDMA along `path`
    /// (`Auto`: dma-buf when the GPU reports DMA_BUF_SUPPORTED, else nvidia-peermem).
    pub fn gpu(
        pd: &Arc<ProtectionDomain>,
        gpu: &Gpu,
        len: usize,
        path: GdrPath,
        access: RemoteAccess,
        ordering: RelaxedOrdering,
    ) -> Result<BenchBuffer> {
        let memory = gpu.alloc(len)?;
        if pd.is_simulated() {
            // SAFETY: the handle goes into the region, which is dropped before the memory
            // (`BenchBuffer`'s field order) and deregistered under the NIC's lock.
            let copies = Arc::new(SimulatedGpuMemory(unsafe { memory.copies() }));
            let region = MemoryRegion::register_copied(
                pd,
                memory.device_ptr(),
                memory.len(),
                copies,
                access,
                ordering,
            )?;
            return Ok(BenchBuffer {
                storage: Storage::Gpu { memory, path: RegisteredPath::SimulatedCopies, _dmabuf: None },
                region,
                check: MessageCheck::default(),
            });
        }
        let what = format!("GPU {} memory", gpu.index());
        let use_dmabuf = match path {
            GdrPath::Dmabuf => true,
            GdrPath::Peermem => false,
            GdrPath::Auto => gpu.info().gpudirect.dma_buf == Some(true),
        };
        if use_dmabuf {
            let dmabuf = memory.export_dmabuf()?;
            // SAFETY: the dma-buf and the GPU allocation move into `storage` with the region.
            let region = unsafe {
                MemoryRegion::register_dmabuf(
                    pd,
                    DmaBufRange {
                        fd: dmabuf.raw_fd(),
                        offset: dmabuf.offset(),
                        address: dmabuf.iova(),
                        len: dmabuf.len(),
                    },
                    &format!("{what} via dma-buf"),
                    access,
                    ordering,
                )?
            };
            return Ok(BenchBuffer {
                storage: Storage::Gpu { memory, path: RegisteredPath::DmaBuf, _dmabuf: Some(dmabuf) },
                region,
                check: MessageCheck::default(),
            });
        }
        // SAFETY: the allocation moves into `storage` and outlives the region.
        let region = unsafe {
            MemoryRegion::register(
                pd,
                memory.device_ptr(),
                memory.len(),
                &format!("{what} via nvidia-peermem"),
                access,
                ordering,
            )?
        };
        Ok(BenchBuffer {
            storage: Storage::Gpu { memory, path: RegisteredPath::PeerMem, _dmabuf: None },
            region,
            check: MessageCheck::default(),
        })
    }

    /// Registers the bounce buffer of `stager`; the payload behind it is reached by copies only.
    pub fn staged(
        pd: &Arc<ProtectionDomain>,
        stager: Box<dyn Stager>,
        kind: MemoryKind,
        access: RemoteAccess,
        ordering: RelaxedOrdering,
    ) -> Result<BenchBuffer> {
        let (address, len) = stager.bounce();
        // SAFETY: the bounce buffer belongs to `stager`, which moves into `storage` with the region.
        // It is what the peer reaches (the payload behind it only by copies): the test's access.
        let region =
            unsafe { MemoryRegion::register(pd, address, len, "staging bounce buffer", access, ordering)? };
        Ok(BenchBuffer { storage: Storage::Staged { stager, kind }, region, check: MessageCheck::default() })
    }

    pub fn kind(&self) -> MemoryKind {
        self.storage.kind()
    }

    /// Whether the registration asked for PCIe relaxed ordering and took it.
    pub fn relaxed_ordering(&self) -> RelaxedOrdering {
        self.region.relaxed_ordering()
    }

    /// The copy engine of a staged buffer (`None` for memory the NIC reaches directly). Only
    /// the memory layer (`memory::staging::ring`, the latency engines' copies) uses it.
    pub(crate) fn stager(&mut self) -> Option<&mut dyn Stager> {
        match &mut self.storage {
            Storage::Staged { stager, .. } => Some(stager.as_mut()),
            _ => None,
        }
    }

    /// A staged buffer's stager, region and per-message check at once (`None` if not staged).
    pub(crate) fn staged_parts(&mut self) -> Option<(&mut dyn Stager, &MemoryRegion, &mut MessageCheck)> {
        match &mut self.storage {
            Storage::Staged { stager, .. } => Some((stager.as_mut(), &self.region, &mut self.check)),
            _ => None,
        }
    }

    /// Whether the NIC reaches the payload through a bounce buffer only (`*-staged`).
    pub(crate) fn is_staged(&self) -> bool {
        matches!(self.storage, Storage::Staged { .. })
    }

    /// The GPU this buffer lives on and how the NIC reaches it, for headers and rows.
    pub fn gpu_description(&self) -> Option<String> {
        match &self.storage {
            Storage::Host(_) => None,
            Storage::Gpu { memory, path, .. } => {
                let info = memory.gpu().info();
                Some(format!("GPU {} {} ({}, {})", info.index, info.name, info.bus_id, path.label()))
            }
            Storage::Staged { stager, .. } => Some(stager.describe()),
        }
    }

    /// The GPU index, for the `gpu_local` column.
    pub fn gpu_index(&self) -> Option<usize> {
        match &self.storage {
            Storage::Host(_) => None,
            Storage::Gpu { memory, .. } => Some(memory.gpu().index()),
            Storage::Staged { stager, .. } => stager.gpu_index(),
        }
    }

    pub fn region(&self) -> &MemoryRegion {
        &self.region
    }

    /// The first `len` bytes, as a scatter/gather entry.
    pub fn slice(&self, len: usize) -> LocalSlice {
        self.region.slice(0, len)
    }

    /// Writes the pattern of `seed` into the first `len` bytes (the source of a checked transfer).
    pub fn fill_pattern(&mut self, len: usize, seed: u64) -> Result<()> {
        self.fill_pattern_at(0..len, seed)
    }

    /// Writes the pattern of `seed` into `range`, the pattern's first byte at `range.start`.
    pub fn fill_pattern_at(&mut self, range: Range<usize>, seed: u64) -> Result<()> {
        match &mut self.storage {
            Storage::Host(memory) => fill_pattern(&mut memory.as_mut_slice()[range], seed),
            // The pattern is made on the host and copied up: validation is not timed.
            Storage::Gpu { memory, .. } => {
                let mut pattern = vec![0u8; range.len()];
                fill_pattern(&mut pattern, seed);
                memory.write(range.start, &pattern)?;
            }
            Storage::Staged { stager, .. } => {
                let mut pattern = vec![0u8; range.len()];
                fill_pattern(&mut pattern, seed);
                stager.write_payload_at(range.start, &pattern)?;
            }
        }
        Ok(())
    }

    /// Zeroes the first `len` bytes (the destination, so stale data from an earlier size or run
    /// cannot pass the check).
    pub fn clear(&mut self, len: usize) -> Result<()> {
        self.clear_at(0..len)
    }

    /// Zeroes `range`.
    pub fn clear_at(&mut self, range: Range<usize>) -> Result<()> {
        match &mut self.storage {
            Storage::Host(memory) => memory.as_mut_slice()[range].fill(0),
            Storage::Gpu { memory, .. } => memory.write(range.start, &vec![0u8; range.len()])?,
            Storage::Staged { stager, .. } => {
                stager.write_payload_at(range.start, &vec![0u8; range.len()])?
            }
        }
        Ok(())
    }

    /// Checks the first `len` bytes against the pattern of `seed`.
    pub fn check_pattern(&mut self, len: usize, seed: u64) -> Result<Option<Mismatch>> {
        self.check_pattern_at(0..len, seed)
    }

    /// Checks `range` against the pattern of `seed` starting at `range.start`; a mismatch's
    /// offset counts from `range.start`.
    pub fn check_pattern_at(&mut self, range: Range<usize>, seed: u64) -> Result<Option<Mismatch>> {
        Ok(match &mut self.storage {
            Storage::Host(memory) => find_mismatch(&memory.as_slice()[range], seed),
            // Copied down to the host after the run, then checked (SYNC_MEMOPS is set on the
            // allocation, so the copy sees everything the NIC wrote before the completion).
            Storage::Gpu { memory, .. } => find_mismatch(&memory.read(range)?, seed),
            Storage::Staged { stager, .. } => find_mismatch(&stager.read_payload_range(range)?, seed),
        })
    }

    /// A copy of the bytes in `range` (the payload's, for staged memory), read after a size: an
    /// atomic's fetched value, say.
    pub fn read_at(&mut self, range: Range<usize>) -> Result<Vec<u8>> {
        Ok(match &mut self.storage {
            Storage::Host(memory) => memory.as_slice()[range].to_vec(),
            Storage::Gpu { memory, .. } => memory.read(range)?,
            Storage::Staged { stager, .. } => stager.read_payload_range(range)?,
        })
    }

    /// The last byte of the first `len`, read directly: latency tests poll it to see a write land.
    /// `None` where the memory is not CPU-visible.
    pub fn host_bytes(&self) -> Option<&[u8]> {
        match &self.storage {
            Storage::Host(memory) => Some(memory.as_slice()),
            Storage::Gpu { .. } | Storage::Staged { .. } => None,
        }
    }
}

/// The copy time of `buffers` since the last call: the time during which at least one copy of
/// any of them was running (the union over the QPs' copies, which run on their own streams at
/// the same time), so it never exceeds this side's wall time since the last call.
pub fn take_copy_time(buffers: &mut [BenchBuffer]) -> std::time::Duration {
    let mut intervals = Vec::new();
    for buffer in buffers.iter_mut() {
        if let Some(stager) = buffer.stager() {
            stager.log().take_into(&mut intervals);
        }
    }
    std::time::Duration::from_nanos(gdrperf_stats::busy_nanos(&intervals))
}

/// The first failure of the per-message checks of staged rings in the current size (`None`
/// also where none ran), and a fresh start.
pub fn take_message_failure(buffers: &mut [BenchBuffer]) -> Option<CheckFailure> {
    buffers.iter_mut().enumerate().find_map(|(queue_pair, buffer)| {
        std::mem::take(&mut buffer.check)
            .failure
            .map(|description| CheckFailure::Message { queue_pair, description })
    })
}

/// Checks the first `len` bytes of each buffer against the pattern a `size`-byte message of its
/// QP carries; says where the first one differs ("QP 1: byte 17 is 0x00, expected 0x5b").
pub fn check_received(buffers: &mut [BenchBuffer], size: usize, len: usize) -> Result<Option<CheckFailure>> {
    check_received_at(buffers, size, 0..len)
}

/// [`check_received`] over `range` of each buffer (the pattern starts at `range.start`).
pub fn check_received_at(
    buffers: &mut [BenchBuffer],
    size: usize,
    range: Range<usize>,
) -> Result<Option<CheckFailure>> {
    for (queue_pair, buffer) in buffers.iter_mut().enumerate() {
        // A staged ring was checked message by message as each was copied in.
        let check = std::mem::take(&mut buffer.check);
        if let Some(description) = check.failure {
            return Ok(Some(CheckFailure::Message { queue_pair, description }));
        }
        if check.checked > 0 {
            continue;
        }
        if let Some(mismatch) = buffer.check_pattern_at(range.clone(), pattern_seed(size, queue_pair))? {
            return Ok(Some(CheckFailure::Byte {
                queue_pair,
                offset: range.start + mismatch.offset,
                found: mismatch.found,
                expected: mismatch.expected,
            }));
        }
    }
    Ok(None)
}
