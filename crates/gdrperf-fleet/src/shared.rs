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
//! Not done: a group of nodes slow only towards the rest (a leaf switch's uplinks); a switch map
//! is not read. Such a group shows as its nodes, each named, or nothing (see docs/methodology.md).

use std::collections::BTreeMap;

use crate::fit::Fit;
use crate::normal;
use crate::observation::Catalog;

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
