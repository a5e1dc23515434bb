//! The IOMMU mode, as it affects GPUDirect RDMA.
//!
//! With the IOMMU translating DMA (the kernel's `DMA` / `DMA-FQ` domains), a
//! NIC's peer-to-peer write to a GPU BAR goes through address translation
//! meant for system memory, and on bare metal GPUDirect RDMA then fails or
//! crawls; NVIDIA's guidance is IOMMU off or in pass-through (`iommu=pt`).
//! The kernel states each IOMMU group's mode in
//! `/sys/kernel/iommu_groups/<n>/type`, so the devices that matter (GPUs and
//! NICs) are checked one by one; the command line says what was asked for.

use serde::Serialize;

use crate::pci::PciDevice;
use crate::sysfs::SysRoot;

/// What the IOMMU does to the GPUs' and NICs' DMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IommuMode {
    /// No IOMMU unit and no IOMMU groups: DMA addresses are physical.
    Off,
    /// Identity domains: enabled, but DMA is not translated (`iommu=pt`).
    Passthrough,
    /// At least one GPU or NIC is in a translating domain.
    Translated,
    /// IOMMU groups exist but their mode could not be read.
    Unknown,
}

/// IOMMU facts for the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Iommu {
    pub mode: IommuMode,
    /// Hardware units under `/sys/class/iommu` (`dmar0`, `ivhd0`).
    pub units: Vec<String>,
    pub group_count: usize,
    /// IOMMU options found on the kernel command line (`iommu=pt`, `intel_iommu=on`).
    pub cmdline_options: Vec<String>,
    /// Devices (GPUs and NICs) in translating domains, as `address (type)`.
    pub translated_devices: Vec<String>,
}

impl Iommu {
    /// Reads the IOMMU state; `devices` are the GPUs and NICs whose groups decide the mode.
    pub fn read(sys: &SysRoot, devices: &[&PciDevice]) -> Self {
        let units = sys.list("sys/class/iommu");
        let group_count = sys.list("sys/kernel/iommu_groups").len();
        let cmdline_options =
            sys.read_text("proc/cmdline").map(|text| iommu_options(&text)).unwrap_or_default();
        let mut translated_devices = Vec::new();
        let mut identity = 0;
        for device in devices {
            let Some(group) = &device.iommu_group else { continue };
            match sys.read_text(format!("sys/kernel/iommu_groups/{group}/type")).as_deref() {
                Some("identity") => identity += 1,
                Some(domain @ ("DMA" | "DMA-FQ" | "unmanaged")) => {
                    translated_devices.push(format!("{} ({domain})", device.address));
                }
                _ => {}
            }
        }
        let mode = if units.is_empty() && group_count == 0 {
            IommuMode::Off
        } else if !translated_devices.is_empty() {
            IommuMode::Translated
        } else if identity > 0 || cmdline_asks_passthrough(&cmdline_options) {
            IommuMode::Passthrough
        } else {
            IommuMode::Unknown
        };
        Iommu { mode, units, group_count, cmdline_options, translated_devices }
    }
}

/// The command-line words that steer the IOMMU.
fn iommu_options(cmdline: &str) -> Vec<String> {
    cmdline
        .split_whitespace()
        .filter(|word| {
            word.starts_with("iommu") || word.starts_with("intel_iommu=") || word.starts_with("amd_iommu=")
        })
        .map(str::to_string)
        .collect()
}

fn cmdline_asks_passthrough(options: &[String]) -> bool {
    options.iter().any(|option| option == "iommu=pt" || option == "iommu.passthrough=1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_iommu_words_are_kept_from_the_command_line() {
        let options =
            iommu_options("BOOT_IMAGE=/vmlinuz ro quiet intel_iommu=on iommu=pt pci=realloc amd_iommu=off");
        assert_eq!(options, ["intel_iommu=on", "iommu=pt", "amd_iommu=off"]);
        assert!(cmdline_asks_passthrough(&options));
        assert!(!cmdline_asks_passthrough(&iommu_options("intel_iommu=on")));
    }
}
