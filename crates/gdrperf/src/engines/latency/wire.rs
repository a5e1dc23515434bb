//! The wire of a latency engine: one QP, its completion queue and slices, for one size.
//!
//! Everything here runs inside or between timed samples, so nothing allocates and the waits
//! look at the clock, the control channel and the stop flag only every [`LOOK_AROUND_EVERY`] turns.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::exchange::{Control, ExchangeError};
use crate::harness::session::{Session, SessionParts};
use crate::memory::staging::Stager;
use crate::verbs::{
    CompletionQueue, Inline, LocalSlice, Operation, RcQueuePair, SendRequest, WorkCompletion,
};

use super::plan::LatencyPlan;
use super::transport::{
    landing_offset, sequence_immediate, PingPong, RECEIVE_ID, SEND_ID, STOP_IMMEDIATE, STOP_MARKER,
};

/// Receives take the whole landing half: a receive posted during one size then fits any later one.
pub(super) fn landing_half(session: &Session) -> LocalSlice {
    let region = session.local.buffers[0].region();
    let offset = landing_offset(region.len());
    region.slice(offset, region.len() - offset)
}

/// The last byte of a message in this side's buffer, read and written without references: the
/// NIC writes it behind the compiler's back, so every access is volatile.
#[derive(Debug, Clone, Copy)]
pub(super) struct PollByte(*mut u8);

impl PollByte {
    /// The last byte of a `size`-byte message landing in this side's buffer.
    pub(super) fn landing(session: &Session, size: usize) -> Result<PollByte> {
        let offset = landing_offset(session.local.buffers[0].region().len());
        PollByte::at(session, offset, size)
    }

    /// The last byte of a `size`-byte message this side sends.
    pub(super) fn outgoing(session: &Session, size: usize) -> Result<PollByte> {
        PollByte::at(session, 0, size)
    }

    fn at(session: &Session, offset: usize, size: usize) -> Result<PollByte> {
        let buffer = &session.local.buffers[0];
        match buffer.host_bytes() {
            Some(bytes) if size >= 1 && offset + size <= bytes.len() => {
                // Host memory is registered at its own address, so the region's address is the
                // CPU's pointer to it (the allocation exposed it when the address was taken).
                let address = buffer.region().address() + (offset + size) as u64 - 1;
                Ok(PollByte(address as usize as *mut u8))
            }
            Some(_) => Err(Error::Internal(crate::error::InternalError::MessageTooLarge { size })),
            // `PingPong::for_write` polls the last byte between two host memories only.
            None => Err(Error::Internal(crate::error::InternalError::LastBytePollUnreadable {
                memory: buffer.kind(),
            })),
        }
    }

    #[inline]
    pub(super) fn get(self) -> u8 {
        // SAFETY: points into this side's registered host buffer, which the session keeps alive
        // for the whole run; a byte has no alignment or tearing concerns.
        unsafe { std::ptr::read_volatile(self.0) }
    }

    #[inline]
    pub(super) fn set(self, value: u8) {
        // SAFETY: as in `get`; the peer never writes this byte while we do (strict alternation).
        unsafe { std::ptr::write_volatile(self.0, value) }
    }
}

/// The last-byte poll's two bytes: the one our message carries our marker in, and the one the
/// peer's message lands on.
#[derive(Debug, Clone, Copy)]
pub(super) struct MarkerBytes {
    pub(super) outgoing: PollByte,
    pub(super) landing: PollByte,
}

impl MarkerBytes {
    pub(super) fn of(session: &Session, size: usize) -> Result<MarkerBytes> {
        Ok(MarkerBytes {
            outgoing: PollByte::outgoing(session, size)?,
            landing: PollByte::landing(session, size)?,
        })
    }
}

/// What a wait saw land.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arrival {
    Message,
    Stop,
}

/// The QP, CQ and slices of one size, with the count of our unreaped signaled sends.
pub(super) struct Wire<'a> {
    queue_pair: &'a mut RcQueuePair,
    completions: &'a mut CompletionQueue,
    /// Checked between samples (Ctrl-C) and in long waits (a peer that died or gave up).
    control: &'a mut Control,
    local: LocalSlice,
    receive: LocalSlice,
    inline: Inline,
    send_depth: u64,
    sends_outstanding: u64,
    size: usize,
    stall_timeout: Duration,
    operation_name: &'static str,
}

