//! The doctor on fixture trees of real server shapes: what it finds, how it
//! pairs GPUs with NICs, and how it judges.

use gdrperf_doctor::iommu::IommuMode;
use gdrperf_doctor::rdma::{Backing, PortMtu};
use gdrperf_doctor::{diagnose, recommend_nic, CudaFacts, CudaGpu, DoctorError, Level, Relation, Report};
use gdrperf_doctor_fixtures::{AcsFixture, FixtureDir, Function, HostBridge, Machine, PciNode, PortState};

fn not_queried() -> CudaFacts {
    CudaFacts::NotQueried { reason: "fixture".into() }
}

fn report_for(machine: &Machine, cuda: CudaFacts) -> Report {
    let directory = FixtureDir::with(machine).expect("writing the fixture");
    diagnose(directory.path(), cuda).expect("diagnosing the fixture")
}

/// CUDA's view of every GPU in the machine, all capable, in PCI order.
fn cuda_all_capable(report_without_cuda: &Report) -> CudaFacts {
    let gpus = report_without_cuda
        .gpus
        .iter()
        .enumerate()
        .map(|(ordinal, gpu)| CudaGpu {
            ordinal: ordinal as u32,
            name: "NVIDIA H100 80GB HBM3".into(),
            // CUDA's spelling, to check the merge normalizes it.
            pci_bus_id: format!("0000{}", gpu.bus_id.to_uppercase()),
            dma_buf_supported: Some(true),
            gpu_direct_rdma_supported: Some(true),
        })
        .collect();
    CudaFacts::Available { driver_api_version: 12040, gpus }
}

fn levels_of<'a>(report: &'a Report, check: &str) -> Vec<(Level, &'a str)> {
    report.verdicts.iter().filter(|v| v.check == check).map(|v| (v.level, v.reason.as_str())).collect()
}

fn relation(report: &Report, gpu_bus_id: &str, nic: &str) -> Relation {
    report.pairs.iter().find(|p| p.gpu_bus_id == gpu_bus_id && p.nic == nic).expect("pair exists").relation
}

#[test]
fn dgx_h100_pairs_each_gpu_with_the_nic_behind_its_switch() {
    let report = report_for(&Machine::dgx_h100_like(), not_queried());
    assert_eq!(report.gpus.len(), 8, "NVSwitches are not GPUs");
    assert_eq!(report.rdma_devices.len(), 9);
    let chosen: Vec<(&str, &str, Relation)> =
        report.recommendations.iter().map(|r| (r.gpu_bus_id.as_str(), r.nic.as_str(), r.relation)).collect();
    assert_eq!(
        chosen,
        [
            ("0000:1b:00.0", "mlx5_0", Relation::PIX),
            ("0000:43:00.0", "mlx5_1", Relation::PIX),
            ("0000:52:00.0", "mlx5_2", Relation::PIX),
            ("0000:61:00.0", "mlx5_3", Relation::PIX),
            ("0000:9d:00.0", "mlx5_4", Relation::PIX),
            ("0000:c3:00.0", "mlx5_5", Relation::PIX),
            ("0000:d1:00.0", "mlx5_6", Relation::PIX),
            ("0000:df:00.0", "mlx5_7", Relation::PIX),
        ]
    );
    assert_eq!(relation(&report, "0000:1b:00.0", "mlx5_1"), Relation::NODE);
    assert_eq!(relation(&report, "0000:1b:00.0", "mlx5_8"), Relation::NODE);
    assert_eq!(relation(&report, "0000:1b:00.0", "mlx5_4"), Relation::SYS);
    assert_eq!(relation(&report, "0000:df:00.0", "mlx5_8"), Relation::SYS);
    // Root ports redirect (ACS on), but PIX paths do not pass them.
    assert!(!report.acs.redirecting.is_empty());
    assert_eq!(levels_of(&report, "acs"), [(Level::Ok, "no ACS redirection between paired GPUs and NICs")]);
}

