//! Which GPUs a run uses: `--gpu 0`, `--gpu 0,2,3`, `--gpu all` or `--gpu-bus-id 0000:17:00.0`.
//!
//! Parsing and resolving are separate steps on purpose: parsing needs no GPU, so a
//! malformed flag is rejected before libcuda is even loaded (and is unit-tested on
//! machines without one); resolving checks the parsed selection against the GPUs
//! this process actually sees.

use std::fmt;
use std::str::FromStr;

/// A PCI address `domain:bus:device.function`, shown as `0000:17:00.0`.
///
/// Bus ids are the stable way to name a GPU on a multi-GPU node: CUDA's device
/// indices follow `CUDA_DEVICE_ORDER` and `CUDA_VISIBLE_DEVICES`, while the bus
/// id is what `lspci`, `nvidia-smi` and the NIC's sysfs topology use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PciBusId {
    pub domain: u32,
    pub bus: u8,
    pub device: u8,
    pub function: u8,
}

impl fmt::Display for PciBusId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{:04x}:{:02x}:{:02x}.{:x}", self.domain, self.bus, self.device, self.function)
    }
}

impl FromStr for PciBusId {
    type Err = SelectionError;

    /// Accepts `0000:17:00.0`, nvidia-smi's `00000000:17:00.0` and the short `17:00.0`
    /// (domain 0), in either case.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let malformed = |reason: &str| SelectionError::MalformedBusId {
            input: text.to_string(),
            reason: reason.to_string(),
        };
        let trimmed = text.trim();
        let (address, function) = trimmed.rsplit_once('.').ok_or_else(|| malformed("missing '.function'"))?;
        let parts: Vec<&str> = address.split(':').collect();
        let (domain, bus, device) = match parts.as_slice() {
            [bus, device] => ("0", *bus, *device),
            [domain, bus, device] => (*domain, *bus, *device),
            _ => return Err(malformed("expected domain:bus:device.function")),
        };
        let field = |value: &str, max_digits: usize, name: &str| -> Result<u32, SelectionError> {
            if value.is_empty() || value.len() > max_digits || !value.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(malformed(&format!(
                    "{name} '{value}' is not {max_digits} hex digit(s) or fewer"
                )));
            }
            u32::from_str_radix(value, 16).map_err(|_| malformed(&format!("{name} '{value}' is not hex")))
        };
        let device = field(device, 2, "device")?;
        let function = field(function, 1, "function")?;
        if device > 0x1f {
            return Err(malformed("device must be 00..1f"));
        }
        if function > 7 {
            return Err(malformed("function must be 0..7"));
        }
        Ok(PciBusId {
            domain: field(domain, 8, "domain")?,
            bus: field(bus, 2, "bus")? as u8,
            device: device as u8,
            function: function as u8,
        })
    }
}

/// The GPUs a run asked for, before they are checked against the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuSelection {
    /// Every GPU this process sees.
    All,
    /// CUDA device indices, in the order given: no duplicates from [`GpuSelection::parse`]; a
    /// GPU may repeat from [`GpuSelection::parse_lanes`] (several lanes on one GPU).
    Indices(Vec<usize>),
    /// One GPU named by its PCI address.
    BusId(PciBusId),
}

impl GpuSelection {
    /// Parses `--gpu`: `all`, `N` or `N,M,...`; a value containing ':' is taken as a bus id. A
    /// GPU listed twice is refused: where each GPU is measured once (`selftest`, `copy-bw`), a
    /// repeat would only measure it again.
    pub fn parse(text: &str) -> Result<Self, SelectionError> {
        Self::parse_with(text, false)
    }

    /// As [`GpuSelection::parse`], but a GPU may be listed more than once (`--gpu 0,0`): the
    /// benches' lanes, where each entry pairs with its own NIC (two rails on one GPU, as nodes
    /// with a dual-port NIC or two NICs per GPU behind one PCIe switch have). Whether each
    /// repeat has a NIC of its own is the lane planner's check, which knows `-d`.
    pub fn parse_lanes(text: &str) -> Result<Self, SelectionError> {
        Self::parse_with(text, true)
    }

