//! What the rows do not show: a node of the plan without rows, a node whose rows stop before the
//! job's last round, a port the other nodes have and this one has no rows on; and each class's
//! summary, with a class below its ceiling (the evidence of a whole fleet's shortfall).

use std::collections::{BTreeMap, BTreeSet};

use crate::fit::Fit;
use crate::observation::Catalog;
use crate::verdict::{cannot_tell, ClassSummary, Finding, PartKind};

/// Ports and nodes the rows show elsewhere but that have none: a port of a device most nodes
/// (or this node's other classes) have rows on, on a node with rows.
pub(crate) fn missing_evidence(catalog: &Catalog, fit: &Fit, findings: &mut Vec<Finding>) {
    let seen: BTreeSet<&str> = fit.keys.pairs.iter().map(|&(_, port)| catalog.node_of(port)).collect();
    for node in &catalog.expected_nodes {
        if !seen.contains(node.as_str()) {
            let mut finding = Finding::new(PartKind::NodeWithoutRows, node, "all");
            finding.below_pct = 100.0;
            findings.push(finding);
        }
    }
    for (node, last, job_last) in &catalog.stopped {
        let mut finding = Finding::new(PartKind::NodeRowsStop, node, "all");
        finding.below_pct = 100.0;
        finding.pairs = *last;
        finding.peers = *job_last;
        findings.push(finding);
    }
    // Devices per node with rows; a device on more than half the nodes is expected on each.
    let mut devices_of: BTreeMap<u32, BTreeSet<&str>> = BTreeMap::new();
    for &(_, port) in &fit.keys.pairs {
        let info = &catalog.ports[port as usize];
        devices_of.entry(info.node).or_default().insert(info.device.as_str());
    }
    let mut nodes_with: BTreeMap<&str, usize> = BTreeMap::new();
    for devices in devices_of.values() {
        for device in devices {
            *nodes_with.entry(device).or_default() += 1;
        }
    }
    if devices_of.len() < 3 {
        return;
    }
    for (&node, devices) in &devices_of {
        for (&device, &count) in &nodes_with {
            if 2 * count > devices_of.len() && !devices.contains(device) {
                let mut finding =
                    Finding::new(PartKind::PortWithoutRows, &catalog.nodes[node as usize], "all");
                finding.device = Some(device.to_string());
                finding.below_pct = 100.0;
                findings.push(finding);
            }
        }
    }
}

/// Each class's summary; a class below its ceiling is a finding.
pub(crate) fn summarise_classes(
    catalog: &Catalog,
    fit: &Fit,
    ceiling_shortfall: f64,
    transient_rates: &[f64],
    findings: &mut Vec<Finding>,
) -> Vec<ClassSummary> {
    let mut nodes: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); catalog.classes.len()];
    for &(class, port) in &fit.keys.pairs {
        nodes[class as usize].insert(catalog.ports[port as usize].node);
    }
    let mut classes = Vec::new();
    for (class, info) in catalog.classes.iter().enumerate() {
        let level = fit.level[class].exp();
        let nodes = nodes[class].len() as u64;
        if let Some(ceiling) = info.ceiling_gbps {
            if level < ceiling * (1.0 - ceiling_shortfall) {
                let mut finding = Finding::new(PartKind::ClassBelowCeiling, "all", &info.label);
                finding.below_pct = 100.0 * (1.0 - level / ceiling);
                finding.pairs = fit.rows[class];
                findings.push(finding);
            }
        }
        classes.push(ClassSummary {
            class: info.label.clone(),
            rows: fit.rows[class],
            level_gbps: level,
            noise_pct: 100.0 * fit.noise[class],
            ceiling_gbps: info.ceiling_gbps,
            nodes,
            transient_pct: 100.0 * transient_rates[class],
            cannot_tell: cannot_tell(nodes, info.ceiling_gbps.is_some()),
        });
    }
    classes
}
