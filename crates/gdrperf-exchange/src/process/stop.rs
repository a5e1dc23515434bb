//! Ctrl-C and `kill`: stopping a sweep without losing what it measured.
//!
//! The default action of SIGINT and SIGTERM ends the process wherever it is: in the middle of a
//! size, with the peer left to find out by timeout. During a sweep we take the signals over
//! instead. The first one only sets a [`StopFlag`]; the measurement loops and the waits on the
//! control channel look at the flag, stop posting, let the queue drain, tell the peer, and the
//! sweep returns with the sizes finished so far already in the CSV/JSON files. The exit status
//! is then the shell's convention for death by that signal (130, 143), so scripts see the same
//! status as before, but with the results kept.
//!
//! A second signal ends the process at once (signal-hook's conditional shutdown): an operator
//! who presses Ctrl-C twice means it, and must never wait on a drain that does not finish.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;

/// The signals that stop a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    /// Ctrl-C.
    Interrupt,
    /// `kill`, a batch scheduler's time limit, a container stopping.
    Terminate,
}

impl StopSignal {
    fn number(self) -> i32 {
        match self {
            StopSignal::Interrupt => SIGINT,
            StopSignal::Terminate => SIGTERM,
        }
    }

    fn from_number(number: usize) -> Option<StopSignal> {
        [StopSignal::Interrupt, StopSignal::Terminate]
            .into_iter()
            .find(|signal| signal.number() as usize == number)
    }

    /// "SIGINT", "SIGTERM".
    pub fn name(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "SIGINT",
            StopSignal::Terminate => "SIGTERM",
        }
    }

    /// 128 + the signal number: what a shell reports for a process the signal killed (130, 143).
    pub fn exit_code(self) -> u8 {
        128 + self.number() as u8
    }
}

impl std::fmt::Display for StopSignal {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

/// Whether, and by which signal, the operator asked this run to stop. Cloned into everything
/// that loops or waits; cheap to check (one atomic load).
#[derive(Debug, Clone, Default)]
pub struct StopFlag {
    /// 0 while running, else the number of the first stop signal received.
    signal: Arc<AtomicUsize>,
}

impl StopFlag {
    /// The signal that asked us to stop, if one did.
    pub fn requested(&self) -> Option<StopSignal> {
        StopSignal::from_number(self.signal.load(Ordering::Relaxed))
    }

    /// Asks for a stop as if `signal` had arrived (tests, and callers embedding the harness).
    pub fn request(&self, signal: StopSignal) {
        let _ =
            self.signal.compare_exchange(0, signal.number() as usize, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// A stop signal's handler could not be installed. Its own type (gdrperf's `Error::Signal` wraps
/// it), since this crate sits below the one that defines the harness's error.
#[derive(Debug, thiserror::Error)]
#[error("cannot install the {signal} handler: {source}")]
pub struct SignalError {
    pub signal: &'static str,
    #[source]
    pub source: std::io::Error,
}

/// Installs the handlers that feed `stop` for the rest of the process. Any second stop signal,
/// of either kind, ends the process at once with that signal's exit code.
///
/// They are never removed: signal-hook cannot give a signal its default action back, so removing
/// them would leave Ctrl-C ignored. The bench binaries exit right after the sweep anyway, and
/// until then a second signal still ends the process at once.
pub fn install_signal_handlers(stop: &StopFlag) -> Result<(), SignalError> {
    let asked_before = Arc::new(AtomicBool::new(false));
    for signal in [StopSignal::Interrupt, StopSignal::Terminate] {
        let number = signal.number();
        let failed = |source| SignalError { signal: signal.name(), source };
        // Order matters: the shutdown looks at the flag before this same signal sets it, so it
        // fires on the second signal only.
        flag::register_conditional_shutdown(number, i32::from(signal.exit_code()), Arc::clone(&asked_before))
            .map_err(failed)?;
        flag::register(number, Arc::clone(&asked_before)).map_err(failed)?;
        flag::register_usize(number, Arc::clone(&stop.signal), number as usize).map_err(failed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_map_to_the_shell_exit_codes() {
        assert_eq!(StopSignal::Interrupt.exit_code(), 130);
        assert_eq!(StopSignal::Terminate.exit_code(), 143);
        assert_eq!(StopSignal::Terminate.to_string(), "SIGTERM");
    }

    #[test]
    fn the_first_request_wins() {
        let stop = StopFlag::default();
        assert_eq!(stop.requested(), None);
        stop.request(StopSignal::Terminate);
        stop.request(StopSignal::Interrupt);
        assert_eq!(stop.clone().requested(), Some(StopSignal::Terminate));
    }

    #[test]
    fn a_real_signal_sets_the_flag_instead_of_killing_us() {
        let stop = StopFlag::default();
        install_signal_handlers(&stop).unwrap();
        // SIGTERM to ourselves: without the handler this would end the test process.
        signal_hook::low_level::raise(SIGTERM).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while stop.requested().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(stop.requested(), Some(StopSignal::Terminate));
    }

    /// The second signal must end the process at once with the signal's code, whatever the
    /// first one started. That ends the process it happens in, so the test runs itself again as
    /// a child that takes two SIGINTs.
    #[test]
    fn a_second_signal_ends_the_process_at_once() {
        const CHILD: &str = "GDRPERF_TEST_SIGNAL_CHILD";
        if std::env::var_os(CHILD).is_some() {
            let stop = StopFlag::default();
            install_signal_handlers(&stop).unwrap();
            signal_hook::low_level::raise(SIGINT).unwrap();
            assert_eq!(stop.requested(), Some(StopSignal::Interrupt), "the first signal only asks");
            signal_hook::low_level::raise(SIGINT).unwrap();
            std::thread::sleep(std::time::Duration::from_secs(30));
            std::process::exit(0); // not reached when the second signal works
        }
        // The test's own name, from its module path less the crate's name, so that moving the
        // module does not leave the child running no test (and exiting 0).
        let path = concat!(module_path!(), "::a_second_signal_ends_the_process_at_once");
        let name = path.split_once("::").map_or(path, |(_, name)| name);
        let started = std::time::Instant::now();
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--test-threads", "1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        assert_eq!(child.status.code(), Some(130), "{}", String::from_utf8_lossy(&child.stderr));
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }
}
