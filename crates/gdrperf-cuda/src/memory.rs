//! GPU buffers (for GPUDirect RDMA), their dma-buf export, and pinned host buffers.
//!
//! Two facts shape this file:
//! - A NIC reading GPU memory must see every completed `cuMemcpy` into it. CUDA
//!   only promises that for memory marked `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS`, so
//!   every `GpuBuffer` is marked at allocation and the mark is read back.
//! - `cuMemGetHandleForAddressRange` only exports ranges whose start and size are
//!   multiples of the host page size, while `cuMemAlloc` only promises 256-byte
//!   alignment. So a `GpuBuffer` over-allocates by one page and starts at the
//!   first page boundary inside its allocation.

use std::ffi::{c_uint, c_void};
use std::ops::Range;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use cudarc::driver::sys::{self, CUdeviceptr, CUmemRangeHandleType, CUpointer_attribute};
use cudarc::driver::{result, DriverError};

use crate::driver::{has_symbol, Gpu, DMABUF_SYMBOL};
use crate::error::{CopyDirection, CudaError, DriverCode};

/// The host's page size (4 KiB on x86-64, often 64 KiB on Arm servers such as Grace).
pub fn host_page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as usize
    } else {
        4096
    }
}

/// `value` rounded up to a multiple of `alignment` (a power of two).
pub fn round_up(value: usize, alignment: usize) -> usize {
    debug_assert!(alignment.is_power_of_two());
    (value + alignment - 1) & !(alignment - 1)
}

/// Checks that `range` lies inside a buffer of `len` bytes.
pub(crate) fn check_range(what: &'static str, range: &Range<usize>, len: usize) -> Result<(), CudaError> {
    if range.start > range.end || range.end > len {
        return Err(CudaError::RangeOutOfBounds { what, range: range.clone(), len });
    }
    Ok(())
}

/// GPU memory from `cuMemAlloc`, page-aligned and marked SYNC_MEMOPS.
///
/// Register it with the NIC either with `ibv_reg_mr(device_ptr(), len())` (needs
/// nvidia-peermem) or through [`GpuBuffer::export_dmabuf`]. It must outlive any
/// memory region registered on it.
#[derive(Debug)]
pub struct GpuBuffer {
    gpu: Gpu,
    /// What cuMemAlloc returned; freed on drop.
    allocation: CUdeviceptr,
    /// First page boundary inside the allocation: the buffer's start.
    start: CUdeviceptr,
    len: usize,
    /// `len` rounded up to whole pages: what a dma-buf export covers.
    page_rounded_len: usize,
}

impl GpuBuffer {
    /// Allocates `len` bytes on `gpu` (uninitialized) and marks them SYNC_MEMOPS.
    pub fn new(gpu: &Gpu, len: usize) -> Result<GpuBuffer, CudaError> {
        if len == 0 {
            return Err(CudaError::ZeroLength { what: "GPU buffer" });
        }
        gpu.bind_to_thread()?;
        let page = host_page_size();
        let page_rounded_len = round_up(len, page);
        let bytes = page_rounded_len + page;
        // SAFETY: a context is current; the memory is only handed out as raw addresses.
        let allocation = unsafe { result::malloc_sync(bytes) }.map_err(|error| CudaError::DeviceAlloc {
            gpu: gpu.index(),
            bytes,
            code: error.into(),
        })?;
        let start = round_up(allocation as usize, page) as CUdeviceptr;
        let buffer = GpuBuffer { gpu: gpu.clone(), allocation, start, len, page_rounded_len };
        buffer.set_sync_memops()?;
        Ok(buffer)
    }

    fn set_sync_memops(&self) -> Result<(), CudaError> {
        let enable: c_uint = 1;
        let gpu = self.gpu.index();
        // SAFETY: `allocation` is a live cuMemAlloc pointer; the attribute takes an unsigned int.
        unsafe {
            sys::cuPointerSetAttribute(
                &enable as *const c_uint as *const c_void,
                CUpointer_attribute::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                self.allocation,
            )
        }
        .result()
        .map_err(|error| CudaError::SetSyncMemops { gpu, code: error.into() })?;
        match self.sync_memops()? {
            true => Ok(()),
            false => Err(CudaError::SyncMemopsNotSet { gpu, value: 0 }),
        }
    }

