//! From the fit to named parts: which NIC ports, GPUs, nodes, rails and links are slow, by how
//! much, from how many pairs and peers, and how sure; which are near misses (to watch) and which
//! pairs dipped once (to retest).
//!
//! A port's effect is tested one-sided against zero: z = effect / (1.2533 x noise / sqrt(rows))
//! (1.2533: a median's standard error over a mean's, for normal noise; the noise is 1.4826 x the
//! median absolute residual, robust to the heavy tails and dips of a shared fabric, and the
//! effect a median, which a minority of dipped rows does not move). It is named when it is both
//! **large** (more than `min_deficit` below the class, 15 % by default: five standard
//! deviations of a row at 3 % noise, and below that the noise estimate of a sparse schedule, whose
//! few rows per port absorb part of it, made 10 %-deficits of healthy parts look sure in
//! simulation) and **sure** (z below the normal quantile of
//! `alpha / tests`, Bonferroni over every effect tested in the class, so that a fleet of 30 000
//! ports is not expected to name a healthy one by chance: alpha = 0.001 by default), from at
//! least two distinct peers (with one, either end could be at fault: the pair is judged as a
//! link). Sure but only beyond `watch_deficit` (5 %): listed to **watch**, exit code unchanged.
//! Links, intermittent ports and the transient rows are [`crate::transient`]'s; rails
//! [`crate::shared`]'s.
//!
//! The kind follows the evidence:
//! - a direction only where the data separate the roles: sending low, and below receiving by
//!   more than half `min_deficit`, surely (z of the difference of the two role medians): "when
//!   sending" (and the same for receiving); low both ways, or low overall without that
//!   separation: a NIC port;
//! - named in GPU-memory classes but measured and not named in a host-memory class: the GPU;
//!   named in GPU-memory classes with no host-memory rows to compare: "NIC port or GPU";
//! - more than half of a node's measured ports named (two or more) in a class: the node;
//! - a node of the plan with no rows at all: the node (dead, or never ran); a port that the
//!   node's other classes, or most nodes, show but that has no rows: the port;
//! - a class level more than `ceiling_shortfall` below its median path ceiling: the class (a
//!   whole fleet below its ceiling).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::fit::{fit, Fit};
use crate::normal;
use crate::observation::{Catalog, Source};
use crate::shared::{find_groups, find_rails, Rail};
use crate::transient::{count_dips, judge_pairs, rate, INTERMITTENT_SHARE};

/// The judge's thresholds.
#[derive(Debug, Clone, Copy)]
pub struct JudgeConfig {
    /// A part is named only this far below its class (0.15: 15 %).
    pub min_deficit: f64,
    /// A part surely this far below its class, but not `min_deficit`, is listed to watch (0.05).
    pub watch_deficit: f64,
    /// The family-wise false-naming probability per class (Bonferroni).
    pub alpha: f64,
    /// A class level this far below its ceiling is a finding (0.10, the shortfall level of
    /// gdrperf-ceiling's `ceiling_causes`).
    pub ceiling_shortfall: f64,
}

impl Default for JudgeConfig {
    fn default() -> JudgeConfig {
        JudgeConfig { min_deficit: 0.15, watch_deficit: 0.05, alpha: 0.001, ceiling_shortfall: 0.10 }
    }
}

/// What a finding names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartKind {
    Node,
    Group,
    NodeWithoutRows,
    NodeRowsStop,
    PortWithoutRows,
    Rail,
    NicPort,
    NicPortSending,
    NicPortReceiving,
    NicPortIntermittent,
    Gpu,
    NicPortOrGpu,
    Link,
    ClassBelowCeiling,
}

