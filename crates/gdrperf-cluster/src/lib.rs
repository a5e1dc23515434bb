//! gdrperf on a cluster: from a Slurm step to one verdict per node pair.
//!
//! Acceptance testing of a GPU cluster means measuring every node (and every GPU/NIC of it)
//! against others across the fabric. Under `srun`, every task of the step runs the same
//! `gdrperf slurm -- BENCH ARGS`, and this crate lets each of them work out, from Slurm's
//! environment alone, what to do:
//!
//! 1. [`step`]: read the rank, the task count and the node list ([`hostlist`] expands Slurm's
//!    `node[01-04,07]` syntax), and where each rank runs;
//! 2. [`schedule`]: who meets whom in which round (`pairs`, `ring`, `all-pairs`, `random`), and
//!    [`locate`]: the next round chosen from the last one's verdicts;
//! 3. [`plan`]: the concrete bench pairs: server rank, client rank, node names, TCP port,
//!    computed round by round when asked (a rank never lists the job's pairs);
//! 4. [`task`]: run this task's pairs, the bench binary as server (no HOST) or as client
//!    (the server's node name), one CSV/JSON per pair into a shared folder ([`layout`]);
//! 5. [`gather`] and [`summary`]: rank 0 merges all pairs into one CSV and one JSON for the job,
//!    decides each pair's [`verdict`] and names the nodes that failed, streaming: its memory does
//!    not grow with the pairs.
//!
//! ```
//! use gdrperf_cluster::{plan::{PairBy, Plan}, schedule::Schedule, step::SlurmStep};
//!
//! // What srun would set for rank 2 of `srun -N4 -n4`:
//! let env = [("SLURM_PROCID", "2"), ("SLURM_NTASKS", "4"), ("SLURM_JOB_NODELIST", "gpu[01-04]")];
//! let step = SlurmStep::from_lookup(|name| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))?;
//! let plan = Plan::new(&step, Schedule::Pairs, PairBy::Node, 18515)?;
//! let pair = plan.assignments(&step, step.rank).next().unwrap();
//! assert_eq!((pair.server_node.as_str(), pair.client_node.as_str(), pair.port), ("gpu03", "gpu04", 18516));
//! # Ok::<(), gdrperf_cluster::ClusterError>(())
//! ```

pub mod coordinate;
pub mod error;
pub mod gather;
pub mod hostlist;
pub mod layout;
pub mod locate;
pub mod options;
pub mod plan;
pub mod random;
pub mod schedule;
mod spill;
pub mod step;
pub mod summary;
pub mod task;
pub mod verdict;
mod wait;

pub use error::{ClusterError, Result};
