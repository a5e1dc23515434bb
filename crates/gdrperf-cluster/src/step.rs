//! What srun tells each task about its step: its rank, the task count, the nodes and how the
//! tasks were laid out over them.
//!
//! Every task of a step reads the same variables, so every task computes the same layout and
//! the same pairs without talking to the others. The layout (which rank runs on which node) is
//! not in any one variable: it follows from the node list, the tasks per node and the
//! distribution (block by default). We recompute it and then check it against what the task
//! can see of itself (`SLURMD_NODENAME`, `SLURM_LOCALID`), so that a layout we got wrong fails
//! loudly instead of pairing the wrong nodes.

use crate::error::{ClusterError, Result};
use crate::hostlist;

/// How srun spread the tasks over the nodes (`-m/--distribution`, first part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// Consecutive ranks fill a node before the next one (srun's default).
    Block,
    /// Ranks go round-robin over the nodes.
    Cyclic,
}

impl Distribution {
    /// Slurm's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Block => "block",
            Distribution::Cyclic => "cyclic",
        }
    }

    /// From [`Distribution::name`]'s word.
    pub fn from_name(name: &str) -> Option<Distribution> {
        [Distribution::Block, Distribution::Cyclic].into_iter().find(|each| each.name() == name)
    }
}

/// Where a rank runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// Index into [`SlurmStep::nodes`].
    pub node: usize,
    /// The task's index among the tasks of its node (`SLURM_LOCALID`).
    pub local: usize,
}

/// One task's view of its Slurm step.
#[derive(Debug, Clone)]
pub struct SlurmStep {
    /// This task's rank (`SLURM_PROCID`).
    pub rank: usize,
    /// Tasks in the step (`SLURM_STEP_NUM_TASKS`, else `SLURM_NTASKS`).
    pub tasks: usize,
    /// The step's nodes, expanded from the hostlist, in Slurm's order.
    pub nodes: Vec<String>,
    /// Tasks on each node, one count per entry of `nodes`.
    pub tasks_per_node: Vec<usize>,
    pub distribution: Distribution,
    /// `SLURM_JOB_ID` and `SLURM_STEP_ID`: names this run's results.
    pub job_id: String,
    pub step_id: String,
    /// Rank -> place, computed once.
    placements: Vec<Placement>,
    /// Node -> its ranks by local index: the inverse of `placements`.
    ranks_by_node: Vec<Vec<usize>>,
}

