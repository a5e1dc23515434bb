//! GPUs: what sysfs knows (PCI place, NUMA node, driver) merged with what only
//! CUDA knows (name, ordinal, DMA_BUF_SUPPORTED, GPU_DIRECT_RDMA_SUPPORTED).
//!
//! This crate does not load CUDA itself: the caller fills [`CudaFacts`] (the
//! `gdrperf` binary does it through `gdrperf-cuda`), so the topology code stays
//! testable on machines without a GPU and on fixture trees.

use serde::Serialize;

use crate::pci::{self, PciDevice};
use crate::sysfs::SysRoot;

/// What CUDA said about this machine, or why it was not asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CudaFacts {
    /// The caller chose not to ask (for example the sysfs root is a fixture,
    /// whose GPUs are not this machine's).
    NotQueried { reason: String },
    /// libcuda could not be loaded or initialized.
    Unavailable { reason: String },
    /// CUDA answered.
    Available {
        /// `cuDriverGetVersion`: 12080 means the driver supports CUDA 12.8.
        driver_api_version: i32,
        gpus: Vec<CudaGpu>,
    },
}

/// One GPU as CUDA enumerates it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CudaGpu {
    /// The CUDA device ordinal (`--gpu N`), which follows `CUDA_DEVICE_ORDER`
    /// and `CUDA_VISIBLE_DEVICES`, not the PCI order.
    pub ordinal: u32,
    pub name: String,
    /// Any spelling `normalize_bus_id` accepts; CUDA gives `00000000:1B:00.0`.
    pub pci_bus_id: String,
    /// `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED`; `None` if the query failed.
    pub dma_buf_supported: Option<bool>,
    /// `CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED`; `None` if the query failed.
    pub gpu_direct_rdma_supported: Option<bool>,
}

/// One GPU in the report.
#[derive(Debug, Clone, Serialize)]
pub struct Gpu {
    /// `GPU<ordinal>` with CUDA; `GPU<n>` in PCI order without it (said in the report).
    pub label: String,
    pub cuda_ordinal: Option<u32>,
    pub name: Option<String>,
    /// Sysfs spelling: `0000:1b:00.0`.
    pub bus_id: String,
    pub dma_buf_supported: Option<bool>,
    pub gpu_direct_rdma_supported: Option<bool>,
    /// The PCI function, when sysfs has it (a CUDA GPU always should).
    pub pci: Option<PciDevice>,
}

impl Gpu {
    pub fn numa_node(&self) -> Option<u32> {
        self.pci.as_ref().and_then(|pci| pci.numa_node)
    }
}

/// Merges the NVIDIA GPUs found on the PCI bus with CUDA's list, matched by bus id.
pub fn merge(pci_devices: &[PciDevice], cuda: &CudaFacts) -> Vec<Gpu> {
    let sysfs_gpus: Vec<&PciDevice> = pci_devices.iter().filter(|device| device.is_nvidia_gpu()).collect();
    let CudaFacts::Available { gpus: cuda_gpus, .. } = cuda else {
        return sysfs_gpus
            .iter()
            .enumerate()
            .map(|(pci_order, device)| Gpu {
                label: format!("GPU{pci_order}"),
                cuda_ordinal: None,
                name: device.device.map(|id| format!("NVIDIA device {id:#06x}")),
                bus_id: device.address.clone(),
                dma_buf_supported: None,
                gpu_direct_rdma_supported: None,
                pci: Some((*device).clone()),
            })
            .collect();
    };
    let mut gpus: Vec<Gpu> = cuda_gpus
        .iter()
        .map(|cuda_gpu| {
            let bus_id =
                pci::normalize_bus_id(&cuda_gpu.pci_bus_id).unwrap_or_else(|| cuda_gpu.pci_bus_id.clone());
            Gpu {
                label: format!("GPU{}", cuda_gpu.ordinal),
                cuda_ordinal: Some(cuda_gpu.ordinal),
                name: Some(cuda_gpu.name.clone()),
                pci: sysfs_gpus
                    .iter()
                    .find(|device| device.address == bus_id)
                    .map(|device| (*device).clone()),
                bus_id,
                dma_buf_supported: cuda_gpu.dma_buf_supported,
                gpu_direct_rdma_supported: cuda_gpu.gpu_direct_rdma_supported,
            }
        })
        .collect();
    gpus.sort_by_key(|gpu| gpu.cuda_ordinal);
    // GPUs hidden from CUDA (CUDA_VISIBLE_DEVICES) still occupy PCIe slots
    // and still compete for NICs, so they stay in the report.
    for device in sysfs_gpus {
        if !gpus.iter().any(|gpu| gpu.bus_id == device.address) {
            gpus.push(Gpu {
                label: format!("GPU@{}", device.address),
                cuda_ordinal: None,
                name: device.device.map(|id| format!("NVIDIA device {id:#06x} (not visible to CUDA)")),
                bus_id: device.address.clone(),
                dma_buf_supported: None,
                gpu_direct_rdma_supported: None,
                pci: Some(device.clone()),
            });
        }
    }
    gpus
}

