//! RDMA devices from `/sys/class/infiniband`: ports, link, GIDs, MTU, PCI place.
//!
//! A hardware device has a `device` symlink to its PCI function; a software
//! one (Soft-RoCE `rxe`, Soft-iWARP `siw`) has none, because it is a driver
//! bound to an Ethernet netdev. Software devices can run every verb, but they
//! copy with the CPU, so there is no PCIe path along which a GPU's memory could
//! be reached: they never qualify for GPUDirect RDMA.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

use serde::Serialize;

use crate::pci::PciDevice;
use crate::sysfs::SysRoot;

/// One RDMA device (`mlx5_0`, `rxe0`).
#[derive(Debug, Clone, Serialize)]
pub struct RdmaDevice {
    pub name: String,
    pub backing: Backing,
    /// `1: CA` for InfiniBand/RoCE adapters, `4: RNIC` for iWARP.
    pub node_type: Option<String>,
    pub firmware: Option<String>,
    pub ports: Vec<Port>,
}

/// What carries the device's traffic.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Backing {
    /// A PCI function: a real NIC.
    Hardware { pci: Box<PciDevice> },
    /// A software device bound to an Ethernet netdev.
    Software {
        /// `rxe` or `siw`, guessed from the node type (sysfs has no driver link).
        driver: String,
        netdev: Option<String>,
    },
}

/// One port of a device.
#[derive(Debug, Clone, Serialize)]
pub struct Port {
    pub number: u32,
    /// The logical state word: `ACTIVE`, `INIT` (InfiniBand: no subnet manager yet), `DOWN`.
    pub state: Option<String>,
    /// The physical state word: `LinkUp`, `Polling`, `Disabled`.
    pub physical_state: Option<String>,
    /// `InfiniBand` or `Ethernet` (RoCE).
    pub link_layer: Option<String>,
    /// Active rate as sysfs words it, speed and width together: `400 Gb/sec (4X NDR)`.
    pub rate: Option<String>,
    /// The width part of the rate (`4X`), the number to compare with the cable.
    pub width: Option<String>,
    pub mtu: PortMtu,
    /// The populated GID table entries (empty slots are left out).
    pub gids: Vec<Gid>,
}

impl Port {
    pub fn is_active(&self) -> bool {
        self.state.as_deref() == Some("ACTIVE")
    }

    pub fn is_ethernet(&self) -> bool {
        self.link_layer.as_deref() == Some("Ethernet")
    }
}

/// The port's active MTU, as far as sysfs can tell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum PortMtu {
    /// InfiniBand negotiates the MTU with the subnet manager; sysfs does not
    /// show it (`ibv_devinfo` does, through a verbs query).
    NotInSysfs,
    /// RoCE derives the MTU from its netdev: the largest InfiniBand MTU that
    /// fits in an Ethernet frame of that size after the RoCE headers.
    FromNetdev { netdev: String, netdev_mtu: u32, active_mtu: u32 },
    /// An Ethernet port whose netdev or its MTU could not be read.
    Unknown,
}

/// One GID table entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gid {
    pub index: u32,
    /// Compressed IPv6 spelling (`fe80::e42:a1ff:fe2b:5f3c`, `::ffff:10.0.0.1`).
    pub gid: String,
    /// `RoCE v2`, or `IB/RoCE v1` (InfiniBand GIDs and RoCE v1 share the word).
    pub gid_type: Option<String>,
    /// For RoCE: `IPv4` when the GID is an IPv4-mapped address, else `IPv6`.
    pub ip_family: Option<String>,
    /// For RoCE: the netdev the GID belongs to.
    pub netdev: Option<String>,
}

/// Bytes of RoCE v2 headers the kernel subtracts from a netdev MTU before
/// choosing the InfiniBand MTU (`iboe_get_mtu`: GRH 40, UDP 8, BTH 12,
/// XRC 4, AtomicETH 28, ICRC 4).
const ROCE_HEADER_BYTES: u32 = 96;
/// The MTUs InfiniBand transport can use, largest first.
const IB_MTUS: [u32; 5] = [4096, 2048, 1024, 512, 256];

