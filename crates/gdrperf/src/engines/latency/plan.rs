//! What every latency loop is given and gives back: the plan of one size, the interval log's
//! sink and the run it measured: the contract between the loops, the recorder and the files.
//! It names none of the run's options (the plan is made from them in `setup.rs`), so a loop can
//! be read without them.

use std::time::Duration;

use gdrperf_stats::hdrhistogram::Histogram;
use gdrperf_stats::LatencyRecorder;

use crate::error::{Error, Result};
use crate::options::config::{LatencySpan, StopRule};

/// How one size is measured.
#[derive(Debug, Clone, Copy)]
pub struct LatencyPlan {
    pub size: usize,
    pub stop: StopRule,
    /// Untimed round trips before the first sample.
    pub warmup: u64,
    /// Post the payload inline.
    pub inline: bool,
    /// How long to wait for any one arrival before calling the peer gone.
    pub stall_timeout: Duration,
    /// What a sample spans.
    pub span: LatencySpan,
}

/// Receives the cumulative histogram at interval boundaries (the `--hlog` interval log).
pub trait IntervalSink {
    /// Length of one interval.
    fn period(&self) -> Duration;
    /// The interval ending `end_nanos` after the first sample's start; `cumulative` holds every
    /// sample so far. Called between samples, never inside one.
    fn interval(&mut self, cumulative: &Histogram<u64>, end_nanos: u64) -> Result<()>;
}

/// What the initiator measured for one size.
#[derive(Debug)]
pub struct LatencyRun {
    pub recorder: LatencyRecorder,
    /// From the start of the first sample to the end of the last.
    pub elapsed_nanos: u64,
    /// What the samples span (the staged engines time post to arrival whatever was asked).
    pub span: LatencySpan,
    /// Samples refused instead of recorded: negative (the clock went backwards) or longer than
    /// the stall timeout (no real sample can be: the wait would have failed first).
    pub refused_samples: u64,
}

/// A responder's count at STOP: with `-n`, exactly the agreed warm-up and measured messages
/// (fewer means the client stopped early, more that the two sides disagree). Returns the count.
pub(super) fn expect_all_messages(plan: &LatencyPlan, sequence: u64) -> Result<u64> {
    if let StopRule::Iterations(iterations) = plan.stop {
        let expected = plan.warmup + iterations;
        if sequence != expected {
            return Err(Error::Protocol(crate::error::ProtocolError::StopCount {
                sent: sequence,
                agreed: expected,
            }));
        }
    }
    Ok(sequence)
}
