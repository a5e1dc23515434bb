//! Protection domains and registrations of the simulated NIC: the keys a request quotes.

use std::sync::Arc;

use sideway::ibverbs::AccessFlags;

use super::memory::{CopiedMemory, Region};
use super::state::lock;

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
