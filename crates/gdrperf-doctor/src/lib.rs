//! Can this node do GPUDirect RDMA, and which NIC goes with which GPU?
//!
//! `gdrperf doctor` answers from sysfs: the RDMA devices and their ports, the
//! GPUs, the PCIe tree between them, the NVIDIA driver and its GPUDirect
//! modules, ACS and the IOMMU. Everything is read under a root directory
//! ([`SysRoot`]), so the same code runs on a live server (`/`) and on fixture
//! trees ([`fixture`]) that reproduce real ones.
//!
//! The pieces, in the order a report is built:
//!
//! 1. [`pci`]: PCI functions and their place in the PCIe tree; ACS from config space.
//! 2. [`rdma`]: `/sys/class/infiniband` devices, ports, GIDs, MTU.
//! 3. [`gpu`]: NVIDIA GPUs on the bus merged with what CUDA says
//!    ([`CudaFacts`], filled by the caller), and the kernel driver.
//! 4. [`gpudirect`]: dma-buf or nvidia-peermem, and what `--gdr auto` takes.
//! 5. [`iommu`]: whether DMA is translated.
//! 6. [`topology`]: PIX/PXB/PHB/NODE/SYS for each GPU × NIC pair, and the
//!    recommended NIC per GPU.
//! 7. [`verdict`]: OK/WARN/FAIL lines and the exit code.
//!
//! ```no_run
//! use std::path::Path;
//! use gdrperf_doctor::{diagnose, CudaFacts};
//!
//! let report = diagnose(Path::new("/"), CudaFacts::NotQueried { reason: "example".into() })?;
//! print!("{report}");
//! std::process::exit(report.exit_code.into());
//! # Ok::<(), gdrperf_doctor::DoctorError>(())
//! ```

use std::path::{Path, PathBuf};

pub mod fixture;
pub mod gpu;
pub mod gpudirect;
pub mod iommu;
pub mod pci;
pub mod rdma;
mod render;
pub mod report;
pub mod sysfs;
pub mod topology;
pub mod verdict;

pub use gpu::{CudaFacts, CudaGpu};
pub use report::Report;
pub use sysfs::SysRoot;
pub use topology::Relation;
pub use verdict::{Level, Verdict};

/// Why the doctor could not examine a root at all. Missing facts below the
/// root are not errors: they are reported as unknown or absent.
#[derive(Debug, thiserror::Error)]
pub enum DoctorError {
    #[error("cannot read sysfs root {root} (pass an existing directory to --sysfs-root)")]
    RootUnreadable { root: PathBuf, source: std::io::Error },
    #[error(
        "{root} has no sys/ directory: --sysfs-root must point at a directory that holds sys/ (and proc/), like /"
    )]
    NoSysUnderRoot { root: PathBuf },
    #[error("{bus_id:?} is not a PCI bus id (expected a form like 0000:1b:00.0 or 00000000:1B:00.0)")]
    BadBusId { bus_id: String },
    #[error("no NVIDIA GPU at PCI {bus_id} under {root} (check the bus id with `nvidia-smi --query-gpu=pci.bus_id --format=csv`)")]
    GpuNotFound { bus_id: String, root: PathBuf },
}

/// Examines the node whose sysfs is under `sysfs_root` and judges it.
/// `cuda` carries what CUDA said about this machine's GPUs, or why it was not asked.
pub fn diagnose(sysfs_root: &Path, cuda: CudaFacts) -> Result<Report, DoctorError> {
    let sys = SysRoot::open(sysfs_root)?;
    Ok(report::build(&sys, cuda))
}

/// The RDMA device `--ib-dev auto` should use with the GPU at `gpu_bus_id`:
/// the NIC closest to it on PCIe, with ties broken so that GPUs pair 1:1 with
/// NICs (as `gdrperf doctor` shows). `Ok(None)` when the node has no RDMA
/// device at all. Accepts CUDA's bus id spelling (`00000000:1B:00.0`).
pub fn recommend_nic(sysfs_root: &Path, gpu_bus_id: &str) -> Result<Option<String>, DoctorError> {
    let bus_id = pci::normalize_bus_id(gpu_bus_id)
        .ok_or_else(|| DoctorError::BadBusId { bus_id: gpu_bus_id.to_string() })?;
    let sys = SysRoot::open(sysfs_root)?;
    let inventory = report::Inventory::scan(&sys);
    if !inventory.pci_devices.iter().any(|device| device.address == bus_id && device.is_nvidia_gpu()) {
        return Err(DoctorError::GpuNotFound { bus_id, root: sysfs_root.to_path_buf() });
    }
    let recommendations = report::recommend_from_sysfs(&inventory);
    Ok(recommendations.into_iter().find(|recommendation| recommendation.gpu_bus_id == bus_id).map(|r| r.nic))
}
