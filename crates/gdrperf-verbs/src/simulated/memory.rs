//! The memory behind a registration as the simulated NIC sees it, and the copies into and out of
//! it: host memory by address, GPU memory through its copies ([`CopiedMemory`]).

use std::sync::Arc;

use sideway::ibverbs::AccessFlags;

/// Memory the simulated NIC reaches by copies rather than by address: GPU memory, whose
/// device pointers the CPU cannot dereference (the harness implements it with CUDA copies).
pub trait CopiedMemory: Send + Sync {
    /// Copies `into.len()` bytes at `offset` of the memory into `into`.
    fn read(&self, offset: usize, into: &mut [u8]) -> std::result::Result<(), String>;
    /// Copies `bytes` into the memory at `offset`.
    fn write(&self, offset: usize, bytes: &[u8]) -> std::result::Result<(), String>;
}

/// A registered region as the NIC sees it.
pub(super) struct Region {
    pub(super) protection_domain: u32,
    pub(super) address: u64,
    pub(super) len: usize,
    /// The rights it was registered with (`RemoteAccess::flags`).
    pub(super) access: AccessFlags,
    /// `None`: host memory at `address`; otherwise reached through its copies.
    pub(super) copied: Option<Arc<dyn CopiedMemory>>,
}

impl Region {
    pub(super) fn covers(&self, address: u64, len: usize) -> bool {
        address >= self.address
            && address.checked_add(len as u64).is_some_and(|end| end <= self.address + self.len as u64)
    }

    /// # Safety
    /// The region is registered (its memory alive) and covers `address..address + into.len()`.
    pub(super) unsafe fn read(&self, address: u64, into: &mut [u8]) -> std::result::Result<(), String> {
        match &self.copied {
            None => {
                // SAFETY: the caller's promise; registration keeps the memory alive.
                unsafe { std::ptr::copy(address as *const u8, into.as_mut_ptr(), into.len()) };
                Ok(())
            }
            Some(memory) => memory.read((address - self.address) as usize, into),
        }
    }

    /// # Safety
    /// As [`Region::read`].
    pub(super) unsafe fn write(&self, address: u64, bytes: &[u8]) -> std::result::Result<(), String> {
        match &self.copied {
            None => {
                // SAFETY: the caller's promise; registration keeps the memory alive.
                unsafe { std::ptr::copy(bytes.as_ptr(), address as *mut u8, bytes.len()) };
                Ok(())
            }
            Some(memory) => memory.write((address - self.address) as usize, bytes),
        }
    }
}
