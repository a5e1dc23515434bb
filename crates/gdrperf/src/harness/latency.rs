//! The latency engines: one message in flight at a time, every round trip timed and recorded.
//!
//! Two shapes, as in perftest:
//! - **One-sided round trip** ([`read_latency`]): the client posts one RDMA READ and waits for
//!   its completion; the server's CPU takes no part. A sample is the whole post-to-completion
//!   time, not halved (a READ is a request and a response, and perftest reports it whole).
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
//! reposting of receives and the reaping of send completions happen outside it, and nothing in
//! the loop allocates (the recorder reserves everything up front, polling goes through the
//! completion queue's preallocated array).
//!
//! The client ends a size with a STOP message (a marker byte, or an immediate value), so the
//! server needs no iteration count and a `-D` run ends on both sides at the same message.

use std::time::{Duration, Instant};

use gdrperf_stats::hdrhistogram::Histogram;
use gdrperf_stats::latency::EXACT_SAMPLE_LIMIT;
use gdrperf_stats::{LatencyRecorder, RunClock};

use crate::error::{Error, Result};
use crate::exchange::{Control, ExchangeError};
use crate::harness::config::{BenchConfig, StopRule};
use crate::harness::session::{Session, Side};
use crate::verbs::completion::opcode;
use crate::verbs::{CompletionQueue, LocalSlice, Operation, RcQueuePair, RemoteBuffer, SendRequest, WorkCompletion};

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
            PingPong::WritePollLastByte => Operation::Write { remote_address: remote.address, rkey: remote.rkey },
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
            PingPong::WritePollLastByte => Operation::Write { remote_address: remote.address, rkey: remote.rkey },
            PingPong::WriteWithImmediate => {
                Operation::WriteWithImmediate { remote_address: remote.address, rkey: remote.rkey, immediate: STOP_IMMEDIATE }
            }
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
}

