//! How close a GPU and a NIC are on PCIe, in `nvidia-smi topo -m`'s words.
//!
//! GPUDirect RDMA moves data between the NIC and GPU memory by PCIe
//! peer-to-peer. Inside one PCIe switch that traffic never touches the CPU;
//! through the root complex it is slower (many CPUs throttle peer-to-peer),
//! and across sockets it crosses the SMP interconnect. So the question "which
//! NIC goes with which GPU" is "which NIC has the shortest PCIe path".
//!
//! A PCIe switch appears in sysfs as an upstream port with one downstream port
//! per slot below it: `root port / upstream / downstream / device`. As NCCL
//! does, we name each switch by its upstream port, which is a device's
//! grandparent directory, and count switches rather than Linux bridges.

use std::cmp::Reverse;

use serde::{Deserialize, Serialize};

use crate::pci::{AcsState, PciLocation};
use crate::rdma::name_order;

/// The PCIe relation between two devices, closest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Relation {
    /// Through at most one PCIe switch.
    PIX,
    /// Through several PCIe switches, without reaching the host bridge.
    PXB,
    /// Through a PCIe host bridge: same root complex (the CPU), different root ports.
    PHB,
    /// Across host bridges within one NUMA node.
    NODE,
    /// Across NUMA nodes: the SMP interconnect (UPI, xGMI).
    SYS,
    /// Not nvidia-smi's: a software RDMA device, which has no PCIe path at all.
    SW,
}

impl Relation {
    /// What the word means, for the report's legend and verdicts.
    pub fn meaning(self) -> &'static str {
        match self {
            Relation::PIX => "at most one PCIe switch between them",
            Relation::PXB => "several PCIe switches, host bridge not crossed",
            Relation::PHB => "through a PCIe host bridge (the CPU's root complex)",
            Relation::NODE => "across host bridges within a NUMA node",
            Relation::SYS => "across NUMA nodes (SMP interconnect)",
            Relation::SW => "software RDMA device, no PCIe path",
        }
    }

    /// Whether peer-to-peer traffic can stay below the root complex, which is
    /// where ACS redirection hurts and where GPUDirect RDMA runs at full speed.
    pub fn stays_below_root_complex(self) -> bool {
        matches!(self, Relation::PIX | Relation::PXB)
    }
}

/// A device's place in the tree plus its NUMA node: what the relation needs.
#[derive(Debug, Clone, Copy)]
pub struct Endpoint<'a> {
    pub location: &'a PciLocation,
    pub numa_node: Option<u32>,
}

/// The path between two devices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PciePath {
    pub relation: Relation,
    /// PCIe switches on the path (0 when it goes through the host bridge).
    pub switches: usize,
    /// Every PCI bridge the traffic passes, in address order: root ports,
    /// switch upstream and downstream ports. ACS on any of them matters.
    pub bridges: Vec<String>,
}

/// The switches above a device, top down, each named by its upstream port's
/// full sysfs path (so equal names mean the same switch).
fn switches_above(location: &PciLocation) -> Vec<String> {
    let chain = &location.chain;
    // The device's grandparent, its grandparent, and so on while still below the host bridge.
    let mut switches: Vec<String> = (0..chain.len().saturating_sub(2))
        .rev()
        .step_by(2)
        .map(|upstream| format!("{}/{}", location.host_bridge, chain[..=upstream].join("/")))
        .collect();
    switches.reverse();
    switches
}

/// Computes the relation between `a` and `b`.
pub fn path_between(a: Endpoint, b: Endpoint) -> PciePath {
    let switches_a = switches_above(a.location);
    let switches_b = switches_above(b.location);
    let shared_switches = switches_a.iter().zip(&switches_b).take_while(|(x, y)| x == y).count();
    let same_host_bridge = a.location.host_bridge == b.location.host_bridge;
    let (relation, switches) = if same_host_bridge && shared_switches > 0 {
        let switches = switches_a.len() + switches_b.len() - 2 * shared_switches + 1;
        (if switches == 1 { Relation::PIX } else { Relation::PXB }, switches)
    } else if same_host_bridge {
        (Relation::PHB, 0)
    } else {
        match (a.numa_node, b.numa_node) {
            (Some(x), Some(y)) if x != y => (Relation::SYS, 0),
            // Unknown NUMA (-1) is what single-node machines report.
            _ => (Relation::NODE, 0),
        }
    };
    PciePath { relation, switches, bridges: bridges_between(a.location, b.location) }
}

