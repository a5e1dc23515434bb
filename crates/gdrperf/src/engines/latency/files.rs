//! One size of a latency engine measured with its files: the interval log open while the
//! samples are taken (when `--hlog` asked for one), then the size's histograms and raw samples.
//! `output` writes the files; the engine decides when, so writing never reaches into the
//! measuring loop.

use std::time::Duration;

use gdrperf_stats::hdrhistogram::Histogram;

use crate::error::Result;
use crate::output::latency_row::{IntervalLogFile, LatencyFigures, LatencyFiles};

use super::plan::{IntervalSink, LatencyRun};

/// Measures one size with its interval log open (when asked), then writes the size's files:
/// the one place the latency binaries tie the engine and the files together.
pub fn measure_size(
    files: Option<&LatencyFiles>,
    size: usize,
    measure: impl FnOnce(Option<&mut dyn IntervalSink>) -> Result<LatencyRun>,
) -> Result<LatencyFigures> {
    let mut log = match files {
        Some(files) => files.interval_log(size)?,
        None => None,
    };
    let run = measure(log.as_mut().map(|log| log as &mut dyn IntervalSink))?;
    if let Some(log) = log {
        log.finish()?;
    }
    if let Some(files) = files {
        files.write(size, &run.recorder)?;
    }
    LatencyFigures::new(size, &run.recorder, run.elapsed_nanos, run.span, run.refused_samples)
}

/// The `--hlog` file is fed at interval boundaries by the engine's samples.
impl IntervalSink for IntervalLogFile {
    fn period(&self) -> Duration {
        IntervalLogFile::period(self)
    }

    fn interval(&mut self, cumulative: &Histogram<u64>, end_nanos: u64) -> Result<()> {
        self.write_interval(cumulative, end_nanos)
    }
}