impl<'a> Wire<'a> {
    pub(super) fn new(
        session: &'a mut Session,
        plan: &LatencyPlan,
        operation_name: &'static str,
    ) -> Wire<'a> {
        let receive = landing_half(session);
        let SessionParts { queue_pairs, completion_queue, buffers, control, .. } = session.parts();
        let local = buffers[0].slice(plan.size);
        Wire::assemble(&mut queue_pairs[0], completion_queue, control, local, receive, plan, operation_name)
    }

    /// The wire from its borrowed parts ([`Wire::new`], [`Wire::with_stager`]).
    fn assemble(
        queue_pair: &'a mut RcQueuePair,
        completions: &'a mut CompletionQueue,
        control: &'a mut Control,
        local: LocalSlice,
        receive: LocalSlice,
        plan: &LatencyPlan,
        operation_name: &'static str,
    ) -> Wire<'a> {
        let send_depth = u64::from(queue_pair.sizes().send_depth.max(1));
        Wire {
            queue_pair,
            completions,
            control,
            local,
            receive,
            inline: match plan.inline {
                // SAFETY: a plan asks for inline sends only from host memory (`LatencyConfig::inline`
                // with a CPU-visible buffer); `local` is the session's buffer, alive for the size.
                true => unsafe { Inline::yes() },
                false => Inline::NO,
            },
            send_depth,
            sends_outstanding: 0,
            size: plan.size,
            stall_timeout: plan.stall_timeout,
            operation_name,
        }
    }

    #[inline]
    pub(super) fn post(&mut self, operation: Operation) -> Result<()> {
        let request =
            SendRequest { wr_id: SEND_ID, signaled: true, local: self.local, operation, inline: self.inline };
        self.queue_pair.post_send(std::iter::once(request))?;
        self.sends_outstanding += 1;
        Ok(())
    }

    #[inline]
    pub(super) fn repost(&mut self) -> Result<()> {
        Ok(self.queue_pair.post_receive(RECEIVE_ID, self.receive)?)
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
                SEND_ID => return Err(completion.error(operation_name, size).into()),
                RECEIVE_ID if !completion.is_success() => {
                    return Err(completion.error("receive", size).into())
                }
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
            return Err(Error::Protocol(crate::error::ProtocolError::MoreSendCompletions));
        }
        self.sends_outstanding -= sends_done;
        Ok(received)
    }

    /// Reaps send completions until another send fits the queue. A message arriving meanwhile
    /// breaks the alternation.
    #[inline]
    pub(super) fn make_room(&mut self) -> Result<()> {
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
    pub(super) fn drain(&mut self) -> Result<()> {
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
    pub(super) fn wait_arrival(
        &mut self,
        transport: PingPong,
        byte: Option<PollByte>,
        sequence: u64,
        marker: u8,
    ) -> Result<Arrival> {
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

    /// One turn of a wait: cheap, except every [`LOOK_AROUND_EVERY`] turns, when it looks at the clock
    /// (stall), the control channel (a peer that died or gave up) and the stop flag. The cheap
    /// part is forced inline: a wait spins on it, and a call and return per spin (under QEMU TCG,
    /// two translation-block lookups) would lengthen the spin and so the time to see an arrival.
    #[inline(always)]
    fn tick(&mut self, patience: &mut Patience, during: &str) -> Result<()> {
        if !patience.due() {
            return Ok(());
        }
        self.look_around(patience, during)
    }

    /// The rare part of [`Wire::tick`].
    #[cold]
    #[inline(never)]
    fn look_around(&mut self, patience: &mut Patience, during: &str) -> Result<()> {
        patience.check_deadline(during, self.size)?;
        self.control.check_peer()?;
        match self.control.stop_requested() {
            Some(signal) => Err(ExchangeError::Interrupted(signal).into()),
            None => Ok(()),
        }
    }

    pub(super) fn stop_requested(&self) -> bool {
        self.control.stop_requested().is_some()
    }

    /// After the loop: the error that says a signal cut the size short, if one did.
    pub(super) fn interrupted(&self) -> Result<()> {
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
            (PingPong::WriteWithImmediate, Some(immediate)) if immediate == sequence_immediate(sequence) => {
                Ok(Arrival::Message)
            }
            (PingPong::Send, None) if completion.byte_len as usize == self.size => Ok(Arrival::Message),
            (PingPong::Send, None) => Err(Error::Protocol(crate::error::ProtocolError::PingPongSize {
                received: completion.byte_len,
                expected: self.size,
            })),
            _ => Err(Error::Protocol(crate::error::ProtocolError::WrongImmediate {
                sequence,
                immediate: completion.immediate,
                expected: sequence_immediate(sequence),
            })),
        }
    }
}

/// The staged engines (`super::staged`) copy between payload and bounce buffer around the posts
/// and arrivals, so they need the wire and their buffer's copy engine at once; [`Wire::new`]
/// borrows the whole session, so this borrows the two apart.
impl<'a> Wire<'a> {
    pub(super) fn with_stager(
        session: &'a mut Session,
        plan: &LatencyPlan,
        operation_name: &'static str,
    ) -> Result<(Wire<'a>, &'a mut dyn Stager)> {
        let receive = landing_half(session);
        let SessionParts { queue_pairs, completion_queue, buffers, control, .. } = session.parts();
        let local = buffers[0].slice(plan.size);
        let kind = buffers[0].kind();
        let stager = buffers[0].stager().ok_or_else(|| {
            Error::Internal(crate::error::InternalError::StagedLatencyWithoutStaging { memory: kind })
        })?;
        let wire = Wire::assemble(
            &mut queue_pairs[0],
            completion_queue,
            control,
            local,
            receive,
            plan,
            operation_name,
        );
        Ok((wire, stager))
    }
}

fn unexpected_arrival(completion: &WorkCompletion) -> Error {
    Error::UnexpectedCompletion {
        wr_id: completion.wr_id,
        opcode: completion.opcode,
        expected: "the peer's message, one at a time",
    }
}

/// How many turns of a wait pass between two looks around (clock, control channel, stop flag).
///
/// A look costs two clock reads, and where the clocksource is not the TSC (the Soft-RoCE VM's is
/// the HPET) each is a system call and an emulated device read, about 1.5 us under QEMU TCG. A
/// message that lands during a look is seen only after it, so looks add to the latency measured.
/// Looking every 65536 turns instead of every 4096 gave 3 to 4% lower write_lat medians in the VM
/// (35 alternating runs of each, results/softroce/look-around-ab.txt; within the VM's run-to-run
/// spread, so suggestive only), and a peer killed mid-run was still noticed 0.1 to 0.2 s later.
pub(super) const LOOK_AROUND_EVERY: u32 = 1 << 16;

/// Stall detection without a clock read per spin: the deadline is only set at the first look,
/// after [`LOOK_AROUND_EVERY`] spins, so a fast arrival costs no clock read at all.
pub(super) struct Patience {
    spins: u32,
    deadline: Option<Instant>,
    timeout: Duration,
}

impl Patience {
    fn new(timeout: Duration) -> Patience {
        Patience { spins: 0, deadline: None, timeout }
    }

    /// Counts a spin; true every [`LOOK_AROUND_EVERY`].
    #[inline(always)]
    fn due(&mut self) -> bool {
        self.spins = self.spins.wrapping_add(1);
        self.spins.is_multiple_of(LOOK_AROUND_EVERY)
    }

    fn check_deadline(&mut self, during: &str, size: usize) -> Result<()> {
        let now = Instant::now();
        match self.deadline {
            None => self.deadline = Some(now + self.timeout),
            Some(deadline) if now > deadline => {
                return Err(Error::Stalled {
                    seconds: self.timeout.as_secs(),
                    during: format!("{during} ({size} bytes)"),
                })
            }
            Some(_) => {}
        }
        Ok(())
    }
}
