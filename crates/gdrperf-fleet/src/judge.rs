//! From the fit to named parts: which NIC ports, GPUs, nodes and links are slow, by how much,
//! from how many pairs and peers, and how sure.
//!
//! A port's effect is tested one-sided against zero: z = effect / (1.2533 x noise / sqrt(rows))
//! (1.2533: a median's standard error over a mean's, for normal noise). It is named when it is
//! both **large** (more than `min_deficit` below the class, 15 % by default: five standard
//! deviations of a row at 3 % noise, and below that the noise estimate of a sparse schedule, whose
//! few rows per port absorb part of it, made 10 %-deficits of healthy parts look sure in
//! simulation) and **sure** (z below the normal quantile of
//! `alpha / tests`, Bonferroni over every effect tested in the class, so that a fleet of 30 000
//! ports is not expected to name a healthy one by chance: alpha = 0.001 by default), from at
//! least two distinct peers (with one, either end could be at fault: the pair is reported as a
//! link). Links are tested the same way on the median residual of the pair's rows, against the
//! number of rows of the class.
//!
//! The kind follows the evidence:
//! - role effects both informative (two or more rows each way): low only when sending (or only
//!   when receiving) names a NIC port slow in that direction; both low, a NIC port;
//! - named in GPU-memory classes but measured and not named in a host-memory class: the GPU;
//!   named in GPU-memory classes with no host-memory rows to compare: "NIC port or GPU";
//! - more than half of a node's measured ports named (two or more) in a class: the node;
//! - a node of the plan with no rows at all: the node (dead, or never ran);
//! - a class level more than `ceiling_shortfall` below its median path ceiling: the class.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::fit::{fit, Fit};
use crate::normal;
use crate::observation::Source;

/// The judge's thresholds.
#[derive(Debug, Clone, Copy)]
pub struct JudgeConfig {
    /// A part is named only this far below its class (0.15: 15 %).
    pub min_deficit: f64,
    /// The family-wise false-naming probability per class (Bonferroni).
    pub alpha: f64,
    /// A class level this far below its ceiling is a finding (0.10, the shortfall level of
    /// gdrperf-ceiling's `ceiling_causes`).
    pub ceiling_shortfall: f64,
}

impl Default for JudgeConfig {
    fn default() -> JudgeConfig {
        JudgeConfig { min_deficit: 0.15, alpha: 0.001, ceiling_shortfall: 0.10 }
    }
}

/// What a finding names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartKind {
    Node,
    NodeWithoutRows,
    NicPort,
    NicPortSending,
    NicPortReceiving,
    Gpu,
    NicPortOrGpu,
    Link,
    ClassBelowCeiling,
}

impl PartKind {
    pub fn name(self) -> &'static str {
        match self {
            PartKind::Node => "node",
            PartKind::NodeWithoutRows => "node without rows",
            PartKind::NicPort => "NIC port",
            PartKind::NicPortSending => "NIC port, when sending",
            PartKind::NicPortReceiving => "NIC port, when receiving",
            PartKind::Gpu => "GPU",
            PartKind::NicPortOrGpu => "NIC port or its GPU",
            PartKind::Link => "link",
            PartKind::ClassBelowCeiling => "class below its ceiling",
        }
    }
}

/// One named part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub kind: PartKind,
    pub node: String,
    pub device: Option<String>,
    pub gpu_bus_id: Option<String>,
    /// The other end of a link.
    pub peer_node: Option<String>,
    pub peer_device: Option<String>,
    pub class: String,
    /// How far below the class (or its ceiling), in percent.
    pub below_pct: f64,
    pub pairs: u64,
    pub peers: u64,
    /// z of the deficit (more negative: surer) and the Bonferroni-adjusted p (None where the
    /// finding is not statistical: a node without rows, a class below its ceiling).
    pub z: Option<f64>,
    pub p_adjusted: Option<f64>,
}

/// A class's level and noise, for the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassSummary {
    pub class: String,
    pub rows: u64,
    pub level_gbps: f64,
    pub noise_pct: f64,
    pub ceiling_gbps: Option<f64>,
    /// Nodes with rows in the class.
    pub nodes: u64,
    /// What the class's rows cannot tell apart, where their shape rules a part out (two nodes:
    /// every row has the same two ends); `None` where every kind of part can be named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cannot_tell: Option<String>,
}

