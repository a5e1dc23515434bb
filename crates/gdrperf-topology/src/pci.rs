//! PCI devices as sysfs shows them, and the PCIe facts GPUDirect depends on.
//!
//! `/sys/bus/pci/devices/<bdf>` is a symlink into `/sys/devices`, where every
//! directory on the way down is a PCIe port: the host bridge (`pci0000:00`),
//! the root port, then for each PCIe switch its upstream and downstream ports.
//! That chain of directories *is* the device's place in the PCIe tree, and
//! [`PciLocation`] keeps it so [`crate::topology`] can compare two devices.

use serde::{Deserialize, Serialize};

use crate::sysfs::SysRoot;

/// Where a device sits in the PCIe tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PciLocation {
    /// The sysfs path down to and including the host bridge (`pci0000:00`, or a
    /// longer path on hypervisors that put the host bridge under a bus of their own).
    pub host_bridge: String,
    /// The PCI addresses below the host bridge, from the root port down to the
    /// device itself (the last element).
    pub chain: Vec<String>,
}

impl PciLocation {
    /// Reads a location from a path relative to the root such as
    /// `sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0`; `None` when the
    /// path does not end in a PCI address.
    pub fn from_sysfs_path(path: &std::path::Path) -> Option<Self> {
        let components: Vec<String> =
            path.iter().filter_map(|component| component.to_str().map(str::to_string)).collect();
        let first_address = components.iter().position(|component| is_pci_address(component))?;
        if first_address == 0 || !components[first_address..].iter().all(|c| is_pci_address(c)) {
            return None;
        }
        Some(PciLocation {
            host_bridge: components[..first_address].join("/"),
            chain: components[first_address..].to_vec(),
        })
    }

    /// The device's own PCI address.
    pub fn address(&self) -> &str {
        self.chain.last().map(String::as_str).unwrap_or_default()
    }

    /// The bridges above the device, host bridge excluded, top down.
    pub fn bridges(&self) -> &[String] {
        &self.chain[..self.chain.len().saturating_sub(1)]
    }

    /// The short name of the host bridge (`pci0000:00`) for display.
    pub fn host_bridge_name(&self) -> &str {
        self.host_bridge.rsplit('/').next().unwrap_or(&self.host_bridge)
    }
}

/// The negotiated and the possible PCIe link, as sysfs words them
/// (`32.0 GT/s PCIe`, `16`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PcieLink {
    pub current_speed: Option<String>,
    pub current_width: Option<u32>,
    pub max_speed: Option<String>,
    pub max_width: Option<u32>,
}

impl PcieLink {
    /// The link of the function whose sysfs directory is `directory` (relative to the root):
    /// read once at start-up for the tables, and again per soak interval to see a retrain.
    pub fn read(sys: &SysRoot, directory: &std::path::Path) -> PcieLink {
        PcieLink {
            current_speed: sys.read_text(directory.join("current_link_speed")),
            current_width: sys.read_unsigned(directory.join("current_link_width")),
            max_speed: sys.read_text(directory.join("max_link_speed")),
            max_width: sys.read_unsigned(directory.join("max_link_width")),
        }
    }
}

/// One PCI function.
#[derive(Debug, Clone, Serialize)]
pub struct PciDevice {
    pub address: String,
    pub vendor: Option<u32>,
    pub device: Option<u32>,
    /// Class code, e.g. `0x030200` (3D controller) or `0x020700` (InfiniBand).
    pub class: Option<u32>,
    pub numa_node: Option<u32>,
    /// Kernel driver bound to it (`nvidia`, `mlx5_core`).
    pub driver: Option<String>,
    pub link: PcieLink,
    /// IOMMU group number, when the kernel put the device in one.
    pub iommu_group: Option<String>,
    pub location: PciLocation,
}

/// NVIDIA's PCI vendor id.
pub const VENDOR_NVIDIA: u32 = 0x10de;
/// Mellanox (now NVIDIA Networking) PCI vendor id: ConnectX NICs.
pub const VENDOR_MELLANOX: u32 = 0x15b3;
/// PCI base class "display controller"; NVIDIA GPUs are 0x0300 (VGA) or 0x0302 (3D).
const CLASS_DISPLAY: u32 = 0x03;
/// PCI base class "network controller" (0x0200 Ethernet, 0x0207 InfiniBand).
const CLASS_NETWORK: u32 = 0x02;
/// PCI class 0x0207: InfiniBand controller.
const SUBCLASS_INFINIBAND: u32 = 0x0207;

