//! PCIe facts of a GPU and a NIC: how their links trained, how their Device Control register is
//! set, and what ACS does on every bridge between them.
//!
//! Users' most common GPUDirect complaints are a link that trained below its width or speed (a
//! reseated card at x8 halves the ceiling) and settings that only the config space shows:
//!
//! - **link**: sysfs `current_link_speed`/`_width` against `max_link_speed`/`_width`. A width
//!   below the maximum is a fault (slot, riser, bifurcation). A speed below the maximum is one
//!   on a NIC; a GPU lowers its link speed when idle to save power, so on a GPU it is reported
//!   and judged only as a hint to look again under load (the run header reads it at run time);
//! - **Device Control** (PCI Express capability, id 0x10, register at +8): Max Payload Size
//!   (bits 5-7), Max Read Request Size (bits 12-14), relaxed ordering (bit 4). The capability
//!   sits past the first 64 bytes of config space, which is all the kernel shows a non-root
//!   user: then the answer is "unknown (needs root)", never a guess;
//! - **ACS** (extended capability 0x000d at 0x100+, Control register at +6): source validation
//!   (bit 0), P2P request redirect (bit 2), completion redirect (bit 3), egress control (bit 5)
//!   for each bridge on the GPU-NIC path. Redirect bits send GPUDirect traffic up to the root
//!   complex ([`crate::pci::AcsState::redirects_peer_to_peer`]).
//!
//! Everything here reads bytes and text handed in, so tests use hand-built config spaces.

use std::path::Path;

use serde::Serialize;

use crate::pci::{self, AcsState, PciDevice, PcieLink};
use crate::sysfs::SysRoot;
use crate::topology::{self, Endpoint};

/// Standard capability id of the PCI Express capability.
pub const EXPRESS_CAPABILITY_ID: u8 = 0x10;
/// Offset of Device Control from the start of the PCI Express capability.
pub const DEVICE_CONTROL_OFFSET: usize = 8;
/// Offset of the capabilities pointer in the config header.
const CAPABILITY_POINTER: usize = 0x34;
/// Status register bit 4: the device has a capability list.
const STATUS_CAPABILITY_LIST: u16 = 1 << 4;
/// What a non-root reader of the sysfs `config` file gets.
pub const UNPRIVILEGED_CONFIG_BYTES: usize = 64;

/// The Device Control register, or why it is not known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum DeviceControl {
    /// The config space ends before the capability (a non-root reader sees 64 bytes).
    Unreadable,
    /// No PCI Express capability (a conventional PCI function).
    NotExpress,
    Known {
        /// Bytes (128 << bits 5-7).
        max_payload_bytes: u32,
        /// Bytes (128 << bits 12-14).
        max_read_request_bytes: u32,
        /// Bit 4: the function may set the relaxed-ordering attribute on its requests.
        relaxed_ordering: bool,
        /// The whole register.
        register: u16,
    },
}

impl DeviceControl {
    /// "MPS 256 B, MRRS 512 B, relaxed ordering on" or "unknown (needs root)".
    pub fn describe(&self) -> String {
        match self {
            DeviceControl::Unreadable => "MPS/MRRS/relaxed ordering unknown (needs root)".into(),
            DeviceControl::NotExpress => "no PCI Express capability".into(),
            DeviceControl::Known { max_payload_bytes, max_read_request_bytes, relaxed_ordering, .. } => {
                format!(
                    "MPS {max_payload_bytes} B, MRRS {max_read_request_bytes} B, relaxed ordering {}",
                    if *relaxed_ordering { "on" } else { "off" }
                )
            }
        }
    }
}

