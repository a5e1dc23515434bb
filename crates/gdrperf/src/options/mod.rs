//! What the user asked for: the command line of every bench, spelled as perftest spells it, and
//! the configuration checked from it once, before any device is opened or socket bound.
//!
//! Look here for "where is `-Q` resolved?", "which flags does gdr-send-bw add?", "what does
//! `--help` show as the default?" or "where do the buffers of `--mem host,cuda --gpu 0,1` go?".
//! Nothing here touches a device or the network: it is plain data and the rules that check it,
//! so a typo costs nothing and the rest of the crate reads one validated [`BenchConfig`].
//!
//! - `args`: the options every bench shares ([`CommonArgs`]) and those of the bandwidth
//!   benches ([`BandwidthArgs`]); `latency` and `send` hold the latency and SEND/RECV
//!   benches' own.
//! - `config`: the validated configuration ([`BenchConfig`]) and its typed errors.
//! - `perftest_defaults`: perftest's defaults that depend on more than one flag (`-Q`, the
//!   TX depth, the duration window) as pure functions; [`perftest_flags`]: perftest's flags as a
//!   perftest user types them; `help`: each bench's `--help` with its own defaults.
//! - `placement`: where one side's buffers live, GPU by GPU and NIC by NIC, for a whole run;
//!   `repeated_gpus`: a GPU listed twice (lanes on one GPU) needs a NIC per entry.

pub(crate) mod args;
pub(crate) mod bandwidth;
pub(crate) mod bandwidth_checks;
pub mod bench;
pub(crate) mod config;
pub(crate) mod cpu_request;
pub(crate) mod help;
pub(crate) mod latency;
pub(crate) mod perftest_defaults;
pub mod perftest_flags;
pub(crate) mod placement;
pub(crate) mod repeated_gpus;
pub(crate) mod send;
pub(crate) mod values;

pub use args::{BandwidthArgs, BandwidthInlineArgs, CommonArgs, WriteImmediateArgs};
pub use bandwidth::BandwidthConfig;
pub use config::{BenchConfig, Role, StopRule, TestDefaults};
pub use help::parse_bench;
pub use repeated_gpus::check_bench_arguments;
