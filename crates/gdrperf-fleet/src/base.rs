//! Against an earlier job (`gdrperf fleet judge --base EARLIER.csv`): per part, what moved and by
//! how much, with a replaced part told apart from a changed one.
//!
//! Both jobs are fitted ([`crate::fit`]); classes are matched by their label (test, size, memory
//! kinds, QPs, direction), ports by node name and RDMA device. A port is then keyed by identity:
//! - NIC: the rows' `nic_node_guid` (the client's). Both jobs carry one and they differ: the NIC
//!   was **replaced**, and the port is not compared (its new speed is the judge's to name, among
//!   its peers, not a regression or a recovery of the old card).
//! - GPU: the rows' `gpu_local_uuid`, else `gpu_local_bus_id` (the slot, not the card: a GPU
//!   swapped in the same slot keeps its bus id and only its UUID tells). They differ: the GPU was
//!   **replaced** (or the lane now uses another GPU), and the port's GPU-memory classes are not
//!   compared; its host-memory classes still are.
//!
//! What is compared is where a part stands **within its class** (its effect, [`crate::fit`]), so
//! a fleet that slowed as a whole shows once, as its class level, not as every port:
//! - a port: d = effect now - effect then (log units); named **slower** or **faster** when
//!   |d| is beyond ln(1 - min_deficit) (15 % slower, or 17.6 % faster: the same distance in logs)
//!   and sure: |z| = |d| / (1.2533 sqrt(noise_now^2 / rows_now + noise_then^2 / rows_then))
//!   beyond the normal quantile of alpha / (2 x ports compared in the class), two-sided
//!   Bonferroni as in the judge. Like the judge, from two distinct peers in each job: with one
//!   peer, a change may be the peer's or the link's;
//! - a class: the same test on the level, over the classes compared.
//!
//! Not compared: links (a link's residual is relative to both ends, each of which may have
//! moved) and nodes as a whole (their ports are listed). Ports or classes in one job only are
//! counted, not named: a Slurm allocation rarely gives the same nodes twice.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::fit::{fit, Fit};
use crate::judge::JudgeConfig;
use crate::normal;
use crate::observation::{each_row, Catalog, Source};

/// What moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MoveKind {
    NicReplaced,
    GpuReplaced,
    Slower,
    Faster,
    ClassSlower,
    ClassFaster,
}

impl MoveKind {
    pub fn name(self) -> &'static str {
        match self {
            MoveKind::NicReplaced => "NIC replaced",
            MoveKind::GpuReplaced => "GPU replaced",
            MoveKind::Slower => "slower",
            MoveKind::Faster => "faster",
            MoveKind::ClassSlower => "class slower",
            MoveKind::ClassFaster => "class faster",
        }
    }
}

/// One part (or class) that moved against the earlier job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Movement {
    pub kind: MoveKind,
    /// The node ("all" for a class).
    pub node: String,
    pub device: Option<String>,
    /// The class compared ("all" for a replaced NIC, "GPU memory" for a replaced GPU).
    pub class: String,
    /// For a replaced part: the identity then and now (GUID, UUID or bus id).
    pub then: Option<String>,
    pub now: Option<String>,
    /// How far the part (relative to its class) or the class level moved, in percent of its
    /// earlier value: -25 is 25 % slower. None for a replaced part.
    pub change_pct: Option<f64>,
    pub rows_then: u64,
    pub rows_now: u64,
    /// Distinct peers in the job with fewer (0 for a class or a replaced part).
    pub peers: u64,
    pub z: Option<f64>,
    pub p_adjusted: Option<f64>,
}

/// The comparison with an earlier job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaseComparison {
    pub movements: Vec<Movement>,
    pub classes_compared: u64,
    /// (class, port) pairs compared.
    pub ports_compared: u64,
    pub ports_only_then: u64,
    pub ports_only_now: u64,
}

