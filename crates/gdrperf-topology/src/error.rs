//! The one error of this crate: a sysfs root that cannot be examined at all, raised by `sysfs`
//! and returned from [`crate::recommend_nic`].

use std::path::PathBuf;

/// Why a sysfs root could not be examined at all. Missing facts below the root are not
/// errors: they are reported as unknown or absent.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error("cannot read sysfs root {root} (pass an existing directory to --sysfs-root)")]
    RootUnreadable { root: PathBuf, source: std::io::Error },
    #[error(
        "{root} has no sys/ directory: --sysfs-root must point at a directory that holds sys/ (and proc/), like /"
    )]
    NoSysUnderRoot { root: PathBuf },
    #[error("{bus_id:?} is not a PCI bus id (expected a form like 0000:1b:00.0 or 00000000:1B:00.0)")]
    BadBusId { bus_id: String },
    #[error("no NVIDIA GPU at PCI {bus_id} under {root} (check the bus id with `nvidia-smi --query-gpu=pci.bus_id --format=csv`)")]
    GpuNotFound { bus_id: String, root: PathBuf },
}
