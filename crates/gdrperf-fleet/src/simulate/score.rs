//! How a verdict compares with what was planted: every planted part named as its kind, and
//! nothing else named or watched.

use super::{Fault, Naming, Planted};
use crate::judge::{Finding, PartKind, Verdict};

/// How one seed's verdict compares with what was planted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Score {
    /// Every planted part named (with its kind; a near miss: listed to watch).
    pub all_named: bool,
    /// Something not planted named.
    pub false_named: bool,
    /// Something not planted listed to watch.
    pub false_watched: bool,
    /// The planted faults not named as their kind.
    pub missed: Vec<Fault>,
}

/// Whether `finding` names `planted`, nodes named by `naming`.
fn names(finding: &Finding, planted: &Planted, naming: Naming) -> bool {
    let node_name = |node: usize| naming.name(node);
    let device = format!("mlx5_{}", planted.lane);
    let at_port =
        finding.node == node_name(planted.node) && finding.device.as_deref() == Some(device.as_str());
    match planted.fault {
        // In GPU-memory rows alone a slow port and a slow GPU look alike: "NIC port or its GPU".
        Fault::SlowPort => at_port && matches!(finding.kind, PartKind::NicPort | PartKind::NicPortOrGpu),
        Fault::SlowSending => at_port && finding.kind == PartKind::NicPortSending,
        Fault::GpuX8 => at_port && matches!(finding.kind, PartKind::Gpu | PartKind::NicPortOrGpu),
        Fault::SlowRail => {
            finding.kind == PartKind::Rail && finding.device.as_deref() == Some(device.as_str())
        }
        // Named only in the watch list (see `score`).
        Fault::NearMiss => at_port && finding.kind == PartKind::NicPort,
        Fault::Intermittent => at_port && finding.kind == PartKind::NicPortIntermittent,
        Fault::SlowGroup | Fault::SlowHalf => {
            finding.kind == PartKind::Group
                && finding.members.iter().map(String::as_str).eq(planted
                    .members
                    .iter()
                    .map(|&node| node_name(node))
                    .collect::<Vec<_>>()
                    .iter()
                    .map(String::as_str))
        }
        Fault::DeadNode => {
            finding.kind == PartKind::NodeWithoutRows && finding.node == node_name(planted.node)
        }
        Fault::BadLink => {
            let peer = planted.peer.map(node_name);
            finding.kind == PartKind::Link
                && finding.device.as_deref() == Some(device.as_str())
                && ((finding.node == node_name(planted.node) && finding.peer_node == peer)
                    || (Some(finding.node.clone()) == peer
                        && finding.peer_node.as_deref() == Some(node_name(planted.node).as_str())))
        }
    }
}

/// Scores a verdict against the planted faults: each named with its kind among the findings, a
/// near miss among the parts to watch (and named, it is a false naming). Nodes `node0000...`.
pub fn score(verdict: &Verdict, planted: &[Planted]) -> Score {
    score_named(verdict, planted, Naming { racks: false, nodes: 0 })
}

/// [`score`], the nodes named by `naming` (the fleet's own, [`SimFleet::naming`](super::SimFleet::naming)).
pub fn score_named(verdict: &Verdict, planted: &[Planted], naming: Naming) -> Score {
    let names = |finding: &Finding, fault: &Planted| names(finding, fault, naming);
    let found = |fault: &Planted| match fault.fault {
        Fault::NearMiss => verdict.watch.iter().any(|finding| names(finding, fault)),
        _ => verdict.findings.iter().any(|finding| names(finding, fault)),
    };
    let missed: Vec<Fault> = planted.iter().filter(|fault| !found(fault)).map(|fault| fault.fault).collect();
    let stranger = |finding: &Finding, watch: bool| {
        !planted.iter().any(|fault| (fault.fault == Fault::NearMiss) == watch && names(finding, fault))
    };
    Score {
        all_named: missed.is_empty(),
        false_named: verdict.findings.iter().any(|finding| stranger(finding, false)),
        false_watched: verdict.watch.iter().any(|finding| stranger(finding, true)),
        missed,
    }
}
