//! The facts of one end of a run that bound its bandwidth or explain a shortfall, read once from
//! sysfs (through `gdrperf-topology`, the same reading `gdrperf doctor` does) and carried to the
//! peer in the handshake, so that each side's rows know both ends.

use std::path::Path;

use gdrperf_topology::aer::AerCounts;
use gdrperf_topology::findings::{read, Device, Finding, Link, Role};
use gdrperf_topology::iommu::{Iommu, IommuMode};
use gdrperf_topology::pci::PciDevice;
use gdrperf_topology::pcie::{self, DeviceControl, FunctionFacts};
use gdrperf_topology::rdma::{self, Backing, PortMtu};
use gdrperf_topology::topology::{self, Endpoint};
use gdrperf_topology::{Relation, SysRoot};
use serde::{Deserialize, Serialize};

use crate::wire::LinkLayer;

/// How this end's payload reaches the NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryPath {
    /// Host memory: the NIC reads and writes it directly.
    Host,
    /// GPU memory registered with the NIC: peer-to-peer over PCIe.
    GpuDirect,
    /// Staged through a host bounce buffer by copies; `fallback` when GPUDirect was asked.
    Staged { fallback: bool },
}

/// A staged end's copy engine, timed once at set-up: one copy of its staging buffer (up to
/// 16 MiB) each way, as the bench's own copies run (chunked and pipelined). The same GPU, pinned
/// buffer and NUMA placement as the rows, measured on the spot rather than taken from a stored
/// `gdrperf copy-bw` result, which may come from another boot, machine or placement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CopyRates {
    /// Payload to bounce buffer (before a send): what a staged source pays.
    pub out_gbps: f64,
    /// Bounce buffer to payload (after a receive): what a staged sink pays.
    pub in_gbps: f64,
    /// The bytes of each timed copy.
    pub bytes: u64,
}

/// One PCIe function's link and Device Control, as far as known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PcieFacts {
    /// "mlx5_0", "GPU".
    pub name: String,
    pub address: String,
    pub speed_gts: Option<f64>,
    pub width: Option<u32>,
    pub max_speed_gts: Option<f64>,
    pub max_width: Option<u32>,
    /// `None` when Device Control was unreadable (needs root).
    pub max_payload_bytes: Option<u32>,
    pub max_read_request_bytes: Option<u32>,
    pub relaxed_ordering: Option<bool>,
    /// AER counters since boot, where the kernel exposes them (absent from older peers).
    #[serde(default)]
    pub aer: Option<AerCounts>,
}

impl PcieFacts {
    /// From the doctor's reading of one function.
    pub fn from_function(facts: &FunctionFacts) -> PcieFacts {
        let (max_payload_bytes, max_read_request_bytes, relaxed_ordering) = match facts.device_control {
            DeviceControl::Known { max_payload_bytes, max_read_request_bytes, relaxed_ordering, .. } => {
                (Some(max_payload_bytes), Some(max_read_request_bytes), Some(relaxed_ordering))
            }
            DeviceControl::Unreadable | DeviceControl::NotExpress => (None, None, None),
        };
        PcieFacts {
            name: facts.name.clone(),
            address: facts.address.clone(),
            speed_gts: facts.link.current_speed_gts,
            width: facts.link.current_width,
            max_speed_gts: facts.link.max_speed_gts,
            max_width: facts.link.max_width,
            max_payload_bytes,
            max_read_request_bytes,
            relaxed_ordering,
            aer: None,
        }
    }

    /// The function as `gdrperf_topology::findings` judges it, so that a cause and the doctor say the same.
    pub fn as_device(&self, role: Role) -> Device {
        Device {
            name: self.name.clone(),
            address: self.address.clone(),
            role,
            link: Link {
                speed_gts: self.speed_gts,
                width: self.width,
                max_speed_gts: self.max_speed_gts,
                max_width: self.max_width,
            },
            max_payload_bytes: self.max_payload_bytes,
            max_read_request_bytes: self.max_read_request_bytes,
            relaxed_ordering: self.relaxed_ordering,
            acs: None,
            aer: self.aer.clone(),
        }
    }

