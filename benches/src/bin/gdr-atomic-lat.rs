//! gdr-atomic-lat: 8-byte RDMA atomic latency, perftest's ib_atomic_lat on gdrperf's harness.
//!
//! The client runs one atomic at a time on an 8-byte counter at the start of the server's
//! buffer (fetch-and-add of 1 by default, compare-and-swap with `-A CMP_AND_SWAP`); a sample is
//! the time from the post to the atomic's completion, a whole round trip, as ib_atomic_lat
//! reports it. The server's CPU takes no part. With `--validate` both sides zero the counter
//! and the fetched value before the size, and the client checks that the counter advanced by
//! exactly 1 per atomic.

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
    atomic: AtomicArgs,
}

struct AtomicLatency {
    common: BenchConfig,
    atomic: AtomicArgs,
    files: Option<LatencyFiles>,
}

impl Benchmark for AtomicLatency {
    const BENCH: Bench = bench::ATOMIC_LAT;
    type Report = LatencyFigures;
    type Row = LatencyRow;

    fn config(&self) -> &BenchConfig {
        &self.common
    }

    fn setup(&self) -> Setup {
        let name = self.atomic.atomic_type.name();
        Setup {
            queue_sizes: QueuePairSizes { send_depth: self.common.tx_depth, recv_depth: 1, max_inline: 0 },
            buffer_len: self.common.max_size(),
            // The client's atomics update the server's counter; its own buffer takes the fetched values.
            remote_access: RemoteAccess::Atomic,
            inline: None,
            parameters: serde_json::json!({ "atomic_type": name }),
            header: {
                let mut header = vec![
                    ("Atomic".into(), name.into()),
                    ("Sample".into(), "post to completion of one atomic (a whole round trip)".into()),
                ];
                header.extend(memory_header(&self.common, None));
                header
            },
            bandwidth: None,
        }
    }

    fn prepare(&self, session: &mut Session, size: usize) -> gdrperf::Result<()> {
        if self.common.validate {
            session.clear(size)?;
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
        let atomic = self.atomic.atomic_type;
        session.take_copy_seconds();
        let mut figures =
            measure_size(self.files.as_ref(), size, |sink| atomic_latency(session, &plan, atomic, sink))?;
        figures.copy_seconds = session.take_copy_seconds();
        Ok(Some(figures))
    }

    fn check(&self, session: &mut Session, _size: usize) -> gdrperf::Result<Option<String>> {
        if !self.common.validate || !session.is_client() {
            return Ok(None);
        }
        check_atomic_counter(session)
    }

    fn row(
        &self,
        context: &RowContext,
        ours: Option<LatencyFigures>,
        _peer: Option<LatencyFigures>,
        validation: &str,
    ) -> Option<LatencyRow> {
        let settings = LatencySettings { arrival: "completion", inline_size: 0 };
        ours.map(|figures| LatencyRow::new(context, settings, &figures, validation))
    }
}

fn main() -> std::process::ExitCode {
    let cli: Cli = parse_bench(&AtomicLatency::BENCH);
    exit(|| {
        let (common, _, files) =
            latency_setup(&cli.common, &cli.latency, TestOptions::default(), &AtomicLatency::BENCH)?;
        run(&AtomicLatency { common, atomic: cli.atomic, files })
    })
}
