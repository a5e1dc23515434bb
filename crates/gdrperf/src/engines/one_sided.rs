//! The one-sided bandwidth benches (gdr-write-bw, gdr-read-bw, gdr-atomic-bw) on the streaming
//! engine, whatever the memory: the active side streams WRITEs, READs or atomics
//! ([`crate::engines::bandwidth::stream`]);
//! the other side is passive, except where its memory is staged:
//! - WRITE into staged memory: the side written to copies every arrival on into its payload and
//!   credits the writer ([`crate::engines::staged_receive`]).
//! - READ of staged memory: the side read from copies its payload out into its registered bounce
//!   buffer once per size, before the clock starts (what a program without GPUDirect does before
//!   it lets a peer read); a staged reader copies each landed message in, timed, in the engine.
//! - Atomics into staged memory: as READ, the counter copied out once per size and each fetched
//!   value copied in.
//!
//! The bench only says what it is and what it needs of each side ([`crate::harness::Benchmark`]);
//! both benches measure with this one engine.

use crate::engines::atomic::{check_atomic_counter, count_atomics};
use crate::engines::bandwidth::{
    post_credit_receives, stream, StreamOperation, StreamPlan, ATOMIC_COUNTER_OFFSET,
};
use crate::engines::{immediate_receive, staged_receive};
use crate::error::Result;
use crate::harness::benchmark::Engine;
use crate::harness::session::Session;
use crate::memory::buffers::pattern_seed;
use crate::memory::check_failure::CheckFailure;
use crate::options::config::{BandwidthConfig, BenchConfig, StopRule};
use crate::output::rows::{BandwidthFigures, BandwidthSettings};
use crate::output::{BandwidthRow, RowContext};

/// A writer's receives for a staged receiver's credits are posted (once per connection).
#[derive(Default)]
struct CreditReceives(bool);

/// The settings of a one-sided stream.
#[derive(Debug, Clone)]
pub struct OneSidedStream {
    pub operation: StreamOperation,
    pub common: BenchConfig,
    pub bandwidth: BandwidthConfig,
    /// `-I` of gdr-write-bw: WRITEs of up to this many bytes are posted inline from host memory
    /// (0: none; READs and atomics carry no payload to inline, so always 0 for them).
    pub inline_size: u32,
    /// `--write-with-imm` of gdr-write-bw: the writer's WRITEs carry immediate data and the
    /// server receives, counts and reports them (`engines::immediate_receive`), as perftest's
    /// `run_iter_bw_server`; false for READs and atomics.
    pub write_with_immediate: bool,
}

impl OneSidedStream {
    /// Whether this side posts (writes or reads): the client always, the server only when
    /// bidirectional.
    pub fn sends(&self, session: &Session) -> bool {
        session.is_client() || self.bandwidth.bidirectional
    }

    /// Whether data lands in this side's buffer, which then has something to check: the side
    /// written to, or the reader (the side whose atomics fetch values).
    pub fn receives(&self, session: &Session) -> bool {
        match self.operation.fetches() {
            false => !session.is_client() || self.bandwidth.bidirectional,
            true => self.sends(session),
        }
    }

    /// Whether the peer takes data from this side's buffer (or updates its counter): the writer,
    /// or the side read from (the side the atomics act on).
    fn is_source(&self, session: &Session) -> bool {
        match self.operation.fetches() {
            false => self.sends(session),
            true => !session.is_client() || self.bandwidth.bidirectional,
        }
    }

    /// Whether the side written to is staged (it then copies every arrival on, and must hear of
    /// each; never for READ, where the reader copies its own). The refusals of
    /// [`BandwidthConfig::staged`] were made once, before the QPs connected.
    fn staged_receiver(&self, session: &Session) -> bool {
        let server = if session.is_client() { session.peer_memory() } else { session.memory() };
        self.operation == StreamOperation::Write && server.is_staged()
    }

    /// `--write-with-imm`: this side is the server that receives the writes with immediate data
    /// (a staged server has its own receiver, which takes them anyway).
    fn receives_immediates(&self, session: &Session) -> bool {
        self.write_with_immediate && !self.sends(session) && !self.staged_receiver(session)
    }

    /// Messages per QP and size, warm-up included (a staged receiver copies those too).
    fn messages_per_qp(&self) -> u64 {
        match self.common.stop {
            StopRule::Iterations(iterations) => iterations + self.common.warmup,
            StopRule::Duration(_) => 0,
        }
    }
}

impl Engine for OneSidedStream {
    type Report = BandwidthFigures;
    type Row = BandwidthRow;

    fn config(&self) -> &BenchConfig {
        &self.common
    }

    /// Before a size: receives and credits in place, the data check's pattern written (the
    /// source) or the buffer cleared (where data lands), a staged source's payload copied out.
    fn prepare(&self, session: &mut Session, size: usize) -> Result<()> {
        let staged_receiver = self.staged_receiver(session);
        if staged_receiver && !self.sends(session) {
            staged_receive::post_receives(session, size, &self.common, self.messages_per_qp())?;
        }
        if self.receives_immediates(session) {
            immediate_receive::post_receives(session, self.messages_per_qp())?;
        }
        if staged_receiver && self.sends(session) && !session.connection.state::<CreditReceives>().0 {
            post_credit_receives(&mut session.local.queue_pairs)?;
            session.connection.state::<CreditReceives>().0 = true;
        }
        let (source, receives) = (self.is_source(session), self.receives(session));
        // An atomic stream's counter (and where its fetched values land) starts at 0 on both
        // sides, whatever --validate says: the compare-and-swap expects the count from 0.
        let atomics = matches!(self.operation, StreamOperation::Atomic(_));
        let counter_end = ATOMIC_COUNTER_OFFSET as usize + size;
        for (index, buffer) in session.local.buffers.iter_mut().enumerate() {
            match (source, receives) {
                _ if atomics => buffer.clear(counter_end)?,
                _ if !self.common.validate => {}
                // Both directions share one buffer per QP: each side's pattern goes into the
                // peer's buffer, so the local copy must hold the pattern we give and is then
                // overwritten by the peer's identical pattern.
                (true, _) => buffer.fill_pattern(size, pattern_seed(size, index))?,
                (false, true) => buffer.clear(size)?,
                (false, false) => {}
            }
            if source && self.operation.fetches() {
                if let Some(stager) = buffer.stager() {
                    let copy = stager.begin_out(0..if atomics { counter_end } else { size })?;
                    stager.finish()?;
                    // Before the size, outside the clock: not part of the copy time.
                    stager.log().forget(copy);
                }
            }
        }
        Ok(())
    }

