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
//! It waits on the peer, never on the benchmark, and learns of the operator's stop request from
//! [`process`] (the stop flag the harness's signal handlers set), so a wait on a peer ends on
//! Ctrl-C without knowing what runs above it. Its messages hold plain data (serde types, the
//! verbs' endpoints and buffer keys, JSON for the run's parameters, rows and path facts): what a
//! harness means by them is converted at its own edge.

mod admit;
mod auth;
mod busy;
mod control;
mod error;
mod handshake;
pub mod memory_kind;
mod message;
mod peer_text;
pub mod process;
mod protocol;
mod terms;
mod watch;

pub use admit::{is_handshake_busy, is_peer_fault, Door, Refusal, PROOF_PATIENCE};
pub use auth::{check_token_strength, random_token_hex, Token, WeakToken, MAKE_A_TOKEN, TOKEN_MIN_BITS};
pub use busy::TurnAway;
pub use control::{is_transient_accept_error, Control};
pub use error::ExchangeError;
pub use message::{
    decode_body, decode_frame, encode, frame_length, DecodeError, Hello, Message, Nonce, SideInfo,
    AUTH_TAG_BYTES,
};
pub use peer_text::{is_unsafe_character, printable, printable_within, PEER_TEXT_CHARS};
pub use protocol::{MAX_MESSAGE_BYTES, PRE_PROOF_MAX_BYTES, PROTOCOL_VERSION, TERMS_MAX_BYTES};
pub use terms::{describe_mismatch, parameter_differences};
pub use watch::{PeerWatch, PEER_CHECK_INTERVAL};

#[cfg(test)]
mod tests;