/// The InfiniBand MTU RoCE uses over a netdev of this MTU.
pub fn roce_active_mtu(netdev_mtu: u32) -> u32 {
    let payload = netdev_mtu.saturating_sub(ROCE_HEADER_BYTES);
    IB_MTUS.into_iter().find(|&mtu| mtu <= payload).unwrap_or(256)
}

/// All RDMA devices, in name order (`mlx5_2` before `mlx5_10`); none when
/// the RDMA core is not loaded.
pub fn scan(sys: &SysRoot) -> Vec<RdmaDevice> {
    let mut names = sys.list("sys/class/infiniband");
    names.sort_by(|a, b| name_order(a).cmp(&name_order(b)));
    names.into_iter().map(|name| read_device(sys, name)).collect()
}

/// Sorting key that orders device names the way people number them:
/// `mlx5_2` < `mlx5_10` (plain string order would put `mlx5_10` first).
pub fn name_order(name: &str) -> (&str, u64) {
    let prefix = name.trim_end_matches(|c: char| c.is_ascii_digit());
    (prefix, name[prefix.len()..].parse().unwrap_or(0))
}

fn read_device(sys: &SysRoot, name: String) -> RdmaDevice {
    let directory = PathBuf::from(format!("sys/class/infiniband/{name}"));
    let node_type = sys.read_text(directory.join("node_type"));
    let ports: Vec<Port> = sys
        .list(directory.join("ports"))
        .iter()
        .filter_map(|number| number.parse::<u32>().ok())
        .map(|number| read_port(sys, &directory, number))
        .collect();
    // Soft-RoCE exposes the netdev it is bound to as `parent`; that marks it
    // software even if a kernel ever gives it a `device` link to that
    // netdev's PCI function.
    let parent = sys.read_text(directory.join("parent"));
    let pci = sys
        .resolve(directory.join("device"))
        .and_then(|pci_directory| PciDevice::read(sys, &pci_directory))
        .filter(|_| parent.is_none());
    let backing = match pci {
        Some(pci) => Backing::Hardware { pci: Box::new(pci) },
        None => Backing::Software {
            driver: if node_type.as_deref().is_some_and(|t| t.contains("RNIC")) { "siw" } else { "rxe" }
                .to_string(),
            netdev: parent
                .or_else(|| ports.iter().flat_map(|port| &port.gids).find_map(|gid| gid.netdev.clone())),
        },
    };
    // Drivers without a firmware (rxe, siw) leave fw_ver empty: no version, not an empty one.
    let firmware = sys.read_text(directory.join("fw_ver")).filter(|version| !version.trim().is_empty());
    RdmaDevice { name, backing, node_type, firmware, ports }
}

fn read_port(sys: &SysRoot, device_directory: &std::path::Path, number: u32) -> Port {
    let directory = device_directory.join(format!("ports/{number}"));
    let rate = sys.read_text(directory.join("rate"));
    let link_layer = sys.read_text(directory.join("link_layer"));
    let gids: Vec<Gid> = sys
        .list(directory.join("gids"))
        .iter()
        .filter_map(|index| index.parse::<u32>().ok())
        .filter_map(|index| read_gid(sys, &directory, index, link_layer.as_deref() == Some("Ethernet")))
        .collect();
    let mtu = if link_layer.as_deref() == Some("Ethernet") {
        port_netdev(sys, device_directory, &gids)
            .and_then(|netdev| {
                let netdev_mtu = sys.read_unsigned(format!("sys/class/net/{netdev}/mtu"))?;
                Some(PortMtu::FromNetdev { netdev, netdev_mtu, active_mtu: roce_active_mtu(netdev_mtu) })
            })
            .unwrap_or(PortMtu::Unknown)
    } else {
        PortMtu::NotInSysfs
    };
    Port {
        number,
        state: sys.read_text(directory.join("state")).map(|text| state_word(&text)),
        physical_state: sys.read_text(directory.join("phys_state")).map(|text| state_word(&text)),
        width: rate.as_deref().and_then(rate_width),
        rate,
        link_layer,
        mtu,
        gids,
    }
}

