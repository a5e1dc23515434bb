//! The benchmark buffers and their data pattern: the seam between "where the bytes live" and
//! the verbs layer.
//!
//! Each QP owns one buffer as large as the sweep's largest message. Host memory is the baseline;
//! GPU memory (registered through dma-buf or nvidia-peermem) and staged copies plug in here as
//! further kinds of [`Storage`], so that nothing above this file needs to know the difference.

use std::ops::Range;
use std::sync::Arc;

use gdrperf_cuda::{DmaBuf, Gpu, GpuBuffer};
use sideway::ibverbs::protection_domain::ProtectionDomain;

use crate::error::Result;
use crate::harness::args::GdrPath;
use crate::harness::staging::Stager;
use crate::verbs::{HostBuffer, LocalSlice, MemoryRegion};

/// Where a buffer's bytes live.
pub enum Storage {
    /// Ordinary pageable host memory, page aligned: the baseline every other mode is compared with.
    Host(HostBuffer),
    /// GPU memory the NIC reads and writes directly (GPUDirect RDMA). The dma-buf, when that is
    /// how it was registered, is kept with the memory it exports.
    Gpu { memory: GpuBuffer, path: RegisteredPath, _dmabuf: Option<DmaBuf> },
    /// A payload the NIC does not touch, copied through a registered bounce buffer: the staged
    /// baseline (`cuda-staged`; `host-staged` runs the same path without a GPU).
    Staged { stager: Box<dyn Stager>, kind: &'static str },
}

/// How GPU memory was made visible to the NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisteredPath {
    /// `cuMemGetHandleForAddressRange` exported a dma-buf, `ibv_reg_dmabuf_mr` registered it.
    DmaBuf,
    /// `ibv_reg_mr` on the device pointer, resolved by the nvidia-peermem kernel module.
    PeerMem,
}

impl RegisteredPath {
    pub fn label(self) -> &'static str {
        match self {
            RegisteredPath::DmaBuf => "dma-buf",
            RegisteredPath::PeerMem => "nvidia-peermem",
        }
    }
}

impl Storage {
    /// The name used in headers and result rows.
    pub fn kind(&self) -> &'static str {
        match self {
            Storage::Host(_) => "host",
            Storage::Gpu { .. } => "cuda",
            Storage::Staged { kind, .. } => kind,
        }
    }
}

/// A registered buffer of one QP.
pub struct BenchBuffer {
    storage: Storage,
    region: MemoryRegion,
}

impl BenchBuffer {
    /// Allocates `len` bytes of host memory and registers them on `pd`.
    pub fn host(pd: &Arc<ProtectionDomain>, len: usize) -> Result<BenchBuffer> {
        let memory = HostBuffer::new(len)?;
        // SAFETY: the HostBuffer moves into `storage` below and lives as long as the region.
        let region = unsafe { MemoryRegion::register(pd, memory.address(), memory.len(), "host buffer")? };
        Ok(BenchBuffer { storage: Storage::Host(memory), region })
    }

    /// Allocates `len` bytes on `gpu` and registers them for GPUDirect RDMA along `path`
    /// (`Auto`: dma-buf when the GPU reports DMA_BUF_SUPPORTED, else nvidia-peermem).
    pub fn gpu(pd: &Arc<ProtectionDomain>, gpu: &Gpu, len: usize, path: GdrPath) -> Result<BenchBuffer> {
        let memory = gpu.alloc(len)?;
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
                    dmabuf.raw_fd(),
                    dmabuf.offset(),
                    dmabuf.iova(),
                    dmabuf.len(),
                    &format!("{what} via dma-buf"),
                )?
            };
            return Ok(BenchBuffer {
                storage: Storage::Gpu { memory, path: RegisteredPath::DmaBuf, _dmabuf: Some(dmabuf) },
                region,
            });
        }
        // SAFETY: the allocation moves into `storage` and outlives the region.
        let region = unsafe {
            MemoryRegion::register(
                pd,
                memory.device_ptr(),
                memory.len(),
                &format!("{what} via nvidia-peermem"),
            )?
        };
        Ok(BenchBuffer {
            storage: Storage::Gpu { memory, path: RegisteredPath::PeerMem, _dmabuf: None },
            region,
        })
    }

    /// Registers the bounce buffer of `stager`; the payload behind it is reached by copies only.
    pub fn staged(
        pd: &Arc<ProtectionDomain>,
        stager: Box<dyn Stager>,
        kind: &'static str,
    ) -> Result<BenchBuffer> {
        let (address, len) = stager.bounce();
        // SAFETY: the bounce buffer belongs to `stager`, which moves into `storage` with the region.
        let region = unsafe { MemoryRegion::register(pd, address, len, "staging bounce buffer")? };
        Ok(BenchBuffer { storage: Storage::Staged { stager, kind }, region })
    }

    pub fn kind(&self) -> &'static str {
        self.storage.kind()
    }

    /// The copy engine of a staged buffer (`None` for memory the NIC reaches directly).
    pub fn stager(&mut self) -> Option<&mut dyn Stager> {
        match &mut self.storage {
            Storage::Staged { stager, .. } => Some(stager.as_mut()),
            _ => None,
        }
    }

    /// Whether the NIC reaches the payload through a bounce buffer only (`*-staged`): the
    /// engines then copy every message in or out themselves.
    pub fn is_staged(&self) -> bool {
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

    /// The last byte of the first `len`, read directly: latency tests poll it to see a write land.
    /// `None` where the memory is not CPU-visible.
    pub fn host_bytes(&self) -> Option<&[u8]> {
        match &self.storage {
            Storage::Host(memory) => Some(memory.as_slice()),
            Storage::Gpu { .. } | Storage::Staged { .. } => None,
        }
    }
}