impl LatencyPlan {
    /// The plan of one size from the run's settings; `inline` says whether this size is posted
    /// inline (see [`crate::harness::args_latency::LatencyConfig::inline`]).
    pub fn new(common: &BenchConfig, size: usize, inline: bool) -> LatencyPlan {
        LatencyPlan { size, stop: common.stop, warmup: common.warmup, inline, stall_timeout: common.timeout }
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
}

/// Gets a side ready for a ping-pong size: receives posted (the first time: they are reposted as
/// consumed, so the count stays constant), and for the last-byte poll, the byte this size polls
/// reset, so that a value left by an earlier size is never taken for an arrival. Runs before
/// the server says Ready, so the client's first message finds everything in place.
pub fn prepare_ping_pong(session: &mut Session, transport: PingPong, size: usize, posted: &PostedReceives) -> Result<()> {
    if transport.uses_receives() {
        posted.ensure(session)?;
    }
    if transport == PingPong::WritePollLastByte {
        PollByte::of(session, size)?.set(RESET_MARKER);
    }
    Ok(())
}

/// Refuses staged memory (`--mem cuda-staged`, `host-staged`): the latency and SEND engines
/// post the registered buffer itself, and would time the bounce buffer alone, without the copy
/// to or from the payload that staging is about. Staged kinds are named `*-staged`.
pub fn refuse_staged_memory(session: &Session, program: &str) -> Result<()> {
    let kind = session.local.buffers[0].kind();
    if !kind.ends_with("-staged") {
        return Ok(());
    }
    Err(Error::Config(format!(
        "--mem {kind} is not supported by {program} (staging is measured by gdr-write-bw); use --mem host or --mem cuda"
    )))
}

/// Remembers, per side, whether the ping-pong receives are posted. Receives outlive a size (they
/// cannot be taken back), so they are posted once and then replaced one for one.
#[derive(Debug, Default)]
pub struct PostedReceives {
    client: std::sync::atomic::AtomicBool,
    server: std::sync::atomic::AtomicBool,
}

impl PostedReceives {
    fn ensure(&self, session: &mut Session) -> Result<()> {
        use std::sync::atomic::Ordering;
        let flag = match session.side {
            Side::Client => &self.client,
            Side::Server => &self.server,
        };
        if flag.load(Ordering::Acquire) {
            return Ok(());
        }
        let whole = whole_buffer(session);
        for _ in 0..PING_PONG_RECEIVES {
            session.local.queue_pairs[0].post_receive(RECEIVE_ID, whole)?;
        }
        flag.store(true, Ordering::Release);
        Ok(())
    }
}

/// Receives take the whole buffer: a receive posted during one size then fits any later one.
fn whole_buffer(session: &Session) -> LocalSlice {
    let buffer = &session.local.buffers[0];
    buffer.slice(buffer.region().len())
}

/// The client's side of a ping-pong: `warmup` untimed round trips, then samples of half a round
/// trip until the stop rule is met, then STOP.
pub fn ping_pong_initiator(
    session: &mut Session, transport: PingPong, plan: &LatencyPlan, sink: Option<&mut dyn IntervalSink>,
) -> Result<LatencyRun> {
    let byte = poll_byte_for(session, transport, plan.size)?;
    let remote = session.remote_buffer(0);
    let mut samples = Samples::new(plan, sink)?;
    let mut wire = Wire::new(session, plan, transport.operation_name());
    let mut sequence = 0u64;
    loop {
        wire.make_room()?;
        if let Some(byte) = byte {
            byte.set(client_marker(sequence));
        }
        let start = Instant::now();
        wire.post(transport.message(sequence, remote))?;
        match wire.wait_arrival(transport, byte, sequence, server_marker(sequence))? {
            Arrival::Message => {}
            Arrival::Stop => return Err(protocol("the server sent STOP, which only the client may send")),
        }
        let end = Instant::now();
        if transport.uses_receives() {
            wire.repost()?;
        }
        sequence += 1;
        if samples.record(start, end, RoundTrip::Halved)? == Continue::Stop || wire.stop_requested() {
            break;
        }
    }
    // STOP even after Ctrl-C, so that the server leaves its loop at once.
    wire.make_room()?;
    if let Some(byte) = byte {
        byte.set(STOP_MARKER);
    }
    wire.post(transport.stop(remote))?;
    wire.drain()?;
    wire.interrupted()?;
    samples.finish()
}

/// The server's side of a ping-pong: answer every message as soon as it lands, until STOP.
/// Returns how many messages it answered.
pub fn ping_pong_responder(session: &mut Session, transport: PingPong, plan: &LatencyPlan) -> Result<u64> {
    let byte = poll_byte_for(session, transport, plan.size)?;
    let remote = session.remote_buffer(0);
    let mut wire = Wire::new(session, plan, transport.operation_name());
    let mut sequence = 0u64;
    while wire.wait_arrival(transport, byte, sequence, client_marker(sequence))? == Arrival::Message {
        wire.make_room()?;
        if let Some(byte) = byte {
            byte.set(server_marker(sequence));
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
    if let StopRule::Iterations(iterations) = plan.stop {
        let expected = plan.warmup + iterations;
        if sequence != expected {
            return Err(protocol(&format!("the client sent {sequence} messages before STOP, {expected} were agreed")));
        }
    }
    Ok(sequence)
}

/// The client's side of read_lat: one RDMA READ of the server's buffer at a time.
pub fn read_latency(session: &mut Session, plan: &LatencyPlan, sink: Option<&mut dyn IntervalSink>) -> Result<LatencyRun> {
    let remote = session.remote_buffer(0);
    let mut samples = Samples::new(plan, sink)?;
    let mut wire = Wire::new(session, plan, "RDMA READ");
    let read = Operation::Read { remote_address: remote.address, rkey: remote.rkey };
    loop {
        wire.make_room()?;
        let start = Instant::now();
        wire.post(read)?;
        wire.drain()?;
        let end = Instant::now();
        if samples.record(start, end, RoundTrip::Whole)? == Continue::Stop || wire.stop_requested() {
            break;
        }
    }
    wire.interrupted()?;
    samples.finish()
}

fn poll_byte_for(session: &Session, transport: PingPong, size: usize) -> Result<Option<PollByte>> {
    match transport {
        PingPong::WritePollLastByte => PollByte::of(session, size).map(Some),
        _ => Ok(None),
    }
}

fn protocol(message: &str) -> Error {
    Error::Config(format!("ping-pong out of step: {message}"))
}

/// The last byte of a message in this side's buffer, read and written without references: the
/// NIC writes it behind the compiler's back, so every access is volatile.
#[derive(Debug, Clone, Copy)]
struct PollByte(*mut u8);

impl PollByte {
    fn of(session: &Session, size: usize) -> Result<PollByte> {
        let buffer = &session.local.buffers[0];
        match buffer.host_bytes() {
            Some(bytes) if size >= 1 && size <= bytes.len() => {
                // Host memory is registered at its own address, so the region's address is the
                // CPU's pointer to it (the allocation exposed it when the address was taken).
                let address = buffer.region().address() + size as u64 - 1;
                Ok(PollByte(address as usize as *mut u8))
            }
            Some(_) => Err(Error::Config(format!("message size {size} does not fit the buffer"))),
            None => Err(Error::Config(format!(
                "the last-byte poll needs memory the CPU can read, and this side's buffer is {} memory: \
                 use WRITE_WITH_IMM (--write-with-imm)",
                buffer.kind()
            ))),
        }
    }

    #[inline]
    fn get(self) -> u8 {
        // SAFETY: points into this side's registered host buffer, which the session keeps alive
        // for the whole run; a byte has no alignment or tearing concerns.
        unsafe { std::ptr::read_volatile(self.0) }
    }

    #[inline]
    fn set(self, value: u8) {
        // SAFETY: as in `get`; the peer never writes this byte while we do (strict alternation).
        unsafe { std::ptr::write_volatile(self.0, value) }
    }
}

/// What a wait saw land.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arrival {
    Message,
    Stop,
}

/// The QP, CQ and slices of one size, with the count of our unreaped signaled sends.
struct Wire<'a> {
    queue_pair: &'a mut RcQueuePair,
    completions: &'a mut CompletionQueue,
    /// Checked between samples (Ctrl-C) and in long waits (a peer that died or gave up).
    control: &'a mut Control,
    local: LocalSlice,
    receive: LocalSlice,
    inline: bool,
    send_depth: u64,
    sends_outstanding: u64,
    size: usize,
    stall_timeout: Duration,
    operation_name: &'static str,
}

impl<'a> Wire<'a> {
    fn new(session: &'a mut Session, plan: &LatencyPlan, operation_name: &'static str) -> Wire<'a> {
        let receive = whole_buffer(session);
        let Session { local, control, .. } = session;
        let send_depth = u64::from(local.queue_pairs[0].sizes().send_depth.max(1));
        Wire {
            local: local.buffers[0].slice(plan.size),
            receive,
            queue_pair: &mut local.queue_pairs[0],
            completions: &mut local.completion_queue,
            control,
            inline: plan.inline,
            send_depth,
            sends_outstanding: 0,
            size: plan.size,
            stall_timeout: plan.stall_timeout,
            operation_name,
        }
    }

