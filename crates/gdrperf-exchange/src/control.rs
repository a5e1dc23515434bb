//! The connected channel itself: framing, waits bounded by the timeout and the stop flag, and
//! the peer's failure reports. The handshake's steps (`auth`, `terms`, `handshake`) and the
//! server's door (`admit`) add their methods to [`Control`] in modules of their own.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::process::{StopFlag, StopSignal};

use crate::error::{ExchangeError, ExchangeResult};
use crate::message::{decode_body, encode, frame_length, Message};
use crate::peer_text::printable;
use crate::protocol::MAX_MESSAGE_BYTES;
use crate::watch::PeerWatch;

/// How long one read on the socket blocks before we look at the stop flag again: short enough
/// that Ctrl-C feels immediate, long enough to cost nothing.
const READ_SLICE: Duration = Duration::from_millis(200);

/// A connected control channel to the peer.
pub struct Control {
    /// Shared with the [`PeerWatch`]es handed to measurement loops.
    stream: Arc<TcpStream>,
    pub(crate) peer: String,
    /// How long a receive waits for the peer in all (the socket itself waits [`READ_SLICE`]).
    pub(crate) timeout: Duration,
    /// Whether we accepted this connection (the server speaks first).
    pub(crate) accepted: bool,
    /// Whether we already told the peer why we stop: it reads one reason, the first.
    failure_reported: bool,
    /// The stop flag, checked by every wait, and the peer check of measurement loops.
    watch: PeerWatch,
    /// While the handshake is vetted: the one deadline of the whole challenge and terms, however
    /// the peer spreads its bytes (a trickle of one byte per read slice cannot hold us longer).
    pub(crate) handshake_deadline: Option<Instant>,
    /// The largest frame accepted in the current state (see [`PRE_PROOF_MAX_BYTES`]).
    pub(crate) frame_limit: usize,
}

impl Control {
    /// Server side: listens on `address` and waits for one client.
    pub fn listen(address: SocketAddr) -> ExchangeResult<TcpListener> {
        TcpListener::bind(address)
            .map_err(|source| ExchangeError::Bind { address: address.to_string(), source })
    }

    /// Server side: accepts the client on an already bound listener.
    pub fn accept(listener: &TcpListener, timeout: Duration) -> ExchangeResult<Control> {
        let local = listener.local_addr().map(|address| address.to_string()).unwrap_or_default();
        let (stream, peer) = listener.accept().map_err(|source| ExchangeError::Io {
            peer: local,
            during: "accepting a client".into(),
            source,
        })?;
        Control::from_accepted(stream, peer.to_string(), timeout)
    }

    /// A connection this side accepted (the server speaks first on it).
    pub(crate) fn from_accepted(
        stream: TcpStream,
        peer: String,
        timeout: Duration,
    ) -> ExchangeResult<Control> {
        let mut control = Control::from_stream(stream, peer, timeout)?;
        control.accepted = true;
        Ok(control)
    }

