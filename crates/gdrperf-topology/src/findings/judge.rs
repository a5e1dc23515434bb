//! The judgements themselves: pure functions from a device's or a path's facts to findings.

use crate::iommu::IommuMode;
use crate::pcie::acs_meaning;
use crate::Relation;

use super::finding::{Check, Device, Finding, Level, PathFacts, Role};

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
                format!("enable it (as root: setpci -s {} CAP_EXP+0x8.w with bit 4 set; for ConnectX, mlxconfig PCI_WR_ORDERING=1): perftest and gdrperf ask for relaxed ordering on every registration by default, which this bit off turns into nothing", device.address),
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