    #[inline]
    fn post(&mut self, operation: Operation) -> Result<()> {
        let request = SendRequest { wr_id: SEND_ID, signaled: true, local: self.local, operation, inline: self.inline };
        self.queue_pair.post_send(std::iter::once(request))?;
        self.sends_outstanding += 1;
        Ok(())
    }

    #[inline]
    fn repost(&mut self) -> Result<()> {
        self.queue_pair.post_receive(RECEIVE_ID, self.receive)
    }

    /// Polls once: retires our send completions, returns the receive completion if one came.
    #[inline]
    fn poll(&mut self) -> Result<Option<WorkCompletion>> {
        let mut received = None;
        let mut sends_done = 0u64;
        let (size, operation_name) = (self.size, self.operation_name);
        self.completions.poll(|completion| {
            match completion.wr_id {
                SEND_ID if completion.is_success() => sends_done += 1,
                SEND_ID => return Err(completion.error(operation_name, size)),
                RECEIVE_ID if !completion.is_success() => return Err(completion.error("receive", size)),
                RECEIVE_ID if received.is_none() => received = Some(completion),
                _ => {
                    return Err(Error::UnexpectedCompletion {
                        wr_id: completion.wr_id,
                        opcode: completion.opcode,
                        expected: "one message at a time",
                    })
                }
            }
            Ok(())
        })?;
        if sends_done > self.sends_outstanding {
            return Err(protocol("more send completions than sends"));
        }
        self.sends_outstanding -= sends_done;
        Ok(received)
    }

