//! The latency engines: one message in flight at a time, every round trip timed and recorded.
//!
//! Two shapes, as in perftest:
//! - **One-sided round trip** ([`read_latency`], [`atomic_latency`]): the client posts one READ
//!   (or 8-byte atomic) and waits for its completion; the server's CPU takes no part. A sample is
//!   the whole post-to-completion time, not halved (a request and a response: perftest's way).
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
//! with the copies between payload and bounce buffer inside the samples. The public entry
//! points here pick the engine from the session's memory, once per size, so a bench never does;
//! the host engines' hot loops stay as tuned.

mod atomic;
mod files;
mod pin;
mod read;
/// Public for the loop's benchmark (`benches/latency_loop.rs`) only.
#[doc(hidden)]
pub mod samples;
mod staged;
mod wire;

use std::time::Duration;

use gdrperf_stats::{SampleClock, Stamp};

use gdrperf_stats::hdrhistogram::Histogram;
use gdrperf_stats::LatencyRecorder;

use crate::error::{Error, Result};
use crate::harness::benchmark::Setup;
use crate::harness::session::Session;
use crate::memory::buffers::{check_received_at, pattern_seed};
use crate::memory_kind::MemoryKind;
use crate::options::config::{BenchConfig, LatencySpan, StopRule};
use crate::options::perftest_defaults::InlineRequest;
use crate::verbs::completion::opcode;
use crate::verbs::{LocalSlice, Operation, QueuePairSizes, RemoteAccess, RemoteBuffer};

use staged::{staged_one_sided_latency, staged_ping_pong_initiator, staged_ping_pong_responder};

pub use atomic::{atomic_latency, check_atomic_counter};
use pin::pin_for_tsc;
use samples::{Continue, RoundTrip, Samples};
use wire::{Arrival, MarkerBytes, PollByte, Wire};

pub use files::measure_size;
pub use read::{OneSidedLatency, OneSidedRequest};

/// How the two sides of a ping-pong pass the message back and forth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PingPong {
    /// RDMA WRITE; the receiver spins on the last byte of its buffer (CPU-visible memory only).
    WritePollLastByte,
    /// RDMA WRITE_WITH_IMM; the receiver waits for the receive completion it produces.
    WriteWithImmediate,
    /// SEND; the receiver waits for the receive completion.
    Send,
}

impl PingPong {
    /// The WRITE ping-pong between memories `local` and `remote`: the last-byte poll where both
    /// are host memory (CPU-visible; a staged payload is not what the NIC writes) and immediate
    /// data was not asked for, else WRITE_WITH_IMM. Both sides reach the same answer.
    pub fn for_write(local: MemoryKind, remote: MemoryKind, write_with_imm: bool) -> PingPong {
        if local == MemoryKind::Host && remote == MemoryKind::Host && !write_with_imm {
            PingPong::WritePollLastByte
        } else {
            PingPong::WriteWithImmediate
        }
    }

    /// [`PingPong::for_write`] of a connected session.
    pub fn for_write_session(session: &Session, write_with_imm: bool) -> PingPong {
        PingPong::for_write(session.memory(), session.peer_memory(), write_with_imm)
    }

    /// Whether each side must keep receives posted.
    pub fn uses_receives(self) -> bool {
        self != PingPong::WritePollLastByte
    }

    /// How arrival is detected, for the `arrival` column of result rows.
    pub fn arrival(self) -> &'static str {
        match self {
            PingPong::WritePollLastByte => "poll_last_byte",
            PingPong::WriteWithImmediate => "write_imm_completion",
            PingPong::Send => "recv_completion",
        }
    }

    fn operation_name(self) -> &'static str {
        match self {
            PingPong::WritePollLastByte => "RDMA WRITE",
            PingPong::WriteWithImmediate => "RDMA WRITE with immediate",
            PingPong::Send => "SEND",
        }
    }

    /// The message numbered `sequence` (a request from the client, or the server's answer).
    fn message(self, sequence: u64, remote: RemoteBuffer) -> Operation {
        match self {
            PingPong::WritePollLastByte => {
                Operation::Write { remote_address: remote.address, rkey: remote.rkey }
            }
            PingPong::WriteWithImmediate => Operation::WriteWithImmediate {
                remote_address: remote.address,
                rkey: remote.rkey,
                immediate: sequence_immediate(sequence),
            },
            PingPong::Send => Operation::Send,
        }
    }

    /// The client's last message of a size: "no more requests".
    fn stop(self, remote: RemoteBuffer) -> Operation {
        match self {
            PingPong::WritePollLastByte => {
                Operation::Write { remote_address: remote.address, rkey: remote.rkey }
            }
            PingPong::WriteWithImmediate => Operation::WriteWithImmediate {
                remote_address: remote.address,
                rkey: remote.rkey,
                immediate: STOP_IMMEDIATE,
            },
            PingPong::Send => Operation::SendWithImmediate { immediate: STOP_IMMEDIATE },
        }
    }

    fn receive_opcode(self) -> u32 {
        match self {
            PingPong::WriteWithImmediate => opcode::RECV_RDMA_WITH_IMM,
            _ => opcode::RECV,
        }
    }
}

