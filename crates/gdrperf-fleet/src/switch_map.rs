//! A switch map the user gives (`gdrperf fleet judge --topology FILE`, Slurm's `topology.conf`
//! format): each switch's nodes are a group, and a switch slow towards the rest of the fabric (a
//! leaf's uplinks, a spine port, the link between two halves of the fleet) is named once, as a
//! group with its members, instead of as its nodes one by one or, when half the fleet is behind
//! it, as nothing.
//!
//! Without a map, the groups rack-style node names give are tested the same way
//! ([`crate::node_names`]: a map of origin [`GroupOrigin::NodeNames`]), and groups are inferred
//! from the pair matrix among the nodes already named ([`crate::shared`]); that cannot see a
//! group behind half the fleet, whose rows set the medians
//! every effect is measured from. With a map the test needs no named node: for each switch S of a
//! class, the rows **crossing** S (one end in S) are compared with the rest (both ends in S, or
//! both outside): d = median(crossing) - median(rest), in log bandwidth. S is named when d is more
//! than `min_deficit` below, surely (z = d / (1.2533 x noise x sqrt(1/crossing + 1/rest)), the
//! class's robust noise, Bonferroni over every switch of the class), and more than half of its
//! members (two or more with crossing rows) have their own crossing median below the rest by the
//! bar (so one slow node on a small switch stays a node). Sure and only beyond `watch_deficit`:
//! listed to watch. A switch whose nodes are the complement of a named one (two halves of the
//! fleet) has the same crossing rows: it is not named again. Once a switch is named, the rows
//! crossing it are lifted by its deficit (`Lifted`) and the judge fits and judges the ports,
//! nodes and links on those: the switch's nodes are not named again for it, and a port of theirs
//! slow on its own (or only when sending) is judged as it would be behind a healthy switch.
//!
//! Switches are tested level by level from the top (`Switches=` lines) down to the leaves
//! (`Nodes=`). A level's test leaves out the rows crossing a switch named above it (they are
//! explained), so the leaves of a slow spine are not each named again; a spine holding one slow
//! leaf among several is not named, as its members are mostly not low. Medians come from histograms of 0.005 (about
//! half a percent) in log bandwidth, per switch and per member: memory grows with the switches
//! and the nodes under them, not with the rows.
//!
//! What it cannot tell: a map that is wrong (a node under the wrong leaf) makes its node a slow
//! member of the other group; a switch slow only in one direction is named as slow both ways
//! (crossing rows are not split by direction); rows are not independent (one node's rows share
//! its port), so the z is optimistic for a switch of few nodes, which the "most members" rule is
//! for.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use gdrperf_cluster::hostlist;

use crate::fit::Fit;
use crate::normal;
use crate::observation::{each_row, Catalog, Observation, Source};
pub use crate::verdict::GroupOrigin;
use crate::verdict::{Finding, PartKind, Verdict};

/// Why a switch map could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SwitchMapError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path} line {line}: {reason}")]
    Line { path: PathBuf, line: usize, reason: String },
    #[error("{path}: no switch with nodes (lines like `SwitchName=leaf1 Nodes=node[01-16]`)")]
    Empty { path: PathBuf },
}

/// One switch and every node under it (through the switches below it, for an upper switch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switch {
    pub name: String,
    pub nodes: BTreeSet<String>,
    /// 0 for a switch with nodes, 1 + the highest of its children otherwise.
    pub level: usize,
}

/// The switches of a fabric (or the groups the node names give).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwitchMap {
    pub switches: Vec<Switch>,
    /// Where the groups came from: a topology file, or the node names.
    pub origin: GroupOrigin,
}

/// More switches than this is not a fabric's map (every test is one more for Bonferroni, and each
/// holds histograms).
pub const MAX_SWITCHES: usize = 100_000;

/// More nodes under switches than this, counting a node once per switch above it, is not a
/// fabric's map: 65 536 nodes under four levels. The judge holds a 2 KB histogram per such place
/// and class with crossing rows, so this bounds what a map can ask for (512 MB a class).
pub const MAX_PLACES: usize = 1 << 18;

