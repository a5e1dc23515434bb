//! Loading the CUDA driver, describing its GPUs, and opening one for work.
//!
//! `Cuda::load()` is the only way in: it checks that `libcuda.so` exists and has
//! every symbol gdrperf calls *before* cudarc touches it, because cudarc panics
//! on a missing library or symbol and gdrperf must instead say what to install.

use std::ffi::{c_char, c_int, CStr};
use std::sync::Arc;

use cudarc::driver::sys::{self, CUdevice_attribute};
use cudarc::driver::{result, CudaContext, DriverError};

use crate::error::{CudaError, DriverCode};
use crate::selection::{GpuSelection, PciBusId, SelectionError};

/// Every libcuda symbol gdrperf calls directly or through cudarc, except
/// `cuMemGetHandleForAddressRange`, which is optional (dma-buf only) and checked
/// when an export is asked for.
const REQUIRED_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDeviceGetPCIBusId",
    "cuDeviceTotalMem_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemsetD8_v2",
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuPointerSetAttribute",
    "cuPointerGetAttribute",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventQuery",
    "cuEventSynchronize",
];

/// The symbol that dma-buf export needs (driver R515 / CUDA 11.7 and newer).
pub(crate) const DMABUF_SYMBOL: &str = "cuMemGetHandleForAddressRange";

/// Whether a `libcuda.so` can be loaded at all. Safe to call on machines without a GPU.
pub fn libcuda_present() -> bool {
    // SAFETY: only tries to dlopen the library by its usual names.
    unsafe { sys::is_culib_present() }
}

/// Whether the loaded libcuda exports `symbol`. Only call after `libcuda_present()`.
pub(crate) fn has_symbol(symbol: &str) -> bool {
    // SAFETY: the library is present (checked by the caller), so culib() loads it
    // without panicking; looking a symbol up does not call it.
    unsafe { sys::culib().get::<unsafe extern "C" fn()>(symbol.as_bytes()).is_ok() }
}

/// The CUDA version the driver supports, from `cuDriverGetVersion` (e.g. 13.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DriverVersion {
    pub major: u32,
    pub minor: u32,
}

impl DriverVersion {
    /// Decodes CUDA's `1000 * major + 10 * minor` encoding.
    pub fn from_encoded(encoded: i32) -> Self {
        let encoded = encoded.max(0) as u32;
        DriverVersion { major: encoded / 1000, minor: (encoded % 1000) / 10 }
    }
}

impl std::fmt::Display for DriverVersion {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}.{}", self.major, self.minor)
    }
}

/// The GPUDirect-related device attributes. `None` means the driver does not
/// know the attribute (older than the CUDA version that introduced it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuDirectSupport {
    /// `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED`: GPU memory can be exported as a
    /// dma-buf, so `ibv_reg_dmabuf_mr` works without nvidia-peermem.
    pub dma_buf: Option<bool>,
    /// `CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED`: third-party devices (NICs) may map GPU memory.
    pub rdma: Option<bool>,
    /// `..._GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED`: also for `cuMemCreate` (VMM) allocations.
    pub rdma_with_vmm: Option<bool>,
    /// `..._GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS`: bit 0 = host-side flush, bit 1 = memops flush.
    pub rdma_flush_writes_options: Option<i32>,
    /// `..._GPU_DIRECT_RDMA_WRITES_ORDERING`: 0 none, 100 owner, 200 all devices; the scope
    /// in which a NIC's writes are seen in order by CUDA work without an explicit flush.
    pub rdma_writes_ordering: Option<i32>,
}

/// A CUDA UUID as nvidia-smi writes it: `GPU-` and the 16 bytes in hex, grouped 4-2-2-2-6.
pub fn uuid_text(bytes: &[u8; 16]) -> String {
    let hex = |range: std::ops::Range<usize>| {
        bytes[range].iter().map(|byte| format!("{byte:02x}")).collect::<String>()
    };
    format!("GPU-{}-{}-{}-{}-{}", hex(0..4), hex(4..6), hex(6..8), hex(8..10), hex(10..16))
}

/// What a bench or `gdrperf doctor` needs to know about one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuInfo {
    /// CUDA device index (after `CUDA_VISIBLE_DEVICES`).
    pub index: usize,
    pub name: String,
    pub bus_id: PciBusId,
    /// The GPU's UUID as nvidia-smi prints it (`GPU-5e1c2c3a-...`): the card's identity, which a
    /// bus id (the slot) is not. None where the driver lacks `cuDeviceGetUuid` or refuses it.
    pub uuid: Option<String>,
    pub total_memory_bytes: usize,
    pub compute_capability: (i32, i32),
    pub gpudirect: GpuDirectSupport,
    /// The CUDA version the driver supports (same for every GPU; repeated for convenience).
    pub driver_version: DriverVersion,
}

