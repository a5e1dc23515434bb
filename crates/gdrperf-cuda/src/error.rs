//! Every way the CUDA half can fail, one variant per failing call.
//!
//! Each message names the driver call, the `CUresult` it returned (by name, e.g.
//! `CUDA_ERROR_NOT_SUPPORTED`) and, where we know one, a hint saying what to do
//! next. The hints live here, next to the variants, so that the code that makes a
//! call only has to pick the variant.

use std::fmt;
use std::ops::Range;

use cudarc::driver::sys::CUresult;
use cudarc::driver::DriverError;

use crate::selection::SelectionError;

/// A `CUresult` other than `CUDA_SUCCESS`, displayed by its name.
///
/// The name comes from the binding's enum, not from `cuGetErrorName`, so an
/// error can be shown even when the driver is in a bad state.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DriverCode(pub(crate) CUresult);

impl DriverCode {
    /// The enum name, e.g. `CUDA_ERROR_OUT_OF_MEMORY`.
    pub fn name(&self) -> String {
        format!("{:?}", self.0)
    }

    /// The numeric `CUresult`, as in NVIDIA's documentation.
    pub fn number(&self) -> u32 {
        self.0 as u32
    }

    /// A hint for codes whose cause is the same whichever call returned them.
    fn general_hint(&self) -> Option<&'static str> {
        use CUresult as R;
        Some(match self.0 {
            R::CUDA_ERROR_NO_DEVICE => "no NVIDIA GPU is visible: check `nvidia-smi` and CUDA_VISIBLE_DEVICES",
            R::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH | R::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE => {
                "the kernel driver and libcuda.so do not match: reinstall the NVIDIA driver (or remove a CUDA compat \
                 package) and reboot"
            }
            R::CUDA_ERROR_STUB_LIBRARY => {
                "the libcuda.so found is the CUDA toolkit's stub, not the driver's: put the driver's directory first in LD_LIBRARY_PATH"
            }
            R::CUDA_ERROR_OUT_OF_MEMORY => "out of memory: use a smaller message size or fewer queue pairs",
            R::CUDA_ERROR_DEVICE_UNAVAILABLE => {
                "the GPU is busy or in exclusive-process compute mode: check `nvidia-smi -q | grep 'Compute Mode'`"
            }
            R::CUDA_ERROR_INVALID_DEVICE => "no GPU with that index: `gdrperf doctor` lists them",
            R::CUDA_ERROR_ECC_UNCORRECTABLE => "the GPU reported an uncorrectable ECC error: check `nvidia-smi -q -d ECC`",
            R::CUDA_ERROR_OPERATING_SYSTEM => "the operating system refused the request: check `dmesg` for NVIDIA messages",
            _ => return None,
        })
    }
}

impl fmt::Display for DriverCode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.name())
    }
}

impl fmt::Debug for DriverCode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}({})", self.name(), self.number())
    }
}

impl From<DriverError> for DriverCode {
    fn from(error: DriverError) -> Self {
        DriverCode(error.0)
    }
}

/// `": hint"` when the code has a general hint, else nothing.
fn hint(code: &DriverCode) -> String {
    code.general_hint().map(|text| format!(": {text}")).unwrap_or_default()
}

/// The hint for a failed dma-buf export; most causes are about the installed driver.
fn dmabuf_hint(code: &DriverCode, mapping: &str) -> String {
    match code.0 {
        CUresult::CUDA_ERROR_NOT_SUPPORTED if !mapping.is_empty() => {
            ": the PCIe mapping type (CUDA 12.8+) is for coherent platforms such as Grace Hopper; discrete GPUs \
             refuse it and use the default mapping, which already goes over PCIe"
                .to_string()
        }
        CUresult::CUDA_ERROR_NOT_SUPPORTED | CUresult::CUDA_ERROR_INVALID_DEVICE => {
            ": dma-buf export needs the NVIDIA open kernel modules (`modinfo nvidia | grep license` says \
             'Dual MIT/GPL') and CUDA >= 11.7 with a Turing or newer GPU; try --gdr peermem"
                .to_string()
        }
        CUresult::CUDA_ERROR_INVALID_VALUE => {
            ": the range must be aligned to the host page size (gdrperf rounds it; please report this)".to_string()
        }
        _ => hint(code),
    }
}

/// Which way a copy went; used in error messages and measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CopyDirection {
    /// Host memory to GPU memory (`cuMemcpyHtoD`).
    HostToDevice,
    /// GPU memory to host memory (`cuMemcpyDtoH`).
    DeviceToHost,
}

