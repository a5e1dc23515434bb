//! Which NIC is closest to which GPU on PCIe, read from sysfs under a chosen root.
//!
//! Two users share it: the benches, whose `-d auto` picks the RDMA device nearest the GPU
//! ([`recommend_nic`]), and `gdrperf doctor`, which builds its whole report on the same facts.
//! It is its own crate so that the benches' core knows PCIe topology without knowing the
//! doctor's verdicts and report.
//!
//! 1. [`sysfs`]: every read goes through [`SysRoot`], so a fixture tree stands in for `/`.
//! 2. [`pci`]: PCI functions and their place in the PCIe tree; ACS from config space.
//! 3. [`rdma`]: `/sys/class/infiniband` devices, ports, GIDs, MTU.
//! 4. [`topology`]: PIX/PXB/PHB/NODE/SYS for a GPU × NIC pair, and the recommended NIC per GPU.
//! 5. [`iommu`]: whether DMA is translated (the doctor judges it; `gdrperf-ceiling` names it as
//!    a cause of a short row).
//! 6. [`aer`]: PCIe Advanced Error Reporting counters of any function on a path.
//! 7. [`identity`]: what the node is for the record (versions, GUIDs, board ids, UUIDs, links,
//!    the path between each GPU and NIC), which `gdrperf accept` writes as `inventory.json`.
//! 8. [`pcie_health`]: AER counters and link speed/width of a GPU, a NIC and the bridges above
//!    them, re-read per soak interval; what moved between two reads.
//! 9. [`findings`]: one judgement of these facts (a link below its best, Device Control,
//!    AER counters, ACS, IOMMU), shared by the doctor's verdict and a row's causes.

use std::path::Path;

pub mod aer;
mod error;
pub mod findings;
pub mod identity;
pub mod iommu;
pub mod pci;
pub mod pcie;
pub mod pcie_health;
pub mod rdma;
pub mod sysfs;
pub mod topology;

pub use error::TopologyError;
pub use sysfs::SysRoot;
pub use topology::Relation;

use pci::PciDevice;
use rdma::{Backing, RdmaDevice};
use topology::{Endpoint, NicCandidate, Recommendation};

/// What sysfs alone says about GPUs and NICs: enough for [`recommend_nic`].
pub struct Inventory {
    pub pci_devices: Vec<PciDevice>,
    pub rdma_devices: Vec<RdmaDevice>,
}

impl Inventory {
    pub fn scan(sys: &SysRoot) -> Self {
        Inventory { pci_devices: pci::scan(sys), rdma_devices: rdma::scan(sys) }
    }

    /// Every RDMA device as a candidate for a GPU.
    pub fn nic_candidates(&self) -> Vec<NicCandidate<'_>> {
        self.rdma_devices
            .iter()
            .map(|device| NicCandidate {
                name: &device.name,
                endpoint: match &device.backing {
                    Backing::Hardware { pci } => {
                        Some(Endpoint { location: &pci.location, numa_node: pci.numa_node })
                    }
                    Backing::Software { .. } => None,
                },
                has_active_port: device.ports.iter().any(|port| port.is_active()),
            })
            .collect()
    }

    /// The NVIDIA GPUs on the bus as the recommendation wants them: in PCI order, the order
    /// that makes the pairing the same whether or not CUDA was asked.
    pub fn gpu_endpoints(&self) -> Vec<(String, Endpoint<'_>)> {
        let mut endpoints: Vec<(String, Endpoint)> = self
            .pci_devices
            .iter()
            .filter(|device| device.is_nvidia_gpu())
            .map(|device| {
                (device.address.clone(), Endpoint { location: &device.location, numa_node: device.numa_node })
            })
            .collect();
        endpoints.sort_by(|a, b| a.0.cmp(&b.0));
        endpoints
    }

    /// The recommended NIC of every GPU sysfs shows.
    pub fn recommendations(&self) -> Vec<Recommendation> {
        topology::recommend(&self.gpu_endpoints(), &self.nic_candidates())
    }
}

/// The RDMA device `--ib-dev auto` should use with the GPU at `gpu_bus_id`:
/// the NIC closest to it on PCIe, with ties broken so that GPUs pair 1:1 with
/// NICs (as `gdrperf doctor` shows). `Ok(None)` when the node has no RDMA
/// device at all. Accepts CUDA's bus id spelling (`00000000:1B:00.0`).
pub fn recommend_nic(sysfs_root: &Path, gpu_bus_id: &str) -> Result<Option<String>, TopologyError> {
    let bus_id = pci::normalize_bus_id(gpu_bus_id)
        .ok_or_else(|| TopologyError::BadBusId { bus_id: gpu_bus_id.to_string() })?;
    let sys = SysRoot::open(sysfs_root)?;
    let inventory = Inventory::scan(&sys);
    if !inventory.pci_devices.iter().any(|device| device.address == bus_id && device.is_nvidia_gpu()) {
        return Err(TopologyError::GpuNotFound { bus_id, root: sysfs_root.to_path_buf() });
    }
    let recommendations = inventory.recommendations();
    Ok(recommendations.into_iter().find(|recommendation| recommendation.gpu_bus_id == bus_id).map(|r| r.nic))
}
