//! gdr-write-bw: RDMA WRITE bandwidth, perftest's ib_write_bw on gdrperf's harness.
//!
//! The client streams WRITEs into the server's buffer; the server stays passive (its CPU never
//! sees the data arrive) unless `-b` makes both sides write. With `--validate` the receiving
//! side checks its buffer against the sender's pattern after every size.

use clap::Parser;
use gdrperf::prelude::*;

#[derive(Parser)]
#[command(version)]
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
    fn stream(&self) -> OneSidedStream<'_> {
        OneSidedStream { operation: StreamOperation::Write, common: &self.common, bandwidth: &self.bandwidth }
    }
}

impl Benchmark for WriteBandwidth {
    const BENCH: Bench = bench::WRITE_BW;
    type Report = BandwidthFigures;
    type Row = BandwidthRow;

    fn config(&self) -> &BenchConfig {
        &self.common
    }

    fn setup(&self) -> Setup {
        Setup {
            // Receives are used only by a receiver that copies each arrival on (engines::one_sided).
            queue_sizes: QueuePairSizes {
                send_depth: self.common.tx_depth,
                recv_depth: self.common.tx_depth,
                max_inline: 0,
            },
            buffer_len: self.common.max_size(),
            // The client writes into the server's buffer (and the server into the client's with -b).
            remote_access: RemoteAccess::Write,
            inline: None,
            parameters: self.bandwidth.parameters(),
            header: self.bandwidth.header(),
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
    let cli: Cli = parse_bench(&WriteBandwidth::BENCH);
    let defaults = WriteBandwidth::BENCH.defaults;
    exit(|| {
        let common = BenchConfig::from_args(&cli.common, defaults)?;
        let bandwidth = BandwidthConfig::from_args(&cli.bandwidth, &common, WriteBandwidth::BENCH.operation)?;
        run(&WriteBandwidth { common, bandwidth })
    })
}