/// Compares `now` with `then`, the earlier job.
pub fn compare(then: &dyn Source, now: &dyn Source, config: &JudgeConfig) -> BaseComparison {
    let (fit_then, fit_now) = (fit(then), fit(now));
    let (catalog_then, catalog_now) = (then.catalog(), now.catalog());
    let key = |catalog: &Catalog, port: usize| {
        let info = &catalog.ports[port];
        (catalog.nodes[info.node as usize].clone(), info.device.clone())
    };
    let ports_then: HashMap<(String, String), u32> =
        (0..catalog_then.ports.len()).map(|port| (key(catalog_then, port), port as u32)).collect();
    let mut movements = Vec::new();
    // Ports matched by node and device; NIC and GPU identities checked once per port.
    let mut matched: Vec<(u32, u32, bool)> = Vec::new(); // (then, now, GPU replaced)
    let mut ports_only_now = 0u64;
    let mut seen_then = BTreeSet::new();
    for port_now in 0..catalog_now.ports.len() {
        let (node, device) = key(catalog_now, port_now);
        let Some(&port_then) = ports_then.get(&(node.clone(), device.clone())) else {
            ports_only_now += 1;
            continue;
        };
        seen_then.insert(port_then);
        let (info_then, info_now) = (&catalog_then.ports[port_then as usize], &catalog_now.ports[port_now]);
        let replaced = |kind, class: &str, then: &Option<String>, now: &Option<String>| Movement {
            kind,
            node: node.clone(),
            device: Some(device.clone()),
            class: class.to_string(),
            then: then.clone(),
            now: now.clone(),
            change_pct: None,
            rows_then: 0,
            rows_now: 0,
            peers: 0,
            z: None,
            p_adjusted: None,
        };
        if differ(&info_then.nic_guid, &info_now.nic_guid) {
            movements.push(replaced(MoveKind::NicReplaced, "all", &info_then.nic_guid, &info_now.nic_guid));
            continue;
        }
        let gpu_replaced = if differ(&info_then.gpu_uuid, &info_now.gpu_uuid) {
            movements.push(replaced(
                MoveKind::GpuReplaced,
                "GPU memory",
                &info_then.gpu_uuid,
                &info_now.gpu_uuid,
            ));
            true
        } else if (info_then.gpu_uuid.is_none() || info_now.gpu_uuid.is_none())
            && differ(&info_then.gpu_bus_id, &info_now.gpu_bus_id)
        {
            movements.push(replaced(
                MoveKind::GpuReplaced,
                "GPU memory",
                &info_then.gpu_bus_id,
                &info_now.gpu_bus_id,
            ));
            true
        } else {
            false
        };
        matched.push((port_then, port_now as u32, gpu_replaced));
    }
    let ports_only_then = (catalog_then.ports.len() - seen_then.len()) as u64;
    let classes_then: HashMap<&str, u32> = catalog_then
        .classes
        .iter()
        .enumerate()
        .map(|(index, info)| (info.label.as_str(), index as u32))
        .collect();
    let classes: Vec<(u32, u32)> = (0..catalog_now.classes.len() as u32)
        .filter_map(|class_now| {
            let class_then = *classes_then.get(catalog_now.classes[class_now as usize].label.as_str())?;
            (fit_then.rows[class_then as usize] > 0 && fit_now.rows[class_now as usize] > 0)
                .then_some((class_then, class_now))
        })
        .collect();
    let threshold = -(1.0 - config.min_deficit).ln();
    let mut candidates: Vec<(Movement, u32, u32, u32)> = Vec::new(); // (movement, class now, then, now port)
    let mut ports_compared = 0u64;
    for &(class_then, class_now) in &classes {
        let label = &catalog_now.classes[class_now as usize].label;
        let gpu_memory = catalog_now.classes[class_now as usize].gpu_memory;
        let compared: Vec<(u32, u32)> = matched
            .iter()
            .filter(|&&(_, _, gpu_replaced)| !(gpu_memory && gpu_replaced))
            .filter(|&&(then, now, _)| {
                fit_then.effect(class_then, then).rows > 0 && fit_now.effect(class_now, now).rows > 0
            })
            .map(|&(then, now, _)| (then, now))
            .collect();
        let tests = compared.len();
        ports_compared += tests as u64;
        let critical = normal::quantile(config.alpha / (2.0 * tests.max(1) as f64));
        for (port_then, port_now) in compared {
            let (effect_then, effect_now) =
                (fit_then.effect(class_then, port_then), fit_now.effect(class_now, port_now));
            let change = Change::of(
                (&fit_then, class_then, effect_then.combined, effect_then.rows.into()),
                (&fit_now, class_now, effect_now.combined, effect_now.rows.into()),
            );
            if let Some(kind) = change.named(threshold, critical, MoveKind::Slower, MoveKind::Faster) {
                let (node, device) = key(catalog_now, port_now as usize);
                let movement = change.movement(kind, node, Some(device), label, tests);
                candidates.push((movement, class_now, port_then, port_now));
            }
        }
    }
    // Two distinct peers in each job, as the judge asks of a part it names.
    let mut wanted_then: BTreeMap<(u32, u32), BTreeSet<u32>> = BTreeMap::new();
    let mut wanted_now: BTreeMap<(u32, u32), BTreeSet<u32>> = BTreeMap::new();
    for (_, class_now, port_then, port_now) in &candidates {
        let class_then = classes.iter().find(|(_, now)| now == class_now).map_or(0, |(then, _)| *then);
        wanted_then.entry((class_then, *port_then)).or_default();
        wanted_now.entry((*class_now, *port_now)).or_default();
    }
    count_peers(then, &mut wanted_then);
    count_peers(now, &mut wanted_now);
    for (mut movement, class_now, port_then, port_now) in candidates {
        let class_then = classes.iter().find(|(_, now)| *now == class_now).map_or(0, |(then, _)| *then);
        let peers = wanted_then[&(class_then, port_then)].len().min(wanted_now[&(class_now, port_now)].len());
        if peers >= 2 {
            movement.peers = peers as u64;
            movements.push(movement);
        }
    }
    let critical = normal::quantile(config.alpha / (2.0 * classes.len().max(1) as f64));
    for &(class_then, class_now) in &classes {
        let change = Change::of(
            (&fit_then, class_then, fit_then.level[class_then as usize], fit_then.rows[class_then as usize]),
            (&fit_now, class_now, fit_now.level[class_now as usize], fit_now.rows[class_now as usize]),
        );
        if let Some(kind) = change.named(threshold, critical, MoveKind::ClassSlower, MoveKind::ClassFaster) {
            let label = &catalog_now.classes[class_now as usize].label;
            movements.push(change.movement(kind, "all".into(), None, label, classes.len()));
        }
    }
    movements
        .sort_by(|a, b| (a.kind, &a.node, &a.device, &a.class).cmp(&(b.kind, &b.node, &b.device, &b.class)));
    BaseComparison {
        movements,
        classes_compared: classes.len() as u64,
        ports_compared,
        ports_only_then,
        ports_only_now,
    }
}

