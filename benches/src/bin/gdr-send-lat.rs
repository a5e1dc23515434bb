//! gdr-send-lat: SEND/RECV latency, perftest's ib_send_lat on gdrperf's harness.
//!
//! Ping-pong over SEND/RECV: the client sends, the server's receive completes and it sends back
//! at once; a sample is half a round trip. Both sides keep a few receives posted (posted before
//! the server says Ready, replaced one for one as they are consumed, after the answer is sent).
//! Small messages go inline (-I, perftest's 236 bytes by default) from host memory.
//!
//! With `--validate` the client's pattern travels to the server and back, and both sides check
//! their buffer after each size; every receive's length is checked as it completes.
//!
//! Memory the NIC does not reach directly is handled by the harness (`gdrperf::engines::latency`):
//! its copies are inside the timed round trip and `copy_time_s` counts both sides' copies.

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
    inline: InlineArgs,
}

/// The ping-pong latency loop over SEND/RECV.
struct SendLatency(PingPongLatency);

impl Benchmark for SendLatency {
    const BENCH: Bench = bench::SEND_LAT;
    type Engine = PingPongLatency;

    fn engine(&self) -> &PingPongLatency {
        &self.0
    }

    fn setup(&self) -> Setup {
        ping_pong_setup(
            &self.0.common,
            self.0.latency.inline_request(),
            PingPong::Send,
            serde_json::json!({}),
            vec![("Sample".into(), "half a SEND/RECV ping-pong round trip".into())],
        )
    }
}

fn main() -> std::process::ExitCode {
    let cli: Cli = parse_bench(&SendLatency::BENCH);
    exit(|| {
        let (common, latency, files) =
            latency_settings(&cli.common, &cli.latency, (&cli.inline).into(), &SendLatency::BENCH)?;
        let operation = PingPongOperation::Send;
        run(&SendLatency(PingPongLatency { operation, common, latency, files }))
    })
}
