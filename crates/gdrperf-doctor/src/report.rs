//! Gathering every fact into one [`Report`]: what was found, how GPUs and NICs
//! relate, which NIC each GPU should use, and the verdicts.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::gpu::{self, CudaFacts, Gpu, NvidiaDriver};
use crate::gpudirect::GpuDirect;
use crate::iommu::Iommu;
use crate::pci::{self, AcsState, PciDevice};
use crate::pcie::FunctionFacts;
use crate::rdma::{Backing, RdmaDevice};
use crate::sysfs::SysRoot;
use crate::topology::{self, AcsFinding, Endpoint, PciePath, Recommendation, Relation};
use crate::verdict_line::{Level, Verdict};
use gdrperf_topology::findings::{read as read_findings, Finding, Role};
use gdrperf_topology::Inventory;

/// Everything `gdrperf doctor` knows about a node; serializes to its `--json`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub sysfs_root: String,
    pub kernel_release: Option<String>,
    pub rdma_devices: Vec<RdmaDevice>,
    /// RDMA-capable PCI network functions with no RDMA device on top
    /// (typically `mlx5_core` loaded without `mlx5_ib`).
    pub network_controllers_without_rdma: Vec<PciDevice>,
    pub gpus: Vec<Gpu>,
    pub cuda: CudaFacts,
    pub nvidia_driver: NvidiaDriver,
    pub gpudirect: GpuDirect,
    pub iommu: Iommu,
    /// Every GPU × NIC pair.
    pub pairs: Vec<Pair>,
    /// The NIC chosen for each GPU, in GPU order.
    pub recommendations: Vec<Recommendation>,
    /// ACS on the bridges of all GPU–NIC paths.
    pub acs: AcsSummary,
    /// Link training and Device Control of every GPU and PCI NIC (see [`crate::pcie`]).
    pub pcie: Vec<FunctionFacts>,
    /// The PCIe findings (`gdrperf_topology::findings`) on every GPU and hardware NIC, and on every
    /// bridge between each GPU and its recommended NIC; the verdict lists them all.
    pub findings: Vec<Finding>,
    pub verdicts: Vec<Verdict>,
    /// 0: all OK; 1: at least one WARN; 2: at least one FAIL.
    pub exit_code: u8,
}

/// ACS over every bridge on a GPU–NIC path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AcsSummary {
    /// Bridges looked at.
    pub checked: usize,
    /// Of those, how many had unreadable config space (reading it needs root).
    pub unreadable: usize,
    /// Bridges whose ACS redirects peer-to-peer traffic, in address order.
    pub redirecting: Vec<String>,
}

/// One GPU × NIC pair.
#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    pub gpu: String,
    pub gpu_bus_id: String,
    pub nic: String,
    pub relation: Relation,
    /// The PCIe path; `None` for software NICs.
    pub path: Option<PciePath>,
    /// Bridges on the path whose ACS redirects peer-to-peer traffic.
    pub acs_redirecting: Vec<AcsFinding>,
}

impl Report {
    /// The most severe verdict.
    pub fn worst_level(&self) -> Level {
        self.verdicts.iter().map(|verdict| verdict.level).max().unwrap_or(Level::Ok)
    }

    pub fn recommendation_for(&self, gpu_bus_id: &str) -> Option<&Recommendation> {
        self.recommendations.iter().find(|recommendation| recommendation.gpu_bus_id == gpu_bus_id)
    }

    pub fn gpu_label<'a>(&'a self, gpu_bus_id: &'a str) -> &'a str {
        self.gpus
            .iter()
            .find(|gpu| gpu.bus_id == gpu_bus_id)
            .map(|gpu| gpu.label.as_str())
            .unwrap_or(gpu_bus_id)
    }
}

/// GPUs in PCI order as the recommendation wants them: the order that makes
/// the pairing the same whether or not CUDA was asked.
fn gpu_endpoints(gpus: &[Gpu]) -> Vec<(String, Endpoint<'_>)> {
    let mut endpoints: Vec<(String, Endpoint)> = gpus
        .iter()
        .filter_map(|gpu| {
            let pci = gpu.pci.as_ref()?;
            Some((gpu.bus_id.clone(), Endpoint { location: &pci.location, numa_node: pci.numa_node }))
        })
        .collect();
    endpoints.sort_by(|a, b| a.0.cmp(&b.0));
    endpoints
}

