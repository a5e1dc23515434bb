//! gdr-read-bw: RDMA READ bandwidth, perftest's ib_read_bw on gdrperf's harness.
//!
//! The client streams READs of the server's buffer into its own; the server stays passive (its
//! CPU takes no part) unless `-b` makes both sides read. `-o/--outs` bounds the READs each QP
//! has outstanding at the responder, within the device's `max_qp_rd_atom` (perftest's rule). With
//! `--validate` the server fills its buffer with a pattern and the reader checks what landed.
//!
//! Staged memory (the engine's `one_sided`): a staged server copies its payload out once per
//! size before the clock starts; a staged reader copies each landed message in, timed.

use clap::Parser;
use gdrperf::prelude::*;

#[derive(Parser)]
#[command(version)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    bandwidth: BandwidthArgs,
    /// RDMA READs each QP may have outstanding, at most the device's max_qp_rd_atom (higher is
    /// lowered to it, as perftest does) [default: the device's max_qp_rd_atom]
    #[arg(short = 'o', long = "outs", value_name = "N")]
    outs: Option<u32>,
}

struct ReadBandwidth {
    common: BenchConfig,
    bandwidth: BandwidthConfig,
}

impl ReadBandwidth {
    fn stream(&self) -> OneSidedStream<'_> {
        OneSidedStream { operation: StreamOperation::Read, common: &self.common, bandwidth: &self.bandwidth }
    }
}

impl Benchmark for ReadBandwidth {
    const BENCH: Bench = bench::READ_BW;
    type Report = BandwidthFigures;
    type Row = BandwidthRow;

    fn config(&self) -> &BenchConfig {
        &self.common
    }

    fn setup(&self) -> Setup {
        let outs = match self.common.read_depth {
            ReadDepth::Asked(outs) => outs.to_string(),
            _ => "the device's max_qp_rd_atom".into(),
        };
        let mut parameters = self.bandwidth.parameters();
        parameters["outs"] = outs.clone().into();
        let mut header = self.bandwidth.header();
        for (name, value) in &mut header {
            if name == "Direction" && !self.bandwidth.bidirectional {
                *value = "server -> client (the client reads)".into();
            }
        }
        header.push(("Outstanding reads".into(), outs));
        Setup {
            // Nothing is received: READ responses complete the reader's own requests.
            queue_sizes: QueuePairSizes { send_depth: self.common.tx_depth, recv_depth: 1, max_inline: 0 },
            inline: None,
            buffer_len: self.common.max_size(),
            // The client reads the server's buffer (and the server the client's with -b).
            remote_access: RemoteAccess::Read,
            parameters,
            header,
            bandwidth: Some(self.bandwidth),
        }
    }

    fn staged_rules(&self) -> StagedRules {
        self.bandwidth.staged
    }

    fn prepare(&self, session: &mut Session, size: usize) -> gdrperf::Result<()> {
        self.stream().prepare(session, size)
    }

    fn measure(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<BandwidthFigures>> {
        self.stream().measure(session, size)
    }

    fn check(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<String>> {
        self.stream().check(session, size)
    }

    fn row(
        &self,
        context: &RowContext,
        ours: Option<BandwidthFigures>,
        peer: Option<BandwidthFigures>,
        validation: &str,
    ) -> Option<BandwidthRow> {
        self.stream().row(context, ours, peer, validation)
    }
}

fn main() -> std::process::ExitCode {
    let cli: Cli = parse_bench(&ReadBandwidth::BENCH);
    exit(|| {
        let mut common = BenchConfig::from_args(&cli.common, ReadBandwidth::BENCH.defaults)?;
        common.read_depth = ReadDepth::from_outs(cli.outs)?;
        let bandwidth = BandwidthConfig::from_args(&cli.bandwidth, &common, ReadBandwidth::BENCH.operation)?;
        run(&ReadBandwidth { common, bandwidth })
    })
}
