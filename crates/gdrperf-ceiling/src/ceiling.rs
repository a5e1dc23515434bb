//! The ceiling of a row: the least of the limits on its path, and which one it is.
//!
//! One direction of data goes from the *source* end (whose memory is read: the requester of a
//! WRITE or SEND, the responder of a READ) to the *sink* end. Its limits are:
//! - the wire: the slower port's data rate, less headers at the smaller active MTU ([`crate::wire`]);
//! - the source's NIC link carrying completions, the sink's NIC link carrying memory writes
//!   ([`crate::pcie_link`]), at each NIC's Max Payload Size;
//! - with GPU memory (GPUDirect or staged), each GPU's link in the same way;
//! - with staged memory, that end's copy engine: its rate measured once at set-up
//!   ([`crate::facts::CopyRates`]), out at the source, in at the sink.
//!
//! A bidirectional row carries both directions at once (PCIe and the wire are full duplex): its
//! ceiling is the sum of the two directions'. A software device (rxe, siw) copies with the CPU
//! and reports a nominal rate: no hardware ceiling.

use serde::{Deserialize, Serialize};

use crate::facts::{EndFacts, MemoryPath, PcieFacts};
use crate::pcie_link::{self, TlpKind};
use crate::wire::{self, LinkLayer};

/// One end as a row sees it: its role's name ("client", "server") and facts.
#[derive(Debug, Clone, Copy)]
pub struct End<'a> {
    pub role: &'a str,
    pub facts: &'a EndFacts,
    /// Staged memory: this end's copy engine's rate in the row's direction, in Gb/s.
    pub copy_gbps: Option<f64>,
}

/// What a row moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    pub message_bytes: u64,
    /// WRITE and READ carry a RETH on their first packet; SEND does not.
    pub with_reth: bool,
    pub bidirectional: bool,
}

/// Which part of the path a limit bounds, so that a cause can tell whether the part it lowers
/// is the one that binds the row ([`Ceiling::binds`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "part", rename_all = "snake_case")]
pub enum PathPart {
    /// Both ports and the headers at the smaller active MTU.
    Wire,
    /// An end's NIC's PCIe link, by the end's role.
    NicLink { role: String },
    /// An end's GPU's PCIe link, by the end's role.
    GpuLink { role: String },
    /// An end's staged copies, by the end's role.
    StagedCopies { role: String },
}

/// One bound on the path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    pub gbps: f64,
    /// "server NIC PCIe 16 GT/s x16".
    pub label: String,
    pub part: PathPart,
}

/// A row's ceiling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ceiling {
    Hardware {
        gbps: f64,
        limited_by: String,
        /// Every limit considered, least first (one direction's; both for a bidirectional row).
        limits: Vec<Limit>,
        /// The parts whose limits bind: one direction's least (and the other's, bidirectional).
        binding: Vec<PathPart>,
    },
    /// No figure: why ("no hardware ceiling (software device)", "unknown: ...").
    None { reason: String },
}

/// What `ceiling_limited_by` says for a software device.
pub const SOFTWARE_DEVICE: &str = "no hardware ceiling (software device)";

impl Ceiling {
    pub fn gbps(&self) -> Option<f64> {
        match self {
            Ceiling::Hardware { gbps, .. } => Some(*gbps),
            Ceiling::None { .. } => None,
        }
    }

    /// The `ceiling_limited_by` column: the binding limit, or why there is no figure.
    pub fn limited_by(&self) -> &str {
        match self {
            Ceiling::Hardware { limited_by, .. } => limited_by,
            Ceiling::None { reason } => reason,
        }
    }

    /// Whether `part` binds the row: `Some(true)` when its limit is the least (of a direction),
    /// `Some(false)` when it is a limit above the ceiling, `None` when the ceiling has no figure
    /// or does not count that part (its rate unknown), so nobody can tell.
    pub fn binds(&self, part: &PathPart) -> Option<bool> {
        let Ceiling::Hardware { limits, binding, .. } = self else { return None };
        if binding.contains(part) {
            Some(true)
        } else {
            limits.iter().any(|limit| limit.part == *part).then_some(false)
        }
    }

    /// The `pct_of_ceiling` column for a measured rate; none without a figure.
    pub fn percent_of(&self, measured_gbps: f64) -> Option<f64> {
        self.gbps().filter(|gbps| *gbps > 0.0).map(|gbps| 100.0 * measured_gbps / gbps)
    }
}

