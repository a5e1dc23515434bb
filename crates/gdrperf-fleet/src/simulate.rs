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
//! - `slow-sending`: one NIC port at 70 % when it sends, full rate when it receives.
//!
//! Rows are kept as one `f32` each (NaN: not measured), their ports derived from the pair list,
//! so 67 M rows (4096 nodes x 8 lanes, all pairs) take 268 MB.

use gdrperf_cluster::locate::{first_pass, Locator};
use gdrperf_cluster::random::SplitMix64;
use gdrperf_cluster::schedule::{Pair, Schedule};

use crate::judge::{Finding, PartKind};
use crate::observation::{Catalog, ClassInfo, Observation, Source};

/// A fault to plant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    SlowPort,
    BadLink,
    GpuX8,
    DeadNode,
    SlowSending,
}

impl Fault {
    pub const ALL: [Fault; 5] =
        [Fault::SlowPort, Fault::BadLink, Fault::GpuX8, Fault::DeadNode, Fault::SlowSending];

    pub fn name(self) -> &'static str {
        match self {
            Fault::SlowPort => "slow-port",
            Fault::BadLink => "bad-link",
            Fault::GpuX8 => "gpu-x8",
            Fault::DeadNode => "dead-node",
            Fault::SlowSending => "slow-sending",
        }
    }

    pub fn parse(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|fault| fault.name() == name)
    }
}

/// How the simulated job chooses its pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    Fixed(Schedule),
    /// A ring over a seeded shuffle ([`gdrperf_cluster::locate::first_pass`]), then the
    /// locate rounds.
    Locate,
}

/// One simulation.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub nodes: usize,
    pub lanes: usize,
    pub plan: Plan,
    pub noise: f64,
    pub faults: Vec<Fault>,
    pub seed: u64,
}

/// A planted fault and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Planted {
    pub fault: Fault,
    pub node: usize,
    pub lane: usize,
    /// The other node of a bad link.
    pub peer: Option<usize>,
}

const LEVEL_GBPS: f64 = 100.0;

/// The measured fleet: the pair runs so far and their rows.
pub struct SimFleet {
    catalog: Catalog,
    lanes: usize,
    pairs: Vec<Pair>,
    values: Vec<f32>,
    pub planted: Vec<Planted>,
    pub rounds: usize,
    seed: u64,
    noise: f64,
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
        for node in 0..config.nodes {
            for lane in 0..config.lanes {
                catalog.port(&node_name(node), &format!("mlx5_{lane}"));
            }
        }
        catalog.expected_nodes = (0..config.nodes).map(node_name).collect();
        SimFleet {
            catalog,
            lanes: config.lanes,
            pairs: Vec::new(),
            values: Vec::new(),
            planted: Vec::new(),
            rounds: 0,
            seed: config.seed,
            noise: config.noise,
        }
    }

    /// Runs one round: a row per lane of every pair.
    fn run_round(&mut self, round: &[Pair]) {
        self.rounds += 1;
        for &pair in round {
            let index = self.pairs.len() as u64;
            self.pairs.push(pair);
            for lane in 0..self.lanes {
                let mut generator = SplitMix64::keyed(self.seed, index * self.lanes as u64 + lane as u64);
                let value = self.factor(pair, lane).map_or(f32::NAN, |factor| {
                    (LEVEL_GBPS.ln() + factor.ln() + self.noise * generator.normal()) as f32
                });
                self.values.push(value);
            }
        }
    }

    /// The planted faults' effect on one row; None when a node is dead.
    fn factor(&self, pair: Pair, lane: usize) -> Option<f64> {
        let mut factor = 1.0;
        for planted in &self.planted {
            let touches = |node: usize| planted.node == node && planted.lane == lane;
            match planted.fault {
                Fault::DeadNode if planted.node == pair.server || planted.node == pair.client => return None,
                Fault::SlowPort if touches(pair.server) || touches(pair.client) => factor *= 0.7,
                Fault::GpuX8 if touches(pair.server) || touches(pair.client) => factor *= 0.63,
                Fault::SlowSending if touches(pair.client) => factor *= 0.7,
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

    /// Whether pair run `index` looked low: a lane row 15 % below `level` (log) or missing.
    fn low(&self, index: usize, level: f64) -> bool {
        let floor = level + 0.85f64.ln();
        self.values[index * self.lanes..(index + 1) * self.lanes]
            .iter()
            .any(|value| value.is_nan() || f64::from(*value) < floor)
    }
}

fn node_name(node: usize) -> String {
    format!("node{node:04}")
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
        if fault == Fault::BadLink {
            let free: Vec<&Pair> =
                first_round.iter().filter(|p| !taken[p.server] && !taken[p.client]).collect();
            if let Some(pair) = free.get(generator.below(free.len().max(1))).copied() {
                taken[pair.server] = true;
                taken[pair.client] = true;
                planted.push(Planted { fault, node: pair.server, lane, peer: Some(pair.client) });
            }
            continue;
        }
        if let Some(node) = next.by_ref().find(|&node| !taken[node]) {
            taken[node] = true;
            planted.push(Planted { fault, node, lane, peer: None });
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
            let level = median_level(&fleet);
            let mut locator = Locator::new(config.nodes, config.seed);
            let verdicts: Vec<(Pair, bool)> = fleet
                .pairs
                .iter()
                .enumerate()
                .map(|(index, &pair)| (pair, fleet.low(index, level)))
                .collect();
            locator.record_round(&verdicts, true);
            while let Some(round) = locator.next_round() {
                let start = fleet.pairs.len();
                fleet.run_round(&round);
                let verdicts: Vec<(Pair, bool)> = round
                    .iter()
                    .enumerate()
                    .map(|(offset, &pair)| (pair, fleet.low(start + offset, level)))
                    .collect();
                locator.record_round(&verdicts, false);
            }
        }
    }
    fleet
}

/// The median row of the fleet so far (log Gb/s), what "low" is measured against.
fn median_level(fleet: &SimFleet) -> f64 {
    let mut values: Vec<f32> = fleet.values.iter().copied().filter(|value| !value.is_nan()).collect();
    if values.is_empty() {
        return LEVEL_GBPS.ln();
    }
    let middle = values.len() / 2;
    values.select_nth_unstable_by(middle, f32::total_cmp);
    f64::from(values[middle])
}

/// How one seed's verdict compares with what was planted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Score {
    /// Every planted part named (with its kind).
    pub all_named: bool,
    /// Something not planted named.
    pub false_named: bool,
}

