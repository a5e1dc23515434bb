//! The PCIe facts of a run's GPU and NIC, for its header and JSON metadata: how their links
//! trained, Max Payload / Max Read Request and relaxed ordering, and ACS on every bridge between
//! them (what is wrong with them is judged once, by `gdrperf_topology::findings`: the header's "Finding"
//! lines). The reading is `gdrperf doctor`'s
//! ([`gdrperf_topology::pcie`]); this side only names the run's GPU and NIC, and the GPU's bus
//! id for the rows. The same reading gives this end's path facts ([`path_facts`]) for the
//! rows' ceiling and causes (`gdrperf-ceiling`).

use std::path::{Path, PathBuf};

use gdrperf_ceiling::{EndFacts, EndQuery, MemoryPath};
use gdrperf_topology::pcie::{run_facts, RunPcieFacts};

use crate::memory::buffers::BenchBuffer;
use crate::memory_kind::MemoryKind;
use crate::node::cpu_placement::CpuPlacement;
use crate::verbs::{Device, PortInfo, RelaxedOrdering};

/// Tests only: read the path facts under this directory instead of `/` (a fixture tree from
/// gdrperf-doctor-fixtures, as `gdrperf doctor --sysfs-root` reads one), so that a VM run can
/// show a real machine's ceiling and causes crossing the handshake.
pub const SYSFS_ROOT_VARIABLE: &str = "GDRPERF_PATH_SYSFS_ROOT";

/// The facts for this side's first buffer's GPU (if any) and its RDMA device, read from `/`.
pub fn run_pcie_facts(device: &Device, buffers: &[BenchBuffer]) -> RunPcieFacts {
    run_facts(Path::new("/"), gpu_bus_id(buffers).as_deref(), device.name())
}

/// The PCI bus id (with domain: 0000:19:00.0) of the GPU this side's buffers live on, if any:
/// shown next to every GPU index, since indices follow CUDA's order ([`gdrperf_cuda::GpuOrder`]).
pub fn gpu_bus_id(buffers: &[BenchBuffer]) -> Option<String> {
    buffers
        .first()
        .and_then(|buffer| buffer.gpu_index())
        .and_then(|index| gdrperf_cuda::Cuda::load().ok()?.gpu_info(index).ok())
        .map(|info| info.bus_id.to_string())
}

/// The CUDA UUID of the GPU of this end's first buffer (`GPU-...`); None for host memory,
/// without CUDA, or where the driver does not say.
pub fn gpu_uuid(buffers: &[BenchBuffer]) -> Option<String> {
    buffers
        .first()
        .and_then(|buffer| buffer.gpu_index())
        .and_then(|index| gdrperf_cuda::Cuda::load().ok()?.gpu_info(index).ok())
        .and_then(|info| info.uuid)
}

/// This end's path facts: the device's port and PCIe link, the GPU's when GPU memory is in the
/// path, and what lies between them, read under `/` (or [`SYSFS_ROOT_VARIABLE`]).
pub fn path_facts(device: &Device, port: &PortInfo, buffers: &[BenchBuffer], cpu: &CpuPlacement) -> EndFacts {
    let kind = buffers.first().map(BenchBuffer::kind).unwrap_or(MemoryKind::Host);
    let memory = match kind {
        MemoryKind::Host => MemoryPath::Host,
        MemoryKind::Cuda => MemoryPath::GpuDirect,
        // gdrperf stages only when asked: never a fallback from GPUDirect.
        MemoryKind::CudaStaged | MemoryKind::HostStaged => MemoryPath::Staged { fallback: false },
    };
    let gpu_bus_id = if kind.is_on_gpu() { gpu_bus_id(buffers) } else { None };
    let root = std::env::var_os(SYSFS_ROOT_VARIABLE).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"));
    let query = EndQuery {
        nic: device.name(),
        port: port.number,
        gpu_bus_id: gpu_bus_id.as_deref(),
        memory,
        active_mtu: Some(port.active_mtu.bytes()),
        max_mtu: Some(port.max_mtu.bytes()),
        thread_numa_node: cpu.numa_node,
    };
    let mut facts = EndFacts::read(&root, &query);
    // Refused (a stack without optional access flags) is neither: the cause of that is the stack's.
    facts.relaxed_ordering_asked = match crate::memory::buffers::relaxed_ordering(buffers) {
        RelaxedOrdering::Asked => Some(true),
        RelaxedOrdering::Off => Some(false),
        RelaxedOrdering::Refused => None,
    };
    facts
}