/// Why a class of `nodes` nodes cannot name a part, if it cannot: a part is named from two or
/// more peers, and with two nodes each port meets one at most, so a slow node, a slow port and
/// a slow link between the two give the same rows.
fn cannot_tell(nodes: u64, ceiling: bool) -> Option<String> {
    let judged = match ceiling {
        true => "the class against its ceiling",
        false => "nothing within the job (the rows carry no ceiling)",
    };
    match nodes {
        0..=2 => Some(format!(
            "{nodes} node(s): every row joins the same two ends, so a slow node, a slow NIC port and a slow \
             link between them give the same rows and none can be named (a part needs rows with two or \
             more peers: three or more nodes); judged here: {judged}, a lane slower than the pair's \
             other lanes (as a link, with three or more lanes), and against an earlier job (--base) \
             the class or a port that moved"
        )),
        _ => None,
    }
}

/// The judgement of a fleet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub classes: Vec<ClassSummary>,
    pub findings: Vec<Finding>,
    /// Median-polish sweeps the fit ran before its effects settled: how the judge spent its
    /// time, for the simulator's table; not a finding, so not in the JSON.
    #[serde(skip)]
    pub sweeps: usize,
}

/// A port effect that passed the tests, before kinds across classes are settled.
struct Named {
    class: u32,
    port: u32,
    kind: PartKind,
    effect: f64,
    rows: u32,
    z: f64,
    tests: f64,
}

