//! The facts [`super::device_findings`] and [`super::path_findings`] judge, read from sysfs
//! through `gdrperf-topology` (the reading the doctor prints and a run's ends exchange).

use crate::aer::AerCounts;
use crate::pci::{self, PciDevice, PciLocation};
use crate::pcie::{DeviceControl, FunctionFacts};
use crate::topology::{self, Endpoint};
use crate::SysRoot;

use super::finding::{Device, Finding, Link, PathBridge, PathFacts, Role};
use super::judge::{device_findings, path_findings};

/// The facts of one function; `name` is how findings call it ("mlx5_0", "GPU").
pub fn device(sys: &SysRoot, name: &str, pci: &PciDevice, role: Role) -> Device {
    let facts = FunctionFacts::read(sys, name, pci, role == Role::Gpu);
    let (max_payload_bytes, max_read_request_bytes, relaxed_ordering) = match facts.device_control {
        DeviceControl::Known { max_payload_bytes, max_read_request_bytes, relaxed_ordering, .. } => {
            (Some(max_payload_bytes), Some(max_read_request_bytes), Some(relaxed_ordering))
        }
        DeviceControl::Unreadable | DeviceControl::NotExpress => (None, None, None),
    };
    Device {
        name: name.to_string(),
        address: pci.address.clone(),
        role,
        link: Link {
            speed_gts: facts.link.current_speed_gts,
            width: facts.link.current_width,
            max_speed_gts: facts.link.max_speed_gts,
            max_width: facts.link.max_width,
        },
        max_payload_bytes,
        max_read_request_bytes,
        relaxed_ordering,
        acs: role.is_bridge().then(|| pci::read_acs(sys, &pci.address)),
        aer: AerCounts::read(sys, &pci.address),
    }
}

/// A bridge's role from its place in the chain below the host bridge: the root port first, then
/// each switch's upstream and downstream ports in turn (the rule `nvidia-smi topo` and NCCL use).
fn bridge_role(location: &PciLocation, address: &str) -> Role {
    match location.chain.iter().position(|entry| entry == address) {
        Some(0) | None => Role::RootPort,
        Some(index) if index % 2 == 1 => Role::SwitchUpstreamPort,
        Some(_) => Role::SwitchDownstreamPort,
    }
}

/// The GPU `gpu`, the NIC `nic` (named `nic_name`) and every bridge between them.
pub fn path(sys: &SysRoot, gpu: &PciDevice, nic: &PciDevice, nic_name: &str) -> PathFacts {
    let between = topology::path_between(
        Endpoint { location: &gpu.location, numa_node: gpu.numa_node },
        Endpoint { location: &nic.location, numa_node: nic.numa_node },
    );
    // The top of the path: the deepest bridge both chains share (its own uplink is not crossed).
    let top = (gpu.location.host_bridge == nic.location.host_bridge)
        .then(|| {
            let shared =
                gpu.location.chain.iter().zip(&nic.location.chain).take_while(|(a, b)| a == b).count();
            shared.checked_sub(1).map(|last| gpu.location.chain[last].clone())
        })
        .flatten();
    let bridges = between
        .bridges
        .iter()
        .filter_map(|address| {
            let location = [&gpu.location, &nic.location]
                .into_iter()
                .find(|location| location.chain.contains(address))?;
            let role = bridge_role(location, address);
            let bridge = PciDevice::read_by_address(sys, address)?;
            Some(PathBridge {
                device: device(sys, role.words(), &bridge, role),
                link_on_path: role == Role::SwitchUpstreamPort && top.as_deref() != Some(address.as_str()),
            })
        })
        .collect();
    PathFacts {
        gpu: device(sys, "GPU", gpu, Role::Gpu),
        nic: device(sys, nic_name, nic, Role::Nic),
        relation: between.relation,
        bridges,
    }
}

/// Every finding on a GPU-NIC pair: both ends' and the path's.
pub fn pair_findings(path: &PathFacts) -> Vec<Finding> {
    let mut findings = device_findings(&path.gpu);
    findings.extend(device_findings(&path.nic));
    findings.extend(path_findings(path));
    findings
}
