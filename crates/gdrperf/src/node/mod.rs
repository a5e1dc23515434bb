//! Facts of this machine a run reads but does not change (apart from pinning its own threads):
//! which CPUs sit near a NIC or GPU, the NIC port's counters, the PCIe links between the GPU and
//! the NIC. Look here for "which core does `--cpu auto` pick?", "where do the `nic_*` columns
//! come from?" or "what does the run header say of the PCIe path?".
//!
//! It reads sysfs and the topology crate, and names the run's buffers only to say which GPU
//! they are on. Where a measuring thread runs is all in [`cpu_placement`]: the choice near the
//! NIC (`--cpu`, `--numa-node`), the choice as data for the header and rows, and the latency
//! loops' short pin against TSC migration; only the parsing of the two flags stays with the
//! other options (`options::cpu_request`).
//! - [`cpu_placement`]: which CPUs a measuring thread runs on, and keeping it there.
//! - [`nic_counters`]: the port counters read around each size.
//! - `pcie`: the PCIe facts of the run's GPU and NIC for the header and the JSON metadata.

pub mod cpu_placement;
pub mod nic_counters;
pub(crate) mod pcie;
