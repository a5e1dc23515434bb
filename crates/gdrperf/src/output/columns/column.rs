//! One entry of the column reference ([`Column`]), the shorthand that writes one, and the
//! sources many entries share: what the reference's list (`entries.rs`) is written with, apart
//! from the reference's own code so that the list needs nothing of the module that reads it.

use gdrperf_files::columns::ColumnName;

/// One column: what a reader of a result file needs to know about it.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    /// The unit of its values ("MiB/s", "s", "µs", "count"), or the kind of text it holds.
    pub unit: &'static str,
    pub meaning: &'static str,
    /// Where the value comes from: the measurement, the command line, the machine.
    pub source: &'static str,
}

/// Shorthands for the sources.
pub(super) const MEASURED: &str = "measured: the run's timestamps, through gdrperf-stats";
pub(super) const FLAGS: &str = "the command line (or its default)";
pub(super) const RUN: &str = "the run: this host and the peer, exchanged in the handshake";
pub(super) const COUNTERS: &str =
    "the port's counters in sysfs, read before and after the size (gdrperf::node::nic_counters)";
pub(super) const MEASURED_OR_COPY: &str =
    "measured: a bench's timestamps, through gdrperf-stats; copy-bw's host clock around its copies";
pub(super) const COPY: &str =
    "gdrperf copy-bw: the CUDA driver's copies, timed by the host clock around them (gdrperf-cuda's CopyBench)";
pub(super) const ACCEPT: &str =
    "gdrperf accept: the profile, the node's inventory and the bench's result file";

pub(super) const fn column(
    name: ColumnName,
    unit: &'static str,
    meaning: &'static str,
    source: &'static str,
) -> Column {
    Column { name: name.name(), unit, meaning, source }
}
