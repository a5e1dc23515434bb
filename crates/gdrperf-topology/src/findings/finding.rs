//! What a finding is about and what it says: the devices and paths judged, and the finding
//! itself with its level, its check and that check's source.

use serde::{Deserialize, Serialize};

use crate::aer::AerCounts;
use crate::pci::AcsState;
use crate::Relation;

/// How bad a finding is; ordered so that `max` is the worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// True and worth saying, costs nothing now (an idle GPU's lowered link speed).
    Info,
    /// Costs speed, or may: the doctor exits 1.
    Warn,
    /// The hardware is not reliable as found: the doctor exits 2.
    Fail,
}

impl Level {
    /// "info", "warn", "fail": as JSON spells it.
    pub fn word(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Fail => "fail",
        }
    }
}

/// What each check judges; one list, from which names, sources and the docs table derive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    PcieLink,
    BridgeLink,
    MaxPayload,
    MaxReadRequest,
    RelaxedOrdering,
    Acs,
    Aer,
    Topology,
    Iommu,
}

impl Check {
    /// Every check, in the order of docs/findings.md.
    pub const ALL: [Check; 9] = [
        Check::PcieLink,
        Check::BridgeLink,
        Check::MaxPayload,
        Check::MaxReadRequest,
        Check::RelaxedOrdering,
        Check::Acs,
        Check::Aer,
        Check::Topology,
        Check::Iommu,
    ];

    /// Stable short name for scripts (the doctor's `check`, a cause's `check`).
    pub fn name(self) -> &'static str {
        match self {
            Check::PcieLink => "pcie-link",
            Check::BridgeLink => "bridge-link",
            Check::MaxPayload => "max-payload",
            Check::MaxReadRequest => "max-read-request",
            Check::RelaxedOrdering => "relaxed-ordering",
            Check::Acs => "acs",
            Check::Aer => "aer",
            Check::Topology => "topology",
            Check::Iommu => "iommu",
        }
    }

    /// Where the judgement and its level come from (docs/findings.md quotes each).
    pub fn source(self) -> &'static str {
        match self {
            Check::PcieLink => "PCIe Base Specification (Link Status against Link Capabilities); the cost is the path ceiling's (docs/methodology.md, Path ceilings)",
            Check::BridgeLink => "PCIe Base Specification (a link's rate is its speed times its width); no public figure: the path ceiling does not count bridges",
            Check::MaxPayload => "PCIe Base Specification (Device Control, Max_Payload_Size) and NVIDIA's 'Understanding PCIe Configuration for Maximum Performance' (one MPS along the path, the highest all support); no public figure for the cost",
            Check::MaxReadRequest => "NVIDIA's 'Understanding PCIe Configuration for Maximum Performance' (MRRS, raised with setpci); no public figure for a NIC reading GPU memory",
            Check::RelaxedOrdering => "NVIDIA MLNX_OFED 'NVIDIA PeerDirect' (Relaxed Ordering) and Linux 'RDMA/mlx5: Enable Relaxed Ordering by default for kernel ULPs': it matters on some platforms, no public figure for the cost",
            Check::Acs => "NVIDIA GPUDirect RDMA documentation ('PCI Access Control Services'): redirected peer traffic goes through the root complex",
            Check::Aer => "Linux Documentation/ABI/testing/sysfs-bus-pci-devices-aer (counts since boot, possibly at the link partner) and the PCIe Base Specification (a fatal error leaves the link unreliable); no public figure for the cost of correctable errors",
            Check::Topology => "NVIDIA GPUDirect RDMA documentation, 'Supported Systems' (peer traffic through the root complex performs badly or not at all on some chipsets); no public figure for the cost",
            Check::Iommu => "NVIDIA GPUDirect RDMA documentation, 'IOMMUs' (translation other than 1:1 is incompatible: disable it or use pass-through); no public figure for the cost",
        }
    }
}

