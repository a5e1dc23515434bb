//! Can this node do GPUDirect RDMA, and which NIC goes with which GPU?
//!
//! `gdrperf doctor` answers from sysfs: the RDMA devices and their ports, the
//! GPUs, the PCIe tree between them, the NVIDIA driver and its GPUDirect
//! modules, ACS and the IOMMU. Everything is read under a root directory
//! ([`SysRoot`]), so the same code runs on a live server (`/`) and on fixture
//! trees (the `gdrperf-doctor-fixtures` test-support crate) that reproduce real ones.
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
//! 7. `gdrperf_topology::findings`: the PCIe findings on every GPU, NIC and bridge of each recommended
//!    pair (the same judgement a short row's causes use), in [`Report::findings`].
//! 8. [`verdict`]: OK/WARN/FAIL lines ([`verdict_line`]) and the exit code.
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

use std::path::Path;

pub mod gpu;
pub mod gpudirect;
mod render;
pub mod report;
pub mod verdict;
pub mod verdict_line;

/// The sysfs, PCI, PCIe-facts, RDMA, IOMMU and PCIe-path pieces live in `gdrperf-topology` (the benches' `-d auto`
/// uses them without the doctor); they are re-exported under their old paths.
pub use gdrperf_topology::{iommu, pci, pcie, rdma, recommend_nic, sysfs, topology};

pub use gpu::{CudaFacts, CudaGpu};
pub use report::Report;
pub use sysfs::SysRoot;
pub use topology::Relation;
pub use verdict_line::{Level, Verdict};

/// Why the doctor could not examine a root at all: the topology crate's error, under the
/// name the doctor's callers know.
pub use gdrperf_topology::TopologyError as DoctorError;

/// Examines the node whose sysfs is under `sysfs_root` and judges it.
/// `cuda` carries what CUDA said about this machine's GPUs, or why it was not asked.
pub fn diagnose(sysfs_root: &Path, cuda: CudaFacts) -> Result<Report, DoctorError> {
    let sys = SysRoot::open(sysfs_root)?;
    // The facts first, then their judgement: the report knows nothing of how it is judged.
    let mut report = report::build(&sys, cuda);
    report.verdicts = verdict::judge(&report);
    report.exit_code = report.worst_level().exit_code();
    Ok(report)
}
