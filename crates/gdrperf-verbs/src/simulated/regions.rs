//! Memory the simulated NIC reaches: protection domains, registered regions and their keys, and
//! the copies into and out of them (host memory by address, GPU memory through its copies).

use std::sync::Arc;

use sideway::ibverbs::AccessFlags;

use super::{lock, Region};

/// Memory the simulated NIC reaches by copies rather than by address: GPU memory, whose
/// device pointers the CPU cannot dereference (the harness implements it with CUDA copies).
pub trait CopiedMemory: Send + Sync {
    /// Copies `into.len()` bytes at `offset` of the memory into `into`.
    fn read(&self, offset: usize, into: &mut [u8]) -> std::result::Result<(), String>;
    /// Copies `bytes` into the memory at `offset`.
    fn write(&self, offset: usize, bytes: &[u8]) -> std::result::Result<(), String>;
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

/// A protection domain of the simulated NIC.
#[derive(Debug)]
pub(crate) struct ProtectionDomain {
    pub(super) id: u32,
    /// The port of the device it was allocated on: its QPs send through that port.
    pub(super) port: usize,
}

/// A protection domain of the device whose port is `port` (see [`port_of`]).
pub(crate) fn alloc_pd(port: usize) -> ProtectionDomain {
    ProtectionDomain { id: lock().number(), port }
}

/// A registration; dropping it deregisters (under the NIC's lock, so no copy touches the memory
/// afterwards).
#[derive(Debug)]
pub(crate) struct RegisteredRegion {
    key: u32,
}

impl RegisteredRegion {
    pub(crate) fn key(&self) -> u32 {
        self.key
    }
}

impl Drop for RegisteredRegion {
    fn drop(&mut self) {
        lock().regions.remove(&self.key);
    }
}

pub(crate) fn register(
    pd: &ProtectionDomain,
    address: u64,
    len: usize,
    access: AccessFlags,
    copied: Option<Arc<dyn CopiedMemory>>,
) -> RegisteredRegion {
    let mut nic = lock();
    let key = nic.number();
    nic.regions.insert(key, Region { protection_domain: pd.id, address, len, access, copied });
    RegisteredRegion { key }
}
