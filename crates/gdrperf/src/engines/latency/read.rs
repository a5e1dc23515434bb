//! gdr-read-lat's and gdr-atomic-lat's engine: the client reads the server's buffer (or runs an
//! 8-byte atomic on its counter), one request in flight at a time, and times each from its post
//! to its completion; the server's CPU takes no part. Every step of a size is here, so the bench
//! says only what it is and what it needs of each side.

use crate::error::Result;
use crate::harness::benchmark::Engine;
use crate::harness::session::Session;
use crate::memory::check_failure::CheckFailure;
use crate::options::config::BenchConfig;
use crate::options::latency::{AtomicOperation, LatencyConfig};
use crate::output::latency_row::{LatencyFigures, LatencyFiles, LatencyRow, LatencySettings};
use crate::output::RowContext;

use super::atomic::check_atomic_counter;
use super::entry::{atomic_latency, prepare_read_source, read_latency};
use super::files::measure_size;
use super::plan::LatencyPlan;

/// A one-sided latency loop (RDMA READ, or an atomic) with its run's settings and per-size files.
pub struct OneSidedLatency {
    pub common: BenchConfig,
    pub latency: LatencyConfig,
    pub files: Option<LatencyFiles>,
    pub request: OneSidedRequest,
}

/// What the one-sided loop posts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OneSidedRequest {
    Read,
    Atomic(AtomicOperation),
}

impl Engine for OneSidedLatency {
    type Report = LatencyFigures;
    type Row = LatencyRow;

    fn config(&self) -> &BenchConfig {
        &self.common
    }

    /// The data check's pattern in the server's buffer (the client's cleared; for atomics both
    /// zeroed: the counter and the fetched value), and a staged server's payload copied out where
    /// the NIC reaches it.
    fn prepare(&self, session: &mut Session, size: usize) -> Result<()> {
        if self.common.validate {
            match session.is_client() || self.request != OneSidedRequest::Read {
                true => session.clear(size)?,
                false => session.fill_pattern(size)?,
            }
        }
        if !session.is_client() {
            prepare_read_source(session, size)?;
        }
        Ok(())
    }

    /// The client samples (and counts its copies); the server is passive.
    fn measure(&self, session: &mut Session, size: usize) -> Result<Option<LatencyFigures>> {
        if !session.is_client() {
            return Ok(None);
        }
        let plan = LatencyPlan::new(&self.common, size, false);
        session.take_copy_seconds();
        let mut figures = measure_size(self.files.as_ref(), size, |sink| match self.request {
            OneSidedRequest::Read => read_latency(session, &plan, sink),
            OneSidedRequest::Atomic(atomic) => atomic_latency(session, &plan, atomic, sink),
        })?;
        figures.copy_seconds = session.take_copy_seconds();
        Ok(Some(figures))
    }

    /// `--validate`: what the client's READs brought back is the server's pattern; the
    /// server's counter advanced by exactly 1 per atomic.
    fn check(&self, session: &mut Session, size: usize) -> Result<Option<CheckFailure>> {
        if !self.common.validate || !session.is_client() {
            return Ok(None);
        }
        match self.request {
            OneSidedRequest::Read => session.check_received(size, size),
            OneSidedRequest::Atomic(_) => check_atomic_counter(session),
        }
    }

    /// The client's row; a sample ends at the request's completion.
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