/// Walks the standard capability list of `config` to the PCI Express capability and decodes its
/// Device Control register.
pub fn device_control_from_config(config: &[u8]) -> DeviceControl {
    let read_u16 = |offset: usize| config.get(offset..offset + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let Some(status) = read_u16(0x06) else { return DeviceControl::Unreadable };
    if status & STATUS_CAPABILITY_LIST == 0 {
        return DeviceControl::NotExpress;
    }
    let Some(&pointer) = config.get(CAPABILITY_POINTER) else { return DeviceControl::Unreadable };
    let mut offset = usize::from(pointer & !3);
    // The list lives in 0x40..0x100, at most 48 entries of 4 bytes: the bound stops a loop.
    for _ in 0..48 {
        if offset < 0x40 {
            return DeviceControl::NotExpress;
        }
        let (Some(&id), Some(&next)) = (config.get(offset), config.get(offset + 1)) else {
            return DeviceControl::Unreadable;
        };
        if id == EXPRESS_CAPABILITY_ID {
            let Some(register) = read_u16(offset + DEVICE_CONTROL_OFFSET) else {
                return DeviceControl::Unreadable;
            };
            return DeviceControl::Known {
                max_payload_bytes: 128 << ((register >> 5) & 7),
                max_read_request_bytes: 128 << ((register >> 12) & 7),
                relaxed_ordering: register & (1 << 4) != 0,
                register,
            };
        }
        offset = usize::from(next & !3);
    }
    DeviceControl::NotExpress
}

/// A link speed as sysfs writes it ("32.0 GT/s PCIe", "2.5 GT/s") in GT/s.
pub fn parse_speed(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// How a link trained, against what it can do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkTraining {
    pub current_speed_gts: Option<f64>,
    pub max_speed_gts: Option<f64>,
    pub current_width: Option<u32>,
    pub max_width: Option<u32>,
    /// The current width is below the maximum: a fault (slot, riser, bifurcation).
    pub narrow: bool,
    /// The current speed is below the maximum (normal on an idle GPU, which saves power).
    pub slow: bool,
}

impl LinkTraining {
    pub fn from_link(link: &PcieLink) -> LinkTraining {
        let current_speed_gts = link.current_speed.as_deref().and_then(parse_speed);
        let max_speed_gts = link.max_speed.as_deref().and_then(parse_speed);
        LinkTraining {
            current_speed_gts,
            max_speed_gts,
            current_width: link.current_width,
            max_width: link.max_width,
            narrow: matches!((link.current_width, link.max_width), (Some(now), Some(max)) if now < max),
            slow: matches!((current_speed_gts, max_speed_gts), (Some(now), Some(max)) if now < max),
        }
    }

    /// "32 GT/s x16 (max 32 GT/s x16)", or "unknown".
    pub fn describe(&self) -> String {
        let side = |speed: Option<f64>, width: Option<u32>| match (speed, width) {
            (Some(speed), Some(width)) => format!("{speed} GT/s x{width}"),
            (Some(speed), None) => format!("{speed} GT/s"),
            (None, Some(width)) => format!("x{width}"),
            (None, None) => "unknown".into(),
        };
        let current = side(self.current_speed_gts, self.current_width);
        if current == "unknown" {
            return "link unknown (no current_link_* in sysfs)".into();
        }
        format!("link {current} (max {})", side(self.max_speed_gts, self.max_width))
    }
}

/// The PCIe facts of one function (a GPU or a NIC).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionFacts {
    /// "GPU0", "mlx5_0".
    pub name: String,
    /// With domain: 0000:19:00.0.
    pub address: String,
    pub is_gpu: bool,
    pub link: LinkTraining,
    pub device_control: DeviceControl,
}

impl FunctionFacts {
    pub fn read(sys: &SysRoot, name: &str, device: &PciDevice, is_gpu: bool) -> FunctionFacts {
        FunctionFacts {
            name: name.to_string(),
            address: device.address.clone(),
            is_gpu,
            link: LinkTraining::from_link(&device.link),
            device_control: read_device_control(sys, &device.address),
        }
    }

    /// One line: "GPU0 0000:19:00.0: link 32 GT/s x16 (max 32 GT/s x16), MPS 256 B, ...".
    pub fn describe(&self) -> String {
        format!(
            "{} {}: {}, {}",
            self.name,
            self.address,
            self.link.describe(),
            self.device_control.describe()
        )
    }
}

/// Reads Device Control of the function at `address` from its sysfs `config` file.
pub fn read_device_control(sys: &SysRoot, address: &str) -> DeviceControl {
    match sys.read_bytes(format!("sys/bus/pci/devices/{address}/config")) {
        Some(config) => device_control_from_config(&config),
        None => DeviceControl::Unreadable,
    }
}

