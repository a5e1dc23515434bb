//! The latency engines over staged memory (`--mem cuda-staged`, and the hidden `host-staged`
//! that runs the same code without a GPU).
//!
//! A staged payload lives where the NIC does not reach it (GPU memory), and every message
//! crosses a registered host bounce buffer. Staged latency is the latency of that whole path,
//! so the copies are inside the samples:
//! - **Ping-pong**: the sending side copies its payload out to the bounce buffer after the
//!   sample's clock starts and before it posts; the receiving side copies the message in from
//!   the bounce buffer as soon as it has landed, before it answers (server) or stops the clock
//!   (client). A round trip so holds four copies where both sides are staged, two where one is.
//! - **READ**: the reader's READ lands in its bounce buffer and is copied in before the clock
//!   stops. The passive server copies its payload out once per size, in `prepare`
//!   ([`stage_out_once`]), and does nothing per READ: its CPU takes no part in a READ, so there
//!   is no moment at which it could copy each one.
//!
//! A staged receiver cannot watch the last byte of its payload (the NIC never writes there), so
//! the ping-pong transports here are the completion-based ones: WRITE_WITH_IMM or SEND.
//!
//! These are separate loops, not branches in the host loops (`direct`), so that the host
//! path's hot loop stays exactly as tuned; they reuse its [`Wire`], and allocate nothing either
//! (a copy is started and polled to its end; the host stager copies synchronously).

use std::ops::Range;
use std::time::Duration;

use gdrperf_stats::SampleClock;

use crate::error::{Error, Result};
use crate::harness::session::Session;
use crate::memory::staging::{wait_copy, CopyId, Stager};
use crate::node::cpu_placement::tsc_pin::pin_for_tsc;
use crate::verbs::Operation;

use super::plan::{expect_all_messages, IntervalSink, LatencyPlan, LatencyRun};
use super::samples::{Continue, RoundTrip, Samples};
use super::transport::{landing, landing_offset, PingPong};
use super::wire::{Arrival, Wire};

/// The marker a last-byte poll would wait for: unused here (no staged side polls), any value.
const NO_MARKER: u8 = 0;

/// One buffer's copies, each waited for before the engine goes on: a latency sample has one
/// message in flight, so there is nothing for a copy to overlap with.
struct Copies<'a> {
    stager: &'a mut dyn Stager,
    /// What goes out: the message at the start of the buffer.
    outgoing: Range<usize>,
    /// Where messages land: the landing half of a ping-pong buffer, the start for a READ.
    landing: Range<usize>,
    timeout: Duration,
}

