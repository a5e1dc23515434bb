//! What a bench binary uses, in one import: `use gdrperf::prelude::*;`.
//!
//! A bench is a [`Benchmark`] (its descriptor in [`mod@bench`], its setup, its callbacks over a
//! [`Session`]) driven by one of the engines below, its command line parsed with
//! [`parse_bench`], run with [`run`] and its result turned into the exit code with [`exit`].
//! Everything else of the crate is the harness's own business.

pub use crate::bench::{self, Bench};
pub use crate::harness::args_latency::{
    latency_setup, AtomicArgs, InlineArgs, LatencyArgs, LatencyConfig, TestOptions, WriteLatencyArgs,
};
pub use crate::harness::args_send::{SendArgs, SendConfig};
pub use crate::harness::bandwidth::StreamOperation;
pub use crate::harness::config::ReadDepth;
pub use crate::harness::config::StagedRules;
pub use crate::harness::credits::CREDIT_RECEIVES;
pub use crate::harness::latency::{
    atomic_latency, check_atomic_counter, check_ping_pong, memory_header, ping_pong_initiator,
    ping_pong_responder, ping_pong_setup, prepare_ping_pong, prepare_ping_pong_check, prepare_read_source,
    read_latency, LatencyPlan, PingPong,
};
pub use crate::harness::ping_pong::{measure_ping_pong, ping_pong_row};
pub use crate::harness::send::SendStream;
pub use crate::harness::write_stream::OneSidedStream;
pub use crate::harness::{
    exit, parse_bench, run, BandwidthArgs, BandwidthConfig, BenchConfig, Benchmark, CommonArgs, Session,
    Setup,
};
pub use crate::output::latency_row::{
    measure_size, LatencyFigures, LatencyFiles, LatencyRow, LatencySettings,
};
pub use crate::output::rows::{BandwidthFigures, BandwidthSettings};
pub use crate::output::send_row::{SendBandwidthRow, SendFigures, SendSettings};
pub use crate::output::{BandwidthRow, RowContext};
pub use crate::verbs::{QueuePairSizes, RemoteAccess};
