//! The engine of the two ping-pong benches (gdr-write-lat, gdr-send-lat), [`PingPongLatency`]:
//! one size measured on either side, and the row made of both sides' reports. They differ only
//! in their transport ([`PingPong`]), so each step is written once, here; so is the choice of
//! the host loop (`direct.rs`) or the staged one (`staged.rs`) from the session's memory, once
//! per size, so a bench never makes it and the host loops' hot paths stay as tuned.

use crate::error::Result;
use crate::harness::benchmark::Engine;
use crate::harness::session::Session;
use crate::memory::check_failure::CheckFailure;
use crate::options::config::BenchConfig;
use crate::options::latency::LatencyConfig;
use crate::output::latency_row::{LatencyFigures, LatencyFiles, LatencyRow, LatencySettings};
use crate::output::RowContext;

use super::direct::{direct_ping_pong_initiator, direct_ping_pong_responder};
use super::files::measure_size;
use super::plan::{IntervalSink, LatencyPlan, LatencyRun};
use super::setup::{check_ping_pong, prepare_ping_pong, prepare_ping_pong_check};
use super::staged::{staged_ping_pong_initiator, staged_ping_pong_responder};
use super::transport::PingPong;

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

/// One size of a ping-pong over `transport`. The server takes no samples, but its copies are
/// inside the client's round trips, so it reports those alone; the client samples (logging to
/// `files`, if any) and says how much it inlined.
pub fn measure_ping_pong(
    session: &mut Session,
    transport: PingPong,
    common: &BenchConfig,
    latency: &LatencyConfig,
    files: Option<&LatencyFiles>,
    size: usize,
) -> Result<Option<LatencyFigures>> {
    let plan = LatencyPlan::new(
        common,
        size,
        latency.inline(size, session.perftest_knows_inline(), session.cpu_visible()),
    );
    session.take_copy_seconds();
    if !session.is_client() {
        ping_pong_responder(session, transport, &plan)?;
        return Ok(Some(LatencyFigures::copies_only(size, session.take_copy_seconds())));
    }
    let mut figures = measure_size(files, size, |sink| ping_pong_initiator(session, transport, &plan, sink))?;
    figures.copy_seconds = session.take_copy_seconds();
    figures.inline_size = latency.inline_size_for(session.perftest_knows_inline(), session.cpu_visible()).0;
    Ok(Some(figures))
}

/// A ping-pong's row, on the client only: its figures, with the server's copy time added to its
/// own (both sides' copies lie inside the round trips it timed).
pub fn ping_pong_row(
    context: &RowContext,
    arrival: &'static str,
    ours: Option<LatencyFigures>,
    peer: Option<LatencyFigures>,
    validation: &str,
) -> Option<LatencyRow> {
    // The side that timed: a server that took no samples (under -D only the client counts the
    // window) prints the client's figures, as perftest's server prints a row of its own.
    let (ours, peer) = match (ours, peer) {
        (Some(ours), Some(peer)) if ours.samples == 0 && peer.samples > 0 => (peer, Some(ours)),
        (ours, peer) => (ours?, peer),
    };
    let settings = LatencySettings { arrival, inline_size: ours.inline_size };
    let mut row = LatencyRow::new(context, settings, &ours, validation);
    row.copy_time_s += peer.map_or(0.0, |peer| peer.copy_seconds);
    Some(row)
}

/// Which ping-pong a bench runs; the transport of each size follows from it and the memory of
/// both sides ([`PingPong`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PingPongOperation {
    /// RDMA WRITE (gdr-write-lat): the last-byte poll where the receiver's CPU sees its memory,
    /// else (or with `--write-with-imm`) WRITE_WITH_IMM.
    Write,
    /// SEND/RECV (gdr-send-lat).
    Send,
}

/// A ping-pong latency loop with its run's settings and per-size files.
pub struct PingPongLatency {
    pub operation: PingPongOperation,
    pub common: BenchConfig,
    pub latency: LatencyConfig,
    pub files: Option<LatencyFiles>,
}

impl PingPongLatency {
    /// This side's transport for the memory of both sides.
    fn transport(&self, session: &Session) -> PingPong {
        match self.operation {
            PingPongOperation::Write => PingPong::for_write_session(session, self.latency.write_with_imm),
            PingPongOperation::Send => PingPong::Send,
        }
    }
}

impl Engine for PingPongLatency {
    type Report = LatencyFigures;
    type Row = LatencyRow;

    fn config(&self) -> &BenchConfig {
        &self.common
    }

    fn prepare(&self, session: &mut Session, size: usize) -> Result<()> {
        if self.common.validate {
            prepare_ping_pong_check(session, size)?;
        }
        prepare_ping_pong(session, self.transport(session), size)
    }

    fn measure(&self, session: &mut Session, size: usize) -> Result<Option<LatencyFigures>> {
        let transport = self.transport(session);
        measure_ping_pong(session, transport, &self.common, &self.latency, self.files.as_ref(), size)
    }

    /// `--validate`: the message that landed last; a last-byte poll's last byte carries the
    /// poll markers, so the check covers the bytes before it.
    fn check(&self, session: &mut Session, size: usize) -> Result<Option<CheckFailure>> {
        if !self.common.validate {
            return Ok(None);
        }
        let len = match self.transport(session) {
            PingPong::WritePollLastByte => size - 1,
            _ => size,
        };
        check_ping_pong(session, size, len)
    }

    fn row(
        &self,
        context: &RowContext,
        ours: Option<LatencyFigures>,
        peer: Option<LatencyFigures>,
        validation: &str,
    ) -> Option<LatencyRow> {
        // The transport follows from the memory of both sides, which the context names.
        let transport = match self.operation {
            PingPongOperation::Write => {
                PingPong::for_write(context.mem_local, context.mem_remote, self.latency.write_with_imm)
            }
            PingPongOperation::Send => PingPong::Send,
        };
        ping_pong_row(context, transport.arrival(), ours, peer, validation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(samples: u64, t_avg_nanos: f64) -> LatencyFigures {
        LatencyFigures {
            bytes: 64,
            samples,
            t_min_nanos: 1000,
            t_max_nanos: 9000,
            t_typical_nanos: 4000,
            t_avg_nanos,
            t_stdev_nanos: 10.0,
            p99_nanos: 8000,
            p99_9_nanos: 9000,
            p99_99_nanos: 9000,
            elapsed_nanos: 1_000_000,
            saturated: 0,
            exact_percentiles: true,
            copy_seconds: 0.0,
            span: None,
            refused_samples: 0,
            inline_size: 0,
        }
    }

    /// A -D server takes no samples: its row is the client's, as perftest's server prints one.
    #[test]
    fn a_side_that_timed_nothing_prints_the_peers_figures() {
        let context = RowContext::default();
        let server = ping_pong_row(
            &context,
            "completion",
            Some(figures(0, 0.0)),
            Some(figures(215, 4_659_720.0)),
            "off",
        );
        assert_eq!(server.map(|row| (row.iterations, row.t_avg_us)), Some((215, 4659.72)));
        let client = ping_pong_row(
            &context,
            "completion",
            Some(figures(215, 4_659_720.0)),
            Some(figures(0, 0.0)),
            "off",
        );
        assert_eq!(client.map(|row| row.iterations), Some(215));
        let both = ping_pong_row(
            &context,
            "completion",
            Some(figures(10, 1000.0)),
            Some(figures(20, 2000.0)),
            "off",
        );
        assert_eq!(both.map(|row| row.iterations), Some(10), "a side that timed keeps its own");
        assert!(ping_pong_row(&context, "completion", None, Some(figures(20, 2000.0)), "off").is_none());
    }
}