impl<'a> Copies<'a> {
    /// Copies of `plan.size` bytes, landing at `landing_offset`.
    fn new(stager: &'a mut dyn Stager, plan: &LatencyPlan, landing_offset: usize) -> Copies<'a> {
        Copies {
            stager,
            outgoing: 0..plan.size,
            landing: landing_offset..landing_offset + plan.size,
            timeout: plan.stall_timeout,
        }
    }

    /// Payload -> bounce buffer, before a post.
    #[inline]
    fn copy_out(&mut self) -> Result<()> {
        let copy = self.stager.begin_out(self.outgoing.clone())?;
        self.wait(copy, "out to")
    }

    /// Bounce buffer -> payload, after an arrival.
    #[inline]
    fn copy_in(&mut self) -> Result<()> {
        let copy = self.stager.begin_in(self.landing.clone())?;
        self.wait(copy, "in from")
    }

    #[inline]
    fn wait(&mut self, copy: CopyId, direction: &str) -> Result<()> {
        let len = self.outgoing.len();
        wait_copy(self.stager, copy, self.timeout, &|| {
            format!("copying {len} bytes {direction} the bounce buffer")
        })
    }
}

/// The staged engines wait for completions; the last-byte poll would need a CPU-visible payload.
fn completion_transport(transport: PingPong) -> Result<PingPong> {
    match transport {
        // `PingPong::for_write` polls the last byte between two host memories only.
        PingPong::WritePollLastByte => Err(Error::Internal(crate::error::InternalError::StagedLastBytePoll)),
        other => Ok(other),
    }
}

/// The client's side of a staged ping-pong: as [`super::ping_pong::ping_pong_initiator`], with the copy
/// out before each post and the copy in after each answer inside the sample.
pub(super) fn staged_ping_pong_initiator(
    session: &mut Session,
    transport: PingPong,
    plan: &LatencyPlan,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<LatencyRun> {
    let transport = completion_transport(transport)?;
    let remote = landing(session.remote_buffer(0));
    let landing_at = landing_offset(session.local.buffers[0].region().len());
    let mut samples = Samples::new(plan, sink)?;
    let clock = SampleClock::new();
    let (mut wire, stager) = Wire::with_stager(session, plan, transport.operation_name())?;
    let _pin = pin_for_tsc(&clock);
    let mut copies = Copies::new(stager, plan, landing_at);
    let mut sequence = 0u64;
    loop {
        wire.make_room()?;
        let start = clock.now();
        copies.copy_out()?;
        wire.post(transport.message(sequence, remote))?;
        match wire.wait_arrival(transport, None, sequence, NO_MARKER)? {
            Arrival::Message => {}
            Arrival::Stop => return Err(Error::Protocol(crate::error::ProtocolError::ServerSentStop)),
        }
        copies.copy_in()?;
        let end = clock.now();
        wire.repost()?;
        sequence += 1;
        if samples.record(start, end, RoundTrip::Halved)? == Continue::Stop || wire.stop_requested() {
            break;
        }
    }
    // STOP carries no payload the server uses: nothing to copy out.
    wire.make_room()?;
    wire.post(transport.stop(remote))?;
    wire.drain()?;
    wire.interrupted()?;
    samples.finish()
}

/// The server's side of a staged ping-pong: copy each message in, copy the answer out, send it.
/// Messages land in the payload's landing half and answers leave from its first half (see the
/// module docs of `super`), so with `--validate` each side checks what the other sent. Returns
/// how many messages it answered.
pub(super) fn staged_ping_pong_responder(
    session: &mut Session,
    transport: PingPong,
    plan: &LatencyPlan,
) -> Result<u64> {
    let transport = completion_transport(transport)?;
    let remote = landing(session.remote_buffer(0));
    let landing_at = landing_offset(session.local.buffers[0].region().len());
    let (mut wire, stager) = Wire::with_stager(session, plan, transport.operation_name())?;
    let mut copies = Copies::new(stager, plan, landing_at);
    let mut sequence = 0u64;
    while wire.wait_arrival(transport, None, sequence, NO_MARKER)? == Arrival::Message {
        copies.copy_in()?;
        wire.make_room()?;
        copies.copy_out()?;
        wire.post(transport.message(sequence, remote))?;
        wire.repost()?;
        sequence += 1;
    }
    wire.repost()?; // the one STOP consumed
    wire.drain()?;
    expect_all_messages(plan, sequence)
}

/// The client's side of a staged read_lat (and atomic_lat): each READ (each atomic's fetched
/// value) lands in the bounce buffer, and the sample ends when it has been copied in to the
/// payload. `request(n)` is the n-th request; returns the run and how many were posted.
pub(super) fn staged_one_sided_latency(
    session: &mut Session,
    plan: &LatencyPlan,
    mut request: impl FnMut(u64) -> Operation,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<(LatencyRun, u64)> {
    let mut samples = Samples::new(plan, sink)?;
    let clock = SampleClock::new();
    let (mut wire, stager) = Wire::with_stager(session, plan, request(0).name())?;
    let _pin = pin_for_tsc(&clock);
    // A READ lands where it is posted from: the start of the buffer.
    let mut copies = Copies::new(stager, plan, 0);
    let mut posted = 0u64;
    loop {
        wire.make_room()?;
        let start = clock.now();
        wire.post(request(posted))?;
        posted += 1;
        wire.drain()?;
        copies.copy_in()?;
        let end = clock.now();
        if samples.record(start, end, RoundTrip::Whole)? == Continue::Stop || wire.stop_requested() {
            break;
        }
    }
    wire.interrupted()?;
    Ok((samples.finish()?, posted))
}

/// The passive side of a staged read_lat: copies the first `size` payload bytes out to the
/// bounce buffer, once per size, for the peer's READs to fetch. Nothing happens per READ (the
/// server's CPU takes no part in one), so this copy is in no sample. No-op where not staged.
pub(super) fn stage_out_once(session: &mut Session, size: usize) -> Result<()> {
    if let Some(stager) = session.local.buffers[0].stager() {
        let copy = stager.begin_out(0..size)?;
        stager.finish()?;
        // Before the size, in no sample: not part of the copy time.
        stager.log().forget(copy);
    }
    Ok(())
}
