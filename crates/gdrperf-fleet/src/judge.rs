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

use crate::evidence::{missing_evidence, summarise_classes};
use crate::fit::{fit, Fit};
use crate::normal;
use crate::observation::{each_row, Catalog, Source};
use crate::shared::{find_rails, name_groups, Rail};
use crate::switch_map::{find_switches, switch_findings, Lifted, SwitchMap};
use crate::transient::{count_dips, judge_pairs, rate, INTERMITTENT_SHARE};
pub use crate::verdict::{ClassSummary, Finding, PartKind, Verdict};

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
    judge_with_switches(source, config, None)
}

/// Judges every class of `source`, with the fabric's switches where the user gave them: a switch
/// slow towards the rest is named as a group ([`crate::switch_map`]), and the rows crossing it
/// are lifted by its deficit before the ports, nodes and links are judged (a second fit), so its
/// nodes are not named again and a fault on them is judged as it would be on a healthy switch.
pub fn judge_with_switches(
    source: &dyn Source,
    config: &JudgeConfig,
    switches: Option<&SwitchMap>,
) -> Verdict {
    let first = fit(source);
    let Some(map) = switches else { return judge_fitted(source, first, config) };
    let floor = (1.0 - config.min_deficit).ln();
    let watch_floor = (1.0 - config.watch_deficit).ln();
    let slow = find_switches(source, &first, map, (floor, watch_floor, config.alpha));
    let mut verdict = match slow.iter().any(|entry| entry.named) {
        true => {
            let lifted = Lifted::new(source, &slow);
            let fit = fit(&lifted);
            judge_fitted(&lifted, fit, config)
        }
        false => judge_fitted(source, first, config),
    };
    switch_findings(source.catalog(), map, &slow, &mut verdict);
    verdict
}

/// Judges every class of `source`, given its fit.
fn judge_fitted(source: &dyn Source, fit: Fit, config: &JudgeConfig) -> Verdict {
    let catalog = source.catalog();
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
    let (watch_intermittent, transient_rates, class_dips) =
        intermittent_ports(source, &fit, config, &mut named, &shift);
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
    let unproven = settle_ports(catalog, &fit, &named, &peers, (&class_dips, config.alpha), &mut findings);
    name_groups(source, &fit, floor, &mut findings);
    // Ports their peers do not prove are judged with each peer they were low with, as links: not
    // explained (their peers, when named and proven, stay explained).
    let mut explained = is_named.clone();
    for &(class, port, _) in &unproven {
        if let Some(key) = fit.keys.get(class, port) {
            explained[key] = false;
        }
    }
    let pairs_of_unproven: BTreeSet<(u32, u32, u32)> =
        unproven.iter().map(|&(class, port, peer)| (class, port.min(peer), port.max(peer))).collect();
    let pairs_of_unproven: Vec<(u32, u32, u32)> = pairs_of_unproven.into_iter().collect();
    let (pairs, transient_rows) =
        judge_pairs(source, &fit, (floor, config.alpha), &explained, &pairs_of_unproven, &shift);
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
    let class_summaries =
        summarise_classes(catalog, &fit, config.ceiling_shortfall, &transient_rates, &mut findings);
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
/// Also returns each class's transient rate, and its low row ends and row ends (ports not named
/// by their median).
fn intermittent_ports(
    source: &dyn Source,
    fit: &Fit,
    config: &JudgeConfig,
    named: &mut Vec<Named>,
    shift: &[f64],
) -> (Vec<Finding>, Vec<f64>, Vec<(u64, u64)>) {
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
        } else if !is_named[key]
            && (low as f64) < INTERMITTENT_SHARE * rows as f64
            && fit.effects[key].combined - shift[key] >= watch_floor
        {
            // (A port whose median is itself below the watch bar is watched by it: its extra low
            // rows are its deficit, not dips.)
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
    let counts = dips.class_low.iter().copied().zip(dips.class_ends.iter().copied()).collect();
    (watch, rates, counts)
}

/// Each named port's rows by peer port and role (one pass, only when a port is named): a port
/// is named from the peers it was low with, one vote a peer, not from its rows (a bad link run
/// again, a retest, gives one peer many low rows).
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
    let fit = fit.view();
    each_row(source, |row| {
        // Whether either end is named, asked before the residual is computed: most rows have none.
        let named_end = |port: u32| fit.keys.get(row.class, port).is_some_and(|key| wanted[key] != 0);
        if !named_end(row.sender) && !named_end(row.receiver) {
            return;
        }
        let residual = fit.residual(row);
        for (port, peer, sending) in [(row.sender, row.receiver, true), (row.receiver, row.sender, false)] {
            let Some(key) = fit.keys.get(row.class, port) else { continue };
            if wanted[key] == 0 {
                continue;
            }
            let effect = &fit.effects[key];
            let own = if row.directed { effect.in_role(sending) } else { effect.combined };
            let low = residual + own - shift[key] < floor;
            let vote = peers.entry((row.class, port)).or_default().entry(peer).or_default();
            let role = match (row.directed, sending) {
                (false, _) => None,
                (true, true) => Some(1),
                (true, false) => Some(2),
            };
            for index in std::iter::once(0).chain(role) {
                vote.rows[index] += 1;
                vote.low[index] += u32::from(low);
            }
        }
    });
    peers
}

/// A port's rows with one peer, all (0), sending (1) and receiving (2), and how many were low.
#[derive(Debug, Default, Clone, Copy)]
struct Vote {
    rows: [u32; 3],
    low: [u32; 3],
}