impl PartKind {
    pub fn name(self) -> &'static str {
        match self {
            PartKind::Node => "node",
            PartKind::Group => "group of nodes, slow towards the rest",
            PartKind::NodeWithoutRows => "node without rows",
            PartKind::NodeRowsStop => "node whose rows stop",
            PartKind::PortWithoutRows => "NIC port without rows",
            PartKind::Rail => "rail",
            PartKind::NicPort => "NIC port",
            PartKind::NicPortSending => "NIC port, when sending",
            PartKind::NicPortReceiving => "NIC port, when receiving",
            PartKind::NicPortIntermittent => "NIC port, intermittent",
            PartKind::Gpu => "GPU",
            PartKind::NicPortOrGpu => "NIC port or its GPU",
            PartKind::Link => "link",
            PartKind::ClassBelowCeiling => "class below its ceiling",
        }
    }
}

/// One named part (or one to watch, or a pair to retest).
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
    /// How far below the class (or its ceiling), in percent; for an intermittent port, the mean
    /// deficit of its low rows.
    pub below_pct: f64,
    pub pairs: u64,
    pub peers: u64,
    /// z of the deficit (more negative: surer) and the Bonferroni-adjusted p (None where the
    /// finding is not statistical: a node without rows, a class below its ceiling).
    pub z: Option<f64>,
    pub p_adjusted: Option<f64>,
    /// Rows more than `min_deficit` below what their ends explain (links, intermittent ports,
    /// retests).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low_rows: Option<u64>,
    /// A retest: rows more of the pair, all low, that would name it a link (None: more than
    /// [`crate::transient::MOST_RETESTS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreeing_rows_needed: Option<u64>,
    /// A rail's nodes (each with a port of the rail's device).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
}

impl Finding {
    fn new(kind: PartKind, node: &str, class: &str) -> Finding {
        Finding {
            kind,
            node: node.to_string(),
            device: None,
            gpu_bus_id: None,
            peer_node: None,
            peer_device: None,
            class: class.to_string(),
            below_pct: 0.0,
            pairs: 0,
            peers: 0,
            z: None,
            p_adjusted: None,
            low_rows: None,
            agreeing_rows_needed: None,
            members: Vec::new(),
        }
    }
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
    /// The share of the class's rows (of ports not named) more than `min_deficit` below what their
    /// ends explain: the transient rate links and intermittent ports are tested against.
    pub transient_pct: f64,
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
    /// Named parts: any makes the exit code 1.
    pub findings: Vec<Finding>,
    /// Parts surely slower than their class but by less than `min_deficit`: not named.
    pub watch: Vec<Finding>,
    /// Pairs whose rows are mostly low but too few to name a link: run them again.
    pub retest: Vec<Finding>,
    /// Low rows not in a named part: counted as transient (a moment of congestion).
    pub transient_rows: u64,
    /// Median-polish sweeps the fit ran before its effects settled: how the judge spent its
    /// time, for the simulator's table; not a finding, so not in the JSON.
    #[serde(skip)]
    pub sweeps: usize,
}

/// A port is listed to watch from this many rows on: with fewer (a sparse schedule, locate's two
/// to eight a port) the noise estimate, part of which each port's few rows absorb, made healthy
/// ports 5-8 % low look sure in simulation (results/fleet/README.md), as it did 10 % ones for
/// the 15 % bar.
pub const WATCH_ROWS: u32 = 20;

/// A port that passed a test, before kinds across classes are settled.
struct Named {
    class: u32,
    port: u32,
    kind: PartKind,
    effect: f64,
    rows: u32,
    z: Option<f64>,
    p_adjusted: f64,
    low_rows: Option<u64>,
}