    /// Reaps send completions until another send fits the queue. A message arriving meanwhile
    /// breaks the alternation.
    #[inline]
    fn make_room(&mut self) -> Result<()> {
        let mut patience = Patience::new(self.stall_timeout);
        while self.sends_outstanding >= self.send_depth {
            if let Some(completion) = self.poll()? {
                return Err(unexpected_arrival(&completion));
            }
            self.tick(&mut patience, "waiting for a send completion")?;
        }
        Ok(())
    }

    /// Waits until every send is complete (the end of a READ sample, the end of a size).
    #[inline]
    fn drain(&mut self) -> Result<()> {
        let mut patience = Patience::new(self.stall_timeout);
        while self.sends_outstanding > 0 {
            if let Some(completion) = self.poll()? {
                return Err(unexpected_arrival(&completion));
            }
            self.tick(&mut patience, "waiting for a send completion")?;
        }
        Ok(())
    }

    /// Waits for the peer's message numbered `sequence` (or STOP), reaping our own send
    /// completions meanwhile. `marker` is the byte value the last-byte poll waits for.
    #[inline]
    fn wait_arrival(&mut self, transport: PingPong, byte: Option<PollByte>, sequence: u64, marker: u8) -> Result<Arrival> {
        let mut patience = Patience::new(self.stall_timeout);
        if let Some(byte) = byte {
            loop {
                match byte.get() {
                    value if value == marker => return Ok(Arrival::Message),
                    STOP_MARKER => return Ok(Arrival::Stop),
                    _ => {}
                }
                if self.sends_outstanding > 0 {
                    if let Some(completion) = self.poll()? {
                        return Err(unexpected_arrival(&completion));
                    }
                }
                self.tick(&mut patience, "waiting for the peer's write to land")?;
            }
        }
        loop {
            if let Some(completion) = self.poll()? {
                return self.classify(transport, &completion, sequence);
            }
            self.tick(&mut patience, "waiting for the peer's message")?;
        }
    }

    /// One turn of a wait: cheap, except every few thousand turns, when it looks at the clock
    /// (stall), the control channel (a peer that died or gave up) and the stop flag.
    #[inline]
    fn tick(&mut self, patience: &mut Patience, during: &str) -> Result<()> {
        if !patience.due() {
            return Ok(());
        }
        patience.check_deadline(during, self.size)?;
        self.control.check_peer()?;
        match self.control.stop_requested() {
            Some(signal) => Err(ExchangeError::Interrupted(signal).into()),
            None => Ok(()),
        }
    }

    fn stop_requested(&self) -> bool {
        self.control.stop_requested().is_some()
    }

    /// After the loop: the error that says a signal cut the size short, if one did.
    fn interrupted(&self) -> Result<()> {
        match self.control.stop_requested() {
            Some(signal) => Err(ExchangeError::Interrupted(signal).into()),
            None => Ok(()),
        }
    }

