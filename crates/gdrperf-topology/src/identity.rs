//! What a node is, for the record: the identity and inventory an acceptance run is signed
//! against. Kernel, driver, system firmware and rdma-core versions; per RDMA device
//! its GUIDs, board id, firmware and PCIe link; per GPU its UUID, video BIOS and link; and the
//! PCIe path between every GPU and every NIC with each bridge's link.
//!
//! Everything is read through [`SysRoot`], so the same code reads a server and a fixture tree.
//! A fact that cannot be read is `None` (serialized as `null`), never an error: an inventory
//! with holes still tells a reader which node it was. Facts only a library knows (the CUDA
//! version, CUDA's view of a GPU) are added by the caller, which loads CUDA in a process of its
//! own.

use std::path::PathBuf;

use serde::Serialize;

use crate::pci::{self, PciDevice, PcieLink};
use crate::rdma::{self, Backing};
use crate::sysfs::SysRoot;
use crate::topology::{self, Endpoint, Relation};

/// Where the node's identity was read, and what it is.
#[derive(Debug, Clone, Serialize)]
pub struct NodeIdentity {
    /// `proc/sys/kernel/hostname`.
    pub hostname: Option<String>,
    /// `proc/sys/kernel/osrelease`.
    pub kernel: Option<String>,
    /// The NVIDIA kernel module's version (`sys/module/nvidia/version`); `None`: not loaded.
    pub nvidia_driver: Option<String>,
    /// `sys/class/dmi/id`: who made the machine and which BIOS it runs.
    pub system: SystemFirmware,
    /// rdma-core's release, from the file name of libibverbs (`libibverbs.so.1.14.44.0` is
    /// rdma-core 44: the library's minor version carries the release).
    pub rdma_core: Option<String>,
    /// The libibverbs file the release was read from.
    pub rdma_core_source: Option<String>,
    pub nics: Vec<NicIdentity>,
    pub gpus: Vec<GpuIdentity>,
    /// One entry per GPU × hardware NIC.
    pub paths: Vec<PathIdentity>,
}

/// The machine and its firmware as DMI tells them (readable without root).
#[derive(Debug, Clone, Default, Serialize)]
pub struct SystemFirmware {
    pub vendor: Option<String>,
    pub product: Option<String>,
    pub bios_version: Option<String>,
    pub bios_date: Option<String>,
}

/// One RDMA device.
#[derive(Debug, Clone, Serialize)]
pub struct NicIdentity {
    pub name: String,
    /// `hardware` or the software driver (`rxe`, `siw`).
    pub kind: String,
    pub node_guid: Option<String>,
    pub sys_image_guid: Option<String>,
    /// The vendor's board (PSID for ConnectX, e.g. `MT_0000000838`).
    pub board_id: Option<String>,
    pub firmware: Option<String>,
    pub ports: Vec<PortIdentity>,
    /// The PCI function and its link; `None` for a software device.
    pub pci: Option<FunctionIdentity>,
}

/// One port of an RDMA device.
#[derive(Debug, Clone, Serialize)]
pub struct PortIdentity {
    pub number: u32,
    /// The interface id of GID 0: the port GUID on InfiniBand (on RoCE it derives from the MAC).
    pub port_guid: Option<String>,
    pub link_layer: Option<String>,
    pub state: Option<String>,
    pub rate: Option<String>,
}

/// A PCI function's address, ids and link.
#[derive(Debug, Clone, Serialize)]
pub struct FunctionIdentity {
    pub address: String,
    /// `vendor:device` in hex (`15b3:1021`).
    pub ids: Option<String>,
    pub driver: Option<String>,
    pub numa_node: Option<u32>,
    pub link: PcieLink,
}

