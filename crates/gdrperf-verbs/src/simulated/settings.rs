//! The simulated devices' names, and how the simulated port behaves (rate, latency, the injected
//! faults and test hooks, read from [`ENVIRONMENT`]).

use std::time::Duration;

use crate::{Result, VerbsError};

/// The simulated device's name: what `-d` takes and what every row's `device` column says.
/// It is the first of [`DEVICE_COUNT`] simulated devices (`simulated0`, `simulated1`, ...), each
/// a port of its own, so that lanes with a NIC each (two rails on one GPU) run without hardware.
pub const DEVICE_NAME: &str = "simulated0";

/// How many simulated devices open by name (`simulated0` to `simulated7`). No source: a chosen
/// bound, the eight rails of an 8-GPU HGX node, enough for any lane test while a typo such as
/// `simulated42` is still refused as an unknown device.
pub const DEVICE_COUNT: usize = 8;

/// The environment variable that lists the simulated device and sets its rate, latency and faults.
pub const ENVIRONMENT: &str = "GDRPERF_SIMULATED_NIC";

/// `rnr_retry` 7: retry for ever (the InfiniBand encoding, and what the benches' QPs ask for).
pub(super) const RNR_RETRY_FOR_EVER: u8 = 7;

/// How the simulated port behaves; see the module's documentation for the spelling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Bytes per second the simulated port moves (all QPs of the process share it).
    pub bytes_per_second: f64,
    /// Added to every request between its last byte and its completion.
    pub latency: Duration,
    /// The 1-based count of the executed request that fails (an injected fault).
    pub fail_after: Option<u64>,
    /// Receiver-not-ready retries before a request fails; 7 (the IB encoding of "for ever").
    pub rnr_retry: u8,
    /// Every post call carrying data must carry exactly this many requests, else it fails with
    /// EINVAL: the test hook that shows a bench posts in lists of `-l/--post_list` (`post_list=N`).
    /// Calls of zero-byte requests only (gdr-send-bw's credits) are not lists and pass.
    pub post_list: Option<u32>,
}

impl Default for Settings {
    /// 25 Gb/s and 2 us: a plausible RoCE port, so that timing code sees plausible numbers.
    fn default() -> Self {
        Settings {
            bytes_per_second: 25e9 / 8.0,
            latency: Duration::from_micros(2),
            fail_after: None,
            rnr_retry: RNR_RETRY_FOR_EVER,
            post_list: None,
        }
    }
}

impl Settings {
    /// Parses the value of [`ENVIRONMENT`]: `1`, empty, or `key=value` pairs joined by commas.
    pub fn parse(text: &str) -> Result<Settings> {
        let mut settings = Settings::default();
        let bad = |reason: String| VerbsError::SimulatedSettings { value: text.to_string(), reason };
        for part in text.split(',').map(str::trim).filter(|part| !part.is_empty() && *part != "1") {
            let (key, value) =
                part.split_once('=').ok_or_else(|| bad(format!("'{part}' is not key=value")))?;
            let number: f64 =
                value.trim().parse().map_err(|_| bad(format!("'{value}' is not a number for {key}")))?;
            if !number.is_finite() || number < 0.0 {
                return Err(bad(format!("{key} must be a finite number >= 0")));
            }
            match key.trim() {
                "rate" if number > 0.0 => settings.bytes_per_second = number * 1e9 / 8.0,
                "rate" => return Err(bad("rate must be above 0 Gb/s".to_string())),
                "latency" => settings.latency = Duration::from_secs_f64(number / 1e6),
                "fail_after" if number >= 1.0 && number.fract() == 0.0 => {
                    settings.fail_after = Some(number as u64)
                }
                "fail_after" => return Err(bad("fail_after must be a whole number >= 1".to_string())),
                "rnr_retry" if number <= f64::from(RNR_RETRY_FOR_EVER) && number.fract() == 0.0 => {
                    settings.rnr_retry = number as u8
                }
                "rnr_retry" => return Err(bad("rnr_retry must be a whole number from 0 to 7".to_string())),
                "post_list" if number >= 1.0 && number.fract() == 0.0 && number <= f64::from(u32::MAX) => {
                    settings.post_list = Some(number as u32)
                }
                "post_list" => return Err(bad("post_list must be a whole number >= 1".to_string())),
                other => {
                    return Err(bad(format!(
                        "unknown key '{other}' (known: rate, latency, fail_after, rnr_retry, post_list)"
                    )))
                }
            }
        }
        Ok(settings)
    }