    /// Reads `CU_POINTER_ATTRIBUTE_SYNC_MEMOPS` back from the driver.
    pub fn sync_memops(&self) -> Result<bool, CudaError> {
        self.gpu.bind_to_thread()?;
        // The driver writes a bool-sized value; a zeroed u64 reads it right either way.
        let mut value: u64 = 0;
        // SAFETY: `start` lies inside a live allocation; `value` outlives the call.
        unsafe {
            sys::cuPointerGetAttribute(
                &mut value as *mut u64 as *mut c_void,
                CUpointer_attribute::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                self.start,
            )
        }
        .result()
        .map_err(|error| CudaError::GetSyncMemops { gpu: self.gpu.index(), code: error.into() })?;
        Ok(value != 0)
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The buffer's GPU virtual address (page-aligned); what `ibv_reg_mr` takes with peermem.
    pub fn device_ptr(&self) -> u64 {
        self.start
    }

    /// The length asked for.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: zero-length buffers are refused at allocation.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Exports the buffer as a dma-buf for `ibv_reg_dmabuf_mr`, with the default mapping.
    pub fn export_dmabuf(&self) -> Result<DmaBuf, CudaError> {
        self.export_dmabuf_with(DmaBufMapping::Default)
    }

    /// Exports the buffer as a dma-buf. `DmaBufMapping::Pcie` forces a PCIe BAR
    /// mapping (CUDA 12.8+), needed on coherent platforms (Grace Hopper) where the
    /// default may map over C2C, which a NIC cannot reach; on discrete GPUs such as
    /// the H200 it is refused with `CUDA_ERROR_NOT_SUPPORTED`, and the default works.
    pub fn export_dmabuf_with(&self, mapping: DmaBufMapping) -> Result<DmaBuf, CudaError> {
        if !has_symbol(DMABUF_SYMBOL) {
            return Err(CudaError::DmaBufUnavailable);
        }
        self.gpu.bind_to_thread()?;
        let gpu = self.gpu.index();
        let mut fd: i32 = -1;
        // SAFETY: the range is page-aligned and inside a live allocation; `fd` outlives the call.
        unsafe {
            sys::cuMemGetHandleForAddressRange(
                &mut fd as *mut i32 as *mut c_void,
                self.start,
                self.page_rounded_len,
                CUmemRangeHandleType::CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                mapping.flags(),
            )
        }
        .result()
        .map_err(|error| CudaError::DmaBufExport {
            gpu,
            bytes: self.page_rounded_len,
            mapping: mapping.label(),
            code: error.into(),
        })?;
        if fd < 0 {
            return Err(CudaError::DmaBufBadFd { gpu, fd });
        }
        // SAFETY: the driver just created this descriptor and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(DmaBuf { fd, offset: 0, len: self.len, exported_len: self.page_rounded_len, iova: self.start })
    }

    /// Copies `data` to the buffer at `offset` and waits (`cuMemcpyHtoD`).
    pub fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), CudaError> {
        // SAFETY: the copies are used within this call, while the buffer lives.
        unsafe { self.copies() }.write(offset, data)
    }

    /// Copies `range` of the buffer into `destination` and waits (`cuMemcpyDtoH`).
    pub fn read_into(&self, offset: usize, destination: &mut [u8]) -> Result<(), CudaError> {
        // SAFETY: as above.
        unsafe { self.copies() }.read_into(offset, destination)
    }

    /// The buffer's bytes reached by synchronous copies through a shared handle, for a copy
    /// engine that does not own the buffer: the simulated NIC of gdrperf-verbs moves a GPU
    /// region's bytes with these, as a NIC would by DMA.
    ///
    /// # Safety
    /// The handle holds the device address, not the allocation: it must not be used after
    /// the buffer is dropped.
    pub unsafe fn copies(&self) -> GpuCopies {
        GpuCopies { gpu: self.gpu.clone(), start: self.start, len: self.len }
    }

    /// `range` of the buffer, copied to a new vector.
    pub fn read(&self, range: Range<usize>) -> Result<Vec<u8>, CudaError> {
        check_range("GPU buffer", &range, self.len)?;
        let mut bytes = vec![0u8; range.len()];
        self.read_into(range.start, &mut bytes)?;
        Ok(bytes)
    }

