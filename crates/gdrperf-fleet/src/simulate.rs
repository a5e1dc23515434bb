//! A synthetic fleet measured by a schedule and judged by the same code, without processes.
//!
//! Nodes `node0000...` carry `lanes` NIC ports each (`mlx5_0...`, one GPU per lane); a pair run
//! of two nodes measures lane k against lane k, the client sending (write_bw), every row a
//! class level times the planted faults' factors times log-normal noise (`noise` is the SD of
//! log bandwidth: 0.03 is about 3 %). The level is arbitrary (100 Gb/s): the judge works on
//! ratios. Faults, each on its own seeded node:
//!
//! - `slow-port`: one NIC port at 70 % with every peer, both directions;
//! - `bad-link`: one lane between two nodes at 60 %, on a pair the schedule's first round
//!   measures (a link never measured is not there to be found by any schedule);
//! - `gpu-x8`: one GPU's PCIe link trained at x8: its rows at 63 % (a Gen5 x8 link carries
//!   about 252 Gb/s of a 400 Gb/s port's traffic: 16 lanes' 504 Gb/s halved, per the PCIe 5.0
//!   rate of 32 GT/s a lane with 128b/130b encoding); the rows are GPU memory only, so without
//!   host-memory rows the judge can name "the NIC port or its GPU", not which;
//! - `dead-node`: a node with no rows;
//! - `slow-sending`: one NIC port at 70 % when it sends, full rate when it receives;
//! - `slow-rail`: every port of one lane at 80 % (a rail switch: each row of the lane at 80 %);
//! - `near-miss`: one NIC port at 90 %, both directions: under the 15 % bar, to be watched;
//! - `intermittent`: one NIC port whose rows are at 60 % in 40 % of its pair runs, at random;
//! - `slow-group`: a leaf of [`group_size`] seeded nodes whose rows with every node outside it
//!   are at 80 % (every lane), among themselves at full rate;
//! - `slow-half`: the first half of the fleet (the simulated fabric's `spine0`, below) at 80 %
//!   with the other half, full rate within each half: a cut, which only a switch map names
//!   (not in [`Fault::ALL`]).
//!
//! With `switch_map`, the judge is given the simulated fabric ([`fabric`]): leaves of
//! [`group_size`] consecutive nodes under two spines of half the leaves each and a top switch,
//! and a slow group is then one of those leaves (seeded, with no other fault on it). With
//! `rack_names` the nodes are named by that fabric (`su0r003n07`: spine, leaf, node; [`Naming`])
//! instead of `node0000...`, a slow group is again a leaf, and without a map the judge tests the
//! groups the names give ([`crate::node_names`]), as `gdrperf fleet judge` does.
//!
//! The noise: normal (the SD given), or Student-t with `tails` degrees of freedom scaled to the
//! same SD (heavy tails: 4 gives a row 7.7 SDs below one time in about 1 300); and `dips`, the
//! share of pair runs slowed at random to 50-70 % on every lane at once (a moment of congestion
//! on a shared fabric). With `retest`, pairs the judge lists to retest are run again, a pass at a
//! time, up to [`MOST_RETEST_PASSES`] passes, each time judged anew, as `gdrperf slurm --schedule
//! locate` does live before it finishes (`gdrperf_cluster::coordinate`): a pass's pairs are the
//! rounds [`rounds_apart`] makes of them (counted in `rounds`; the rows are drawn in the pass's
//! pair order, as before the split was counted).
//!
//! Rows are kept as one `f32` each (NaN: not measured), their ports derived from the pair list,
//! so 67 M rows (4096 nodes x 8 lanes, all pairs) take 268 MB.

use gdrperf_cluster::locate::{first_pass, rounds_apart, Locator, MOST_RETEST_PASSES};
use gdrperf_cluster::random::SplitMix64;
use gdrperf_cluster::schedule::Pair;

use std::collections::{BTreeSet, HashMap};

use crate::judge::{judge_with_switches, JudgeConfig, Verdict};
use crate::observation::{Catalog, ClassInfo, Observation, Source, SLICE_ROWS};
use crate::switch_map::SwitchMap;

mod config;
mod fabric;
mod score;

pub use config::{Fault, Plan, Planted, SimConfig};
use fabric::first_half;
pub use fabric::{fabric, fabric_conf, group_size, Naming};
pub use score::{score, score_named, Score};

const LEVEL_GBPS: f64 = 100.0;