/// Judges every class of `source`.
pub fn judge(source: &dyn Source, config: &JudgeConfig) -> Verdict {
    let catalog = source.catalog();
    let fit = fit(source);
    let floor = (1.0 - config.min_deficit).ln();
    let watch_floor = (1.0 - config.watch_deficit).ln();
    let rails = find_rails(catalog, &fit, floor, watch_floor, config.alpha);
    let rail_of: HashMap<(u32, &str), &Rail> =
        rails.iter().map(|rail| ((rail.class, rail.device.as_str()), rail)).collect();
    let (mut named, mut watch_ports) = test_ports(catalog, &fit, config, &rail_of);
    let shift: Vec<f64> = fit
        .keys
        .pairs
        .iter()
        .map(|&(class, port)| {
            rail_of
                .get(&(class, catalog.ports[port as usize].device.as_str()))
                .map_or(0.0, |rail| rail.effect)
        })
        .collect();
    let (watch_intermittent, transient_rates) = intermittent_ports(source, &fit, config, &mut named, &shift);
    // A port both watched by its median and intermittent is listed once, as intermittent.
    let intermittent: BTreeSet<(u32, u32)> = named
        .iter()
        .filter(|entry| entry.kind == PartKind::NicPortIntermittent)
        .map(|entry| (entry.class, entry.port))
        .collect();
    watch_ports.retain(|finding| {
        !intermittent.iter().any(|&(class, port)| {
            catalog.classes[class as usize].label == finding.class
                && catalog.node_of(port) == finding.node
                && finding.device.as_deref() == Some(catalog.ports[port as usize].device.as_str())
        })
    });
    watch_ports.extend(watch_intermittent);
    let mut is_named = vec![false; fit.effects.len()];
    for entry in &named {
        is_named[fit.keys.get(entry.class, entry.port).unwrap_or(0)] = true;
    }
    let peers = peers_of(source, &fit, &named, floor, &shift);
    let mut findings = Vec::new();
    let single = settle_ports(catalog, &fit, &named, &peers, &mut findings);
    name_groups(source, &fit, floor, &mut findings);
    // Single-peer ports are judged with their pair, as links: not explained.
    let mut explained = is_named.clone();
    for &(class, a, b) in &single {
        for port in [a, b] {
            if let Some(key) = fit.keys.get(class, port) {
                explained[key] = false;
            }
        }
    }
    let (pairs, transient_rows) = judge_pairs(source, &fit, floor, config.alpha, &explained, &single);
    let mut retest = Vec::new();
    for pair in pairs {
        let (a, b) = (&catalog.ports[pair.ends.0 as usize], &catalog.ports[pair.ends.1 as usize]);
        let mut finding = Finding::new(
            PartKind::Link,
            &catalog.nodes[a.node as usize],
            &catalog.classes[pair.class as usize].label,
        );
        finding.device = Some(a.device.clone());
        finding.peer_node = Some(catalog.nodes[b.node as usize].clone());
        finding.peer_device = Some(b.device.clone());
        finding.below_pct = below_pct(pair.median);
        finding.pairs = pair.rows;
        finding.peers = 1;
        finding.p_adjusted = Some(pair.p_adjusted);
        finding.low_rows = Some(pair.low);
        if pair.named {
            findings.push(finding);
        } else {
            finding.agreeing_rows_needed = pair.retests;
            retest.push(finding);
        }
    }
    let mut watch: Vec<Finding> = watch_ports;
    for rail in &rails {
        let info = &catalog.classes[rail.class as usize];
        let mut finding = Finding::new(PartKind::Rail, "all", &info.label);
        finding.device = Some(rail.device.clone());
        finding.below_pct = below_pct(2.0 * rail.effect);
        finding.pairs = rail.rows;
        finding.peers = rail.ports.len() as u64;
        finding.z = Some(rail.z);
        finding.p_adjusted = Some((rail.tests * normal::lower_tail(rail.z)).min(1.0));
        let members: BTreeSet<&str> = rail.ports.iter().map(|&port| catalog.node_of(port)).collect();
        finding.members = members.into_iter().map(str::to_string).collect();
        match rail.named {
            true => findings.push(finding),
            false => watch.push(finding),
        }
    }
    missing_evidence(catalog, &fit, &mut findings);
    let class_summaries = summarise_classes(catalog, &fit, config, &transient_rates, &mut findings);
    for list in [&mut findings, &mut watch, &mut retest] {
        list.sort_by(|a, b| {
            (a.kind, &a.node, &a.device, &a.peer_node, &a.peer_device, &a.class).cmp(&(
                b.kind,
                &b.node,
                &b.device,
                &b.peer_node,
                &b.peer_device,
                &b.class,
            ))
        });
    }
    Verdict { classes: class_summaries, findings, watch, retest, transient_rows, sweeps: fit.sweeps }
}

