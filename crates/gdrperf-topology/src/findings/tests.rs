//! The judgements on hand-built facts; fixture trees of whole machines are judged in the
//! doctor's and the ceiling's tests.

use super::*;
use crate::aer::{AerCounts, AerFile};
use crate::iommu::IommuMode;
use crate::pci::AcsState;
use crate::Relation;

fn device(name: &str, address: &str, role: Role) -> Device {
    Device {
        name: name.into(),
        address: address.into(),
        role,
        link: Link { speed_gts: Some(32.0), width: Some(16), max_speed_gts: Some(32.0), max_width: Some(16) },
        max_payload_bytes: Some(256),
        max_read_request_bytes: Some(4096),
        relaxed_ordering: Some(true),
        acs: role.is_bridge().then_some(AcsState::Control(0)),
        aer: None,
    }
}

fn bridge(address: &str, role: Role, link_on_path: bool) -> PathBridge {
    PathBridge { device: device(role.words(), address, role), link_on_path }
}

/// GPU and NIC under one switch: its upstream port (the top) and two downstream ports.
fn pix() -> PathFacts {
    PathFacts {
        gpu: device("GPU", "0000:1b:00.0", Role::Gpu),
        nic: device("mlx5_0", "0000:18:00.0", Role::Nic),
        relation: Relation::PIX,
        bridges: vec![
            bridge("0000:16:00.0", Role::SwitchUpstreamPort, false),
            bridge("0000:17:00.0", Role::SwitchDownstreamPort, false),
            bridge("0000:17:01.0", Role::SwitchDownstreamPort, false),
        ],
    }
}

fn checks(findings: &[Finding]) -> Vec<(Check, Level, &str)> {
    findings.iter().map(|finding| (finding.check, finding.level, finding.device.as_str())).collect()
}

#[test]
fn a_healthy_path_has_no_finding() {
    assert_eq!(read::pair_findings(&pix()), Vec::new());
}

#[test]
fn a_nics_device_control_and_link_are_judged_and_a_gpus_read_request_is_not() {
    let mut path = pix();
    path.nic.relaxed_ordering = Some(false);
    path.nic.max_read_request_bytes = Some(512);
    path.nic.link.width = Some(8);
    path.gpu.max_read_request_bytes = Some(512);
    path.gpu.link.speed_gts = Some(2.5);
    let found = read::pair_findings(&path);
    assert_eq!(
        checks(&found),
        [
            (Check::PcieLink, Level::Info, "GPU (0000:1b:00.0)"),
            (Check::PcieLink, Level::Warn, "mlx5_0 (0000:18:00.0)"),
            (Check::RelaxedOrdering, Level::Warn, "mlx5_0 (0000:18:00.0)"),
            (Check::MaxReadRequest, Level::Warn, "mlx5_0 (0000:18:00.0)"),
        ]
    );
    assert_eq!(found[1].evidence, "mlx5_0 (0000:18:00.0) trained at PCIe 32 GT/s x8 of 32 GT/s x16");
    assert!(found[0].fix.ends_with("read it again under load"), "{:?}", found[0]);
    assert_eq!(found[3].evidence, "mlx5_0 (0000:18:00.0) reads with Max Read Request 512 B");
    assert_eq!(found[3].source, Check::MaxReadRequest.source());
}

#[test]
fn a_bridge_is_judged_only_on_a_link_the_path_crosses_and_below_both_ends() {
    let mut path = pix();
    // The switch's uplink (the top of a PIX path) is not crossed: not judged.
    path.bridges[0].device.link.width = Some(4);
    assert_eq!(read::pair_findings(&path), Vec::new());
    // A second switch's upstream port below the top, at x8 while both ends run x16.
    let mut lower = bridge("0000:20:00.0", Role::SwitchUpstreamPort, true);
    lower.device.link.width = Some(8);
    path.bridges.push(lower);
    path.relation = Relation::PXB;
    let found = read::pair_findings(&path);
    assert_eq!(checks(&found), [(Check::BridgeLink, Level::Warn, "switch upstream port (0000:20:00.0)")]);
    assert_eq!(
        found[0].evidence,
        "switch upstream port (0000:20:00.0) trained at PCIe 32 GT/s x8 (max 32 GT/s x16), below both ends of GPU (0000:1b:00.0) <-> mlx5_0 (0000:18:00.0) (32 GT/s x16 and 32 GT/s x16)"
    );
    // An end at x8 itself: the bridge does not bind below it, the end's own link is named.
    path.gpu.link.width = Some(8);
    let found = read::pair_findings(&path);
    assert_eq!(checks(&found), [(Check::PcieLink, Level::Warn, "GPU (0000:1b:00.0)")]);
}

