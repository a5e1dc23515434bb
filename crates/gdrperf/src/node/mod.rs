//! Facts of this machine a run reads but does not change (apart from pinning its own threads):
//! which CPUs sit near a NIC or GPU, the NIC port's counters, the PCIe links between the GPU and
//! the NIC. Look here for "which core does `--cpu auto` pick?", "where do the `nic_*` columns
//! come from?" or "what does the run header say of the PCIe path?".
//!
//! It reads sysfs and the topology crate, and names the run's buffers only to say which GPU
//! they are on. Where the measuring thread runs (`--cpu`, `--cpu auto`) is decided in
//! [`cpu_placement`], from the request `options::cpu_request` parsed; `cpu_choice` is that
//! decision as data. The latency loops' own short pin against TSC migration (`engines::latency`)
//! leaves a thread that a placement already holds to one CPU as it is.
//! - [`cpu_placement`]: CPU pinning near a device; `cpu_choice`: the placement chosen, as data.
//! - [`nic_counters`]: the port counters read around each size.
//! - `pcie`: the PCIe facts of the run's GPU and NIC for the header and the JSON metadata.

pub(crate) mod cpu_choice;
pub mod cpu_placement;
pub mod nic_counters;
pub(crate) mod pcie;
