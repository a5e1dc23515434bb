//! The PCIe facts of a run's GPU and NIC, for its header and JSON metadata: how their links
//! trained (a downtrained link gets a WARNING line), Max Payload / Max Read Request and relaxed
//! ordering, and ACS on every bridge between them. The reading is `gdrperf doctor`'s
//! ([`gdrperf_topology::pcie`]); this side only names the run's GPU and NIC, and the GPU's bus
//! id for the rows.

use std::path::Path;

use gdrperf_topology::pcie::{run_facts, RunPcieFacts};

use crate::harness::session::LocalResources;

/// The facts for this side's first buffer's GPU (if any) and its RDMA device, read from `/`.
pub fn run_pcie_facts(local: &LocalResources) -> RunPcieFacts {
    run_facts(Path::new("/"), gpu_bus_id(local).as_deref(), local.device.name())
}

/// The PCI bus id (with domain: 0000:19:00.0) of the GPU this side's buffers live on, if any:
/// shown next to every GPU index, since indices follow CUDA's order ([`gdrperf_cuda::GpuOrder`]).
pub fn gpu_bus_id(local: &LocalResources) -> Option<String> {
    local
        .buffers
        .first()
        .and_then(|buffer| buffer.gpu_index())
        .and_then(|index| gdrperf_cuda::Cuda::load().ok()?.gpu_info(index).ok())
        .map(|info| info.bus_id.to_string())
}