/// Time the staged buffers among `buffers` have spent copying so far (zero where none is
/// staged): a bench takes the difference around a size to report its copy time.
pub fn copy_time(buffers: &mut [BenchBuffer]) -> std::time::Duration {
    buffers.iter_mut().filter_map(|buffer| buffer.stager().map(|stager| stager.copy_time())).sum()
}

/// Checks the first `len` bytes of each buffer against the pattern a `size`-byte message of its
/// QP carries; says where the first one differs ("QP 1: byte 17 is 0x00, expected 0x5b").
pub fn check_received(buffers: &mut [BenchBuffer], size: usize, len: usize) -> Result<Option<String>> {
    check_received_at(buffers, size, 0..len)
}

/// [`check_received`] over `range` of each buffer (the pattern starts at `range.start`).
pub fn check_received_at(
    buffers: &mut [BenchBuffer],
    size: usize,
    range: Range<usize>,
) -> Result<Option<String>> {
    for (index, buffer) in buffers.iter_mut().enumerate() {
        if let Some(mismatch) = buffer.check_pattern_at(range.clone(), pattern_seed(size, index))? {
            return Ok(Some(format!(
                "QP {index}: byte {} is {:#04x}, expected {:#04x}",
                range.start + mismatch.offset,
                mismatch.found,
                mismatch.expected
            )));
        }
    }
    Ok(None)
}

/// Where a checked buffer first differs from its pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mismatch {
    pub offset: usize,
    pub expected: u8,
    pub found: u8,
}

/// The pattern seed of a transfer: different per size and per QP, so that data left over from
/// another size or delivered to the wrong QP's buffer is caught.
pub fn pattern_seed(size: usize, queue_pair: usize) -> u64 {
    (size as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ ((queue_pair as u64) << 56) ^ 0x5a
}

/// Byte `offset` of the pattern: never all-zero (a cleared buffer never passes), and not
/// periodic at any power of two (a misplaced block is caught).
pub fn pattern_byte(seed: u64, offset: usize) -> u8 {
    // splitmix64's finaliser: every bit of seed and offset reaches every bit of the result.
    let mut mixed = (offset as u64).wrapping_add(seed);
    mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((mixed ^ (mixed >> 31)) as u8) | 1
}

pub fn fill_pattern(bytes: &mut [u8], seed: u64) {
    for (offset, byte) in bytes.iter_mut().enumerate() {
        *byte = pattern_byte(seed, offset);
    }
}

pub fn find_mismatch(bytes: &[u8], seed: u64) -> Option<Mismatch> {
    bytes.iter().enumerate().find_map(|(offset, &found)| {
        let expected = pattern_byte(seed, offset);
        (found != expected).then_some(Mismatch { offset, expected, found })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_round_trips_and_catches_single_byte_errors() {
        let seed = pattern_seed(4096, 0);
        let mut bytes = vec![0u8; 4096];
        assert_eq!(find_mismatch(&bytes, seed).map(|mismatch| mismatch.offset), Some(0));
        fill_pattern(&mut bytes, seed);
        assert_eq!(find_mismatch(&bytes, seed), None);
        bytes[4095] ^= 0x10;
        assert_eq!(find_mismatch(&bytes, seed).map(|mismatch| mismatch.offset), Some(4095));
    }

    #[test]
    fn patterns_differ_between_sizes_and_queue_pairs() {
        let mut bytes = vec![0u8; 256];
        fill_pattern(&mut bytes, pattern_seed(256, 0));
        assert!(find_mismatch(&bytes, pattern_seed(256, 1)).is_some());
        assert!(find_mismatch(&bytes, pattern_seed(128, 0)).is_some());
    }
}
