//! gdrperf's result files, read back to answer three questions in one command each:
//!
//! * **Does this node pass?** [`threshold`] (the `gdrperf-threshold` crate, shared with the
//!   benches) parses `--min-bw 90Gb/s | 11000MiB/s | 80%` and
//!   `--max-lat 5us` (on the statistic of `--lat-pct`); [`evaluate`] holds each size against
//!   them and words the FAIL line ("2048 bytes: BW average 41.2 Gb/s < 90 Gb/s (-54.2%)");
//!   [`profile`] loads the thresholds of an acceptance profile (TOML, every value sourced).
//! * **Did this change regress?** [`results`] reads a CSV or JSON result file into rows;
//!   [`compare`] joins two runs on (test, memory modes, GPU, size) and judges each change
//!   against a tolerance.
//! * **How much does GPUDirect buy?** [`modes`] sets host, staged and GPUDirect rows of one run
//!   side by side with the speed-up per size.
//!
//! * **What does the person signing read?** [`report_html`] writes one self-contained page per
//!   acceptance folder: verdict, plots ([`svg_chart`]), causes, thresholds with sources, the
//!   inventory ([`report_inventory`]) and a [`manifest`] of every raw file with its SHA-256;
//!   [`acceptance_metrics`] gives a fleet's monitoring the same verdicts as a Prometheus file.
//!
//! The crate knows nothing of verbs or CUDA: it reads what the benches wrote, so it runs on a
//! laptop holding results copied off a cluster.
//!
//! ```
//! use gdrperf_report::{BandwidthThreshold, ResultFile, Thresholds};
//!
//! let run = ResultFile::parse_csv("run.csv", "test,bytes,bw_avg_gbit_s\nwrite_bw,2048,41.2\nwrite_bw,65536,95\n")?;
//! let thresholds = Thresholds {
//!     min_bw: Some(BandwidthThreshold::parse("90Gb/s")?.resolve(None, false)?),
//!     max_lat: None,
//!     max_nic_errors: None,
//!     min_msg_rate_mpps: None,
//! };
//! let failures: Vec<String> = run.rows.iter()
//!     .map(|row| thresholds.evaluate(row))
//!     .collect::<Result<Vec<_>, _>>()?
//!     .into_iter().flatten().map(|failure| failure.to_string()).collect();
//! assert_eq!(failures, ["2048 bytes: BW average 41.2 Gb/s < 90 Gb/s (-54.2%)"]);
//! # Ok::<(), gdrperf_report::ReportError>(())
//! ```

pub mod acceptance;
pub mod acceptance_metrics;
pub mod compare;
pub mod compare_parameters;
pub mod decision;
pub mod error;
pub mod evaluate;
pub mod format;
mod html_text;
pub mod inventory_diff;
pub mod junit;
pub mod manifest;
pub mod modes;
pub mod profile;
pub mod report_html;
pub mod report_inventory;
pub mod report_soak;
pub mod results;
mod run_anomalies;
pub mod significance;
pub mod soak;
mod sourced_value;
pub mod svg_chart;
pub mod sweep_decision;
/// Threshold parsing and resolving, shared with the benches: `gdrperf-threshold`'s.
pub use gdrperf_threshold::limit as threshold;

pub use compare::{
    compare_repeated, compare_runs, compare_sharing, Change, ComparedRow, Comparison, Decision,
};
pub use error::{ReportError, Result};
pub use evaluate::{evaluate_bandwidth, evaluate_latency, Failure, Measured, Thresholds, Verdict};
pub use modes::{compare_memory_modes, ModeComparison, ModeGroup};
pub use profile::{BandwidthCheck, LatencyCheck, Profile, SourcedValue, MEMORY_MODES};
pub use results::{Better, ResultFile, ResultRow, RowKey, RowKind};
pub use threshold::{
    parse_port_rate, parse_tolerance, BandwidthLimit, BandwidthThreshold, BandwidthUnit, LatencyLimit,
    LatencyStatistic, LatencyThreshold,
};
