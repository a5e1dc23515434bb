//! The CPUs chosen for a side's measuring thread, as the run header, the rows and the metadata
//! show them. Plain data, apart from how it is chosen (this folder's `mod.rs`), so that the
//! session, which carries it, names only this type and nothing of sysfs or of the options.

use serde::Serialize;

use crate::error::format_cpu_list;

/// Where a side's measuring thread runs: in the run header, the rows (`cpu`, `numa_node`) and
/// the JSON metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct CpuPlacement {
    /// The CPUs the thread is pinned to; empty when left to the scheduler.
    pub cpus: Vec<usize>,
    /// The NUMA node those CPUs (and the buffers) are on, when known.
    pub numa_node: Option<u32>,
    /// Why these: "NUMA node 0 of mlx5_0", "--cpu 1", "--cpu none", "rxe0 has no NUMA node ...".
    pub reason: String,
}

impl CpuPlacement {
    /// The `cpu` column: the CPU list ("0-15", "1") or "none".
    pub fn cpu_column(&self) -> String {
        if self.cpus.is_empty() {
            "none".into()
        } else {
            format_cpu_list(&self.cpus)
        }
    }

    /// The header line: "CPUs 0-15 (NUMA node 0 of mlx5_0)", "not pinned (--cpu none)".
    pub fn describe(&self) -> String {
        match self.cpus.len() {
            0 => format!("not pinned ({})", self.reason),
            1 => format!("CPU {} ({})", format_cpu_list(&self.cpus), self.reason),
            _ => format!("CPUs {} ({})", format_cpu_list(&self.cpus), self.reason),
        }
    }
}