/// Judges every class of `source`.
pub fn judge(source: &dyn Source, config: &JudgeConfig) -> Verdict {
    let catalog = source.catalog();
    let fit = fit(source);
    let ports = catalog.ports.len();
    let floor = (1.0 - config.min_deficit).ln();
    let mut named: Vec<Named> = Vec::new();
    for class in 0..catalog.classes.len() {
        let noise = fit.noise[class];
        let measured = (0..ports).filter(|&port| fit.effects[class * ports + port].rows > 0).count();
        let tests = (3 * measured).max(1) as f64;
        let critical = normal::quantile(config.alpha / tests);
        let z_of = |effect: f64, rows: u32| effect / (1.2533 * noise / f64::from(rows.max(1)).sqrt());
        let low = |effect: f64, rows: u32| rows > 0 && effect < floor && z_of(effect, rows) < critical;
        for port in 0..ports {
            let effect = fit.effects[class * ports + port];
            if effect.rows == 0 {
                continue;
            }
            let both_roles = effect.sending_rows >= 2 && effect.receiving_rows >= 2;
            let sending = both_roles && low(effect.sending, effect.sending_rows);
            let receiving = both_roles && low(effect.receiving, effect.receiving_rows);
            let (kind, value, rows) = match (sending, receiving) {
                (true, false) => (PartKind::NicPortSending, effect.sending, effect.sending_rows),
                (false, true) => (PartKind::NicPortReceiving, effect.receiving, effect.receiving_rows),
                (true, true) => (
                    PartKind::NicPort,
                    effect.combined.min(effect.sending.max(effect.receiving)),
                    effect.rows,
                ),
                (false, false) if low(effect.combined, effect.rows) => {
                    (PartKind::NicPort, effect.combined, effect.rows)
                }
                _ => continue,
            };
            named.push(Named {
                class: class as u32,
                port: port as u32,
                kind,
                effect: value,
                rows,
                z: z_of(value, rows),
                tests,
            });
        }
    }
    let (mut links, peers) = find_links_and_peers(source, &fit, config, &named);
    let mut findings = Vec::new();
    settle_ports(source, &fit, &named, &peers, &mut findings);
    links.extend(single_peer_links(source, &fit, &named, &peers));
    for link in links {
        let (a, b) = (&catalog.ports[link.ends.0 as usize], &catalog.ports[link.ends.1 as usize]);
        findings.push(Finding {
            kind: PartKind::Link,
            node: catalog.nodes[a.node as usize].clone(),
            device: Some(a.device.clone()),
            gpu_bus_id: None,
            peer_node: Some(catalog.nodes[b.node as usize].clone()),
            peer_device: Some(b.device.clone()),
            class: catalog.classes[link.class as usize].label.clone(),
            below_pct: below_pct(link.effect),
            pairs: link.rows,
            peers: 1,
            z: Some(link.z),
            p_adjusted: Some((link.tests * normal::lower_tail(link.z)).min(1.0)),
        });
    }
    // Nodes with at least one row (a catalog may list ports that never ran).
    let seen: BTreeSet<&str> = (0..fit.effects.len())
        .filter(|&key| fit.effects[key].rows > 0)
        .map(|key| catalog.nodes[catalog.ports[key % ports].node as usize].as_str())
        .collect();
    for node in &catalog.expected_nodes {
        if !seen.contains(node.as_str()) {
            findings.push(Finding {
                kind: PartKind::NodeWithoutRows,
                node: node.clone(),
                device: None,
                gpu_bus_id: None,
                peer_node: None,
                peer_device: None,
                class: "all".into(),
                below_pct: 100.0,
                pairs: 0,
                peers: 0,
                z: None,
                p_adjusted: None,
            });
        }
    }
    let mut classes = Vec::new();
    for (class, info) in catalog.classes.iter().enumerate() {
        let level = fit.level[class].exp();
        let nodes: BTreeSet<u32> = (0..ports)
            .filter(|&port| fit.effects[class * ports + port].rows > 0)
            .map(|port| catalog.ports[port].node)
            .collect();
        let nodes = nodes.len() as u64;
        if let Some(ceiling) = info.ceiling_gbps {
            if level < ceiling * (1.0 - config.ceiling_shortfall) {
                findings.push(Finding {
                    kind: PartKind::ClassBelowCeiling,
                    node: "all".into(),
                    device: None,
                    gpu_bus_id: None,
                    peer_node: None,
                    peer_device: None,
                    class: info.label.clone(),
                    below_pct: 100.0 * (1.0 - level / ceiling),
                    pairs: fit.rows[class],
                    peers: 0,
                    z: None,
                    p_adjusted: None,
                });
            }
        }
        classes.push(ClassSummary {
            class: info.label.clone(),
            rows: fit.rows[class],
            level_gbps: level,
            noise_pct: 100.0 * fit.noise[class],
            ceiling_gbps: info.ceiling_gbps,
            nodes,
            cannot_tell: cannot_tell(nodes, info.ceiling_gbps.is_some()),
        });
    }
    findings.sort_by(|a, b| {
        (a.kind, &a.node, &a.device, &a.peer_node, &a.peer_device, &a.class).cmp(&(
            b.kind,
            &b.node,
            &b.device,
            &b.peer_node,
            &b.peer_device,
            &b.class,
        ))
    });
    Verdict { classes, findings, sweeps: fit.sweeps }
}

fn below_pct(effect: f64) -> f64 {
    100.0 * (1.0 - effect.exp())
}

