//! Acceptance thresholds, shared by the benches (which judge each size as it completes) and
//! `gdrperf accept`/`compare` (which judge result files read back).
//!
//! * [`limit`] parses `--min-bw 90Gb/s | 11000MiB/s | 80%`, `--max-lat 5us` and `--lat-pct`,
//!   and resolves a share of the port rate once the port is known.
//! * [`evaluate`] holds one row's figures ([`Measured`]) against them and words the FAIL line
//!   ("2048 bytes: BW average 41.2 Gb/s < 90 Gb/s (-54.2%)").
//!
//! It is its own crate so that the benches' core judges its typed rows without knowing how
//! result files are read back and compared (`gdrperf-report`).
//!
//! ```
//! use gdrperf_threshold::{BandwidthThreshold, LatencyStatistic, Measured, Thresholds};
//!
//! struct Row { bytes: u64, gbit_s: f64 }
//! impl Measured for Row {
//!     fn bytes(&self) -> u64 { self.bytes }
//!     fn bandwidth_gbit_s(&self) -> Option<f64> { Some(self.gbit_s) }
//!     fn latency_us(&self, _: LatencyStatistic) -> Option<f64> { None }
//!     fn describe(&self) -> (String, String) { ("example".into(), format!("{} bytes", self.bytes)) }
//! }
//!
//! let thresholds = Thresholds {
//!     min_bw: Some(BandwidthThreshold::parse("90Gb/s")?.resolve(None, false)?),
//!     max_lat: None,
//!     max_nic_errors: None,
//!     min_msg_rate_mpps: None,
//! };
//! let failures = thresholds.evaluate(&Row { bytes: 2048, gbit_s: 41.2 })?;
//! assert_eq!(failures[0].to_string(), "2048 bytes: BW average 41.2 Gb/s < 90 Gb/s (-54.2%)");
//! # Ok::<(), gdrperf_threshold::ThresholdError>(())
//! ```

pub mod error;
pub mod evaluate;
pub mod format;
pub mod limit;

pub use error::ThresholdError;
pub use evaluate::{
    evaluate_bandwidth, evaluate_latency, evaluate_message_rate, evaluate_nic_errors, Failure, Measured,
    Thresholds,
};
pub use limit::{
    parse_port_rate, parse_tolerance, BandwidthLimit, BandwidthThreshold, BandwidthUnit, LatencyLimit,
    LatencyStatistic, LatencyThreshold,
};
