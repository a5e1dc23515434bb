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
use crate::memory::check_failure::CheckFailure;
use crate::memory::staging::Stager;
use crate::memory_kind::MemoryKind;
use crate::options::args::GdrPath;
use crate::verbs::{HostBuffer, LocalSlice, MemoryRegion, RemoteAccess};

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
    /// What kind of memory this is (named in headers and result rows).
    pub fn kind(&self) -> MemoryKind {
        match self {
            Storage::Host(_) => MemoryKind::Host,
            Storage::Gpu { .. } => MemoryKind::Cuda,
            Storage::Staged { kind, .. } => *kind,
        }
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
    /// `access` (the test's need).
    pub fn host(pd: &Arc<ProtectionDomain>, len: usize, access: RemoteAccess) -> Result<BenchBuffer> {
        let memory = HostBuffer::new(len)?;
        // SAFETY: the HostBuffer moves into `storage` below and lives as long as the region.
        let region =
            unsafe { MemoryRegion::register(pd, memory.address(), memory.len(), "host buffer", access)? };
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
    ) -> Result<BenchBuffer> {
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
                    access,
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
    ) -> Result<BenchBuffer> {
        let (address, len) = stager.bounce();
        // SAFETY: the bounce buffer belongs to `stager`, which moves into `storage` with the region.
        // It is what the peer reaches (the payload behind it only by copies): the test's access.
        let region = unsafe { MemoryRegion::register(pd, address, len, "staging bounce buffer", access)? };
        Ok(BenchBuffer { storage: Storage::Staged { stager, kind }, region, check: MessageCheck::default() })
    }

    pub fn kind(&self) -> MemoryKind {
        self.storage.kind()
    }

    /// The copy engine of a staged buffer (`None` for memory the NIC reaches directly). Only
    /// the memory layer (`memory::queue_memory`, the latency engines' copies) uses it.
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

/// The 8-byte stamp of message `index`: mixed with the seed, so a stamp of another size or QP
/// never matches by accident.
fn stamp(seed: u64, index: u64) -> [u8; 8] {
    (index ^ seed.rotate_left(29)).to_le_bytes()
}

/// The message index a stamp carries.
fn unstamp(seed: u64, bytes: [u8; 8]) -> u64 {
    u64::from_le_bytes(bytes) ^ seed.rotate_left(29)
}

/// Byte `offset` of message `index` (`len` bytes) of the pattern `seed`: the pattern, with the
/// message's index stamped into its first 8 bytes and, from 16 bytes on, its last 8 (so a
/// message overwritten from either end by another shows the other's index).
pub fn message_byte(seed: u64, index: u64, len: usize, offset: usize) -> u8 {
    let stamp = stamp(seed, index);
    if offset < 8 {
        stamp[offset]
    } else if len >= 16 && offset >= len - 8 {
        stamp[offset - (len - 8)]
    } else {
        pattern_byte(seed, offset)
    }
}

/// Where message `index` (`len` bytes) of the pattern `seed` differs from the plain pattern:
/// its stamps, as (offset, bytes): the first 8 bytes (fewer in a shorter message) and, from 16
/// bytes on, the last 8.
pub fn message_stamps(seed: u64, index: u64, len: usize) -> Vec<(usize, Vec<u8>)> {
    let stamp = stamp(seed, index);
    let mut stamps = vec![(0, stamp[..len.min(8)].to_vec())];
    if len >= 16 {
        stamps.push((len - 8, stamp.to_vec()));
    }
    stamps
}

/// Writes message `index` of the pattern `seed` into `bytes` (what a staged sender sends: the
/// tests build expected messages with it).
#[cfg(test)]
pub fn fill_message(bytes: &mut [u8], seed: u64, index: u64) {
    fill_pattern(bytes, seed);
    for (offset, stamp) in message_stamps(seed, index, bytes.len()) {
        bytes[offset..offset + stamp.len()].copy_from_slice(&stamp);
    }
}

/// How a checked message differs from message `index` of its pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageMismatch {
    /// The message carries another message's index: it was overwritten or delivered out of order.
    Stamp { found: u64, at_end: bool },
    /// A byte differs otherwise.
    Byte(Mismatch),
}

