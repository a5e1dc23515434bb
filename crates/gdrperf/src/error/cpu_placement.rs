//! Why a thread cannot run where it was asked to, and the kernel's CPU list format those
//! messages (and the run header) spell CPUs in. Here, below the rest of the crate, so that the
//! crate's error can hold it without reaching up into `node`.

use std::io;

/// A placement this process cannot have, or a pinning that failed; shown after "CPU placement: ".
#[derive(Debug, thiserror::Error)]
pub enum CpuPlacementError {
    /// `--cpu` lists CPUs outside this process's CPU set (Slurm's, `taskset`'s).
    #[error(
        "--cpu {}: CPU {} not available to this process (it may use {})",
        format_cpu_list(.asked), format_cpu_list(.refused), format_cpu_list(.allowed)
    )]
    CpusNotAllowed { asked: Vec<usize>, refused: Vec<usize>, allowed: Vec<usize> },

    /// `--numa-node` names a node sysfs does not list (`known`: those it does).
    #[error(
        "--numa-node {node}: no such NUMA node (this machine has {})",
        if .known.is_empty() { "no NUMA information".to_string() } else { join(.known) }
    )]
    NoSuchNode { node: u32, known: Vec<u32> },

    /// `--numa-node`'s CPUs are all outside this process's CPU set.
    #[error(
        "--numa-node {node}: none of its CPUs ({}) is available to this process (it may use {})",
        format_cpu_list(.cpus), format_cpu_list(.allowed)
    )]
    NodeNotAllowed { node: u32, cpus: Vec<usize>, allowed: Vec<usize> },

    /// `sched_setaffinity` refused the chosen CPUs (`placement`: their description, as the
    /// run header gives it).
    #[error("cannot pin to {placement}: {source}")]
    Pin { placement: String, source: io::Error },

    /// A `--concurrent` lane's thread could not be pinned to its lane's placement.
    #[error("lane thread: {source}")]
    LaneThread { source: io::Error },
}

/// "0, 1, 2": node numbers as a sentence lists them.
fn join(nodes: &[u32]) -> String {
    nodes.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// The kernel's CPU list format from a sorted list: [0, 1, 2, 3, 8] -> "0-3,8".
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut index = 0;
    while index < cpus.len() {
        let first = cpus[index];
        let mut last = first;
        while index + 1 < cpus.len() && cpus[index + 1] == last + 1 {
            index += 1;
            last = cpus[index];
        }
        parts.push(if first == last { first.to_string() } else { format!("{first}-{last}") });
        index += 1;
    }
    parts.join(",")
}