/// Both known and not the same.
fn differ(then: &Option<String>, now: &Option<String>) -> bool {
    matches!((then, now), (Some(then), Some(now)) if then != now)
}

/// A difference of two fitted values (log units) and its z.
struct Change {
    difference: f64,
    z: f64,
    rows_then: u64,
    rows_now: u64,
}

impl Change {
    /// `(fit, class, value, rows)` of each job: the standard error of a median of `rows` rows
    /// at the class's noise, combined over both jobs.
    fn of(then: (&Fit, u32, f64, u64), now: (&Fit, u32, f64, u64)) -> Change {
        let variance = |(fit, class, _, rows): (&Fit, u32, f64, u64)| {
            let noise = fit.noise[class as usize];
            noise * noise / rows.max(1) as f64
        };
        let difference = now.2 - then.2;
        let error = 1.2533 * (variance(then) + variance(now)).sqrt();
        Change { difference, z: difference / error, rows_then: then.3, rows_now: now.3 }
    }

    /// `slower` or `faster` when the change is both large and sure (`critical` is negative).
    fn named(&self, threshold: f64, critical: f64, slower: MoveKind, faster: MoveKind) -> Option<MoveKind> {
        if self.difference < -threshold && self.z < critical {
            Some(slower)
        } else if self.difference > threshold && self.z > -critical {
            Some(faster)
        } else {
            None
        }
    }

    fn movement(
        &self,
        kind: MoveKind,
        node: String,
        device: Option<String>,
        class: &str,
        tests: usize,
    ) -> Movement {
        Movement {
            kind,
            node,
            device,
            class: class.to_string(),
            then: None,
            now: None,
            change_pct: Some(100.0 * (self.difference.exp() - 1.0)),
            rows_then: self.rows_then,
            rows_now: self.rows_now,
            peers: 0,
            z: Some(self.z),
            p_adjusted: Some((2.0 * tests.max(1) as f64 * normal::lower_tail(-self.z.abs())).min(1.0)),
        }
    }
}

/// Fills each wanted (class, port)'s set of distinct peer ports.
fn count_peers(source: &dyn Source, wanted: &mut BTreeMap<(u32, u32), BTreeSet<u32>>) {
    if wanted.is_empty() {
        return;
    }
    each_row(source, |row| {
        if let Some(set) = wanted.get_mut(&(row.class, row.sender)) {
            set.insert(row.receiver);
        }
        if let Some(set) = wanted.get_mut(&(row.class, row.receiver)) {
            set.insert(row.sender);
        }
    });
}
