//! What a GPU itself says over a soak, through NVML (`libnvidia-ml.so.1`, loaded at run time like
//! libcuda, by the kept `nvml-wrapper` crate): why its clocks are held back, for how long the
//! power and thermal limits held them in an interval, its PCIe replay counter (the GPU's own
//! count of link-level retransmissions, which sysfs AER does not see) and its XID events.
//!
//! A machine without NVML is not an error: [`GpuWatch::open`] says why it cannot watch, and the
//! soak says it once and goes on with the NIC, AER and link checks. The watch records; what an
//! interval's readings mean is [`changes`], a pure function of two readings with its sources.
//!
//! ```no_run
//! use gdrperf_cuda::gpu_watch::{changes, GpuWatch};
//!
//! match GpuWatch::open(&["0000:17:00.0"]) {
//!     Ok(watch) => {
//!         let before = watch.read();
//!         // ... one interval of traffic ...
//!         let after = watch.read();
//!         for (bus_id, reading) in &after {
//!             let moved = changes(&before[bus_id], reading);
//!             println!("{bus_id}: {:?} {:?}", moved.errors, moved.held_back);
//!         }
//!     }
//!     Err(why) => println!("GPUs not watched: {why}"),
//! }
//! ```

use std::collections::BTreeMap;
use std::sync::OnceLock;

use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::PerformancePolicy;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, EventSet, Nvml};

use crate::PciBusId;

/// The hardware slowdowns: NVML's reference says each reduces the core clocks "by 2x or more"
/// and indicates a temperature too high, a power brake asserted by the supply, or a power draw
/// tripping fast-trigger protection (NVML API reference, `nvmlClocksEventReasons`). A GPU in
/// one of them during a soak is a finding, as an AER count is.
const HARDWARE_SLOWDOWNS: [(ThrottleReasons, &str); 3] = [
    (ThrottleReasons::HW_SLOWDOWN, "hardware slowdown"),
    (ThrottleReasons::HW_THERMAL_SLOWDOWN, "hardware thermal slowdown"),
    (ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN, "hardware power brake slowdown"),
];

/// The software limits: the driver holding clocks at the power cap or below a temperature,
/// or a sync-boost group. Normal operation under load, so they are not failures; they are tied
/// to the interval so that a dip in it is explained (same reference).
const SOFTWARE_LIMITS: [(ThrottleReasons, &str); 3] = [
    (ThrottleReasons::SW_POWER_CAP, "software power cap"),
    (ThrottleReasons::SW_THERMAL_SLOWDOWN, "software thermal slowdown"),
    (ThrottleReasons::SYNC_BOOST, "sync boost group"),
];

/// One GPU read at one moment. Each field is `None` where NVML could not read it (an older
/// driver, a GPU that does not support the query); `unread` says which and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuReading {
    /// Clock event (throttle) reasons at the moment of reading, NVML's bits.
    pub throttle_reasons: Option<u64>,
    /// Time the power limit has held the clocks back since the driver loaded, in ns.
    pub power_violation_ns: Option<u64>,
    /// Time the thermal limit has held the clocks back since the driver loaded, in ns.
    pub thermal_violation_ns: Option<u64>,
    /// The GPU's PCIe replay counter (link-level retransmissions).
    pub pcie_replays: Option<u64>,
    /// Critical XID events that arrived since the previous reading, by number (0: NVML gave none).
    pub xids: Vec<u64>,
    /// What could not be read, and NVML's word for why.
    pub unread: Vec<String>,
}

/// What moved between two readings of one GPU.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuChanges {
    /// Findings: an XID event, the PCIe replay counter moving, a hardware slowdown engaged.
    pub errors: Vec<String>,
    /// Normal limits that explain a dip: the power cap or a thermal limit holding the clocks.
    pub held_back: Vec<String>,
}

