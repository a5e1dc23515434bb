//! From a step and a schedule to concrete bench pairs: which rank serves, which rank connects
//! to which node, on which TCP port, in which round.
//!
//! Pairing is over nodes by default: with 8 tasks per node (one per GPU), local task k of the
//! server node meets local task k of the client node, so every GPU/NIC of a node is measured at
//! the same moment against its counterpart, and two tasks of one node never pair with each
//! other. `--pair-by task` pairs ranks directly (0-1, 2-3, ...), which is what a single node
//! with two tasks, or a test, wants.
//!
//! Every pair of a round gets its own TCP port (base + its index), so any number of servers
//! can share a node, and a port still held by the previous round's server is never reused by
//! the next round's.

use serde::{Deserialize, Serialize};

use crate::error::{ClusterError, Result};
use crate::schedule::{Pair, Schedule, Timetable};
use crate::step::SlurmStep;

/// What the schedule pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairBy {
    Node,
    Task,
}

/// A task's side of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Server,
    Client,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Client => "client",
        }
    }
}

/// One bench run between two tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BenchPair {
    pub round: usize,
    pub server_rank: usize,
    pub server_node: String,
    pub client_rank: usize,
    pub client_node: String,
    /// The local task index on the server's node (equal on both nodes when pairing by node).
    pub local: usize,
    pub port: u16,
}

/// `name` with every character but ASCII letters, digits, `.`, `-` and `_` replaced by `_`.
fn file_safe(name: &str) -> String {
    name.chars()
        .map(
            |character| {
                if character.is_ascii_alphanumeric() || ".-_".contains(character) {
                    character
                } else {
                    '_'
                }
            },
        )
        .collect()
}

impl BenchPair {
    /// Names this pair's files: both node names, the round and both ranks, so names stay unique
    /// when two tasks of one node pair with each other. Node names come from Slurm's environment:
    /// only letters, digits, `.`, `-` and `_` of them reach a file name (a `/` would put files
    /// outside the output folder), the rest become `_`; the ranks keep the names unique.
    pub fn label(&self) -> String {
        format!(
            "r{}_{}_{}_{}-{}",
            self.round,
            file_safe(&self.server_node),
            file_safe(&self.client_node),
            self.server_rank,
            self.client_rank
        )
    }

    /// The other end of the pair for `rank` and the role `rank` takes.
    pub fn side_of(&self, rank: usize) -> Option<(Role, usize, &str)> {
        if rank == self.server_rank {
            Some((Role::Server, self.client_rank, &self.client_node))
        } else if rank == self.client_rank {
            Some((Role::Client, self.server_rank, &self.server_node))
        } else {
            None
        }
    }
}

/// What `plan.json` says of the plan: the schedule and what rebuilds it (its parameters), how
/// much it measures, and per unit how often and against how many peers; never the pair list,
/// which at thousands of nodes would be millions of lines that every rank wrote or read. Every
/// pair can be computed again from these fields and the step's layout ([`Plan::from_summary`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanSummary {
    pub schedule: String,
    pub pair_by: String,
    /// Rounds planned (for `locate`, the first pass and the rounds decided so far).
    pub rounds: usize,
    /// Bench runs in all rounds (a node pair is one run per task of a node).
    pub pair_runs: usize,
    /// The port of a round's first bench pair.
    pub base_port: u16,
    /// The seed of `random` and `locate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Nodes (or `node/rank` for task pairing) that the schedule leaves out.
    pub left_out: Vec<String>,
    /// Per unit (node, or `node/rankN`), in the step's order.
    pub tallies: Vec<UnitTally>,
}

/// One unit's share of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitTally {
    pub unit: String,
    /// Bench runs it takes part in.
    pub pair_runs: usize,
    /// Distinct units it meets.
    pub peers: usize,
}

/// The pairs of the step, computed round by round when asked: a rank asks for its own pair of
/// each round, rank 0's gather for every pair of one round at a time.
#[derive(Debug, Clone)]
pub struct Plan {
    schedule: &'static str,
    pair_by: PairBy,
    base_port: u16,
    seed: Option<u64>,
    per_unit: usize,
    timetable: Timetable,
}

