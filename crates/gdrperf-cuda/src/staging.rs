//! The `cuda-staged` pipeline: the payload lives in GPU memory, the NIC only
//! touches a pinned host bounce buffer, and every message is copied GPU->host
//! before it is sent and host->GPU after it lands.
//!
//! A [`StagedBuffer`] pairs a [`GpuBuffer`] with a [`PinnedHostBuffer`] of the
//! same length: byte `i` of one is staged to byte `i` of the other, so a bench
//! registers the host side with the NIC and uses the same offsets it would use
//! for host memory. The bench calls [`StagedBuffer::stage_out`] before posting a
//! send/write of a range and [`StagedBuffer::stage_in`] after a receive/write
//! into a range completes (or the `begin_*` forms to overlap copies with other work).
//!
//! Copies are split into chunks (pipelining), and the two directions use two
//! CUDA streams. Why: copies on one stream run one after the other, so D2H and
//! H2D alternating on one stream serialize (measured on an H200: ~27.5 GB/s each
//! way), while a D2H stream and an H2D stream run concurrently on the GPU's copy
//! engines. A round trip (GPU->host->GPU) then sends chunk `k+1` to the host while
//! chunk `k` comes back. An earlier design spread chunks over streams that each
//! carried both directions; on the H200 it reached only ~37 GB/s for round trips,
//! because every chunk waited for the previous one's reverse copy with no slack.
//!
//! The streams must still not reorder copies that touch the same bytes (a D2H of
//! bytes the NIC has not yet finished handing to an H2D, say). So the buffer is
//! cut into a fixed grid of `chunk_size`-byte chunks, and for each grid chunk the
//! buffer remembers an event recorded after its last copy in each direction: a
//! copy of a chunk first makes its stream wait for the other direction's last
//! copy of that chunk, if it has not already. Copies of different chunks never
//! wait for each other, so independent messages flow back to back.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{sys, CudaEvent, CudaStream};

use crate::driver::Gpu;
use crate::error::{CopyDirection, CudaError, DriverCode};
use crate::memory::{check_range, GpuBuffer, PinnedHostBuffer};

/// One piece of a staged copy: a byte range inside grid chunk `grid_index`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub range: Range<usize>,
    pub grid_index: usize,
}

/// Splits `range` on the grid of `chunk_size`-byte chunks (chunk `k` covers bytes
/// `k*chunk_size..(k+1)*chunk_size`), so no piece crosses a grid line.
///
/// Pure, so the scheduling is tested without a GPU. A zero `chunk_size` is
/// treated as 1 (`StagingConfig` refuses it earlier).
pub fn plan_chunks(range: Range<usize>, chunk_size: usize) -> Vec<Chunk> {
    chunks(range, chunk_size).collect()
}

/// [`plan_chunks`] without the vector: what a copy iterates, allocating nothing.
pub fn chunks(range: Range<usize>, chunk_size: usize) -> impl Iterator<Item = Chunk> {
    let chunk_size = chunk_size.max(1);
    let mut start = range.start;
    std::iter::from_fn(move || {
        if start >= range.end {
            return None;
        }
        let grid_index = start / chunk_size;
        let end = ((grid_index + 1) * chunk_size).min(range.end);
        let chunk = Chunk { range: start..end, grid_index };
        start = end;
        Some(chunk)
    })
}

/// Remembers, per grid chunk, whether a copy in one direction has not yet been
/// waited for by the other direction's stream.
///
/// Pure bookkeeping (the events themselves live in [`StagedBuffer`]), so the
/// ordering rules are tested without a GPU. A D2H copy of a chunk reads its GPU
/// bytes and writes its host bytes; an H2D copy does the reverse; so any two
/// copies of one chunk in different directions conflict and must run in the
/// order they were queued. Copies in the same direction share a stream, which
/// already orders them.
#[derive(Debug, Clone, Default)]
pub struct HazardTracker {
    /// `[to_host, to_device]` per grid chunk: a copy was queued in that direction
    /// and the other direction's stream has not waited for it yet.
    unwaited: Vec<[bool; 2]>,
}

fn direction_slot(direction: CopyDirection) -> usize {
    match direction {
        CopyDirection::DeviceToHost => 0,
        CopyDirection::HostToDevice => 1,
    }
}

impl HazardTracker {
    pub fn new(grid_chunks: usize) -> Self {
        HazardTracker { unwaited: vec![[false; 2]; grid_chunks] }
    }

