//! The measuring loops: who posts the WRITEs, READs and SENDs of a size, reaps their
//! completions and times them. Look here for "who keeps the send queue full?", "where is a
//! round trip timed?" or "when does a staged receiver credit the sender?".
//!
//! An engine runs one size over a connected [`Session`](crate::harness::Session) and gives the
//! figures its bench turns into a row; it neither parses options nor drives the sweep (the
//! harness does), and it reaches its buffers through `memory`'s `QueueMemory`, so one loop serves
//! host, GPUDirect and staged buffers alike.
//! - One-sided stream (gdr-write-bw, gdr-read-bw, gdr-atomic-bw): `one_sided` over the streaming
//!   loop of `bandwidth`, with `staged_receive` on a staged side written to.
//! - SEND/RECV stream (gdr-send-bw): `send`.
//! - Latency (one message in flight, every round trip timed): `latency`, whose `ping_pong`
//!   is what the two ping-pong benches share and `read` what gdr-read-lat and gdr-atomic-lat do.
//! - The atomic tests' counter and its data check, whichever loop posts them: `atomic`.
//! - The streaming loops' bookkeeping, apart from the verbs calls: [`stream_book`] (how many
//!   requests a QP may post, which ones are signalled) and [`credits`] (a sender posts only
//!   while it holds a credit for a receive the peer has posted); `meter` makes every streaming
//!   loop's bandwidth meter, with `-D`'s window.

pub(crate) mod atomic;
pub(crate) mod bandwidth;
pub mod credits;
pub(crate) mod immediate_receive;
pub(crate) mod latency;
pub(crate) mod meter;
pub(crate) mod one_sided;
pub(crate) mod send;
pub(crate) mod staged_receive;
pub mod stream_book;

/// The latency loop's bookkeeping, for `benches/latency_loop.rs` (criterion benches link the
/// library from outside): not part of what the bench binaries use.
#[doc(hidden)]
pub mod latency_loop_parts {
    pub use super::latency::samples::{Continue, RoundTrip, Samples};
    pub use super::latency::LatencyPlan;
    pub use crate::options::config::LatencySpan;
}
