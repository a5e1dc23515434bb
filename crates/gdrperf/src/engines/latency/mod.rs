//! The latency engines: one message in flight at a time, every round trip timed and recorded.
//!
//! Two shapes, as in perftest:
//! - **One-sided round trip** ([`read_latency`], [`atomic_latency`](read::atomic_latency)): the
//!   client posts one READ (or 8-byte atomic) and waits for its completion; the server's CPU
//!   takes no part. A sample is the whole post-to-completion time, not halved (a request and a
//!   response: perftest's way).
//! - **Ping-pong** ([`ping_pong_initiator`] on the client, [`ping_pong_responder`] on the
//!   server): the client sends, the server answers as soon as the message has landed, the client
//!   waits for the answer. A sample is half the round trip.
//!
//! How a side learns that the peer's message has landed is the [`PingPong`] transport: an RDMA
//! WRITE is invisible to the receiver's CPU unless it watches the memory, so with host memory
//! it spins on the last byte of the buffer (the NIC writes a message in order, so the last byte
//! arrives last); memory the CPU cannot read (GPU memory) is written with WRITE_WITH_IMM instead,
//! which also consumes a posted receive and so produces a completion to wait for. SEND/RECV
//! always completes a receive.
//!
//! A sample runs from just before the post to the moment the arrival is seen: recording, the
//! reposting of receives and the reaping of send completions happen outside it, the clock is
//! read raw at both ends and converted afterwards (with `-n` and no interval log, only after the
//! last turn: `samples.rs`), and nothing in the loop allocates (the recorder reserves everything
//! up front, polling goes through the completion queue's preallocated array).
//!
//! Ping-pong buffers have two halves, as perftest's have: a side sends from the first and the
//! peer's messages land in the second (its writes, and this side's receives), so a side never
//! sends out of memory the peer's message has just been written into. Sending from the landing
//! spot made Soft-RoCE copy each outgoing message out of lines the other CPU had just written:
//! 4096-byte write_lat ran ~6% slower for it in the VM.
//!
//! The client ends a size with a STOP message (a marker byte, or an immediate value), so the
//! server needs no iteration count and a `-D` run ends on both sides at the same message.
//!
//! Staged memory (`--mem cuda-staged`) has engines of its own, in `staged.rs`: the same shapes
//! with the copies between payload and bounce buffer inside the samples; the host loops are in
//! `direct.rs`. The engines of the benches pick the loop from the session's memory, once per
//! size, so a bench never does: [`OneSidedLatency`] (`read.rs`) for gdr-read-lat and
//! gdr-atomic-lat, [`PingPongLatency`] (`ping_pong.rs`) for gdr-write-lat and gdr-send-lat.
//!
//! The rest, one module each, so that no module here reaches back into this one: what a loop is
//! given and gives back (`plan.rs`), the transport and the buffer's halves (`transport.rs`), the
//! QP, its completions and waits (`wire.rs`), the recorder (`samples.rs`), and the measured
//! size's files (`files.rs`).
//!
//! A latency run's set-up is here in two steps, in the order they happen: a binary's checked
//! settings and HDR files from its command line ([`latency_settings`], `settings.rs`), then what
//! the run asks of the harness before it connects and what a side does around each size
//! ([`one_sided_setup`], [`ping_pong_setup`], `setup.rs`). The settings' types and their checks
//! against the flags stay with the options (`options::latency`), which are parsed before any of
//! this runs. The thread's pin against TSC migration is CPU placement's
//! (`node::cpu_placement`).

mod direct;
mod files;
mod ping_pong;
mod plan;
mod read;
/// Public for the loop's benchmark (`benches/latency_loop.rs`) only.
#[doc(hidden)]
pub mod samples;
mod settings;
mod setup;
mod staged;
mod transport;
mod wire;

pub use ping_pong::{PingPongLatency, PingPongOperation};
pub use plan::LatencyPlan;
pub use read::{OneSidedLatency, OneSidedRequest};
pub use settings::latency_settings;
pub use setup::{one_sided_setup, ping_pong_setup};
pub use transport::PingPong;
