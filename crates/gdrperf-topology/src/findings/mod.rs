//! One judgement of a node's PCIe facts, used by both `gdrperf doctor` (its verdict) and a
//! row's causes (`gdrperf-ceiling`): the same finding, in the same words, whether the
//! acceptance engineer runs the doctor before any traffic or reads a short row afterwards.
//!
//! A [`Finding`] names its [`Level`], the device it is about, what to do about it and where the
//! judgement comes from ([`Check::source`]: a vendor document, the PCIe specification, the
//! kernel's documentation, or a statement that no public source gives a cost). Where nothing
//! public quantifies a cost the finding is a warning, never a failure. The table of checks with
//! their levels and sources is docs/findings.md.
//!
//! Two functions judge, both pure over facts ([`read`] gets those from sysfs):
//! - [`device_findings`]: one GPU or NIC on its own (its link, Device Control, AER counters);
//! - [`path_findings`]: every device between a paired GPU and NIC (bridges' links and AER
//!   counters, Max Payload Size along the path, ACS on the switch ports).
//!
//! The doctor's verdict lists them all; a row's causes rank the same findings by the limit they
//! bind (docs/methodology.md, "Causes").

mod finding;
mod judge;
pub mod read;

pub use finding::{Check, Device, Finding, Level, Link, PathBridge, PathFacts, Role};
pub use judge::{device_findings, iommu_finding, path_findings, TUNED_MAX_READ_REQUEST_BYTES};

#[cfg(test)]
mod tests;
