//! What every copy engine of staged memory offers ([`Stager`]: copy out, copy in, is it done)
//! and what it keeps ([`CopyLog`], from which a side's copy time is taken). A module of its own
//! inside `staging` so that the engines (`staging`'s `mod.rs`) and the ring that drives them
//! (`ring`) both take it from a sibling, neither reaching back into the folder's root.

use std::ops::Range;
use std::time::{Duration, Instant};

use gdrperf_stats::{busy_nanos, CopyInterval};

use crate::error::Result;

/// An outstanding copy, as handed out by a [`Stager`]: copies are numbered in the order they
/// were started, so a stager finds one by arithmetic, not by a map lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CopyId(pub(crate) u64);

impl CopyId {
    /// No copy (a placeholder that matches none).
    pub const NONE: CopyId = CopyId(u64::MAX);
}

/// The finished copies of one stager since the copy time was last taken: each copy's
/// `[start, end)` on one clock, from when it was started to when it was seen finished.
#[derive(Debug)]
pub struct CopyLog {
    origin: Instant,
    finished: Vec<(CopyId, CopyInterval)>,
}

/// The one origin of every copy log in the process, so that the intervals of several stagers
/// (a side's QPs) lie on one time line and their union can be taken.
static COPY_ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

impl Default for CopyLog {
    fn default() -> Self {
        CopyLog { origin: *COPY_ORIGIN.get_or_init(Instant::now), finished: Vec::with_capacity(4096) }
    }
}

impl CopyLog {
    /// Records the copy `copy`, started at `started` and seen finished at `ended`.
    #[inline]
    pub fn record(&mut self, copy: CopyId, started: Instant, ended: Instant) {
        let nanos = |at: Instant| at.saturating_duration_since(self.origin).as_nanos() as u64;
        self.finished.push((copy, CopyInterval { start: nanos(started), end: nanos(ended) }));
    }

    /// Drops a finished copy from the log: a copy out started ahead for a message that was
    /// never sent (the end of a timed run) is no part of the copy time.
    pub fn forget(&mut self, copy: CopyId) {
        if let Some(position) = self.finished.iter().rposition(|(id, _)| *id == copy) {
            self.finished.swap_remove(position);
        }
    }

    /// Finished copies logged since the copy time was last taken.
    pub fn copies(&self) -> usize {
        self.finished.len()
    }

    /// The time at least one copy was running since the last call (the union of the copies'
    /// intervals), and a fresh start.
    pub fn take_busy(&mut self) -> Duration {
        let mut intervals = Vec::new();
        self.take_into(&mut intervals);
        Duration::from_nanos(busy_nanos(&intervals))
    }

    /// Moves the finished copies' intervals into `intervals` (every log shares one origin, so
    /// those of several logs can be merged: [`busy_nanos`] over all of them is their union).
    pub fn take_into(&mut self, intervals: &mut Vec<CopyInterval>) {
        intervals.extend(self.finished.drain(..).map(|(_, interval)| interval));
    }
}

/// A copy engine between the payload and the NIC-visible bounce buffer of the same length.
///
/// # Contract
///
/// `BenchBuffer::staged` registers `bounce()`'s memory with the NIC (an `unsafe` call) on
/// the strength of what every implementation must keep, though the trait itself is safe:
/// - `bounce()` names memory this stager owns, valid for reads and writes for its whole length,
///   and returns the same address and length for the stager's whole life;
/// - that memory is neither freed nor moved while the stager lives (the region is dropped with
///   the stager, never after it), and is not handed to anything else that frees it;
/// - the stager writes into it only by `begin_out` copies (and reads it by `begin_in` copies)
///   the caller started and has not yet seen finish, never behind the caller's back, since the
///   NIC may read or write it at any other time.
///
/// A stager that broke one of these would let the NIC (and through it a peer, within the
/// test's access rights) reach memory that is no longer the bounce buffer.
pub trait Stager: Send {
    /// The bounce buffer's address and length, for registration with the NIC (see the
    /// contract above).
    fn bounce(&self) -> (u64, usize);
    /// Starts copying `range` of the payload out to the bounce buffer (before a send).
    fn begin_out(&mut self, range: Range<usize>) -> Result<CopyId>;
    /// Starts copying `range` of the bounce buffer into the payload (after a receive).
    fn begin_in(&mut self, range: Range<usize>) -> Result<CopyId>;
    /// Whether the copy finished; a finished copy is forgotten after this returns true.
    fn poll(&mut self, copy: CopyId) -> Result<bool>;
    /// Waits for every outstanding copy.
    fn finish(&mut self) -> Result<()>;
    /// The finished copies' intervals (see [`CopyLog`]).
    fn log(&mut self) -> &mut CopyLog;
    /// Writes `bytes` into the payload at `offset` (untimed: validation).
    fn write_payload_at(&mut self, offset: usize, bytes: &[u8]) -> Result<()>;
    /// Reads `range` of the payload (untimed: validation).
    fn read_payload_range(&mut self, range: Range<usize>) -> Result<Vec<u8>>;
    /// Writes `bytes` into the payload at offset 0.
    fn write_payload(&mut self, bytes: &[u8]) -> Result<()> {
        self.write_payload_at(0, bytes)
    }
    /// Reads the first `len` payload bytes.
    fn read_payload(&mut self, len: usize) -> Result<Vec<u8>> {
        self.read_payload_range(0..len)
    }
    /// What the payload is, for headers ("GPU 0 NVIDIA H200 (0000:17:00.0)", "host").
    fn describe(&self) -> String;
    /// The GPU index, if the payload is on one.
    fn gpu_index(&self) -> Option<usize>;
}