impl SlurmStep {
    /// Reads the step from this process's environment.
    pub fn from_env() -> Result<SlurmStep> {
        SlurmStep::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the step from any variable lookup (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<SlurmStep> {
        let first =
            |names: &[&'static str]| names.iter().find_map(|&name| lookup(name).map(|value| (name, value)));
        let required =
            |names: &[&'static str]| first(names).ok_or(ClusterError::MissingVariable { name: names[0] });
        let number = |(name, value): (&'static str, String)| -> Result<usize> {
            value.trim().parse().map_err(|_| ClusterError::BadVariable {
                name,
                value,
                reason: "not a number".into(),
            })
        };

        let rank = number(required(&["SLURM_PROCID"])?)?;
        let tasks = number(required(&["SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"])?)?;
        let (list_name, list) = required(&["SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"])?;
        let nodes = hostlist::expand(&list)?;
        let tasks_per_node = match first(&["SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"]) {
            Some((name, value)) => parse_tasks_per_node(&value)
                .map_err(|reason| ClusterError::BadVariable { name, value: value.clone(), reason })?,
            // One task per node is the only layout we can assume without being told.
            None if tasks == nodes.len() => vec![1; nodes.len()],
            None => return Err(ClusterError::MissingVariable { name: "SLURM_STEP_TASKS_PER_NODE" }),
        };
        if tasks_per_node.len() != nodes.len() {
            return Err(ClusterError::StepShape(format!(
                "{list_name} names {} nodes but the tasks-per-node list has {} entries",
                nodes.len(),
                tasks_per_node.len()
            )));
        }
        if tasks_per_node.iter().sum::<usize>() != tasks {
            return Err(ClusterError::StepShape(format!(
                "tasks per node {tasks_per_node:?} add up to {}, not the step's {tasks} tasks",
                tasks_per_node.iter().sum::<usize>()
            )));
        }
        if rank >= tasks {
            return Err(ClusterError::BadVariable {
                name: "SLURM_PROCID",
                value: rank.to_string(),
                reason: format!("not below the task count {tasks}"),
            });
        }
        let distribution = match lookup("SLURM_DISTRIBUTION") {
            None => Distribution::Block,
            Some(value) => match value.split([':', ',']).next().unwrap_or("") {
                "" | "block" => Distribution::Block,
                "cyclic" => Distribution::Cyclic,
                _ => {
                    return Err(ClusterError::BadVariable {
                        name: "SLURM_DISTRIBUTION",
                        value,
                        reason: "only block and cyclic layouts can be paired (srun -m block)".into(),
                    })
                }
            },
        };
        let mut step = SlurmStep::from_layout(nodes, tasks_per_node, distribution);
        step.rank = rank;
        step.job_id = lookup("SLURM_JOB_ID").unwrap_or_else(|| "nojob".into());
        step.step_id = lookup("SLURM_STEP_ID").unwrap_or_else(|| "0".into());
        step.check_own_place(lookup("SLURMD_NODENAME"), lookup("SLURM_LOCALID"))?;
        Ok(step)
    }

    /// Rank 0's view of a step laid out so (what `plan.json` records: the gather computes the
    /// job's pairs again from it). The counts must match the nodes, one each.
    pub fn from_layout(
        nodes: Vec<String>,
        tasks_per_node: Vec<usize>,
        distribution: Distribution,
    ) -> SlurmStep {
        let placements = place(&tasks_per_node, distribution);
        let mut ranks_by_node: Vec<Vec<usize>> = tasks_per_node.iter().map(|&count| vec![0; count]).collect();
        for (rank, place) in placements.iter().enumerate() {
            ranks_by_node[place.node][place.local] = rank;
        }
        SlurmStep {
            rank: 0,
            tasks: placements.len(),
            nodes,
            tasks_per_node,
            distribution,
            job_id: "nojob".into(),
            step_id: "0".into(),
            placements,
            ranks_by_node,
        }
    }

    /// Where `rank` runs.
    pub fn placement(&self, rank: usize) -> Placement {
        self.placements[rank]
    }

    /// The rank at `local` on node `node`, if the node has that many tasks.
    pub fn rank_at(&self, node: usize, local: usize) -> Option<usize> {
        self.ranks_by_node.get(node)?.get(local).copied()
    }

    /// The node name of `rank`.
    pub fn node_of(&self, rank: usize) -> &str {
        &self.nodes[self.placements[rank].node]
    }

    /// `job.step`: what names this run's results.
    pub fn run_id(&self) -> String {
        format!("{}.{}", self.job_id, self.step_id)
    }

    /// Our computed place must be where Slurm says we are.
    fn check_own_place(&self, node_name: Option<String>, local_id: Option<String>) -> Result<()> {
        let ours = self.placement(self.rank);
        let mismatch = |what: String| {
            ClusterError::StepShape(format!(
                "rank {} computed to run on {} as local task {}, but {what}: this task layout \
                 (SLURM_DISTRIBUTION) cannot be paired; run srun with -m block",
                self.rank, self.nodes[ours.node], ours.local
            ))
        };
        if let Some(name) = node_name {
            if name != self.nodes[ours.node] {
                return Err(mismatch(format!("SLURMD_NODENAME is {name}")));
            }
        }
        if let Some(local) = local_id {
            if local.trim().parse::<usize>().ok() != Some(ours.local) {
                return Err(mismatch(format!("SLURM_LOCALID is {local}")));
            }
        }
        Ok(())
    }
}

/// `2(x3),1` -> [2, 2, 2, 1]: Slurm's compressed tasks-per-node list.
pub fn parse_tasks_per_node(text: &str) -> std::result::Result<Vec<usize>, String> {
    let mut counts = Vec::new();
    for item in text.split(',').map(str::trim) {
        let (count, repeat) = match item.split_once("(x") {
            Some((count, rest)) => {
                let repeat = rest.strip_suffix(')').ok_or_else(|| format!("{item:?}: expected N(xM)"))?;
                (count, repeat.parse::<usize>().map_err(|_| format!("{item:?}: {repeat:?} is not a count"))?)
            }
            None => (item, 1),
        };
        let count: usize = count.parse().map_err(|_| format!("{item:?}: {count:?} is not a task count"))?;
        if count == 0 || repeat == 0 || repeat > crate::hostlist::MAX_HOSTS {
            return Err(format!("{item:?}: counts must be positive"));
        }
        counts.extend(std::iter::repeat_n(count, repeat));
    }
    Ok(counts)
}

/// Rank -> place for the given layout.
fn place(tasks_per_node: &[usize], distribution: Distribution) -> Vec<Placement> {
    let mut placements = Vec::new();
    match distribution {
        Distribution::Block => {
            for (node, &count) in tasks_per_node.iter().enumerate() {
                placements.extend((0..count).map(|local| Placement { node, local }));
            }
        }
        Distribution::Cyclic => {
            // Round-robin, skipping nodes that are full (their counts may differ).
            let most = tasks_per_node.iter().copied().max().unwrap_or(0);
            for local in 0..most {
                for (node, &count) in tasks_per_node.iter().enumerate() {
                    if local < count {
                        placements.push(Placement { node, local });
                    }
                }
            }
        }
    }
    placements
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn step(variables: &[(&str, &str)]) -> Result<SlurmStep> {
        let map: HashMap<String, String> =
            variables.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        SlurmStep::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn tasks_per_node_lists_expand() {
        assert_eq!(parse_tasks_per_node("2(x3),1"), Ok(vec![2, 2, 2, 1]));
        assert_eq!(parse_tasks_per_node("8"), Ok(vec![8]));
        assert!(parse_tasks_per_node("2(x").is_err());
        assert!(parse_tasks_per_node("0").is_err());
        assert!(parse_tasks_per_node("a").is_err());
    }

    #[test]
    fn block_layout_fills_each_node_in_turn() {
        let step = step(&[
            ("SLURM_PROCID", "3"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_JOB_NODELIST", "gpu[07-08]"),
            ("SLURM_TASKS_PER_NODE", "2(x2)"),
            ("SLURMD_NODENAME", "gpu08"),
            ("SLURM_LOCALID", "1"),
        ])
        .unwrap();
        assert_eq!(step.nodes, ["gpu07", "gpu08"]);
        assert_eq!(step.placement(1), Placement { node: 0, local: 1 });
        assert_eq!(step.node_of(2), "gpu08");
        assert_eq!(step.rank_at(1, 0), Some(2));
    }

    #[test]
    fn cyclic_layout_goes_round_robin() {
        let step = step(&[
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "3"),
            ("SLURM_STEP_NODELIST", "a,b"),
            ("SLURM_STEP_TASKS_PER_NODE", "2,1"),
            ("SLURM_DISTRIBUTION", "cyclic:block"),
            ("SLURMD_NODENAME", "b"),
        ])
        .unwrap();
        assert_eq!((0..3).map(|rank| step.node_of(rank)).collect::<Vec<_>>(), ["a", "b", "a"]);
    }

    #[test]
    fn one_task_per_node_needs_no_tasks_per_node_list() {
        let step =
            step(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2"), ("SLURM_JOB_NODELIST", "n[1-2]")]).unwrap();
        assert_eq!(step.tasks_per_node, [1, 1]);
        assert_eq!(step.run_id(), "nojob.0");
    }

    #[test]
    fn outside_srun_and_inconsistent_steps_are_named() {
        let message = |variables: &[(&str, &str)]| step(variables).unwrap_err().to_string();
        assert!(message(&[]).contains("SLURM_PROCID is not set: run this under srun"));
        assert!(message(&[("SLURM_PROCID", "x"), ("SLURM_NTASKS", "2"), ("SLURM_JOB_NODELIST", "a")])
            .contains("not a number"));
        assert!(message(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "3"),
            ("SLURM_JOB_NODELIST", "a,b"),
            ("SLURM_TASKS_PER_NODE", "1(x2)")
        ])
        .contains("add up to 2, not the step's 3 tasks"));
        assert!(message(&[("SLURM_PROCID", "5"), ("SLURM_NTASKS", "2"), ("SLURM_JOB_NODELIST", "a,b")])
            .contains("not below"));
        assert!(message(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_JOB_NODELIST", "a,b"),
            ("SLURM_DISTRIBUTION", "plane=2")
        ])
        .contains("only block and cyclic"));
        // Slurm says we are elsewhere than the block layout puts us.
        assert!(message(&[
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_JOB_NODELIST", "a,b"),
            ("SLURMD_NODENAME", "a")
        ])
        .contains("SLURMD_NODENAME is a"));
    }
}