/// Whether `finding` names `planted`.
fn names(finding: &Finding, planted: &Planted) -> bool {
    let device = format!("mlx5_{}", planted.lane);
    let at_port =
        finding.node == node_name(planted.node) && finding.device.as_deref() == Some(device.as_str());
    match planted.fault {
        // In GPU-memory rows alone a slow port and a slow GPU look alike: "NIC port or its GPU".
        Fault::SlowPort => at_port && matches!(finding.kind, PartKind::NicPort | PartKind::NicPortOrGpu),
        Fault::SlowSending => at_port && finding.kind == PartKind::NicPortSending,
        Fault::GpuX8 => at_port && matches!(finding.kind, PartKind::Gpu | PartKind::NicPortOrGpu),
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

/// Scores a verdict against the planted faults.
pub fn score(findings: &[Finding], planted: &[Planted]) -> Score {
    Score {
        all_named: planted.iter().all(|fault| findings.iter().any(|finding| names(finding, fault))),
        false_named: findings.iter().any(|finding| !planted.iter().any(|fault| names(finding, fault))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{judge, JudgeConfig};

    fn simulate(plan: Plan, seed: u64) -> (SimFleet, Score) {
        let config = SimConfig { nodes: 64, lanes: 2, plan, noise: 0.03, faults: Fault::ALL.to_vec(), seed };
        let fleet = run(&config);
        let verdict = judge(&fleet, &JudgeConfig::default());
        let score = score(&verdict.findings, &fleet.planted);
        (fleet, score)
    }

    #[test]
    fn all_pairs_names_every_planted_fault_and_nothing_else() {
        let (fleet, score) = simulate(Plan::Fixed(Schedule::AllPairs), 1);
        assert_eq!(fleet.planted.len(), 5);
        assert_eq!(score, Score { all_named: true, false_named: false });
        assert_eq!(fleet.pair_runs(), 64 * 63 / 2);
    }

    #[test]
    fn locate_names_them_in_a_fraction_of_the_pair_runs() {
        let (fleet, score) = simulate(Plan::Locate, 1);
        assert_eq!(score, Score { all_named: true, false_named: false });
        assert!(fleet.pair_runs() < 64 * 63 / 2 / 4, "{} pair runs", fleet.pair_runs());
    }

    #[test]
    fn the_same_seed_plants_and_measures_the_same_fleet() {
        let (first, _) = simulate(Plan::Locate, 5);
        let (again, _) = simulate(Plan::Locate, 5);
        assert_eq!(first.planted, again.planted);
        assert_eq!(first.pairs, again.pairs);
        assert!(first.values.iter().zip(&again.values).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}