    /// The settings of this process: [`ENVIRONMENT`]'s, or the defaults where it is unset.
    pub fn from_environment() -> Result<Settings> {
        match std::env::var(ENVIRONMENT) {
            Ok(value) => Settings::parse(&value),
            Err(_) => Ok(Settings::default()),
        }
    }
}

/// Whether [`ENVIRONMENT`] asks for the simulated device to be listed (set and not `0`).
pub fn listed() -> bool {
    std::env::var(ENVIRONMENT).is_ok_and(|value| value.trim() != "0")
}

/// Whether `name` names a simulated device (`simulated0` to `simulated7`).
pub fn is_simulated(name: &str) -> bool {
    port_of(name).is_some()
}

/// The port (0-based) of the simulated device `name`: `simulated1` is port 1. `None` for any
/// other name, including spellings such as `simulated01` that would alias a device.
pub fn port_of(name: &str) -> Option<usize> {
    let digits = name.strip_prefix("simulated")?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|byte| byte.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    let port: usize = digits.parse().ok().filter(|_| canonical)?;
    (port < DEVICE_COUNT).then_some(port)
}

impl Settings {
    /// The words the run header shows in place of a firmware version: what the device is and
    /// what its figures come from.
    pub fn describe(&self) -> String {
        format!(
            "SIMULATED NIC, not a measurement: copies in this process at {} Gb/s and {} us latency",
            self.bytes_per_second * 8.0 / 1e9,
            self.latency.as_secs_f64() * 1e6
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_rate_latency_and_fault_and_refuse_the_rest() {
        assert_eq!(Settings::parse("1").unwrap(), Settings::default());
        assert_eq!(Settings::parse("").unwrap(), Settings::default());
        let settings = Settings::parse("rate=100, latency=0.5,fail_after=7").unwrap();
        assert_eq!(settings.bytes_per_second, 100e9 / 8.0);
        assert_eq!(settings.latency, Duration::from_nanos(500));
        assert_eq!(settings.fail_after, Some(7));
        assert_eq!(settings.rnr_retry, 7, "retry for ever unless asked");
        assert_eq!(Settings::parse("rnr_retry=0").unwrap().rnr_retry, 0);
        assert_eq!(Settings::parse("post_list=4").unwrap().post_list, Some(4));
        for (bad, reason) in [
            ("rnr_retry=8", "from 0 to 7"),
            ("rnr_retry=0.5", "from 0 to 7"),
            ("post_list=0", "post_list must be a whole number >= 1"),
            ("rate=0", "rate must be above 0"),
            ("rate=fast", "'fast' is not a number for rate"),
            ("latency=-1", "must be a finite number >= 0"),
            ("fail_after=1.5", "whole number"),
            ("speed=3", "unknown key 'speed'"),
            ("rate", "is not key=value"),
        ] {
            let error = Settings::parse(bad).unwrap_err().to_string();
            assert!(error.starts_with("invalid configuration: GDRPERF_SIMULATED_NIC="), "{error}");
            assert!(error.contains(reason), "{bad}: {error}");
        }
    }

    #[test]
    fn devices_are_simulated0_to_simulated7_spelled_one_way() {
        assert_eq!(port_of("simulated0"), Some(0));
        assert_eq!(port_of("simulated1"), Some(1));
        assert_eq!(port_of("simulated7"), Some(DEVICE_COUNT - 1));
        for other in [
            "simulated8",
            "simulated",
            "simulated01",
            "simulated+1",
            "simulated-1",
            "Simulated0",
            "mlx5_0",
            "rxe0",
        ] {
            assert_eq!(port_of(other), None, "{other}");
            assert!(!is_simulated(other), "{other}");
        }
    }
}
