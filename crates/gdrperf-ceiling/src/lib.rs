//! What a bandwidth row should be, and why it is not.
//!
//! Users of GPUDirect benchmarks ask "is this number normal?" and "why is GPU bandwidth lower
//! than host?". Tools answer with a fixed fraction of the port rate; this crate answers from the
//! path: each end's facts ([`facts`]: port rate and MTU, the NIC's and GPU's PCIe links, Device
//! Control, the GPU-NIC path class, ACS, IOMMU, NUMA), read once from sysfs through
//! `gdrperf-topology` (the doctor's reading) and exchanged in the handshake. From them:
//!
//! 1. [`mod@ceiling`]: the least of the limits on the path ([`wire`], [`pcie_link`], staged copies),
//!    which one binds, and the row's percentage of it;
//! 2. [`mod@causes`]: for a row short of its ceiling by more than a level, the evidence on both ends,
//!    most likely first, each with a fix line.
//!
//! Pure functions over facts: the benches and `gdrperf explain` use the same code, and fixture
//! trees (gdrperf-doctor-fixtures) test it against real machine shapes. The formulas and their
//! sources are in docs/methodology.md, "Path ceilings".

pub mod causes;
pub mod ceiling;
pub mod facts;
pub mod pcie_link;
pub mod row;
pub mod wire;

use serde::{Deserialize, Serialize};

pub use causes::{causes, moved_error_counters, Cause, RowEvidence, ERROR_COUNTERS};
pub use ceiling::{ceiling, Ceiling, End, Limit, PathPart, Transfer, SOFTWARE_DEVICE};
pub use facts::{CopyRates, EndFacts, EndQuery, MemoryPath, PcieFacts};
pub use row::{judge_row, RowEnds, RowFigures};

/// How far below its ceiling a row may fall before its causes are listed, in percent. 10 %
/// echoes NVIDIA's acceptance criterion (90 % of the port rate, ngc_multinode_perf), applied
/// here to a ceiling that already excludes headers; a profile may set its own.
pub const DEFAULT_SHORTFALL_PERCENT: f64 = 10.0;

/// A row's ceiling columns and verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub ceiling_gbps: Option<f64>,
    pub ceiling_limited_by: String,
    pub pct_of_ceiling: Option<f64>,
    /// Whether the row is short: below its ceiling by more than the level, or failing a threshold.
    pub short: bool,
    /// Empty unless `short`; most likely first.
    pub causes: Vec<Cause>,
}

impl Judgement {
    /// The `ceiling_causes` column: each cause's line, joined by " | ".
    pub fn causes_column(&self) -> String {
        self.causes.iter().map(Cause::line).collect::<Vec<_>>().join(" | ")
    }
}

/// Judges one row: its ceiling from both ends, its percentage, and when it is short (below the
/// ceiling by more than `shortfall_percent`, or `threshold_failed`), the causes.
pub fn judge(
    ceiling: &Ceiling,
    measured_gbps: f64,
    shortfall_percent: f64,
    threshold_failed: bool,
    local: End,
    peer: Option<End>,
    row: &RowEvidence,
) -> Judgement {
    let pct_of_ceiling = ceiling.percent_of(measured_gbps);
    let short = threshold_failed || pct_of_ceiling.is_some_and(|pct| pct < 100.0 - shortfall_percent);
    Judgement {
        ceiling_gbps: ceiling.gbps(),
        ceiling_limited_by: ceiling.limited_by().to_string(),
        pct_of_ceiling,
        short,
        causes: if short { causes(ceiling, local, peer, row) } else { Vec::new() },
    }
}
