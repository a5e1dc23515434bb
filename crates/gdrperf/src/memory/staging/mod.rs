//! Staged copies: the payload lives where the NIC cannot (or should not) reach it, and every
//! message crosses a bounce buffer that the NIC does reach.
//!
//! This is the baseline GPUDirect is measured against: without it, a GPU-to-GPU transfer is
//! GPU -> pinned host copy, NIC to NIC, pinned host -> GPU copy. The benches only see the
//! [`Stager`] trait: "copy this range out to the bounce buffer", "copy it back in", "is that
//! copy done". The CUDA implementation pipelines each copy in chunks (gdrperf-cuda's
//! `StagedBuffer`); the host implementation (`--mem host-staged`, hidden) does the same with
//! `memcpy` between two host buffers, so that the staged code path of the benches runs, and is
//! tested, on machines without a GPU.
//!
//! Every stager keeps a [`CopyLog`]: the `[start, end)` of each finished copy, from which the
//! side's copy time is the busy time (`gdrperf_stats::busy_nanos`, the union of the intervals).
//!
//! Staging is gathered here: the trait, its log and its two copy engines, the wait for one
//! copy, and (`ring`) the bounce ring with the hooks a streaming engine calls around each
//! message and its copy-ahead rule. Two parts live elsewhere on purpose: the staged buffer a
//! stager sits in is one kind of `memory::buffers`'s benchmark buffer (beside host and GPU
//! memory, which every engine allocates and registers the same way), and the loops that wait
//! on staged copies belong to their engines (`engines::staged_receive`, `engines::latency`'s
//! `staged.rs`: they share those engines' private wire and plan), which only call what is
//! here. `memory::queue_memory` names the ring's `Staged` beside `Direct`, the trait's other
//! kind, so an engine takes both from one module.

use std::collections::VecDeque;
use std::ops::Range;
use std::time::{Duration, Instant};

use gdrperf_cuda::{Gpu, StageTicket, StagedBuffer, StagingConfig};

use crate::error::Result;
use crate::memory::spin::spin_until;
use crate::verbs::HostBuffer;

pub(crate) mod ring;
mod stager;

pub use stager::{CopyId, CopyLog, Stager};

/// Spins until `copy` has finished. The clock is read only every few thousand turns, so a quick
/// copy costs none, and a copy that never ends (a GPU gone bad) is reported as a stall after
/// `timeout` instead of hanging the run. `what` says which copy ("copying 4096 bytes in").
#[inline]
pub fn wait_copy(
    stager: &mut dyn Stager,
    copy: CopyId,
    timeout: Duration,
    what: &dyn Fn() -> String,
) -> Result<()> {
    spin_until(timeout, what, || stager.poll(copy))
}

/// The most bytes [`measure_copy_rates`] copies each way.
pub const COPY_RATE_BYTES: usize = 16 << 20;

/// Times the copy engine once, at set-up, for the rows' ceiling (`gdrperf_ceiling::CopyRates`):
/// one untimed copy out (first touch, CUDA's lazy start), then one copy out and one in of the
/// staging buffer's first `COPY_RATE_BYTES` (at most), each as the bench's own copies run.
/// The copies are dropped from the copy log: they are no part of any size's copy time.
pub fn measure_copy_rates(stager: &mut dyn Stager, timeout: Duration) -> Result<gdrperf_ceiling::CopyRates> {
    let bytes = stager.bounce().1.min(COPY_RATE_BYTES);
    let what = || format!("timing a {bytes}-byte staged copy at set-up");
    let time = |stager: &mut dyn Stager, out: bool| -> Result<f64> {
        let started = Instant::now();
        let copy = if out { stager.begin_out(0..bytes)? } else { stager.begin_in(0..bytes)? };
        wait_copy(stager, copy, timeout, &what)?;
        Ok(started.elapsed().as_secs_f64())
    };
    time(stager, true)?;
    let (out_seconds, in_seconds) = (time(stager, true)?, time(stager, false)?);
    stager.log().take_busy();
    let gbps = |seconds: f64| bytes as f64 * 8.0 / seconds.max(1e-9) / 1e9;
    Ok(gdrperf_ceiling::CopyRates {
        out_gbps: gbps(out_seconds),
        in_gbps: gbps(in_seconds),
        bytes: bytes as u64,
    })
}