#[test]
fn dgx_h100_with_capable_gpus_is_all_ok() {
    let without_cuda = report_for(&Machine::dgx_h100_like(), not_queried());
    // CUDA not asked is a warning: the node still passes, and only --strict counts it a miss.
    assert_eq!(without_cuda.worst_level(), Level::Warn, "{:#?}", without_cuda.verdicts);
    assert_eq!(without_cuda.exit_code, 0, "{:#?}", without_cuda.verdicts);
    assert_eq!(without_cuda.worst_level().strict_exit_code(), 1);
    let report = report_for(&Machine::dgx_h100_like(), cuda_all_capable(&without_cuda));
    assert_eq!(report.exit_code, 0, "{:#?}", report.verdicts);
    assert_eq!(report.gpus[4].label, "GPU4");
    assert_eq!(report.gpus[4].bus_id, "0000:9d:00.0");
    assert_eq!(report.gpudirect.dma_buf_usable, Some(true));
    assert_eq!(report.gpudirect.auto.name(), "dmabuf");
    assert_eq!(report.iommu.mode, IommuMode::Passthrough);
}

#[test]
fn dgx_ports_report_link_mtu_and_gids() {
    let report = report_for(&Machine::dgx_h100_like(), not_queried());
    let infiniband = &report.rdma_devices[0];
    let port = &infiniband.ports[0];
    assert_eq!(port.state.as_deref(), Some("ACTIVE"));
    assert_eq!(port.link_layer.as_deref(), Some("InfiniBand"));
    assert_eq!(port.width.as_deref(), Some("4X"));
    assert_eq!(port.mtu, PortMtu::NotInSysfs);
    assert_eq!(port.gids.len(), 1, "empty GID slots are skipped");
    let Backing::Hardware { pci } = &infiniband.backing else { panic!("mlx5_0 is hardware") };
    assert_eq!((pci.address.as_str(), pci.numa_node), ("0000:18:00.0", Some(0)));

    let storage = report.rdma_devices.iter().find(|d| d.name == "mlx5_8").unwrap();
    let port = &storage.ports[0];
    assert!(
        matches!(&port.mtu, PortMtu::FromNetdev { netdev_mtu: 9000, active_mtu: 4096, .. }),
        "{:?}",
        port.mtu
    );
    let roce_v2_ipv4: Vec<&str> = port
        .gids
        .iter()
        .filter(|g| g.gid_type.as_deref() == Some("RoCE v2") && g.ip_family.as_deref() == Some("IPv4"))
        .map(|g| g.gid.as_str())
        .collect();
    assert_eq!(roce_v2_ipv4, ["::ffff:10.20.0.11"]);
}

#[test]
fn acs_redirect_on_a_switch_port_between_pair_is_flagged() {
    let mut machine = Machine::dgx_h100_like();
    // GPU0's downstream port (its NIC's is 0000:17:00.0).
    machine.find_mut("0000:17:01.0").unwrap().acs = AcsFixture::Control(0x001d);
    let report = report_for(&machine, not_queried());
    let acs = levels_of(&report, "acs");
    assert_eq!(acs.len(), 1, "{acs:?}");
    assert_eq!(acs[0].0, Level::Warn);
    assert!(acs[0].1.contains("0000:17:01.0") && acs[0].1.contains("mlx5_0"), "{}", acs[0].1);
    let fix = report.verdicts.iter().find(|v| v.check == "acs").unwrap().fix.as_deref().unwrap();
    assert!(fix.contains("setpci -s 0000:17:01.0 ECAP_ACS+0x6.w=0000"), "{fix}");
}

#[test]
fn a_gpu_without_gpudirect_support_fails() {
    let without_cuda = report_for(&Machine::dgx_h100_like(), not_queried());
    let CudaFacts::Available { driver_api_version, mut gpus } = cuda_all_capable(&without_cuda) else {
        unreachable!()
    };
    gpus[2].gpu_direct_rdma_supported = Some(false);
    let report = report_for(&Machine::dgx_h100_like(), CudaFacts::Available { driver_api_version, gpus });
    assert_eq!(report.exit_code, 1);
    assert_eq!(levels_of(&report, "cuda"), [(Level::Fail, "GPU_DIRECT_RDMA_SUPPORTED = 0 on GPU2")]);
}

