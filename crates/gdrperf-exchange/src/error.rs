//! What can go wrong on the control channel, each variant saying which step failed: the one
//! error type every part of the exchange returns.

use std::io;

use crate::process::StopSignal;

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

    /// The peer said goodbye in the middle of a size: a `--run-infinitely` client whose user
    /// stopped it (perftest's "User stopped traffic"); the size under way is dropped.
    #[error("peer {peer} ended the run in the middle of a size (its user stopped the traffic)")]
    PeerEnded { peer: String },

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

pub(crate) type ExchangeResult<T> = std::result::Result<T, ExchangeError>;
