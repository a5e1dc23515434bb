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
}

struct ReadLatency {
    common: BenchConfig,
    latency: LatencyConfig,
    files: Option<LatencyFiles>,
}

impl Benchmark for ReadLatency {
    const BENCH: Bench = bench::READ_LAT;
    type Report = LatencyFigures;
    type Row = LatencyRow;

    fn config(&self) -> &BenchConfig {
        &self.common
    }

    fn setup(&self) -> Setup {
        Setup {
            queue_sizes: QueuePairSizes { send_depth: self.common.tx_depth, recv_depth: 1, max_inline: 0 },
            buffer_len: self.common.max_size(),
            // The client READs the server's buffer; nothing writes into either side's.
            remote_access: RemoteAccess::Read,
            inline: None,
            parameters: serde_json::json!({}),
            header: {
                let mut header =
                    vec![("Sample".into(), "post to completion of one READ (a whole round trip)".into())];
                header.extend(memory_header(&self.common, None));
                header
            },
            bandwidth: None,
        }
    }

    fn prepare(&self, session: &mut Session, size: usize) -> gdrperf::Result<()> {
        if self.common.validate {
            match session.is_client() {
                true => session.clear(size)?,
                false => session.fill_pattern(size)?,
            }
        }
        if !session.is_client() {
            prepare_read_source(session, size)?;
        }
        Ok(())
    }

    fn measure(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<LatencyFigures>> {
        if !session.is_client() {
            return Ok(None);
        }
        let plan = LatencyPlan::new(&self.common, size, false);
        session.take_copy_seconds();
        let mut figures = measure_size(self.files.as_ref(), size, |sink| read_latency(session, &plan, sink))?;
        figures.copy_seconds = session.take_copy_seconds();
        Ok(Some(figures))
    }

    fn check(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<String>> {
        if !self.common.validate || !session.is_client() {
            return Ok(None);
        }
        session.check_received(size, size)
    }

    fn row(
        &self,
        context: &RowContext,
        ours: Option<LatencyFigures>,
        _peer: Option<LatencyFigures>,
        validation: &str,
    ) -> Option<LatencyRow> {
        let settings = LatencySettings { arrival: "completion", inline_size: self.latency.inline_size };
        ours.map(|figures| LatencyRow::new(context, settings, &figures, validation))
    }
}

fn main() -> std::process::ExitCode {
    let cli: Cli = parse_bench(&ReadLatency::BENCH);
    exit(|| {
        let (common, latency, files) =
            latency_setup(&cli.common, &cli.latency, TestOptions::default(), &ReadLatency::BENCH)?;
        run(&ReadLatency { common, latency, files })
    })
}
