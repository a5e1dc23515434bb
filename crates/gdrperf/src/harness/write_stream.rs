//! gdr-write-bw's two sides on the streaming engine, whatever the memory: the writer streams
//! ([`crate::harness::bandwidth::stream`]); the side written to is passive, unless its memory
//! is staged, when it copies every arrival on into its payload and credits the writer
//! ([`crate::harness::staged_receive`]). The bench only says which figures make its row.

use crate::error::Result;
use crate::harness::bandwidth::{post_credit_receives, stream, StreamOperation, StreamPlan};
use crate::harness::buffers::pattern_seed;
use crate::harness::config::{BandwidthConfig, BenchConfig, StopRule};
use crate::harness::session::Session;
use crate::harness::session::{refuse_staged, StagedRules};
use crate::harness::staged_receive;
use crate::output::rows::BandwidthFigures;

/// The settings of a write stream.
#[derive(Debug, Clone, Copy)]
pub struct WriteStream<'a> {
    pub common: &'a BenchConfig,
    pub bandwidth: &'a BandwidthConfig,
}

impl WriteStream<'_> {
    /// Whether this side writes: the client always, the server only when bidirectional.
    pub fn sends(&self, session: &Session) -> bool {
        session.is_client() || self.bandwidth.bidirectional
    }

    /// Whether this side is written to, and so has a buffer to check.
    pub fn receives(&self, session: &Session) -> bool {
        !session.is_client() || self.bandwidth.bidirectional
    }

    /// What staged memory refuses in this run, before connecting: `-b` (one bounce ring per QP)
    /// and `-D` with a staged receiver (it counts the messages it copies in).
    pub fn staged_rules(&self) -> StagedRules {
        StagedRules {
            bidirectional: self.bandwidth.bidirectional,
            receiver_counts_messages: matches!(self.common.stop, StopRule::Duration(_)),
        }
    }

    /// Whether the side written to is staged (it then copies every arrival on, and must hear of
    /// each). The refusals of [`WriteStream::staged_rules`] hold here too.
    fn staged_receiver(&self, session: &Session) -> Result<bool> {
        let (server, client) = match session.is_client() {
            true => (session.peer_memory(), session.memory()),
            false => (session.memory(), session.peer_memory()),
        };
        refuse_staged(self.staged_rules(), server, client)?;
        Ok(server.is_staged())
    }

    /// Messages per QP and size, warm-up included (a staged receiver copies those too).
    fn messages_per_qp(&self) -> u64 {
        match self.common.stop {
            StopRule::Iterations(iterations) => iterations + self.common.warmup,
            StopRule::Duration(_) => 0,
        }
    }

    /// Before a size: receives and credits in place, the data check's pattern written (the
    /// writer) or the buffer cleared (the side written to).
    pub fn prepare(&self, session: &mut Session, size: usize) -> Result<()> {
        let staged_receiver = self.staged_receiver(session)?;
        if staged_receiver && !self.sends(session) {
            staged_receive::post_receives(session, size, self.common.tx_depth, self.messages_per_qp())?;
        }
        if staged_receiver && self.sends(session) && !session.connection.credit_receives {
            post_credit_receives(&mut session.local.queue_pairs)?;
            session.connection.credit_receives = true;
        }
        if !self.common.validate {
            return Ok(());
        }
        let (sends, receives) = (self.sends(session), self.receives(session));
        for (index, buffer) in session.local.buffers.iter_mut().enumerate() {
            match (sends, receives) {
                // Both directions share one buffer per QP: each side writes its pattern into the
                // peer's buffer, so the local copy must hold the pattern we send and is then
                // overwritten by the peer's identical pattern.
                (true, _) => buffer.fill_pattern(size, pattern_seed(size, index))?,
                (false, true) => buffer.clear(size)?,
                (false, false) => {}
            }
        }
        Ok(())
    }

    /// One size on this side: the writer's figures, a staged receiver's (when data reached its
    /// payload), or `None` for a passive side.
    pub fn measure(&self, session: &mut Session, size: usize) -> Result<Option<BandwidthFigures>> {
        let staged_receiver = self.staged_receiver(session)?;
        session.take_copy_seconds();
        let report = if self.sends(session) {
            let plan = StreamPlan {
                size,
                operation: StreamOperation::Write,
                stop: self.common.stop,
                warmup: self.common.warmup,
                tx_depth: self.common.tx_depth,
                cq_mod: self.bandwidth.cq_mod,
                margin_seconds: self.common.margin_seconds,
                stall_timeout: self.common.timeout,
                notify_receiver: staged_receiver,
                validate: self.common.validate,
            };
            stream(session, &plan)?
        } else if staged_receiver {
            staged_receive::receive(
                session,
                size,
                self.common.tx_depth,
                self.common.warmup,
                self.messages_per_qp(),
                self.common.timeout,
                self.common.validate,
            )?
        } else {
            return Ok(None);
        };
        let copy_seconds = session.take_copy_seconds();
        Ok(Some(BandwidthFigures { copy_seconds, ..BandwidthFigures::from(&report) }))
    }
}