    /// Called before queuing a copy of `grid_index` in `direction`: whether its
    /// stream must first wait for the other direction's last copy of that chunk.
    /// Assumes the wait is then queued, so the same hazard is not reported twice.
    pub fn must_wait(&mut self, grid_index: usize, direction: CopyDirection) -> bool {
        let other = 1 - direction_slot(direction);
        std::mem::take(&mut self.unwaited[grid_index][other])
    }

    /// Called after queuing a copy (and recording its chunk event).
    pub fn copied(&mut self, grid_index: usize, direction: CopyDirection) {
        self.unwaited[grid_index][direction_slot(direction)] = true;
    }

    /// Called once both streams are idle: nothing is left to wait for.
    pub fn clear(&mut self) {
        self.unwaited.iter_mut().for_each(|flags| *flags = [false; 2]);
    }
}

/// How staged copies are cut up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StagingConfig {
    /// Bytes per copy, and the grid on which copies of the two directions are
    /// ordered. Larger chunks copy faster (fewer per-copy overheads: on the H200
    /// a lone 1 MiB copy reaches ~50 GB/s, 4 MiB ~54); smaller chunks let a round
    /// trip of one message overlap its two directions sooner. A stream of many
    /// messages overlaps them across messages anyway, so per-copy overhead is
    /// what counts there (results/h200/selftest.txt: 16 MiB chunks took a 64 MiB
    /// round trip from 0.89 to 0.90 of one-way pinned copies).
    pub chunk_size: usize,
}

impl StagingConfig {
    pub const DEFAULT_CHUNK_SIZE: usize = 16 << 20;

    /// The default chunk size, shrunk to `message_size` for smaller messages.
    ///
    /// A bench whose buffer is a ring of message-sized slots should use this: the
    /// chunk grid then matches the slots, so copies of different slots never wait
    /// for each other. (A chunk larger than the slots would put several slots in
    /// one grid chunk and serialise their copies: on the H200 an 8 MiB grid halved
    /// the round trip of 4 MiB messages.)
    pub fn for_message_size(message_size: usize) -> Self {
        StagingConfig { chunk_size: message_size.clamp(1, Self::DEFAULT_CHUNK_SIZE) }
    }

    pub fn new(chunk_size: usize) -> Result<Self, CudaError> {
        if chunk_size == 0 {
            return Err(CudaError::ZeroCount { what: "staging chunk size" });
        }
        Ok(StagingConfig { chunk_size })
    }
}

impl Default for StagingConfig {
    fn default() -> Self {
        StagingConfig { chunk_size: Self::DEFAULT_CHUNK_SIZE }
    }
}

/// Which copies a staging operation makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageOperation {
    /// GPU -> host, before the NIC sends the range.
    Out,
    /// Host -> GPU, after the NIC has written the range.
    In,
    /// GPU -> host -> GPU per chunk: both directions, as a message crossing a
    /// staged link would; used by selftest to measure the pipeline without a NIC.
    RoundTrip,
}

impl StageOperation {
    /// The copies this operation makes for each chunk, in order.
    fn directions(&self) -> &'static [CopyDirection] {
        match self {
            StageOperation::Out => &[CopyDirection::DeviceToHost],
            StageOperation::In => &[CopyDirection::HostToDevice],
            StageOperation::RoundTrip => &[CopyDirection::DeviceToHost, CopyDirection::HostToDevice],
        }
    }
}

/// Count, bytes and caller-observed time of one kind of staging operation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OperationStats {
    pub operations: u64,
    pub bytes: u64,
    /// Sum over operations of the time from `begin_*` to the end of `wait`. With
    /// several operations in flight at once this exceeds wall time.
    pub time: Duration,
}

impl OperationStats {
    fn record(&mut self, bytes: usize, time: Duration) {
        self.operations += 1;
        self.bytes += bytes as u64;
        self.time += time;
    }
}

/// What a [`StagedBuffer`] has copied so far, for a bench's "copy time" report.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StagingStats {
    pub out: OperationStats,
    pub into_gpu: OperationStats,
    pub round_trip: OperationStats,
}

/// Staging copies queued by `begin_*`; wait for it with [`StagedBuffer::wait`]
/// before the NIC touches (out) or the GPU uses (in) the range.
#[must_use = "wait on the ticket: the copies may still be running, and its time is counted only then"]
#[derive(Debug)]
pub struct StageTicket {
    operation: StageOperation,
    bytes: usize,
    started: Instant,
    /// One event per stream used (at most the two directions), recorded after that stream's
    /// last copy; taken from the buffer's pool and given back by `wait`.
    done: [Option<CudaEvent>; 2],
}

