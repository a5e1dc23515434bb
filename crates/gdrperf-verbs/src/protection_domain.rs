//! The protection domain: the scope tying queue pairs to the memory they may touch, on a real
//! device (sideway's) or on the simulated NIC ([`crate::simulated`]).

use std::fmt;
use std::sync::Arc;

use sideway::ibverbs::protection_domain::ProtectionDomain as SidewayProtectionDomain;

use crate::simulated;

/// A protection domain, made by [`crate::Device::alloc_pd`]. Memory registered on it and queue
/// pairs created on it belong to the same device: a real one or the simulated NIC.
pub struct ProtectionDomain {
    backend: Backend,
}

/// Which NIC a protection domain (and all made on it) lives on.
pub(crate) enum Backend {
    Verbs(Arc<SidewayProtectionDomain>),
    Simulated(simulated::ProtectionDomain),
}

impl fmt::Debug for ProtectionDomain {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_struct("ProtectionDomain").field("simulated", &self.is_simulated()).finish()
    }
}

impl ProtectionDomain {
    pub(crate) fn new(backend: Backend) -> Arc<ProtectionDomain> {
        Arc::new(ProtectionDomain { backend })
    }

    pub(crate) fn backend(&self) -> &Backend {
        &self.backend
    }

    /// Whether this domain is the simulated NIC's: its memory is reached by copies, and GPU
    /// memory must be registered with [`crate::MemoryRegion::register_copied`].
    pub fn is_simulated(&self) -> bool {
        matches!(self.backend, Backend::Simulated(_))
    }
}