/// The port tests of every class: named ports, and ports to watch. A port on a named or watched
/// rail is judged against its rail.
fn test_ports(
    catalog: &Catalog,
    fit: &Fit,
    config: &JudgeConfig,
    rail_of: &HashMap<(u32, &str), &Rail>,
) -> (Vec<Named>, Vec<Finding>) {
    let floor = (1.0 - config.min_deficit).ln();
    let watch_floor = (1.0 - config.watch_deficit).ln();
    let mut measured = vec![0usize; fit.level.len()];
    for &(class, _) in &fit.keys.pairs {
        measured[class as usize] += 1;
    }
    let mut named = Vec::new();
    let mut watch = Vec::new();
    for (key, &(class, port)) in fit.keys.pairs.iter().enumerate() {
        let noise = fit.noise[class as usize];
        let tests = (3 * measured[class as usize]).max(1) as f64;
        let critical = normal::quantile(config.alpha / tests);
        let z_of = |effect: f64, rows: u32| effect / (1.2533 * noise / f64::from(rows.max(1)).sqrt());
        let p_of = |z: f64| (tests * normal::lower_tail(z)).min(1.0);
        let sure = |effect: f64, rows: u32| rows > 0 && z_of(effect, rows) < critical;
        let low = |effect: f64, rows: u32| effect < floor && sure(effect, rows);
        let device = catalog.ports[port as usize].device.as_str();
        let shift = rail_of.get(&(class, device)).map_or(0.0, |rail| rail.effect);
        let mut effect = fit.effects[key];
        effect.combined -= shift;
        effect.sending -= shift;
        effect.receiving -= shift;
        let both_roles = effect.sending_rows >= 2 && effect.receiving_rows >= 2;
        // The roles told apart: one below the other by half the bar or more, surely.
        let apart = |first: f64, first_rows: u32, second: f64, second_rows: u32| {
            let error = 1.2533 * noise * (1.0 / f64::from(first_rows) + 1.0 / f64::from(second_rows)).sqrt();
            first - second < 0.5 * floor && (first - second) / error < critical
        };
        let sending = both_roles && low(effect.sending, effect.sending_rows);
        let receiving = both_roles && low(effect.receiving, effect.receiving_rows);
        let apart_sending =
            both_roles && apart(effect.sending, effect.sending_rows, effect.receiving, effect.receiving_rows);
        let apart_receiving =
            both_roles && apart(effect.receiving, effect.receiving_rows, effect.sending, effect.sending_rows);
        let (kind, value, rows) = if sending && apart_sending {
            (PartKind::NicPortSending, effect.sending, effect.sending_rows)
        } else if receiving && apart_receiving {
            (PartKind::NicPortReceiving, effect.receiving, effect.receiving_rows)
        } else if sending && receiving {
            (PartKind::NicPort, effect.combined.min(effect.sending.max(effect.receiving)), effect.rows)
        } else if low(effect.combined, effect.rows) {
            (PartKind::NicPort, effect.combined, effect.rows)
        } else {
            if effect.rows >= WATCH_ROWS
                && effect.combined < watch_floor
                && sure(effect.combined, effect.rows)
            {
                let z = z_of(effect.combined, effect.rows);
                let info = &catalog.ports[port as usize];
                let mut finding = Finding::new(
                    PartKind::NicPort,
                    &catalog.nodes[info.node as usize],
                    &catalog.classes[class as usize].label,
                );
                finding.device = Some(info.device.clone());
                finding.gpu_bus_id = info.gpu_bus_id.clone();
                finding.below_pct = below_pct(effect.combined);
                finding.pairs = u64::from(effect.rows);
                finding.z = Some(z);
                finding.p_adjusted = Some(p_of(z));
                watch.push(finding);
            }
            continue;
        };
        let z = z_of(value, rows);
        named.push(Named {
            class,
            port,
            kind,
            effect: value,
            rows,
            z: Some(z),
            p_adjusted: p_of(z),
            low_rows: None,
        });
    }
    (named, watch)
}