/// One NVIDIA GPU on the bus.
#[derive(Debug, Clone, Serialize)]
pub struct GpuIdentity {
    pub bus_id: String,
    /// From the NVIDIA driver's `proc/driver/nvidia/gpus/<bus id>/information`.
    pub uuid: Option<String>,
    pub model: Option<String>,
    pub video_bios: Option<String>,
    /// Why the UUID is missing, when it is.
    pub uuid_absent: Option<String>,
    pub pci: FunctionIdentity,
}

/// The PCIe path between a GPU and a NIC, bridge by bridge.
#[derive(Debug, Clone, Serialize)]
pub struct PathIdentity {
    pub gpu_bus_id: String,
    pub nic: String,
    pub relation: Relation,
    pub meaning: String,
    /// Every bridge the traffic passes (root ports, switch ports) with its link.
    pub bridges: Vec<FunctionIdentity>,
}

/// Folders where distributions put libibverbs, relative to the root.
const LIBRARY_FOLDERS: [&str; 6] = [
    "usr/lib/x86_64-linux-gnu",
    "usr/lib/aarch64-linux-gnu",
    "usr/lib64",
    "usr/lib",
    "lib/x86_64-linux-gnu",
    "lib64",
];

impl NodeIdentity {
    /// Reads everything sysfs and procfs say about the node under `sys`.
    pub fn read(sys: &SysRoot) -> NodeIdentity {
        let pci_devices = pci::scan(sys);
        let rdma_devices = rdma::scan(sys);
        let (rdma_core, rdma_core_source) = match rdma_core_release(sys) {
            Some((release, file)) => (Some(release), Some(file)),
            None => (None, None),
        };
        let nics: Vec<NicIdentity> = rdma_devices.iter().map(|device| nic_identity(sys, device)).collect();
        let gpu_devices: Vec<&PciDevice> =
            pci_devices.iter().filter(|device| device.is_nvidia_gpu()).collect();
        let gpus = gpu_devices.iter().map(|device| gpu_identity(sys, device)).collect();
        let mut paths = Vec::new();
        for gpu in &gpu_devices {
            for device in &rdma_devices {
                let Backing::Hardware { pci: nic } = &device.backing else { continue };
                let path = topology::path_between(
                    Endpoint { location: &gpu.location, numa_node: gpu.numa_node },
                    Endpoint { location: &nic.location, numa_node: nic.numa_node },
                );
                let bridges = path
                    .bridges
                    .iter()
                    .map(|address| match PciDevice::read_by_address(sys, address) {
                        Some(bridge) => function_identity(&bridge),
                        None => FunctionIdentity {
                            address: address.clone(),
                            ids: None,
                            driver: None,
                            numa_node: None,
                            link: PcieLink::default(),
                        },
                    })
                    .collect();
                paths.push(PathIdentity {
                    gpu_bus_id: gpu.address.clone(),
                    nic: device.name.clone(),
                    relation: path.relation,
                    meaning: path.relation.meaning().to_string(),
                    bridges,
                });
            }
        }
        let dmi =
            |name: &str| sys.read_text(format!("sys/class/dmi/id/{name}")).filter(|text| !text.is_empty());
        NodeIdentity {
            hostname: sys.read_text("proc/sys/kernel/hostname"),
            kernel: sys.read_text("proc/sys/kernel/osrelease"),
            nvidia_driver: sys.read_text("sys/module/nvidia/version"),
            system: SystemFirmware {
                vendor: dmi("sys_vendor"),
                product: dmi("product_name"),
                bios_version: dmi("bios_version"),
                bios_date: dmi("bios_date"),
            },
            rdma_core,
            rdma_core_source,
            nics,
            gpus,
            paths,
        }
    }
}

fn function_identity(device: &PciDevice) -> FunctionIdentity {
    FunctionIdentity {
        address: device.address.clone(),
        ids: match (device.vendor, device.device) {
            (Some(vendor), Some(id)) => Some(format!("{vendor:04x}:{id:04x}")),
            _ => None,
        },
        driver: device.driver.clone(),
        numa_node: device.numa_node,
        link: device.link.clone(),
    }
}