    fn parse_with(text: &str, repeats: bool) -> Result<Self, SelectionError> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(SelectionError::Empty);
        }
        if trimmed.eq_ignore_ascii_case("all") {
            return Ok(GpuSelection::All);
        }
        if trimmed.contains(':') {
            return Self::parse_bus_id(trimmed);
        }
        let mut indices = Vec::new();
        for part in trimmed.split(',') {
            let part = part.trim();
            let index: usize = part.parse().map_err(|_| SelectionError::MalformedIndex {
                input: text.to_string(),
                part: part.to_string(),
            })?;
            if !repeats && indices.contains(&index) {
                return Err(SelectionError::Duplicate { index });
            }
            indices.push(index);
        }
        Ok(GpuSelection::Indices(indices))
    }

    /// Parses `--gpu-bus-id`.
    pub fn parse_bus_id(text: &str) -> Result<Self, SelectionError> {
        Ok(GpuSelection::BusId(text.parse()?))
    }

    /// The CUDA device indices this selection means on a machine whose GPU `i`
    /// has bus id `bus_ids[i]` (so `bus_ids.len()` is the device count).
    pub fn resolve(&self, bus_ids: &[PciBusId]) -> Result<Vec<usize>, SelectionError> {
        let count = bus_ids.len();
        if count == 0 {
            return Err(SelectionError::NoGpus);
        }
        match self {
            GpuSelection::All => Ok((0..count).collect()),
            GpuSelection::Indices(indices) => {
                if let Some(&index) = indices.iter().find(|&&index| index >= count) {
                    return Err(SelectionError::OutOfRange { index, count });
                }
                Ok(indices.clone())
            }
            GpuSelection::BusId(wanted) => {
                bus_ids.iter().position(|bus_id| bus_id == wanted).map(|index| vec![index]).ok_or_else(|| {
                    SelectionError::NoSuchBusId {
                        bus_id: *wanted,
                        available: bus_ids.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
                    }
                })
            }
        }
    }
}

impl FromStr for GpuSelection {
    type Err = SelectionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl fmt::Display for GpuSelection {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuSelection::All => formatter.write_str("all"),
            GpuSelection::Indices(indices) => {
                let list: Vec<String> = indices.iter().map(ToString::to_string).collect();
                formatter.write_str(&list.join(","))
            }
            GpuSelection::BusId(bus_id) => write!(formatter, "{bus_id}"),
        }
    }
}

