//! Host<->GPU copy measurements: the ceiling the `cuda-staged` mode can reach.
//!
//! Every staged message crosses PCIe once per side, so staged RDMA can never be
//! faster than a plain pinned copy on the same GPU. `gdrperf copy-bw` reports
//! these figures and `gdrperf selftest` compares the staging pipeline with them.
//!
//! Bandwidth is timed on the host around `iterations` back-to-back copies and one
//! final synchronization (what a program sees, including launch overhead); each
//! latency sample is one copy plus its synchronization.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{sys, CudaStream};

use crate::driver::Gpu;
use crate::error::{CopyDirection, CudaError, DriverCode};
use crate::memory::{GpuBuffer, PinnedHostBuffer};
use crate::staging::{StageOperation, StagedBuffer, StagingConfig};

/// Which host memory a copy uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostMemory {
    /// `cuMemHostAlloc`: DMA straight to/from it.
    Pinned,
    /// Ordinary (`malloc`) memory: the driver bounces it through its own pinned buffer.
    Pageable,
}

impl HostMemory {
    pub fn label(&self) -> &'static str {
        match self {
            HostMemory::Pinned => "pinned",
            HostMemory::Pageable => "pageable",
        }
    }
}

/// Bytes moved in a measured time (its rate: gdrperf-stats' `Bandwidth::from_bytes_and_nanos`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    pub bytes: u64,
    pub elapsed: Duration,
}

/// Buffers and streams for measuring copies of up to `max_size` bytes on one GPU.
#[derive(Debug)]
pub struct CopyBench {
    gpu: Gpu,
    max_size: usize,
    /// Two of each, so the bidirectional test reads and writes different memory.
    device: [GpuBuffer; 2],
    pinned: [PinnedHostBuffer; 2],
    pageable: [Vec<u8>; 2],
    streams: [Arc<CudaStream>; 2],
}

impl CopyBench {
    pub fn new(gpu: &Gpu, max_size: usize) -> Result<Self, CudaError> {
        let stream = || {
            gpu.context()
                .new_stream()
                .map_err(|error| CudaError::StreamCreate { gpu: gpu.index(), code: error.into() })
        };
        // Pageable memory is touched now so page faults are not timed.
        Ok(CopyBench {
            gpu: gpu.clone(),
            max_size,
            device: [GpuBuffer::new(gpu, max_size)?, GpuBuffer::new(gpu, max_size)?],
            pinned: [PinnedHostBuffer::new(gpu, max_size)?, PinnedHostBuffer::new(gpu, max_size)?],
            pageable: [vec![1u8; max_size], vec![2u8; max_size]],
            streams: [stream()?, stream()?],
        })
    }

    pub fn max_size(&self) -> usize {
        self.max_size
    }

    fn check(&self, size: usize, iterations: usize) -> Result<(), CudaError> {
        if iterations == 0 {
            return Err(CudaError::ZeroCount { what: "iterations" });
        }
        if size == 0 || size > self.max_size {
            return Err(CudaError::RangeOutOfBounds {
                what: "copy benchmark buffer",
                range: 0..size,
                len: self.max_size,
            });
        }
        Ok(())
    }

    /// Queues one copy of `size` bytes using buffer pair `pair` on stream `pair`.
    fn enqueue(
        &mut self,
        memory: HostMemory,
        direction: CopyDirection,
        size: usize,
        pair: usize,
    ) -> Result<(), CudaError> {
        let host = match memory {
            HostMemory::Pinned => self.pinned[pair].as_mut_ptr(),
            HostMemory::Pageable => self.pageable[pair].as_mut_ptr(),
        };
        let device = self.device[pair].device_ptr();
        let stream = self.streams[pair].cu_stream();
        // SAFETY: both buffers hold at least `size` bytes (checked) and outlive the
        // copy: every public method synchronizes the streams before returning.
        let status = unsafe {
            match direction {
                CopyDirection::HostToDevice => {
                    sys::cuMemcpyHtoDAsync_v2(device, host as *const _, size, stream)
                }
                CopyDirection::DeviceToHost => {
                    sys::cuMemcpyDtoHAsync_v2(host as *mut _, device, size, stream)
                }
            }
        };
        status.result().map_err(|error| self.device[pair].copy_error(direction, size, error))
    }

    fn synchronize(&self, pair: usize) -> Result<(), CudaError> {
        self.streams[pair].synchronize().map_err(|error| CudaError::StreamSynchronize {
            gpu: self.gpu.index(),
            code: DriverCode::from(error),
        })
    }