/// What moved from `before` to `after` (one interval of one GPU), worded for a reason line.
pub fn changes(before: &GpuReading, after: &GpuReading) -> GpuChanges {
    let mut moved = GpuChanges::default();
    for xid in &after.xids {
        moved.errors.push(format!("XID {xid} (a critical GPU error event; nvidia-smi and dmesg name it)"));
    }
    if let (Some(old), Some(new)) = (before.pcie_replays, after.pcie_replays) {
        if new > old {
            moved.errors.push(format!("GPU PCIe replay counter {old} -> {new}"));
        }
    }
    let reasons = ThrottleReasons::from_bits_truncate(after.throttle_reasons.unwrap_or(0));
    for (reason, words) in HARDWARE_SLOWDOWNS {
        if reasons.contains(reason) {
            moved.errors.push(format!("{words} engaged at the interval's end"));
        }
    }
    for (reason, words) in SOFTWARE_LIMITS {
        if reasons.contains(reason) {
            moved.held_back.push(format!("{words} at the interval's end"));
        }
    }
    for (limit, old, new) in [
        ("power", before.power_violation_ns, after.power_violation_ns),
        ("thermal", before.thermal_violation_ns, after.thermal_violation_ns),
    ] {
        if let (Some(old), Some(new)) = (old, new) {
            if new > old {
                let ms = (new - old) as f64 / 1e6;
                moved.held_back.push(format!("clocks held by the {limit} limit for {ms:.0} ms"));
            }
        }
    }
    moved
}

