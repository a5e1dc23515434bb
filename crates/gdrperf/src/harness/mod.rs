//! The run: what drives a bench binary from its first line to its exit code. Look here for "who
//! is server and who is client?", "where does the size sweep meet the peer?", "how do
//! `--concurrent` lanes start together?" or "what happens on Ctrl-C?".
//!
//! A bench binary parses its options ([`crate::options`]), implements
//! [`Benchmark`] and calls [`run`]; the roles and the lanes of `--concurrent` (`roles`), the
//! connected [`Session`] and how it connects (`connect`), the size sweep with peer
//! synchronisation (`sweep`), the run header and the stop on a signal live here, once. The
//! per-size work is the bench's [`Engine`] (the measuring loops, [`crate::engines`]); the
//! buffers and staged copies are [`crate::memory`]'s.

pub(crate) mod barrier;
pub(crate) mod benchmark;
pub(crate) mod connect;
pub(crate) mod interrupt;
pub(crate) mod lanes_header;
pub(crate) mod port_window;
pub(crate) mod roles;
pub(crate) mod run_header;
pub(crate) mod session;
pub(crate) mod sweep;

pub use benchmark::{Benchmark, Engine, Setup};
pub use roles::run;
pub use session::{Session, Side};
pub use sweep::RunOutcome;

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
pub use gdrperf_exchange::process::program_name;
