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
    #[command(flatten)]
    inline: BandwidthInlineArgs,
    #[command(flatten)]
    immediate: WriteImmediateArgs,
}

/// The one-sided stream, writing.
struct WriteBandwidth(OneSidedStream);

impl Benchmark for WriteBandwidth {
    const BENCH: Bench = bench::WRITE_BW;
    type Engine = OneSidedStream;

    fn engine(&self) -> &OneSidedStream {
        &self.0
    }

    fn setup(&self) -> Setup {
        let OneSidedStream { common, bandwidth, inline_size, write_with_immediate, .. } = &self.0;
        // Both sides must agree on --write-with-imm: a server that posts no receives would
        // leave the writer retrying for ever.
        let mut parameters = bandwidth.parameters();
        parameters["write_with_imm"] = serde_json::json!(write_with_immediate);
        let mut header = bandwidth.header();
        if *write_with_immediate {
            header.push(("Verb".into(), "WRITE_WITH_IMM (the server receives and reports its own)".into()));
        }
        Setup {
            // Receives are used by a receiver that copies each arrival on, and by --write-with-imm's
            // server (engines::one_sided).
            queue_sizes: QueuePairSizes {
                send_depth: common.tx_depth,
                recv_depth: common.tx_depth,
                max_inline: *inline_size,
            },
            buffer_len: common.max_size(),
            // The client writes into the server's buffer (and the server into the client's with -b).
            remote_access: RemoteAccess::Write,
            // -I: the header says what it comes to on this side's memory (none from GPU memory).
            inline: (*inline_size > 0).then_some(InlineRequest { size: *inline_size, asked: true }),
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
    let cli: Cli = parse_bench(&WriteBandwidth::BENCH);
    let defaults = WriteBandwidth::BENCH.defaults;
    exit(|| {
        let common = BenchConfig::from_args(&cli.common, defaults)?;
        let bandwidth = BandwidthConfig::from_args(&cli.bandwidth, &common, WriteBandwidth::BENCH.verb)?;
        let inline_size = cli.inline.checked()?;
        let write_with_immediate = cli.immediate.checked(&common, &bandwidth)?;
        run(&WriteBandwidth(OneSidedStream {
            operation: StreamOperation::Write,
            common,
            bandwidth,
            inline_size,
            write_with_immediate,
        }))
    })
}