    /// Sets every byte to `value` and waits.
    pub fn fill(&mut self, value: u8) -> Result<(), CudaError> {
        self.gpu.bind_to_thread()?;
        // SAFETY: the whole buffer lies inside the allocation.
        unsafe { result::memset_d8_sync(self.start, value, self.len) }.map_err(|error| CudaError::Memset {
            gpu: self.gpu.index(),
            bytes: self.len,
            code: error.into(),
        })
    }

    pub(crate) fn copy_error(&self, direction: CopyDirection, bytes: usize, error: DriverError) -> CudaError {
        copy_error(&self.gpu, direction, bytes, error)
    }
}

fn copy_error(gpu: &Gpu, direction: CopyDirection, bytes: usize, error: DriverError) -> CudaError {
    CudaError::Memcpy { gpu: gpu.index(), direction, bytes, code: DriverCode::from(error) }
}

/// Synchronous copies into and out of a [`GpuBuffer`], by a shared handle: see
/// [`GpuBuffer::copies`].
#[derive(Debug, Clone)]
pub struct GpuCopies {
    gpu: Gpu,
    start: CUdeviceptr,
    len: usize,
}

impl GpuCopies {
    /// Copies `data` to the buffer at `offset` and waits (`cuMemcpyHtoD`).
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), CudaError> {
        let range = offset..offset.saturating_add(data.len());
        check_range("GPU buffer", &range, self.len)?;
        if data.is_empty() {
            return Ok(());
        }
        self.gpu.bind_to_thread()?;
        // SAFETY: the destination range is inside the buffer (checked), which the handle's
        // maker keeps alive (`GpuBuffer::copies`); the copy is synchronous.
        unsafe { result::memcpy_htod_sync(self.start + offset as u64, data) }
            .map_err(|error| copy_error(&self.gpu, CopyDirection::HostToDevice, data.len(), error))
    }

    /// Copies `destination.len()` bytes at `offset` of the buffer into `destination` and waits
    /// (`cuMemcpyDtoH`).
    pub fn read_into(&self, offset: usize, destination: &mut [u8]) -> Result<(), CudaError> {
        let range = offset..offset.saturating_add(destination.len());
        check_range("GPU buffer", &range, self.len)?;
        if destination.is_empty() {
            return Ok(());
        }
        self.gpu.bind_to_thread()?;
        let bytes = destination.len();
        // SAFETY: the source range is inside the buffer (checked), kept alive as above.
        unsafe { result::memcpy_dtoh_sync(destination, self.start + offset as u64) }
            .map_err(|error| copy_error(&self.gpu, CopyDirection::DeviceToHost, bytes, error))
    }
}

impl Drop for GpuBuffer {
    fn drop(&mut self) {
        // Errors cannot be returned from drop; a failed free leaks GPU memory until exit.
        if self.gpu.bind_to_thread().is_ok() {
            // SAFETY: allocated by cuMemAlloc in new(), freed exactly once.
            let _ = unsafe { result::free_sync(self.allocation) };
        }
    }
}

/// How a dma-buf export maps GPU memory for other devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaBufMapping {
    /// Flags 0: the driver's choice (PCIe BAR1 on discrete GPUs).
    Default,
    /// `CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE` (CUDA 12.8+).
    Pcie,
}

impl DmaBufMapping {
    fn flags(&self) -> u64 {
        match self {
            DmaBufMapping::Default => 0,
            DmaBufMapping::Pcie => sys::CUmemRangeFlags::CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE as u64,
        }
    }

    fn label(&self) -> &'static str {
        match self {
            DmaBufMapping::Default => "",
            DmaBufMapping::Pcie => ", MAPPING_TYPE_PCIE",
        }
    }
}

/// A dma-buf exported from a [`GpuBuffer`]: exactly the arguments of
/// `ibv_reg_dmabuf_mr(pd, offset(), len(), iova(), fd(), access)`.
///
/// Using the GPU address as `iova` makes remote keys and addresses the same
/// whether a buffer was registered through peermem or dma-buf. Keep the
/// `GpuBuffer` alive as long as the memory region; the fd may be closed after
/// registration (the kernel holds its own reference) but is kept here for clarity.
#[derive(Debug)]
pub struct DmaBuf {
    fd: OwnedFd,
    offset: u64,
    len: usize,
    exported_len: usize,
    iova: u64,
}

