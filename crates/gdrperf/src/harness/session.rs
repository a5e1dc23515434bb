//! One side's connected resources: device, queue pairs, buffers, and the control channel; what
//! an engine works with, through the methods here.
//!
//! Setting up (`harness::connect`) follows the order every RDMA program follows (open, allocate,
//! register, create, exchange, connect), and the local half is done *before* waiting for the
//! peer, so that a wrong device or port fails at once on the side that has it, not as a timeout
//! on the other. It lives apart so that the engines, which need only this type, stand below it.

use std::sync::Arc;

use crate::verbs::ProtectionDomain;

use crate::error::Result;
use crate::exchange::{Control, Hello};
use crate::memory::buffers::BenchBuffer;
use crate::node::cpu_placement::CpuPlacement;
use crate::options::args::MemoryKind;
use crate::verbs::connection_manager::CmEnd;
use crate::verbs::{CompletionQueue, Device, GidChoice, Mtu, PortInfo, RcQueuePair, RemoteBuffer};

/// Which end of the connection a [`Session`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

/// Local resources, ready to connect.
pub struct LocalResources {
    pub device: Device,
    pub port: PortInfo,
    pub gid: Option<GidChoice>,
    pub protection_domain: Arc<ProtectionDomain>,
    pub completion_queue: CompletionQueue,
    pub queue_pairs: Vec<RcQueuePair>,
    pub buffers: Vec<BenchBuffer>,
    /// Where this side's measuring thread runs; the buffers were allocated after pinning.
    pub cpu: CpuPlacement,
    /// This side's path facts, read once here and sent to the peer in the hello.
    pub path: gdrperf_ceiling::EndFacts,
    /// `-R`: this side's rdma_cm end (a server listens from here on), then its connections.
    pub(crate) rdma_cm: Option<CmEnd>,
    /// RDMA READs each QP may have outstanding, within the device's bound.
    pub read_depth: u8,
}

/// A connected side: what an engine works with, through its methods, and whose parts its
/// loops borrow.
pub struct Session {
    pub(crate) side: Side,
    pub(crate) local: LocalResources,
    pub(crate) control: Control,
    pub(crate) peer: Hello,
    /// The path MTU both QPs were connected with.
    pub(crate) mtu: Mtu,
    /// What the bench's engine keeps for this connection across sizes (receives posted once).
    pub(crate) connection: Connection,
}

/// A session borrowed apart, for an engine: see [`Session::parts`].
pub(crate) struct SessionParts<'a> {
    pub(crate) queue_pairs: &'a mut Vec<RcQueuePair>,
    pub(crate) completion_queue: &'a mut CompletionQueue,
    pub(crate) buffers: &'a mut Vec<BenchBuffer>,
    pub(crate) control: &'a mut Control,
    pub(crate) connection: &'a mut Connection,
}

/// What an engine keeps for one connection across sizes (receives posted once, credits): the
/// engine's own type, which the session holds without knowing it (so the session depends on no
/// engine). It lives with the session, not in the benchmark value, because that value is shared
/// by both ends of a loopback run and by every lane of a concurrent one; and it goes with the QPs
/// it belongs to when the next memory placement replaces them. Receives cannot be taken back
/// once posted, hence all of it.
#[derive(Default)]
pub(crate) struct Connection(Option<Box<dyn std::any::Any + Send>>);

impl Connection {
    /// The engine's state of type `T`, made with its default on first use.
    pub(crate) fn state<T: Default + Send + 'static>(&mut self) -> &mut T {
        let state = self.0.get_or_insert_with(|| Box::new(T::default()));
        if !state.is::<T>() {
            // One bench drives one engine per connection; another type starts afresh.
            *state = Box::new(T::default());
        }
        match state.downcast_mut::<T>() {
            Some(state) => state,
            None => unreachable!("the state was made of this type just above"),
        }
    }
}

impl Session {
    /// The parts an engine drives at once (borrowed apart): QPs, their completion queue, the
    /// buffers, the control channel and the connection's state.
    pub(crate) fn parts(&mut self) -> SessionParts<'_> {
        let Session { local, control, connection, .. } = self;
        let LocalResources { queue_pairs, completion_queue, buffers, .. } = local;
        SessionParts { queue_pairs, completion_queue, buffers, control, connection }
    }

    /// Which end of the connection this is.
    pub fn side(&self) -> Side {
        self.side
    }

    /// This side is the client (it leads the sizes; the active side of a one-sided test).
    pub fn is_client(&self) -> bool {
        self.side.is_client()
    }

    /// The peer's buffer of QP `index`.
    pub fn remote_buffer(&self, index: usize) -> RemoteBuffer {
        self.peer.buffers[index]
    }

    /// This side's kind of memory.
    pub fn memory(&self) -> MemoryKind {
        self.local.buffers.first().map(BenchBuffer::kind).unwrap_or(MemoryKind::Host)
    }

    /// The peer's kind of memory, as its hello said.
    pub fn peer_memory(&self) -> MemoryKind {
        self.peer.side.memory
    }

    /// `--validate`, before a size: each QP's buffer holds the pattern of its `size`-byte
    /// messages in its first `size` bytes (the source of a checked transfer).
    pub fn fill_pattern(&mut self, size: usize) -> Result<()> {
        for (index, buffer) in self.local.buffers.iter_mut().enumerate() {
            buffer.fill_pattern(size, crate::memory::buffers::pattern_seed(size, index))?;
        }
        Ok(())
    }

    /// `--validate`, before a size: each QP's first `size` bytes zeroed (a destination), so that
    /// a message that never landed fails the check.
    pub fn clear(&mut self, size: usize) -> Result<()> {
        self.local.buffers.iter_mut().try_for_each(|buffer| buffer.clear(size))
    }

    /// Whether the CPU reaches this side's payload directly (host memory): inline sends and
    /// the last-byte poll need that.
    pub fn cpu_visible(&self) -> bool {
        self.local.buffers.first().is_some_and(|buffer| buffer.host_bytes().is_some())
    }

    /// Whether perftest knows this side's device for its inline defaults
    /// (`perftest_defaults::perftest_knows_inline`).
    pub fn perftest_knows_inline(&self) -> bool {
        let (vendor, part) = self.local.device.vendor_ids();
        crate::options::perftest_defaults::perftest_knows_inline(vendor, part)
    }

    /// `--validate`, after a size: the first `len` bytes of each QP's buffer hold the pattern of
    /// its `size`-byte messages (a staged ring: every message was checked as it was copied in).
    pub fn check_received(
        &mut self,
        size: usize,
        len: usize,
    ) -> Result<Option<crate::memory::check_failure::CheckFailure>> {
        crate::memory::buffers::check_received(&mut self.local.buffers, size, len)
    }

    /// The first failed per-message check of a staged receiver in this size (see
    /// `memory::staging::ring`), if any.
    pub fn take_message_failure(&mut self) -> Option<crate::memory::check_failure::CheckFailure> {
        crate::memory::buffers::take_message_failure(&mut self.local.buffers)
    }

    /// The copy time of this side's buffers since the last call, in seconds: the busy time of
    /// its copies (zero for memory the NIC reaches directly). See `gdrperf_stats::copy_time`.
    pub fn take_copy_seconds(&mut self) -> f64 {
        crate::memory::buffers::take_copy_time(&mut self.local.buffers).as_secs_f64()
    }
}

/// This machine's host name, for result rows (which node measured what).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}