/// Ports that dip now and then ([`crate::transient`]): named intermittent (in place of a
/// median-named kind, which few rows can give such a port by chance), or to watch when they dip
/// surely more often than their class but in fewer than [`INTERMITTENT_SHARE`] of their rows.
/// Also returns each class's transient rate.
fn intermittent_ports(
    source: &dyn Source,
    fit: &Fit,
    config: &JudgeConfig,
    named: &mut Vec<Named>,
    shift: &[f64],
) -> (Vec<Finding>, Vec<f64>) {
    let catalog = source.catalog();
    let floor = (1.0 - config.min_deficit).ln();
    let watch_floor = (1.0 - config.watch_deficit).ln();
    let mut is_named = vec![false; fit.effects.len()];
    for entry in named.iter() {
        is_named[fit.keys.get(entry.class, entry.port).unwrap_or(0)] = true;
    }
    let dips = count_dips(source, fit, floor, &is_named, shift);
    let rates: Vec<f64> = dips
        .class_low
        .iter()
        .zip(&dips.class_ends)
        .map(|(&low, &ends)| if ends == 0 { 0.0 } else { low as f64 / ends as f64 })
        .collect();
    let mut measured = vec![0usize; fit.level.len()];
    for &(class, _) in &fit.keys.pairs {
        measured[class as usize] += 1;
    }
    let mut watch = Vec::new();
    let mut intermittent = BTreeSet::new();
    for (key, &(class, port)) in fit.keys.pairs.iter().enumerate() {
        let (low, rows) = (u64::from(dips.low[key]), u64::from(fit.effects[key].rows));
        if low < 3 {
            continue;
        }
        let pi = rate(dips.class_low[class as usize], dips.class_ends[class as usize], low, rows);
        let tests = measured[class as usize].max(1) as f64;
        let p_adjusted = (tests * normal::binomial_upper_tail(low, rows, pi)).min(1.0);
        if p_adjusted >= config.alpha {
            continue;
        }
        let mean_low = dips.low_sum[key] / low as f64;
        if dips.intermittent(key, fit.effects[key].rows, watch_floor) {
            intermittent.insert((class, port));
            named.retain(|entry| (entry.class, entry.port) != (class, port));
            named.push(Named {
                class,
                port,
                kind: PartKind::NicPortIntermittent,
                effect: mean_low,
                rows: fit.effects[key].rows,
                z: None,
                p_adjusted,
                low_rows: Some(low),
            });
        } else if !is_named[key] && (low as f64) < INTERMITTENT_SHARE * rows as f64 {
            let info = &catalog.ports[port as usize];
            let mut finding = Finding::new(
                PartKind::NicPortIntermittent,
                &catalog.nodes[info.node as usize],
                &catalog.classes[class as usize].label,
            );
            finding.device = Some(info.device.clone());
            finding.below_pct = below_pct(mean_low);
            finding.pairs = rows;
            finding.p_adjusted = Some(p_adjusted);
            finding.low_rows = Some(low);
            watch.push(finding);
        }
    }
    (watch, rates)
}

