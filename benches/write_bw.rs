//! gdr-write-bw: RDMA WRITE bandwidth, perftest's ib_write_bw on gdrperf's harness.
//!
//! The client streams WRITEs into the server's buffer; the server stays passive (its CPU never
//! sees the data arrive) unless `-b` makes both sides write. With `--validate` the receiving
//! side checks its buffer against the sender's pattern after every size.

use clap::Parser;
use gdrperf::harness::bandwidth::{stream, StreamOperation, StreamPlan};
use gdrperf::harness::buffers::pattern_seed;
use gdrperf::harness::{self, BandwidthArgs, BandwidthConfig, BenchConfig, Benchmark, CommonArgs, Session, TestDefaults};
use gdrperf::output::{BandwidthRow, RowContext};
use gdrperf::output::rows::{BandwidthFigures, BandwidthSettings};
use gdrperf::verbs::QueuePairSizes;

#[derive(Parser)]
#[command(name = "gdr-write-bw", version, about = "RDMA WRITE bandwidth (server: no HOST; client: HOST; or --loopback)")]
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
}

impl Benchmark for WriteBandwidth {
    const NAME: &'static str = "write_bw";
    const TITLE: &'static str = "RDMA_Write BW Test";
    type Report = BandwidthFigures;
    type Row = BandwidthRow;

    fn queue_sizes(&self) -> QueuePairSizes {
        QueuePairSizes { send_depth: self.common.tx_depth, recv_depth: 1, max_inline: 0 }
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({ "cq_mod": self.bandwidth.cq_mod, "bidirectional": self.bandwidth.bidirectional })
    }

    fn header(&self) -> Vec<(String, String)> {
        vec![
            ("CQ moderation".into(), self.bandwidth.cq_mod.to_string()),
            ("Direction".into(), if self.bandwidth.bidirectional { "bidirectional" } else { "client -> server" }.into()),
        ]
    }

    fn prepare(&self, session: &mut Session, size: usize) -> gdrperf::Result<()> {
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
        if !self.sends(session) {
            return Ok(None);
        }
        let plan = StreamPlan {
            size,
            operation: StreamOperation::Write,
            stop: self.common.stop,
            warmup: self.common.warmup,
            tx_depth: self.common.tx_depth,
            cq_mod: self.bandwidth.cq_mod,
            stall_timeout: self.common.timeout,
        };
        stream(session, &plan).map(|report| Some(BandwidthFigures::from(&report)))
    }

    fn check(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<String>> {
        if !self.common.validate || !self.receives(session) {
            return Ok(None);
        }
        for (index, buffer) in session.local.buffers.iter().enumerate() {
            if let Some(mismatch) = buffer.check_pattern(size, pattern_seed(size, index))? {
                return Ok(Some(format!(
                    "QP {index}: byte {} is {:#04x}, expected {:#04x}",
                    mismatch.offset, mismatch.found, mismatch.expected
                )));
            }
        }
        Ok(None)
    }

    fn row(&self, context: &RowContext, ours: Option<BandwidthFigures>, peer: Option<BandwidthFigures>, validation: &str) -> Option<BandwidthRow> {
        let reports: Vec<BandwidthFigures> = ours.into_iter().chain(peer).collect();
        let settings = BandwidthSettings {
            tx_depth: self.common.tx_depth,
            cq_mod: self.bandwidth.cq_mod,
            bidirectional: self.bandwidth.bidirectional,
        };
        (!reports.is_empty()).then(|| BandwidthRow::new(context, settings, &reports, validation))
    }
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