impl DmaBuf {
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Where the buffer starts inside the dma-buf (0: the export starts at the buffer).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes to register: the buffer's length.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the dma-buf covers: `len()` rounded up to whole host pages.
    pub fn exported_len(&self) -> usize {
        self.exported_len
    }

    /// The GPU virtual address of the buffer's first byte.
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// Takes the descriptor, e.g. to hand its ownership to another layer.
    pub fn into_fd(self) -> OwnedFd {
        self.fd
    }
}

/// Page-locked host memory from `cuMemHostAlloc(PORTABLE)`.
///
/// Pinned memory is what lets copies run at full PCIe speed and asynchronously,
/// and it is what the NIC registers in `cuda-staged` mode. PORTABLE makes it
/// pinned for every GPU's context, so one bounce buffer can serve several GPUs.
#[derive(Debug)]
pub struct PinnedHostBuffer {
    gpu: Gpu,
    pointer: *mut u8,
    len: usize,
}

// SAFETY: the buffer owns its memory exclusively; shared access is read-only
// through &self and writes need &mut self, as for Vec<u8>.
unsafe impl Send for PinnedHostBuffer {}
unsafe impl Sync for PinnedHostBuffer {}

impl PinnedHostBuffer {
    /// Allocates `len` zeroed bytes of pinned host memory (allocated while `gpu`'s context is current).
    pub fn new(gpu: &Gpu, len: usize) -> Result<PinnedHostBuffer, CudaError> {
        if len == 0 {
            return Err(CudaError::ZeroLength { what: "pinned host buffer" });
        }
        gpu.bind_to_thread()?;
        // SAFETY: a context is current; the memory is zeroed below before any read.
        let pointer = unsafe { result::malloc_host(len, sys::CU_MEMHOSTALLOC_PORTABLE) }
            .map_err(|error| CudaError::HostAlloc { gpu: gpu.index(), bytes: len, code: error.into() })?
            as *mut u8;
        // SAFETY: `pointer` is valid for `len` writable bytes.
        unsafe { std::ptr::write_bytes(pointer, 0, len) };
        Ok(PinnedHostBuffer { gpu: gpu.clone(), pointer, len })
    }

    /// The host address, e.g. for `ibv_reg_mr`.
    pub fn as_ptr(&self) -> *const u8 {
        self.pointer
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.pointer
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: valid, initialized (zeroed at allocation) and owned for `len` bytes.
        unsafe { std::slice::from_raw_parts(self.pointer, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.pointer, self.len) }
    }
}

impl Drop for PinnedHostBuffer {
    fn drop(&mut self) {
        // Errors cannot be returned from drop; a failed free leaks until exit.
        if self.gpu.bind_to_thread().is_ok() {
            // SAFETY: allocated by cuMemHostAlloc in new(), freed exactly once.
            let _ = unsafe { result::free_host(self.pointer as *mut c_void) };
        }
    }
}

impl Gpu {
    /// Allocates a [`GpuBuffer`] of `len` bytes on this GPU.
    pub fn alloc(&self, len: usize) -> Result<GpuBuffer, CudaError> {
        GpuBuffer::new(self, len)
    }

    /// Allocates a [`PinnedHostBuffer`] of `len` bytes.
    pub fn alloc_pinned(&self, len: usize) -> Result<PinnedHostBuffer, CudaError> {
        PinnedHostBuffer::new(self, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_up_to_pages() {
        assert_eq!(round_up(1, 4096), 4096);
        assert_eq!(round_up(4096, 4096), 4096);
        assert_eq!(round_up(4097, 4096), 8192);
        assert_eq!(round_up(1_000_003, 65536), 1_048_576);
    }

    #[test]
    fn host_page_size_is_a_power_of_two() {
        assert!(host_page_size().is_power_of_two());
        assert!(host_page_size() >= 4096);
    }

    #[test]
    fn ranges_are_checked() {
        assert!(check_range("x", &(0..10), 10).is_ok());
        assert!(check_range("x", &(10..10), 10).is_ok());
        assert!(check_range("x", &(5..11), 10).is_err());
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 6..5;
        assert!(check_range("x", &backwards, 10).is_err());
    }
}