fn nic_identity(sys: &SysRoot, device: &rdma::RdmaDevice) -> NicIdentity {
    let directory = PathBuf::from(format!("sys/class/infiniband/{}", device.name));
    let text = |name: &str| sys.read_text(directory.join(name)).filter(|text| !text.trim().is_empty());
    let ports = device
        .ports
        .iter()
        .map(|port| PortIdentity {
            number: port.number,
            port_guid: sys
                .read_text(directory.join(format!("ports/{}/gids/0", port.number)))
                .and_then(|gid| interface_id(&gid)),
            link_layer: port.link_layer.clone(),
            state: port.state.clone(),
            rate: port.rate.clone(),
        })
        .collect();
    let (kind, pci) = match &device.backing {
        Backing::Hardware { pci } => ("hardware".to_string(), Some(function_identity(pci))),
        Backing::Software { driver, .. } => (driver.clone(), None),
    };
    NicIdentity {
        name: device.name.clone(),
        kind,
        node_guid: text("node_guid"),
        sys_image_guid: text("sys_image_guid"),
        board_id: text("board_id"),
        firmware: device.firmware.clone(),
        ports,
        pci,
    }
}

/// The lower 64 bits of a GID in sysfs spelling, as GUIDs are written (`a088:c203:0003:0001`);
/// `None` for an empty slot.
fn interface_id(gid: &str) -> Option<String> {
    let groups: Vec<&str> = gid.trim().split(':').collect();
    if groups.len() != 8 || groups.iter().all(|group| group.trim_start_matches('0').is_empty()) {
        return None;
    }
    Some(groups[4..].join(":"))
}

fn gpu_identity(sys: &SysRoot, device: &PciDevice) -> GpuIdentity {
    let information = sys.read_text(format!("proc/driver/nvidia/gpus/{}/information", device.address));
    let field = |name: &str| {
        information.as_deref().and_then(|text| {
            text.lines()
                .find_map(|line| line.split_once(':').filter(|(key, _)| key.trim() == name))
                .map(|(_, value)| value.trim().to_string())
                .filter(|value| !value.is_empty())
        })
    };
    let uuid = field("GPU UUID");
    let uuid_absent = match (&information, &uuid) {
        (_, Some(_)) => None,
        (None, _) if !sys.exists("sys/module/nvidia") => {
            Some("the NVIDIA driver is not loaded (no proc/driver/nvidia)".to_string())
        }
        (None, _) => Some(format!("proc/driver/nvidia/gpus/{}/information is missing", device.address)),
        (Some(_), None) => Some("the driver's information file has no GPU UUID line".to_string()),
    };
    GpuIdentity {
        bus_id: device.address.clone(),
        model: field("Model"),
        video_bios: field("Video BIOS"),
        uuid,
        uuid_absent,
        pci: function_identity(device),
    }
}

/// rdma-core's release from libibverbs' file name (`libibverbs.so.1.14.44.0` -> `44.0`), and
/// the file it came from.
fn rdma_core_release(sys: &SysRoot) -> Option<(String, String)> {
    LIBRARY_FOLDERS.iter().find_map(|folder| {
        sys.list(folder).into_iter().find_map(|name| {
            let version = name.strip_prefix("libibverbs.so.1.")?;
            let mut parts = version.split('.');
            let (_abi, release, patch) = (parts.next()?, parts.next()?, parts.next()?);
            release.parse::<u32>().ok()?;
            Some((format!("{release}.{patch}"), format!("/{folder}/{name}")))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_guid_is_the_lower_half_of_gid_zero() {
        assert_eq!(
            interface_id("fe80:0000:0000:0000:a088:c203:0003:0001").as_deref(),
            Some("a088:c203:0003:0001")
        );
        assert_eq!(interface_id("0000:0000:0000:0000:0000:0000:0000:0000"), None);
        assert_eq!(interface_id("fe80::1"), None);
    }
}