    /// `iterations` back-to-back copies of `size` bytes in one direction (after one untimed warm-up copy).
    pub fn bandwidth(
        &mut self,
        memory: HostMemory,
        direction: CopyDirection,
        size: usize,
        iterations: usize,
    ) -> Result<Measurement, CudaError> {
        self.check(size, iterations)?;
        self.gpu.bind_to_thread()?;
        self.enqueue(memory, direction, size, 0)?;
        self.synchronize(0)?;
        let started = Instant::now();
        for _ in 0..iterations {
            self.enqueue(memory, direction, size, 0)?;
        }
        self.synchronize(0)?;
        Ok(Measurement { bytes: (size * iterations) as u64, elapsed: started.elapsed() })
    }

    /// `iterations` copies each way at once (H2D on one stream, D2H on another);
    /// the bytes counted are both directions together.
    pub fn bidirectional_bandwidth(
        &mut self,
        memory: HostMemory,
        size: usize,
        iterations: usize,
    ) -> Result<Measurement, CudaError> {
        self.check(size, iterations)?;
        self.gpu.bind_to_thread()?;
        self.enqueue(memory, CopyDirection::HostToDevice, size, 0)?;
        self.enqueue(memory, CopyDirection::DeviceToHost, size, 1)?;
        self.synchronize(0)?;
        self.synchronize(1)?;
        let started = Instant::now();
        for _ in 0..iterations {
            self.enqueue(memory, CopyDirection::HostToDevice, size, 0)?;
            self.enqueue(memory, CopyDirection::DeviceToHost, size, 1)?;
        }
        self.synchronize(0)?;
        self.synchronize(1)?;
        Ok(Measurement { bytes: (2 * size * iterations) as u64, elapsed: started.elapsed() })
    }

    /// `iterations` samples of one copy plus its synchronization (after one warm-up).
    pub fn latencies(
        &mut self,
        memory: HostMemory,
        direction: CopyDirection,
        size: usize,
        iterations: usize,
    ) -> Result<Vec<Duration>, CudaError> {
        self.check(size, iterations)?;
        self.gpu.bind_to_thread()?;
        self.enqueue(memory, direction, size, 0)?;
        self.synchronize(0)?;
        let mut samples = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let started = Instant::now();
            self.enqueue(memory, direction, size, 0)?;
            self.synchronize(0)?;
            samples.push(started.elapsed());
        }
        Ok(samples)
    }
}

/// How staged messages follow each other in [`staged_throughput`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageFlow {
    /// Each message is waited for before the next starts (a ping-pong's view).
    OneAtATime,
    /// Messages rotate over [`STREAMED_SLOTS`] slots and are all queued before
    /// any is waited for, as in a bandwidth test with several messages in flight.
    Streamed,
}

/// Slots a streamed measurement rotates over: a slot is reused only after the
/// three messages queued after it, which leaves the reverse copies time to finish.
pub const STREAMED_SLOTS: usize = 4;

/// Throughput of the staging pipeline without a NIC: `messages` operations of
/// `size` bytes each (GPU->host for `Out`, host->GPU for `In`, both for
/// `RoundTrip`). Bytes are counted once per message (the payload delivered), so
/// the result compares directly with a one-way pinned-copy bandwidth.
pub fn staged_throughput(
    gpu: &Gpu,
    size: usize,
    messages: usize,
    config: StagingConfig,
    operation: StageOperation,
    flow: MessageFlow,
) -> Result<Measurement, CudaError> {
    if messages == 0 {
        return Err(CudaError::ZeroCount { what: "messages" });
    }
    let mut staged = StagedBuffer::new(gpu, STREAMED_SLOTS * size, config)?;
    let slot = |message: usize| -> Range<usize> {
        let start = (message % STREAMED_SLOTS) * size;
        start..start + size
    };
    for message in 0..STREAMED_SLOTS {
        let warm_up = staged.begin(operation, slot(message))?;
        staged.wait(warm_up)?;
    }
    let started = Instant::now();
    match flow {
        MessageFlow::OneAtATime => {
            for message in 0..messages {
                let ticket = staged.begin(operation, slot(message))?;
                staged.wait(ticket)?;
            }
        }
        MessageFlow::Streamed => {
            let mut tickets = Vec::with_capacity(messages);
            for message in 0..messages {
                tickets.push(staged.begin(operation, slot(message))?);
            }
            for ticket in tickets {
                staged.wait(ticket)?;
            }
        }
    }
    Ok(Measurement { bytes: (size * messages) as u64, elapsed: started.elapsed() })
}
