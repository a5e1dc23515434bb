//! gdr-read-lat: RDMA READ latency, perftest's ib_read_lat on gdrperf's harness.
//!
//! The client reads the server's buffer, one READ outstanding at a time; a sample is the time
//! from the post to the READ's completion, a whole round trip (not halved, as perftest reports
//! it). The server's CPU takes no part. With `--validate` the server fills its buffer with a
//! pattern and the client checks what its READs brought back.
//!
//! Staged memory (`--mem cuda-staged`): the reader's READ lands in its bounce buffer and is
//! copied in to the payload before the sample ends (`copy_time_s` counts those copies). A
//! staged server copies its payload out to its bounce buffer once per size, before the first
//! READ, and does nothing per READ: its CPU takes no part in one, so there is no moment to copy.

use clap::Parser;
use gdrperf::harness::args_latency::{latency_setup, LatencyArgs, LatencyConfig, LatencyTest, TestOptions};
use gdrperf::harness::buffers::{check_received, copy_time, pattern_seed};
use gdrperf::harness::latency::{read_latency, stage_out_once, staged_read_latency, LatencyPlan};
use gdrperf::harness::{self, BenchConfig, Benchmark, CommonArgs, Session};
use gdrperf::output::latency_row::{measure_size, LatencyFigures, LatencyFiles, LatencyRow, LatencySettings};
use gdrperf::output::RowContext;
use gdrperf::verbs::QueuePairSizes;

#[derive(Parser)]
#[command(
    name = "gdr-read-lat",
    version,
    about = "RDMA READ latency (server: no HOST; client: HOST; or --loopback)"
)]
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
    const NAME: &'static str = "read_lat";
    const TITLE: &'static str = "RDMA_Read Latency Test";
    type Report = LatencyFigures;
    type Row = LatencyRow;

    fn queue_sizes(&self) -> QueuePairSizes {
        QueuePairSizes { send_depth: self.common.tx_depth, recv_depth: 1, max_inline: 0 }
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({})
    }

    fn header(&self) -> Vec<(String, String)> {
        let mut header =
            vec![("Sample".into(), "post to completion of one READ (a whole round trip)".into())];
        if self.common.memory.kinds.iter().any(|kind| kind.is_staged()) {
            header.push(("Staging".into(), "the reader copies in after each READ, inside the sample; the server copies out once per size".into()));
        }
        header
    }

    fn prepare(&self, session: &mut Session, size: usize) -> gdrperf::Result<()> {
        if self.common.validate {
            let buffer = &mut session.local.buffers[0];
            match session.side.is_client() {
                true => buffer.clear(size)?,
                false => buffer.fill_pattern(size, pattern_seed(size, 0))?,
            }
        }
        if !session.side.is_client() {
            // The passive side's only copy: its READs take no part of its CPU.
            stage_out_once(session, size)?;
        }
        Ok(())
    }

    fn measure(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<LatencyFigures>> {
        if !session.side.is_client() {
            return Ok(None);
        }
        let plan = LatencyPlan::new(&self.common, size, false);
        let staged = session.local.buffers[0].is_staged();
        let copying_before = copy_time(&mut session.local.buffers);
        let mut figures = measure_size(self.files.as_ref(), size, |sink| match staged {
            false => read_latency(session, &plan, sink),
            true => staged_read_latency(session, &plan, sink),
        })?;
        figures.copy_seconds = (copy_time(&mut session.local.buffers) - copying_before).as_secs_f64();
        Ok(Some(figures))
    }

    fn check(&self, session: &mut Session, size: usize) -> gdrperf::Result<Option<String>> {
        if !self.common.validate || !session.side.is_client() {
            return Ok(None);
        }
        check_received(&mut session.local.buffers[..1], size, size)
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
    let cli = Cli::parse();
    gdrperf::harness::exit(|| {
        let (common, latency, files) =
            latency_setup(&cli.common, &cli.latency, TestOptions::default(), LatencyTest::Read, "read_lat")?;
        harness::run(&common.clone(), &ReadLatency { common, latency, files })
    })
}