/// The bridges below the devices' lowest common ancestor directory, plus that
/// ancestor when it is a bridge itself (a switch's upstream port).
fn bridges_between(a: &PciLocation, b: &PciLocation) -> Vec<String> {
    let common = if a.host_bridge == b.host_bridge {
        a.chain.iter().zip(&b.chain).take_while(|(x, y)| x == y).count()
    } else {
        0
    };
    let mut bridges: Vec<String> = Vec::new();
    if common > 0 {
        bridges.push(a.chain[common - 1].clone());
    }
    for location in [a, b] {
        let below_common = location.bridges().get(common..).unwrap_or_default();
        bridges.extend(below_common.iter().cloned());
    }
    bridges.sort();
    bridges.dedup();
    bridges
}

/// A NIC as the recommendation sees it.
#[derive(Debug, Clone)]
pub struct NicCandidate<'a> {
    pub name: &'a str,
    /// `None` for a software device.
    pub endpoint: Option<Endpoint<'a>>,
    pub has_active_port: bool,
}

/// The NIC chosen for one GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recommendation {
    pub gpu_bus_id: String,
    pub nic: String,
    pub relation: Relation,
    /// How many GPUs before this one (in PCI order) were given the same NIC.
    pub shared_with_earlier_gpus: usize,
}

/// Pairs each GPU (given in PCI order, as `(bus id, endpoint)`) with its
/// closest NIC. Ties go first to a NIC not yet given to another GPU, so that
/// GPUs pair 1:1 as on a DGX, then to a NIC with an active port, then to name
/// order. Software devices are only candidates when there is no hardware NIC.
/// The choice is greedy in PCI order, which is exact for the symmetric trees
/// of real servers and deterministic everywhere.
pub fn recommend(gpus: &[(String, Endpoint)], nics: &[NicCandidate]) -> Vec<Recommendation> {
    let any_hardware = nics.iter().any(|nic| nic.endpoint.is_some());
    let candidates: Vec<&NicCandidate> =
        nics.iter().filter(|nic| nic.endpoint.is_some() || !any_hardware).collect();
    let mut times_given = vec![0usize; candidates.len()];
    let mut recommendations = Vec::new();
    for (gpu_bus_id, gpu) in gpus {
        let scored = candidates.iter().enumerate().map(|(index, nic)| {
            let (relation, switches) = match nic.endpoint {
                Some(endpoint) => {
                    let path = path_between(*gpu, endpoint);
                    (path.relation, path.switches)
                }
                None => (Relation::SW, 0),
            };
            let rank =
                (relation, switches, times_given[index], Reverse(nic.has_active_port), name_order(nic.name));
            (rank, index, relation)
        });
        let Some((_, chosen, relation)) = scored.min_by(|x, y| x.0.cmp(&y.0)) else {
            break;
        };
        recommendations.push(Recommendation {
            gpu_bus_id: gpu_bus_id.clone(),
            nic: candidates[chosen].name.to_string(),
            relation,
            shared_with_earlier_gpus: times_given[chosen],
        });
        times_given[chosen] += 1;
    }
    recommendations
}

