//! gdr-read-lat's and gdr-atomic-lat's engine: the client reads the server's buffer (or runs an
//! 8-byte atomic on its counter), one request in flight at a time, and times each from its post
//! to its completion; the server's CPU takes no part. Every step of a size is here, so the bench
//! says only what it is and what it needs of each side. The loop is the host one (`direct.rs`)
//! or the staged one (`staged.rs`), chosen here from the session's memory once per size.

use crate::error::Result;
use crate::harness::benchmark::Engine;
use crate::harness::session::Session;
use crate::memory::check_failure::CheckFailure;
use crate::options::config::BenchConfig;
use crate::options::latency::{AtomicOperation, LatencyConfig};
use crate::output::latency_row::{LatencyFigures, LatencyFiles, LatencyRow, LatencySettings};
use crate::output::RowContext;
use crate::verbs::Operation;

use super::direct::direct_one_sided_latency;
use super::files::measure_size;
use super::plan::{IntervalSink, LatencyPlan, LatencyRun};
use super::staged::{stage_out_once, staged_one_sided_latency};
use crate::engines::atomic::{atomic_request, check_atomic_counter, count_atomics, LastFetch};

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

/// The client's side of read_lat: one RDMA READ of the server's buffer at a time (staged memory:
/// each READ copied in inside the sample).
pub fn read_latency(
    session: &mut Session,
    plan: &LatencyPlan,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<LatencyRun> {
    let remote = session.remote_buffer(0);
    let read = |_| Operation::Read { remote_address: remote.address, rkey: remote.rkey };
    one_sided_latency(session, plan, read, sink).map(|(run, _)| run)
}

/// The client's side of atomic_lat: one 8-byte atomic on the server's counter at a time, each
/// advancing it by 1 ([`atomic_request`]). Staged memory copies each fetched value in inside the
/// sample, as a staged READ does. Keeps the count of atomics for the size's data check.
pub fn atomic_latency(
    session: &mut Session,
    plan: &LatencyPlan,
    atomic: AtomicOperation,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<LatencyRun> {
    let request = atomic_request(atomic, session.remote_buffer(0));
    let (run, posted) = one_sided_latency(session, plan, request, sink)?;
    // Every fetched value lands at the start of the buffer (staged: copied in to it).
    count_atomics(session, vec![LastFetch { posted, at: 0 }]);
    Ok(run)
}

/// read_lat's and atomic_lat's loop: `request(n)` is the n-th request (from 0, warm-up
/// included). Returns the run and how many requests were posted.
fn one_sided_latency(
    session: &mut Session,
    plan: &LatencyPlan,
    request: impl FnMut(u64) -> Operation,
    sink: Option<&mut dyn IntervalSink>,
) -> Result<(LatencyRun, u64)> {
    match session.memory().is_staged() {
        false => direct_one_sided_latency(session, plan, request, sink),
        true => staged_one_sided_latency(session, plan, request, sink),
    }
}

/// The passive side of read_lat, before a size: its buffer holds what the peer's READs fetch.
/// Staged memory copies its payload out to the bounce buffer here, once per size (its CPU takes
/// no part in a READ, so there is no moment to copy each one); other memory needs nothing.
pub fn prepare_read_source(session: &mut Session, size: usize) -> Result<()> {
    stage_out_once(session, size)
}
