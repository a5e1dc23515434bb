//! What a result row is made from besides its figures: the facts of the run that every row
//! repeats ([`RowContext`]) and both ends' path facts ([`RowPath`]). Its own module so that the
//! row types and their shared column groups read it without importing one another.

use std::sync::Arc;

use gdrperf_ceiling::EndFacts;
use serde::{Deserialize, Serialize};

/// Facts about the run that every row repeats, so that each row stands alone in a merged CSV:
/// the rows' shared columns are filled from it, once for all row types
/// ([`PlaceColumns::of`](crate::output::row_columns::PlaceColumns::of),
/// [`MachineColumns::of`](crate::output::row_columns::MachineColumns::of),
/// [`CeilingColumns::for_row`](crate::output::ceiling_columns::CeilingColumns::for_row)).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RowContext {
    pub test: String,
    pub host: String,
    pub peer_host: String,
    pub device: String,
    pub peer_device: String,
    pub mtu: u32,
    pub qps: u32,
    pub mem_local: crate::memory_kind::MemoryKind,
    pub mem_remote: crate::memory_kind::MemoryKind,
    pub gpu_local: String,
    pub gpu_remote: String,
    /// The lane of a `--concurrent` run ("0", "1", ...; "all" for the aggregate), else empty.
    pub lane: String,
    /// The measuring thread's CPUs ("0-15", "1", "none") and their NUMA node.
    pub cpu: String,
    pub numa_node: Option<u32>,
    /// The bus id of `gpu_local` (0000:19:00.0), empty for host memory.
    pub gpu_local_bus_id: String,
    /// `--tclass` (with `-R`, `-T/--tos`) and `-S/--sl` as asked; empty with `-R` where not given
    /// (rdma_cm's route).
    #[serde(default)]
    pub traffic_class: Option<u32>,
    #[serde(default)]
    pub service_level: Option<u32>,
    /// The identities of this side's NIC and GPU (sysfs `node_guid`, the CUDA UUID): empty
    /// where unknown (appended last).
    #[serde(default)]
    pub nic_node_guid: String,
    #[serde(default)]
    pub gpu_local_uuid: String,
    /// PCIe relaxed ordering on this side's registrations: `asked`, `off`
    /// (`--disable_pcie_relaxed`), `refused` (the stack refused the flag); empty where unknown.
    #[serde(default)]
    pub relaxed_ordering: String,
    /// This size's NIC counter deltas (set per size, before the row is made).
    #[serde(skip)]
    pub nic: crate::node::nic_counters::NicColumns,
    /// Both ends' path facts, for the bandwidth rows' ceiling columns (absent in unit tests).
    #[serde(skip)]
    pub path: Option<Arc<RowPath>>,
}

/// The ends of a row's path as the side writing it sees them.
#[derive(Debug, Clone)]
pub struct RowPath {
    /// Whether the side writing the row is the client.
    pub local_is_client: bool,
    pub local: EndFacts,
    /// The peer's facts from its hello (absent from an older peer).
    pub peer: Option<EndFacts>,
    /// How far below its ceiling a row may fall before its causes are listed, in percent.
    pub shortfall_percent: f64,
}

impl RowPath {
    pub fn new(is_client: bool, local: EndFacts, peer: Option<EndFacts>) -> Arc<RowPath> {
        Arc::new(RowPath {
            local_is_client: is_client,
            local,
            peer,
            shortfall_percent: gdrperf_ceiling::DEFAULT_SHORTFALL_PERCENT,
        })
    }
}