/// Receives each side keeps posted in a ping-pong: at least two, so that one is always posted
/// while the other is being replaced, and the replacement can wait until after the answer.
pub const PING_PONG_RECEIVES: u32 = 8;

/// The immediate value of the STOP message; sequence immediates stay below it.
const STOP_IMMEDIATE: u32 = u32::MAX;
/// Marker bytes of the last-byte poll: the client's are 1..=127, the server's 128..=254, STOP is
/// 255 and a reset byte is 0, so a byte never holds, before an arrival, the value it waits for.
const STOP_MARKER: u8 = 255;
const RESET_MARKER: u8 = 0;

fn sequence_immediate(sequence: u64) -> u32 {
    (sequence % (1 << 31)) as u32
}

fn client_marker(sequence: u64) -> u8 {
    1 + (sequence % 127) as u8
}

fn server_marker(sequence: u64) -> u8 {
    128 + (sequence % 127) as u8
}

/// Work-request ids: one message in flight each way, so the kind is all an id needs to say.
const SEND_ID: u64 = 1;
const RECEIVE_ID: u64 = 2;

/// How one size is measured.
#[derive(Debug, Clone, Copy)]
pub struct LatencyPlan {
    pub size: usize,
    pub stop: StopRule,
    /// Untimed round trips before the first sample.
    pub warmup: u64,
    /// Post the payload inline.
    pub inline: bool,
    /// How long to wait for any one arrival before calling the peer gone.
    pub stall_timeout: Duration,
    /// What a sample spans.
    pub span: LatencySpan,
}

impl LatencyPlan {
    /// The plan of one size from the run's settings; `inline` says whether this size is posted
    /// inline (see [`crate::options::latency::LatencyConfig::inline`]).
    pub fn new(common: &BenchConfig, size: usize, inline: bool) -> LatencyPlan {
        LatencyPlan {
            size,
            stop: common.stop,
            warmup: common.warmup,
            inline,
            stall_timeout: common.timeout,
            span: common.latency_span.unwrap_or_default(),
        }
    }
}

/// Receives the cumulative histogram at interval boundaries (the `--hlog` interval log).
pub trait IntervalSink {
    /// Length of one interval.
    fn period(&self) -> Duration;
    /// The interval ending `end_nanos` after the first sample's start; `cumulative` holds every
    /// sample so far. Called between samples, never inside one.
    fn interval(&mut self, cumulative: &Histogram<u64>, end_nanos: u64) -> Result<()>;
}

/// What the initiator measured for one size.
#[derive(Debug)]
pub struct LatencyRun {
    pub recorder: LatencyRecorder,
    /// From the start of the first sample to the end of the last.
    pub elapsed_nanos: u64,
    /// What the samples span (the staged engines time post to arrival whatever was asked).
    pub span: LatencySpan,
    /// Samples refused instead of recorded: negative (the clock went backwards) or longer than
    /// the stall timeout (no real sample can be: the wait would have failed first).
    pub refused_samples: u64,
}

/// The buffer a ping-pong side needs for messages up to `largest_message`: a sending half and a
/// landing half (see the module docs), each a whole number of pages, as perftest lays them out:
/// a 2-byte message then lands a page away from the one going out, not in the same cache line.
pub fn ping_pong_buffer_len(largest_message: usize) -> usize {
    2 * largest_message.next_multiple_of(HALF_ALIGNMENT)
}