impl PciDevice {
    /// Reads the device whose sysfs directory is `relative_dir` (already resolved
    /// to its place under `sys/devices`).
    pub fn read(sys: &SysRoot, relative_dir: &std::path::Path) -> Option<Self> {
        let location = PciLocation::from_sysfs_path(relative_dir)?;
        let attribute = |name: &str| relative_dir.join(name);
        Some(PciDevice {
            address: location.address().to_string(),
            vendor: sys.read_hex(attribute("vendor")),
            device: sys.read_hex(attribute("device")),
            class: sys.read_hex(attribute("class")),
            numa_node: sys.read_unsigned(attribute("numa_node")),
            driver: sys.link_name(attribute("driver")),
            link: PcieLink::read(sys, relative_dir),
            iommu_group: sys.link_name(attribute("iommu_group")),
            location,
        })
    }

    /// Reads the device with this address through `sys/bus/pci/devices`.
    pub fn read_by_address(sys: &SysRoot, address: &str) -> Option<Self> {
        let directory = sys.resolve(format!("sys/bus/pci/devices/{address}"))?;
        PciDevice::read(sys, &directory)
    }

    /// Whether this is an NVIDIA GPU (and not, say, an NVSwitch, which is a bridge-class device).
    pub fn is_nvidia_gpu(&self) -> bool {
        self.vendor == Some(VENDOR_NVIDIA) && self.class.is_some_and(|class| class >> 16 == CLASS_DISPLAY)
    }

    /// Whether this looks like an RDMA-capable network function: any InfiniBand
    /// controller, or a Mellanox/NVIDIA network controller (ConnectX in Ethernet mode).
    pub fn is_rdma_capable_network_controller(&self) -> bool {
        let Some(class) = self.class else { return false };
        class >> 8 == SUBCLASS_INFINIBAND
            || (class >> 16 == CLASS_NETWORK && self.vendor == Some(VENDOR_MELLANOX))
    }
}

/// All PCI functions under `sys/bus/pci/devices`, in address order.
pub fn scan(sys: &SysRoot) -> Vec<PciDevice> {
    sys.list("sys/bus/pci/devices")
        .iter()
        .filter_map(|address| PciDevice::read_by_address(sys, address))
        .collect()
}

/// Whether `text` is a PCI address `DDDD:BB:DD.F` (sysfs spelling, lower-case hex).
pub fn is_pci_address(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 12
        && bytes[4] == b':'
        && bytes[7] == b':'
        && bytes[10] == b'.'
        && text.char_indices().all(|(index, c)| [4, 7, 10].contains(&index) || c.is_ascii_hexdigit())
}

/// Brings a PCI bus id into sysfs spelling: CUDA writes `00000000:1B:00.0`
/// (eight-digit domain, upper case), nvidia-smi the same, lspci `1b:00.0`.
/// Returns `None` for text that is not a bus id.
pub fn normalize_bus_id(text: &str) -> Option<String> {
    let text = text.trim().to_ascii_lowercase();
    let (domain, rest) = match text.matches(':').count() {
        1 => ("0", text.as_str()),
        2 => text.split_once(':')?,
        _ => return None,
    };
    let domain = u32::from_str_radix(domain, 16).ok()?;
    let candidate = format!("{domain:04x}:{rest}");
    is_pci_address(&candidate).then_some(candidate)
}

/// Extended capability id of Access Control Services in PCIe config space.
pub const ACS_CAPABILITY_ID: u16 = 0x000d;
/// Offset of the ACS Control register from the start of the ACS capability.
pub const ACS_CONTROL_OFFSET: usize = 6;
/// Extended capabilities start here; config space shorter than this plus a
/// header is what non-root users get (the kernel shows them 64 bytes).
pub const EXTENDED_CONFIG_START: usize = 0x100;
/// ACS Control bits that send peer-to-peer traffic up to the root complex:
/// P2P Request Redirect (bit 2), P2P Completion Redirect (bit 3), P2P Egress Control (bit 5).
pub const ACS_REDIRECT_BITS: u16 = (1 << 2) | (1 << 3) | (1 << 5);

/// What a bridge's config space says about Access Control Services.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", content = "control", rename_all = "snake_case")]
pub enum AcsState {
    /// Config space past the first 256 bytes is unreadable (not root) or absent.
    Unreadable,
    /// The bridge has no ACS capability: nothing redirects.
    NotPresent,
    /// The ACS Control register.
    Control(u16),
}

impl AcsState {
    /// Whether ACS forces peer-to-peer requests through the root complex.
    pub fn redirects_peer_to_peer(self) -> bool {
        matches!(self, AcsState::Control(control) if control & ACS_REDIRECT_BITS != 0)
    }
}

/// Reads ACS from the `config` file of the device with this address.
pub fn read_acs(sys: &SysRoot, address: &str) -> AcsState {
    match sys.read_bytes(format!("sys/bus/pci/devices/{address}/config")) {
        Some(config) => acs_from_config(&config),
        None => AcsState::Unreadable,
    }
}