/// Why a GPU selection was refused. Needs no GPU to produce.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    #[error("empty GPU selection: use --gpu 0, --gpu 0,2, --gpu all or --gpu-bus-id 0000:17:00.0")]
    Empty,
    #[error("bad GPU selection '{input}': '{part}' is not a GPU index (use 0, 0,2 or all)")]
    MalformedIndex { input: String, part: String },
    #[error("GPU {index} is listed twice in the GPU selection")]
    Duplicate { index: usize },
    #[error(
        "bad PCI bus id '{input}': {reason} (expected e.g. 0000:17:00.0, as `nvidia-smi` or `lspci -D` show)"
    )]
    MalformedBusId { input: String, reason: String },
    #[error("no CUDA GPU is visible to this process: check `nvidia-smi` and CUDA_VISIBLE_DEVICES")]
    NoGpus,
    #[error("GPU {index} does not exist: this process sees {count} GPU(s), numbered 0..{}", count - 1)]
    OutOfRange { index: usize, count: usize },
    #[error("no GPU at PCI bus id {bus_id}; the GPUs are at: {available}")]
    NoSuchBusId { bus_id: PciBusId, available: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bus(text: &str) -> PciBusId {
        text.parse().unwrap()
    }

    fn machine() -> Vec<PciBusId> {
        vec![bus("0000:17:00.0"), bus("0000:65:00.0"), bus("0000:ca:00.0"), bus("0001:e3:00.0")]
    }

    #[test]
    fn bus_id_accepts_the_usual_spellings_and_normalizes() {
        assert_eq!(bus("0000:17:00.0").to_string(), "0000:17:00.0");
        assert_eq!(bus("00000000:17:00.0").to_string(), "0000:17:00.0");
        assert_eq!(bus("17:00.0").to_string(), "0000:17:00.0");
        assert_eq!(bus(" 0000:CA:1F.7 ").to_string(), "0000:ca:1f.7");
        assert_eq!(bus("0001:e3:00.0"), PciBusId { domain: 1, bus: 0xe3, device: 0, function: 0 });
    }

    #[test]
    fn bus_id_rejects_malformed_text() {
        for bad in [
            "",
            "17:00",
            "0000:17:00:0",
            "zz:00.0",
            "0000:170:00.0",
            "0000:17:20.0",
            "0000:17:00.8",
            "1:2:3:4.0",
        ] {
            let error = bad.parse::<PciBusId>().unwrap_err();
            assert!(matches!(error, SelectionError::MalformedBusId { .. }), "{bad}: {error}");
        }
    }

    #[test]
    fn parse_indices_all_and_bus_ids() {
        assert_eq!(GpuSelection::parse("0").unwrap(), GpuSelection::Indices(vec![0]));
        assert_eq!(GpuSelection::parse(" 0, 2,3 ").unwrap(), GpuSelection::Indices(vec![0, 2, 3]));
        assert_eq!(GpuSelection::parse("ALL").unwrap(), GpuSelection::All);
        assert_eq!(GpuSelection::parse("17:00.0").unwrap(), GpuSelection::BusId(bus("0000:17:00.0")));
        assert_eq!(GpuSelection::parse_bus_id("0000:65:00.0").unwrap(), GpuSelection::BusId(bus("65:00.0")));
    }

    #[test]
    fn parse_rejects_malformed_selections() {
        assert_eq!(GpuSelection::parse("  ").unwrap_err(), SelectionError::Empty);
        for bad in ["-1", "0,,1", "one", "0;1", "1.5", "0,"] {
            let error = GpuSelection::parse(bad).unwrap_err();
            assert!(matches!(error, SelectionError::MalformedIndex { .. }), "{bad}: {error}");
        }
        assert_eq!(GpuSelection::parse("1,0,1").unwrap_err(), SelectionError::Duplicate { index: 1 });
        // Lanes may share a GPU; malformed lists stay malformed.
        assert_eq!(GpuSelection::parse_lanes("1,0,1").unwrap(), GpuSelection::Indices(vec![1, 0, 1]));
        assert!(matches!(GpuSelection::parse_lanes("0,,0"), Err(SelectionError::MalformedIndex { .. })));
        assert!(GpuSelection::parse_bus_id("0").is_err());
    }

    #[test]
    fn resolve_checks_against_the_machine() {
        let gpus = machine();
        assert_eq!(GpuSelection::All.resolve(&gpus).unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(GpuSelection::parse("3,0").unwrap().resolve(&gpus).unwrap(), vec![3, 0]);
        assert_eq!(GpuSelection::parse("0000:ca:00.0").unwrap().resolve(&gpus).unwrap(), vec![2]);
    }

    #[test]
    fn resolve_reports_out_of_range_and_unknown_bus_ids() {
        let gpus = machine();
        let error = GpuSelection::parse("0,4").unwrap().resolve(&gpus).unwrap_err();
        assert_eq!(error, SelectionError::OutOfRange { index: 4, count: 4 });
        assert!(error.to_string().contains("numbered 0..3"), "{error}");
        let error = GpuSelection::parse("0000:18:00.0").unwrap().resolve(&gpus).unwrap_err();
        assert!(error.to_string().contains("0000:17:00.0, 0000:65:00.0"), "{error}");
        assert_eq!(GpuSelection::All.resolve(&[]).unwrap_err(), SelectionError::NoGpus);
    }

    #[test]
    fn display_round_trips() {
        for text in ["all", "0,2,3", "0000:17:00.0"] {
            assert_eq!(GpuSelection::parse(text).unwrap().to_string(), text);
        }
    }
}