    fn classify(&self, transport: PingPong, completion: &WorkCompletion, sequence: u64) -> Result<Arrival> {
        if completion.opcode != transport.receive_opcode() {
            return Err(unexpected_arrival(completion));
        }
        match (transport, completion.immediate) {
            (_, Some(STOP_IMMEDIATE)) => Ok(Arrival::Stop),
            (PingPong::WriteWithImmediate, Some(immediate)) if immediate == sequence_immediate(sequence) => Ok(Arrival::Message),
            (PingPong::Send, None) if completion.byte_len as usize == self.size => Ok(Arrival::Message),
            (PingPong::Send, None) => Err(protocol(&format!("received {} bytes, expected {}", completion.byte_len, self.size))),
            _ => Err(protocol(&format!(
                "message {sequence} arrived with immediate {:?}, expected {}",
                completion.immediate,
                sequence_immediate(sequence)
            ))),
        }
    }
}

fn unexpected_arrival(completion: &WorkCompletion) -> Error {
    Error::UnexpectedCompletion { wr_id: completion.wr_id, opcode: completion.opcode, expected: "the peer's message, one at a time" }
}

/// Stall detection without a clock read per spin: the deadline is only set after a few thousand
/// spins, so a fast arrival costs no clock read at all.
struct Patience {
    spins: u32,
    deadline: Option<Instant>,
    timeout: Duration,
}

impl Patience {
    fn new(timeout: Duration) -> Patience {
        Patience { spins: 0, deadline: None, timeout }
    }

    /// Counts a spin; true every few thousand.
    #[inline]
    fn due(&mut self) -> bool {
        self.spins = self.spins.wrapping_add(1);
        self.spins.is_multiple_of(4096)
    }

    fn check_deadline(&mut self, during: &str, size: usize) -> Result<()> {
        let now = Instant::now();
        match self.deadline {
            None => self.deadline = Some(now + self.timeout),
            Some(deadline) if now > deadline => {
                return Err(Error::Stalled { seconds: self.timeout.as_secs(), during: format!("{during} ({size} bytes)") })
            }
            Some(_) => {}
        }
        Ok(())
    }
}

/// A sample is a whole round trip (READ) or half of one (ping-pong).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RoundTrip {
    Whole,
    Halved,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Continue {
    Go,
    Stop,
}

/// The recorder with the warm-up, the stop rule and the interval log around it.
struct Samples<'a> {
    recorder: LatencyRecorder,
    warmup_left: u64,
    stop: StopRule,
    clock: Option<RunClock>,
    last_end: Option<Instant>,
    sink: Option<&'a mut dyn IntervalSink>,
    next_interval: Option<Instant>,
    recorded_at_last_interval: u64,
}

