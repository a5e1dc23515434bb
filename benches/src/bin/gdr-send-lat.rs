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

struct SendLatency {
    common: BenchConfig,
    latency: LatencyConfig,
    files: Option<LatencyFiles>,
}

impl Benchmark for SendLatency {
    const BENCH: Bench = bench::SEND_LAT;
    type Report = LatencyFigures;
    type Row = LatencyRow;

    fn config(&self) -> &BenchConfig {
        &self.common
    }

    fn setup(&self) -> Setup {
        ping_pong_setup(
            &self.common,
            self.latency.inline_request(),
            PingPong::Send,
            serde_json::json!({}),
            vec![("Sample".into(), "half a SEND/RECV ping-pong round trip".into())],
        )
    }

    fn prepare(&self, session: &mut Session, size: usize) -> gdrperf::Result<()> {
        if self.common.validate {
            prepare_ping_pong_check(session, size)?;
        }
        prepare_ping_pong(session, PingPong::Send, size)
    }

    fn measure(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<LatencyFigures>> {
        measure_ping_pong(session, PingPong::Send, &self.common, &self.latency, self.files.as_ref(), size)
    }

    fn check(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<String>> {
        if !self.common.validate {
            return Ok(None);
        }
        check_ping_pong(session, size, size)
    }

    fn row(
        &self,
        context: &RowContext,
        ours: Option<LatencyFigures>,
        peer: Option<LatencyFigures>,
        validation: &str,
    ) -> Option<LatencyRow> {
        ping_pong_row(context, PingPong::Send.arrival(), ours, peer, validation)
    }
}

fn main() -> std::process::ExitCode {
    let cli: Cli = parse_bench(&SendLatency::BENCH);
    exit(|| {
        let (common, latency, files) =
            latency_setup(&cli.common, &cli.latency, (&cli.inline).into(), &SendLatency::BENCH)?;
        run(&SendLatency { common, latency, files })
    })
}
