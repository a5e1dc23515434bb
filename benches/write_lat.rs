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
//! Staged memory (`--mem cuda-staged`; on either side or both) always takes WRITE_WITH_IMM: the
//! NIC writes the bounce buffer, so there is no payload byte to poll. The side that writes
//! copies its payload out to the bounce buffer first, the side written to copies it in before
//! answering, and those copies are inside the timed round trip; `copy_time_s` counts them.

use clap::Parser;
use gdrperf::harness::args_latency::{
    latency_setup, LatencyArgs, LatencyConfig, LatencyTest, WriteLatencyArgs,
};
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
    name = "gdr-write-lat",
    version,
    about = "RDMA WRITE latency, ping-pong (server: no HOST; client: HOST; or --loopback)"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    latency: LatencyArgs,
    #[command(flatten)]
    write: WriteLatencyArgs,
}

struct WriteLatency {
    common: BenchConfig,
    latency: LatencyConfig,
    files: Option<LatencyFiles>,
}

impl WriteLatency {
    /// Polling needs CPU-visible memory on both sides; both sides decide alike from the same
    /// two facts, so they always agree.
    fn transport(&self, session: &Session) -> PingPong {
        let local = &session.local.buffers[0];
        let local_host = local.kind() == "host" && local.host_bytes().is_some();
        self.transport_for(local_host, session.peer.side.memory == "host")
    }

    fn transport_for(&self, local_host: bool, peer_host: bool) -> PingPong {
        if local_host && peer_host && !self.latency.write_with_imm {
            PingPong::WritePollLastByte
        } else {
            PingPong::WriteWithImmediate
        }
    }

    /// Bytes a data check covers: the last byte carries the poll markers.
    fn checked_len(&self, session: &Session, size: usize) -> usize {
        match self.transport(session) {
            PingPong::WritePollLastByte => size - 1,
            _ => size,
        }
    }
}

impl Benchmark for WriteLatency {
    const NAME: &'static str = "write_lat";
    const TITLE: &'static str = "RDMA_Write Latency Test";
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
        serde_json::json!({ "write_with_imm": self.latency.write_with_imm })
    }

    fn header(&self) -> Vec<(String, String)> {
        let mut header = vec![
            ("Sample".into(), "half a WRITE ping-pong round trip".into()),
            (
                "Arrival".into(),
                if self.latency.write_with_imm {
                    "WRITE_WITH_IMM completion"
                } else {
                    "last-byte poll (host memory), else WRITE_WITH_IMM"
                }
                .into(),
            ),
            ("Inline".into(), format!("up to {} bytes", self.latency.inline_size)),
        ];
        if self.common.memory.kinds.iter().any(|kind| kind.is_staged()) {
            header.push((
                "Staging".into(),
                "copy out before each write, copy in after each arrival, inside the round trip".into(),
            ));
        }
        header
    }

    fn prepare(&self, session: &mut Session, size: usize) -> gdrperf::Result<()> {
        if self.common.validate {
            prepare_ping_pong_check(session, size)?;
        }
        let transport = self.transport(session);
        prepare_ping_pong(session, transport, size)
    }

    fn measure(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<LatencyFigures>> {
        let transport = self.transport(session);
        let cpu_visible = session.local.buffers[0].host_bytes().is_some();
        let plan = LatencyPlan::new(&self.common, size, self.latency.inline(size, cpu_visible));
        let staged = session.local.buffers[0].is_staged();
        let copying_before = copy_time(&mut session.local.buffers);
        if !session.side.is_client() {
            if !staged {
                return ping_pong_responder(session, transport, &plan).map(|_| None);
            }
            // The server takes no samples, but its copies are inside the client's.
            staged_ping_pong_responder(session, transport, &plan)?;
            let copy_seconds = (copy_time(&mut session.local.buffers) - copying_before).as_secs_f64();
            return Ok(Some(LatencyFigures::copies_only(size, copy_seconds)));
        }
        let mut figures = measure_size(self.files.as_ref(), size, |sink| match staged {
            false => ping_pong_initiator(session, transport, &plan, sink),
            true => staged_ping_pong_initiator(session, transport, &plan, sink),
        })?;
        figures.copy_seconds = (copy_time(&mut session.local.buffers) - copying_before).as_secs_f64();
        Ok(Some(figures))
    }

    fn check(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<String>> {
        if !self.common.validate {
            return Ok(None);
        }
        let len = self.checked_len(session, size);
        check_ping_pong(session, size, len)
    }

    fn row(
        &self,
        context: &RowContext,
        ours: Option<LatencyFigures>,
        peer: Option<LatencyFigures>,
        validation: &str,
    ) -> Option<LatencyRow> {
        // The transport follows from the memory of both sides, which the context names.
        let transport = self.transport_for(context.mem_local == "host", context.mem_remote == "host");
        let settings =
            LatencySettings { arrival: transport.arrival(), inline_size: self.latency.inline_size };
        let mut row = LatencyRow::new(context, settings, &ours?, validation);
        row.copy_time_s += peer.map_or(0.0, |peer| peer.copy_seconds);
        Some(row)
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    gdrperf::harness::exit(|| {
        let (common, latency, files) =
            latency_setup(&cli.common, &cli.latency, (&cli.write).into(), LatencyTest::Write, "write_lat")?;
        harness::run(&common.clone(), &WriteLatency { common, latency, files })
    })
}