/// Turns named port effects into findings: GPU or NIC port across classes, node within a class;
/// a port with fewer than two distinct peers is left to the link test.
fn settle_ports(source: &dyn Source, fit: &Fit, named: &[Named], peers: &Peers, findings: &mut Vec<Finding>) {
    let catalog = source.catalog();
    let named_keys: BTreeSet<(u32, u32)> = named.iter().map(|entry| (entry.class, entry.port)).collect();
    // Per class and node: ports measured, ports named.
    let mut per_node: BTreeMap<(u32, u32), (usize, Vec<&Named>)> = BTreeMap::new();
    for class in 0..catalog.classes.len() as u32 {
        for (port, info) in catalog.ports.iter().enumerate() {
            if fit.effect(class, port as u32).rows > 0 {
                per_node.entry((class, info.node)).or_default().0 += 1;
            }
        }
    }
    for entry in named {
        let peer_count = peers.get(&(entry.class, entry.port)).map_or(0, BTreeSet::len);
        if peer_count >= 2 {
            per_node.entry((entry.class, catalog.ports[entry.port as usize].node)).or_default().1.push(entry);
        }
    }
    for ((class, node), (measured, list)) in per_node {
        if list.is_empty() {
            continue;
        }
        let class_info = &catalog.classes[class as usize];
        if list.len() >= 2 && 2 * list.len() > measured {
            let mut effects: Vec<f64> = list.iter().map(|entry| entry.effect).collect();
            effects.sort_by(f64::total_cmp);
            let rows: u64 = list.iter().map(|entry| u64::from(entry.rows)).sum();
            let z = list.iter().map(|entry| entry.z).fold(f64::INFINITY, f64::min);
            let node_peers: BTreeSet<u32> = list
                .iter()
                .flat_map(|entry| peers.get(&(entry.class, entry.port)).into_iter().flatten())
                .map(|&peer| catalog.ports[peer as usize].node)
                .collect();
            findings.push(Finding {
                kind: PartKind::Node,
                node: catalog.nodes[node as usize].clone(),
                device: None,
                gpu_bus_id: None,
                peer_node: None,
                peer_device: None,
                class: class_info.label.clone(),
                below_pct: below_pct(effects[effects.len() / 2]),
                pairs: rows,
                peers: node_peers.len() as u64,
                z: Some(z),
                p_adjusted: Some((list[0].tests * normal::lower_tail(z)).min(1.0)),
            });
            continue;
        }
        for entry in list {
            let port = &catalog.ports[entry.port as usize];
            let mut kind = entry.kind;
            if class_info.gpu_memory && kind == PartKind::NicPort {
                // Host-memory classes where this port ran: named in none of them means the GPU.
                let host_runs: Vec<u32> = (0..catalog.classes.len() as u32)
                    .filter(|&other| catalog.classes[other as usize].host_memory)
                    .filter(|&other| fit.effect(other, entry.port).rows > 0)
                    .collect();
                kind = if host_runs.is_empty() {
                    PartKind::NicPortOrGpu
                } else if host_runs.iter().all(|&other| !named_keys.contains(&(other, entry.port))) {
                    PartKind::Gpu
                } else {
                    PartKind::NicPort
                };
            }
            findings.push(Finding {
                kind,
                node: catalog.nodes[port.node as usize].clone(),
                device: Some(port.device.clone()),
                gpu_bus_id: port.gpu_bus_id.clone(),
                peer_node: None,
                peer_device: None,
                class: class_info.label.clone(),
                below_pct: below_pct(entry.effect),
                pairs: u64::from(entry.rows),
                peers: peers.get(&(entry.class, entry.port)).map_or(0, BTreeSet::len) as u64,
                z: Some(entry.z),
                p_adjusted: Some((entry.tests * normal::lower_tail(entry.z)).min(1.0)),
            });
        }
    }
}

/// A named port that met one peer: either end could be at fault, so the pair is the finding, a
/// link, with the median of its rows against the class level (the two ends' effects share the
/// deficit between them, so neither effect alone is its size). One link per pair, however many
/// of its ends were named, reported with the residual links; the extra pass over the rows runs
/// only when there is one.
fn single_peer_links(source: &dyn Source, fit: &Fit, named: &[Named], peers: &Peers) -> Vec<Link> {
    // (class, lower port, higher port) -> (surest z of its named ends, their test count).
    let mut pairs: BTreeMap<(u32, u32, u32), (f64, f64)> = BTreeMap::new();
    for entry in named {
        let Some(set) = peers.get(&(entry.class, entry.port)) else { continue };
        let (1, Some(&peer)) = (set.len(), set.iter().next()) else { continue };
        let slot = pairs
            .entry((entry.class, entry.port.min(peer), entry.port.max(peer)))
            .or_insert((f64::INFINITY, entry.tests));
        slot.0 = slot.0.min(entry.z);
    }
    if pairs.is_empty() {
        return Vec::new();
    }
    let mut deficits: BTreeMap<(u32, u32, u32), Vec<f64>> =
        pairs.keys().map(|&key| (key, Vec::new())).collect();
    source.visit(&mut |row| {
        let key = (row.class, row.sender.min(row.receiver), row.sender.max(row.receiver));
        if let Some(list) = deficits.get_mut(&key) {
            list.push(f64::from(row.log_gbps) - fit.level[row.class as usize]);
        }
    });
    let mut links = Vec::new();
    for ((class, a, b), (z, tests)) in pairs {
        let mut list = deficits.remove(&(class, a, b)).unwrap_or_default();
        list.sort_by(f64::total_cmp);
        let n = list.len();
        let effect = match n {
            0 => continue,
            _ if n % 2 == 1 => list[n / 2],
            _ => 0.5 * (list[n / 2 - 1] + list[n / 2]),
        };
        links.push(Link { class, ends: (a, b), effect, rows: n as u64, z, tests });
    }
    links
}