/// Proof that libcuda is loaded and initialized; the entry point of this crate.
#[derive(Debug, Clone)]
pub struct Cuda {
    driver_version: DriverVersion,
    device_count: usize,
}

impl Cuda {
    /// Loads libcuda, checks its symbols, runs `cuInit` and counts the GPUs.
    ///
    /// Zero GPUs is not an error here (doctor reports it); selecting one is.
    pub fn load() -> Result<Cuda, CudaError> {
        if !libcuda_present() {
            return Err(CudaError::LibraryMissing);
        }
        if let Some(symbol) = REQUIRED_SYMBOLS.iter().find(|symbol| !has_symbol(symbol)) {
            return Err(CudaError::DriverTooOld { symbol });
        }
        result::init().map_err(|error| CudaError::Init { code: error.into() })?;
        let mut encoded: c_int = 0;
        // SAFETY: the symbol exists (checked above) and writes one int.
        unsafe { sys::cuDriverGetVersion(&mut encoded) }
            .result()
            .map_err(|error| CudaError::DriverVersion { code: error.into() })?;
        let device_count =
            result::device::get_count().map_err(|error| CudaError::DeviceCount { code: error.into() })?;
        Ok(Cuda {
            driver_version: DriverVersion::from_encoded(encoded),
            device_count: device_count.max(0) as usize,
        })
    }

    pub fn driver_version(&self) -> DriverVersion {
        self.driver_version
    }

    pub fn device_count(&self) -> usize {
        self.device_count
    }

    /// The NVIDIA kernel module's version (e.g. `580.95.05`), when the module is loaded.
    pub fn kernel_module_version(&self) -> Option<String> {
        std::fs::read_to_string("/sys/module/nvidia/version").ok().map(|text| text.trim().to_string())
    }

    /// Whether this driver can export dma-bufs at all (has `cuMemGetHandleForAddressRange`).
    pub fn has_dmabuf_export(&self) -> bool {
        has_symbol(DMABUF_SYMBOL)
    }

    fn check_index(&self, gpu: usize) -> Result<(), CudaError> {
        if self.device_count == 0 {
            return Err(SelectionError::NoGpus.into());
        }
        if gpu >= self.device_count {
            return Err(SelectionError::OutOfRange { index: gpu, count: self.device_count }.into());
        }
        Ok(())
    }

    /// Describes GPU `gpu` without creating a context on it.
    pub fn gpu_info(&self, gpu: usize) -> Result<GpuInfo, CudaError> {
        self.check_index(gpu)?;
        let device = result::device::get(gpu as c_int)
            .map_err(|error| CudaError::DeviceGet { gpu, code: error.into() })?;
        let name = result::device::get_name(device)
            .map_err(|error| CudaError::DeviceName { gpu, code: error.into() })?;
        // SAFETY: `device` came from cuDeviceGet.
        let total_memory_bytes = unsafe { result::device::total_mem(device) }
            .map_err(|error| CudaError::TotalMemory { gpu, code: error.into() })?;
        let attribute = |attribute: CUdevice_attribute, label: &'static str| -> Result<i32, CudaError> {
            // SAFETY: `device` came from cuDeviceGet.
            unsafe { result::device::get_attribute(device, attribute) }
                .map_err(|error| CudaError::DeviceAttribute { gpu, attribute: label, code: error.into() })
        };
        // Attributes newer than the driver come back as CUDA_ERROR_INVALID_VALUE: unknown, not an error.
        let optional = |attribute: CUdevice_attribute,
                        label: &'static str|
         -> Result<Option<i32>, CudaError> {
            match unsafe { result::device::get_attribute(device, attribute) } {
                Ok(value) => Ok(Some(value)),
                Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE)) => Ok(None),
                Err(error) => Err(CudaError::DeviceAttribute { gpu, attribute: label, code: error.into() }),
            }
        };
        use CUdevice_attribute::*;
        let compute_capability = (
            attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR")?,
            attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR")?,
        );
        let flag = |value: Option<i32>| value.map(|value| value != 0);
        let gpudirect = GpuDirectSupport {
            dma_buf: flag(optional(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, "DMA_BUF_SUPPORTED")?),
            rdma: flag(optional(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, "GPU_DIRECT_RDMA_SUPPORTED")?),
            rdma_with_vmm: flag(optional(
                CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
                "GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED",
            )?),
            rdma_flush_writes_options: optional(
                CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS,
                "GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS",
            )?,
            rdma_writes_ordering: optional(
                CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING,
                "GPU_DIRECT_RDMA_WRITES_ORDERING",
            )?,
        };
        // The symbol is looked up first: dynamic loading panics on a missing one.
        let uuid = has_symbol("cuDeviceGetUuid")
            .then(|| result::device::get_uuid(device).ok())
            .flatten()
            .map(|uuid| uuid_text(&uuid.bytes.map(|byte| byte as u8)));
        Ok(GpuInfo {
            index: gpu,
            name,
            bus_id: pci_bus_id(gpu, device)?,
            uuid,
            total_memory_bytes,
            compute_capability,
            gpudirect,
            driver_version: self.driver_version,
        })
    }

    /// Every GPU's description, in CUDA index order.
    pub fn gpus(&self) -> Result<Vec<GpuInfo>, CudaError> {
        (0..self.device_count).map(|gpu| self.gpu_info(gpu)).collect()
    }

    /// The CUDA indices a `--gpu` / `--gpu-bus-id` selection means on this machine.
    pub fn resolve(&self, selection: &GpuSelection) -> Result<Vec<usize>, CudaError> {
        let bus_ids = match selection {
            // Only a bus-id selection needs the (slower) bus id lookup.
            GpuSelection::BusId(_) => self.gpus()?.into_iter().map(|info| info.bus_id).collect(),
            _ => vec![PciBusId { domain: 0, bus: 0, device: 0, function: 0 }; self.device_count],
        };
        Ok(selection.resolve(&bus_ids)?)
    }

    /// Opens GPU `gpu` for work: retains its primary context (shared with any
    /// other library in the process, as the CUDA runtime does).
    pub fn open_gpu(&self, gpu: usize) -> Result<Gpu, CudaError> {
        let info = self.gpu_info(gpu)?;
        let context =
            CudaContext::new(gpu).map_err(|error| CudaError::ContextRetain { gpu, code: error.into() })?;
        Ok(Gpu { context, info: Arc::new(info) })
    }
}

