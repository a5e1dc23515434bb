//! gdr-atomic-bw: 8-byte RDMA atomic bandwidth and message rate, perftest's ib_atomic_bw on
//! gdrperf's harness.
//!
//! The client streams atomics (fetch-and-add of 1 by default, compare-and-swap with
//! `-A CMP_AND_SWAP`) on one 8-byte counter per QP in the server's buffer, up to `-t` in flight;
//! the server stays passive (its CPU takes no part) unless `-b` makes both sides do it. `-o/--outs`
//! bounds the atomics each QP has outstanding at the responder, within the device's
//! `max_qp_rd_atom` (perftest's rule). With `--validate` the counters start at 0 and the client
//! checks that each advanced by exactly 1 per atomic.

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
    atomic: AtomicArgs,
    #[command(flatten)]
    outs: OutsArgs,
}

/// The one-sided stream, with atomics.
struct AtomicBandwidth(OneSidedStream, AtomicOperation);

impl Benchmark for AtomicBandwidth {
    const BENCH: Bench = bench::ATOMIC_BW;
    type Engine = OneSidedStream;

    fn engine(&self) -> &OneSidedStream {
        &self.0
    }

    fn setup(&self) -> Setup {
        let OneSidedStream { common, bandwidth, .. } = &self.0;
        let outs = common.read_depth.describe();
        let mut parameters = bandwidth.parameters();
        parameters["outs"] = outs.clone().into();
        parameters["atomic_type"] = self.1.name().into();
        let mut header = vec![("Atomic".into(), self.1.name().into())];
        header.extend(bandwidth.header());
        header.push(("Outstanding atomics".into(), outs));
        Setup {
            // Nothing is received: an atomic's answer completes its own request.
            queue_sizes: QueuePairSizes { send_depth: common.tx_depth, recv_depth: 1, max_inline: 0 },
            inline: None,
            // The fetched values land at the start, the peer's atomics act on the counter after them.
            buffer_len: ATOMIC_COUNTER_OFFSET as usize + common.max_size(),
            remote_access: RemoteAccess::Atomic,
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
    let cli: Cli = parse_bench(&AtomicBandwidth::BENCH);
    exit(|| {
        let mut common = BenchConfig::from_args(&cli.common, AtomicBandwidth::BENCH.defaults)?;
        common.read_depth = cli.outs.read_depth()?;
        let bandwidth = BandwidthConfig::from_args(&cli.bandwidth, &common, AtomicBandwidth::BENCH.verb)?;
        let atomic = cli.atomic.atomic_type;
        let operation = StreamOperation::Atomic(atomic);
        run(&AtomicBandwidth(
            OneSidedStream { operation, common, bandwidth, inline_size: 0, write_with_immediate: false },
            atomic,
        ))
    })
}
