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
use crate::schedule::{Pair, Schedule};
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

/// Every pair of the step, in round order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub schedule: String,
    pub pair_by: String,
    pub rounds: usize,
    pub pairs: Vec<BenchPair>,
    /// Nodes (or `node/rank` for task pairing) that the schedule leaves out.
    pub left_out: Vec<String>,
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
        Plan::from_rounds(step, schedule.name(), |units| schedule.rounds(units), pair_by, base_port)
    }

    /// The plan of the rounds `rounds` gives for the step's unit count, named `schedule`: the
    /// fixed schedules, or the first pass of `locate` (whose later rounds [`Plan::add_round`]
    /// appends as rank 0 decides them).
    pub fn from_rounds(
        step: &SlurmStep,
        schedule: &str,
        rounds: impl FnOnce(usize) -> Vec<Vec<Pair>>,
        pair_by: PairBy,
        base_port: u16,
    ) -> Result<Plan> {
        let (units, _) = pair_by.units(step)?;
        let mut plan = Plan {
            schedule: schedule.to_string(),
            pair_by: pair_by.name().to_string(),
            rounds: 0,
            pairs: Vec::new(),
            left_out: Vec::new(),
        };
        let rounds = rounds(units);
        let mut paired = vec![false; units];
        for round in &rounds {
            for pair in round {
                paired[pair.server] = true;
                paired[pair.client] = true;
            }
            plan.add_round(step, pair_by, base_port, round)?;
        }
        plan.left_out =
            (0..units).filter(|&unit| !paired[unit]).map(|unit| pair_by.unit_name(step, unit)).collect();
        Ok(plan)
    }

    /// Appends one round of unit pairs as the next round; returns its bench pairs.
    pub fn add_round(
        &mut self,
        step: &SlurmStep,
        pair_by: PairBy,
        base_port: u16,
        round_pairs: &[Pair],
    ) -> Result<Vec<BenchPair>> {
        let (_, per_unit) = pair_by.units(step)?;
        let widest = round_pairs.len() * per_unit;
        let last = u32::from(base_port) + widest as u32 - 1;
        if widest > 0 && last > u32::from(u16::MAX) {
            return Err(ClusterError::PortRange { first: base_port.into(), last, pairs: widest });
        }
        // unit -> (rank, node) for local task `local`.
        let endpoint = |unit: usize, local: usize| -> (usize, String) {
            let rank = match pair_by {
                PairBy::Node => step.rank_at(unit, local).expect("uniform tasks per node checked above"),
                PairBy::Task => unit,
            };
            (rank, step.node_of(rank).to_string())
        };
        let round = self.rounds;
        let mut added = Vec::new();
        for (index, pair) in round_pairs.iter().enumerate() {
            for local in 0..per_unit {
                let (server_rank, server_node) = endpoint(pair.server, local);
                let (client_rank, client_node) = endpoint(pair.client, local);
                let port = (u32::from(base_port) + (index * per_unit + local) as u32) as u16;
                let local = step.placement(server_rank).local;
                added.push(BenchPair {
                    round,
                    server_rank,
                    server_node,
                    client_rank,
                    client_node,
                    local,
                    port,
                });
            }
        }
        self.rounds += 1;
        self.pairs.extend(added.iter().cloned());
        Ok(added)
    }

    /// The pairs `rank` takes part in, in round order (at most one per round).
    pub fn assignments(&self, rank: usize) -> impl Iterator<Item = &BenchPair> {
        self.pairs.iter().filter(move |pair| pair.server_rank == rank || pair.client_rank == rank)
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
        let plan = Plan::new(&step(0, "n[1-5]", "1(x5)", 5), Schedule::Pairs, PairBy::Node, 18515).unwrap();
        let summary: Vec<_> = plan
            .pairs
            .iter()
            .map(|p| (p.server_rank, p.client_rank, p.client_node.as_str(), p.port))
            .collect();
        assert_eq!(summary, [(0, 1, "n2", 18515), (2, 3, "n4", 18516)]);
        assert_eq!(plan.left_out, ["n5"]);
        assert_eq!(plan.pairs[1].label(), "r0_n3_n4_2-3");
    }

    #[test]
    fn gpus_pair_with_the_same_local_task_on_the_peer_node() {
        // Two nodes with 4 tasks each (block layout): ranks 0-3 on a, 4-7 on b.
        let plan = Plan::new(&step(5, "a,b", "4(x2)", 8), Schedule::Pairs, PairBy::Node, 20000).unwrap();
        let summary: Vec<_> =
            plan.pairs.iter().map(|p| (p.server_rank, p.client_rank, p.local, p.port)).collect();
        assert_eq!(summary, [(0, 4, 0, 20000), (1, 5, 1, 20001), (2, 6, 2, 20002), (3, 7, 3, 20003)]);
        let mine: Vec<_> = plan.assignments(5).map(|p| p.side_of(5).unwrap().0).collect();
        assert_eq!(mine, [Role::Client]);
    }

    #[test]
    fn ring_rounds_give_each_node_both_roles() {
        let plan = Plan::new(&step(0, "n[1-3]", "1(x3)", 3), Schedule::Ring, PairBy::Node, 18515).unwrap();
        assert_eq!(plan.rounds, 3);
        let roles: Vec<_> = plan.assignments(0).map(|p| (p.round, p.side_of(0).unwrap().0)).collect();
        assert_eq!(roles, [(0, Role::Server), (2, Role::Client)]);
    }

    #[test]
    fn task_pairing_allows_one_node() {
        let plan = Plan::new(&step(1, "solo", "2", 2), Schedule::Pairs, PairBy::Task, 18515).unwrap();
        assert_eq!(plan.pairs.len(), 1);
        assert_eq!(plan.pairs[0].label(), "r0_solo_solo_0-1");
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
}