/// What a ping-pong side (gdr-send-lat, gdr-write-lat) asks of the harness: `PING_PONG_RECEIVES` (8)
/// receives kept posted, inline sends up to `inline.size` bytes (the QP's limit; what a run uses
/// is perftest's rule on its device, `perftest_defaults::inline_size`), the
/// two-halved buffer, and its header lines (`lines`, then the memory lines of `ping_pong`).
pub fn ping_pong_setup(
    common: &BenchConfig,
    inline: InlineRequest,
    ping_pong: PingPong,
    parameters: serde_json::Value,
    lines: Vec<(String, String)>,
) -> Setup {
    let mut header = lines;
    header.extend(memory_header(common, Some(ping_pong)));
    Setup {
        queue_sizes: QueuePairSizes {
            send_depth: common.tx_depth,
            recv_depth: PING_PONG_RECEIVES,
            max_inline: inline.size,
        },
        inline: Some(inline),
        buffer_len: ping_pong_buffer_len(common.max_size()),
        // Each side writes into the other's landing half; a SEND ping-pong reaches no buffer.
        remote_access: match ping_pong {
            PingPong::WriteWithImmediate | PingPong::WritePollLastByte => RemoteAccess::Write,
            PingPong::Send => RemoteAccess::None,
        },
        parameters,
        header,
        bandwidth: None,
    }
}

/// The unit of a ping-pong buffer's halves: a page.
const HALF_ALIGNMENT: usize = 4096;

/// Where the landing half of a `len`-byte ping-pong buffer starts.
pub fn landing_offset(len: usize) -> usize {
    len / 2
}

/// The landing half of the peer's buffer: where our writes go.
fn landing(remote: RemoteBuffer) -> RemoteBuffer {
    let offset = landing_offset(remote.len as usize) as u64;
    RemoteBuffer { address: remote.address + offset, rkey: remote.rkey, len: remote.len - offset }
}

/// Gets a side ready for a ping-pong size: receives posted (once per connection: they are
/// reposted as consumed, so the count stays constant), and for the last-byte poll, the byte this
/// size polls reset, so that a value left by an earlier size is never taken for an arrival. Runs
/// before the server says Ready, so the client's first message finds everything in place.
pub fn prepare_ping_pong(session: &mut Session, transport: PingPong, size: usize) -> Result<()> {
    if transport.uses_receives() {
        post_receives_once(session)?;
    }
    if transport == PingPong::WritePollLastByte {
        PollByte::landing(session, size)?.set(RESET_MARKER);
    }
    Ok(())
}

/// `--validate` of a ping-pong, before a size: both sides send the pattern of the size from their
/// first half, and clear their landing half, so a message that never landed fails the check.
pub fn prepare_ping_pong_check(session: &mut Session, size: usize) -> Result<()> {
    let buffer = &mut session.local.buffers[0];
    let landing_at = landing_offset(buffer.region().len());
    buffer.fill_pattern_at(0..size, pattern_seed(size, 0))?;
    buffer.clear_at(landing_at..landing_at + size)
}

/// `--validate` of a ping-pong, after a size: the first `len` bytes of the landing half hold the
/// peer's pattern (`len` leaves out the last byte where the last-byte poll's markers travel).
pub fn check_ping_pong(session: &mut Session, size: usize, len: usize) -> Result<Option<String>> {
    let landing_at = landing_offset(session.local.buffers[0].region().len());
    check_received_at(&mut session.local.buffers[..1], size, landing_at..landing_at + len)
}

/// Posts a ping-pong's receives once per connection: receives outlive a size (they cannot be
/// taken back), and go with the QPs when a new memory placement replaces them, as the
/// session's connection state does.
fn post_receives_once(session: &mut Session) -> Result<()> {
    if session.connection.state::<PingPongReceives>().0 {
        return Ok(());
    }
    let landing = landing_half(session);
    for _ in 0..PING_PONG_RECEIVES {
        session.local.queue_pairs[0].post_receive(RECEIVE_ID, landing)?;
    }
    session.connection.state::<PingPongReceives>().0 = true;
    Ok(())
}

/// A ping-pong's receives are posted (once per connection).
#[derive(Default)]
struct PingPongReceives(bool);

/// Receives take the whole landing half: a receive posted during one size then fits any later one.
fn landing_half(session: &Session) -> LocalSlice {
    let region = session.local.buffers[0].region();
    let offset = landing_offset(region.len());
    region.slice(offset, region.len() - offset)
}

/// What a latency run's header says of its memory: where either side's is staged, when the
/// copies happen (`None` where nothing is copied).
pub fn memory_header(config: &BenchConfig, shape: Option<PingPong>) -> Option<(String, String)> {
    if !config.memory.kinds.iter().any(|kind| kind.is_staged()) {
        return None;
    }
    let text = match shape {
        None => {
            "the reader copies in after each READ, inside the sample; the server copies out once per size"
        }
        Some(PingPong::Send) => {
            "copy out before each SEND, copy in after each receive, inside the round trip"
        }
        Some(_) => "copy out before each write, copy in after each arrival, inside the round trip",
    };
    Some(("Staging".into(), text.into()))
}