    /// Server side: like [`Control::accept`], but gives up after `patience`, or as soon as
    /// `give_up` has a reason (the later lanes of a `--concurrent` run connect right after the
    /// first; none coming means the client failed, and its first lane's connection says why).
    /// `client` names who is expected, for the messages.
    pub fn accept_within(
        listener: &TcpListener,
        timeout: Duration,
        patience: Duration,
        client: &str,
        give_up: &mut dyn FnMut() -> Option<ExchangeError>,
    ) -> ExchangeResult<Control> {
        let io_error = |source| ExchangeError::Io {
            peer: client.to_string(),
            during: "accepting the next lane".into(),
            source,
        };
        listener.set_nonblocking(true).map_err(io_error)?;
        let deadline = Instant::now() + patience;
        let accepted = loop {
            match listener.accept() {
                Ok(accepted) => break Ok(accepted),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    if let Some(reason) = give_up() {
                        break Err(reason);
                    }
                    if Instant::now() >= deadline {
                        break Err(ExchangeError::Timeout {
                            peer: client.to_string(),
                            seconds: patience.as_secs(),
                            during: "waiting for its next lane to connect".into(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(error) if is_transient_accept_error(&error) => {}
                Err(error) => break Err(io_error(error)),
            }
        };
        listener.set_nonblocking(false).map_err(io_error)?;
        let (stream, peer) = accepted?;
        stream.set_nonblocking(false).map_err(io_error)?;
        let mut control = Control::from_stream(stream, peer.to_string(), timeout)?;
        control.accepted = true;
        Ok(control)
    }

    /// Client side: connects to `host:port`, retrying refused connections until `timeout`, so
    /// that a script may start client and server at the same moment. The first failure says so,
    /// once, on stderr: a mistyped port costs `--timeout`, and the user should know why it waits.
    pub fn connect(host: &str, port: u16, timeout: Duration, test: &str) -> ExchangeResult<Control> {
        Control::connect_until(host, port, Instant::now() + timeout, timeout, test)
    }

    /// [`Control::connect`] that stops retrying at `deadline` (a caller's retry loop has spent
    /// part of the time already) while the channel, once connected, keeps the user's whole
    /// `timeout` (`--timeout`) for its reads and writes, and messages name that `--timeout`.
    pub fn connect_until(
        host: &str,
        port: u16,
        deadline: Instant,
        timeout: Duration,
        test: &str,
    ) -> ExchangeResult<Control> {
        let address_text = format!("{host}:{port}");
        let addresses: Vec<SocketAddr> = (host, port)
            .to_socket_addrs()
            .map_err(|source| ExchangeError::Resolve { host: host.to_string(), source })?
            .collect();
        let mut said = false;
        loop {
            let mut last_error = io::Error::new(io::ErrorKind::NotFound, "no address");
            for address in &addresses {
                let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(100));
                match TcpStream::connect_timeout(address, left) {
                    Ok(stream) => return Control::from_stream(stream, address.to_string(), timeout),
                    Err(error) => last_error = error,
                }
            }
            if Instant::now() >= deadline {
                return Err(ExchangeError::Connect {
                    address: address_text,
                    seconds: timeout.as_secs(),
                    test: test.to_string(),
                    source: last_error,
                });
            }
            if !std::mem::replace(&mut said, true) {
                eprintln!(
                    "{}: {address_text}: {last_error}; retrying for up to {} s (--timeout) in case the server is starting",
                    crate::process::program_name(),
                    timeout.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn from_stream(stream: TcpStream, peer: String, timeout: Duration) -> ExchangeResult<Control> {
        let setup =
            |source| ExchangeError::Io { peer: peer.clone(), during: "setting up the socket".into(), source };
        stream.set_nodelay(true).map_err(setup)?;
        stream.set_read_timeout(Some(READ_SLICE)).map_err(setup)?;
        stream.set_write_timeout(Some(timeout)).map_err(setup)?;
        let stream = Arc::new(stream);
        let watch = PeerWatch::new(Arc::clone(&stream), peer.clone(), StopFlag::default());
        Ok(Control {
            stream,
            peer,
            timeout,
            accepted: false,
            failure_reported: false,
            watch,
            handshake_deadline: None,
            frame_limit: MAX_MESSAGE_BYTES,
        })
    }

    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// Changes how long a receive may wait (a long `-D` run waits longer for the peer's report).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// From now on every wait on the peer ends early with [`ExchangeError::Interrupted`] once
    /// `stop` is set, and measurement loops can ask [`Control::stop_requested`].
    pub fn set_stop_flag(&mut self, stop: StopFlag) {
        self.watch.set_stop_flag(stop);
    }

    /// The signal that asked this run to stop, if any: measurement loops check it each turn.
    #[inline]
    pub fn stop_requested(&self) -> Option<StopSignal> {
        self.watch.stop_requested()
    }

    /// For measurement loops: fails when the peer died or gave up (see [`PeerWatch`]).
    #[inline]
    pub fn check_peer(&self) -> ExchangeResult<()> {
        self.watch.check_peer()
    }

    /// A watch of its own, for a loop that holds the session borrowed while it measures.
    pub fn watch(&self) -> PeerWatch {
        PeerWatch::new(Arc::clone(&self.stream), self.peer.clone(), self.watch.stop_flag())
    }

    pub fn send(&mut self, message: &Message, during: &str) -> ExchangeResult<()> {
        (&*self.stream).write_all(&encode(message)).map_err(|source| self.io_error(source, during))
    }

    /// Receives one message. A `Failed` from the peer becomes [`ExchangeError::PeerFailed`].
    /// Waits at most the timeout in all, and less once the stop flag is set.
    pub fn receive(&mut self, during: &str) -> ExchangeResult<Message> {
        let mut deadline = Instant::now().checked_add(self.timeout).unwrap_or_else(far_future);
        if let Some(handshake) = self.handshake_deadline {
            deadline = deadline.min(handshake);
        }
        let mut prefix = [0u8; 4];
        self.read_until(&mut prefix, deadline, during)?;
        let too_large = |len| ExchangeError::TooLarge {
            peer: self.peer.clone(),
            len,
            limit: self.frame_limit,
            during: during.to_string(),
        };
        let len = frame_length(prefix).map_err(too_large)?;
        if len > self.frame_limit {
            return Err(too_large(len));
        }
        let mut body = vec![0u8; len];
        self.read_until(&mut body, deadline, during)?;
        match decode_body(&body) {
            Ok(Message::Failed { message }) => {
                // Already cleaned where it was decoded (`decode_body`).
                Err(ExchangeError::PeerFailed { peer: self.peer.clone(), message })
            }
            Ok(message) => Ok(message),
            Err(detail) => Err(ExchangeError::Decode {
                peer: self.peer.clone(),
                during: during.to_string(),
                detail: printable(&detail.to_string()),
            }),
        }
    }

    /// Receives and checks that the message is the one expected next.
    pub fn expect<T>(
        &mut self,
        expected: &'static str,
        during: &str,
        pick: impl FnOnce(Message) -> Result<T, Message>,
    ) -> ExchangeResult<T> {
        let message = self.receive(during)?;
        pick(message).map_err(|other| ExchangeError::Unexpected {
            peer: self.peer.clone(),
            expected,
            got: other.kind().to_string(),
        })
    }

    /// Best effort: tells the peer why we stop, so it exits with our reason instead of waiting.
    /// Only the first reason is sent: the peer stops reading after it.
    pub fn report_failure(&mut self, message: &str) {
        if !std::mem::replace(&mut self.failure_reported, true) {
            let _ = (&*self.stream).write_all(&encode(&Message::Failed { message: message.to_string() }));
        }
    }

    /// After a failure of our own (an RDMA error, most often): has the peer's end of the
    /// connection closed or reported a failure within `patience`? A peer process that dies takes
    /// its memory registrations with it, so our next RDMA request fails with "remote access
    /// error", which would send the reader looking for a key problem; the closed socket tells
    /// what really happened.
    pub fn peer_gone(&self, patience: Duration) -> Option<ExchangeError> {
        let deadline = Instant::now() + patience;
        loop {
            match self.watch.check_peer_now() {
                Err(
                    gone @ (ExchangeError::Closed { .. }
                    | ExchangeError::PeerFailed { .. }
                    | ExchangeError::PeerEnded { .. }),
                ) => return Some(gone),
                Err(_) => return None,
                Ok(()) => {}
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Fills `buffer` from the socket, one [`READ_SLICE`] at a time, looking at the stop flag and
    /// the deadline between slices.
    fn read_until(&mut self, buffer: &mut [u8], deadline: Instant, during: &str) -> ExchangeResult<()> {
        let mut filled = 0;
        while filled < buffer.len() {
            if let Some(signal) = self.watch.stop_requested() {
                return Err(ExchangeError::Interrupted(signal));
            }
            match (&*self.stream).read(&mut buffer[filled..]) {
                Ok(0) => {
                    return Err(ExchangeError::Closed { peer: self.peer.clone(), during: during.to_string() })
                }
                Ok(read) => {
                    filled += read;
                    // After every read, not only after a silent slice: a peer trickling one byte
                    // per slice must not hold us past the deadline.
                    if filled < buffer.len() && Instant::now() >= deadline {
                        return Err(self.cut_off(filled, buffer.len(), during));
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) if matches!(error.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    if Instant::now() >= deadline {
                        return Err(match filled {
                            0 => self.io_error(error, during),
                            _ => self.cut_off(filled, buffer.len(), during),
                        });
                    }
                }
                Err(error) => return Err(self.io_error(error, during)),
            }
        }
        Ok(())
    }

    /// The deadline passed with `received` of the `expected` bytes read: not "sent nothing".
    fn cut_off(&self, received: usize, expected: usize, during: &str) -> ExchangeError {
        ExchangeError::Trickle {
            peer: self.peer.clone(),
            seconds: self.timeout.as_secs(),
            during: during.to_string(),
            received,
            expected,
        }
    }

    fn io_error(&self, source: io::Error, during: &str) -> ExchangeError {
        let peer = self.peer.clone();
        let during = during.to_string();
        match source.kind() {
            io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe => {
                ExchangeError::Closed { peer, during }
            }
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                ExchangeError::Timeout { peer, seconds: self.timeout.as_secs(), during }
            }
            _ => ExchangeError::Io { peer, during, source },
        }
    }
}

/// A deadline that never comes, for a timeout too large to add to now (`--timeout` of u64::MAX).
pub(crate) fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600)
}

/// Errors of `accept()` that concern one connection, not the listener: Linux's accept(2) asks
/// to retry after them (ECONNABORTED, and the pending network errors it passes on: ENETDOWN,
/// EPROTO, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH), and EINTR.
pub fn is_transient_accept_error(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(
            libc::ECONNABORTED
                | libc::ENETDOWN
                | libc::EPROTO
                | libc::ENOPROTOOPT
                | libc::EHOSTDOWN
                | libc::ENONET
                | libc::EHOSTUNREACH
                | libc::EOPNOTSUPP
                | libc::ENETUNREACH
                | libc::EINTR
        )
    ) || error.kind() == io::ErrorKind::Interrupted
}