impl SwitchMap {
    /// Reads Slurm's `topology.conf` format: one switch a line, `SwitchName=NAME` with `Nodes=`
    /// (a hostlist) or `Switches=` (a hostlist of switch names); other keys (`LinkSpeed=`) and
    /// `#` comments are ignored.
    pub fn read(path: &Path) -> Result<SwitchMap, SwitchMapError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| SwitchMapError::Io { path: path.into(), source })?;
        SwitchMap::parse(&text)
            .map_err(|(line, reason)| SwitchMapError::Line { path: path.into(), line, reason })
            .and_then(|map| match map.switches.is_empty() {
                true => Err(SwitchMapError::Empty { path: path.into() }),
                false => Ok(map),
            })
    }

    /// [`SwitchMap::read`] on text; an error carries its line number (from 1).
    pub fn parse(text: &str) -> Result<SwitchMap, (usize, String)> {
        // name -> (line, nodes, child switches)
        let mut lines: BTreeMap<String, (usize, Vec<String>, Vec<String>)> = BTreeMap::new();
        let mut order = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let (mut name, mut nodes, mut children) = (None, Vec::new(), Vec::new());
            for token in line.split_whitespace() {
                let Some((key, value)) = token.split_once('=') else {
                    return Err((number, format!("`{token}` is not KEY=VALUE")));
                };
                let expand =
                    |value: &str| hostlist::expand(value).map_err(|error| (number, error.to_string()));
                match key.to_ascii_lowercase().as_str() {
                    "switchname" => name = Some(gdrperf_files::printable(value)),
                    "nodes" => {
                        nodes = expand(value)?.iter().map(|node| gdrperf_files::printable(node)).collect()
                    }
                    "switches" => {
                        children =
                            expand(value)?.iter().map(|child| gdrperf_files::printable(child)).collect()
                    }
                    _ => {}
                }
            }
            let Some(name) = name else { return Err((number, "no SwitchName=".to_string())) };
            if lines.contains_key(&name) {
                return Err((number, format!("switch `{name}` given twice")));
            }
            if lines.len() >= MAX_SWITCHES {
                return Err((number, format!("more than {MAX_SWITCHES} switches")));
            }
            order.push(name.clone());
            lines.insert(name, (number, nodes, children));
        }
        // Each switch's nodes and level, children first (a cycle or an unknown child is an error).
        let mut done: HashMap<String, (BTreeSet<String>, usize)> = HashMap::new();
        fn resolve(
            name: &str,
            lines: &BTreeMap<String, (usize, Vec<String>, Vec<String>)>,
            done: &mut HashMap<String, (BTreeSet<String>, usize)>,
            path: &mut Vec<String>,
        ) -> Result<(), (usize, String)> {
            if done.contains_key(name) {
                return Ok(());
            }
            let (line, nodes, children) = &lines[name];
            if path.iter().any(|seen| seen == name) {
                return Err((*line, format!("switch `{name}` is under itself")));
            }
            path.push(name.to_string());
            let mut all: BTreeSet<String> = nodes.iter().cloned().collect();
            let mut level = 0;
            for child in children {
                if !lines.contains_key(child) {
                    return Err((*line, format!("switch `{name}` holds `{child}`, which no line names")));
                }
                resolve(child, lines, done, path)?;
                let (child_nodes, child_level) = &done[child];
                all.extend(child_nodes.iter().cloned());
                level = level.max(child_level + 1);
            }
            path.pop();
            done.insert(name.to_string(), (all, level));
            Ok(())
        }
        for name in &order {
            resolve(name, &lines, &mut done, &mut Vec::new())?;
        }
        let mut switches = Vec::new();
        let mut places = 0;
        for name in order {
            let Some((nodes, level)) = done.remove(&name) else { continue };
            places += nodes.len();
            if places > MAX_PLACES {
                let line = lines[&name].0;
                return Err((
                    line,
                    format!(
                        "more than {MAX_PLACES} nodes under switches in all (a node counts once a switch)"
                    ),
                ));
            }
            if !nodes.is_empty() {
                switches.push(Switch { name, nodes, level });
            }
        }
        Ok(SwitchMap { switches, origin: GroupOrigin::TopologyFile })
    }

    /// How many of the rows' nodes are under a switch, of how many: a map whose names are not
    /// the rows' (`node01` against `node01.cluster`) covers none.
    pub fn coverage(&self, catalog: &Catalog) -> (usize, usize) {
        (self.covered(&catalog.nodes), catalog.nodes.len())
    }

    /// How many of `nodes` are under a switch (a job's nodes, before it has rows).
    pub fn covered(&self, nodes: &[String]) -> usize {
        let mapped: BTreeSet<&str> =
            self.switches.iter().flat_map(|switch| switch.nodes.iter().map(String::as_str)).collect();
        nodes.iter().filter(|node| mapped.contains(node.as_str())).count()
    }
}

