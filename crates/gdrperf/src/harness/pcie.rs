//! The PCIe facts of a run's GPU and NIC, for its header and JSON metadata: how their links
//! trained (a downtrained link gets a WARNING line), Max Payload / Max Read Request and relaxed
//! ordering, and ACS on every bridge between them. The reading is `gdrperf doctor`'s
//! ([`gdrperf_topology::pcie`]); this side only names the run's GPU and NIC.

use std::path::Path;

use gdrperf_topology::pcie::{run_facts, RunPcieFacts};

use crate::harness::session::LocalResources;

/// The facts for this side's first buffer's GPU (if any) and its RDMA device, read from `/`.
pub fn run_pcie_facts(local: &LocalResources) -> RunPcieFacts {
    let gpu_bus_id = local
        .buffers
        .first()
        .and_then(|buffer| buffer.gpu_index())
        .and_then(|index| gdrperf_cuda::Cuda::load().ok()?.gpu_info(index).ok())
        .map(|info| info.bus_id.to_string());
    run_facts(Path::new("/"), gpu_bus_id.as_deref(), local.device.name())
}
