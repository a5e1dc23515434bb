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

use crate::error::{Error, Result};
use crate::exchange::ExchangeError;
use crate::harness::session::Session;

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

/// Installs the handlers that feed `stop` for the rest of the process. Any second stop signal,
/// of either kind, ends the process at once with that signal's exit code.
///
/// They are never removed: signal-hook cannot give a signal its default action back, so removing
/// them would leave Ctrl-C ignored. The bench binaries exit right after the sweep anyway, and
/// until then a second signal still ends the process at once.
pub fn install_signal_handlers(stop: &StopFlag) -> Result<()> {
    let asked_before = Arc::new(AtomicBool::new(false));
    for signal in [StopSignal::Interrupt, StopSignal::Terminate] {
        let number = signal.number();
        let failed = |source| Error::Signal { signal: signal.name(), source };
        // Order matters: the shutdown looks at the flag before this same signal sets it, so it
        // fires on the second signal only.
        flag::register_conditional_shutdown(number, i32::from(signal.exit_code()), Arc::clone(&asked_before))
            .map_err(failed)?;
        flag::register(number, Arc::clone(&asked_before)).map_err(failed)?;
        flag::register_usize(number, Arc::clone(&stop.signal), number as usize).map_err(failed)?;
    }
    Ok(())
}

/// Where a sweep is: the size under way and how many are done. A stop or an error names it.
#[derive(Debug, Clone)]
pub struct SweepPosition {
    total: usize,
    current: Option<usize>,
    last_finished: Option<usize>,
    finished: usize,
}

impl SweepPosition {
    pub fn new(total: usize) -> SweepPosition {
        SweepPosition { total, current: None, last_finished: None, finished: 0 }
    }

    /// A size begins.
    pub fn start(&mut self, size: usize) {
        self.current = Some(size);
    }

    /// The size under way is done (and, on the client, its row written).
    pub fn finish(&mut self) {
        self.last_finished = self.current.take();
        self.finished += 1;
    }

    /// "65536 bytes", or between sizes "the size after 4096 bytes".
    fn describe(&self) -> String {
        match (self.current, self.last_finished) {
            (Some(size), _) => format!("{size} bytes"),
            (None, Some(size)) => format!("the size after {size} bytes"),
            (None, None) => "the first size".to_string(),
        }
    }
}

/// A sweep a signal stopped: what the exit message says and the exit code comes from.
#[derive(Debug, Clone)]
pub struct Interruption {
    pub signal: StopSignal,
    /// Where it stopped ("65536 bytes").
    pub at: String,
    pub finished: usize,
    pub total: usize,
}

impl std::fmt::Display for Interruption {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "stopped by {} at {}, {} of {} sizes finished",
            self.signal, self.at, self.finished, self.total
        )
    }
}

/// Ends one side's sweep. A clean end is `Ok(None)`. A stop request wins over any error (once
/// the operator pulled the plug, what failed next is a consequence): `Ok(Some(..))`. Any other
/// error comes back naming the size and the peer. In the last two cases the peer is told why,
/// so that it exits with our reason instead of finding out by timeout.
pub fn conclude(
    session: &mut Session,
    result: Result<()>,
    position: &SweepPosition,
    side: &str,
) -> Result<Option<Interruption>> {
    let complete = position.finished == position.total;
    match (result, session.control.stop_requested()) {
        (Ok(()), _) if complete => Ok(None),
        (_, Some(signal)) => {
            let stop = Interruption {
                signal,
                at: position.describe(),
                finished: position.finished,
                total: position.total,
            };
            session.control.report_failure(&format!("the {side} was {stop}"));
            Ok(Some(stop))
        }
        (Ok(()), None) => Ok(None),
        (Err(error), None) => {
            // Looked at before we report: our own report makes a live peer close the connection.
            let error = blame_a_dead_peer(session, error);
            // The peer knows the size; it needs only what went wrong here.
            session.control.report_failure(&error.to_string());
            let peer = format!("{} ({})", session.peer.host, session.control.peer());
            Err(Error::Sweep { at: position.describe(), peer, source: Box::new(error) })
        }
    }
}

/// Puts the peer's story first when ours is a consequence of it. An RDMA error or a stall right
/// after the peer died or gave up is one: when the peer's socket closed or carries a failure,
/// say that, and keep our error as what followed. Any other error of ours is only preceded by
/// the peer's reported failure (a client stopped by Ctrl-C ends a ping-pong early, which the
/// server sees as a miscount); a closed socket then proves nothing, since we may be the cause.
fn blame_a_dead_peer(session: &Session, error: Error) -> Error {
    if matches!(error, Error::Exchange(_)) {
        return error; // already the peer's story
    }
    let consequence_of_death = matches!(error, Error::Completion { .. } | Error::Stalled { .. });
    let patience = std::time::Duration::from_millis(if consequence_of_death { 500 } else { 200 });
    match session.control.peer_gone(patience) {
        Some(ExchangeError::Closed { peer, .. }) if consequence_of_death => {
            Error::Exchange(ExchangeError::Closed {
                peer,
                during: format!("measuring (its process ended?); the error that followed here: {error}"),
            })
        }
        Some(ExchangeError::PeerFailed { peer, message }) => Error::Exchange(ExchangeError::PeerFailed {
            peer,
            message: format!("{message}; the error that followed here: {error}"),
        }),
        _ => error,
    }
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
    fn the_position_names_the_size_under_way_or_the_last_one_done() {
        let mut position = SweepPosition::new(3);
        assert_eq!(position.describe(), "the first size");
        position.start(2);
        assert_eq!(position.describe(), "2 bytes");
        position.finish();
        assert_eq!(position.describe(), "the size after 2 bytes");
        position.start(4);
        let stop = Interruption {
            signal: StopSignal::Interrupt,
            at: position.describe(),
            finished: position.finished,
            total: 3,
        };
        assert_eq!(stop.to_string(), "stopped by SIGINT at 4 bytes, 1 of 3 sizes finished");
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
        let started = std::time::Instant::now();
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "harness::interrupt::tests::a_second_signal_ends_the_process_at_once",
                "--test-threads",
                "1",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        assert_eq!(child.status.code(), Some(130), "{}", String::from_utf8_lossy(&child.stderr));
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }
}