/// Bins of a median's histogram: log bandwidth relative to the class level, 0.005 wide, from
/// -2.0 (13 % of the level) to +0.5; values beyond fall in the end bins.
const BINS: usize = 500;
const BIN_WIDTH: f64 = 0.005;
const LOWEST: f64 = -2.0;

#[derive(Clone)]
struct Histogram {
    counts: Vec<u32>,
    total: u64,
}

impl Histogram {
    fn new() -> Histogram {
        Histogram { counts: vec![0; BINS], total: 0 }
    }

    fn add(&mut self, value: f64) {
        let bin = ((value - LOWEST) / BIN_WIDTH).floor().clamp(0.0, (BINS - 1) as f64) as usize;
        self.counts[bin] += 1;
        self.total += 1;
    }

    /// The median, to a bin's centre, of `self` less `minus` (a population with a part taken out).
    fn median_less(&self, minus: Option<&Histogram>) -> Option<f64> {
        let count = |bin: usize| u64::from(self.counts[bin]) - minus.map_or(0, |m| u64::from(m.counts[bin]));
        let total = self.total - minus.map_or(0, |m| m.total);
        if total == 0 {
            return None;
        }
        let mut seen = 0;
        for bin in 0..BINS {
            seen += count(bin);
            if 2 * seen >= total {
                return Some(LOWEST + (bin as f64 + 0.5) * BIN_WIDTH);
            }
        }
        None
    }
}

/// A switch that stands out in a class.
#[derive(Debug, Clone)]
pub(crate) struct SlowSwitch {
    class: u32,
    switch: usize,
    /// Its crossing rows' median less the rest's (log units).
    deficit: f64,
    z: f64,
    crossing: u64,
    inside: u64,
    /// Beyond the bar (else beyond the watch bar only).
    pub(crate) named: bool,
    /// Its nodes (catalog indices).
    members: Vec<u32>,
}