/// The measured fleet: the pair runs so far and their rows.
pub struct SimFleet {
    catalog: Catalog,
    lanes: usize,
    pairs: Vec<Pair>,
    values: Vec<f32>,
    pub planted: Vec<Planted>,
    pub rounds: usize,
    /// Pair runs of the retests (included in `pair_runs`).
    pub retest_runs: usize,
    /// The switches the judge is given, if any: the fabric's with `switch_map`, else the groups
    /// the node names give (none for `node0000...`).
    pub switches: Option<SwitchMap>,
    pub naming: Naming,
    seed: u64,
    noise: f64,
    tails: Option<f64>,
    dips: f64,
}

impl SimFleet {
    fn new(config: &SimConfig) -> SimFleet {
        let mut catalog = Catalog::default();
        catalog.class("write_bw", || ClassInfo {
            label: "write_bw 1048576 B cuda->cuda (simulated)".into(),
            gpu_memory: true,
            host_memory: false,
            ceiling_gbps: None,
        });
        let naming = config.naming();
        for node in 0..config.nodes {
            for lane in 0..config.lanes {
                catalog.port(&naming.name(node), &format!("mlx5_{lane}"));
            }
        }
        catalog.expected_nodes = (0..config.nodes).map(|node| naming.name(node)).collect();
        let switches = match config.switch_map {
            true => Some(fabric(naming)),
            false => crate::node_names::groups_from_names(&catalog.nodes),
        };
        SimFleet {
            catalog,
            lanes: config.lanes,
            pairs: Vec::new(),
            values: Vec::new(),
            planted: Vec::new(),
            rounds: 0,
            retest_runs: 0,
            switches,
            naming,
            seed: config.seed,
            noise: config.noise,
            tails: config.tails,
            dips: config.dips,
        }
    }

    /// Runs one round: a row per lane of every pair.
    fn run_round(&mut self, round: &[Pair]) {
        self.rounds += 1;
        for &pair in round {
            let index = self.pairs.len() as u64;
            self.pairs.push(pair);
            // The pair run's own draws (a dip, an intermittent port's bad moment), then each row's.
            let mut run = SplitMix64::keyed(self.seed ^ 0xD1B5, index);
            let dip = if run.next_f64() < self.dips { 0.5 + 0.2 * run.next_f64() } else { 1.0 };
            let bad_moment = run.next_f64() < 0.4;
            for lane in 0..self.lanes {
                let mut generator = SplitMix64::keyed(self.seed, index * self.lanes as u64 + lane as u64);
                let value = self.factor(pair, lane, bad_moment).map_or(f32::NAN, |factor| {
                    (LEVEL_GBPS.ln() + (factor * dip).ln() + self.noise * self.draw(&mut generator)) as f32
                });
                self.values.push(value);
            }
        }
    }

    /// One row's noise in SDs: normal, or Student-t scaled to an SD of one.
    fn draw(&self, generator: &mut SplitMix64) -> f64 {
        let Some(freedom) = self.tails else { return generator.normal() };
        let whole = freedom.round().max(3.0) as usize;
        let chi_square: f64 = (0..whole).map(|_| generator.normal().powi(2)).sum();
        let t = generator.normal() / (chi_square / whole as f64).sqrt();
        t / (whole as f64 / (whole as f64 - 2.0)).sqrt()
    }

    /// The planted faults' effect on one row; None when a node is dead. `bad_moment`: whether an
    /// intermittent port is bad in this pair run.
    fn factor(&self, pair: Pair, lane: usize, bad_moment: bool) -> Option<f64> {
        let mut factor = 1.0;
        for planted in &self.planted {
            let touches = |node: usize| planted.node == node && planted.lane == lane;
            match planted.fault {
                Fault::DeadNode if planted.node == pair.server || planted.node == pair.client => return None,
                Fault::SlowPort if touches(pair.server) || touches(pair.client) => factor *= 0.7,
                Fault::GpuX8 if touches(pair.server) || touches(pair.client) => factor *= 0.63,
                Fault::SlowSending if touches(pair.client) => factor *= 0.7,
                Fault::SlowRail if planted.lane == lane => factor *= 0.8,
                Fault::NearMiss if touches(pair.server) || touches(pair.client) => factor *= 0.9,
                Fault::Intermittent if bad_moment && (touches(pair.server) || touches(pair.client)) => {
                    factor *= 0.6
                }
                Fault::SlowGroup | Fault::SlowHalf
                    if planted.members.contains(&pair.server) != planted.members.contains(&pair.client) =>
                {
                    factor *= 0.8
                }
                Fault::BadLink
                    if planted.lane == lane
                        && [Some(pair.server), Some(pair.client)].contains(&Some(planted.node))
                        && [Some(pair.server), Some(pair.client)].contains(&planted.peer) =>
                {
                    factor *= 0.6
                }
                _ => {}
            }
        }
        Some(factor)
    }

    /// Pair runs so far (node pairs; each ran every lane).
    pub fn pair_runs(&self) -> usize {
        self.pairs.len()
    }

