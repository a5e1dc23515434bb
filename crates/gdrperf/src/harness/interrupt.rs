//! What a sweep that ends early says: where it was ([`SweepPosition`]), that a signal stopped
//! it ([`Interruption`]), and how the side that stopped or failed tells its peer
//! ([`conclude`]). The signals themselves are taken over in [`gdrperf_exchange::process::stop`].

use crate::error::{Error, Result};
use crate::exchange::{ExchangeError, Message};
use crate::harness::session::Session;
pub use gdrperf_exchange::process::{install_signal_handlers, StopFlag, StopSignal};

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

/// `--run-infinitely`'s own end: a SIGINT, which perftest's `run_iter_bw_infinitely` takes as
/// "User stopped traffic" (not a failure) in a unidirectional stream. The window under way is
/// dropped and the peer is told goodbye, so that it ends cleanly too (its `serve` takes a goodbye
/// in the middle of a size as the end); `None` when no SIGINT stopped the run.
pub fn stopped_as_asked(session: &mut Session, position: &SweepPosition) -> Option<Interruption> {
    let signal = session.control.stop_requested().filter(|signal| *signal == StopSignal::Interrupt)?;
    // A peer already gone needs no goodbye: the stop stands either way.
    let _ = session.control.send(&Message::Goodbye, "saying goodbye: the user stopped the traffic");
    // An endless run has no total: its windows are all it did.
    let finished = position.finished;
    Some(Interruption { signal, at: position.describe(), finished, total: finished.max(position.total) })
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
    let consequence_of_death =
        matches!(error, Error::Verbs(crate::verbs::VerbsError::Completion { .. }) | Error::Stalled { .. });
    let patience = std::time::Duration::from_millis(if consequence_of_death { 500 } else { 200 });
    match session.control.peer_gone(patience) {
        Some(ExchangeError::Closed { peer, .. }) if consequence_of_death => {
            Error::Exchange(ExchangeError::Closed {
                peer,
                during: format!("measuring (its process ended?); the error that followed here: {error}"),
            })
        }
        Some(ExchangeError::PeerFailed { peer, message }) => {
            // Both ends of a stalled stream time out alike: one story, told once.
            let same_story = message.contains(&error.to_string())
                || (matches!(error, Error::Stalled { .. }) && message.contains("no completion progress"));
            let message = match same_story {
                true => format!("{message} (no progress on this side either)"),
                false => format!("{message}; the error that followed here: {error}"),
            };
            Error::Exchange(ExchangeError::PeerFailed { peer, message })
        }
        _ => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
