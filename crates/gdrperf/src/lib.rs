//! gdrperf's core: safe RDMA verbs wrappers and the benchmark harness.
//!
//! Read it top-down like a tutorial:
//! - [`verbs`]: open a device, register memory, create a completion queue and a reliable
//!   connected queue pair, exchange endpoints, connect, post, poll.
//! - [`exchange`]: the out-of-band TCP channel peers use to find each other.
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
//! `examples/rdma_write.rs` is the smallest complete program using the verbs layer alone.

pub mod bench;
pub mod engines;
pub mod error;
pub mod exchange;
pub mod harness;
pub mod memory;
pub mod memory_kind;
pub mod node;
pub mod options;
pub mod output;
pub mod prelude;
pub mod verbs;

pub use error::{Error, Result};