/// Walks the PCIe extended capability list (each header: id in bits 0..16,
/// version in 16..20, next offset in 20..32) looking for ACS.
pub fn acs_from_config(config: &[u8]) -> AcsState {
    let read_u32 =
        |offset: usize| config.get(offset..offset + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    if config.len() < EXTENDED_CONFIG_START + 4 {
        return AcsState::Unreadable;
    }
    let mut offset = EXTENDED_CONFIG_START;
    // 4 KiB of config space holds at most (4096 - 256) / 4 headers; the bound
    // stops a corrupt list that points back at itself.
    for _ in 0..(4096 - EXTENDED_CONFIG_START) / 4 {
        let Some(header) = read_u32(offset) else { return AcsState::Unreadable };
        if header == 0 || header == u32::MAX {
            return AcsState::NotPresent;
        }
        if header & 0xffff == u32::from(ACS_CAPABILITY_ID) {
            let control_at = offset + ACS_CONTROL_OFFSET;
            return match config.get(control_at..control_at + 2) {
                Some(b) => AcsState::Control(u16::from_le_bytes([b[0], b[1]])),
                None => AcsState::Unreadable,
            };
        }
        let next = (header >> 20) as usize & !3;
        if next < EXTENDED_CONFIG_START {
            return AcsState::NotPresent;
        }
        offset = next;
    }
    AcsState::NotPresent
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn bus_ids_from_cuda_and_lspci_normalize_to_sysfs_spelling() {
        assert_eq!(normalize_bus_id("00000000:1B:00.0").as_deref(), Some("0000:1b:00.0"));
        assert_eq!(normalize_bus_id("1b:00.0").as_deref(), Some("0000:1b:00.0"));
        assert_eq!(normalize_bus_id("0001:c3:00.1").as_deref(), Some("0001:c3:00.1"));
        assert_eq!(normalize_bus_id("GPU-1b"), None);
        assert_eq!(normalize_bus_id("0000:1b:00"), None);
    }

    #[test]
    fn location_splits_host_bridge_from_pcie_chain() {
        let path = Path::new("sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0");
        let location = PciLocation::from_sysfs_path(path).unwrap();
        assert_eq!(location.host_bridge, "sys/devices/pci0000:00");
        assert_eq!(location.host_bridge_name(), "pci0000:00");
        assert_eq!(location.address(), "0000:03:00.0");
        assert_eq!(location.bridges(), ["0000:00:01.0", "0000:01:00.0", "0000:02:00.0"]);
        assert!(PciLocation::from_sysfs_path(Path::new("sys/devices/virtual/infiniband/rxe0")).is_none());
    }

    fn config_with_capabilities(capabilities: &[(u16, u16)]) -> Vec<u8> {
        // Each capability takes 8 bytes: header, then a capability register and
        // the control register at +6, which is what ACS looks like.
        let mut config = vec![0u8; EXTENDED_CONFIG_START + 8 * capabilities.len().max(1)];
        for (index, (id, control)) in capabilities.iter().enumerate() {
            let offset = EXTENDED_CONFIG_START + 8 * index;
            let next = if index + 1 < capabilities.len() { offset + 8 } else { 0 };
            let header = u32::from(*id) | (1 << 16) | ((next as u32) << 20);
            config[offset..offset + 4].copy_from_slice(&header.to_le_bytes());
            config[offset + 6..offset + 8].copy_from_slice(&control.to_le_bytes());
        }
        config
    }

    #[test]
    fn acs_is_found_after_other_extended_capabilities() {
        let advanced_error_reporting = 0x0001;
        let config = config_with_capabilities(&[(advanced_error_reporting, 0), (ACS_CAPABILITY_ID, 0x001d)]);
        let acs = acs_from_config(&config);
        assert_eq!(acs, AcsState::Control(0x001d));
        assert!(acs.redirects_peer_to_peer());
    }

    #[test]
    fn acs_without_redirect_bits_lets_peer_traffic_stay_in_the_switch() {
        // Source Validation and Translation Blocking only: no redirect.
        let acs = acs_from_config(&config_with_capabilities(&[(ACS_CAPABILITY_ID, 0x0003)]));
        assert_eq!(acs, AcsState::Control(0x0003));
        assert!(!acs.redirects_peer_to_peer());
    }

    #[test]
    fn short_config_space_is_unreadable_and_an_empty_list_has_no_acs() {
        assert_eq!(acs_from_config(&[0u8; 64]), AcsState::Unreadable);
        assert_eq!(acs_from_config(&config_with_capabilities(&[])), AcsState::NotPresent);
        assert_eq!(acs_from_config(&config_with_capabilities(&[(0x0001, 0)])), AcsState::NotPresent);
    }

    #[test]
    fn a_capability_list_that_loops_terminates() {
        let mut config = vec![0u8; EXTENDED_CONFIG_START + 8];
        let header = 0x0001u32 | ((EXTENDED_CONFIG_START as u32) << 20);
        config[EXTENDED_CONFIG_START..EXTENDED_CONFIG_START + 4].copy_from_slice(&header.to_le_bytes());
        assert_eq!(acs_from_config(&config), AcsState::NotPresent);
    }
}