/// GPU payload, pinned host bounce buffer, copies on CUDA streams.
pub struct CudaStager {
    buffer: StagedBuffer,
    /// Copies started and not yet retired, in the order they were started: the front is copy
    /// number `first`. Preallocated, so starting a copy allocates nothing once warm.
    outstanding: VecDeque<Option<StageTicket>>,
    first: u64,
    log: CopyLog,
}

impl CudaStager {
    pub fn new(gpu: &Gpu, len: usize, message_size: usize) -> Result<CudaStager> {
        let buffer = StagedBuffer::new(gpu, len, StagingConfig::for_message_size(message_size))?;
        Ok(CudaStager {
            buffer,
            outstanding: VecDeque::with_capacity(1024),
            first: 0,
            log: CopyLog::default(),
        })
    }

    fn remember(&mut self, ticket: StageTicket) -> CopyId {
        self.outstanding.push_back(Some(ticket));
        CopyId(self.first + self.outstanding.len() as u64 - 1)
    }

    /// Waits for `ticket` and logs its interval.
    fn retire(&mut self, copy: CopyId, ticket: StageTicket) -> Result<()> {
        let started = ticket.started();
        self.buffer.wait(ticket)?;
        self.log.record(copy, started, Instant::now());
        Ok(())
    }

    /// Drops retired copies from the front.
    fn trim(&mut self) {
        while matches!(self.outstanding.front(), Some(None)) {
            self.outstanding.pop_front();
            self.first += 1;
        }
    }
}

impl Stager for CudaStager {
    fn bounce(&self) -> (u64, usize) {
        (self.buffer.host_ptr() as u64, self.buffer.len())
    }

    fn begin_out(&mut self, range: Range<usize>) -> Result<CopyId> {
        let ticket = self.buffer.begin_stage_out(range)?;
        Ok(self.remember(ticket))
    }

    fn begin_in(&mut self, range: Range<usize>) -> Result<CopyId> {
        let ticket = self.buffer.begin_stage_in(range)?;
        Ok(self.remember(ticket))
    }

    fn poll(&mut self, copy: CopyId) -> Result<bool> {
        let Some(index) = copy.0.checked_sub(self.first) else { return Ok(true) };
        let Some(Some(ticket)) = self.outstanding.get(index as usize) else { return Ok(true) };
        if !self.buffer.is_complete(ticket)? {
            return Ok(false);
        }
        let ticket = self.outstanding[index as usize].take().expect("present: looked at above");
        self.retire(copy, ticket)?;
        self.trim();
        Ok(true)
    }

    fn finish(&mut self) -> Result<()> {
        for index in 0..self.outstanding.len() {
            if let Some(ticket) = self.outstanding[index].take() {
                self.retire(CopyId(self.first + index as u64), ticket)?;
            }
        }
        self.trim();
        Ok(())
    }

    fn log(&mut self) -> &mut CopyLog {
        &mut self.log
    }

    fn write_payload_at(&mut self, offset: usize, bytes: &[u8]) -> Result<()> {
        self.finish()?;
        Ok(self.buffer.device_mut()?.write(offset, bytes)?)
    }

    fn read_payload_range(&mut self, range: Range<usize>) -> Result<Vec<u8>> {
        self.finish()?;
        Ok(self.buffer.device().read(range)?)
    }

    fn describe(&self) -> String {
        let info = self.buffer.gpu().info();
        format!("GPU {} {} ({}, staged through pinned host memory)", info.index, info.name, info.bus_id)
    }

    fn gpu_index(&self) -> Option<usize> {
        Some(self.buffer.gpu().index())
    }
}

/// Host payload, host bounce buffer, `memcpy`: the staged code path without a GPU.
pub struct HostStager {
    payload: HostBuffer,
    bounce: HostBuffer,
    next: u64,
    log: CopyLog,
}

impl HostStager {
    pub fn new(len: usize) -> Result<HostStager> {
        Ok(HostStager {
            payload: HostBuffer::new(len)?,
            bounce: HostBuffer::new(len)?,
            next: 0,
            log: CopyLog::default(),
        })
    }

