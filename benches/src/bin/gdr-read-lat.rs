//! gdr-read-lat: RDMA READ latency, perftest's ib_read_lat on gdrperf's harness.
//!
//! The client reads the server's buffer, one READ outstanding at a time; a sample is the time
//! from the post to the READ's completion, a whole round trip (not halved, as perftest reports
//! it). The server's CPU takes no part. With `--validate` the server fills its buffer with a
//! pattern and the client checks what its READs brought back.
//!
//! Memory the NIC does not reach directly is handled by the harness (`gdrperf::engines::latency`):
//! `copy_time_s` counts the reader's copies.

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
}

/// The one-sided latency loop, reading.
struct ReadLatency(OneSidedLatency);

impl Benchmark for ReadLatency {
    const BENCH: Bench = bench::READ_LAT;
    type Engine = OneSidedLatency;

    fn engine(&self) -> &OneSidedLatency {
        &self.0
    }

    fn setup(&self) -> Setup {
        one_sided_setup(
            &self.0.common,
            // The client READs the server's buffer; nothing writes into either side's.
            RemoteAccess::Read,
            serde_json::json!({}),
            vec![("Sample".into(), "post to completion of one READ (a whole round trip)".into())],
        )
    }
}

fn main() -> std::process::ExitCode {
    let cli: Cli = parse_bench(&ReadLatency::BENCH);
    exit(|| {
        let (mut common, latency, files) =
            latency_setup(&cli.common, &cli.latency, TestOptions::default(), &ReadLatency::BENCH)?;
        common.read_depth = cli.outs.read_depth()?;
        run(&ReadLatency(OneSidedLatency { common, latency, files, request: OneSidedRequest::Read }))
    })
}
