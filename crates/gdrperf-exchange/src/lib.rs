//! The out-of-band exchange: a TCP connection carrying typed, versioned messages.
//!
//! RDMA peers cannot talk before they know each other's QP numbers and keys, so, like perftest,
//! we open a TCP connection first. Unlike perftest's fixed-format strings, every message is a
//! serde type framed as a 4-byte big-endian length plus JSON: readable in a packet capture,
//! checked for version, bounded in size before anything is allocated, and each side compares the
//! other's run parameters field by field so a mismatch names the field.
//!
//! The hello carries what lets a peer write into our memory (buffer addresses and rkeys), so the
//! channel is guarded: the server speaks first with a challenge, and with a shared token
//! (module `auth`) neither side reveals its hello before the other proved it knows the token. A server
//! serves one client per run; later ones are turned away (`busy`). Until its client is admitted,
//! a connection that fails the challenge or the parameter check is turned away and the server
//! keeps waiting (`admit`).
//!
//! A floor of its own, below the harness and above the verbs wrappers (whose endpoints and
//! buffer keys the hello carries): it waits on the peer, never on the benchmark, and learns of
//! a stop request from [`gdrperf_process`], so nothing here reaches up into the harness.

mod admit;
mod auth;
mod busy;
pub mod memory_kind;
mod message;
mod terms;
mod watch;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gdrperf_process::{StopFlag, StopSignal};

pub use admit::{is_peer_fault, is_transient_accept_error, Door, Refusal, PROOF_PATIENCE};
pub use auth::{
    check_token_strength, random_token_hex, Nonce, Token, WeakToken, AUTH_TAG_BYTES, MAKE_A_TOKEN,
    TOKEN_MIN_BITS,
};
pub use busy::TurnAway;
pub use message::{decode_body, decode_frame, encode, frame_length, DecodeError, Hello, Message, SideInfo};
pub use terms::describe_mismatch;
pub use watch::{PeerWatch, PEER_CHECK_INTERVAL};

/// Bumped whenever a message changes shape; peers of different versions refuse each other.
/// Version 2 added the challenge that precedes the hellos; version 3 the placement list and lane
/// of the hello and `NextPlacement` (several memory placements, or lanes, in one run); version 4
/// the `Terms` that precede every hello, so that no key goes to a peer whose parameters differ.
pub const PROTOCOL_VERSION: u32 = 4;

/// No legitimate message comes near this (a hello for 64 QPs is a few KiB): anything larger is
/// refused before allocating, so a stray or hostile peer cannot make us allocate gigabytes.
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// The largest frame read while the challenge is under way, before the peer proved anything: a
/// `Challenge`, `Proof` or `Accepted` is a few hundred bytes of JSON, a `Failed` reason one line.
/// Anything larger is refused from its length prefix, so that a stranger costs no memory.
pub const PRE_PROOF_MAX_BYTES: usize = 4 << 10;

/// The largest frame read while the terms are agreed (still before any key is shown, and with no
/// token every peer gets this far): the run parameters are a few hundred bytes, a mismatch reason
/// a few lines. Many handshakes run at once (`HANDSHAKES_AT_ONCE`), each bounded by this.
pub const TERMS_MAX_BYTES: usize = 64 << 10;

