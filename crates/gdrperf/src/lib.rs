//! gdrperf's core: safe RDMA verbs wrappers and the benchmark harness.
//!
//! Read it top-down like a tutorial:
//! - [`verbs`]: open a device, register memory, create a completion queue and a reliable
//!   connected queue pair, exchange endpoints, connect, post, poll.
//! - [`exchange`]: the out-of-band TCP channel peers use to find each other.
//! - [`harness`]: what every benchmark shares (options, sweep, timing, validation).
//! - [`output`]: console table, CSV and JSON exporters.
//!
//! - [`prelude`]: what a bench binary imports (benches/src/bin/*.rs use nothing else).
//!
//! `examples/rdma_write.rs` is the smallest complete program using the verbs layer alone.

pub mod bench;
pub mod cpu_placement;
pub mod error;
pub mod exchange;
pub mod harness;
pub mod memory_kind;
pub mod nic_counters;
pub mod output;
pub mod prelude;
pub mod verbs;

pub use error::{Error, Result};
