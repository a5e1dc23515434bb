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
//!    most likely first, each with a fix line;
//! 3. [`mod@lanes`]: the ceiling of `--concurrent` lanes together, a link they share (lanes on one
//!    GPU) counted once.
//!
//! Pure functions over facts: the benches and `gdrperf explain` use the same code, and fixture
//! trees (gdrperf-doctor-fixtures) test it against real machine shapes. The formulas and their
//! sources are in docs/methodology.md, "Path ceilings".

pub mod causes;
pub mod ceiling;
pub mod facts;
pub mod lanes;
pub mod pcie_link;
pub mod row;
pub mod wire;

pub use causes::{causes, moved_error_counters, Cause, RowEvidence, ERROR_COUNTERS};
pub use ceiling::{ceiling, Ceiling, End, Limit, PathPart, Transfer, SOFTWARE_DEVICE};
pub use facts::{CopyRates, EndFacts, EndQuery, MemoryPath, PcieFacts};
pub use lanes::{LaneCeiling, SharedLink};
pub use row::{judge, judge_row, row_links, Judgement, RowEnds, RowFigures, DEFAULT_SHORTFALL_PERCENT};