/// What a device is on the path; bridges are told apart by their place in the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Gpu,
    Nic,
    RootPort,
    SwitchUpstreamPort,
    SwitchDownstreamPort,
    /// The node as a whole (its IOMMU).
    Host,
}

impl Role {
    /// "switch upstream port": how a bridge is named in a finding.
    pub fn words(self) -> &'static str {
        match self {
            Role::Gpu => "GPU",
            Role::Nic => "NIC",
            Role::RootPort => "root port",
            Role::SwitchUpstreamPort => "switch upstream port",
            Role::SwitchDownstreamPort => "switch downstream port",
            Role::Host => "host",
        }
    }

    pub fn is_bridge(self) -> bool {
        matches!(self, Role::RootPort | Role::SwitchUpstreamPort | Role::SwitchDownstreamPort)
    }
}

/// A PCIe link: how it trained and what it can do, as far as known.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Link {
    pub speed_gts: Option<f64>,
    pub width: Option<u32>,
    pub max_speed_gts: Option<f64>,
    pub max_width: Option<u32>,
}

impl Link {
    /// "32 GT/s x16", or what is known of it.
    pub fn describe(&self) -> String {
        describe_link(self.speed_gts, self.width)
    }

    pub fn describe_max(&self) -> String {
        describe_link(self.max_speed_gts, self.max_width)
    }

    pub(crate) fn narrow(&self) -> bool {
        matches!((self.width, self.max_width), (Some(now), Some(max)) if now < max)
    }

    pub(crate) fn slow(&self) -> bool {
        matches!((self.speed_gts, self.max_speed_gts), (Some(now), Some(max)) if now < max)
    }

    /// Speed times width (GT/s summed over lanes): enough to compare two links.
    pub(crate) fn rate(&self) -> Option<f64> {
        Some(self.speed_gts? * f64::from(self.width?))
    }
}

fn describe_link(speed: Option<f64>, width: Option<u32>) -> String {
    match (speed, width) {
        (Some(speed), Some(width)) => format!("{speed} GT/s x{width}"),
        (Some(speed), None) => format!("{speed} GT/s"),
        (None, Some(width)) => format!("x{width}"),
        (None, None) => "unknown".into(),
    }
}

/// One PCIe function's facts, as far as known (`None`: unreadable, most often for want of root).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    /// "mlx5_0", "GPU", or the role's words for a bridge.
    pub name: String,
    pub address: String,
    pub role: Role,
    pub link: Link,
    pub max_payload_bytes: Option<u32>,
    pub max_read_request_bytes: Option<u32>,
    pub relaxed_ordering: Option<bool>,
    /// Bridges only.
    pub acs: Option<AcsState>,
    pub aer: Option<AerCounts>,
}

impl Device {
    /// "mlx5_0 (0000:18:00.0)": how every finding names its device.
    pub fn label(&self) -> String {
        format!("{} ({})", self.name, self.address)
    }
}

/// A GPU, a NIC, and every bridge between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathFacts {
    pub gpu: Device,
    pub nic: Device,
    pub relation: Relation,
    pub bridges: Vec<PathBridge>,
}

/// A bridge on a GPU-NIC path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathBridge {
    pub device: Device,
    /// Whether the link this bridge reports (sysfs `current_link_*`) is one the path crosses: a
    /// switch's upstream port below the path's top reports its uplink; a root port or a
    /// downstream port reports the link below it, which the device below reports too.
    pub link_on_path: bool,
}

/// One judgement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub check: Check,
    pub level: Level,
    /// "mlx5_0 (0000:18:00.0)".
    pub device: String,
    pub role: Role,
    /// A sentence that names the device.
    pub evidence: String,
    pub fix: String,
    /// [`Check::source`], carried so that JSON readers need not know the table.
    pub source: String,
}

impl Finding {
    pub(crate) fn new(check: Check, level: Level, device: &Device, evidence: String, fix: String) -> Finding {
        Finding {
            check,
            level,
            device: device.label(),
            role: device.role,
            evidence,
            fix,
            source: check.source().to_string(),
        }
    }
}