    /// "16 GT/s x16", or what is known of it.
    pub fn describe_link(&self) -> String {
        match (self.speed_gts, self.width) {
            (Some(speed), Some(width)) => format!("{speed} GT/s x{width}"),
            (Some(speed), None) => format!("{speed} GT/s"),
            (None, Some(width)) => format!("x{width}"),
            (None, None) => "link unknown".into(),
        }
    }

    /// "32 GT/s x16", the most the link can train to.
    pub fn describe_max_link(&self) -> String {
        match (self.max_speed_gts, self.max_width) {
            (Some(speed), Some(width)) => format!("{speed} GT/s x{width}"),
            _ => "unknown".into(),
        }
    }

    /// Trained narrower or slower than it can.
    pub fn below_maximum(&self) -> bool {
        let narrow = matches!((self.width, self.max_width), (Some(now), Some(max)) if now < max);
        let slow = matches!((self.speed_gts, self.max_speed_gts), (Some(now), Some(max)) if now < max);
        narrow || slow
    }
}

/// The facts of one end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndFacts {
    pub nic: String,
    pub port: u8,
    /// `Some("rxe")` or `Some("siw")` for a software RDMA device: no hardware ceiling.
    pub software_device: Option<String>,
    pub link_layer: Option<LinkLayer>,
    /// sysfs `ports/N/rate`: "400 Gb/sec (4X NDR)".
    pub port_rate: Option<String>,
    /// The port's active and largest MTU (from verbs; sysfs shows neither for InfiniBand).
    pub active_mtu: Option<u32>,
    pub max_mtu: Option<u32>,
    pub nic_pcie: Option<PcieFacts>,
    /// The GPU's link when GPU memory is in the path (GPUDirect or staged).
    pub gpu_pcie: Option<PcieFacts>,
    pub memory: MemoryPath,
    /// PIX/PXB/PHB/NODE/SYS between the GPU and the NIC (GPU memory only).
    pub gpu_nic_relation: Option<Relation>,
    /// Bridges on the GPU-NIC path whose ACS redirects peer-to-peer traffic to the root complex.
    pub acs_redirecting: Vec<String>,
    /// `gdrperf_topology::findings`' judgement of the devices between the GPU and the NIC (the ends' own
    /// findings derive from `nic_pcie` and `gpu_pcie`): read where the bridges are, carried to
    /// the peer (absent from older peers).
    #[serde(default)]
    pub path_findings: Vec<Finding>,
    /// The GPU and NIC functions in translating IOMMU domains, as "address (type)".
    pub iommu_translating: Vec<String>,
    pub nic_numa_node: Option<u32>,
    /// The NUMA node of the measuring thread's CPUs.
    pub thread_numa_node: Option<u32>,
    /// Staged memory: the copy engine's rates, measured at set-up (absent from older peers and
    /// stored results, and where nothing is staged).
    #[serde(default)]
    pub staged_copy: Option<CopyRates>,
    /// Whether this end's registrations asked for PCIe relaxed ordering (perftest's default;
    /// `false` under `--disable_pcie_relaxed`); `None` where unknown (an older peer, the doctor,
    /// which registers nothing).
    #[serde(default)]
    pub relaxed_ordering_asked: Option<bool>,
}

/// What the harness knows that sysfs does not: which device and port, where memory lives, the
/// verbs MTUs, the measuring thread's node.
#[derive(Debug, Clone)]
pub struct EndQuery<'a> {
    pub nic: &'a str,
    pub port: u8,
    /// The GPU's bus id in any spelling, when GPU memory is in the path.
    pub gpu_bus_id: Option<&'a str>,
    pub memory: MemoryPath,
    pub active_mtu: Option<u32>,
    pub max_mtu: Option<u32>,
    pub thread_numa_node: Option<u32>,
}