impl MessageMismatch {
    /// "message 17 (slot 1 of 8) holds message 25", "message 3: byte 17 is 0x00, expected 0x5b".
    pub fn describe(&self, index: u64, slot: u64, slots: u64) -> String {
        match self {
            MessageMismatch::Stamp { found, at_end } => format!(
                "message {index} (slot {slot} of {slots}) carries the stamp of message {found} at its {}: overwritten or out of order",
                if *at_end { "end" } else { "start" }
            ),
            MessageMismatch::Byte(mismatch) => format!(
                "message {index}: byte {} is {:#04x}, expected {:#04x}",
                mismatch.offset, mismatch.found, mismatch.expected
            ),
        }
    }
}

/// Checks `bytes` against message `index` of the pattern `seed`: a stamp of another message is
/// named as such, any other difference by its first byte.
pub fn find_message_mismatch(bytes: &[u8], seed: u64, index: u64) -> Option<MessageMismatch> {
    let len = bytes.len();
    let stamps = [(0, false), (len.saturating_sub(8), true)];
    for (start, at_end) in stamps {
        if len >= 16 || (start == 0 && len >= 8) {
            let found = unstamp(seed, bytes[start..start + 8].try_into().expect("8 bytes"));
            if found != index && found < (1 << 48) {
                return Some(MessageMismatch::Stamp { found, at_end });
            }
        }
    }
    bytes.iter().enumerate().find_map(|(offset, &found)| {
        let expected = message_byte(seed, index, len, offset);
        (found != expected).then_some(MessageMismatch::Byte(Mismatch { offset, expected, found }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamped_messages_round_trip_and_name_the_message_that_overwrote_them() {
        let seed = pattern_seed(4096, 1);
        let mut slot = vec![0u8; 4096];
        fill_message(&mut slot, seed, 17);
        assert_eq!(find_message_mismatch(&slot, seed, 17), None);
        assert!(slot.iter().enumerate().all(|(offset, &byte)| byte == message_byte(seed, 17, 4096, offset)));
        // The old shared bounce buffer: message 18 landed on the bytes of 17 before 17 was copied
        // in, so what was copied in as 17 is 18 (same pattern, other stamp).
        fill_message(&mut slot, seed, 18);
        assert_eq!(
            find_message_mismatch(&slot, seed, 17),
            Some(MessageMismatch::Stamp { found: 18, at_end: false })
        );
        // Overwritten from the start only up to half (the later message's first packets).
        let mut half = vec![0u8; 4096];
        fill_message(&mut half, seed, 17);
        let mut later = vec![0u8; 4096];
        fill_message(&mut later, seed, 25);
        half[..2048].copy_from_slice(&later[..2048]);
        assert_eq!(
            find_message_mismatch(&half, seed, 17),
            Some(MessageMismatch::Stamp { found: 25, at_end: false })
        );
        // Its tail only.
        let mut tail = vec![0u8; 4096];
        fill_message(&mut tail, seed, 17);
        tail[4000..].copy_from_slice(&later[4000..]);
        assert_eq!(
            find_message_mismatch(&tail, seed, 17),
            Some(MessageMismatch::Stamp { found: 25, at_end: true })
        );
        // A corrupted body byte, and an all-zero (never copied in) slot.
        let mut corrupted = vec![0u8; 4096];
        fill_message(&mut corrupted, seed, 17);
        corrupted[100] ^= 1;
        assert!(matches!(
            find_message_mismatch(&corrupted, seed, 17),
            Some(MessageMismatch::Byte(Mismatch { offset: 100, .. }))
        ));
        assert!(find_message_mismatch(&[0u8; 4096], seed, 17).is_some());
        let text = MessageMismatch::Stamp { found: 25, at_end: false }.describe(17, 1, 8);
        assert!(text.contains("message 17 (slot 1 of 8)") && text.contains("message 25"), "{text}");
    }

    #[test]
    fn small_messages_carry_what_stamp_fits() {
        let seed = pattern_seed(4, 0);
        for len in [1usize, 4, 8, 12, 16] {
            let mut bytes = vec![0u8; len];
            fill_message(&mut bytes, seed, 3);
            assert_eq!(find_message_mismatch(&bytes, seed, 3), None, "{len}");
            assert!(find_message_mismatch(&bytes, seed, 4).is_some(), "{len}: another index differs");
        }
    }

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