/// Named nodes and ports that are slow only towards the rest ([`find_groups`]): their findings
/// become one, the group, with its member nodes.
fn name_groups(source: &dyn Source, fit: &Fit, floor: f64, findings: &mut Vec<Finding>) {
    let catalog = source.catalog();
    let slow = |kind: PartKind| {
        matches!(kind, PartKind::Node | PartKind::NicPort | PartKind::NicPortOrGpu | PartKind::Gpu)
    };
    let class_of: HashMap<&str, u32> =
        catalog.classes.iter().enumerate().map(|(index, info)| (info.label.as_str(), index as u32)).collect();
    let mut suspects: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for &(class, port) in &fit.keys.pairs {
        let info = &catalog.ports[port as usize];
        let node = &catalog.nodes[info.node as usize];
        let label = &catalog.classes[class as usize].label;
        let hit = findings.iter().any(|finding| {
            slow(finding.kind)
                && &finding.class == label
                && &finding.node == node
                && (finding.kind == PartKind::Node || finding.device.as_deref() == Some(info.device.as_str()))
        });
        if hit {
            suspects.entry(class).or_default().insert(port);
        }
    }
    for group in find_groups(source, fit, &suspects, floor) {
        let label = catalog.classes[group.class as usize].label.clone();
        let nodes: BTreeSet<&str> = group.ports.iter().map(|&port| catalog.node_of(port)).collect();
        let ports: BTreeSet<(&str, &str)> = group
            .ports
            .iter()
            .map(|&port| (catalog.node_of(port), catalog.ports[port as usize].device.as_str()))
            .collect();
        let mut members: Vec<Finding> = Vec::new();
        findings.retain(|finding| {
            let inside = slow(finding.kind)
                && class_of.get(finding.class.as_str()) == Some(&group.class)
                && match finding.kind {
                    PartKind::Node => nodes.contains(finding.node.as_str()),
                    _ => ports.contains(&(finding.node.as_str(), finding.device.as_deref().unwrap_or(""))),
                };
            if inside {
                members.push(finding.clone());
            }
            !inside
        });
        let mut below: Vec<f64> = members.iter().map(|finding| finding.below_pct).collect();
        below.sort_by(f64::total_cmp);
        let mut finding = Finding::new(PartKind::Group, "group", &label);
        finding.below_pct = below.get(below.len() / 2).copied().unwrap_or(0.0);
        finding.pairs = members.iter().map(|finding| finding.pairs).sum();
        finding.peers = group.inside_rows;
        finding.z = members.iter().filter_map(|finding| finding.z).reduce(f64::min);
        finding.p_adjusted = members.iter().filter_map(|finding| finding.p_adjusted).reduce(f64::min);
        finding.members = nodes.into_iter().map(str::to_string).collect();
        findings.push(finding);
    }
}

/// Distinct peer ports of each named port's low rows (one pass, only when a port is named): a
/// port is named from a deficit seen with two peers or more, not from rows with two peers of
/// which one pair holds every low row (a bad link run again, a retest, makes exactly that).
/// An intermittent port counts every peer.
fn peers_of(source: &dyn Source, fit: &Fit, named: &[Named], floor: f64, shift: &[f64]) -> Peers {
    let mut peers: Peers = HashMap::new();
    if named.is_empty() {
        return peers;
    }
    // Per key: 0 not named, 1 named by its median, 2 intermittent.
    let mut wanted = vec![0u8; fit.effects.len()];
    for entry in named {
        let key = fit.keys.get(entry.class, entry.port).unwrap_or(0);
        wanted[key] = if entry.kind == PartKind::NicPortIntermittent { 2 } else { 1 };
    }
    source.visit(&mut |row| {
        let residual = fit.residual(row);
        for (port, peer, sending) in [(row.sender, row.receiver, true), (row.receiver, row.sender, false)] {
            let Some(key) = fit.keys.get(row.class, port) else { continue };
            if wanted[key] == 0 {
                continue;
            }
            let effect = &fit.effects[key];
            let own = if row.directed { effect.in_role(sending) } else { effect.combined };
            if wanted[key] == 2 || residual + own - shift[key] < floor {
                peers.entry((row.class, port)).or_default().insert(peer);
            }
        }
    });
    peers
}

