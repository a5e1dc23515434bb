//! Judging a fleet: which NIC port, GPU, node or link is slow, from the rows of many pairs.
//!
//! `gdrperf slurm` gathers every pair's rows on rank 0; a part 20-40 % below its peers passes
//! every threshold and hides in that table. Here each comparable class of rows (test, size,
//! memory kinds) is fitted as class level + sender's effect + receiver's effect + residual in
//! log bandwidth, robustly ([`fit`]); ports with low effects, nodes whose ports are mostly low,
//! and pairs with low residuals are named with their deficit, their evidence and a
//! Bonferroni-adjusted p ([`judge`]). Rows that dip for a moment (a shared fabric) are counted
//! and a place is named only when it dips more often than its class ([`transient`]: links from
//! agreeing rows, intermittent ports, pairs to retest); rails are named once ([`shared`]), and
//! so is a switch slow towards the rest where the user gives a switch map ([`switch_map`]), or
//! a group the node names give ([`node_names`]); [`retested`] says what a job's live retests
//! came to. The
//! same input gives the same verdict: every pass visits the rows in their order, every list is
//! sorted before it is reported. [`read`] accounts for every row of the files.
//!
//! [`base`] compares a job with an earlier one, part by part, keyed by the parts' identities.
//!
//! [`simulate`] proves it at scale: a synthetic fleet with planted faults, measured by a schedule
//! of `gdrperf-cluster`, judged by the same code.
//!
//! ```
//! use gdrperf_fleet::{judge::{judge, JudgeConfig, PartKind}, observation::{ClassInfo, Observation, Stored}};
//!
//! // Eight nodes, all pairs, 100 Gb/s except node 3 at 60 Gb/s with everyone.
//! let mut fleet = Stored::default();
//! let class = fleet.catalog.class("write_bw", || ClassInfo {
//!     label: "write_bw 1 MiB".into(), gpu_memory: false, host_memory: true, ceiling_gbps: None });
//! for a in 0..8 {
//!     for b in 0..8 {
//!         if a == b { continue; }
//!         let sender = fleet.catalog.port(&format!("n{a}"), "mlx5_0");
//!         let receiver = fleet.catalog.port(&format!("n{b}"), "mlx5_0");
//!         let gbps: f64 = if a == 3 || b == 3 { 60.0 } else { 100.0 };
//!         fleet.rows.push(Observation { class, sender, receiver, directed: true, log_gbps: gbps.ln() as f32 });
//!     }
//! }
//! let verdict = judge(&fleet, &JudgeConfig::default());
//! assert_eq!(verdict.findings.len(), 1);
//! assert_eq!((verdict.findings[0].kind, verdict.findings[0].node.as_str()), (PartKind::NicPort, "n3"));
//! ```

pub mod base;
mod evidence;
pub mod fit;
pub mod judge;
pub mod node_names;
pub mod normal;
pub mod observation;
pub mod read;
pub mod report;
pub mod retested;
pub mod shared;
pub mod simulate;
pub mod simulate_files;
pub mod switch_map;
pub mod transient;
pub mod verdict;
