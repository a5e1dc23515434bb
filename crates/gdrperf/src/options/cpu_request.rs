//! What `--cpu` and `--numa-node` ask for, checked when the options are: the request alone,
//! which `node::cpu_placement` turns into CPUs on this machine once the device is known.

use crate::error::ConfigError;

/// What the user asked for (`--cpu`, `--numa-node`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CpuRequest {
    /// The NIC's NUMA node (the default).
    #[default]
    NearNic,
    /// `--cpu none`: leave it to the scheduler.
    Unpinned,
    /// `--cpu LIST`.
    Cpus(Vec<usize>),
    /// `--numa-node N`.
    Node(u32),
}

impl CpuRequest {
    /// From the two flags (clap keeps them apart).
    pub fn from_flags(cpu: Option<&str>, numa_node: Option<u32>) -> Result<CpuRequest, ConfigError> {
        match (cpu, numa_node) {
            (Some(_), Some(_)) => Err(ConfigError::conflict("--cpu", "and --numa-node exclude each other")),
            (Some("none"), None) => Ok(CpuRequest::Unpinned),
            (Some(list), None) => parse_cpu_list(list).map(CpuRequest::Cpus).map_err(|error| {
                ConfigError::malformed("--cpu", list, format!("{error} (examples: 3, 0-7, 0-3,8-11, none)"))
            }),
            (None, Some(node)) => Ok(CpuRequest::Node(node)),
            (None, None) => Ok(CpuRequest::NearNic),
        }
    }
}

/// Parses the kernel's CPU list format: "0-3,8-11", "5", "" (none).
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|part| !part.is_empty()) {
        let number =
            |text: &str| text.trim().parse::<usize>().map_err(|_| format!("'{part}' is not a CPU or range"));
        match part.split_once('-') {
            Some((first, last)) => {
                let (first, last) = (number(first)?, number(last)?);
                if first > last {
                    return Err(format!("'{part}' runs backwards"));
                }
                cpus.extend(first..=last);
            }
            None => cpus.push(number(part)?),
        }
    }
    if cpus.is_empty() && !text.trim().is_empty() {
        return Err("no CPU listed".into());
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}