    /// Per lane of pair run `index`, whether its row looked low: 15 % below its lane's level
    /// (`levels`, log) or missing.
    fn low_lanes(&self, index: usize, levels: &[f64]) -> impl Iterator<Item = bool> + '_ {
        let floors: Vec<f64> = levels.iter().map(|level| level + 0.85f64.ln()).collect();
        self.values[index * self.lanes..(index + 1) * self.lanes]
            .iter()
            .zip(floors)
            .map(|(value, floor)| value.is_nan() || f64::from(*value) < floor)
    }

    /// Whether pair run `index` looked low: a lane low ([`SimFleet::low_lanes`]).
    fn low(&self, index: usize, levels: &[f64]) -> bool {
        self.low_lanes(index, levels).any(|low| low)
    }
}

impl Source for SimFleet {
    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn visit(&self, visit: &mut dyn FnMut(&Observation)) {
        let lanes = self.lanes;
        for (index, pair) in self.pairs.iter().enumerate() {
            for lane in 0..lanes {
                let value = self.values[index * lanes + lane];
                if value.is_nan() {
                    continue;
                }
                visit(&Observation {
                    class: 0,
                    sender: (pair.client * lanes + lane) as u32,
                    receiver: (pair.server * lanes + lane) as u32,
                    directed: true,
                    log_gbps: value,
                });
            }
        }
    }

    fn visit_slices(&self, visit: &mut dyn FnMut(&[Observation])) {
        let lanes = self.lanes;
        if lanes == 0 {
            return;
        }
        let blank = Observation { class: 0, sender: 0, receiver: 0, directed: true, log_gbps: 0.0 };
        let mut buffer = [blank; SLICE_ROWS];
        let mut filled = 0;
        for (pair, values) in self.pairs.iter().zip(self.values.chunks_exact(lanes)) {
            for (lane, &value) in values.iter().enumerate() {
                if value.is_nan() {
                    continue;
                }
                buffer[filled] = Observation {
                    class: 0,
                    sender: (pair.client * lanes + lane) as u32,
                    receiver: (pair.server * lanes + lane) as u32,
                    directed: true,
                    log_gbps: value,
                };
                filled += 1;
                if filled == SLICE_ROWS {
                    visit(&buffer);
                    filled = 0;
                }
            }
        }
        if filled > 0 {
            visit(&buffer[..filled]);
        }
    }
}

/// Plants the faults on distinct seeded nodes; a bad link on a pair of `first_round`.
fn plant(config: &SimConfig, first_round: &[Pair]) -> Vec<Planted> {
    let mut generator = SplitMix64::keyed(config.seed, 0xFA17);
    let mut order: Vec<usize> = (0..config.nodes).collect();
    generator.shuffle(&mut order);
    let mut taken = vec![false; config.nodes];
    let mut next = order.into_iter();
    let mut planted = Vec::new();
    for &fault in &config.faults {
        let lane = generator.below(config.lanes);
        if fault == Fault::SlowRail {
            planted.push(Planted { fault, node: usize::MAX, lane, peer: None, members: Vec::new() });
            continue;
        }
        if fault == Fault::SlowHalf {
            let members = first_half(config.nodes);
            planted.push(Planted { fault, node: members[0], lane, peer: None, members });
            continue;
        }
        if fault == Fault::SlowGroup && (config.switch_map || config.rack_names) {
            // A leaf of the fabric with no other fault on it, seeded.
            let size = group_size(config.nodes);
            let free: Vec<usize> = (0..config.nodes / size)
                .filter(|&leaf| (leaf * size..(leaf + 1) * size).all(|node| !taken[node]))
                .collect();
            if let Some(&leaf) = free.get(generator.below(free.len().max(1))) {
                let members: Vec<usize> = (leaf * size..(leaf + 1) * size).collect();
                for &node in &members {
                    taken[node] = true;
                }
                planted.push(Planted { fault, node: members[0], lane, peer: None, members });
            }
            continue;
        }
        if fault == Fault::SlowGroup {
            let mut members: Vec<usize> =
                next.by_ref().filter(|&node| !taken[node]).take(group_size(config.nodes)).collect();
            members.sort_unstable();
            for &node in &members {
                taken[node] = true;
            }
            planted.push(Planted { fault, node: members[0], lane, peer: None, members });
            continue;
        }
        if fault == Fault::BadLink {
            let free: Vec<&Pair> =
                first_round.iter().filter(|p| !taken[p.server] && !taken[p.client]).collect();
            if let Some(pair) = free.get(generator.below(free.len().max(1))).copied() {
                taken[pair.server] = true;
                taken[pair.client] = true;
                planted.push(Planted {
                    fault,
                    node: pair.server,
                    lane,
                    peer: Some(pair.client),
                    members: Vec::new(),
                });
            }
            continue;
        }
        if let Some(node) = next.by_ref().find(|&node| !taken[node]) {
            taken[node] = true;
            planted.push(Planted { fault, node, lane, peer: None, members: Vec::new() });
        }
    }
    planted
}