/// Errors of the exchange, each saying which step failed.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    #[error(
        "cannot listen on {address}: {source} (is another benchmark using the port? pick one with -p/--port)"
    )]
    Bind { address: String, source: io::Error },

    #[error("cannot reach the server at {address} within {seconds} s: {source} (is `{test}` running there as server, on the same -p/--port? firewall?)")]
    Connect { address: String, seconds: u64, test: String, source: io::Error },

    #[error("cannot resolve host '{host}': {source}")]
    Resolve { host: String, source: io::Error },

    #[error("peer {peer} closed the connection while {during}")]
    Closed { peer: String, during: String },

    #[error(
        "peer {peer} sent nothing for {seconds} s while {during} (raise --timeout if the peer is this slow)"
    )]
    Timeout { peer: String, seconds: u64, during: String },

    /// The deadline passed in the middle of a message: a peer trickling its bytes,
    /// not a silent one, so the message says what it did send.
    #[error(
        "peer {peer} sent only {received} of a message's {expected} bytes in {seconds} s while {during}: cut off at the deadline (a gdrperf peer sends each message at once; raise --timeout if the link is this slow)"
    )]
    Trickle { peer: String, seconds: u64, during: String, received: usize, expected: usize },

    #[error("I/O error with peer {peer} while {during}: {source}")]
    Io { peer: String, during: String, source: io::Error },

    #[error("peer {peer} sent a {len}-byte message while {during}; the limit there is {limit} (not a gdrperf peer?)")]
    TooLarge { peer: String, len: usize, limit: usize, during: String },

    #[error("peer {peer} sent an undecodable message while {during}: {detail} (not a gdrperf peer, or another version?)")]
    Decode { peer: String, during: String, detail: String },

    #[error("peer {peer} speaks exchange protocol version {theirs}, we speak {ours}: run the same gdrperf version on both sides")]
    Version { peer: String, ours: u32, theirs: u32 },

    /// `differences` names the peer and says what to change (see `describe_mismatch`).
    #[error("{differences}")]
    Mismatch { peer: String, differences: String },

    #[error("peer {peer} reported an error: {message}")]
    PeerFailed { peer: String, message: String },

    #[error("peer {peer} sent {got} while we expected {expected}")]
    Unexpected { peer: String, expected: &'static str, got: String },

    #[error("authentication with peer {peer} failed: {detail}")]
    Authentication { peer: String, detail: String },

    #[error("cannot draw a random nonce from /dev/urandom: {0}")]
    Random(#[source] io::Error),

    #[error("no client was admitted on {address} within {seconds} s (--accept-timeout); {turned_away} connection(s) turned away")]
    NoClient { address: String, seconds: f64, turned_away: usize },

    #[error("stopped by {0}")]
    Interrupted(StopSignal),
}

type ExchangeResult<T> = std::result::Result<T, ExchangeError>;

/// How long one read on the socket blocks before we look at the stop flag again: short enough
/// that Ctrl-C feels immediate, long enough to cost nothing.
const READ_SLICE: Duration = Duration::from_millis(200);

/// A connected control channel to the peer.
pub struct Control {
    /// Shared with the [`PeerWatch`]es handed to measurement loops.
    stream: Arc<TcpStream>,
    peer: String,
    /// How long a receive waits for the peer in all (the socket itself waits [`READ_SLICE`]).
    timeout: Duration,
    /// Whether we accepted this connection (the server speaks first).
    accepted: bool,
    /// Whether we already told the peer why we stop: it reads one reason, the first.
    failure_reported: bool,
    /// The stop flag, checked by every wait, and the peer check of measurement loops.
    watch: PeerWatch,
    /// While the handshake is vetted: the one deadline of the whole challenge and terms, however
    /// the peer spreads its bytes (a trickle of one byte per read slice cannot hold us longer).
    handshake_deadline: Option<Instant>,
    /// The largest frame accepted in the current state (see [`PRE_PROOF_MAX_BYTES`]).
    frame_limit: usize,
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
    fn from_accepted(stream: TcpStream, peer: String, timeout: Duration) -> ExchangeResult<Control> {
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
        let address_text = format!("{host}:{port}");
        let addresses: Vec<SocketAddr> = (host, port)
            .to_socket_addrs()
            .map_err(|source| ExchangeError::Resolve { host: host.to_string(), source })?
            .collect();
        let deadline = Instant::now() + timeout;
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
                    gdrperf_process::program_name(),
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
                Err(gone @ (ExchangeError::Closed { .. } | ExchangeError::PeerFailed { .. })) => {
                    return Some(gone)
                }
                Err(_) => return None,
                Ok(()) => {}
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Authenticates the peer (see module `auth`), agrees on the terms (module `terms`), then
    /// swaps hellos. Nothing of our hello leaves before the peer passed both.
    pub fn exchange_hello(&mut self, ours: &Hello, token: Option<&Token>) -> ExchangeResult<Hello> {
        self.vet(ours, token)?;
        self.trade_hellos(ours)
    }

    /// The part of [`Control::exchange_hello`] that gives nothing away: the challenge and the
    /// terms. Returns the peer's lane. A server runs it for many connections at once.
    /// One deadline (the timeout, from now) covers all of it, and each state reads only frames of
    /// its own size: [`PRE_PROOF_MAX_BYTES`] until the challenge passed, then [`TERMS_MAX_BYTES`].
    pub fn vet(&mut self, ours: &Hello, token: Option<&Token>) -> ExchangeResult<u32> {
        self.handshake_deadline = Some(Instant::now().checked_add(self.timeout).unwrap_or_else(far_future));
        self.frame_limit = PRE_PROOF_MAX_BYTES;
        let vetted = self.vet_within_deadline(ours, token);
        self.handshake_deadline = None;
        self.frame_limit = MAX_MESSAGE_BYTES;
        vetted
    }

    fn vet_within_deadline(&mut self, ours: &Hello, token: Option<&Token>) -> ExchangeResult<u32> {
        if self.accepted {
            self.authenticate_client(token)?;
        } else {
            self.authenticate_server(token)?;
        }
        self.frame_limit = TERMS_MAX_BYTES;
        self.agree_on_terms(&ours.parameters, ours.lane)
    }

    /// The terms, then the hellos: what a later round repeats on the authenticated channel.
    pub fn swap_hellos(&mut self, ours: &Hello) -> ExchangeResult<Hello> {
        self.agree_on_terms(&ours.parameters, ours.lane)?;
        self.trade_hellos(ours)
    }

    /// Sends our hello, reads the peer's, and checks version and shared parameters (the terms
    /// already agreed; the check keeps a peer from changing them in its hello).
    pub fn trade_hellos(&mut self, ours: &Hello) -> ExchangeResult<Hello> {
        self.send(&Message::Hello(Box::new(ours.clone())), "sending our hello")?;
        let theirs = self.expect("Hello", "waiting for the peer's hello", |message| match message {
            Message::Hello(hello) => Ok(*hello),
            other => Err(other),
        })?;
        if theirs.version != PROTOCOL_VERSION {
            return Err(ExchangeError::Version {
                peer: self.peer.clone(),
                ours: PROTOCOL_VERSION,
                theirs: theirs.version,
            });
        }
        if let Some(differences) = describe_mismatch(&ours.parameters, &theirs.parameters) {
            return Err(ExchangeError::Mismatch {
                peer: self.peer.clone(),
                differences: format!("peer {} {differences}", self.peer),
            });
        }
        Ok(theirs)
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
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600)
}

/// The most of a peer's text we print: a real reason is one line.
pub const PEER_TEXT_CHARS: usize = 400;

/// A peer's text made safe for a terminal and a log, before anyone knows who the peer is: control
/// characters escaped (no cursor moves, no fake lines) and cut at [`PEER_TEXT_CHARS`].
pub fn printable(text: &str) -> String {
    let mut out = String::new();
    for (count, character) in text.chars().enumerate() {
        if count == PEER_TEXT_CHARS {
            out.push_str(&format!("... ({} more characters cut)", text.chars().count() - count));
            break;
        }
        if character.is_control() {
            out.extend(character.escape_default());
        } else {
            out.push(character);
        }
    }
    out
}

/// Names every field whose value differs, in alphabetical order.
pub fn parameter_differences(ours: &serde_json::Value, theirs: &serde_json::Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let ours = ours.as_object().unwrap_or(&empty);
    let theirs = theirs.as_object().unwrap_or(&empty);
    let mut names: Vec<&String> = ours.keys().chain(theirs.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter_map(|name| {
            let mine = ours.get(name).unwrap_or(&serde_json::Value::Null);
            let peer = theirs.get(name).unwrap_or(&serde_json::Value::Null);
            (mine != peer).then(|| name.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests;