#[test]
fn gpus_hidden_from_cuda_stay_in_the_report() {
    let without_cuda = report_for(&Machine::dgx_h100_like(), not_queried());
    let CudaFacts::Available { driver_api_version, mut gpus } = cuda_all_capable(&without_cuda) else {
        unreachable!()
    };
    gpus.truncate(1);
    let report = report_for(&Machine::dgx_h100_like(), CudaFacts::Available { driver_api_version, gpus });
    assert_eq!(report.gpus.len(), 8);
    assert_eq!(report.gpus[0].label, "GPU0");
    assert_eq!(report.gpus[1].label, "GPU@0000:43:00.0");
    assert_eq!(report.recommendation_for("0000:43:00.0").unwrap().nic, "mlx5_1");
}

#[test]
fn infiniband_ports_waiting_for_a_subnet_manager_fail_with_that_hint() {
    let mut machine = Machine::dgx_h100_like();
    for address in [
        "0000:18:00.0",
        "0000:40:00.0",
        "0000:4f:00.0",
        "0000:5e:00.0",
        "0000:9a:00.0",
        "0000:c0:00.0",
        "0000:ce:00.0",
        "0000:dc:00.0",
        "0000:aa:00.0",
    ] {
        let Function::Nic(nic) = &mut machine.find_mut(address).unwrap().function else {
            panic!("{address} is a NIC")
        };
        nic.state = PortState::Init;
    }
    let report = report_for(&machine, not_queried());
    let ports = report.verdicts.iter().find(|v| v.check == "ports").unwrap();
    assert_eq!(ports.level, Level::Fail);
    assert!(ports.fix.as_deref().unwrap().contains("subnet manager"));
}

#[test]
fn a_recommended_nic_that_is_down_warns() {
    let mut machine = Machine::dgx_h100_like();
    let Function::Nic(nic) = &mut machine.find_mut("0000:9a:00.0").unwrap().function else { panic!() };
    nic.state = PortState::Down;
    let report = report_for(&machine, not_queried());
    // Still the closest NIC: the topology answer does not change with the link.
    assert_eq!(report.recommendation_for("0000:9d:00.0").unwrap().nic, "mlx5_4");
    assert!(levels_of(&report, "ports")
        .contains(&(Level::Warn, "mlx5_4 is recommended for a GPU but has no ACTIVE port")));
}

#[test]
fn cross_socket_gpus_share_the_far_nic_and_warn() {
    let report = report_for(&Machine::cross_socket(), not_queried());
    assert_eq!((report.worst_level(), report.exit_code), (Level::Warn, 0), "{:#?}", report.verdicts);
    for recommendation in &report.recommendations {
        assert_eq!((recommendation.nic.as_str(), recommendation.relation), ("mlx5_0", Relation::SYS));
    }
    assert_eq!(report.recommendations[1].shared_with_earlier_gpus, 1);
    assert_eq!(levels_of(&report, "topology").len(), 2);
    assert!(levels_of(&report, "topology").iter().all(|(level, _)| *level == Level::Warn));
    // Proprietary module: dma-buf impossible, peermem carries GPUDirect.
    assert_eq!(report.gpudirect.dma_buf_usable, Some(false));
    assert_eq!(report.gpudirect.auto.name(), "peermem");
    assert_eq!(report.acs.unreadable, report.acs.checked);
    assert!(levels_of(&report, "acs").is_empty(), "unreadable ACS is a note, not a verdict");
    assert_eq!(report.iommu.mode, IommuMode::Off);
}