/// A named port's peers in the role it was named in (0 all, 1 sending, 2 receiving): those it
/// was low with in half their rows or more (a port near the bar, low sending and not quite
/// receiving, is low with each peer it met both ways), or in any row (`any`: an intermittent
/// port), and all.
fn low_peers(votes: Option<&BTreeMap<u32, Vote>>, role: usize, any: bool) -> (Vec<u32>, u64) {
    let Some(votes) = votes else { return (Vec::new(), 0) };
    let low = votes
        .iter()
        .filter(|(_, vote)| vote.low[role] > 0 && (any || 2 * vote.low[role] >= vote.rows[role]))
        .map(|(&peer, _)| peer)
        .collect();
    (low, votes.values().filter(|vote| vote.rows[role] > 0).count() as u64)
}

/// The role a kind was named in: 1 sending, 2 receiving, 0 both or either.
fn role_of(kind: PartKind) -> usize {
    match kind {
        PartKind::NicPortSending => 1,
        PartKind::NicPortReceiving => 2,
        _ => 0,
    }
}

fn below_pct(effect: f64) -> f64 {
    100.0 * (1.0 - effect.exp())
}

/// Turns named port effects into findings: GPU or NIC port across classes, node within a class.
/// A port its peers do not prove ([`prove`]) is not named: it is returned with each peer it was
/// low with, (class, port, peer), those pairs to be judged as links.
fn settle_ports(
    catalog: &Catalog,
    fit: &Fit,
    named: &[Named],
    peers: &Peers,
    (class_dips, alpha): (&[(u64, u64)], f64),
    findings: &mut Vec<Finding>,
) -> Vec<(u32, u32, u32)> {
    let named_keys: BTreeSet<(u32, u32)> = named.iter().map(|entry| (entry.class, entry.port)).collect();
    // Per class and node: ports measured, ports named.
    let mut per_node: BTreeMap<(u32, u32), (usize, Vec<&Named>)> = BTreeMap::new();
    let mut measured = vec![0usize; fit.level.len()];
    for &(class, port) in &fit.keys.pairs {
        per_node.entry((class, catalog.ports[port as usize].node)).or_default().0 += 1;
        measured[class as usize] += 1;
    }
    let mut unproven = BTreeSet::new();
    let mut low_peer_count: HashMap<(u32, u32), usize> = HashMap::new();
    for entry in named {
        let tests = (3 * measured[entry.class as usize]).max(1) as f64;
        let (class_low, class_ends) = class_dips[entry.class as usize];
        let proof = prove(entry, peers, (class_low, class_ends), tests, alpha);
        low_peer_count.insert((entry.class, entry.port), proof.low_peers.len());
        if proof.proven {
            per_node.entry((entry.class, catalog.ports[entry.port as usize].node)).or_default().1.push(entry);
        } else {
            unproven.extend(proof.low_peers.iter().map(|&peer| (entry.class, entry.port, peer)));
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
                .flat_map(|entry| peers.get(&(entry.class, entry.port)).into_iter().flat_map(BTreeMap::keys))
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
            finding.peers = low_peer_count.get(&(entry.class, entry.port)).copied().unwrap_or(0) as u64;
            finding.z = entry.z;
            finding.p_adjusted = Some(entry.p_adjusted);
            finding.low_rows = entry.low_rows;
            findings.push(finding);
        }
    }
    unproven.into_iter().collect()
}

/// Each named port's rows by peer port, by class and port.
type Peers = HashMap<(u32, u32), BTreeMap<u32, Vote>>;

/// What a named port's peers say: whether they prove it (more of them low than the class's
/// transient rate explains), and which peers it was low with.
struct Proof {
    proven: bool,
    low_peers: Vec<u32>,
}

/// A port named by its median is proven by its peers ([`low_peers`], in the role it was named
/// in) when it was low with two or more, with most of those it met in that role, and with more
/// than the class's transient rate explains ([`crate::transient::rate`] of `class_dips`, the
/// class's low row ends and row ends; an intermittent port's own rows, both ends, left out):
/// Binomial(peers, rate) upper tail, Bonferroni over the `tests` of the class. Locate's few
/// peers a port, with 2 % of pair runs dipped (every lane at once), named a node from two dipped
/// pair runs and a bad link's end from its retests and one dip (results/fleet/noise.md). An
/// intermittent port is proven by three peers or more it was low with at least once, beyond the
/// rate, in any share (a bad link's end whose pair was retested has its low rows with one peer).
fn prove(entry: &Named, peers: &Peers, class_dips: (u64, u64), tests: f64, alpha: f64) -> Proof {
    let votes = peers.get(&(entry.class, entry.port));
    let intermittent = entry.kind == PartKind::NicPortIntermittent;
    let rate = match (intermittent, votes) {
        (true, Some(votes)) => {
            let low: u64 = votes.values().map(|vote| u64::from(vote.low[0])).sum();
            let rows: u64 = votes.values().map(|vote| u64::from(vote.rows[0])).sum();
            rate(class_dips.0, class_dips.1, 2 * low, 2 * rows)
        }
        _ => rate(class_dips.0, class_dips.1, 0, 0),
    };
    let (low_peers, met) = low_peers(votes, role_of(entry.kind), intermittent);
    let count = low_peers.len() as u64;
    let unexplained = tests * normal::binomial_upper_tail(count, met, rate) < alpha;
    let proven = match intermittent {
        true => count >= 3 && unexplained,
        false => count >= 2 && 2 * count > met && unexplained,
    };
    Proof { proven, low_peers }
}
