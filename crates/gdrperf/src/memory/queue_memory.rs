//! The one memory abstraction under the streaming engines: what happens to a message's bytes
//! before it is posted and after it has landed.
//!
//! An engine is written once, generic over [`QueueMemory`], and run with one of two kinds:
//! - [`Direct`]: host or GPU memory the NIC reaches itself. Every hook does nothing and every
//!   message uses the same bytes; with static dispatch the compiler removes the hooks, so the
//!   host and GPUDirect hot loops are what they were before this trait existed.
//! - [`Staged`]: a payload the NIC does not reach, copied through a registered bounce ring of
//!   slots. It is staging's, defined with the rest of it (`memory::staging::ring`, where its
//!   copy-ahead rule is told), and named here too, so that an engine takes both kinds of memory
//!   from the trait's module.
//!
//! Since a staged ring's slots are freed by send completions, a sender signals at least once
//! per half ring ([`signal_every`]).

use std::time::Duration;

use crate::error::Result;
use crate::memory::buffers::BenchBuffer;
pub use crate::memory::staging::ring::{Ring, Staged, Stamps};
use crate::verbs::LocalSlice;

/// What an engine asks of one QP's memory, message by message. Messages are numbered from 0
/// in the order they are posted (sender) or land (receiver), per QP and size.
pub trait QueueMemory {
    /// Whether this memory copies at all; `false` lets an engine skip its staging bookkeeping.
    const COPIES: bool;

    /// The local bytes message `message` goes out from (or lands in).
    fn local(&self, message: u64) -> LocalSlice;

    /// How often a sender must signal a completion for copies to keep running ahead (`u64::MAX`
    /// where nothing is copied): a staged ring's slots are freed only by send completions, so
    /// without one a sender would wait for a completion that never comes. See [`signal_every`].
    fn window(&self) -> u64;

    /// Before posting: starts the copies out that the rule allows (see the module docs) and
    /// returns how many messages from `posted` on are copied and ready. `completed`: messages
    /// whose send has completed (their slots are free again); `end`: one past the last message
    /// the phase will send (`u64::MAX` while a timed phase runs).
    fn ready_to_post(&mut self, posted: u64, completed: u64, end: u64) -> Result<u64>;

    /// A reader's room (RDMA READ into a staged ring): how many messages from `posted` on have a
    /// free slot to land in, a slot being free once the message that last landed in it is copied
    /// in. `u64::MAX` where nothing is copied.
    fn ready_to_land(&mut self, posted: u64) -> Result<u64>;

    /// Message `message` has landed in ring position `position` (its slot is
    /// `position % slots`: the message number itself for a write stream, the receive's slot for
    /// SEND/RECV): starts its copy in.
    fn landed(&mut self, message: u64, position: u64) -> Result<()>;

    /// How many landed messages are copied in (in order); with `--validate`, each is checked
    /// as its copy finishes.
    fn copied_in(&mut self) -> Result<u64>;

    /// Waits until message `message` is copied in (a receiver that gives its slot back at once).
    fn wait_copied_in(&mut self, message: u64, timeout: Duration) -> Result<()>;

    /// The end of a phase: waits for the copies still running. Copies out of messages from
    /// `posted` on were started ahead and never sent: they do not count as copy time.
    fn finish(&mut self, posted: u64) -> Result<()>;
}

/// How often a sender signals a completion: every `cq_mod` messages (`-Q`), or more often where
/// a staged ring is small (every half ring: 8 MiB messages have 8 slots, so every 4th), since
/// its slots are freed only by completions.
pub fn signal_every<M: QueueMemory>(cq_mod: u32, memories: &[M]) -> u64 {
    memories.iter().map(QueueMemory::window).fold(u64::from(cq_mod), u64::min).max(1)
}

/// Memory the NIC reaches directly: every message uses the same bytes, nothing is copied.
#[derive(Debug, Clone, Copy)]
pub struct Direct {
    slice: LocalSlice,
    landed: u64,
}

impl Direct {
    pub fn new(buffer: &BenchBuffer, size: usize) -> Direct {
        Direct { slice: buffer.slice(size), landed: 0 }
    }

    /// Direct memory over `slice`, for the staged ring's tests (which compare the two kinds).
    #[cfg(test)]
    pub(crate) fn for_slice(slice: LocalSlice) -> Direct {
        Direct { slice, landed: 0 }
    }
}

impl QueueMemory for Direct {
    const COPIES: bool = false;

    #[inline(always)]
    fn local(&self, _message: u64) -> LocalSlice {
        self.slice
    }

    fn window(&self) -> u64 {
        u64::MAX
    }

    #[inline(always)]
    fn ready_to_post(&mut self, _posted: u64, _completed: u64, _end: u64) -> Result<u64> {
        Ok(u64::MAX)
    }

    #[inline(always)]
    fn ready_to_land(&mut self, _posted: u64) -> Result<u64> {
        Ok(u64::MAX)
    }

    #[inline(always)]
    fn landed(&mut self, _message: u64, _position: u64) -> Result<()> {
        self.landed += 1;
        Ok(())
    }

    #[inline(always)]
    fn wait_copied_in(&mut self, _message: u64, _timeout: Duration) -> Result<()> {
        Ok(())
    }

    #[inline(always)]
    fn copied_in(&mut self) -> Result<u64> {
        Ok(self.landed)
    }

    #[inline(always)]
    fn finish(&mut self, _posted: u64) -> Result<()> {
        Ok(())
    }
}
