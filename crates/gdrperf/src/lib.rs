//! gdrperf's core: the benchmark harness, over two layers of their own crates.
//!
//! Read it bottom-up like a tutorial: each part uses only those scripts/layers.toml puts below
//! it (scripts/test.sh checks it), and cargo keeps it so between crates (a crate cannot name
//! one above it):
//! - [`verbs`] (crate `gdrperf-verbs`): open a device, register memory, create a completion
//!   queue and a reliable connected queue pair, exchange endpoints, connect, post, poll.
//! - [`exchange`] (crate `gdrperf-exchange`): the out-of-band TCP channel peers use to find
//!   each other, agree on the run's terms and report; [`memory_kind`] is its word for where a
//!   side's buffers live.
//!   Its `process` module holds the operator's stop request (SIGINT, SIGTERM) and the
//!   program's name.
//!
//! The harness itself is in modules named for the question a reader brings:
//! - [`node`]: facts of this machine (CPUs near a device, NIC counters, PCIe links).
//! - [`options`]: the command line and the configuration checked from it before connecting.
//! - [`memory`]: the buffers, staged copies and the hooks the engines call around the wire.
//! - [`engines`]: the measuring loops (one-sided stream, SEND/RECV stream, latency).
//! - [`output`]: console table, CSV and JSON exporters.
//! - [`harness`]: the run that drives a bench: roles, the connected session, the size sweep,
//!   lanes, the run header, stopping on a signal.
//!
//! - [`prelude`]: what a bench binary imports (benches/src/bin/*.rs use nothing else).
//!
//! The smallest complete program using the verbs layer alone is gdrperf-verbs' example
//! `rdma_write.rs`; it depends on that crate only.

pub mod engines;
pub mod error;
pub mod harness;
pub mod memory;
pub mod node;
pub mod options;
pub mod output;
pub mod prelude;

/// The verbs layer, re-exported so that `gdrperf::verbs::...` (and the harness's
/// `crate::verbs::...`) name it as before it became a crate.
pub use gdrperf_verbs as verbs;

/// The control channel, re-exported as `gdrperf::exchange` for the same reason.
pub use gdrperf_exchange as exchange;

/// Where a side's buffers live, re-exported from the control channel that carries it.
pub use gdrperf_exchange::memory_kind;

pub use error::{Error, Result};

/// The benches' descriptors, at the crate's top as before: `gdrperf::bench::BENCHES`.
pub use options::bench;
