//! CPU placement: the measuring thread on a CPU of its NIC's NUMA node.
//!
//! On a two-socket GPU node a thread that the scheduler puts on the far socket posts every work
//! request across the socket link, and its host buffers (first touched by that thread) land in
//! the far socket's memory: bandwidth drops and latency grows for reasons that are no property of
//! the NIC. perftest pins to the NIC's node by default (`--numa_node`, `--pin_cores`); so do we:
//!
//! - default: the CPUs of the NIC's NUMA node (`/sys/class/infiniband/DEV/device/numa_node`,
//!   `/sys/devices/system/node/nodeN/cpulist`), within what this process may use (a Slurm or
//!   `taskset` CPU set is respected);
//! - `--numa-node N`: that node's CPUs instead; `--cpu LIST`: exactly those CPUs;
//! - `--cpu none`, or a device without NUMA information (a software device such as Soft-RoCE, a
//!   VM, many single-socket machines: `numa_node` -1): left to the scheduler, and said so.
//!
//! The thread is pinned before its buffers are allocated, so Linux's first-touch policy puts
//! them on the chosen node without an `mbind`. The choice ([`choose`]) is a pure function of a
//! [`NumaFacts`] read from sysfs ([`NumaFacts::read`]); applying it is [`pin_current_thread`].
//!
//! The affinity call is libc's `sched_setaffinity`, already a dependency: it takes a CPU set,
//! which a whole node needs, where the `core_affinity` crate pins to one core only; `nix` would
//! add a dependency for the same ten lines.
//!
//! Everything about where a measuring thread runs is in this folder, so a reader looking for
//! "which CPU, and why" reads one place:
//! - here: the facts, the choice and the pinning of a side's thread (called once per side when
//!   it connects, `harness::connect`);
//! - [`CpuPlacement`] (`chosen.rs`): the choice as plain data, carried by the session into the
//!   run header, the rows' `cpu` and `numa_node` columns and the JSON metadata;
//! - `tsc_pin`: the latency loops' short pin to the current CPU while they read a TSC that is
//!   not known to agree across CPUs.
//!
//! What the user asked for ([`CpuRequest`], `--cpu` and `--numa-node` parsed) stays with the
//! other options in `options::cpu_request`, re-exported here: the options are checked before
//! anything of this machine is read, and sit below this folder in the crate's layers
//! (`scripts/layers.toml`). The error of a failed placement is the crate's error's
//! (`CpuPlacementError`), for the same reason.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::OnceLock;

pub use crate::error::{format_cpu_list, CpuPlacementError};
pub use chosen::CpuPlacement;

mod chosen;
pub(crate) mod tsc_pin;
pub use crate::options::cpu_request::{parse_cpu_list, CpuRequest};

/// What sysfs says about the device's NUMA node and each node's CPUs, and which CPUs this
/// process may use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NumaFacts {
    /// The RDMA device's node (`None`: no `device/numa_node`, or -1).
    pub device_node: Option<u32>,
    /// What `device/numa_node` held, for the message ("-1", "missing").
    pub device_node_text: String,
    /// Each node's CPUs.
    pub node_cpus: BTreeMap<u32, Vec<usize>>,
    /// The CPUs this process may run on (its affinity when the run started).
    pub allowed: Vec<usize>,
}

impl NumaFacts {
    /// Reads the facts for `device` under `root` ("/" on a live system); `allowed` is the
    /// process's CPU set.
    pub fn read(root: &Path, device: &str, allowed: Vec<usize>) -> NumaFacts {
        let numa_file = root.join("sys/class/infiniband").join(device).join("device/numa_node");
        let text = std::fs::read_to_string(&numa_file).map(|text| text.trim().to_string());
        let device_node = text.as_ref().ok().and_then(|text| text.parse::<u32>().ok());
        let mut node_cpus = BTreeMap::new();
        if let Ok(entries) = std::fs::read_dir(root.join("sys/devices/system/node")) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                let Some(node) = name.strip_prefix("node").and_then(|number| number.parse::<u32>().ok())
                else {
                    continue;
                };
                if let Ok(list) = std::fs::read_to_string(entry.path().join("cpulist")) {
                    // A node without CPUs (GPU or CXL memory only) has an empty list.
                    node_cpus.insert(node, parse_cpu_list(list.trim()).unwrap_or_default());
                }
            }
        }
        NumaFacts {
            device_node,
            device_node_text: text.unwrap_or_else(|_| "missing".into()),
            node_cpus,
            allowed,
        }
    }
}