#[test]
fn proprietary_driver_without_peermem_has_no_gpudirect_path() {
    let mut machine = Machine::cross_socket();
    machine.nvidia.as_mut().unwrap().peermem = false;
    let report = report_for(&machine, not_queried());
    assert_eq!(report.gpudirect.auto.name(), "none");
    let gpudirect = report.verdicts.iter().find(|v| v.check == "gpudirect").unwrap();
    assert_eq!(gpudirect.level, Level::Fail);
    assert!(gpudirect.fix.as_deref().unwrap().contains("modprobe nvidia-peermem"));
}

#[test]
fn a_gpu_node_without_nic_fails() {
    let machine = Machine::gpu_without_nic();
    let report = report_for(&machine, not_queried());
    assert_eq!(report.exit_code, 1);
    assert_eq!(
        levels_of(&report, "rdma-devices"),
        [(Level::Fail, "no RDMA device in /sys/class/infiniband")]
    );
    assert!(report.recommendations.is_empty() && report.pairs.is_empty());
    assert_eq!(report.gpus.len(), 1);
    assert_eq!(report.gpus[0].numa_node(), None);
    let directory = FixtureDir::with(&machine).unwrap();
    assert_eq!(recommend_nic(directory.path(), "00000000:00:05.0").unwrap(), None);
}

#[test]
fn a_soft_roce_vm_lists_rxe_as_software_and_fails_gpudirect() {
    let report = report_for(&Machine::rxe_only(), not_queried());
    assert_eq!(report.exit_code, 1);
    let rxe = &report.rdma_devices[0];
    assert_eq!(rxe.name, "rxe0");
    assert!(
        matches!(&rxe.backing, Backing::Software { driver, netdev: Some(netdev) } if driver == "rxe" && netdev == "eth0")
    );
    assert!(matches!(&rxe.ports[0].mtu, PortMtu::FromNetdev { netdev_mtu: 1500, active_mtu: 1024, .. }));
    assert!(rxe.ports[0]
        .gids
        .iter()
        .any(|g| g.gid == "::ffff:10.0.2.15" && g.gid_type.as_deref() == Some("RoCE v2")));
    assert_eq!(levels_of(&report, "gpus")[0].0, Level::Fail);
    assert!(levels_of(&report, "rdma-devices")[0].1.starts_with("only software RDMA devices (rxe0)"));
    assert!(report.network_controllers_without_rdma.is_empty(), "virtio-net is not an RDMA controller");
    assert!(report.to_string().contains("rxe0: software (rxe on eth0), no firmware version (fw_ver empty)"));
}

#[test]
fn recommend_nic_answers_for_cuda_bus_ids_and_refuses_non_gpus() {
    let directory = FixtureDir::with(&Machine::dgx_h100_like()).unwrap();
    assert_eq!(recommend_nic(directory.path(), "00000000:9D:00.0").unwrap().as_deref(), Some("mlx5_4"));
    assert_eq!(recommend_nic(directory.path(), "df:00.0").unwrap().as_deref(), Some("mlx5_7"));
    // An NVSwitch is an NVIDIA device but not a GPU.
    assert!(matches!(recommend_nic(directory.path(), "0000:a1:00.0"), Err(DoctorError::GpuNotFound { .. })));
    assert!(matches!(recommend_nic(directory.path(), "gpu0"), Err(DoctorError::BadBusId { .. })));
}

/// Two GPUs and two NICs under one switch (DGX A100 style): all four pairs are
/// PIX, so only the 1:1 tie-break separates them; a third GPU behind a second
/// switch level is PXB to both.
fn shared_switch_machine() -> Machine {
    let mut machine = Machine::rxe_only();
    machine.software_rdma.clear();
    machine.host_bridges = vec![HostBridge {
        domain_bus: "0000:00".into(),
        numa_node: Some(0),
        devices: vec![PciNode::bridge(
            "0000:00:01.0",
            vec![PciNode::switch(
                "0000:01:00.0",
                vec![
                    ("0000:02:00.0", PciNode::gpu("0000:03:00.0", 0x20b0)),
                    ("0000:02:01.0", PciNode::gpu("0000:04:00.0", 0x20b0)),
                    (
                        "0000:02:02.0",
                        PciNode::infiniband_nic("0000:05:00.0", "mlx5_1", "200 Gb/sec (4X HDR)"),
                    ),
                    (
                        "0000:02:03.0",
                        PciNode::infiniband_nic("0000:06:00.0", "mlx5_0", "200 Gb/sec (4X HDR)"),
                    ),
                    (
                        "0000:02:04.0",
                        PciNode::switch(
                            "0000:07:00.0",
                            vec![("0000:08:00.0", PciNode::gpu("0000:09:00.0", 0x20b0))],
                        ),
                    ),
                ],
            )],
        )],
    }];
    machine
}

