//! gdr-write-lat: RDMA WRITE latency, perftest's ib_write_lat on gdrperf's harness.
//!
//! Ping-pong: the client writes into the server's buffer, the server writes back as soon as the
//! client's write has landed, and so on; a sample is half a round trip. A WRITE does not tell the
//! receiver's CPU that it arrived, so with host memory on both sides each side spins on the last
//! byte of its buffer (a new marker value per message, so a stale byte is never taken for an
//! arrival). Where either buffer is not CPU-visible (GPU memory), or with --write-with-imm, both
//! sides use WRITE_WITH_IMM instead and wait for the receive completion it produces.
//!
//! With `--validate` the client's pattern travels to the server and back, and both sides check
//! it (all but the last byte, which carries the markers, in the last-byte poll).
//!
//! Memory the NIC does not reach directly is handled by the harness (`gdrperf::engines::latency`,
//! which also picks the transport from both sides' memory): its copies are inside the timed
//! round trip and `copy_time_s` counts both sides' copies.

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
    write: WriteLatencyArgs,
}

/// The ping-pong latency loop over RDMA WRITE.
struct WriteLatency(PingPongLatency);

impl Benchmark for WriteLatency {
    const BENCH: Bench = bench::WRITE_LAT;
    type Engine = PingPongLatency;

    fn engine(&self) -> &PingPongLatency {
        &self.0
    }

    fn setup(&self) -> Setup {
        let PingPongLatency { common, latency, .. } = &self.0;
        let arrival = if latency.write_with_imm {
            "WRITE_WITH_IMM completion"
        } else {
            "last-byte poll (host memory), else WRITE_WITH_IMM"
        };
        ping_pong_setup(
            common,
            latency.inline_request(),
            PingPong::WriteWithImmediate,
            serde_json::json!({ "write_with_imm": latency.write_with_imm }),
            vec![
                ("Sample".into(), "half a WRITE ping-pong round trip".into()),
                ("Arrival".into(), arrival.into()),
            ],
        )
    }
}

fn main() -> std::process::ExitCode {
    let cli: Cli = parse_bench(&WriteLatency::BENCH);
    exit(|| {
        let (common, latency, files) =
            latency_settings(&cli.common, &cli.latency, (&cli.write).into(), &WriteLatency::BENCH)?;
        let operation = PingPongOperation::Write;
        run(&WriteLatency(PingPongLatency { operation, common, latency, files }))
    })
}