impl<'a> Samples<'a> {
    fn new(plan: &LatencyPlan, sink: Option<&'a mut dyn IntervalSink>) -> Result<Samples<'a>> {
        // A -D run's count is unknown: keep exact samples up to the limit, beyond it the
        // percentiles come from the histogram (the recorder says which in its summary).
        let expected = match plan.stop {
            StopRule::Iterations(iterations) => iterations,
            StopRule::Duration(_) => EXACT_SAMPLE_LIMIT,
        };
        let recorder = LatencyRecorder::new(expected).map_err(|error| Error::Config(error.to_string()))?;
        Ok(Samples {
            recorder,
            warmup_left: plan.warmup,
            stop: plan.stop,
            clock: None,
            last_end: None,
            sink,
            next_interval: None,
            recorded_at_last_interval: 0,
        })
    }

    #[inline]
    fn record(&mut self, start: Instant, end: Instant, round_trip: RoundTrip) -> Result<Continue> {
        if self.warmup_left > 0 {
            self.warmup_left -= 1;
            return Ok(Continue::Go);
        }
        let clock = *self.clock.get_or_insert_with(|| RunClock::starting_at(start));
        let nanos = RunClock::starting_at(start).nanos_at(end);
        self.recorder.record(match round_trip {
            RoundTrip::Whole => nanos,
            RoundTrip::Halved => nanos / 2,
        });
        self.last_end = Some(end);
        if let Some(sink) = self.sink.as_deref_mut() {
            let next = *self.next_interval.get_or_insert_with(|| start + sink.period());
            if end >= next {
                sink.interval(self.recorder.histogram(), clock.nanos_at(end))?;
                self.recorded_at_last_interval = self.recorder.count();
                let mut following = next + sink.period();
                while following <= end {
                    following += sink.period();
                }
                self.next_interval = Some(following);
            }
        }
        let done = match self.stop {
            StopRule::Iterations(iterations) => self.recorder.count() >= iterations,
            StopRule::Duration(duration) => end.saturating_duration_since(clock.origin()) >= duration,
        };
        Ok(if done { Continue::Stop } else { Continue::Go })
    }

    fn finish(mut self) -> Result<LatencyRun> {
        let (clock, last_end) = match (self.clock, self.last_end) {
            (Some(clock), Some(end)) => (clock, end),
            _ => return Err(Error::Config("no latency sample was taken".into())),
        };
        let elapsed_nanos = clock.nanos_at(last_end);
        if let Some(sink) = self.sink.as_deref_mut() {
            if self.recorder.count() > self.recorded_at_last_interval {
                sink.interval(self.recorder.histogram(), elapsed_nanos)?;
            }
        }
        Ok(LatencyRun { recorder: self.recorder, elapsed_nanos })
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

    struct Log {
        period: Duration,
        ends: Vec<(u64, u64)>,
    }

    impl IntervalSink for Log {
        fn period(&self) -> Duration {
            self.period
        }
        fn interval(&mut self, cumulative: &Histogram<u64>, end_nanos: u64) -> Result<()> {
            self.ends.push((cumulative.len(), end_nanos));
            Ok(())
        }
    }

    fn plan(stop: StopRule, warmup: u64) -> LatencyPlan {
        LatencyPlan { size: 2, stop, warmup, inline: false, stall_timeout: Duration::from_secs(1) }
    }

    #[test]
    fn warmup_is_not_recorded_and_halving_applies_to_ping_pong_only() {
        let mut samples = Samples::new(&plan(StopRule::Iterations(2), 3), None).unwrap();
        let origin = Instant::now();
        let at = |micros: u64| origin + Duration::from_micros(micros);
        for index in 0..3 {
            assert_eq!(samples.record(at(index * 10), at(index * 10 + 9), RoundTrip::Halved).unwrap(), Continue::Go);
        }
        assert_eq!(samples.recorder.count(), 0, "warm-up samples are not counted");
        assert_eq!(samples.record(at(100), at(104), RoundTrip::Halved).unwrap(), Continue::Go);
        assert_eq!(samples.record(at(110), at(116), RoundTrip::Whole).unwrap(), Continue::Stop);
        let run = samples.finish().unwrap();
        let summary = run.recorder.summary().unwrap();
        assert_eq!((summary.t_min_nanos, summary.t_max_nanos), (2_000, 6_000));
        assert_eq!(run.elapsed_nanos, 16_000, "from the first sample's start to the last one's end");
    }

    #[test]
    fn duration_runs_stop_on_time_and_write_every_interval_once() {
        let mut log = Log { period: Duration::from_micros(100), ends: Vec::new() };
        let mut samples = Samples::new(&plan(StopRule::Duration(Duration::from_micros(1000)), 0), Some(&mut log)).unwrap();
        let origin = Instant::now();
        let mut index = 0u64;
        loop {
            let start = origin + Duration::from_micros(index * 30);
            let step = samples.record(start, start + Duration::from_micros(20), RoundTrip::Whole).unwrap();
            index += 1;
            if step == Continue::Stop {
                break;
            }
        }
        let run = samples.finish().unwrap();
        assert!(run.elapsed_nanos >= 1_000_000 && run.elapsed_nanos < 1_030_000, "{}", run.elapsed_nanos);
        assert_eq!(run.recorder.count(), index);
        let ends = &log.ends;
        assert!(ends.windows(2).all(|pair| pair[0].1 < pair[1].1 && pair[0].0 < pair[1].0), "{ends:?}");
        assert_eq!(ends.last().map(|last| last.0), Some(index), "the final partial interval is written");
        assert!((10..=11).contains(&ends.len()), "one line per 100 us of a 1 ms run: {ends:?}");
    }
}