/// Ports and nodes the rows show elsewhere but that have none: a port of a device most nodes
/// (or this node's other classes) have rows on, on a node with rows.
fn missing_evidence(catalog: &Catalog, fit: &Fit, findings: &mut Vec<Finding>) {
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
fn summarise_classes(
    catalog: &Catalog,
    fit: &Fit,
    config: &JudgeConfig,
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
            if level < ceiling * (1.0 - config.ceiling_shortfall) {
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

fn below_pct(effect: f64) -> f64 {
    100.0 * (1.0 - effect.exp())
}

/// Turns named port effects into findings: GPU or NIC port across classes, node within a class.
/// A port with fewer than two distinct peers is not named: its pair is returned, (class, lower
/// port, higher port), to be judged as a link.
fn settle_ports(
    catalog: &Catalog,
    fit: &Fit,
    named: &[Named],
    peers: &Peers,
    findings: &mut Vec<Finding>,
) -> Vec<(u32, u32, u32)> {
    let named_keys: BTreeSet<(u32, u32)> = named.iter().map(|entry| (entry.class, entry.port)).collect();
    // Per class and node: ports measured, ports named.
    let mut per_node: BTreeMap<(u32, u32), (usize, Vec<&Named>)> = BTreeMap::new();
    for &(class, port) in &fit.keys.pairs {
        per_node.entry((class, catalog.ports[port as usize].node)).or_default().0 += 1;
    }
    let mut single = BTreeSet::new();
    for entry in named {
        let set = peers.get(&(entry.class, entry.port));
        match set.map_or(0, BTreeSet::len) {
            0 => {}
            1 => {
                let peer = *set.and_then(|set| set.iter().next()).unwrap_or(&entry.port);
                single.insert((entry.class, entry.port.min(peer), entry.port.max(peer)));
            }
            _ => per_node
                .entry((entry.class, catalog.ports[entry.port as usize].node))
                .or_default()
                .1
                .push(entry),
        }
    }
    for ((class, node), (measured, list)) in per_node {
        if list.is_empty() {
            continue;
        }
        let class_info = &catalog.classes[class as usize];
        let by_median: Vec<&&Named> =
            list.iter().filter(|entry| entry.kind != PartKind::NicPortIntermittent).collect();
        if by_median.len() >= 2 && 2 * by_median.len() > measured {
            let mut effects: Vec<f64> = by_median.iter().map(|entry| entry.effect).collect();
            effects.sort_by(f64::total_cmp);
            let rows: u64 = by_median.iter().map(|entry| u64::from(entry.rows)).sum();
            let z = by_median.iter().filter_map(|entry| entry.z).fold(f64::INFINITY, f64::min);
            let p = by_median.iter().map(|entry| entry.p_adjusted).fold(1.0, f64::min);
            let node_peers: BTreeSet<u32> = by_median
                .iter()
                .flat_map(|entry| peers.get(&(entry.class, entry.port)).into_iter().flatten())
                .map(|&peer| catalog.ports[peer as usize].node)
                .collect();
            let mut finding = Finding::new(PartKind::Node, &catalog.nodes[node as usize], &class_info.label);
            finding.below_pct = below_pct(effects[effects.len() / 2]);
            finding.pairs = rows;
            finding.peers = node_peers.len() as u64;
            finding.z = Some(z);
            finding.p_adjusted = Some(p);
            findings.push(finding);
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
            let mut finding = Finding::new(kind, &catalog.nodes[port.node as usize], &class_info.label);
            finding.device = Some(port.device.clone());
            finding.gpu_bus_id = port.gpu_bus_id.clone();
            finding.below_pct = below_pct(entry.effect);
            finding.pairs = u64::from(entry.rows);
            finding.peers = peers.get(&(entry.class, entry.port)).map_or(0, BTreeSet::len) as u64;
            finding.z = entry.z;
            finding.p_adjusted = Some(entry.p_adjusted);
            finding.low_rows = entry.low_rows;
            findings.push(finding);
        }
    }
    single.into_iter().collect()
}

/// Distinct peer ports of each named port, by class and port.
type Peers = HashMap<(u32, u32), BTreeSet<u32>>;