impl PairBy {
    /// How many units the step has and how many tasks each unit holds.
    fn units(self, step: &SlurmStep) -> Result<(usize, usize)> {
        let (units, per_unit) = match self {
            PairBy::Node => {
                let per_node = step.tasks_per_node[0];
                if step.tasks_per_node.iter().any(|&count| count != per_node) {
                    return Err(ClusterError::StepShape(format!(
                        "pairing by node needs the same number of tasks on every node, this step has {:?} \
                         (use --ntasks-per-node, or --pair-by task)",
                        step.tasks_per_node
                    )));
                }
                (step.nodes.len(), per_node)
            }
            PairBy::Task => (step.tasks, 1),
        };
        if units < 2 {
            let what = if self == PairBy::Node { "nodes" } else { "tasks" };
            return Err(ClusterError::StepShape(format!(
                "the step has {units} {what}: pairs need at least two (srun -N2, or --pair-by task with -n2)"
            )));
        }
        Ok((units, per_unit))
    }

    /// How many units the step has (nodes, or tasks), however they are laid out.
    pub fn unit_count(self, step: &SlurmStep) -> usize {
        match self {
            PairBy::Node => step.nodes.len(),
            PairBy::Task => step.tasks,
        }
    }

    /// A unit as a person reads it: the node's name, or `node/rankN`.
    pub fn unit_name(self, step: &SlurmStep, unit: usize) -> String {
        match self {
            PairBy::Node => step.nodes[unit].clone(),
            PairBy::Task => format!("{}/rank{unit}", step.node_of(unit)),
        }
    }

    /// The unit (node index, or rank) `rank` belongs to.
    pub fn unit_of(self, step: &SlurmStep, rank: usize) -> usize {
        match self {
            PairBy::Node => step.placement(rank).node,
            PairBy::Task => rank,
        }
    }

    fn name(self) -> &'static str {
        match self {
            PairBy::Node => "node",
            PairBy::Task => "task",
        }
    }
}

impl Plan {
    /// Builds the plan every task of `step` computes identically.
    pub fn new(step: &SlurmStep, schedule: Schedule, pair_by: PairBy, base_port: u16) -> Result<Plan> {
        let (units, _) = pair_by.units(step)?;
        let seed = match schedule {
            Schedule::Random { seed, .. } => Some(seed),
            _ => None,
        };
        Plan::with_timetable(step, schedule.name(), seed, Timetable::new(schedule, units), pair_by, base_port)
    }

    /// The first pass of `locate` (a ring over a `seed` shuffle); [`Plan::add_round`] appends
    /// the rounds rank 0 decides.
    pub fn locate(step: &SlurmStep, seed: u64, pair_by: PairBy, base_port: u16) -> Result<Plan> {
        let (units, _) = pair_by.units(step)?;
        let first_pass = Timetable::listed(units, crate::locate::first_pass(units, seed));
        Plan::with_timetable(step, "locate", Some(seed), first_pass, pair_by, base_port)
    }

    /// The plan `summary` describes, with `decided` (the rounds `locate.json` holds) after a
    /// `locate` first pass.
    pub fn from_summary(step: &SlurmStep, summary: &PlanSummary, decided: &[Vec<BenchPair>]) -> Result<Plan> {
        let pair_by = match summary.pair_by.as_str() {
            "node" => PairBy::Node,
            "task" => PairBy::Task,
            other => return Err(ClusterError::StepShape(format!("plan.json: unknown pair_by {other:?}"))),
        };
        let seed = summary.seed.unwrap_or(1);
        let schedule = match summary.schedule.as_str() {
            "pairs" => Schedule::Pairs,
            "ring" => Schedule::Ring,
            "all-pairs" => Schedule::AllPairs,
            "random" => Schedule::Random { rounds: summary.rounds, seed },
            "locate" => {
                let mut plan = Plan::locate(step, seed, pair_by, summary.base_port)?;
                for round in decided {
                    plan.add_bench_round(step, round)?;
                }
                return Ok(plan);
            }
            other => return Err(ClusterError::StepShape(format!("plan.json: unknown schedule {other:?}"))),
        };
        Plan::new(step, schedule, pair_by, summary.base_port)
    }

    fn with_timetable(
        step: &SlurmStep,
        schedule: &'static str,
        seed: Option<u64>,
        timetable: Timetable,
        pair_by: PairBy,
        base_port: u16,
    ) -> Result<Plan> {
        let (units, per_unit) = pair_by.units(step)?;
        let plan = Plan { schedule, pair_by, base_port, seed, per_unit, timetable };
        // No round of any schedule holds more than half the units.
        plan.check_ports(units / 2)?;
        Ok(plan)
    }

