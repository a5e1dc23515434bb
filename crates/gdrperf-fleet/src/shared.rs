//! Parts that many ports share: a **rail** (every port of lane k, across nodes, through one rail
//! switch), named once with its members instead of as N ports or, as before, nothing.
//!
//! `gdrperf slurm` runs lane k of one node against lane k of the other, so every row of a rail
//! has both ends on it and a rail switch at 80 % puts each of its ports' effects at half the
//! deficit (ln 0.8 / 2: 10.6 %, under a 15 % bar, which is why no port was named). A rail is the
//! ports of one RDMA device name in a class; its effect is the median of its ports' effects, and
//! its rows' deficit twice that. It is named when that deficit is beyond `min_deficit` and sure
//! (z of the median over all the rail's rows, at a median-of-medians' standard error of
//! 1.2533^2 x noise / sqrt(rows), Bonferroni over the rails of the class), listed to watch when
//! beyond the watch bar and sure. A class of one device has no rail to tell from the class.
//! Ports on a rail named or watched are judged against the rail (their effect less its effect),
//! so the rail's ports are not each named or watched again.
//!
//! A **group** of nodes slow only towards the rest (a leaf switch's uplinks, a spine port) makes
//! each of its nodes look slow (most of its rows go outside the group), while the rows among
//! them are at the class level. Inferred from the pair matrix ([`find_groups`]): among the nodes
//! named slow in a class, two are joined when their rows with each other are within the bar of
//! the level; a joined set of two or more is named once, as a group with its members, instead of
//! its nodes. It needs rows among the group's nodes (all-pairs has them; locate rarely pairs two
//! suspects) and a group that is a minority (behind half the fleet, the medians are the group's).
//! No switch map is read.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::fit::Fit;
use crate::normal;
use crate::observation::{each_row, Catalog, Source};
use crate::verdict::{Finding, PartKind};

/// A rail that stands out.
#[derive(Debug, Clone)]
pub struct Rail {
    pub class: u32,
    pub device: String,
    /// The median effect of its ports (log units, per end).
    pub effect: f64,
    pub rows: u64,
    pub z: f64,
    pub tests: f64,
    /// Beyond `min_deficit` (else beyond the watch bar only).
    pub named: bool,
    /// Its ports (by index).
    pub ports: Vec<u32>,
}

/// The rails of every class that are named or to watch; `floor` and `watch_floor` are log
/// deficits of a row.
pub fn find_rails(catalog: &Catalog, fit: &Fit, floor: f64, watch_floor: f64, alpha: f64) -> Vec<Rail> {
    // (class, device) -> ports with rows.
    let mut groups: BTreeMap<(u32, &str), Vec<u32>> = BTreeMap::new();
    for &(class, port) in &fit.keys.pairs {
        groups.entry((class, catalog.ports[port as usize].device.as_str())).or_default().push(port);
    }
    let mut devices: BTreeMap<u32, usize> = BTreeMap::new();
    for &(class, _) in groups.keys() {
        *devices.entry(class).or_default() += 1;
    }
    let mut rails = Vec::new();
    for ((class, device), ports) in groups {
        let count = devices[&class];
        if count < 2 || ports.len() < 3 {
            continue;
        }
        let mut effects: Vec<f64> = ports.iter().map(|&port| fit.effect(class, port).combined).collect();
        effects.sort_by(f64::total_cmp);
        let effect = effects[effects.len() / 2];
        let rows: u64 = ports.iter().map(|&port| u64::from(fit.effect(class, port).rows)).sum();
        let noise = fit.noise[class as usize];
        let z = effect / (1.2533 * 1.2533 * noise / (rows.max(1) as f64).sqrt());
        let tests = count as f64;
        let sure = z < normal::quantile(alpha / tests);
        if sure && 2.0 * effect < watch_floor {
            rails.push(Rail {
                class,
                device: device.to_string(),
                effect,
                rows: rows / 2,
                z,
                tests,
                named: 2.0 * effect < floor,
                ports,
            });
        }
    }
    rails
}

/// A group of nodes slow only towards the rest (a leaf switch's uplinks, a spine port): its
/// ports named as slow, yet the rows among them at the class level.
#[derive(Debug, Clone)]
pub struct Group {
    pub class: u32,
    /// The ports joined, sorted; two nodes or more among them.
    pub ports: Vec<u32>,
    /// Rows among the group's ports.
    pub inside_rows: u64,
}