/// Tests every switch of `map` in every class of `source`: those named or to watch. `floor` and
/// `watch_floor` are log deficits of a row.
pub(crate) fn find_switches(
    source: &dyn Source,
    fit: &Fit,
    map: &SwitchMap,
    (floor, watch_floor, alpha): (f64, f64, f64),
) -> Vec<SlowSwitch> {
    let catalog = source.catalog();
    let classes = fit.level.len();
    let index_of: HashMap<&str, u32> =
        catalog.nodes.iter().enumerate().map(|(index, name)| (name.as_str(), index as u32)).collect();
    // Per switch: its members among the nodes with rows.
    let members: Vec<Vec<u32>> = map
        .switches
        .iter()
        .map(|switch| switch.nodes.iter().filter_map(|node| index_of.get(node.as_str()).copied()).collect())
        .collect();
    let tests = map.switches.len().max(1) as f64;
    let critical = normal::quantile(alpha / tests);
    let levels = map.switches.iter().map(|switch| switch.level).max().unwrap_or(0);
    // Per class and node: the named switches (of a higher level) it is on; a row whose ends
    // differ there crosses a named switch, is explained, and is left out below it.
    let mut named_on: Vec<Vec<Vec<usize>>> = vec![vec![Vec::new(); catalog.nodes.len()]; classes];
    let mut slow: Vec<SlowSwitch> = Vec::new();
    for level in (0..=levels).rev() {
        let at_level: Vec<usize> = (0..map.switches.len())
            .filter(|&switch| map.switches[switch].level == level && members[switch].len() >= 2)
            .collect();
        if at_level.is_empty() {
            continue;
        }
        // Node -> (slot among at_level, the member's slot) for the switches of this level.
        let mut on: Vec<Vec<(usize, usize)>> = vec![Vec::new(); catalog.nodes.len()];
        for (slot, &switch) in at_level.iter().enumerate() {
            for (member, &node) in members[switch].iter().enumerate() {
                on[node as usize].push((slot, member));
            }
        }
        let mut total: HashMap<u32, Histogram> = HashMap::new();
        let mut crossing: HashMap<(u32, usize), Histogram> = HashMap::new();
        let mut by_member: HashMap<(u32, usize, usize), Histogram> = HashMap::new();
        let mut inside: HashMap<(u32, usize), u64> = HashMap::new();
        let mut seen: Vec<Vec<bool>> = vec![vec![false; catalog.nodes.len()]; classes];
        each_row(source, |row| {
            let class = row.class;
            let a = catalog.ports[row.sender as usize].node as usize;
            let b = catalog.ports[row.receiver as usize].node as usize;
            let named_here = &named_on[class as usize];
            if named_here[a] != named_here[b] {
                return;
            }
            seen[class as usize][a] = true;
            seen[class as usize][b] = true;
            let value = f64::from(row.log_gbps) - fit.level[class as usize];
            total.entry(class).or_insert_with(Histogram::new).add(value);
            for (end, other) in [(a, b), (b, a)] {
                for &(slot, member) in &on[end] {
                    if on[other].iter().any(|&(other_slot, _)| other_slot == slot) {
                        if end == a {
                            *inside.entry((class, slot)).or_default() += 1;
                        }
                        continue;
                    }
                    crossing.entry((class, slot)).or_insert_with(Histogram::new).add(value);
                    by_member.entry((class, slot, member)).or_insert_with(Histogram::new).add(value);
                }
            }
        });
        let mut keys: Vec<(u32, usize)> = crossing.keys().copied().collect();
        keys.sort_unstable();
        let first_of_level = slow.len();
        for (class, slot) in keys {
            let switch = at_level[slot];
            let cross = &crossing[&(class, slot)];
            let all = &total[&class];
            let rest_rows = all.total - cross.total;
            if cross.total < 4 || rest_rows < 4 {
                continue;
            }
            let (Some(cross_median), Some(rest_median)) =
                (cross.median_less(None), all.median_less(Some(cross)))
            else {
                continue;
            };
            let deficit = cross_median - rest_median;
            let noise = fit.noise[class as usize].max(BIN_WIDTH);
            let error = 1.2533 * noise * (1.0 / cross.total as f64 + 1.0 / rest_rows as f64).sqrt();
            let z = deficit / error;
            if deficit >= watch_floor || z >= critical {
                continue;
            }
            // Most members low by themselves, two or more.
            let bar = if deficit < floor { floor } else { watch_floor };
            let (mut with_rows, mut low) = (0, 0);
            for member in 0..members[switch].len() {
                if let Some(median) = by_member.get(&(class, slot, member)).and_then(|h| h.median_less(None))
                {
                    with_rows += 1;
                    low += usize::from(median - rest_median < bar);
                }
            }
            if with_rows < 2 || 2 * low <= with_rows {
                continue;
            }
            // The complement of a switch named at this level: the same crossing rows.
            let present: BTreeSet<u32> = members[switch].iter().copied().collect();
            let nodes_in_class = seen[class as usize].iter().filter(|&&seen| seen).count();
            let complement = slow[first_of_level..].iter().any(|other| {
                other.class == class
                    && other.named
                    && members[other.switch].iter().all(|node| !present.contains(node))
                    && members[other.switch].len() + present.len() >= nodes_in_class
            });
            if complement {
                continue;
            }
            slow.push(SlowSwitch {
                class,
                switch,
                deficit,
                z,
                crossing: cross.total,
                inside: inside.get(&(class, slot)).copied().unwrap_or(0),
                named: deficit < floor,
                members: members[switch].clone(),
            });
        }
        for entry in slow[first_of_level..].iter().filter(|entry| entry.named) {
            for &node in &members[entry.switch] {
                named_on[entry.class as usize][node as usize].push(entry.switch);
            }
        }
    }
    slow
}

