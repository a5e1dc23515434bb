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

struct WriteLatency {
    common: BenchConfig,
    latency: LatencyConfig,
    files: Option<LatencyFiles>,
}

impl WriteLatency {
    /// Bytes a data check covers: the last byte carries the poll markers.
    fn checked_len(&self, session: &Session, size: usize) -> usize {
        match PingPong::for_write_session(session, self.latency.write_with_imm) {
            PingPong::WritePollLastByte => size - 1,
            _ => size,
        }
    }
}

impl Benchmark for WriteLatency {
    const BENCH: Bench = bench::WRITE_LAT;
    type Report = LatencyFigures;
    type Row = LatencyRow;

    fn config(&self) -> &BenchConfig {
        &self.common
    }

    fn setup(&self) -> Setup {
        let arrival = if self.latency.write_with_imm {
            "WRITE_WITH_IMM completion"
        } else {
            "last-byte poll (host memory), else WRITE_WITH_IMM"
        };
        ping_pong_setup(
            &self.common,
            self.latency.inline_request(),
            PingPong::WriteWithImmediate,
            serde_json::json!({ "write_with_imm": self.latency.write_with_imm }),
            vec![
                ("Sample".into(), "half a WRITE ping-pong round trip".into()),
                ("Arrival".into(), arrival.into()),
            ],
        )
    }

    fn prepare(&self, session: &mut Session, size: usize) -> gdrperf::Result<()> {
        if self.common.validate {
            prepare_ping_pong_check(session, size)?;
        }
        let transport = PingPong::for_write_session(session, self.latency.write_with_imm);
        prepare_ping_pong(session, transport, size)
    }

    fn measure(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<LatencyFigures>> {
        let transport = PingPong::for_write_session(session, self.latency.write_with_imm);
        measure_ping_pong(session, transport, &self.common, &self.latency, self.files.as_ref(), size)
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
        let transport =
            PingPong::for_write(context.mem_local, context.mem_remote, self.latency.write_with_imm);
        ping_pong_row(context, transport.arrival(), ours, peer, validation)
    }
}

fn main() -> std::process::ExitCode {
    let cli: Cli = parse_bench(&WriteLatency::BENCH);
    exit(|| {
        let (common, latency, files) =
            latency_setup(&cli.common, &cli.latency, (&cli.write).into(), &WriteLatency::BENCH)?;
        run(&WriteLatency { common, latency, files })
    })
}