/// The netdev a RoCE port runs on: the first GID's, else the software
/// device's parent, else the PCI function's own netdev.
fn port_netdev(sys: &SysRoot, device_directory: &std::path::Path, gids: &[Gid]) -> Option<String> {
    gids.iter()
        .find_map(|gid| gid.netdev.clone())
        .or_else(|| sys.read_text(device_directory.join("parent")))
        .or_else(|| sys.list(device_directory.join("device/net")).into_iter().next())
}

fn read_gid(sys: &SysRoot, port_directory: &std::path::Path, index: u32, roce: bool) -> Option<Gid> {
    let text = sys.read_text(port_directory.join(format!("gids/{index}")))?;
    let address = parse_gid(&text)?;
    if address.is_unspecified() {
        return None;
    }
    let ip_family =
        roce.then(|| if address.to_ipv4_mapped().is_some() { "IPv4" } else { "IPv6" }.to_string());
    Some(Gid {
        index,
        gid: match address.to_ipv4_mapped() {
            Some(ipv4) if roce => format!("::ffff:{ipv4}"),
            _ => address.to_string(),
        },
        gid_type: sys.read_text(port_directory.join(format!("gid_attrs/types/{index}"))),
        ip_family,
        netdev: sys.read_text(port_directory.join(format!("gid_attrs/ndevs/{index}"))),
    })
}

/// Parses sysfs's GID spelling: eight groups of four hex digits.
pub fn parse_gid(text: &str) -> Option<Ipv6Addr> {
    let groups: Vec<u16> =
        text.trim().split(':').map(|group| u16::from_str_radix(group, 16).ok()).collect::<Option<_>>()?;
    let groups: [u16; 8] = groups.try_into().ok()?;
    Some(Ipv6Addr::from(groups))
}

/// The IPv4 address a RoCE GID carries, if it is IPv4-mapped.
pub fn gid_ipv4(gid: &Gid) -> Option<Ipv4Addr> {
    gid.gid.strip_prefix("::ffff:")?.parse().ok()
}

/// `4: ACTIVE` -> `ACTIVE`; sysfs prefixes states with their numeric code.
fn state_word(text: &str) -> String {
    text.split_once(':').map(|(_, word)| word.trim()).unwrap_or(text).to_string()
}

/// `100 Gb/sec (4X EDR)` -> `4X`.
fn rate_width(rate: &str) -> Option<String> {
    let inside = rate.split_once('(')?.1.trim_end_matches(')');
    inside.split_whitespace().find(|word| word.ends_with('X')).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_sort_by_their_number() {
        let mut names = vec!["mlx5_10", "rxe0", "mlx5_2", "mlx5_bond_0", "mlx5_1"];
        names.sort_by(|a, b| name_order(a).cmp(&name_order(b)));
        assert_eq!(names, ["mlx5_1", "mlx5_2", "mlx5_10", "mlx5_bond_0", "rxe0"]);
    }

    #[test]
    fn roce_mtu_leaves_room_for_headers() {
        assert_eq!(roce_active_mtu(1500), 1024);
        assert_eq!(roce_active_mtu(9000), 4096);
        assert_eq!(roce_active_mtu(4200), 4096);
        assert_eq!(roce_active_mtu(4150), 2048);
        assert_eq!(roce_active_mtu(68), 256);
    }

    #[test]
    fn sysfs_words_are_split_from_their_codes() {
        assert_eq!(state_word("4: ACTIVE"), "ACTIVE");
        assert_eq!(state_word("5: LinkUp"), "LinkUp");
        assert_eq!(rate_width("400 Gb/sec (4X NDR)").as_deref(), Some("4X"));
        assert_eq!(rate_width("10 Gb/sec (1X QDR)").as_deref(), Some("1X"));
        assert_eq!(rate_width("25 Gb/sec"), None);
    }

    #[test]
    fn gids_parse_and_ipv4_mapped_ones_are_recognized() {
        let gid = parse_gid("0000:0000:0000:0000:0000:ffff:0a00:020f").unwrap();
        assert_eq!(gid.to_ipv4_mapped(), Some(Ipv4Addr::new(10, 0, 2, 15)));
        assert_eq!(
            parse_gid("fe80:0000:0000:0000:0e42:a1ff:fe2b:5f3c").unwrap().to_string(),
            "fe80::e42:a1ff:fe2b:5f3c"
        );
        assert!(parse_gid("fe80::1").is_none());
    }
}