/// The source with every row crossing a named switch of its class lifted by the switch's
/// deficit: what the ports, nodes and links are judged on once the switch is named.
pub(crate) struct Lifted<'a> {
    inner: &'a dyn Source,
    /// Per class, per node: the named switches (index into `deficits`) it is on.
    named_on: Vec<Vec<Vec<usize>>>,
    deficits: Vec<f64>,
}

impl<'a> Lifted<'a> {
    pub(crate) fn new(inner: &'a dyn Source, slow: &[SlowSwitch]) -> Lifted<'a> {
        let catalog = inner.catalog();
        let classes = catalog.classes.len();
        let mut named_on = vec![vec![Vec::new(); catalog.nodes.len()]; classes];
        let mut deficits = Vec::new();
        for entry in slow.iter().filter(|entry| entry.named) {
            for &node in &entry.members {
                named_on[entry.class as usize][node as usize].push(deficits.len());
            }
            deficits.push(entry.deficit);
        }
        Lifted { inner, named_on, deficits }
    }
}

impl Source for Lifted<'_> {
    fn catalog(&self) -> &Catalog {
        self.inner.catalog()
    }

    fn visit(&self, visit: &mut dyn FnMut(&Observation)) {
        let catalog = self.inner.catalog();
        self.inner.visit(&mut |row| {
            let on = &self.named_on[row.class as usize];
            let a = &on[catalog.ports[row.sender as usize].node as usize];
            let b = &on[catalog.ports[row.receiver as usize].node as usize];
            if a == b {
                return visit(row);
            }
            let crossed: f64 = a
                .iter()
                .filter(|switch| !b.contains(switch))
                .chain(b.iter().filter(|switch| !a.contains(switch)))
                .map(|&switch| self.deficits[switch])
                .sum();
            let mut lifted = *row;
            lifted.log_gbps = (f64::from(row.log_gbps) - crossed) as f32;
            visit(&lifted);
        });
    }
}

/// The switches named or to watch, as group findings with their members, into `verdict`.
pub(crate) fn switch_findings(
    catalog: &Catalog,
    map: &SwitchMap,
    slow: &[SlowSwitch],
    verdict: &mut Verdict,
) {
    let tests = map.switches.len().max(1) as f64;
    for entry in slow {
        let label = catalog.classes[entry.class as usize].label.clone();
        let switch = &map.switches[entry.switch];
        let name = match map.origin {
            GroupOrigin::TopologyFile => format!("switch {}", switch.name),
            _ => format!("group {}", switch.name),
        };
        let mut finding = Finding::new(PartKind::Group, &name, &label);
        finding.group_from = Some(map.origin);
        finding.below_pct = 100.0 * (1.0 - entry.deficit.exp());
        finding.pairs = entry.crossing;
        finding.peers = entry.inside;
        finding.z = Some(entry.z);
        finding.p_adjusted = Some((tests * normal::lower_tail(entry.z)).min(1.0));
        let names: BTreeSet<&str> =
            entry.members.iter().map(|&node| catalog.nodes[node as usize].as_str()).collect();
        finding.members = names.iter().map(|name| name.to_string()).collect();
        match entry.named {
            true => verdict.findings.push(finding),
            false => verdict.watch.push(finding),
        }
    }
    for list in [&mut verdict.findings, &mut verdict.watch] {
        list.sort_by(|a, b| (a.kind, &a.node, &a.class).cmp(&(b.kind, &b.node, &b.class)));
    }
}

#[cfg(test)]
mod tests;
