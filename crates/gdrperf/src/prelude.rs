//! What a bench binary uses, in one import: `use gdrperf::prelude::*;`.
//!
//! A bench is a [`Benchmark`]: its descriptor (in [`mod@bench`]), its setup and one of the
//! engines below ([`OneSidedStream`], [`SendStream`], [`OneSidedLatency`], [`PingPongLatency`]),
//! which does the per-size work over a connected session. Its command line is parsed with
//! [`parse_bench`], it is run with [`run`] and its result turned into the exit code with
//! [`exit`]. Only the names benches/src/bin/*.rs use are here; everything else of the crate is
//! reached by its module path.

pub use crate::bench::{self, Bench};
pub use crate::engines::bandwidth::{StreamOperation, ATOMIC_COUNTER_OFFSET};
pub use crate::engines::credits::CREDIT_RECEIVES;
pub use crate::engines::latency::{
    latency_settings, one_sided_setup, ping_pong_setup, OneSidedLatency, OneSidedRequest, PingPong,
    PingPongLatency, PingPongOperation,
};
pub use crate::engines::one_sided::OneSidedStream;
pub use crate::engines::send::SendStream;
pub use crate::harness::{exit, run, Benchmark, Setup};
pub use crate::options::bandwidth::StagedRules;
pub use crate::options::config::OutsArgs;
pub use crate::options::latency::{
    AtomicArgs, AtomicOperation, InlineArgs, LatencyArgs, TestOptions, WriteLatencyArgs,
};
pub use crate::options::perftest_defaults::InlineRequest;
pub use crate::options::send::{SendArgs, SendConfig};
pub use crate::options::{
    parse_bench, BandwidthArgs, BandwidthConfig, BandwidthInlineArgs, BenchConfig, CommonArgs,
    WriteImmediateArgs,
};
pub use crate::verbs::{QueuePairSizes, RemoteAccess};
