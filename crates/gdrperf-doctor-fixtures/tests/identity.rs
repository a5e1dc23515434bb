//! The node inventory (`gdrperf_topology::identity`) read from fixture trees of real machines:
//! what an acceptance run records it ran on.

use gdrperf_doctor_fixtures::{Dgx, FixtureDir, Machine};
use gdrperf_topology::identity::NodeIdentity;
use gdrperf_topology::{Relation, SysRoot};

fn identity(machine: &Machine) -> (FixtureDir, NodeIdentity) {
    let fixture = FixtureDir::with(machine).unwrap();
    let identity = NodeIdentity::read(&SysRoot::open(fixture.path()).unwrap());
    (fixture, identity)
}

#[test]
fn a_dgx_is_recorded_with_versions_guids_uuids_and_paths() {
    let (_fixture, node) = identity(&Machine::dgx_h100_like());
    assert_eq!(node.hostname.as_deref(), Some("fixture-node"));
    assert_eq!(node.kernel.as_deref(), Some("5.15.0-1042-nvidia"));
    assert_eq!(node.nvidia_driver.as_deref(), Some("550.54.15"));
    assert_eq!(node.rdma_core.as_deref(), Some("44.0"));
    assert_eq!(node.system.bios_version.as_deref(), Some("1.0.0"));
    assert_eq!(node.nics.len(), 9);
    let nic = &node.nics[0];
    assert_eq!(nic.name, Dgx::nic_name(0));
    assert_eq!(nic.kind, "hardware");
    assert_eq!(nic.board_id.as_deref(), Some("MT_0000000838"));
    assert_eq!(nic.firmware.as_deref(), Some("28.39.1002"));
    assert_eq!(nic.node_guid.as_deref(), Some("a088:c21b:0300:0001"));
    assert_eq!(nic.ports[0].port_guid.as_deref(), Some("a088:c21b:0300:0001"));
    let pci = nic.pci.as_ref().unwrap();
    assert_eq!(pci.address, Dgx::nic(0));
    assert_eq!(pci.link.current_width, Some(16));
    assert_eq!(pci.ids.as_deref(), Some("15b3:1021"));
    // The GUIDs tell the NICs apart.
    assert_ne!(node.nics[0].node_guid, node.nics[1].node_guid);

    assert_eq!(node.gpus.len(), 8);
    let gpu = &node.gpus[0];
    assert_eq!(gpu.bus_id, Dgx::gpu(0));
    assert_eq!(gpu.uuid.as_deref(), Some("GPU-5e1c2c3a-0000-4000-8000-00000000001b"));
    assert_eq!(gpu.model.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(gpu.video_bios.as_deref(), Some("96.00.99.00.01"));
    assert!(gpu.uuid_absent.is_none());

    // 8 GPUs x 9 hardware NICs; the pair's path runs through its switch's three ports.
    assert_eq!(node.paths.len(), 72);
    let pair = node.paths.iter().find(|path| path.gpu_bus_id == Dgx::gpu(0) && path.nic == Dgx::nic_name(0));
    let pair = pair.unwrap();
    assert_eq!(pair.relation, Relation::PIX);
    let bridges: Vec<&str> = pair.bridges.iter().map(|bridge| bridge.address.as_str()).collect();
    assert_eq!(bridges, ["0000:16:00.0", "0000:17:00.0", Dgx::gpu_switch_port(0).as_str()]);
    assert!(pair.bridges.iter().all(|bridge| bridge.link.current_width == Some(16)));
}

#[test]
fn a_nic_trained_narrow_shows_in_its_link() {
    let (_fixture, node) = identity(&Machine::dgx_h100_nic_at_x8(2));
    let nic = node.nics.iter().find(|nic| nic.name == Dgx::nic_name(2)).unwrap();
    let link = &nic.pci.as_ref().unwrap().link;
    assert_eq!((link.current_width, link.max_width), (Some(8), Some(16)));
}

#[test]
fn a_soft_roce_vm_has_no_gpu_no_driver_and_a_software_nic() {
    let (_fixture, node) = identity(&Machine::rxe_only());
    assert!(node.gpus.is_empty() && node.paths.is_empty());
    assert_eq!(node.nvidia_driver, None);
    let nic = &node.nics[0];
    assert_eq!((nic.name.as_str(), nic.kind.as_str()), ("rxe0", "rxe"));
    assert!(nic.pci.is_none() && nic.firmware.is_none() && nic.board_id.is_none());
}

#[test]
fn a_gpu_without_the_drivers_information_file_says_why_its_uuid_is_missing() {
    let (fixture, _) = identity(&Machine::dgx_h100_like());
    std::fs::remove_file(fixture.path().join(format!("proc/driver/nvidia/gpus/{}/information", Dgx::gpu(1))))
        .unwrap();
    let node = NodeIdentity::read(&SysRoot::open(fixture.path()).unwrap());
    let gpu = node.gpus.iter().find(|gpu| gpu.bus_id == Dgx::gpu(1)).unwrap();
    assert_eq!(gpu.uuid, None);
    assert!(gpu.uuid_absent.as_deref().unwrap().contains("information is missing"), "{:?}", gpu.uuid_absent);
    std::fs::remove_dir_all(fixture.path().join("sys/module/nvidia")).unwrap();
    let node = NodeIdentity::read(&SysRoot::open(fixture.path()).unwrap());
    let gpu = node.gpus.iter().find(|gpu| gpu.bus_id == Dgx::gpu(1)).unwrap();
    assert!(gpu.uuid_absent.as_deref().unwrap().contains("not loaded"), "{:?}", gpu.uuid_absent);
}
