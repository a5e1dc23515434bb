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
    #[command(flatten)]
    outs: OutsArgs,
}

/// The one-sided stream, reading.
struct ReadBandwidth(OneSidedStream);

impl Benchmark for ReadBandwidth {
    const BENCH: Bench = bench::READ_BW;
    type Engine = OneSidedStream;

    fn engine(&self) -> &OneSidedStream {
        &self.0
    }

    fn setup(&self) -> Setup {
        let OneSidedStream { common, bandwidth, .. } = &self.0;
        let outs = common.read_depth.describe();
        let mut parameters = bandwidth.parameters();
        parameters["outs"] = outs.clone().into();
        let mut header = bandwidth.header();
        for (name, value) in &mut header {
            if name == "Direction" && !bandwidth.bidirectional {
                *value = "server -> client (the client reads)".into();
            }
        }
        header.push(("Outstanding reads".into(), outs));
        Setup {
            // Nothing is received: READ responses complete the reader's own requests.
            queue_sizes: QueuePairSizes { send_depth: common.tx_depth, recv_depth: 1, max_inline: 0 },
            inline: None,
            buffer_len: common.max_size(),
            // The client reads the server's buffer (and the server the client's with -b).
            remote_access: RemoteAccess::Read,
            parameters,
            header,
            bandwidth: Some(*bandwidth),
        }
    }

    fn staged_rules(&self) -> StagedRules {
        self.0.bandwidth.staged
    }
}

fn main() -> std::process::ExitCode {
    let cli: Cli = parse_bench(&ReadBandwidth::BENCH);
    exit(|| {
        let mut common = BenchConfig::from_args(&cli.common, ReadBandwidth::BENCH.defaults)?;
        common.read_depth = cli.outs.read_depth()?;
        let bandwidth = BandwidthConfig::from_args(&cli.bandwidth, &common, ReadBandwidth::BENCH.verb)?;
        run(&ReadBandwidth(OneSidedStream {
            operation: StreamOperation::Read,
            common,
            bandwidth,
            inline_size: 0,
            write_with_immediate: false,
        }))
    })
}
