//! What a bench binary uses, in one import: `use gdrperf::prelude::*;`.
//!
//! A bench is a [`Benchmark`]: its descriptor (in [`mod@bench`]), its setup and one of the
//! engines below ([`OneSidedStream`], [`SendStream`], [`OneSidedLatency`], [`PingPongLatency`]),
//! which does the per-size work over a [`Session`]. Its command line is parsed with
//! [`parse_bench`], it is run with [`run`] and its result turned into the exit code with
//! [`exit`]. Everything else of the crate is the harness's own business.

pub use crate::bench::{self, Bench};
pub use crate::engines::bandwidth::{StreamOperation, ATOMIC_COUNTER_OFFSET};
pub use crate::engines::credits::CREDIT_RECEIVES;
pub use crate::engines::latency::{
    check_ping_pong, measure_size, memory_header, one_sided_setup, ping_pong_initiator, ping_pong_responder,
    ping_pong_setup, prepare_ping_pong, prepare_ping_pong_check, prepare_read_source, read_latency,
    LatencyPlan, OneSidedLatency, OneSidedRequest, PingPong,
};
pub use crate::engines::latency::{measure_ping_pong, ping_pong_row, PingPongLatency, PingPongOperation};
pub use crate::engines::one_sided::OneSidedStream;
pub use crate::engines::send::SendStream;
pub use crate::harness::latency_setup::latency_setup;
pub use crate::harness::{exit, run, Benchmark, Session, Setup};
pub use crate::options::bandwidth::StagedRules;
pub use crate::options::config::{OutsArgs, ReadDepth};
pub use crate::options::latency::{
    AtomicArgs, AtomicOperation, InlineArgs, LatencyArgs, LatencyConfig, TestOptions, WriteLatencyArgs,
};
pub use crate::options::send::{SendArgs, SendConfig};
pub use crate::options::{parse_bench, BandwidthArgs, BandwidthConfig, BenchConfig, CommonArgs};
pub use crate::output::latency_row::{LatencyFigures, LatencyFiles, LatencyRow, LatencySettings};
pub use crate::output::rows::{BandwidthFigures, BandwidthSettings};
pub use crate::output::send_row::{SendBandwidthRow, SendFigures, SendSettings};
pub use crate::output::{BandwidthRow, RowContext};
pub use crate::verbs::{QueuePairSizes, RemoteAccess};