/// NVML, loaded once per process and kept to its end (its devices and event sets borrow it).
fn nvml() -> Result<&'static Nvml, String> {
    static NVML: OnceLock<Result<Nvml, String>> = OnceLock::new();
    NVML.get_or_init(|| {
        Nvml::init().map_err(|error| match error {
            NvmlError::LibloadingError(error) => format!("NVML not loaded (libnvidia-ml.so.1: {error})"),
            other => format!("NVML did not start: {other}"),
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// The GPUs of a soak, watched through NVML.
pub struct GpuWatch {
    /// Bus id as the caller gave it, with its NVML device.
    gpus: Vec<(String, Device<'static>)>,
    /// Critical XID events of every watched GPU; `None` where registering was refused.
    events: Option<EventSet<'static>>,
    /// What NVML is, and what is watched or not.
    description: String,
}

impl GpuWatch {
    /// Opens NVML and finds each GPU by its PCI bus id (`0000:17:00.0`). `Err` says why nothing
    /// can be watched: NVML absent, or a GPU it does not know.
    pub fn open(bus_ids: &[&str]) -> Result<GpuWatch, String> {
        let nvml = nvml()?;
        let count = nvml.device_count().map_err(|error| format!("NVML could not count GPUs: {error}"))?;
        let mut known = Vec::new();
        for index in 0..count {
            let Ok(device) = nvml.device_by_index(index) else { continue };
            let Ok(info) = device.pci_info() else { continue };
            if let Ok(address) = info.bus_id.parse::<PciBusId>() {
                known.push((address, device));
            }
        }
        let mut gpus = Vec::new();
        for bus_id in bus_ids {
            let address: PciBusId =
                bus_id.parse().map_err(|error| format!("GPU {bus_id}: not a PCI bus id ({error})"))?;
            let Some(at) = known.iter().position(|(known, _)| *known == address) else {
                return Err(format!("GPU {bus_id}: NVML lists no GPU at that bus id ({count} GPUs)"));
            };
            gpus.push((bus_id.to_string(), known.remove(at).1));
        }
        let version =
            |result: Result<String, NvmlError>| result.unwrap_or_else(|error| format!("unknown ({error})"));
        let mut description = format!(
            "NVML {} (driver {}): throttle reasons, power and thermal violation time, PCIe replays",
            version(nvml.sys_nvml_version()),
            version(nvml.sys_driver_version())
        );
        let events = match Self::register_xids(nvml, &gpus) {
            Ok(events) => {
                description.push_str(" and XID events");
                Some(events)
            }
            Err(why) => {
                description.push_str(&format!("; XID events not watched: {why}"));
                None
            }
        };
        Ok(GpuWatch { gpus, events, description })
    }

    fn register_xids(
        nvml: &'static Nvml,
        gpus: &[(String, Device<'static>)],
    ) -> Result<EventSet<'static>, String> {
        let mut set = nvml.create_event_set().map_err(|error| error.to_string())?;
        for (bus_id, device) in gpus {
            set = device
                .register_events(EventTypes::CRITICAL_XID_ERROR, set)
                .map_err(|error| format!("GPU {bus_id}: {}", error.error))?;
        }
        Ok(set)
    }

    /// What NVML is and what it watches, for the soak's record.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Reads every watched GPU now, with the XID events since the last read, by bus id as given.
    pub fn read(&self) -> BTreeMap<String, GpuReading> {
        let mut readings: BTreeMap<String, GpuReading> = BTreeMap::new();
        for (bus_id, device) in &self.gpus {
            let mut reading = GpuReading::default();
            match device.current_throttle_reasons() {
                Ok(reasons) => reading.throttle_reasons = Some(reasons.bits()),
                Err(error) => reading.unread.push(reading_note("throttle reasons", error)),
            }
            match device.violation_status(PerformancePolicy::Power) {
                Ok(time) => reading.power_violation_ns = Some(time.violation_time),
                Err(error) => reading.unread.push(reading_note("power violation time", error)),
            }
            match device.violation_status(PerformancePolicy::Thermal) {
                Ok(time) => reading.thermal_violation_ns = Some(time.violation_time),
                Err(error) => reading.unread.push(reading_note("thermal violation time", error)),
            }
            match device.pcie_replay_counter() {
                Ok(count) => reading.pcie_replays = Some(u64::from(count)),
                Err(error) => reading.unread.push(reading_note("PCIe replay counter", error)),
            }
            readings.insert(bus_id.clone(), reading);
        }
        if let Some(events) = &self.events {
            // Drain what is queued without waiting: a timeout of 0 ms answers Timeout at once
            // when the queue is empty.
            while let Ok(event) = events.wait(0) {
                let Ok(info) = event.device.pci_info() else { continue };
                let Ok(address) = info.bus_id.parse::<PciBusId>() else { continue };
                // 0 where NVML gives no number (no XID is numbered 0).
                let xid = match event.event_data {
                    Some(XidError::Value(xid)) => xid,
                    _ => 0,
                };
                let watched =
                    self.gpus.iter().find(|(bus_id, _)| bus_id.parse::<PciBusId>().ok() == Some(address));
                if let Some((bus_id, _)) = watched {
                    readings.entry(bus_id.clone()).or_default().xids.push(xid);
                }
            }
        }
        readings
    }
}

fn reading_note(what: &str, error: NvmlError) -> String {
    match error {
        NvmlError::NotSupported => format!("{what}: not supported by this GPU"),
        NvmlError::FailedToLoadSymbol(_) => format!("{what}: this NVML lacks the call"),
        other => format!("{what}: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(throttle: u64, power_ns: u64, replays: u64, xids: &[u64]) -> GpuReading {
        GpuReading {
            throttle_reasons: Some(throttle),
            power_violation_ns: Some(power_ns),
            thermal_violation_ns: Some(0),
            pcie_replays: Some(replays),
            xids: xids.to_vec(),
            unread: Vec::new(),
        }
    }

    #[test]
    fn a_quiet_interval_moves_nothing_even_when_the_gpu_idles() {
        // GPU_IDLE (0x1) and the applications clocks setting (0x2) are states, not limits.
        assert_eq!(
            changes(&reading(0x1, 5_000, 3, &[]), &reading(0x3, 5_000, 3, &[])),
            GpuChanges::default()
        );
    }

    #[test]
    fn xids_replays_and_hardware_slowdowns_are_errors_and_power_limits_hold_back() {
        // 0x8 hardware slowdown, 0x4 software power cap; 250 ms more under the power limit.
        let before = reading(0x0, 1_000_000_000, 3, &[]);
        let after = reading(0x8 | 0x4, 1_250_000_000, 7, &[79]);
        let moved = changes(&before, &after);
        assert_eq!(
            moved.errors,
            [
                "XID 79 (a critical GPU error event; nvidia-smi and dmesg name it)",
                "GPU PCIe replay counter 3 -> 7",
                "hardware slowdown engaged at the interval's end",
            ]
        );
        assert_eq!(
            moved.held_back,
            ["software power cap at the interval's end", "clocks held by the power limit for 250 ms"]
        );
    }

    #[test]
    fn what_could_not_be_read_moves_nothing() {
        let unread = GpuReading {
            unread: vec!["PCIe replay counter: not supported by this GPU".into()],
            ..Default::default()
        };
        assert_eq!(changes(&unread, &reading(0x0, 9, 9, &[])), GpuChanges::default());
        assert_eq!(changes(&reading(0x0, 9, 9, &[]), &unread), GpuChanges::default());
    }

    #[test]
    fn the_nvml_bits_named_are_nvmls() {
        // From nvml.h: nvmlClocksEventReasonSwPowerCap 0x4, HwSlowdown 0x8, SyncBoost 0x10,
        // SwThermalSlowdown 0x20, HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80.
        let bits = |list: &[(ThrottleReasons, &str)]| {
            list.iter().map(|(reason, _)| reason.bits()).collect::<Vec<_>>()
        };
        assert_eq!(bits(&HARDWARE_SLOWDOWNS), [0x8, 0x40, 0x80]);
        assert_eq!(bits(&SOFTWARE_LIMITS), [0x4, 0x20, 0x10]);
    }
}
