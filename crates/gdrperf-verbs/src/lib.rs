//! Safe RAII wrappers over sideway for exactly what the benchmarks need.
//!
//! The lowest floor of gdrperf: it knows nothing of the benchmarks, the control channel or the
//! command line, so a program that only wants to move bytes over RDMA needs nothing else: this
//! crate's examples depend on it alone (`rdma_write`, the smallest complete RDMA WRITE between
//! two processes; `gpudirect_write`, the same into GPU memory, and `several_gpus`, every GPU at
//! once, add gdrperf-cuda). Every failing call returns a [`VerbsError`] that
//! names the call and, where one is known, the fix.
//!
//! The order of the modules is the order an RDMA program uses them in:
//! [`Device`] (open, pick port and GID) -> protection domain ([`Device::alloc_pd`]) ->
//! [`MemoryRegion`] (register buffers) -> [`CompletionQueue`] -> [`RcQueuePair`] (create,
//! exchange [`Endpoint`]s, connect, or connect through rdma_cm: `connection_manager`) -> post work requests and poll completions.

pub mod completion;
pub mod connection_manager;
pub mod device;
mod error;
pub mod memory;
pub mod protection_domain;
pub mod queue_pair;
pub mod rdma_cm;
pub mod rdma_cm_admission;
pub mod simulated;
pub mod work_request;

pub use completion::{CompletionQueue, WorkCompletion};
pub use device::{
    device_names, ensure_libibverbs, Device, Gid, GidChoice, GidKind, LinkLayer, Mtu, PortInfo,
};
pub use error::{Result, VerbsError};
pub use memory::{
    DmaBufRange, HostBuffer, LocalSlice, MemoryRegion, RelaxedOrdering, RemoteAccess, RemoteBuffer,
};
/// The protection domain `Device::alloc_pd` returns, for functions that take one.
pub use protection_domain::ProtectionDomain;
pub use queue_pair::{Endpoint, Inline, Operation, PathSettings, QueuePairSizes, RcQueuePair, SendRequest};
pub use rdma_cm_admission::{CmRefusal, CmSecret};
