//! gdr-read-lat's engine: the client reads the server's buffer, one READ in flight at a time,
//! and times each from its post to its completion; the server's CPU takes no part. Every step
//! of a size is here, so the bench says only what it is and what it needs of each side.

use crate::error::Result;
use crate::harness::benchmark::Engine;
use crate::harness::session::Session;
use crate::options::config::BenchConfig;
use crate::options::latency::LatencyConfig;
use crate::output::latency_row::{LatencyFigures, LatencyFiles, LatencyRow, LatencySettings};
use crate::output::RowContext;

use super::{measure_size, prepare_read_source, read_latency, LatencyPlan};

/// A one-sided latency loop (RDMA READ) with its run's settings and per-size files.
pub struct OneSidedLatency {
    pub common: BenchConfig,
    pub latency: LatencyConfig,
    pub files: Option<LatencyFiles>,
}

impl Engine for OneSidedLatency {
    type Report = LatencyFigures;
    type Row = LatencyRow;

    fn config(&self) -> &BenchConfig {
        &self.common
    }

    /// The data check's pattern in the server's buffer (the client's cleared), and a staged
    /// server's payload copied out where the NIC reads it.
    fn prepare(&self, session: &mut Session, size: usize) -> Result<()> {
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

    /// The client samples (and counts its copies); the server is passive.
    fn measure(&self, session: &mut Session, size: usize) -> Result<Option<LatencyFigures>> {
        if !session.is_client() {
            return Ok(None);
        }
        let plan = LatencyPlan::new(&self.common, size, false);
        session.take_copy_seconds();
        let mut figures = measure_size(self.files.as_ref(), size, |sink| read_latency(session, &plan, sink))?;
        figures.copy_seconds = session.take_copy_seconds();
        Ok(Some(figures))
    }

    /// `--validate`: what the client's READs brought back is the server's pattern.
    fn check(&self, session: &mut Session, size: usize) -> Result<Option<String>> {
        if !self.common.validate || !session.is_client() {
            return Ok(None);
        }
        session.check_received(size, size)
    }

    /// The client's row; a sample ends at the READ's completion.
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