/// A slow link between two ports.
struct Link {
    class: u32,
    ends: (u32, u32),
    effect: f64,
    rows: u64,
    z: f64,
    tests: f64,
}

/// Distinct peer ports of each named port, by class and port.
type Peers = HashMap<(u32, u32), BTreeSet<u32>>;

/// Links whose rows' median residual is low and sure (ports already named explain their rows),
/// and the distinct peers of each named port: two more passes. Which rows matter is decided
/// first by flags indexed like the effects, so that the millions of rows of no named port and no
/// candidate link cost no hashing.
fn find_links_and_peers(
    source: &dyn Source,
    fit: &Fit,
    config: &JudgeConfig,
    named: &[Named],
) -> (Vec<Link>, Peers) {
    let floor = (1.0 - config.min_deficit).ln();
    let flag = |class: u32, port: u32| class as usize * fit.ports + port as usize;
    let mut explained = vec![false; fit.effects.len()];
    for entry in named {
        explained[flag(entry.class, entry.port)] = true;
    }
    let ordered = |a: u32, b: u32| (a.min(b), a.max(b));
    // Pass 1: pairs with at least one row below the floor (a bounded handful in a healthy fleet).
    let mut candidates: HashMap<(u32, u32, u32), Vec<f32>> = HashMap::new();
    let mut in_candidate = vec![false; fit.effects.len()];
    source.visit(&mut |row| {
        if fit.residual(row) < floor
            && !explained[flag(row.class, row.sender)]
            && !explained[flag(row.class, row.receiver)]
        {
            let (a, b) = ordered(row.sender, row.receiver);
            candidates.entry((row.class, a, b)).or_default();
            in_candidate[flag(row.class, a)] = true;
            in_candidate[flag(row.class, b)] = true;
        }
    });
    // Pass 2: every row of those pairs, and every peer of a named port.
    let mut peers: Peers = named.iter().map(|entry| ((entry.class, entry.port), BTreeSet::new())).collect();
    if !candidates.is_empty() || !peers.is_empty() {
        source.visit(&mut |row| {
            let (sender, receiver) = (flag(row.class, row.sender), flag(row.class, row.receiver));
            if in_candidate[sender] && in_candidate[receiver] {
                let (a, b) = ordered(row.sender, row.receiver);
                if let Some(residuals) = candidates.get_mut(&(row.class, a, b)) {
                    residuals.push(fit.residual(row) as f32);
                }
            }
            if explained[sender] {
                peers.entry((row.class, row.sender)).or_default().insert(row.receiver);
            }
            if explained[receiver] {
                peers.entry((row.class, row.receiver)).or_default().insert(row.sender);
            }
        });
    }
    let mut links = Vec::new();
    let mut keys: Vec<_> = candidates.keys().copied().collect();
    keys.sort_unstable();
    for key in keys {
        let mut residuals = candidates.remove(&key).unwrap_or_default();
        residuals.sort_by(f32::total_cmp);
        let n = residuals.len();
        let median = if n % 2 == 1 {
            f64::from(residuals[n / 2])
        } else {
            0.5 * f64::from(residuals[n / 2 - 1] + residuals[n / 2])
        };
        let noise = fit.noise[key.0 as usize];
        let tests = fit.rows[key.0 as usize].max(1) as f64;
        let z = median / (1.2533 * noise / (n as f64).sqrt());
        if median < floor && z < normal::quantile(config.alpha / tests) {
            links.push(Link { class: key.0, ends: (key.1, key.2), effect: median, rows: n as u64, z, tests });
        }
    }
    (links, peers)
}