#[test]
fn gpus_sharing_a_switch_with_two_nics_pair_one_to_one() {
    let report = report_for(&shared_switch_machine(), not_queried());
    let chosen: Vec<(&str, Relation)> =
        report.recommendations.iter().map(|r| (r.nic.as_str(), r.relation)).collect();
    assert_eq!(chosen, [("mlx5_0", Relation::PIX), ("mlx5_1", Relation::PIX), ("mlx5_0", Relation::PXB)]);
    assert_eq!(relation(&report, "0000:03:00.0", "mlx5_1"), Relation::PIX);
}

#[test]
fn translating_iommu_warns() {
    let mut machine = Machine::dgx_h100_like();
    machine.iommu.domain_type = Some("DMA-FQ".into());
    machine.cmdline = "ro intel_iommu=on".into();
    let report = report_for(&machine, not_queried());
    assert_eq!(report.iommu.mode, IommuMode::Translated);
    let iommu = levels_of(&report, "iommu");
    assert_eq!(iommu[0].0, Level::Warn);
    assert!(iommu[0].1.contains("0000:1b:00.0 (DMA-FQ)"), "{}", iommu[0].1);
}

#[test]
fn connectx_without_its_rdma_driver_and_narrow_links_warn() {
    let mut machine = Machine::dgx_h100_like();
    let Function::Nic(nic) = &mut machine.find_mut("0000:aa:00.0").unwrap().function else { panic!() };
    nic.rdma_name = None;
    machine.find_mut("0000:18:00.0").unwrap().link_width = (8, 16);
    let report = report_for(&machine, not_queried());
    assert_eq!(report.network_controllers_without_rdma.len(), 1);
    assert!(levels_of(&report, "rdma-devices")
        .contains(&(Level::Warn, "PCI network controller 0000:aa:00.0 (mlx5_core) has no RDMA device")));
    assert_eq!(
        levels_of(&report, "pcie-link"),
        [(Level::Warn, "mlx5_0 (0000:18:00.0) trained at PCIe 32 GT/s x8 of 32 GT/s x16")]
    );
}

#[test]
fn pcie_links_and_device_control_are_reported_and_judged() {
    let mut machine = Machine::dgx_h100_like();
    machine.find_mut("0000:1b:00.0").unwrap().link_width = (8, 16);
    machine.find_mut("0000:43:00.0").unwrap().link_speed = (2.5, 32.0);
    machine.find_mut("0000:40:00.0").unwrap().link_speed = (16.0, 32.0);
    let report = report_for(&machine, not_queried());
    assert_eq!(report.pcie.len(), 8 + 9, "eight GPUs and nine ConnectX");
    let verdicts = levels_of(&report, "pcie-link");
    assert_eq!(
        verdicts,
        [
            (Level::Warn, "GPU (0000:1b:00.0) trained at PCIe 32 GT/s x8 of 32 GT/s x16"),
            (Level::Ok, "GPU (0000:43:00.0) trained at PCIe 2.5 GT/s x16 of 32 GT/s x16"),
            (Level::Warn, "mlx5_1 (0000:40:00.0) trained at PCIe 16 GT/s x16 of 32 GT/s x16"),
        ]
    );
    let idle = report.verdicts.iter().find(|v| v.reason.starts_with("GPU (0000:43:00.0)")).unwrap();
    assert!(idle
        .fix
        .as_deref()
        .unwrap()
        .ends_with("a GPU lowers its speed when idle: read it again under load"));
    assert_eq!(verdicts.len(), 3, "{verdicts:?}");
    let text = report.to_string();
    assert!(text.contains("PCIe links and Device Control"), "{text}");
    assert!(
        text.contains("GPU2 0000:52:00.0: link 32 GT/s x16 (max 32 GT/s x16), MPS 256 B, MRRS 512 B, relaxed ordering on"),
        "{text}"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["pcie"][0]["device_control"]["max_read_request_bytes"], 512);
}