impl StageTicket {
    pub fn operation(&self) -> StageOperation {
        self.operation
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// When `begin_*` queued the copies.
    pub fn started(&self) -> Instant {
        self.started
    }
}

/// A GPU payload buffer mirrored by a pinned host bounce buffer of the same length.
#[derive(Debug)]
pub struct StagedBuffer {
    gpu: Gpu,
    device: GpuBuffer,
    host: PinnedHostBuffer,
    /// `[to_host, to_device]`: one stream per copy direction.
    streams: [Arc<CudaStream>; 2],
    /// `[to_host, to_device]` per grid chunk: an event recorded after the last
    /// copy of that chunk in that direction (created on first use).
    chunk_events: Vec<[Option<CudaEvent>; 2]>,
    hazards: HazardTracker,
    config: StagingConfig,
    stats: StagingStats,
    /// Events of finished tickets, reused: a copy creates no event once the pool is warm.
    spare_events: Vec<CudaEvent>,
}

impl StagedBuffer {
    /// Allocates `len` bytes on `gpu` and `len` pinned host bytes, and the two streams.
    pub fn new(gpu: &Gpu, len: usize, config: StagingConfig) -> Result<Self, CudaError> {
        let config = StagingConfig::new(config.chunk_size)?;
        let device = GpuBuffer::new(gpu, len)?;
        let host = PinnedHostBuffer::new(gpu, len)?;
        let stream = || {
            gpu.context()
                .new_stream()
                .map_err(|error| CudaError::StreamCreate { gpu: gpu.index(), code: error.into() })
        };
        let streams = [stream()?, stream()?];
        let grid_chunks = len.div_ceil(config.chunk_size);
        Ok(StagedBuffer {
            gpu: gpu.clone(),
            device,
            host,
            streams,
            chunk_events: (0..grid_chunks).map(|_| [None, None]).collect(),
            hazards: HazardTracker::new(grid_chunks),
            config,
            stats: StagingStats::default(),
            spare_events: Vec::with_capacity(64),
        })
    }

    pub fn len(&self) -> usize {
        self.device.len()
    }

    pub fn is_empty(&self) -> bool {
        self.device.is_empty()
    }

