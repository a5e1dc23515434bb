//! Watching the peer and the operator from inside a measurement loop.
//!
//! While a size is measured nobody reads the control channel: the loop spins on the completion
//! queue. If the peer process dies, its kernel closes the TCP connection at once, but RDMA only
//! notices after retries or never (a passive side just waits for messages that stop coming). So
//! the loops glance at the socket now and then, without reading from it, and at the stop flag
//! set by Ctrl-C. A [`PeerWatch`] shares the socket with the [`Control`](crate::Control), so that a loop
//! holding the session's queue pairs borrowed can still use it, and it checks through a shared
//! reference, so that every wait of a loop can hold one.

use std::cell::Cell;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{ExchangeError, ExchangeResult};
use crate::message::{decode_frame, Message};
use crate::process::{StopFlag, StopSignal};

/// How often a loop may look at the socket: rare enough to cost nothing measurable, often
/// enough that a dead peer is noticed in a blink.
pub const PEER_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// Bytes looked at without consuming them: a `Failed` message fits, with its reason.
const PEEK_WINDOW: usize = 4096;

/// The peer's connection and the stop flag, as seen from a measurement loop.
#[derive(Debug)]
pub struct PeerWatch {
    stream: Arc<TcpStream>,
    peer: String,
    stop: StopFlag,
    last_check: Cell<Instant>,
}

impl PeerWatch {
    pub(super) fn new(stream: Arc<TcpStream>, peer: String, stop: StopFlag) -> PeerWatch {
        PeerWatch { stream, peer, stop, last_check: Cell::new(Instant::now()) }
    }

    pub(super) fn set_stop_flag(&mut self, stop: StopFlag) {
        self.stop = stop;
    }

    pub(super) fn stop_flag(&self) -> StopFlag {
        self.stop.clone()
    }

    /// The signal that asked this run to stop, if any (one atomic load: check it every turn).
    #[inline]
    pub fn stop_requested(&self) -> Option<StopSignal> {
        self.stop.requested()
    }

    /// Fails when the peer closed the connection (its process died) or sent a `Failed`. Looks
    /// at the socket at most every [`PEER_CHECK_INTERVAL`] and never consumes a byte, so a
    /// message the sweep reads later stays where it is.
    #[inline]
    pub fn check_peer(&self) -> ExchangeResult<()> {
        if self.last_check.get().elapsed() < PEER_CHECK_INTERVAL {
            return Ok(());
        }
        self.check_peer_now()
    }

    /// Both checks in one: `Interrupted` once a stop was asked for, else [`PeerWatch::check_peer`].
    /// For waits that cannot drain, which simply stop.
    #[inline]
    pub fn check(&self) -> ExchangeResult<()> {
        match self.stop_requested() {
            Some(signal) => Err(ExchangeError::Interrupted(signal)),
            None => self.check_peer(),
        }
    }

    /// How many bytes wait unread on the socket (at most [`PEEK_WINDOW`]), looked at without
    /// consuming them: lets a test wait until what the peer wrote has arrived, and see that a
    /// check left it where it was.
    #[cfg(test)]
    pub(crate) fn bytes_waiting(&self) -> usize {
        let mut window = [0u8; PEEK_WINDOW];
        usize::try_from(self.peek(&mut window)).unwrap_or(0)
    }

    /// recv(2) with MSG_PEEK into `window`, without waiting: the bytes stay on the socket for the
    /// exchange's own reads. Returns recv's result (bytes seen, 0 at the peer's close, -1 with
    /// errno set, EAGAIN where nothing waits).
    fn peek(&self, window: &mut [u8; PEEK_WINDOW]) -> isize {
        // SAFETY: recv writes at most `window.len()` bytes into `window`, which outlives the
        // call; the descriptor is open for as long as `self.stream` lives. MSG_DONTWAIT keeps the
        // socket's own blocking mode untouched (it is shared with the Control's handle).
        unsafe {
            libc::recv(
                self.stream.as_raw_fd(),
                window.as_mut_ptr().cast(),
                window.len(),
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        }
    }

    /// [`PeerWatch::check_peer`] without the rate limit.
    pub fn check_peer_now(&self) -> ExchangeResult<()> {
        self.last_check.set(Instant::now());
        let mut window = [0u8; PEEK_WINDOW];
        let received = self.peek(&mut window);
        let closed = || ExchangeError::Closed { peer: self.peer.clone(), during: "measuring".into() };
        match received {
            0 => Err(closed()),
            length if length > 0 => match decode_frame(&window[..length as usize]) {
                Ok(Some((Message::Failed { message }, _))) => {
                    Err(ExchangeError::PeerFailed { peer: self.peer.clone(), message })
                }
                // Only a client that ends an endless run says goodbye while a size is under way.
                Ok(Some((Message::Goodbye, _))) => Err(ExchangeError::PeerEnded { peer: self.peer.clone() }),
                // Anything else is for the sweep to read when it gets there.
                _ => Ok(()),
            },
            _ => {
                let error = std::io::Error::last_os_error();
                match error.kind() {
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => Ok(()),
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe => Err(closed()),
                    _ => Err(ExchangeError::Io {
                        peer: self.peer.clone(),
                        during: "measuring".into(),
                        source: error,
                    }),
                }
            }
        }
    }
}