/// Groups among `suspects` (per class, the ports named slow, or every port of a node named):
/// two suspects are joined when the rows between them are, at the median, within `floor` of the
/// class level (two slow parts meet each other lower still: not joined; ports of different
/// lanes do not meet at all), and so are the suspect ports of one node; the joined sets spanning
/// two nodes or more are groups. One pass
/// over the rows, keeping only rows between suspects of their class.
pub fn find_groups(
    source: &dyn Source,
    fit: &Fit,
    suspects: &BTreeMap<u32, BTreeSet<u32>>,
    floor: f64,
) -> Vec<Group> {
    if suspects.values().all(|ports| ports.len() < 2) {
        return Vec::new();
    }
    let catalog = source.catalog();
    // Fx's hash: one lookup a row between suspects; the keys are sorted before use.
    let mut between: rustc_hash::FxHashMap<(u32, u32, u32), Vec<f32>> = Default::default();
    // Per key of the fit: whether its (class, port) is a suspect (a flag a row's end, where the
    // sets were asked twice a row; a port with no rows has no key and meets no row).
    let mut suspect = vec![false; fit.effects.len()];
    for (&class, ports) in suspects {
        for &port in ports {
            if let Some(key) = fit.keys.get(class, port) {
                suspect[key] = true;
            }
        }
    }
    let keys = fit.keys.view();
    let is_suspect = |class: u32, port: u32| keys.get(class, port).is_some_and(|key| suspect[key]);
    each_row(source, |row| {
        let (a, b) = (row.sender, row.receiver);
        if is_suspect(row.class, a) && is_suspect(row.class, b) {
            let value = f64::from(row.log_gbps) - fit.level[row.class as usize];
            between.entry((row.class, a.min(b), a.max(b))).or_default().push(value as f32);
        }
    });
    fn root(parent: &mut [usize], mut at: usize) -> usize {
        while parent[at] != at {
            parent[at] = parent[parent[at]];
            at = parent[at];
        }
        at
    }
    let mut keys: Vec<(u32, u32, u32)> = between.keys().copied().collect();
    keys.sort_unstable();
    let mut groups = Vec::new();
    for (&class, ports) in suspects {
        let list: Vec<u32> = ports.iter().copied().collect();
        let position: HashMap<u32, usize> =
            list.iter().enumerate().map(|(index, &port)| (port, index)).collect();
        let mut parent: Vec<usize> = (0..list.len()).collect();
        let mut rows_of: Vec<u64> = vec![0; list.len()];
        for key in keys.iter().filter(|key| key.0 == class) {
            let values = between.get_mut(key).map(std::mem::take).unwrap_or_default();
            let mut values = values;
            values.sort_by(f32::total_cmp);
            if values.is_empty() || f64::from(values[values.len() / 2]) <= floor {
                continue;
            }
            let (i, j) = (position[&key.1], position[&key.2]);
            let (x, y) = (root(&mut parent, i), root(&mut parent, j));
            parent[x] = y;
            rows_of[i] += values.len() as u64;
        }
        // Ports of one node are of one group (a leaf holds whole nodes).
        let mut first_of_node: HashMap<u32, usize> = HashMap::new();
        for (i, &port) in list.iter().enumerate() {
            let first = *first_of_node.entry(catalog.ports[port as usize].node).or_insert(i);
            let (x, y) = (root(&mut parent, i), root(&mut parent, first));
            parent[x] = y;
        }
        let mut members: BTreeMap<usize, (Vec<u32>, u64)> = BTreeMap::new();
        for (i, &port) in list.iter().enumerate() {
            let top = root(&mut parent, i);
            let entry = members.entry(top).or_default();
            entry.0.push(port);
            entry.1 += rows_of[i];
        }
        for (ports, inside_rows) in members.into_values() {
            let nodes: BTreeSet<u32> = ports.iter().map(|&port| catalog.ports[port as usize].node).collect();
            if nodes.len() >= 2 {
                groups.push(Group { class, ports, inside_rows });
            }
        }
    }
    groups
}

/// Named nodes and ports that are slow only towards the rest ([`find_groups`]): their findings
/// become one, the group, with its member nodes.
pub(crate) fn name_groups(source: &dyn Source, fit: &Fit, floor: f64, findings: &mut Vec<Finding>) {
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
        finding.group_from = Some(crate::verdict::GroupOrigin::PairMatrix);
        findings.push(finding);
    }
}