#[test]
fn the_odd_max_payload_size_out_is_named_whichever_device_has_it() {
    let mut path = pix();
    path.bridges[2].device.max_payload_bytes = Some(128);
    let found = path_findings(&path);
    assert_eq!(checks(&found), [(Check::MaxPayload, Level::Warn, "switch downstream port (0000:17:01.0)")]);
    assert!(found[0].evidence.ends_with(
        "has Max Payload Size 128 B, the rest of GPU (0000:1b:00.0) <-> mlx5_0 (0000:18:00.0) 256 B"
    ));
    // A tie (two at 512, two at 256 of five known, one unknown): the smaller are named.
    let mut path = pix();
    path.nic.max_payload_bytes = Some(512);
    path.gpu.max_payload_bytes = Some(512);
    path.bridges[0].device.max_payload_bytes = None;
    let named: Vec<String> = path_findings(&path).into_iter().map(|finding| finding.device).collect();
    assert_eq!(named, ["switch downstream port (0000:17:00.0)", "switch downstream port (0000:17:01.0)"]);
}

#[test]
fn acs_redirect_is_judged_only_where_the_pair_could_stay_below_the_root_complex() {
    let mut path = pix();
    path.bridges[2].device.acs = Some(AcsState::Control(0x000c));
    let found = path_findings(&path);
    assert_eq!(checks(&found), [(Check::Acs, Level::Warn, "switch downstream port (0000:17:01.0)")]);
    assert!(found[0].evidence.contains("(control 0x000c: P2P request redirect, P2P completion redirect)"));
    assert!(found[0].fix.contains("setpci -s 0000:17:01.0 ECAP_ACS+0x6.w=0000"));
    // Through the host bridge the traffic goes up anyway: the path itself is the finding.
    path.relation = Relation::PHB;
    let found = path_findings(&path);
    assert_eq!(checks(&found), [(Check::Topology, Level::Warn, "GPU (0000:1b:00.0)")]);
    assert_eq!(
        found[0].evidence,
        "GPU (0000:1b:00.0) <-> mlx5_0 (0000:18:00.0) are PHB apart: through a PCIe host bridge (the CPU's root complex)"
    );
}

#[test]
fn the_iommu_is_a_finding_when_it_translates_or_cannot_be_read() {
    let translated = ["0000:1b:00.0 (DMA-FQ)".to_string()];
    assert_eq!(iommu_finding(IommuMode::Off, &[], 0), None);
    assert_eq!(iommu_finding(IommuMode::Passthrough, &[], 12), None);
    assert_eq!(iommu_finding(IommuMode::Translated, &[], 0), None, "no device named: nothing to say");
    let finding = iommu_finding(IommuMode::Translated, &translated, 12).unwrap();
    assert_eq!((finding.check, finding.level, finding.role), (Check::Iommu, Level::Warn, Role::Host));
    assert_eq!(finding.evidence, "the IOMMU translates DMA for 0000:1b:00.0 (DMA-FQ)");
    assert!(finding.fix.starts_with("boot with iommu=pt"));
    let unknown = iommu_finding(IommuMode::Unknown, &[], 12).unwrap();
    assert_eq!(unknown.evidence, "the IOMMU is on (12 groups) and its mode is not readable");
}

#[test]
fn aer_counts_warn_and_a_fatal_one_fails() {
    let mut path = pix();
    let receiver = AerFile { total: 3, nonzero: vec![("Receiver Error".into(), 3)] };
    path.bridges[1].device.aer = Some(AerCounts { correctable: receiver, ..AerCounts::default() });
    path.gpu.aer =
        Some(AerCounts { fatal: AerFile { total: 1, nonzero: Vec::new() }, ..AerCounts::default() });
    path.nic.aer = Some(AerCounts::default());
    let found = read::pair_findings(&path);
    assert_eq!(
        checks(&found),
        [
            (Check::Aer, Level::Fail, "GPU (0000:1b:00.0)"),
            (Check::Aer, Level::Warn, "switch downstream port (0000:17:00.0)"),
        ]
    );
    assert_eq!(
        found[1].evidence,
        "switch downstream port (0000:17:00.0) AER counts since boot: correctable 3 (Receiver Error 3), nonfatal 0, fatal 0"
    );
}

#[test]
fn unknown_facts_judge_nothing() {
    let mut path = pix();
    for device in [&mut path.gpu, &mut path.nic] {
        device.link = Link::default();
        device.max_payload_bytes = None;
        device.max_read_request_bytes = None;
        device.relaxed_ordering = None;
    }
    path.bridges[2].device.acs = Some(AcsState::Unreadable);
    path.bridges[2].device.max_payload_bytes = Some(128);
    path.bridges[2].link_on_path = true;
    path.bridges[2].device.link.width = Some(1);
    // Only the bridges' MPS is known, and one differs: that alone is judged.
    assert_eq!(
        checks(&read::pair_findings(&path)),
        [(Check::MaxPayload, Level::Warn, "switch downstream port (0000:17:01.0)")]
    );
}

#[test]
fn every_check_serializes_under_its_name_and_has_a_source() {
    for check in Check::ALL {
        assert_eq!(serde_json::to_value(check).unwrap(), check.name());
        assert!(!check.source().is_empty());
    }
}