/// The NVIDIA kernel driver and the GPUDirect module beside it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NvidiaDriver {
    /// `/sys/module/nvidia` exists.
    pub loaded: bool,
    /// `/sys/module/nvidia/version`, e.g. `550.54.15`.
    pub version: Option<String>,
    /// Whether `/proc/driver/nvidia/version` says "Open Kernel Module"; only
    /// the open module can export GPU memory as dma-buf. `None` if unreadable.
    pub open_kernel_module: Option<bool>,
    /// `/sys/module/nvidia_peermem`: the peer-memory path for `ib_core`.
    pub peermem_loaded: bool,
    /// `/sys/module/nv_peer_mem`: the older out-of-tree module with the same role.
    pub legacy_nv_peer_mem_loaded: bool,
}

impl NvidiaDriver {
    pub fn read(sys: &SysRoot) -> Self {
        let proc_version = sys.read_text("proc/driver/nvidia/version");
        NvidiaDriver {
            loaded: sys.exists("sys/module/nvidia"),
            version: sys
                .read_text("sys/module/nvidia/version")
                .or_else(|| proc_version.as_deref().and_then(version_from_proc_text)),
            open_kernel_module: proc_version.as_deref().map(|text| text.contains("Open Kernel Module")),
            peermem_loaded: sys.exists("sys/module/nvidia_peermem"),
            legacy_nv_peer_mem_loaded: sys.exists("sys/module/nv_peer_mem"),
        }
    }

    /// Whether some peer-memory module lets `ib_core` pin GPU memory.
    pub fn any_peermem_loaded(&self) -> bool {
        self.peermem_loaded || self.legacy_nv_peer_mem_loaded
    }
}

/// Finds `550.54.15` in `NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build ...`.
fn version_from_proc_text(text: &str) -> Option<String> {
    let first_line = text.lines().next()?;
    first_line
        .split_whitespace()
        .find(|word| {
            word.contains('.')
                && word.split('.').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_string)
}

/// `12080` -> `12.8`.
pub fn format_cuda_version(version: i32) -> String {
    format!("{}.{}", version / 1000, (version % 1000) / 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_version_is_found_in_either_proc_spelling() {
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16)  Tue Mar  5 22:15:33 UTC 2024\nGCC version:  gcc version 12.2.0";
        let proprietary =
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023";
        assert_eq!(version_from_proc_text(open).as_deref(), Some("550.54.15"));
        assert_eq!(version_from_proc_text(proprietary).as_deref(), Some("535.104.05"));
        assert_eq!(version_from_proc_text("garbage"), None);
    }

    #[test]
    fn cuda_versions_read_as_major_minor() {
        assert_eq!(format_cuda_version(12080), "12.8");
        assert_eq!(format_cuda_version(11070), "11.7");
    }
}