    pub fn config(&self) -> StagingConfig {
        self.config
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The host bounce buffer's address: what the NIC registers (`ibv_reg_mr(host_ptr(), len())`).
    pub fn host_ptr(&self) -> *mut u8 {
        self.host.as_ptr() as *mut u8
    }

    /// The GPU side, for its address or to read it; use [`StagedBuffer::device_mut`] to write.
    pub fn device(&self) -> &GpuBuffer {
        &self.device
    }

    /// The GPU side for writing, once every queued copy has finished.
    pub fn device_mut(&mut self) -> Result<&mut GpuBuffer, CudaError> {
        self.synchronize()?;
        Ok(&mut self.device)
    }

    /// The host side's bytes, once every queued copy has finished.
    pub fn host_bytes(&mut self) -> Result<&[u8], CudaError> {
        self.synchronize()?;
        Ok(self.host.as_slice())
    }

    /// The host side's bytes for writing, once every queued copy has finished.
    pub fn host_bytes_mut(&mut self) -> Result<&mut [u8], CudaError> {
        self.synchronize()?;
        Ok(self.host.as_mut_slice())
    }

    pub fn stats(&self) -> StagingStats {
        self.stats
    }

    pub fn reset_stats(&mut self) {
        self.stats = StagingStats::default();
    }

    /// Copies `range` GPU -> host and waits; returns the time it took.
    pub fn stage_out(&mut self, range: Range<usize>) -> Result<Duration, CudaError> {
        let ticket = self.begin(StageOperation::Out, range)?;
        self.wait(ticket)
    }

    /// Copies `range` host -> GPU and waits; returns the time it took.
    pub fn stage_in(&mut self, range: Range<usize>) -> Result<Duration, CudaError> {
        let ticket = self.begin(StageOperation::In, range)?;
        self.wait(ticket)
    }

    /// Copies `range` GPU -> host -> GPU, pipelined by chunk, and waits.
    pub fn round_trip(&mut self, range: Range<usize>) -> Result<Duration, CudaError> {
        let ticket = self.begin(StageOperation::RoundTrip, range)?;
        self.wait(ticket)
    }

    pub fn begin_stage_out(&mut self, range: Range<usize>) -> Result<StageTicket, CudaError> {
        self.begin(StageOperation::Out, range)
    }

    pub fn begin_stage_in(&mut self, range: Range<usize>) -> Result<StageTicket, CudaError> {
        self.begin(StageOperation::In, range)
    }

    pub fn begin_round_trip(&mut self, range: Range<usize>) -> Result<StageTicket, CudaError> {
        self.begin(StageOperation::RoundTrip, range)
    }

    /// Queues the copies of `operation` over `range` and returns without waiting.
    pub fn begin(
        &mut self,
        operation: StageOperation,
        range: Range<usize>,
    ) -> Result<StageTicket, CudaError> {
        check_range("staged buffer", &range, self.len())?;
        let started = Instant::now();
        self.gpu.bind_to_thread()?;
        for chunk in chunks(range.clone(), self.config.chunk_size) {
            for &direction in operation.directions() {
                self.queue_copy(direction, &chunk)?;
            }
        }
        let mut done = [None, None];
        if !range.is_empty() {
            for (slot, &direction) in operation.directions().iter().enumerate() {
                let event = match self.spare_events.pop() {
                    Some(event) => event,
                    None => self.gpu.context().new_event(None).map_err(|error| CudaError::EventCreate {
                        gpu: self.gpu.index(),
                        code: error.into(),
                    })?,
                };
                let stream = &self.streams[direction_slot(direction)];
                event.record(stream).map_err(|error| self.record_error(error))?;
                done[slot] = Some(event);
            }
        }
        Ok(StageTicket { operation, bytes: range.len(), started, done })
    }

    /// Queues one chunk's copy after the other direction's last copy of that chunk.
    fn queue_copy(&mut self, direction: CopyDirection, chunk: &Chunk) -> Result<(), CudaError> {
        let slot = direction_slot(direction);
        let stream = &self.streams[slot];
        if self.hazards.must_wait(chunk.grid_index, direction) {
            if let Some(event) = &self.chunk_events[chunk.grid_index][1 - slot] {
                stream
                    .wait(event)
                    .map_err(|error| CudaError::StreamWait { gpu: self.gpu.index(), code: error.into() })?;
            }
        }
        let device = self.device.device_ptr() + chunk.range.start as u64;
        let bytes = chunk.range.len();
        // SAFETY: the chunk lies inside both buffers (checked by begin); both stay
        // alive until the streams are synchronized (drop and every accessor synchronize).
        let status = unsafe {
            let host = self.host.as_ptr().add(chunk.range.start);
            match direction {
                CopyDirection::DeviceToHost => {
                    sys::cuMemcpyDtoHAsync_v2(host as *mut _, device, bytes, stream.cu_stream())
                }
                CopyDirection::HostToDevice => {
                    sys::cuMemcpyHtoDAsync_v2(device, host as *const _, bytes, stream.cu_stream())
                }
            }
        };
        status.result().map_err(|error| self.device.copy_error(direction, bytes, error))?;
        let event = match &mut self.chunk_events[chunk.grid_index][slot] {
            Some(event) => event,
            empty => empty.insert(
                self.gpu
                    .context()
                    .new_event(None)
                    .map_err(|error| CudaError::EventCreate { gpu: self.gpu.index(), code: error.into() })?,
            ),
        };
        event
            .record(stream)
            .map_err(|error| CudaError::EventRecord { gpu: self.gpu.index(), code: error.into() })?;
        self.hazards.copied(chunk.grid_index, direction);
        Ok(())
    }

    /// Whether the ticket's copies have finished, without blocking.
    pub fn is_complete(&self, ticket: &StageTicket) -> Result<bool, CudaError> {
        for event in ticket.done.iter().flatten() {
            if !event.try_is_complete().map_err(|error| self.event_error(error))? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Blocks until the ticket's copies have finished; returns and records the
    /// time since its `begin_*` call.
    pub fn wait(&mut self, mut ticket: StageTicket) -> Result<Duration, CudaError> {
        for event in ticket.done.iter().flatten() {
            event.synchronize().map_err(|error| self.event_error(error))?;
        }
        let time = ticket.started.elapsed();
        self.spare_events.extend(ticket.done.iter_mut().filter_map(Option::take));
        let stats = match ticket.operation {
            StageOperation::Out => &mut self.stats.out,
            StageOperation::In => &mut self.stats.into_gpu,
            StageOperation::RoundTrip => &mut self.stats.round_trip,
        };
        stats.record(ticket.bytes, time);
        Ok(time)
    }

    /// Blocks until every queued copy on this buffer's streams has finished.
    pub fn synchronize(&mut self) -> Result<(), CudaError> {
        for stream in &self.streams {
            stream.synchronize().map_err(|error| CudaError::StreamSynchronize {
                gpu: self.gpu.index(),
                code: error.into(),
            })?;
        }
        self.hazards.clear();
        Ok(())
    }

    fn record_error(&self, error: cudarc::driver::DriverError) -> CudaError {
        CudaError::EventRecord { gpu: self.gpu.index(), code: DriverCode::from(error) }
    }

    fn event_error(&self, error: cudarc::driver::DriverError) -> CudaError {
        CudaError::EventWait { gpu: self.gpu.index(), code: DriverCode::from(error) }
    }
}

impl Drop for StagedBuffer {
    fn drop(&mut self) {
        // Copies still queued must finish before the buffers they use are freed.
        let _ = self.synchronize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CopyDirection::{DeviceToHost as Out, HostToDevice as In};

    fn plan(range: Range<usize>, chunk_size: usize) -> Vec<(usize, usize, usize)> {
        plan_chunks(range, chunk_size)
            .into_iter()
            .map(|c| (c.range.start, c.range.end, c.grid_index))
            .collect()
    }

    #[test]
    fn small_message_is_one_chunk() {
        assert_eq!(plan(0..1, 1024), vec![(0, 1, 0)]);
        assert_eq!(plan(0..1024, 1024), vec![(0, 1024, 0)]);
    }

    #[test]
    fn large_message_is_cut_on_the_grid() {
        assert_eq!(
            plan(0..4096, 1024),
            vec![(0, 1024, 0), (1024, 2048, 1), (2048, 3072, 2), (3072, 4096, 3)]
        );
        assert_eq!(plan(0..3000, 1024), vec![(0, 1024, 0), (1024, 2048, 1), (2048, 3000, 2)]);
    }

    #[test]
    fn unaligned_ranges_follow_the_grid() {
        assert_eq!(plan(100..2100, 1024), vec![(100, 1024, 0), (1024, 2048, 1), (2048, 2100, 2)]);
        assert_eq!(plan(1500..1600, 1024), vec![(1500, 1600, 1)]);
    }

    #[test]
    fn chunks_cover_the_range_exactly_once() {
        for (start, end, chunk_size) in [(0, 1_000_003, 65_536), (7, 64 << 20, 1 << 20), (5, 6, 3)] {
            let chunks = plan_chunks(start..end, chunk_size);
            assert_eq!(chunks.first().unwrap().range.start, start);
            assert_eq!(chunks.last().unwrap().range.end, end);
            for pair in chunks.windows(2) {
                assert_eq!(pair[0].range.end, pair[1].range.start);
            }
            for chunk in &chunks {
                assert!(!chunk.range.is_empty() && chunk.range.len() <= chunk_size);
                assert_eq!(chunk.grid_index, chunk.range.start / chunk_size);
                assert_eq!(chunk.grid_index, (chunk.range.end - 1) / chunk_size, "crosses a grid line");
            }
        }
    }

    #[test]
    fn round_trip_waits_once_per_chunk_and_never_across_chunks() {
        let mut hazards = HazardTracker::new(4);
        for chunk in 0..4 {
            assert!(!hazards.must_wait(chunk, Out), "nothing before it");
            hazards.copied(chunk, Out);
            assert!(hazards.must_wait(chunk, In), "H2D must follow this chunk's D2H");
            hazards.copied(chunk, In);
        }
        // A second round trip over chunk 1: its D2H must follow the H2D above, once.
        assert!(hazards.must_wait(1, Out));
        assert!(!hazards.must_wait(1, Out));
        hazards.copied(1, Out);
        assert!(!hazards.must_wait(2, In), "chunk 2's D2H was already waited for");
    }

    #[test]
    fn same_direction_copies_never_wait() {
        let mut hazards = HazardTracker::new(2);
        for _ in 0..3 {
            assert!(!hazards.must_wait(0, Out));
            hazards.copied(0, Out);
        }
        assert!(hazards.must_wait(0, In));
        hazards.clear();
        hazards.copied(1, In);
        assert!(!hazards.must_wait(0, Out));
        assert!(hazards.must_wait(1, Out));
    }

    #[test]
    fn degenerate_parameters() {
        assert!(plan_chunks(5..5, 1024).is_empty());
        assert_eq!(plan(0..3, 0), vec![(0, 1, 0), (1, 2, 1), (2, 3, 2)]);
        assert!(StagingConfig::new(0).is_err());
        assert_eq!(StagingConfig::default(), StagingConfig::new(16 << 20).unwrap());
        assert_eq!(StagingConfig::for_message_size(4096).chunk_size, 4096);
        assert_eq!(StagingConfig::for_message_size(64 << 20).chunk_size, 16 << 20);
        assert_eq!(StagingConfig::for_message_size(0).chunk_size, 1);
    }
}