    /// Refuses a round of `unit_pairs` pairs whose ports would pass 65535.
    fn check_ports(&self, unit_pairs: usize) -> Result<()> {
        let widest = unit_pairs * self.per_unit;
        let last = u32::from(self.base_port) + widest as u32 - 1;
        if widest > 0 && last > u32::from(u16::MAX) {
            return Err(ClusterError::PortRange { first: self.base_port.into(), last, pairs: widest });
        }
        Ok(())
    }

    pub fn schedule(&self) -> &'static str {
        self.schedule
    }

    pub fn pair_by(&self) -> PairBy {
        self.pair_by
    }

    /// Rounds so far.
    pub fn rounds(&self) -> usize {
        self.timetable.rounds()
    }

    /// Bench pairs in round `round`.
    pub fn round_width(&self, round: usize) -> usize {
        self.timetable.round_len(round) * self.per_unit
    }

    /// The bench pair at place `place` of round `round` (below [`Plan::round_width`]): unit pair
    /// `place / tasks per unit`, local task `place % tasks per unit`, port `base + place`.
    pub fn pair_at(&self, step: &SlurmStep, round: usize, place: usize) -> BenchPair {
        let unit_pair = self.timetable.pair_at(round, place / self.per_unit);
        let local = place % self.per_unit;
        // unit -> rank of local task `local`.
        let endpoint = |unit: usize| match self.pair_by {
            PairBy::Node => step.rank_at(unit, local).expect("uniform tasks per node checked when planned"),
            PairBy::Task => unit,
        };
        let (server_rank, client_rank) = (endpoint(unit_pair.server), endpoint(unit_pair.client));
        BenchPair {
            round,
            server_rank,
            server_node: step.node_of(server_rank).to_string(),
            client_rank,
            client_node: step.node_of(client_rank).to_string(),
            local: step.placement(server_rank).local,
            port: (u32::from(self.base_port) + place as u32) as u16,
        }
    }

    /// Every bench pair of round `round`, in port order.
    pub fn round(&self, step: &SlurmStep, round: usize) -> Vec<BenchPair> {
        (0..self.round_width(round)).map(|place| self.pair_at(step, round, place)).collect()
    }

    /// The pair `rank` is in during round `round` (`None`: it rests), found without listing the
    /// round: constant time for the formula schedules.
    pub fn pair_of(&self, step: &SlurmStep, round: usize, rank: usize) -> Option<BenchPair> {
        let (index, _) = self.timetable.pair_of(round, self.pair_by.unit_of(step, rank))?;
        let local = match self.pair_by {
            PairBy::Node => step.placement(rank).local,
            PairBy::Task => 0,
        };
        Some(self.pair_at(step, round, index * self.per_unit + local))
    }

    /// The pairs `rank` takes part in, in round order (at most one per round).
    pub fn assignments<'a>(
        &'a self,
        step: &'a SlurmStep,
        rank: usize,
    ) -> impl Iterator<Item = BenchPair> + 'a {
        (0..self.rounds()).filter_map(move |round| self.pair_of(step, round, rank))
    }

    /// Where `pair` stands in its round (its port less the base port), when the plan holds it
    /// as it is.
    pub fn place_of(&self, step: &SlurmStep, pair: &BenchPair) -> Option<usize> {
        let place = usize::from(pair.port.checked_sub(self.base_port)?);
        (pair.round < self.rounds()
            && place < self.round_width(pair.round)
            && self.pair_at(step, pair.round, place) == *pair)
            .then_some(place)
    }

    /// Appends one round of unit pairs (`locate`'s next); returns its bench pairs.
    pub fn add_round(&mut self, step: &SlurmStep, round_pairs: &[Pair]) -> Result<Vec<BenchPair>> {
        self.check_ports(round_pairs.len())?;
        if !self.timetable.push_round(round_pairs.to_vec()) {
            return Err(ClusterError::StepShape(format!(
                "the {} schedule has no rounds to add",
                self.schedule
            )));
        }
        Ok(self.round(step, self.rounds() - 1))
    }

    /// Appends a round [`Plan::add_round`] made (as `locate.json` tells it: the bench pairs, a
    /// unit pair's tasks one after another).
    /// `locate.json` sits in a shared folder: a round that is not one rank 0 could have decided
    /// (a rank past the step, a unit twice, pairs that do not follow from their units) is an
    /// error naming the file, never an index out of range on every rank (issue 44).
    pub fn add_bench_round(&mut self, step: &SlurmStep, round: &[BenchPair]) -> Result<Vec<BenchPair>> {
        let forged = |why: String| {
            ClusterError::StepShape(format!(
                "locate.json: {why}: not a round rank 0 decides (the file was edited or damaged)"
            ))
        };
        if round.is_empty() || !round.len().is_multiple_of(self.per_unit) {
            return Err(forged(format!("a round of {} pairs, {} a unit pair", round.len(), self.per_unit)));
        }
        if let Some(pair) =
            round.iter().find(|pair| pair.server_rank >= step.tasks || pair.client_rank >= step.tasks)
        {
            return Err(forged(format!(
                "ranks {} and {} in a step of {} tasks",
                pair.server_rank, pair.client_rank, step.tasks
            )));
        }
        let units: Vec<Pair> = round
            .iter()
            .step_by(self.per_unit)
            .map(|pair| Pair {
                server: self.pair_by.unit_of(step, pair.server_rank),
                client: self.pair_by.unit_of(step, pair.client_rank),
            })
            .collect();
        let mut seen = vec![false; self.pair_by.unit_count(step)];
        for unit in units.iter().flat_map(|pair| [pair.server, pair.client]) {
            if std::mem::replace(&mut seen[unit], true) {
                return Err(forged(format!(
                    "{} is in two pairs of one round",
                    self.pair_by.unit_name(step, unit)
                )));
            }
        }
        let made = self.add_round(step, &units)?;
        let ranks = |pairs: &[BenchPair]| -> Vec<(usize, usize)> {
            pairs.iter().map(|pair| (pair.server_rank, pair.client_rank)).collect()
        };
        if ranks(&made) != ranks(round) {
            return Err(forged("its pairs do not follow from their units".into()));
        }
        Ok(made)
    }

    /// What `plan.json` says of this plan: O(units) to compute (a formula per unit for the
    /// formula schedules, a count over the listed rounds otherwise).
    pub fn summary(&self, step: &SlurmStep) -> PlanSummary {
        let tallies: Vec<UnitTally> = self
            .timetable
            .tallies()
            .into_iter()
            .enumerate()
            .map(|(unit, (runs, peers))| UnitTally {
                unit: self.pair_by.unit_name(step, unit),
                pair_runs: runs * self.per_unit,
                peers,
            })
            .collect();
        PlanSummary {
            schedule: self.schedule.to_string(),
            pair_by: self.pair_by.name().to_string(),
            rounds: self.rounds(),
            pair_runs: (0..self.rounds()).map(|round| self.round_width(round)).sum(),
            base_port: self.base_port,
            seed: self.seed,
            left_out: tallies
                .iter()
                .filter(|tally| tally.pair_runs == 0)
                .map(|tally| tally.unit.clone())
                .collect(),
            tallies,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn step(rank: usize, nodelist: &str, tasks_per_node: &str, tasks: usize) -> SlurmStep {
        let map: HashMap<&str, String> = [
            ("SLURM_PROCID", rank.to_string()),
            ("SLURM_NTASKS", tasks.to_string()),
            ("SLURM_JOB_NODELIST", nodelist.to_string()),
            ("SLURM_TASKS_PER_NODE", tasks_per_node.to_string()),
        ]
        .into_iter()
        .collect();
        SlurmStep::from_lookup(|name| map.get(name).cloned()).unwrap()
    }

    #[test]
    fn node_names_reach_file_names_without_a_path() {
        let pair = BenchPair {
            round: 1,
            server_rank: 0,
            server_node: "../../etc".into(),
            client_rank: 3,
            client_node: "gpu-07.rack_2".into(),
            local: 0,
            port: 18515,
        };
        assert_eq!(pair.label(), "r1_.._.._etc_gpu-07.rack_2_0-3");
        assert!(!pair.label().contains('/'));
    }

    #[test]
    fn one_task_per_node_pairs_ranks_zero_one_two_three() {
        let step = step(0, "n[1-5]", "1(x5)", 5);
        let plan = Plan::new(&step, Schedule::Pairs, PairBy::Node, 18515).unwrap();
        let pairs = plan.round(&step, 0);
        let summary: Vec<_> =
            pairs.iter().map(|p| (p.server_rank, p.client_rank, p.client_node.as_str(), p.port)).collect();
        assert_eq!(summary, [(0, 1, "n2", 18515), (2, 3, "n4", 18516)]);
        let told = plan.summary(&step);
        assert_eq!(told.left_out, ["n5"]);
        assert_eq!((told.rounds, told.pair_runs), (1, 2));
        assert_eq!(told.tallies[4], UnitTally { unit: "n5".into(), pair_runs: 0, peers: 0 });
        assert_eq!(pairs[1].label(), "r0_n3_n4_2-3");
    }

    #[test]
    fn gpus_pair_with_the_same_local_task_on_the_peer_node() {
        // Two nodes with 4 tasks each (block layout): ranks 0-3 on a, 4-7 on b.
        let step = step(5, "a,b", "4(x2)", 8);
        let plan = Plan::new(&step, Schedule::Pairs, PairBy::Node, 20000).unwrap();
        let summary: Vec<_> =
            plan.round(&step, 0).iter().map(|p| (p.server_rank, p.client_rank, p.local, p.port)).collect();
        assert_eq!(summary, [(0, 4, 0, 20000), (1, 5, 1, 20001), (2, 6, 2, 20002), (3, 7, 3, 20003)]);
        let mine: Vec<_> = plan.assignments(&step, 5).map(|p| p.side_of(5).unwrap().0).collect();
        // A node pair is one bench run per task of a node; each node meets one peer.
        assert_eq!(plan.summary(&step).tallies[1], UnitTally { unit: "b".into(), pair_runs: 4, peers: 1 });
        assert_eq!(mine, [Role::Client]);
    }

    #[test]
    fn ring_rounds_give_each_node_both_roles() {
        let step = step(0, "n[1-3]", "1(x3)", 3);
        let plan = Plan::new(&step, Schedule::Ring, PairBy::Node, 18515).unwrap();
        assert_eq!(plan.rounds(), 3);
        let roles: Vec<_> = plan.assignments(&step, 0).map(|p| (p.round, p.side_of(0).unwrap().0)).collect();
        assert_eq!(roles, [(0, Role::Server), (2, Role::Client)]);
    }

    #[test]
    fn task_pairing_allows_one_node() {
        let plan = Plan::new(&step(1, "solo", "2", 2), Schedule::Pairs, PairBy::Task, 18515).unwrap();
        let pairs = plan.round(&step(1, "solo", "2", 2), 0);
        assert_eq!(pairs.len(), 1);
        assert_eq!(pairs[0].label(), "r0_solo_solo_0-1");
    }

    #[test]
    fn impossible_steps_are_refused_with_the_way_out() {
        let message = |step: &SlurmStep, by: PairBy, port: u16| {
            Plan::new(step, Schedule::Pairs, by, port).unwrap_err().to_string()
        };
        assert!(message(&step(0, "solo", "2", 2), PairBy::Node, 18515).contains("--pair-by task"));
        assert!(message(&step(0, "a,b", "2,1", 3), PairBy::Node, 18515).contains("same number of tasks"));
        assert!(message(&step(0, "n[1-4]", "1(x4)", 4), PairBy::Node, 65535).contains("lower --base-port"));
    }

    /// Issue 44 item 10: a forged `locate.json` (a rank past the step) made every rank and the
    /// gather panic with an index out of range.
    #[test]
    fn a_forged_locate_round_is_an_error_not_a_panic() {
        let step = step(0, "n[1-4]", "1(x4)", 4);
        let pair = |server_rank: usize, client_rank: usize| BenchPair {
            round: 9,
            server_rank,
            server_node: "n1".into(),
            client_rank,
            client_node: "n2".into(),
            local: 0,
            port: 18515,
        };
        for (round, says) in [
            (vec![pair(0, 99)], "in a step of 4 tasks"),
            (vec![pair(usize::MAX, 1)], "in a step of 4 tasks"),
            (vec![pair(0, 1), pair(1, 2)], "in two pairs of one round"),
            (vec![pair(2, 2)], "in two pairs of one round"),
            (vec![], "a round of 0 pairs"),
        ] {
            let mut plan = Plan::locate(&step, 1, PairBy::Node, 18515).unwrap();
            let error = plan.add_bench_round(&step, &round).unwrap_err().to_string();
            assert!(error.contains("locate.json") && error.contains(says), "{round:?}: {error}");
        }
        let mut plan = Plan::locate(&step, 1, PairBy::Node, 18515).unwrap();
        let made = plan.add_bench_round(&step, &[pair(0, 1)]).unwrap();
        assert_eq!((made[0].server_rank, made[0].client_rank), (0, 1), "a real round still adds");
    }
}
