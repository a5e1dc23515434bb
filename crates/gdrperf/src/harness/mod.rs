//! The shared benchmark harness: options, validated configuration, connected sessions, the size
//! sweep with peer synchronisation, and the measurement engines.
//!
//! A bench binary parses [`CommonArgs`] (plus its own), builds a [`BenchConfig`], implements
//! [`Benchmark`] and calls [`run`]. Everything else (roles, loopback, the exchange, warm-up,
//! timing, validation, CSV/JSON/console) lives here, once.

pub(crate) mod args;
pub(crate) mod args_latency;
pub(crate) mod args_send;
pub(crate) mod bandwidth;
pub(crate) mod barrier;
pub(crate) mod benchmark;
pub(crate) mod buffers;
pub(crate) mod config;
pub mod credits;
pub(crate) mod help;
pub(crate) mod interrupt;
pub(crate) mod lanes;
pub(crate) mod latency;
pub(crate) mod memory;
pub(crate) mod pcie;
pub(crate) mod perftest_defaults;
pub mod perftest_flags;
pub(crate) mod ping_pong;
pub(crate) mod placement;
pub(crate) mod port_window;
pub(crate) mod roles;
pub(crate) mod run_header;
pub(crate) mod send;
pub(crate) mod session;
pub(crate) mod staged_receive;
pub mod staging;
pub mod stream_book;
pub(crate) mod sweep;
pub(crate) mod write_stream;

pub use args::{BandwidthArgs, CommonArgs};
pub use benchmark::{Benchmark, Setup};
pub use config::{BandwidthConfig, BenchConfig, Role, StopRule, TestDefaults};
pub use help::parse_bench;
pub use roles::run;
pub use session::{Session, Side};
pub use sweep::RunOutcome;

/// The latency loop's bookkeeping, for `benches/latency_loop.rs` (criterion benches link the
/// library from outside): not part of what the bench binaries use.
#[doc(hidden)]
pub mod latency_loop_parts {
    pub use super::config::LatencySpan;
    pub use super::latency::samples::{Continue, RoundTrip, Samples};
    pub use super::latency::LatencyPlan;
}

/// Runs a bench binary's body and turns its result into the exit code: 0 when every size
/// passed, 1 when a data check failed, 2 on any error (with the message on stderr), and 130 or 143
/// when SIGINT or SIGTERM stopped the sweep (the shell's codes for those signals; the sizes
/// finished before are in the result files).
pub fn exit(body: impl FnOnce() -> crate::Result<RunOutcome>) -> std::process::ExitCode {
    let program = program_name();
    match body() {
        Ok(RunOutcome { interrupted: Some(stop), .. }) => {
            eprintln!("{program}: {stop}; the sizes finished before it are in the result files");
            std::process::ExitCode::from(stop.signal.exit_code())
        }
        Ok(outcome) if outcome.validation_failures.is_empty() && outcome.threshold_failures.is_empty() => {
            std::process::ExitCode::SUCCESS
        }
        Ok(outcome) => {
            for failure in &outcome.validation_failures {
                eprintln!("{program}: FAIL: data check failed at {failure}");
            }
            if !outcome.threshold_failures.is_empty() {
                eprintln!(
                    "{program}: FAIL: {} size(s) missed the acceptance thresholds",
                    outcome.threshold_failures.len()
                );
            }
            std::process::ExitCode::from(1)
        }
        Err(error) => {
            eprintln!("{program}: error: {error}");
            std::process::ExitCode::from(2)
        }
    }
}

/// This process's binary name ("gdr-write-bw"), which starts every line it prints on stderr.
pub use gdrperf_process::program_name;
