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
//! Staged memory (`--mem cuda-staged`; on either side or both): the sender copies its payload
//! out to the bounce buffer before each SEND, the receiver copies it in after the receive
//! completes and before it answers; the copies are inside the timed round trip, and
//! `copy_time_s` counts them. Staged messages are never inline (the payload is not host memory).

use clap::Parser;
use gdrperf::harness::args_latency::{latency_setup, InlineArgs, LatencyArgs, LatencyConfig, LatencyTest};
use gdrperf::harness::buffers::copy_time;
use gdrperf::harness::latency::{
    check_ping_pong, ping_pong_buffer_len, ping_pong_initiator, ping_pong_responder, prepare_ping_pong,
    prepare_ping_pong_check, staged_ping_pong_initiator, staged_ping_pong_responder, LatencyPlan, PingPong,
    PING_PONG_RECEIVES,
};
use gdrperf::harness::{self, BenchConfig, Benchmark, CommonArgs, Session};
use gdrperf::output::latency_row::{measure_size, LatencyFigures, LatencyFiles, LatencyRow, LatencySettings};
use gdrperf::output::RowContext;
use gdrperf::verbs::QueuePairSizes;

#[derive(Parser)]
#[command(
    name = "gdr-send-lat",
    version,
    about = "SEND/RECV latency, ping-pong (server: no HOST; client: HOST; or --loopback)"
)]
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
    const NAME: &'static str = "send_lat";
    const TITLE: &'static str = "Send Latency Test";
    type Report = LatencyFigures;
    type Row = LatencyRow;

    fn buffer_len(&self, largest_message: usize) -> usize {
        ping_pong_buffer_len(largest_message)
    }

    fn queue_sizes(&self) -> QueuePairSizes {
        QueuePairSizes {
            send_depth: self.common.tx_depth,
            recv_depth: PING_PONG_RECEIVES,
            max_inline: self.latency.inline_size,
        }
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({})
    }

    fn header(&self) -> Vec<(String, String)> {
        let mut header = vec![
            ("Sample".into(), "half a SEND/RECV ping-pong round trip".into()),
            ("Inline".into(), format!("up to {} bytes", self.latency.inline_size)),
        ];
        if self.common.memory.kinds.iter().any(|kind| kind.is_staged()) {
            header.push((
                "Staging".into(),
                "copy out before each SEND, copy in after each receive, inside the round trip".into(),
            ));
        }
        header
    }

    fn prepare(&self, session: &mut Session, size: usize) -> gdrperf::Result<()> {
        if self.common.validate {
            prepare_ping_pong_check(session, size)?;
        }
        prepare_ping_pong(session, PingPong::Send, size)
    }

    fn measure(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<LatencyFigures>> {
        let cpu_visible = session.local.buffers[0].host_bytes().is_some();
        let plan = LatencyPlan::new(&self.common, size, self.latency.inline(size, cpu_visible));
        let staged = session.local.buffers[0].is_staged();
        let copying_before = copy_time(&mut session.local.buffers);
        if !session.side.is_client() {
            if !staged {
                return ping_pong_responder(session, PingPong::Send, &plan).map(|_| None);
            }
            // The server takes no samples, but its copies are inside the client's.
            staged_ping_pong_responder(session, PingPong::Send, &plan)?;
            let copy_seconds = (copy_time(&mut session.local.buffers) - copying_before).as_secs_f64();
            return Ok(Some(LatencyFigures::copies_only(size, copy_seconds)));
        }
        let mut figures = measure_size(self.files.as_ref(), size, |sink| match staged {
            false => ping_pong_initiator(session, PingPong::Send, &plan, sink),
            true => staged_ping_pong_initiator(session, PingPong::Send, &plan, sink),
        })?;
        figures.copy_seconds = (copy_time(&mut session.local.buffers) - copying_before).as_secs_f64();
        Ok(Some(figures))
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
        let settings =
            LatencySettings { arrival: PingPong::Send.arrival(), inline_size: self.latency.inline_size };
        let mut row = LatencyRow::new(context, settings, &ours?, validation);
        row.copy_time_s += peer.map_or(0.0, |peer| peer.copy_seconds);
        Some(row)
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    gdrperf::harness::exit(|| {
        let (common, latency, files) =
            latency_setup(&cli.common, &cli.latency, (&cli.inline).into(), LatencyTest::Send, "send_lat")?;
        harness::run(&common.clone(), &SendLatency { common, latency, files })
    })
}