/// The ceiling of a row whose data flows from `source` to `sink` (and back, if bidirectional).
pub fn ceiling(source: End, sink: End, transfer: Transfer) -> Ceiling {
    if source.facts.software_device.is_some() || sink.facts.software_device.is_some() {
        return Ceiling::None { reason: SOFTWARE_DEVICE.to_string() };
    }
    let forward = direction_limits(source, sink, transfer);
    let Some(forward_least) = least(&forward) else {
        return Ceiling::None { reason: "unknown: neither end's port rate nor PCIe link is known".into() };
    };
    if !transfer.bidirectional {
        return Ceiling::Hardware {
            gbps: forward_least.gbps,
            limited_by: forward_least.label.clone(),
            binding: parts_at(&forward, forward_least.gbps),
            limits: sorted(forward),
        };
    }
    let backward = direction_limits(sink, source, transfer);
    let backward_least = least(&backward).unwrap_or(forward_least);
    let limited_by = if backward_least.label == forward_least.label {
        forward_least.label.clone()
    } else {
        format!("{} / {}", forward_least.label, backward_least.label)
    };
    let gbps = forward_least.gbps + backward_least.gbps;
    let mut binding = parts_at(&forward, forward_least.gbps);
    binding.extend(parts_at(&backward, backward_least.gbps));
    let mut limits = forward;
    limits.extend(backward);
    Ceiling::Hardware { gbps, limited_by, limits: sorted(limits), binding }
}

fn least(limits: &[Limit]) -> Option<&Limit> {
    limits.iter().min_by(|a, b| a.gbps.total_cmp(&b.gbps))
}

/// The parts whose limit is `gbps`: every one that binds when two tie.
fn parts_at(limits: &[Limit], gbps: f64) -> Vec<PathPart> {
    limits.iter().filter(|limit| limit.gbps == gbps).map(|limit| limit.part.clone()).collect()
}

fn sorted(mut limits: Vec<Limit>) -> Vec<Limit> {
    limits.sort_by(|a, b| a.gbps.total_cmp(&b.gbps));
    limits.dedup();
    limits
}

/// The limits of one direction.
fn direction_limits(source: End, sink: End, transfer: Transfer) -> Vec<Limit> {
    let mut limits = Vec::new();
    limits.extend(wire_limit(source, sink, transfer));
    for (end, kind) in [(source, TlpKind::CompletionWithData), (sink, TlpKind::MemoryWrite)] {
        if let Some(nic) = &end.facts.nic_pcie {
            let part = PathPart::NicLink { role: end.role.into() };
            limits.extend(link_limit(end.role, "NIC", part, nic, kind, transfer.message_bytes));
        }
        if end.facts.memory != MemoryPath::Host {
            if let Some(gpu) = &end.facts.gpu_pcie {
                let part = PathPart::GpuLink { role: end.role.into() };
                limits.extend(link_limit(end.role, "GPU", part, gpu, kind, transfer.message_bytes));
            }
        }
        if let (MemoryPath::Staged { .. }, Some(copy)) = (end.facts.memory, end.copy_gbps) {
            limits.push(Limit {
                gbps: copy,
                label: format!("{} staged copies {copy:.1} Gb/s", end.role),
                part: PathPart::StagedCopies { role: end.role.into() },
            });
        }
    }
    limits
}

fn wire_limit(source: End, sink: End, transfer: Transfer) -> Option<Limit> {
    let ports: Vec<(End, (f64, LinkLayer, &str))> =
        [source, sink].into_iter().filter_map(|end| port_rate(end).map(|rate| (end, rate))).collect();
    let (slow_end, (gbps, layer, text)) = ports.iter().min_by(|a, b| a.1 .0.total_cmp(&b.1 .0))?;
    let mtu = [source, sink].iter().filter_map(|end| end.facts.active_mtu).min();
    let same_rate = ports.len() == 2 && ports.iter().all(|(_, (other, _, _))| other == gbps);
    let place = if same_rate { "wire".to_string() } else { format!("{} port", slow_end.role) };
    let layer_name = match layer {
        LinkLayer::InfiniBand => "InfiniBand",
        LinkLayer::Ethernet => "RoCE v2",
    };
    Some(match mtu {
        Some(mtu) => Limit {
            gbps: gbps * wire::wire_efficiency(transfer.message_bytes, mtu, *layer, transfer.with_reth),
            label: format!("{place} {text} {layer_name} at MTU {mtu}"),
            part: PathPart::Wire,
        },
        None => Limit {
            gbps: *gbps,
            label: format!("{place} {text} {layer_name} (MTU unknown: headers not counted)"),
            part: PathPart::Wire,
        },
    })
}

/// A port's data rate, its link layer and sysfs's words for it.
fn port_rate<'a>(end: End<'a>) -> Option<(f64, LinkLayer, &'a str)> {
    let layer = end.facts.link_layer?;
    let text = end.facts.port_rate.as_deref()?;
    Some((wire::port_data_gbps(text, layer)?, layer, text))
}

fn link_limit(
    role: &str,
    what: &str,
    part: PathPart,
    link: &PcieFacts,
    kind: TlpKind,
    message_bytes: u64,
) -> Option<Limit> {
    let (speed, width) = (link.speed_gts?, link.width?);
    // Unknown MPS (Device Control needs root): the largest a link may use, so the bound stays one.
    let mps = link.max_payload_bytes.unwrap_or(4096);
    let gbps = pcie_link::payload_gbps(speed, width, mps, kind, message_bytes)?;
    let mps_note = if link.max_payload_bytes.is_none() { " (MPS unknown)" } else { "" };
    Some(Limit { gbps, label: format!("{role} {what} PCIe {}{mps_note}", link.describe_link()), part })
}

#[cfg(test)]
mod tests;
