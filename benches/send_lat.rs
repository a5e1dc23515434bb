//! gdr-send-lat: SEND/RECV latency, perftest's ib_send_lat on gdrperf's harness.
//!
//! Ping-pong over SEND/RECV: the client sends, the server's receive completes and it sends back
//! at once; a sample is half a round trip. Both sides keep a few receives posted (posted before
//! the server says Ready, replaced one for one as they are consumed, after the answer is sent).
//! Small messages go inline (-I, perftest's 236 bytes by default) from host memory.
//!
//! With `--validate` the client's pattern travels to the server and back, and both sides check
//! their buffer after each size; every receive's length is checked as it completes.

use clap::Parser;
use gdrperf::harness::args_latency::{latency_setup, LatencyArgs, LatencyConfig, LatencyTest};
use gdrperf::harness::buffers::{check_received, pattern_seed};
use gdrperf::harness::latency::{
    ping_pong_initiator, ping_pong_responder, prepare_ping_pong, refuse_staged_memory, LatencyPlan, PingPong, PostedReceives, PING_PONG_RECEIVES,
};
use gdrperf::harness::{self, BenchConfig, Benchmark, CommonArgs, Session};
use gdrperf::output::latency_row::{measure_size, LatencyFigures, LatencyFiles, LatencyRow, LatencySettings};
use gdrperf::output::RowContext;
use gdrperf::verbs::QueuePairSizes;

#[derive(Parser)]
#[command(name = "gdr-send-lat", version, about = "SEND/RECV latency, ping-pong (server: no HOST; client: HOST; or --loopback)")]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    latency: LatencyArgs,
}

struct SendLatency {
    common: BenchConfig,
    latency: LatencyConfig,
    files: Option<LatencyFiles>,
    receives: PostedReceives,
}

impl Benchmark for SendLatency {
    const NAME: &'static str = "send_lat";
    const TITLE: &'static str = "Send Latency Test";
    type Report = LatencyFigures;
    type Row = LatencyRow;

    fn queue_sizes(&self) -> QueuePairSizes {
        QueuePairSizes { send_depth: self.common.tx_depth, recv_depth: PING_PONG_RECEIVES, max_inline: self.latency.inline_size }
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({})
    }

    fn header(&self) -> Vec<(String, String)> {
        vec![
            ("Sample".into(), "half a SEND/RECV ping-pong round trip".into()),
            ("Inline".into(), format!("up to {} bytes", self.latency.inline_size)),
        ]
    }

    fn prepare(&self, session: &mut Session, size: usize) -> gdrperf::Result<()> {
        refuse_staged_memory(session, "gdr-send-lat")?;
        if self.common.validate {
            let buffer = &mut session.local.buffers[0];
            match session.side.is_client() {
                true => buffer.fill_pattern(size, pattern_seed(size, 0))?,
                false => buffer.clear(size)?,
            }
        }
        prepare_ping_pong(session, PingPong::Send, size, &self.receives)
    }

    fn measure(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<LatencyFigures>> {
        let cpu_visible = session.local.buffers[0].host_bytes().is_some();
        let plan = LatencyPlan::new(&self.common, size, self.latency.inline(size, cpu_visible));
        if !session.side.is_client() {
            return ping_pong_responder(session, PingPong::Send, &plan).map(|_| None);
        }
        measure_size(self.files.as_ref(), size, |sink| ping_pong_initiator(session, PingPong::Send, &plan, sink)).map(Some)
    }

    fn check(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<String>> {
        if !self.common.validate {
            return Ok(None);
        }
        check_received(&mut session.local.buffers[..1], size, size)
    }

    fn row(&self, context: &RowContext, ours: Option<LatencyFigures>, _peer: Option<LatencyFigures>, validation: &str) -> Option<LatencyRow> {
        let settings = LatencySettings { arrival: PingPong::Send.arrival(), inline_size: self.latency.inline_size };
        ours.map(|figures| LatencyRow::new(context, settings, &figures, validation))
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    gdrperf::harness::exit(|| {
        let (common, latency, files) = latency_setup(&cli.common, &cli.latency, LatencyTest::Send, "send_lat")?;
        harness::run(&common.clone(), &SendLatency { common, latency, files, receives: PostedReceives })
    })
}