/// The placement for `request` on a device named `device` with `facts`: the choice, without
/// touching any thread. An error names the flag and what is possible.
pub fn choose(
    request: &CpuRequest,
    device: &str,
    facts: &NumaFacts,
) -> Result<CpuPlacement, CpuPlacementError> {
    let allowed = |cpus: &[usize]| -> Vec<usize> {
        cpus.iter().copied().filter(|cpu| facts.allowed.contains(cpu)).collect()
    };
    let node_of = |cpus: &[usize]| -> Option<u32> {
        facts
            .node_cpus
            .iter()
            .find(|(_, node)| !cpus.is_empty() && cpus.iter().all(|cpu| node.contains(cpu)))
            .map(|(&node, _)| node)
    };
    match request {
        CpuRequest::Unpinned => {
            Ok(CpuPlacement { cpus: vec![], numa_node: None, reason: "--cpu none".into() })
        }
        CpuRequest::Cpus(cpus) => {
            let refused: Vec<usize> =
                cpus.iter().copied().filter(|cpu| !facts.allowed.contains(cpu)).collect();
            if !refused.is_empty() {
                return Err(CpuPlacementError::CpusNotAllowed {
                    asked: cpus.clone(),
                    refused,
                    allowed: facts.allowed.clone(),
                });
            }
            Ok(CpuPlacement {
                cpus: cpus.clone(),
                numa_node: node_of(cpus),
                reason: format!("--cpu {}", format_cpu_list(cpus)),
            })
        }
        CpuRequest::Node(node) => {
            let Some(cpus) = facts.node_cpus.get(node) else {
                let known = facts.node_cpus.keys().copied().collect();
                return Err(CpuPlacementError::NoSuchNode { node: *node, known });
            };
            let usable = allowed(cpus);
            if usable.is_empty() {
                return Err(CpuPlacementError::NodeNotAllowed {
                    node: *node,
                    cpus: cpus.clone(),
                    allowed: facts.allowed.clone(),
                });
            }
            Ok(CpuPlacement { cpus: usable, numa_node: Some(*node), reason: format!("--numa-node {node}") })
        }
        CpuRequest::NearNic => {
            let unpinned = |reason: String| Ok(CpuPlacement { cpus: vec![], numa_node: None, reason });
            let Some(node) = facts.device_node else {
                return unpinned(format!(
                    "{device} has no NUMA node (device/numa_node: {}): no NUMA information, left to the scheduler",
                    facts.device_node_text
                ));
            };
            let Some(cpus) = facts.node_cpus.get(&node) else {
                return unpinned(format!("{device} is on NUMA node {node}, which lists no CPUs"));
            };
            let usable = allowed(cpus);
            if usable.is_empty() {
                return unpinned(format!(
                    "{device} is on NUMA node {node} (CPUs {}), none of which this process may use",
                    format_cpu_list(cpus)
                ));
            }
            Ok(CpuPlacement {
                cpus: usable,
                numa_node: Some(node),
                reason: format!("NUMA node {node} of {device}"),
            })
        }
    }
}

/// Chooses for `device` on this machine and pins the calling thread: what a side calls before
/// allocating its buffers.
pub fn place_current_thread(request: &CpuRequest, device: &str) -> Result<CpuPlacement, CpuPlacementError> {
    let facts = NumaFacts::read(Path::new("/"), device, process_cpus().to_vec());
    let placement = choose(request, device, &facts)?;
    match pin_current_thread(&placement) {
        Ok(()) => Ok(placement),
        Err(source) => Err(CpuPlacementError::Pin { placement: placement.describe(), source }),
    }
}

/// Pins the calling thread to `placement`'s CPUs, or back to the process's CPUs when it has
/// none (a lane thread inherits the affinity of the thread that started it).
pub fn pin_current_thread(placement: &CpuPlacement) -> io::Result<()> {
    let cpus = if placement.cpus.is_empty() { process_cpus() } else { &placement.cpus };
    if cpus.is_empty() {
        return Ok(());
    }
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is beyond CPU_SETSIZE"),
            ));
        }
        // SAFETY: `cpu` is below CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; the set is initialised and its size is passed.
    let status = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if status == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The CPUs this process could use when it first asked (before any pinning of ours).
pub fn process_cpus() -> &'static [usize] {
    static CPUS: OnceLock<Vec<usize>> = OnceLock::new();
    CPUS.get_or_init(|| {
        // SAFETY: as in pin_current_thread; sched_getaffinity fills the set it is given.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let status = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        if status != 0 {
            return Vec::new();
        }
        cpus_in(&set)
    })
}

/// The CPUs in `set`.
fn cpus_in(set: &libc::cpu_set_t) -> Vec<usize> {
    // SAFETY: every index is below CPU_SETSIZE.
    (0..libc::CPU_SETSIZE as usize).filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, set) }).collect()
}

#[cfg(test)]
mod tests;