/// Plans, measures and returns the fleet ready to judge.
pub fn run(config: &SimConfig) -> SimFleet {
    let mut fleet = SimFleet::new(config);
    match config.plan {
        Plan::Fixed(schedule) => {
            let rounds = schedule.rounds(config.nodes);
            fleet.planted = plant(config, rounds.first().map_or(&[], Vec::as_slice));
            for round in &rounds {
                fleet.run_round(round);
            }
        }
        Plan::Locate => {
            let first = first_pass(config.nodes, config.seed);
            fleet.planted = plant(config, first.first().map_or(&[], Vec::as_slice));
            for round in &first {
                fleet.run_round(round);
            }
            let levels = lane_levels(&fleet);
            let mut locator = Locator::new(config.nodes, config.seed);
            let rows: Vec<(Pair, u32, u32)> = (0..fleet.pairs.len())
                .map(|index| {
                    let low = fleet.low_lanes(index, &levels).filter(|&low| low).count() as u32;
                    (fleet.pairs[index], low, fleet.lanes as u32)
                })
                .collect();
            locator.size_for_noise(&rows, config.nodes * config.lanes);
            let verdicts: Vec<(Pair, bool)> = fleet
                .pairs
                .iter()
                .enumerate()
                .map(|(index, &pair)| (pair, fleet.low(index, &levels)))
                .collect();
            locator.record_round(&verdicts, true);
            while let Some(round) = locator.next_round() {
                let start = fleet.pairs.len();
                fleet.run_round(&round);
                let verdicts: Vec<(Pair, bool)> = round
                    .iter()
                    .enumerate()
                    .map(|(offset, &pair)| (pair, fleet.low(start + offset, &levels)))
                    .collect();
                locator.record_round(&verdicts, false);
            }
        }
    }
    fleet
}

/// Runs the pairs the judge lists to retest again, a pass at a time, until it lists none or
/// [`MOST_RETEST_PASSES`] passes ran; returns the last verdict (of every row, retests included).
pub fn retest(fleet: &mut SimFleet, config: &JudgeConfig) -> Verdict {
    retest_with(fleet, &mut |fleet| judge_with_switches(fleet, config, fleet.switches.as_ref()))
}

/// [`retest`], each judgement made by `judge` (the judge with the fleet's switches, wrapped, say,
/// to time the last one): the last verdict is the verdict of every row, so a caller needs no
/// judgement more (at 4096 nodes x 8 lanes, all pairs, one is half a minute of CPU).
pub fn retest_with(fleet: &mut SimFleet, judge: &mut dyn FnMut(&SimFleet) -> Verdict) -> Verdict {
    let index: HashMap<String, usize> =
        fleet.catalog.nodes.iter().enumerate().map(|(index, name)| (name.clone(), index)).collect();
    let mut verdict = judge(fleet);
    for _ in 0..MOST_RETEST_PASSES {
        let pairs: BTreeSet<(usize, usize)> = verdict
            .retest
            .iter()
            .filter_map(|finding| {
                let (a, b) = (index.get(&finding.node)?, index.get(finding.peer_node.as_ref()?)?);
                Some((*a.min(b), *a.max(b)))
            })
            .collect();
        if pairs.is_empty() {
            break;
        }
        let round: Vec<Pair> = pairs.into_iter().map(|(client, server)| Pair { server, client }).collect();
        fleet.retest_runs += round.len();
        fleet.run_round(&round);
        // A job runs the pass as rounds without a node twice: count those.
        fleet.rounds += rounds_apart(&round).len().saturating_sub(1);
        verdict = judge(fleet);
    }
    verdict
}

/// Per lane, the median row of the fleet so far (log Gb/s), what "low" is measured against (per
/// lane, as the live locate: a slow rail's rows are at their rail's level).
fn lane_levels(fleet: &SimFleet) -> Vec<f64> {
    (0..fleet.lanes)
        .map(|lane| {
            let mut values: Vec<f32> = fleet
                .values
                .iter()
                .skip(lane)
                .step_by(fleet.lanes)
                .copied()
                .filter(|value| !value.is_nan())
                .collect();
            if values.is_empty() {
                return LEVEL_GBPS.ln();
            }
            let middle = values.len() / 2;
            values.select_nth_unstable_by(middle, f32::total_cmp);
            f64::from(values[middle])
        })
        .collect()
}

#[cfg(test)]
mod tests;
