//! One judgement of a node's PCIe facts, used by both `gdrperf doctor` (its verdict) and a
//! row's causes (`gdrperf-ceiling`): the same finding, in the same words, whether the
//! acceptance engineer runs the doctor before any traffic or reads a short row afterwards.
//!
//! A [`Finding`] names its [`Level`], the device it is about, what to do about it and where the
//! judgement comes from ([`Check::source`]: a vendor document, the PCIe specification, the
//! kernel's documentation, or a statement that no public source gives a cost). Where nothing
//! public quantifies a cost the finding is a warning, never a failure. The table of checks with
//! their levels and sources is docs/findings.md.
//!
//! Two functions judge, both pure over facts ([`read`] gets those from sysfs):
//! - [`device_findings`]: one GPU or NIC on its own (its link, Device Control, AER counters);
//! - [`path_findings`]: every device between a paired GPU and NIC (bridges' links and AER
//!   counters, Max Payload Size along the path, ACS on the switch ports).
//!
//! The doctor's verdict lists them all; a row's causes rank the same findings by the limit they
//! bind (docs/methodology.md, "Causes").

use serde::{Deserialize, Serialize};

use gdrperf_topology::aer::AerCounts;
use gdrperf_topology::iommu::IommuMode;
use gdrperf_topology::pci::AcsState;
use gdrperf_topology::pcie::acs_meaning;
use gdrperf_topology::Relation;

