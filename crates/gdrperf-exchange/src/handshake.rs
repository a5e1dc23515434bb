//! The whole handshake of a new connection in order: the challenge (`auth`), the terms
//! (`terms`), then the hellos. Nothing of our hello leaves before the peer passed the first two.

use std::time::{Duration, Instant};

use crate::admit::is_handshake_busy;

use crate::auth::Token;
use crate::control::{far_future, Control};
use crate::error::{ExchangeError, ExchangeResult};
use crate::message::{Hello, Message};
use crate::protocol::{MAX_MESSAGE_BYTES, PRE_PROOF_MAX_BYTES, PROTOCOL_VERSION, TERMS_MAX_BYTES};
use crate::terms::describe_mismatch;

/// The least time a retried connection is given, so that a retry near the deadline still
/// hears the server's answer rather than a zero timeout.
const RETRY_FLOOR: Duration = Duration::from_millis(500);

impl Control {
    /// A client's connection ([`Control::connect`]) and handshake
    /// ([`Control::exchange_hello`]). A server with too many handshakes in flight from this
    /// address (a flood from this host, or strangers sharing its address) answers "busy" and
    /// closes: the client connects again every 200 ms until `timeout` is up (issue 44). The outer
    /// error is the connection's; the inner one the handshake's, for the caller to report on the
    /// connection it came with.
    pub fn connect_and_exchange_hello(
        host: &str,
        port: u16,
        timeout: Duration,
        test: &str,
        ours: &Hello,
        token: Option<&Token>,
    ) -> ExchangeResult<(Control, ExchangeResult<Hello>)> {
        let deadline = Instant::now() + timeout;
        let mut said = false;
        loop {
            let until = deadline.max(Instant::now() + RETRY_FLOOR);
            let mut control = Control::connect_until(host, port, until, timeout, test)?;
            let hello = control.exchange_hello(ours, token);
            match &hello {
                Err(error) if is_handshake_busy(error) && Instant::now() < deadline => {
                    if !std::mem::replace(&mut said, true) {
                        eprintln!("{}: {error}; retrying until --timeout", crate::process::program_name());
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                _ => return Ok((control, hello)),
            }
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
}