    /// Copies synchronously: a host copy has nothing to overlap with on a busy-polling thread.
    fn copy(&mut self, range: Range<usize>, out: bool) -> Result<CopyId> {
        let started = Instant::now();
        if out {
            self.bounce.as_mut_slice()[range.clone()].copy_from_slice(&self.payload.as_slice()[range]);
        } else {
            self.payload.as_mut_slice()[range.clone()].copy_from_slice(&self.bounce.as_slice()[range]);
        }
        let copy = CopyId(self.next);
        self.next += 1;
        self.log.record(copy, started, Instant::now());
        Ok(copy)
    }
}

impl Stager for HostStager {
    fn bounce(&self) -> (u64, usize) {
        (self.bounce.address(), self.bounce.len())
    }

    fn begin_out(&mut self, range: Range<usize>) -> Result<CopyId> {
        self.copy(range, true)
    }

    fn begin_in(&mut self, range: Range<usize>) -> Result<CopyId> {
        self.copy(range, false)
    }

    fn poll(&mut self, _copy: CopyId) -> Result<bool> {
        Ok(true)
    }

    fn finish(&mut self) -> Result<()> {
        Ok(())
    }

    fn log(&mut self) -> &mut CopyLog {
        &mut self.log
    }

    fn write_payload_at(&mut self, offset: usize, bytes: &[u8]) -> Result<()> {
        self.payload.as_mut_slice()[offset..offset + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    fn read_payload_range(&mut self, range: Range<usize>) -> Result<Vec<u8>> {
        Ok(self.payload.as_slice()[range].to_vec())
    }

    fn describe(&self) -> String {
        "host (staged through a second host buffer: a test of the staged path)".to_string()
    }

    fn gpu_index(&self) -> Option<usize> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gdrperf_stats::busy_nanos;

    /// The set-up timing copies the staging buffer each way and leaves no copy in the log.
    #[test]
    fn copy_rates_are_timed_once_and_kept_out_of_the_copy_time() {
        let mut stager = HostStager::new(1 << 20).unwrap();
        let rates = measure_copy_rates(&mut stager, Duration::from_secs(10)).unwrap();
        assert_eq!(rates.bytes, 1 << 20);
        assert!(rates.out_gbps > 0.0 && rates.in_gbps > 0.0, "{rates:?}");
        assert_eq!(stager.log().copies(), 0);
    }

    #[test]
    fn logs_share_one_time_line_so_a_sides_copies_count_once() {
        // Two QPs' stagers copying over 0-10 ms and 2-15 ms: 15 ms of wall time, not 23 (and
        // exactly 15 only when both logs measure from the same origin).
        let mut first = CopyLog::default();
        std::thread::sleep(Duration::from_millis(1));
        let mut second = CopyLog::default();
        let start = Instant::now();
        first.record(CopyId(0), start, start + Duration::from_millis(10));
        second.record(CopyId(0), start + Duration::from_millis(2), start + Duration::from_millis(15));
        let mut intervals = Vec::new();
        first.take_into(&mut intervals);
        second.take_into(&mut intervals);
        assert_eq!(busy_nanos(&intervals), 15_000_000);
        assert_eq!((first.copies(), second.copies()), (0, 0), "taken once");
    }

    #[test]
    fn host_stager_moves_ranges_between_payload_and_bounce() {
        let mut stager = HostStager::new(8192).unwrap();
        let pattern: Vec<u8> = (0..4096u32).map(|index| (index % 251) as u8).collect();
        stager.write_payload(&pattern).unwrap();
        let copy = stager.begin_out(0..4096).unwrap();
        assert!(stager.poll(copy).unwrap());
        let (address, len) = stager.bounce();
        assert_eq!(len, 8192);
        // SAFETY: the bounce buffer is alive and 8192 bytes long.
        let bounce = unsafe { std::slice::from_raw_parts(address as *const u8, 4096) };
        assert_eq!(bounce, &pattern[..]);
        stager.write_payload(&vec![0u8; 4096]).unwrap();
        stager.begin_in(0..4096).unwrap();
        assert_eq!(stager.read_payload(4096).unwrap(), pattern);
    }
}