impl EndFacts {
    /// Reads this end's facts under `root` (`/`, or a fixture tree). Nothing here fails: what
    /// cannot be read stays unknown, and an unknown fact bounds nothing and names no cause.
    pub fn read(root: &Path, query: &EndQuery) -> EndFacts {
        let mut facts = EndFacts {
            nic: query.nic.to_string(),
            port: query.port,
            software_device: None,
            link_layer: None,
            port_rate: None,
            active_mtu: query.active_mtu,
            max_mtu: query.max_mtu,
            nic_pcie: None,
            gpu_pcie: None,
            memory: query.memory,
            gpu_nic_relation: None,
            acs_redirecting: Vec::new(),
            path_findings: Vec::new(),
            iommu_translating: Vec::new(),
            nic_numa_node: None,
            thread_numa_node: query.thread_numa_node,
            staged_copy: None,
            relaxed_ordering_asked: None,
        };
        let Ok(sys) = SysRoot::open(root) else { return facts };
        let device = rdma::scan(&sys).into_iter().find(|device| device.name == query.nic);
        let nic_pci = match device.as_ref().map(|device| &device.backing) {
            Some(Backing::Hardware { pci }) => Some(pci.as_ref().clone()),
            Some(Backing::Software { driver, .. }) => {
                facts.software_device = Some(driver.clone());
                None
            }
            None => None,
        };
        if let Some(port) =
            device.iter().flat_map(|device| &device.ports).find(|p| p.number == u32::from(query.port))
        {
            facts.link_layer = port.link_layer.as_deref().and_then(LinkLayer::from_sysfs);
            facts.port_rate = port.rate.clone();
            if let (None, PortMtu::FromNetdev { active_mtu, .. }) = (facts.active_mtu, &port.mtu) {
                facts.active_mtu = Some(*active_mtu);
            }
        }
        let gpu_pci = query
            .gpu_bus_id
            .and_then(gdrperf_topology::pci::normalize_bus_id)
            .and_then(|address| PciDevice::read_by_address(&sys, &address));
        facts.nic_numa_node = nic_pci.as_ref().and_then(|pci| pci.numa_node);
        let pcie_facts = |pci: &PciDevice, name: &str, is_gpu: bool| PcieFacts {
            aer: AerCounts::read(&sys, &pci.address),
            ..PcieFacts::from_function(&FunctionFacts::read(&sys, name, pci, is_gpu))
        };
        facts.nic_pcie = nic_pci.as_ref().map(|pci| pcie_facts(pci, query.nic, false));
        facts.gpu_pcie = gpu_pci.as_ref().map(|pci| pcie_facts(pci, "GPU", true));
        let in_path: Vec<&PciDevice> = [nic_pci.as_ref(), gpu_pci.as_ref()].into_iter().flatten().collect();
        let iommu = Iommu::read(&sys, &in_path);
        if iommu.mode == IommuMode::Translated {
            facts.iommu_translating = iommu.translated_devices;
        }
        if let (Some(gpu), Some(nic)) = (&gpu_pci, &nic_pci) {
            let path = topology::path_between(
                Endpoint { location: &gpu.location, numa_node: gpu.numa_node },
                Endpoint { location: &nic.location, numa_node: nic.numa_node },
            );
            facts.gpu_nic_relation = Some(path.relation);
            facts.acs_redirecting = pcie::path_acs(&sys, gpu, nic)
                .into_iter()
                .filter(|bridge| bridge.redirects_peer_to_peer)
                .map(|bridge| bridge.bridge)
                .collect();
            facts.path_findings =
                gdrperf_topology::findings::path_findings(&read::path(&sys, gpu, nic, query.nic));
        }
        facts
    }

    /// This end's findings in `gdrperf_topology::findings`' words, the doctor's: its NIC's own, its GPU's
    /// when GPU memory is in the path, the path's between them (topology, bridges, ACS) when the
    /// run was GPUDirect, and the IOMMU's. A software device has no PCIe facts: none.
    pub fn findings(&self) -> Vec<Finding> {
        if self.software_device.is_some() {
            return Vec::new();
        }
        let mut findings: Vec<Finding> = Vec::new();
        if let Some(nic) = &self.nic_pcie {
            findings.extend(gdrperf_topology::findings::device_findings(&nic.as_device(Role::Nic)));
        }
        if let Some(gpu) = self.gpu_pcie.as_ref().filter(|_| self.memory != MemoryPath::Host) {
            findings.extend(gdrperf_topology::findings::device_findings(&gpu.as_device(Role::Gpu)));
        }
        if self.uses_gpudirect() {
            findings.extend(self.path_findings.iter().cloned());
        }
        findings.extend(gdrperf_topology::findings::iommu_finding(
            IommuMode::Translated,
            &self.iommu_translating,
            0,
        ));
        findings
    }

    /// Whether GPU memory is reached peer-to-peer (where the GPU-NIC path matters).
    pub fn uses_gpudirect(&self) -> bool {
        self.memory == MemoryPath::GpuDirect
    }
}