#[test]
fn the_json_report_carries_the_topology_in_nvidia_smi_words() {
    let report = report_for(&Machine::dgx_h100_like(), not_queried());
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["recommendations"][0]["relation"], "PIX");
    assert_eq!(json["recommendations"][0]["nic"], "mlx5_0");
    assert_eq!(json["exit_code"], 0, "warnings only: the node passes");
    assert_eq!(json["verdicts"][0]["level"], "OK");
    assert_eq!(json["cuda"]["status"], "not_queried");
}

#[test]
fn the_human_report_ends_with_verdicts_and_the_exit_code() {
    let text = report_for(&Machine::cross_socket(), not_queried()).to_string();
    let verdict_section = text.find("\nVerdict\n").expect("a verdict section");
    assert!(text.find("\nTopology").unwrap() < verdict_section);
    assert!(text.contains("  GPU0  SYS     0     mlx5_0 (SYS)\n"), "{text}");
    assert!(text.contains("  GPU1  SYS     0     mlx5_0 (SYS, shared)\n"), "{text}");
    assert!(text.trim_end().ends_with("exit code 0: GPUDirect RDMA can work, with warnings"), "{text}");
}

#[test]
fn a_runs_facts_come_from_the_fixture_tree() {
    let mut machine = Machine::dgx_h100_like();
    machine.find_mut("0000:1b:00.0").unwrap().link_width = (8, 16);
    machine.find_mut("0000:18:00.0").unwrap().link_speed = (16.0, 32.0);
    machine.find_mut("0000:18:00.0").unwrap().acs = AcsFixture::Unreadable;
    let directory = FixtureDir::with(&machine).unwrap();
    let run = gdrperf_doctor::pcie::run_facts(directory.path(), Some("00000000:1B:00.0"), "mlx5_0");
    let gpu = run.gpu.as_ref().unwrap();
    assert_eq!(gpu.address, "0000:1b:00.0");
    assert_eq!(gpu.device_control.describe(), "MPS 256 B, MRRS 512 B, relaxed ordering on");
    assert!(gpu.link.narrow, "{gpu:?}");
    let nic = run.nic.as_ref().unwrap();
    assert_eq!(nic.address, "0000:18:00.0");
    assert_eq!(
        nic.device_control,
        gdrperf_doctor::pcie::DeviceControl::Unreadable,
        "64 bytes of config space: needs root"
    );
    assert!(nic.link.slow && !nic.link.narrow, "{nic:?}");
    // One switch: its upstream port and the two downstream ports, ACS off there.
    let bridges: Vec<&str> = run.path_acs.iter().map(|bridge| bridge.bridge.as_str()).collect();
    assert_eq!(bridges, ["0000:16:00.0", "0000:17:00.0", "0000:17:01.0"]);
    assert!(run.path_acs.iter().all(|bridge| !bridge.redirects_peer_to_peer));
    let header = run.header_lines();
    // The links' judgement is gdrperf_topology::findings' (the run header's "Finding" lines), not here.
    assert_eq!(header.iter().filter(|(name, _)| name == "PCIe").count(), 2, "{header:#?}");
    assert!(header.iter().any(|(name, text)| name == "ACS on path" && text.contains("0000:17:00.0")));
    // A software NIC and no GPU: nothing to say, and nothing invented.
    assert_eq!(
        gdrperf_doctor::pcie::run_facts(directory.path(), None, "rxe0"),
        gdrperf_doctor::pcie::RunPcieFacts::default()
    );
}