pub mod read;

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

    fn narrow(&self) -> bool {
        matches!((self.width, self.max_width), (Some(now), Some(max)) if now < max)
    }

    fn slow(&self) -> bool {
        matches!((self.speed_gts, self.max_speed_gts), (Some(now), Some(max)) if now < max)
    }

    /// Speed times width (GT/s summed over lanes): enough to compare two links.
    fn rate(&self) -> Option<f64> {
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
    fn new(check: Check, level: Level, device: &Device, evidence: String, fix: String) -> Finding {
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

/// The Max Read Request NVIDIA's ConnectX tuning guidance sets (`setpci ... CAP_EXP+8.w=5...`),
/// the largest PCIe allows.
pub const TUNED_MAX_READ_REQUEST_BYTES: u32 = 4096;

const LINK_FIX: &str = "reseat the card, check the slot's wiring and the BIOS bifurcation setting (`lspci -vv` LnkSta against LnkCap)";

/// The findings on one GPU or NIC: its link against its maximum; on a NIC, relaxed ordering and
/// Max Read Request (the NIC reads GPU memory; a GPU issues no reads in GPUDirect RDMA); AER
/// counters on any. An unknown fact judges nothing (the doctor prints it as unknown).
pub fn device_findings(device: &Device) -> Vec<Finding> {
    let mut findings = Vec::new();
    let label = device.label();
    let link = &device.link;
    if !device.role.is_bridge() && (link.narrow() || link.slow()) {
        // An idle GPU lowers its link speed to save power: a speed alone is only said there.
        let idle_gpu = device.role == Role::Gpu && !link.narrow();
        let level = if idle_gpu { Level::Info } else { Level::Warn };
        let fix = if device.role == Role::Gpu {
            format!("{LINK_FIX}; a GPU lowers its speed when idle: read it again under load")
        } else {
            LINK_FIX.to_string()
        };
        let evidence = format!("{label} trained at PCIe {} of {}", link.describe(), link.describe_max());
        findings.push(Finding::new(Check::PcieLink, level, device, evidence, fix));
    }
    if device.role == Role::Nic {
        if device.relaxed_ordering == Some(false) {
            findings.push(Finding::new(
                Check::RelaxedOrdering,
                Level::Warn,
                device,
                format!("{label} has relaxed ordering off in Device Control"),
                format!("enable it (as root: setpci -s {} CAP_EXP+0x8.w with bit 4 set; for ConnectX, mlxconfig PCI_WR_ORDERING=1)", device.address),
            ));
        }
        if let Some(bytes) =
            device.max_read_request_bytes.filter(|bytes| *bytes < TUNED_MAX_READ_REQUEST_BYTES)
        {
            findings.push(Finding::new(
                Check::MaxReadRequest,
                Level::Warn,
                device,
                format!("{label} reads with Max Read Request {bytes} B"),
                format!("raise it to {TUNED_MAX_READ_REQUEST_BYTES} B (as root: setpci -s {} CAP_EXP+0x8.w=5000:7000)", device.address),
            ));
        }
    }
    findings.extend(aer_finding(device));
    findings
}

fn aer_finding(device: &Device) -> Option<Finding> {
    let counts = device.aer.as_ref().filter(|counts| counts.any())?;
    let level = if counts.fatal.total > 0 { Level::Fail } else { Level::Warn };
    Some(Finding::new(
        Check::Aer,
        level,
        device,
        format!("{} AER counts since boot: {}", device.label(), counts.describe()),
        format!("find the link at fault (as root: lspci -vv -s {} and its link partner, `dmesg | grep -i aer`), reseat or replace the card or riser; the counts restart at boot", device.address),
    ))
}

/// The findings on the devices between a paired GPU and NIC (the ends' own are
/// [`device_findings`]'): a path that crosses the root complex, a bridge whose link on the path
/// is slower than both ends', a Max Payload Size that differs along the path, ACS redirection on
/// a bridge when the pair could stay below the root complex, AER counters on any bridge.
pub fn path_findings(path: &PathFacts) -> Vec<Finding> {
    let mut findings = Vec::new();
    let ends = format!("{} <-> {}", path.gpu.label(), path.nic.label());
    // Named on the GPU: its closest (or chosen) NIC is out of reach of a PCIe switch. A software
    // device (SW) has no PCIe path at all; the doctor's rdma-devices verdict says so.
    if !path.relation.stays_below_root_complex() && path.relation != Relation::SW {
        findings.push(Finding::new(
            Check::Topology,
            Level::Warn,
            &path.gpu,
            format!("{ends} are {:?} apart: {}", path.relation, path.relation.meaning()),
            "put GPU and NIC under one PCIe switch, or at least on one socket (`gdrperf doctor` lists the pairs; `--ib-dev auto` picks the closest), and compare with --mem cuda-staged".into(),
        ));
    }
    let slower_end = [path.gpu.link.rate(), path.nic.link.rate()].into_iter().flatten().reduce(f64::min);
    for bridge in path.bridges.iter().filter(|bridge| bridge.link_on_path) {
        let device = &bridge.device;
        if let (Some(rate), Some(ends_rate)) = (device.link.rate(), slower_end) {
            if rate < ends_rate {
                findings.push(Finding::new(
                    Check::BridgeLink,
                    Level::Warn,
                    device,
                    format!(
                        "{} trained at PCIe {} (max {}), below both ends of {ends} ({} and {})",
                        device.label(),
                        device.link.describe(),
                        device.link.describe_max(),
                        path.gpu.link.describe(),
                        path.nic.link.describe()
                    ),
                    format!("reseat the switch board or riser and check the BIOS link settings of that port (as root: lspci -vv -s {} LnkSta against LnkCap)", device.address),
                ));
            }
        }
    }
    findings.extend(max_payload_findings(path, &ends));
    if path.relation.stays_below_root_complex() {
        for device in path.bridges.iter().map(|bridge| &bridge.device) {
            let Some(acs) = device.acs.filter(|acs| acs.redirects_peer_to_peer()) else { continue };
            findings.push(Finding::new(
                Check::Acs,
                Level::Warn,
                device,
                format!(
                    "ACS on {} ({}) sends {ends} peer traffic up to the root complex",
                    device.label(),
                    acs_meaning(acs)
                ),
                format!("disable ACS redirect in the BIOS, or as root until reboot: setpci -s {} ECAP_ACS+0x6.w=0000", device.address),
            ));
        }
    }
    findings.extend(path.bridges.iter().filter_map(|bridge| aer_finding(&bridge.device)));
    findings
}

/// The IOMMU as GPUDirect RDMA meets it: a finding when it translates the DMA of a GPU or NIC
/// (`translated`: "address (domain type)") or when it is on and its mode cannot be read
/// (`Unknown`); none when it is off or in pass-through.
pub fn iommu_finding(mode: IommuMode, translated: &[String], group_count: usize) -> Option<Finding> {
    let evidence = match mode {
        IommuMode::Off | IommuMode::Passthrough => return None,
        IommuMode::Translated if translated.is_empty() => return None,
        IommuMode::Translated => format!("the IOMMU translates DMA for {}", translated.join(", ")),
        IommuMode::Unknown => format!("the IOMMU is on ({group_count} groups) and its mode is not readable"),
    };
    Some(Finding {
        check: Check::Iommu,
        level: Level::Warn,
        device: "IOMMU".into(),
        role: Role::Host,
        evidence,
        fix: "boot with iommu=pt (Intel: intel_iommu=on iommu=pt) or with the IOMMU off: GPUDirect RDMA on bare metal needs untranslated peer DMA".into(),
        source: Check::Iommu.source().to_string(),
    })
}

/// The devices whose Max Payload Size differs from the one most of the path uses (on a tie,
/// the larger: the smaller one is then the odd one out).
fn max_payload_findings(path: &PathFacts, ends: &str) -> Vec<Finding> {
    let devices: Vec<&Device> = [&path.gpu, &path.nic]
        .into_iter()
        .chain(path.bridges.iter().map(|bridge| &bridge.device))
        .filter(|device| device.max_payload_bytes.is_some())
        .collect();
    let count = |bytes: u32| devices.iter().filter(|device| device.max_payload_bytes == Some(bytes)).count();
    let Some(common) = devices
        .iter()
        .filter_map(|device| device.max_payload_bytes)
        .max_by_key(|&bytes| (count(bytes), bytes))
    else {
        return Vec::new();
    };
    devices
        .iter()
        .filter_map(|device| Some((*device, device.max_payload_bytes.filter(|bytes| *bytes != common)?)))
        .map(|(device, bytes)| {
            Finding::new(
                Check::MaxPayload,
                Level::Warn,
                device,
                format!("{} has Max Payload Size {bytes} B, the rest of {ends} {common} B", device.label()),
                "set one Max Payload Size along the path: the BIOS PCIe setting, or boot with pci=pcie_bus_safe (the largest every device below a root port supports)".into(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests;
