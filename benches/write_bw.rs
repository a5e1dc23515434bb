//! gdr-write-bw: RDMA WRITE bandwidth, perftest's ib_write_bw on gdrperf's harness.
//!
//! The client streams WRITEs into the server's buffer; the server stays passive (its CPU never
//! sees the data arrive) unless `-b` makes both sides write. With `--validate` the receiving
//! side checks its buffer against the sender's pattern after every size.

use clap::Parser;
use gdrperf::harness::bandwidth::{stream, StreamOperation, StreamPlan};
use gdrperf::harness::buffers::{check_received, pattern_seed};
use gdrperf::harness::staged_receive;
use gdrperf::harness::StopRule;
use gdrperf::harness::{
    self, BandwidthArgs, BandwidthConfig, BenchConfig, Benchmark, CommonArgs, Session, TestDefaults,
};
use gdrperf::output::rows::{BandwidthFigures, BandwidthSettings};
use gdrperf::output::{BandwidthRow, RowContext};
use gdrperf::verbs::QueuePairSizes;

#[derive(Parser)]
#[command(
    name = "gdr-write-bw",
    version,
    about = "RDMA WRITE bandwidth (server: no HOST; client: HOST; or --loopback)"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    bandwidth: BandwidthArgs,
}

struct WriteBandwidth {
    common: BenchConfig,
    bandwidth: BandwidthConfig,
}

impl WriteBandwidth {
    /// Whether this side writes: the client always, the server only when bidirectional.
    fn sends(&self, session: &Session) -> bool {
        session.side.is_client() || self.bandwidth.bidirectional
    }

    /// Whether this side receives writes, and so has a buffer to check.
    fn receives(&self, session: &Session) -> bool {
        !session.side.is_client() || self.bandwidth.bidirectional
    }

    /// A staged receiver copies every arriving message on into its payload, so it must hear of
    /// each one: the sender then writes with immediate data. One direction at a time, counted.
    fn staged_receiver(&self, session: &mut Session) -> gdrperf::Result<bool> {
        let ours = session.local.buffers.first_mut().is_some_and(|buffer| buffer.stager().is_some());
        let peers = session.peer.side.memory.ends_with("staged");
        if (ours || peers) && self.bandwidth.bidirectional {
            return Err(gdrperf::Error::Config(
                "staged memory runs one direction at a time: drop -b/--bidirectional".into(),
            ));
        }
        let receiver_is_staged = if session.side.is_client() { peers } else { ours };
        if receiver_is_staged && matches!(self.common.stop, StopRule::Duration(_)) {
            return Err(gdrperf::Error::Config(
                "a staged receiver counts the messages it copies: use -n/--iters, not -D".into(),
            ));
        }
        Ok(receiver_is_staged)
    }

    /// Messages per QP and size, warm-up included (a staged receiver copies those too).
    fn messages_per_qp(&self) -> u64 {
        match self.common.stop {
            StopRule::Iterations(iterations) => iterations + self.common.warmup,
            StopRule::Duration(_) => 0,
        }
    }
}

impl Benchmark for WriteBandwidth {
    const NAME: &'static str = "write_bw";
    const TITLE: &'static str = "RDMA_Write BW Test";
    type Report = BandwidthFigures;
    type Row = BandwidthRow;

    fn queue_sizes(&self) -> QueuePairSizes {
        // Receives are used only by a staged receiver, which keeps a TX depth of them posted.
        QueuePairSizes { send_depth: self.common.tx_depth, recv_depth: self.common.tx_depth, max_inline: 0 }
    }

    fn parameters(&self) -> serde_json::Value {
        self.bandwidth.parameters()
    }

    fn header(&self) -> Vec<(String, String)> {
        self.bandwidth.header()
    }

    fn prepare(&self, session: &mut Session, size: usize) -> gdrperf::Result<()> {
        if self.staged_receiver(session)? && !self.sends(session) {
            staged_receive::post_receives(session, size, self.common.tx_depth, self.messages_per_qp())?;
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

    fn measure(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<BandwidthFigures>> {
        let staged_receiver = self.staged_receiver(session)?;
        if !self.sends(session) {
            if !staged_receiver {
                return Ok(None);
            }
            let copying_before = copy_time(session);
            let report = staged_receive::receive(
                session,
                size,
                self.common.tx_depth,
                self.common.warmup,
                self.messages_per_qp(),
                self.common.timeout,
            )?;
            let copy_seconds = (copy_time(session) - copying_before).as_secs_f64();
            return Ok(Some(BandwidthFigures { copy_seconds, ..BandwidthFigures::from(&report) }));
        }
        let plan = StreamPlan {
            size,
            operation: StreamOperation::Write,
            stop: self.common.stop,
            warmup: self.common.warmup,
            tx_depth: self.common.tx_depth,
            cq_mod: self.bandwidth.cq_mod,
            stall_timeout: self.common.timeout,
            notify_receiver: staged_receiver,
        };
        let copying_before = copy_time(session);
        let report = stream(session, &plan)?;
        let copy_seconds = (copy_time(session) - copying_before).as_secs_f64();
        Ok(Some(BandwidthFigures { copy_seconds, ..BandwidthFigures::from(&report) }))
    }

    fn check(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<String>> {
        if !self.common.validate || !self.receives(session) {
            return Ok(None);
        }
        check_received(&mut session.local.buffers, size, size)
    }

    fn sums_both_directions(&self) -> bool {
        self.bandwidth.bidirectional
    }

    fn row(
        &self,
        context: &RowContext,
        ours: Option<BandwidthFigures>,
        peer: Option<BandwidthFigures>,
        validation: &str,
    ) -> Option<BandwidthRow> {
        // Both directions add up; one direction seen from both ends (a staged receiver reports
        // when data reached its payload) counts at the slower end, where the data arrived last.
        let reports: Vec<BandwidthFigures> = match (ours, peer) {
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

    fn concurrent(&self) -> bool {
        self.bandwidth.concurrent
    }

    fn aggregate(&self, lanes: &[BandwidthRow]) -> Option<BandwidthRow> {
        BandwidthRow::aggregate(lanes)
    }
}

/// Copy time of this side's staged buffers so far (zero for memory the NIC reaches directly).
fn copy_time(session: &mut Session) -> std::time::Duration {
    session
        .local
        .buffers
        .iter_mut()
        .filter_map(|buffer| buffer.stager().map(|stager| stager.copy_time()))
        .sum()
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let defaults = TestDefaults { size: 65536, iterations: 5000, tx_depth: 128, warmup: 16 };
    gdrperf::harness::exit(|| {
        let common = BenchConfig::from_args(&cli.common, defaults)?;
        let bandwidth = BandwidthConfig::from_args(&cli.bandwidth, &common)?;
        harness::run(&common.clone(), &WriteBandwidth { common, bandwidth })
    })
}