    /// One size on this side: the writer's figures, a staged receiver's (when data reached its
    /// payload), or `None` for a passive side.
    fn measure(&self, session: &mut Session, size: usize) -> Result<Option<BandwidthFigures>> {
        let staged_receiver = self.staged_receiver(session);
        session.take_copy_seconds();
        let report = if self.sends(session) {
            let plan = StreamPlan {
                size,
                operation: self.operation,
                stop: self.common.stop,
                warmup: self.common.warmup,
                tx_depth: self.common.tx_depth,
                cq_mod: self.bandwidth.cq_mod,
                margin_seconds: self.common.margin_seconds,
                stall_timeout: self.common.timeout,
                notify_receiver: staged_receiver,
                inline: posts_inline(self.operation, session.cpu_visible(), size, self.inline_size),
                validate: self.common.validate,
                post_list: self.bandwidth.post_list,
                with_immediate: self.write_with_immediate,
                shared_bounce_for_tests: self.common.shared_bounce_for_tests,
            };
            let streamed = stream(session, &plan)?;
            if matches!(self.operation, StreamOperation::Atomic(_)) {
                count_atomics(session, streamed.last);
            }
            streamed.report
        } else if staged_receiver {
            staged_receive::receive(session, size, &self.common, self.messages_per_qp())?
        } else if self.receives_immediates(session) {
            immediate_receive::receive(session, size, &self.common, self.messages_per_qp())?
        } else {
            return Ok(None);
        };
        let copy_seconds = session.take_copy_seconds();
        Ok(Some(BandwidthFigures { copy_seconds, ..BandwidthFigures::from(&report) }))
    }

    /// `--validate`, after a size: where data landed, the pattern is whole (a staged ring was
    /// checked message by message as each was copied in); where atomics fetched, the peer's
    /// counter advanced by exactly one per atomic.
    fn check(&self, session: &mut Session, size: usize) -> Result<Option<CheckFailure>> {
        if !self.common.validate || !self.receives(session) {
            return Ok(None);
        }
        match self.operation {
            StreamOperation::Atomic(_) => check_atomic_counter(session),
            StreamOperation::Write | StreamOperation::Read => session.check_received(size, size),
        }
    }

    /// The row of one size: both directions add up; one direction seen from both ends (a
    /// receiver that copies on reports when data reached its payload) counts at the slower end,
    /// where it arrived last.
    fn row(
        &self,
        context: &RowContext,
        ours: Option<BandwidthFigures>,
        peer: Option<BandwidthFigures>,
        validation: &str,
    ) -> Option<BandwidthRow> {
        let staged = context.mem_local.is_staged() || context.mem_remote.is_staged();
        let reports: Vec<BandwidthFigures> = match (ours, peer) {
            // --write-with-imm: each side its own figures, as perftest's client and server print.
            (Some(own), _) if self.write_with_immediate && !staged => vec![own],
            (Some(sent), Some(landed)) if !self.bandwidth.bidirectional => {
                let slower = if landed.average_bytes_per_second < sent.average_bytes_per_second {
                    landed
                } else {
                    sent
                };
                // The copies of both ends are part of the cost, whichever end was slower.
                vec![BandwidthFigures { copy_seconds: sent.copy_seconds + landed.copy_seconds, ..slower }]
            }
            (ours, peer) => ours.into_iter().chain(peer).collect(),
        };
        let settings = BandwidthSettings {
            tx_depth: self.common.tx_depth,
            cq_mod: self.bandwidth.cq_mod,
            bidirectional: self.bandwidth.bidirectional,
        };
        (!reports.is_empty()).then(|| BandwidthRow::new(context, settings, &reports, validation))
    }
}

/// Whether a size's requests go inline: `-I` covers the size, the request carries a payload
/// (a WRITE; a READ or an atomic has none to inline, and perftest sets 0 for them), and the
/// CPU can read the memory (none from GPU memory, as perftest: "Perftest doesn't support device
/// memory tests with inline messages").
fn posts_inline(operation: StreamOperation, cpu_visible: bool, size: usize, inline_size: u32) -> bool {
    operation == StreamOperation::Write && cpu_visible && size <= inline_size as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_writes_of_host_memory_up_to_the_inline_size_go_inline() {
        assert!(posts_inline(StreamOperation::Write, true, 64, 64));
        assert!(posts_inline(StreamOperation::Write, true, 2, 64));
        assert!(!posts_inline(StreamOperation::Write, true, 65, 64), "above -I");
        assert!(!posts_inline(StreamOperation::Write, true, 2, 0), "-I 0, the default");
        assert!(!posts_inline(StreamOperation::Write, false, 2, 64), "GPU or staged memory");
        assert!(!posts_inline(StreamOperation::Read, true, 2, 64), "a READ carries no payload");
    }
}