/// ACS on one bridge, its Control bits spelled out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BridgeAcs {
    pub bridge: String,
    pub acs: AcsState,
    /// "not present", "unknown (needs root)", or the set bits ("source validation, P2P request
    /// redirect"; "none set").
    pub meaning: String,
    pub redirects_peer_to_peer: bool,
}

/// The names of the ACS Control bits that are set.
pub fn acs_meaning(acs: AcsState) -> String {
    const BITS: [(u16, &str); 7] = [
        (1 << 0, "source validation"),
        (1 << 1, "translation blocking"),
        (1 << 2, "P2P request redirect"),
        (1 << 3, "P2P completion redirect"),
        (1 << 4, "upstream forwarding"),
        (1 << 5, "P2P egress control"),
        (1 << 6, "direct translated P2P"),
    ];
    match acs {
        AcsState::Unreadable => "unknown (needs root)".into(),
        AcsState::NotPresent => "not present".into(),
        AcsState::Control(control) => {
            let set: Vec<&str> =
                BITS.iter().filter(|(bit, _)| control & bit != 0).map(|(_, name)| *name).collect();
            if set.is_empty() {
                format!("control {control:#06x}: none set")
            } else {
                format!("control {control:#06x}: {}", set.join(", "))
            }
        }
    }
}

/// The PCIe facts of a run: its GPU (if any), its NIC (if a PCI one), the bridges between them.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct RunPcieFacts {
    pub gpu: Option<FunctionFacts>,
    pub nic: Option<FunctionFacts>,
    /// Every bridge on the GPU-NIC path, top down as the topology walks it.
    pub path_acs: Vec<BridgeAcs>,
}

impl RunPcieFacts {
    /// Lines for a run header: one per function, then ACS on the path. What is wrong with them
    /// is judged by `gdrperf_topology::findings` (the run header's "Finding" lines), not here.
    pub fn header_lines(&self) -> Vec<(String, String)> {
        let mut lines = Vec::new();
        for facts in [&self.gpu, &self.nic].into_iter().flatten() {
            lines.push(("PCIe".to_string(), facts.describe()));
        }
        if !self.path_acs.is_empty() {
            let bridges: Vec<String> =
                self.path_acs.iter().map(|bridge| format!("{} {}", bridge.bridge, bridge.meaning)).collect();
            lines.push(("ACS on path".to_string(), bridges.join("; ")));
        }
        lines
    }
}

/// Reads the PCIe facts of a run on the machine under `root`: the GPU at `gpu_bus_id` (any
/// spelling) and the RDMA device `nic`. Missing pieces stay `None` (a software NIC, no GPU).
pub fn run_facts(root: &Path, gpu_bus_id: Option<&str>, nic: &str) -> RunPcieFacts {
    let Ok(sys) = SysRoot::open(root) else { return RunPcieFacts::default() };
    let gpu = gpu_bus_id
        .and_then(pci::normalize_bus_id)
        .and_then(|address| PciDevice::read_by_address(&sys, &address));
    let nic_device = sys
        .resolve(format!("sys/class/infiniband/{nic}/device"))
        .and_then(|directory| PciDevice::read(&sys, &directory));
    let path_acs = match (&gpu, &nic_device) {
        (Some(gpu), Some(nic)) => path_acs(&sys, gpu, nic),
        _ => Vec::new(),
    };
    RunPcieFacts {
        gpu: gpu.as_ref().map(|device| FunctionFacts::read(&sys, "GPU", device, true)),
        nic: nic_device.as_ref().map(|device| FunctionFacts::read(&sys, nic, device, false)),
        path_acs,
    }
}

/// ACS on each bridge of the path between two functions.
pub fn path_acs(sys: &SysRoot, a: &PciDevice, b: &PciDevice) -> Vec<BridgeAcs> {
    let path = topology::path_between(
        Endpoint { location: &a.location, numa_node: a.numa_node },
        Endpoint { location: &b.location, numa_node: b.numa_node },
    );
    path.bridges
        .iter()
        .map(|bridge| {
            let acs = pci::read_acs(sys, bridge);
            BridgeAcs {
                bridge: bridge.clone(),
                acs,
                meaning: acs_meaning(acs),
                redirects_peer_to_peer: acs.redirects_peer_to_peer(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