fn pci_bus_id(gpu: usize, device: sys::CUdevice) -> Result<PciBusId, CudaError> {
    let mut buffer = [0 as c_char; 64];
    // SAFETY: the driver writes a NUL-terminated string of at most `len` bytes.
    unsafe { sys::cuDeviceGetPCIBusId(buffer.as_mut_ptr(), buffer.len() as c_int, device) }
        .result()
        .map_err(|error| CudaError::PciBusId { gpu, code: error.into() })?;
    // SAFETY: NUL-terminated within the buffer (it is zeroed and larger than any bus id).
    let text = unsafe { CStr::from_ptr(buffer.as_ptr()) }.to_string_lossy().into_owned();
    text.parse().map_err(|_| CudaError::PciBusIdUnreadable { gpu, text })
}

/// One opened GPU: its primary context and description.
///
/// Cheap to clone and usable from any thread: every operation first makes this
/// GPU's context current on the calling thread, so one process can drive
/// several GPUs from several threads.
#[derive(Debug, Clone)]
pub struct Gpu {
    context: Arc<CudaContext>,
    info: Arc<GpuInfo>,
}

impl Gpu {
    pub fn index(&self) -> usize {
        self.info.index
    }

    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    /// Makes this GPU's context current on the calling thread.
    pub fn bind_to_thread(&self) -> Result<(), CudaError> {
        self.context.bind_to_thread().map_err(|error| self.bind_error(error))
    }

    pub(crate) fn bind_error(&self, error: DriverError) -> CudaError {
        CudaError::ContextBind { gpu: self.index(), code: DriverCode::from(error) }
    }

    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.context
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_version_decodes_cuda_encoding() {
        assert_eq!(DriverVersion::from_encoded(13000).to_string(), "13.0");
        assert_eq!(DriverVersion::from_encoded(12080), DriverVersion { major: 12, minor: 8 });
        assert_eq!(DriverVersion::from_encoded(11070).to_string(), "11.7");
    }

    #[test]
    fn a_uuid_is_written_as_nvidia_smi_writes_it() {
        let bytes =
            [0x5e, 0x1c, 0x2c, 0x3a, 0x00, 0x00, 0x40, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1b];
        assert_eq!(uuid_text(&bytes), "GPU-5e1c2c3a-0000-4000-8000-00000000001b");
    }

    #[test]
    fn load_without_libcuda_is_a_clear_error_not_a_panic() {
        if libcuda_present() {
            return; // this machine has a driver; the GPU runs cover the other path
        }
        let error = Cuda::load().unwrap_err();
        assert!(matches!(error, CudaError::LibraryMissing), "{error}");
    }
}
