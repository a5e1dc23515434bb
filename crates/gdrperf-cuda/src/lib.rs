//! The CUDA half of gdrperf: GPU memory for GPUDirect RDMA, its dma-buf export,
//! and the staged (bounce-buffer) pipeline, with libcuda loaded at run time so
//! gdrperf runs on machines without a GPU (`--mem host`).
//!
//! This crate knows nothing about verbs. It hands the verbs layer plain values:
//!
//! | `--mem` / `--gdr`     | register with the NIC                                        | from                           |
//! |-----------------------|--------------------------------------------------------------|--------------------------------|
//! | `cuda`, `peermem`     | `ibv_reg_mr(ptr, len)`                                       | [`GpuBuffer::device_ptr`], [`GpuBuffer::len`] |
//! | `cuda`, `dmabuf`      | `ibv_reg_dmabuf_mr(offset, len, iova, fd)`                   | [`GpuBuffer::export_dmabuf`] -> [`DmaBuf`] |
//! | `cuda-staged`         | `ibv_reg_mr(ptr, len)` on pinned host memory                 | [`StagedBuffer::host_ptr`], [`StagedBuffer::len`] |
//!
//! A typical run:
//!
//! ```no_run
//! use gdrperf_cuda::{Cuda, GpuSelection, StagedBuffer, StagingConfig};
//!
//! # fn main() -> Result<(), gdrperf_cuda::CudaError> {
//! let cuda = Cuda::load()?; // a clear error, not a panic, without libcuda
//! let selection = GpuSelection::parse("0")?; // parsed before any GPU is touched
//! for index in cuda.resolve(&selection)? {
//!     let gpu = cuda.open_gpu(index)?;
//!
//!     // GPUDirect: the NIC reads and writes GPU memory directly.
//!     let buffer = gpu.alloc(1 << 20)?;
//!     let dmabuf = buffer.export_dmabuf()?;
//!     println!("fd {} offset {} iova {:#x}", dmabuf.raw_fd(), dmabuf.offset(), dmabuf.iova());
//!
//!     // Staged: the NIC uses pinned host memory; copies move the payload.
//!     let mut staged = StagedBuffer::new(&gpu, 1 << 20, StagingConfig::default())?;
//!     staged.stage_out(0..4096)?; // before posting a send of bytes 0..4096
//!     staged.stage_in(0..4096)?; // after a receive into bytes 0..4096 completed
//! }
//! # Ok(())
//! # }
//! ```

mod bandwidth;
mod driver;
mod error;
pub mod gpu_watch;
mod memory;
mod order;
pub mod pattern;
mod selection;
mod staging;

pub use bandwidth::{staged_throughput, CopyBench, HostMemory, Measurement, MessageFlow, STREAMED_SLOTS};
pub use driver::{libcuda_present, Cuda, DriverVersion, Gpu, GpuDirectSupport, GpuInfo};
pub use error::{CopyDirection, CudaError, DriverCode};
pub use memory::{host_page_size, round_up, DmaBuf, DmaBufMapping, GpuBuffer, GpuCopies, PinnedHostBuffer};
pub use order::GpuOrder;
pub use selection::{GpuSelection, PciBusId, SelectionError};
pub use staging::{
    chunks, plan_chunks, Chunk, HazardTracker, OperationStats, StageOperation, StageTicket, StagedBuffer,
    StagingConfig, StagingStats,
};