/// Gathers the node's facts; [`crate::diagnose`] judges them (its `verdicts` and `exit_code`).
pub(crate) fn build(sys: &SysRoot, cuda: CudaFacts) -> Report {
    let inventory = Inventory::scan(sys);
    let gpus = gpu::merge(&inventory.pci_devices, &cuda);
    let nvidia_driver = NvidiaDriver::read(sys);
    let kernel_release = sys.read_text("proc/sys/kernel/osrelease");
    let gpudirect = GpuDirect::assess(&nvidia_driver, &gpus, &cuda, kernel_release.as_deref());

    let hardware_nics: Vec<&PciDevice> = inventory
        .rdma_devices
        .iter()
        .filter_map(|device| match &device.backing {
            Backing::Hardware { pci } => Some(pci.as_ref()),
            Backing::Software { .. } => None,
        })
        .collect();
    let mut iommu_devices: Vec<&PciDevice> = gpus.iter().filter_map(|gpu| gpu.pci.as_ref()).collect();
    iommu_devices.extend(hardware_nics.iter().copied());
    let iommu = Iommu::read(sys, &iommu_devices);

    let network_controllers_without_rdma = inventory
        .pci_devices
        .iter()
        .filter(|device| device.is_rdma_capable_network_controller())
        .filter(|device| !hardware_nics.iter().any(|nic| nic.address == device.address))
        .cloned()
        .collect();

    let recommendations = topology::recommend(&gpu_endpoints(&gpus), &inventory.nic_candidates());
    let mut acs_cache: BTreeMap<String, AcsState> = BTreeMap::new();
    let pairs = pairs(&gpus, &inventory, &mut |bridge: &str| {
        *acs_cache.entry(bridge.to_string()).or_insert_with(|| pci::read_acs(sys, bridge))
    });
    let acs = AcsSummary {
        checked: acs_cache.len(),
        unreadable: acs_cache.values().filter(|acs| **acs == AcsState::Unreadable).count(),
        redirecting: acs_cache
            .iter()
            .filter(|(_, acs)| acs.redirects_peer_to_peer())
            .map(|(bridge, _)| bridge.clone())
            .collect(),
    };

    let mut pcie: Vec<FunctionFacts> = gpus
        .iter()
        .filter_map(|gpu| gpu.pci.as_ref().map(|pci| FunctionFacts::read(sys, &gpu.label, pci, true)))
        .collect();
    pcie.extend(inventory.rdma_devices.iter().filter_map(|device| match &device.backing {
        Backing::Hardware { pci } => Some(FunctionFacts::read(sys, &device.name, pci, false)),
        Backing::Software { .. } => None,
    }));
    let mut findings = findings(sys, &gpus, &inventory, &recommendations);
    findings.extend(gdrperf_topology::findings::iommu_finding(
        iommu.mode,
        &iommu.translated_devices,
        iommu.group_count,
    ));
    Report {
        sysfs_root: sys.root().display().to_string(),
        kernel_release,
        rdma_devices: inventory.rdma_devices,
        network_controllers_without_rdma,
        gpus,
        cuda,
        nvidia_driver,
        gpudirect,
        iommu,
        pairs,
        recommendations,
        acs,
        pcie,
        findings,
        verdicts: Vec::new(),
        exit_code: 0,
    }
}

/// Each GPU's and hardware NIC's own findings, then each recommended pair's path; a finding on a
/// device already judged on an earlier pair's path is left out (two GPUs behind one switch share
/// its bridges: the first pair, in GPU order, names it).
fn findings(
    sys: &SysRoot,
    gpus: &[Gpu],
    inventory: &Inventory,
    recommendations: &[Recommendation],
) -> Vec<Finding> {
    let mut findings: Vec<Finding> = Vec::new();
    let gpu_pcis: Vec<&PciDevice> = gpus.iter().filter_map(|gpu| gpu.pci.as_ref()).collect();
    for pci in &gpu_pcis {
        findings.extend(gdrperf_topology::findings::device_findings(&read_findings::device(
            sys,
            "GPU",
            pci,
            Role::Gpu,
        )));
    }
    let nic_pci = |name: &str| {
        inventory.rdma_devices.iter().find(|device| device.name == name).and_then(|device| {
            match &device.backing {
                Backing::Hardware { pci } => Some(pci.as_ref()),
                Backing::Software { .. } => None,
            }
        })
    };
    for device in &inventory.rdma_devices {
        if let Some(pci) = nic_pci(&device.name) {
            let nic = read_findings::device(sys, &device.name, pci, Role::Nic);
            findings.extend(gdrperf_topology::findings::device_findings(&nic));
        }
    }
    for recommendation in recommendations {
        let gpu = gpu_pcis.iter().find(|pci| pci.address == recommendation.gpu_bus_id);
        if let (Some(gpu), Some(nic)) = (gpu, nic_pci(&recommendation.nic)) {
            let path = read_findings::path(sys, gpu, nic, &recommendation.nic);
            for finding in gdrperf_topology::findings::path_findings(&path) {
                let known =
                    findings.iter().any(|seen| seen.check == finding.check && seen.device == finding.device);
                if !known {
                    findings.push(finding);
                }
            }
        }
    }
    findings
}

fn pairs(gpus: &[Gpu], inventory: &Inventory, read_acs: &mut dyn FnMut(&str) -> AcsState) -> Vec<Pair> {
    let mut pairs = Vec::new();
    for gpu in gpus {
        let Some(gpu_pci) = &gpu.pci else { continue };
        let gpu_endpoint = Endpoint { location: &gpu_pci.location, numa_node: gpu_pci.numa_node };
        for nic in inventory.nic_candidates() {
            let path = nic.endpoint.map(|nic_endpoint| topology::path_between(gpu_endpoint, nic_endpoint));
            let acs_redirecting = path
                .iter()
                .flat_map(|path| &path.bridges)
                .map(|bridge| AcsFinding { bridge: bridge.clone(), acs: read_acs(bridge) })
                .filter(|finding| finding.acs.redirects_peer_to_peer())
                .collect();
            pairs.push(Pair {
                gpu: gpu.label.clone(),
                gpu_bus_id: gpu.bus_id.clone(),
                nic: nic.name.to_string(),
                relation: path.as_ref().map(|path| path.relation).unwrap_or(Relation::SW),
                path,
                acs_redirecting,
            });
        }
    }
    pairs
}