/// A bridge on a GPU–NIC path whose ACS setting redirects peer-to-peer traffic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AcsFinding {
    pub bridge: String,
    pub acs: AcsState,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn location(path: &str) -> PciLocation {
        PciLocation::from_sysfs_path(Path::new(path)).unwrap()
    }

    fn relation(a: &str, a_numa: Option<u32>, b: &str, b_numa: Option<u32>) -> PciePath {
        let (a, b) = (location(a), location(b));
        path_between(
            Endpoint { location: &a, numa_node: a_numa },
            Endpoint { location: &b, numa_node: b_numa },
        )
    }

    const SWITCH: &str = "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";

    #[test]
    fn devices_under_one_switch_are_pix() {
        let path = relation(
            &format!("{SWITCH}/0000:02:00.0/0000:03:00.0"),
            Some(0),
            &format!("{SWITCH}/0000:02:01.0/0000:04:00.0"),
            Some(0),
        );
        assert_eq!(path.relation, Relation::PIX);
        assert_eq!(path.switches, 1);
        assert_eq!(path.bridges, ["0000:01:00.0", "0000:02:00.0", "0000:02:01.0"]);
    }

    #[test]
    fn a_device_behind_a_second_switch_is_pxb() {
        let nested = format!("{SWITCH}/0000:02:00.0/0000:03:00.0/0000:04:00.0/0000:05:00.0");
        let path = relation(&nested, Some(0), &format!("{SWITCH}/0000:02:01.0/0000:06:00.0"), Some(0));
        assert_eq!(path.relation, Relation::PXB);
        assert_eq!(path.switches, 2);
    }

    #[test]
    fn different_root_ports_of_one_host_bridge_are_phb() {
        let path = relation(
            "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0",
            Some(0),
            "sys/devices/pci0000:00/0000:00:02.0/0000:02:00.0",
            Some(0),
        );
        assert_eq!(path.relation, Relation::PHB);
        assert_eq!(path.bridges, ["0000:00:01.0", "0000:00:02.0"]);
    }

    #[test]
    fn host_bridges_compare_by_numa_node() {
        let a = "sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0";
        let b = "sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0";
        assert_eq!(relation(a, Some(0), b, Some(0)).relation, Relation::NODE);
        assert_eq!(relation(a, Some(0), b, Some(1)).relation, Relation::SYS);
        assert_eq!(relation(a, None, b, Some(1)).relation, Relation::NODE);
    }

    #[test]
    fn devices_directly_on_the_root_bus_share_only_the_host_bridge() {
        // Virtual machines often put every device straight on bus 00.
        let path = relation(
            "sys/devices/pci0000:00/0000:00:04.0",
            None,
            "sys/devices/pci0000:00/0000:00:05.0",
            None,
        );
        assert_eq!(path.relation, Relation::PHB);
        assert!(path.bridges.is_empty());
    }

    #[test]
    fn ties_prefer_an_unused_nic_so_gpus_pair_one_to_one() {
        let gpu_a = location(&format!("{SWITCH}/0000:02:00.0/0000:03:00.0"));
        let gpu_b = location(&format!("{SWITCH}/0000:02:01.0/0000:04:00.0"));
        let nic_x = location(&format!("{SWITCH}/0000:02:02.0/0000:05:00.0"));
        let nic_y = location(&format!("{SWITCH}/0000:02:03.0/0000:06:00.0"));
        let endpoint = |location| Endpoint { location, numa_node: Some(0) };
        let gpus = [("a".to_string(), endpoint(&gpu_a)), ("b".to_string(), endpoint(&gpu_b))];
        let nics = [
            NicCandidate { name: "mlx5_1", endpoint: Some(endpoint(&nic_y)), has_active_port: true },
            NicCandidate { name: "mlx5_0", endpoint: Some(endpoint(&nic_x)), has_active_port: true },
        ];
        let recommendations = recommend(&gpus, &nics);
        let chosen: Vec<(&str, Relation, usize)> = recommendations
            .iter()
            .map(|r| (r.nic.as_str(), r.relation, r.shared_with_earlier_gpus))
            .collect();
        assert_eq!(chosen, [("mlx5_0", Relation::PIX, 0), ("mlx5_1", Relation::PIX, 0)]);
    }

    #[test]
    fn software_devices_only_count_without_hardware() {
        let gpu = location(&format!("{SWITCH}/0000:02:00.0/0000:03:00.0"));
        let nic = location("sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0");
        let gpus = [("gpu".to_string(), Endpoint { location: &gpu, numa_node: Some(0) })];
        let rxe = NicCandidate { name: "rxe0", endpoint: None, has_active_port: true };
        let far = NicCandidate {
            name: "mlx5_0",
            endpoint: Some(Endpoint { location: &nic, numa_node: Some(1) }),
            has_active_port: false,
        };
        assert_eq!(recommend(&gpus, &[rxe.clone(), far])[0].relation, Relation::SYS);
        assert_eq!(recommend(&gpus, &[rxe])[0].nic, "rxe0");
        assert!(recommend(&gpus, &[]).is_empty());
    }
}