impl CopyDirection {
    /// Short lower-case label used in tables and CSV files: `h2d` or `d2h`.
    pub fn label(&self) -> &'static str {
        match self {
            CopyDirection::HostToDevice => "h2d",
            CopyDirection::DeviceToHost => "d2h",
        }
    }

    fn driver_call(&self) -> &'static str {
        match self {
            CopyDirection::HostToDevice => "cuMemcpyHtoD",
            CopyDirection::DeviceToHost => "cuMemcpyDtoH",
        }
    }
}

impl fmt::Display for CopyDirection {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.label())
    }
}

/// Errors of the CUDA half. `gpu` is always the CUDA device index.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    #[error(
        "libcuda.so not found: install the NVIDIA driver (it provides libcuda.so.1) or add its directory \
         to LD_LIBRARY_PATH; --mem host needs no GPU"
    )]
    LibraryMissing,

    #[error(
        "libcuda.so has no symbol {symbol}: the NVIDIA driver is too old for gdrperf (it needs R525 / CUDA 12.0 \
         or newer); --mem host needs no GPU"
    )]
    DriverTooOld { symbol: &'static str },

    #[error("cuInit failed: {code}{}", hint(code))]
    Init { code: DriverCode },

    #[error("cuDriverGetVersion failed: {code}{}", hint(code))]
    DriverVersion { code: DriverCode },

    #[error("cuDeviceGetCount failed: {code}{}", hint(code))]
    DeviceCount { code: DriverCode },

    #[error("cuDeviceGet for GPU {gpu} failed: {code}{}", hint(code))]
    DeviceGet { gpu: usize, code: DriverCode },

    #[error("cuDeviceGetName for GPU {gpu} failed: {code}{}", hint(code))]
    DeviceName { gpu: usize, code: DriverCode },

    #[error("cuDeviceGetPCIBusId for GPU {gpu} failed: {code}{}", hint(code))]
    PciBusId { gpu: usize, code: DriverCode },

    #[error("cuDeviceGetPCIBusId for GPU {gpu} returned '{text}', which is not a PCI address")]
    PciBusIdUnreadable { gpu: usize, text: String },

    #[error("cuDeviceTotalMem for GPU {gpu} failed: {code}{}", hint(code))]
    TotalMemory { gpu: usize, code: DriverCode },

    #[error("cuDeviceGetAttribute({attribute}) for GPU {gpu} failed: {code}{}", hint(code))]
    DeviceAttribute { gpu: usize, attribute: &'static str, code: DriverCode },

    #[error("cuDevicePrimaryCtxRetain for GPU {gpu} failed: {code}{}", hint(code))]
    ContextRetain { gpu: usize, code: DriverCode },

    #[error("cuCtxSetCurrent for GPU {gpu} failed: {code}{}", hint(code))]
    ContextBind { gpu: usize, code: DriverCode },

    #[error("a zero-length {what} was requested: buffers must hold at least 1 byte")]
    ZeroLength { what: &'static str },

    #[error("cuMemAlloc of {bytes} bytes on GPU {gpu} failed: {code}{}", hint(code))]
    DeviceAlloc { gpu: usize, bytes: usize, code: DriverCode },

    #[error(
        "cuPointerSetAttribute(SYNC_MEMOPS) on GPU {gpu} failed: {code}{}; without it a NIC may read GPU \
         memory before a cuMemcpy into it is visible",
        hint(code)
    )]
    SetSyncMemops { gpu: usize, code: DriverCode },

    #[error("cuPointerGetAttribute(SYNC_MEMOPS) on GPU {gpu} failed: {code}{}", hint(code))]
    GetSyncMemops { gpu: usize, code: DriverCode },

    #[error(
        "SYNC_MEMOPS reads back as {value} on GPU {gpu} after being set to 1: the driver ignored it, so GPUDirect \
         RDMA may see stale data; update the NVIDIA driver"
    )]
    SyncMemopsNotSet { gpu: usize, value: u64 },

    #[error(
        "cuMemHostAlloc of {bytes} bytes (pinned host memory for GPU {gpu}) failed: {code}{}; pinned memory is \
         limited by free RAM and by `ulimit -l`",
        hint(code)
    )]
    HostAlloc { gpu: usize, bytes: usize, code: DriverCode },

    #[error(
        "dma-buf export is unavailable: libcuda.so lacks cuMemGetHandleForAddressRange (driver older than R515 / \
         CUDA 11.7); update the driver or try --gdr peermem"
    )]
    DmaBufUnavailable,

    #[error(
        "cuMemGetHandleForAddressRange(DMA_BUF_FD{mapping}) of {bytes} bytes on GPU {gpu} failed: {code}{}",
        dmabuf_hint(code, mapping)
    )]
    DmaBufExport { gpu: usize, bytes: usize, mapping: &'static str, code: DriverCode },

    #[error("cuMemGetHandleForAddressRange on GPU {gpu} returned the invalid file descriptor {fd}")]
    DmaBufBadFd { gpu: usize, fd: i32 },

    #[error("cuStreamCreate on GPU {gpu} failed: {code}{}", hint(code))]
    StreamCreate { gpu: usize, code: DriverCode },

    #[error("cuStreamSynchronize on GPU {gpu} failed: {code}{}", hint(code))]
    StreamSynchronize { gpu: usize, code: DriverCode },

    #[error("cuStreamWaitEvent on GPU {gpu} failed: {code}{}", hint(code))]
    StreamWait { gpu: usize, code: DriverCode },

    #[error("cuEventCreate on GPU {gpu} failed: {code}{}", hint(code))]
    EventCreate { gpu: usize, code: DriverCode },

    #[error("cuEventRecord on GPU {gpu} failed: {code}{}", hint(code))]
    EventRecord { gpu: usize, code: DriverCode },

    #[error("cuEventQuery/cuEventSynchronize on GPU {gpu} failed: {code}{}", hint(code))]
    EventWait { gpu: usize, code: DriverCode },

    #[error("{} ({direction}) of {bytes} bytes on GPU {gpu} failed: {code}{}", direction.driver_call(), hint(code))]
    Memcpy { gpu: usize, direction: CopyDirection, bytes: usize, code: DriverCode },

    #[error("cuMemsetD8 of {bytes} bytes on GPU {gpu} failed: {code}{}", hint(code))]
    Memset { gpu: usize, bytes: usize, code: DriverCode },

    #[error("byte range {}..{} does not fit in the {len}-byte {what}", range.start, range.end)]
    RangeOutOfBounds { what: &'static str, range: Range<usize>, len: usize },

    #[error("{what} must be at least 1, got 0")]
    ZeroCount { what: &'static str },

    #[error(transparent)]
    Selection(#[from] SelectionError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_code_is_shown_by_name() {
        let code = DriverCode(CUresult::CUDA_ERROR_NOT_SUPPORTED);
        assert_eq!(code.to_string(), "CUDA_ERROR_NOT_SUPPORTED");
        assert_eq!(code.number(), 801);
    }

    #[test]
    fn dmabuf_not_supported_points_at_open_modules_and_peermem() {
        let error = CudaError::DmaBufExport {
            gpu: 0,
            bytes: 4096,
            mapping: "",
            code: DriverCode(CUresult::CUDA_ERROR_NOT_SUPPORTED),
        };
        let text = error.to_string();
        assert!(text.contains("cuMemGetHandleForAddressRange"), "{text}");
        assert!(text.contains("CUDA_ERROR_NOT_SUPPORTED"), "{text}");
        assert!(text.contains("open kernel modules"), "{text}");
        assert!(text.contains("--gdr peermem"), "{text}");
        let pcie = CudaError::DmaBufExport {
            gpu: 0,
            bytes: 4096,
            mapping: ", MAPPING_TYPE_PCIE",
            code: DriverCode(CUresult::CUDA_ERROR_NOT_SUPPORTED),
        };
        assert!(pcie.to_string().contains("use the default mapping"), "{pcie}");
    }

    #[test]
    fn out_of_memory_gets_a_hint_and_unknown_codes_do_not() {
        let oom = CudaError::DeviceAlloc {
            gpu: 1,
            bytes: 10,
            code: DriverCode(CUresult::CUDA_ERROR_OUT_OF_MEMORY),
        };
        assert!(oom.to_string().contains("smaller message size"), "{oom}");
        let plain = CudaError::DeviceAlloc {
            gpu: 1,
            bytes: 10,
            code: DriverCode(CUresult::CUDA_ERROR_LAUNCH_FAILED),
        };
        assert!(plain.to_string().ends_with("CUDA_ERROR_LAUNCH_FAILED"), "{plain}");
    }

    #[test]
    fn missing_library_says_host_mode_needs_no_gpu() {
        let text = CudaError::LibraryMissing.to_string();
        assert!(text.starts_with("libcuda.so not found"), "{text}");
        assert!(text.contains("--mem host needs no GPU"), "{text}");
    }
}