/// The client's side of a ping-pong: `warmup` untimed round trips, then samples of half a round
/// trip until the stop rule is met, then STOP. Staged memory copies inside the samples.
pub fn ping_pong_initiator(
    session: &mut Session,
    transport: PingPong,
    plan: &LatencyPlan,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<LatencyRun> {
    match session.memory().is_staged() {
        false => direct_ping_pong_initiator(session, transport, plan, sink),
        true => staged_ping_pong_initiator(session, transport, plan, sink),
    }
}

/// The server's side of a ping-pong: answer every message as soon as it lands (staged memory:
/// copied in, and the answer copied out), until STOP. Returns how many messages it answered.
pub fn ping_pong_responder(session: &mut Session, transport: PingPong, plan: &LatencyPlan) -> Result<u64> {
    match session.memory().is_staged() {
        false => direct_ping_pong_responder(session, transport, plan),
        true => staged_ping_pong_responder(session, transport, plan),
    }
}

/// The client's side of read_lat: one RDMA READ of the server's buffer at a time (staged memory:
/// each READ copied in inside the sample).
pub fn read_latency(
    session: &mut Session,
    plan: &LatencyPlan,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<LatencyRun> {
    let remote = session.remote_buffer(0);
    let read = |_| Operation::Read { remote_address: remote.address, rkey: remote.rkey };
    one_sided_latency(session, plan, read, sink).map(|(run, _)| run)
}

/// read_lat's and atomic_lat's loop: `request(n)` is the n-th request (from 0, warm-up
/// included). Returns the run and how many requests were posted.
fn one_sided_latency(
    session: &mut Session,
    plan: &LatencyPlan,
    request: impl FnMut(u64) -> Operation,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<(LatencyRun, u64)> {
    match session.memory().is_staged() {
        false => direct_one_sided_latency(session, plan, request, sink),
        true => staged_one_sided_latency(session, plan, request, sink),
    }
}

/// The passive side of read_lat, before a size: its buffer holds what the peer's READs fetch.
/// Staged memory copies its payload out to the bounce buffer here, once per size (its CPU takes
/// no part in a READ, so there is no moment to copy each one); other memory needs nothing.
pub fn prepare_read_source(session: &mut Session, size: usize) -> Result<()> {
    staged::stage_out_once(session, size)
}

fn direct_ping_pong_initiator(
    session: &mut Session,
    transport: PingPong,
    plan: &LatencyPlan,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<LatencyRun> {
    let bytes = marker_bytes_for(session, transport, plan.size)?;
    let landing_byte = bytes.map(|bytes| bytes.landing);
    let remote = landing(session.remote_buffer(0));
    let clock = SampleClock::new();
    let mut samples = Samples::new(plan, sink)?.spanning(plan.span).deferring(clock, RoundTrip::Halved);
    let mut wire = Wire::new(session, plan, transport.operation_name());
    let _pin = pin_for_tsc(&clock);
    let mut sequence = 0u64;
    // Iteration span: the start of the sample still open, closed by the next post's stamp.
    let mut open: Option<Stamp> = None;
    loop {
        wire.make_room()?;
        if let Some(bytes) = bytes {
            bytes.outgoing.set(client_marker(sequence));
        }
        let mut start = clock.stamp();
        if let Some(previous) = open.take() {
            if samples.record_stamps(&clock, previous, start, RoundTrip::Halved)? == Continue::Stop
                || wire.stop_requested()
            {
                break;
            }
            if samples.take_interval_written() {
                start = clock.stamp(); // the --hlog write in no sample
            }
        }
        wire.post(transport.message(sequence, remote))?;
        match wire.wait_arrival(transport, landing_byte, sequence, server_marker(sequence))? {
            Arrival::Message => {}
            Arrival::Stop => return Err(Error::Protocol(crate::error::ProtocolError::ServerSentStop)),
        }
        let end = (plan.span == LatencySpan::Arrival).then(|| clock.stamp());
        if transport.uses_receives() {
            wire.repost()?;
        }
        sequence += 1;
        match end {
            None => open = Some(start),
            Some(end) => {
                if samples.record_stamps(&clock, start, end, RoundTrip::Halved)? == Continue::Stop
                    || wire.stop_requested()
                {
                    break;
                }
            }
        }
    }
    // STOP even after Ctrl-C, so that the server leaves its loop at once.
    wire.make_room()?;
    if let Some(bytes) = bytes {
        bytes.outgoing.set(STOP_MARKER);
    }
    wire.post(transport.stop(remote))?;
    wire.drain()?;
    wire.interrupted()?;
    samples.finish()
}

fn direct_ping_pong_responder(session: &mut Session, transport: PingPong, plan: &LatencyPlan) -> Result<u64> {
    let bytes = marker_bytes_for(session, transport, plan.size)?;
    let landing_byte = bytes.map(|bytes| bytes.landing);
    let remote = landing(session.remote_buffer(0));
    let mut wire = Wire::new(session, plan, transport.operation_name());
    let mut sequence = 0u64;
    while wire.wait_arrival(transport, landing_byte, sequence, client_marker(sequence))? == Arrival::Message {
        wire.make_room()?;
        if let Some(bytes) = bytes {
            bytes.outgoing.set(server_marker(sequence));
        }
        wire.post(transport.message(sequence, remote))?;
        if transport.uses_receives() {
            wire.repost()?;
        }
        sequence += 1;
    }
    if transport.uses_receives() {
        wire.repost()?; // the one STOP consumed
    }
    wire.drain()?;
    expect_all_messages(plan, sequence)
}

/// A responder's count at STOP: with `-n`, exactly the agreed warm-up and measured messages
/// (fewer means the client stopped early, more that the two sides disagree). Returns the count.
fn expect_all_messages(plan: &LatencyPlan, sequence: u64) -> Result<u64> {
    if let StopRule::Iterations(iterations) = plan.stop {
        let expected = plan.warmup + iterations;
        if sequence != expected {
            return Err(Error::Protocol(crate::error::ProtocolError::StopCount {
                sent: sequence,
                agreed: expected,
            }));
        }
    }
    Ok(sequence)
}

fn direct_one_sided_latency(
    session: &mut Session,
    plan: &LatencyPlan,
    mut request: impl FnMut(u64) -> Operation,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<(LatencyRun, u64)> {
    let clock = SampleClock::new();
    let mut samples = Samples::new(plan, sink)?.spanning(plan.span).deferring(clock, RoundTrip::Whole);
    let mut wire = Wire::new(session, plan, request(0).name());
    let mut posted = 0u64;
    let _pin = pin_for_tsc(&clock);
    // Iteration span: the start of the sample still open, closed by the next post's stamp.
    let mut open: Option<Stamp> = None;
    loop {
        wire.make_room()?;
        let mut start = clock.stamp();
        if let Some(previous) = open.take() {
            if samples.record_stamps(&clock, previous, start, RoundTrip::Whole)? == Continue::Stop
                || wire.stop_requested()
            {
                break;
            }
            if samples.take_interval_written() {
                start = clock.stamp(); // the --hlog write in no sample
            }
        }
        wire.post(request(posted))?;
        posted += 1;
        wire.drain()?;
        match plan.span {
            LatencySpan::Iteration => open = Some(start),
            LatencySpan::Arrival => {
                let end = clock.stamp();
                if samples.record_stamps(&clock, start, end, RoundTrip::Whole)? == Continue::Stop
                    || wire.stop_requested()
                {
                    break;
                }
            }
        }
    }
    wire.interrupted()?;
    Ok((samples.finish()?, posted))
}

fn marker_bytes_for(session: &Session, transport: PingPong, size: usize) -> Result<Option<MarkerBytes>> {
    match transport {
        PingPong::WritePollLastByte => MarkerBytes::of(session, size).map(Some),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_of_the_two_sides_never_meet_and_always_change() {
        for sequence in 0..1000u64 {
            let (client, server) = (client_marker(sequence), server_marker(sequence));
            assert!((1..=127).contains(&client), "{client}");
            assert!((128..=254).contains(&server), "{server}");
            assert_ne!(client_marker(sequence + 1), client, "consecutive client markers differ");
            assert_ne!(server_marker(sequence + 1), server);
            for reserved in [STOP_MARKER, RESET_MARKER] {
                assert_ne!(client, reserved);
                assert_ne!(server, reserved);
            }
        }
    }

    #[test]
    fn sequence_immediates_never_read_as_stop() {
        for sequence in [0, 1, (1 << 31) - 1, 1 << 31, u64::from(u32::MAX), u64::MAX] {
            assert_ne!(sequence_immediate(sequence), STOP_IMMEDIATE, "{sequence}");
        }
        assert_eq!(sequence_immediate(5), 5);
    }
}
