//! gdr-atomic-lat: 8-byte RDMA atomic latency, perftest's ib_atomic_lat on gdrperf's harness.
//!
//! The client runs one atomic at a time on an 8-byte counter at the start of the server's
//! buffer (fetch-and-add of 1 by default, compare-and-swap with `-A CMP_AND_SWAP`); a sample is
//! the time from the post to the atomic's completion, a whole round trip, as ib_atomic_lat
//! reports it. The server's CPU takes no part. With `--validate` both sides zero the counter
//! and the fetched value before the size, and the client checks that the counter advanced by
//! exactly 1 per atomic.

use clap::Parser;
use gdrperf::prelude::*;

#[derive(Parser)]
#[command(version)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    latency: LatencyArgs,
    #[command(flatten)]
    outs: OutsArgs,
    #[command(flatten)]
    atomic: AtomicArgs,
}

/// The one-sided latency loop, with atomics.
struct AtomicLatency(OneSidedLatency, AtomicOperation);

impl Benchmark for AtomicLatency {
    const BENCH: Bench = bench::ATOMIC_LAT;
    type Engine = OneSidedLatency;

    fn engine(&self) -> &OneSidedLatency {
        &self.0
    }

    fn setup(&self) -> Setup {
        let name = self.1.name();
        one_sided_setup(
            &self.0.common,
            // The client's atomics update the server's counter; its own buffer takes the fetched values.
            RemoteAccess::Atomic,
            serde_json::json!({ "atomic_type": name }),
            vec![
                ("Atomic".into(), name.into()),
                ("Sample".into(), "post to completion of one atomic (a whole round trip)".into()),
            ],
        )
    }
}

fn main() -> std::process::ExitCode {
    let cli: Cli = parse_bench(&AtomicLatency::BENCH);
    exit(|| {
        let (mut common, latency, files) =
            latency_setup(&cli.common, &cli.latency, TestOptions::default(), &AtomicLatency::BENCH)?;
        common.read_depth = cli.outs.read_depth()?;
        let atomic = cli.atomic.atomic_type;
        run(&AtomicLatency(
            OneSidedLatency { common, latency, files, request: OneSidedRequest::Atomic(atomic) },
            atomic,
        ))
    })
}
