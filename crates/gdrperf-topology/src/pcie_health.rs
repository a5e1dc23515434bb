//! PCIe health re-read during a soak: the AER counters (`aer_dev_correctable`,
//! `aer_dev_nonfatal`, `aer_dev_fatal`) and the current link speed and width of the GPU, the NIC
//! and every bridge above either, read once per interval, so that a dip in bandwidth can be
//! tied to a link that retrained or a counter that moved in the same interval.
//!
//! A snapshot is a set of plain reads through [`SysRoot`]; [`changes`] compares two. A file
//! that is missing (a kernel without AER, a function that vanished) is recorded as such: a
//! function that disappears between reads is itself an event, a counter that was never
//! readable is not.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::pci::{PciDevice, PcieLink};
use crate::sysfs::SysRoot;

/// The three AER files, by the severity their name gives.
pub const AER_FILES: [(&str, &str); 3] =
    [("correctable", "aer_dev_correctable"), ("nonfatal", "aer_dev_nonfatal"), ("fatal", "aer_dev_fatal")];

/// One function at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FunctionHealth {
    pub address: String,
    /// `false` when `sys/bus/pci/devices/<address>` is gone (surprise removal, a link down).
    pub present: bool,
    /// Per severity, the counters the kernel lists (`RxErr 3`, `TOTAL_ERR_COR 3`); a severity
    /// whose file is missing is absent from the map.
    pub aer: BTreeMap<String, BTreeMap<String, u64>>,
    pub link: PcieLink,
}

/// Every watched function at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HealthSnapshot {
    pub functions: Vec<FunctionHealth>,
}

/// What moved between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HealthEvent {
    /// An AER counter went up.
    AerCounter { address: String, severity: String, counter: String, before: u64, after: u64 },
    /// The negotiated speed or width changed (a retrain).
    LinkChanged { address: String, before: String, after: String },
    /// The function was there and is gone.
    Vanished { address: String },
}

impl std::fmt::Display for HealthEvent {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HealthEvent::AerCounter { address, severity, counter, before, after } => {
                write!(formatter, "{address}: AER {severity} {counter} {before} -> {after}")
            }
            HealthEvent::LinkChanged { address, before, after } => {
                write!(formatter, "{address}: link {before} -> {after}")
            }
            HealthEvent::Vanished { address } => write!(formatter, "{address}: gone from the PCI bus"),
        }
    }
}

/// The functions to watch for a GPU and NIC pair: both devices and every bridge above either,
/// top down, each once. Unknown addresses are kept (and will read as vanished if they never
/// appear), so that a typo does not silently watch nothing.
pub fn watched_functions(sys: &SysRoot, devices: &[&str]) -> Vec<String> {
    let mut addresses: Vec<String> = Vec::new();
    for address in devices {
        let chain = PciDevice::read_by_address(sys, address)
            .map(|device| device.location.chain)
            .unwrap_or_else(|| vec![address.to_string()]);
        for function in chain {
            if !addresses.contains(&function) {
                addresses.push(function);
            }
        }
    }
    addresses
}

impl HealthSnapshot {
    /// Reads the AER counters and link of every function in `addresses`.
    pub fn read(sys: &SysRoot, addresses: &[String]) -> HealthSnapshot {
        let functions = addresses
            .iter()
            .map(|address| {
                let directory = format!("sys/bus/pci/devices/{address}");
                let present = sys.exists(&directory);
                let aer = AER_FILES
                    .iter()
                    .filter_map(|(severity, file)| {
                        let text = sys.read_text(format!("{directory}/{file}"))?;
                        Some((severity.to_string(), parse_aer(&text)))
                    })
                    .collect();
                let link = PcieLink::read(sys, std::path::Path::new(&directory));
                FunctionHealth { address: address.clone(), present, aer, link }
            })
            .collect();
        HealthSnapshot { functions }
    }
}

/// `RxErr 3` lines into a map; lines that are not `NAME COUNT` are skipped.
pub fn parse_aer(text: &str) -> BTreeMap<String, u64> {
    crate::aer::counter_lines(text).map(|(name, count)| (name.to_string(), count)).collect()
}

fn link_words(link: &PcieLink) -> String {
    format!(
        "{} x{}",
        link.current_speed.as_deref().unwrap_or("unknown speed"),
        link.current_width.map(|width| width.to_string()).unwrap_or_else(|| "?".into())
    )
}

/// Everything that moved from `before` to `after`, function by function in watch order.
/// Per-kind totals (`TOTAL_ERR_*`) are left out when a named counter moved with them, so one
/// error is one event.
pub fn changes(before: &HealthSnapshot, after: &HealthSnapshot) -> Vec<HealthEvent> {
    let mut events = Vec::new();
    for old in &before.functions {
        let Some(new) = after.functions.iter().find(|function| function.address == old.address) else {
            continue;
        };
        if old.present && !new.present {
            events.push(HealthEvent::Vanished { address: old.address.clone() });
            continue;
        }
        for (severity, counters) in &new.aer {
            let Some(old_counters) = old.aer.get(severity) else { continue };
            let moved: Vec<(&String, u64, u64)> = counters
                .iter()
                .filter_map(|(name, &count)| {
                    let previous = old_counters.get(name).copied().unwrap_or(0);
                    (count > previous).then_some((name, previous, count))
                })
                .collect();
            let named_moved = moved.iter().any(|(name, ..)| !name.starts_with("TOTAL_"));
            for (name, previous, count) in moved {
                if named_moved && name.starts_with("TOTAL_") {
                    continue;
                }
                events.push(HealthEvent::AerCounter {
                    address: old.address.clone(),
                    severity: severity.clone(),
                    counter: name.clone(),
                    before: previous,
                    after: count,
                });
            }
        }
        let (old_link, new_link) = (link_words(&old.link), link_words(&new.link));
        if old.present && old_link != new_link {
            events.push(HealthEvent::LinkChanged {
                address: old.address.clone(),
                before: old_link,
                after: new_link,
            });
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aer_files_parse_as_the_kernel_writes_them() {
        let counters = parse_aer("RxErr 3\nBadTLP 0\nTOTAL_ERR_COR 3\n");
        assert_eq!(counters.get("RxErr"), Some(&3));
        assert_eq!(counters.get("TOTAL_ERR_COR"), Some(&3));
        assert_eq!(counters.len(), 3);
    }
}
