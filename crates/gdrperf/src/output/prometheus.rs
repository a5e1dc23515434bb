//! `--prom PATH`: the run's figures as a Prometheus textfile-collector file (node_exporter's
//! `--collector.textfile.directory`), in Prometheus's base units: bytes per second, messages per
//! second, seconds.
//!
//! One series per figure of each size (its labels: the test, both ends, the memories, the lane
//! and the message size), the run's identity as `gdrperf_run_info` and its state as
//! `gdrperf_run_status` (`running` until the end, then `complete`, `interrupted` or `failed`),
//! with the time of the last update, so a stale file can be told from a fresh one. The file is
//! rewritten whole after each size (a temporary file and a rename, `gdrperf_files::prometheus`),
//! so a crash keeps the sizes done and a scrape never reads half a file.

use std::path::{Path, PathBuf};

use gdrperf_files::prometheus::{Exposition, MetricKind};
use gdrperf_threshold::LatencyStatistic;

use crate::error::{Error, Result};
use crate::output::exporter::{Exporter, Row, RunStart};
use crate::output::files::check_result_path;

/// The run's states, `gdrperf_run_status`'s `status` label: one of them is 1, the others 0.
const STATES: [&str; 4] = ["running", "complete", "interrupted", "failed"];

/// The row keys (CSV columns) that label each row's series, with the label they become.
const ROW_LABELS: [(&str, &str); 8] = [
    ("test", "test"),
    ("host", "host"),
    ("device", "device"),
    ("peer_host", "peer_host"),
    ("peer_device", "peer_device"),
    ("mem_local", "memory"),
    ("mem_remote", "remote_memory"),
    ("lane", "lane"),
];

/// The `--prom` file of a run.
pub struct PrometheusFile {
    path: PathBuf,
    exposition: Exposition,
    /// `role`: the client's and the server's files of one run are told apart.
    role: String,
}

fn output_error(path: &Path, source: std::io::Error) -> Error {
    Error::Output { path: path.display().to_string(), source }
}

/// The metric families of a run, declared once, in the file's order.
fn declare(exposition: &mut Exposition) {
    exposition
        .declare(
            "gdrperf_run_info",
            "The run: its test, ends, version and commit (value always 1).",
            MetricKind::Gauge,
        )
        .declare(
            "gdrperf_run_status",
            "How the run stands: 1 for its state (running, complete, interrupted, failed), 0 for the others.",
            MetricKind::Gauge,
        )
        .declare(
            "gdrperf_run_threshold_failures",
            "Sizes that missed an acceptance threshold (--min-bw, --max-lat, -w, -y) so far.",
            MetricKind::Gauge,
        )
        .declare(
            "gdrperf_run_validation_failures",
            "Sizes whose data check (--validate) failed so far.",
            MetricKind::Gauge,
        )
        .declare(
            "gdrperf_run_last_update_timestamp_seconds",
            "When this file was last written (Unix time): a stale file is an old run.",
            MetricKind::Gauge,
        )
        .declare(
            "gdrperf_bandwidth_bytes_per_second",
            "Average bandwidth of the size (bw_avg_gbit_s in bytes per second; gdr-send-bw: the sender's).",
            MetricKind::Gauge,
        )
        .declare(
            "gdrperf_message_rate_per_second",
            "Messages per second of the size (msg_rate_mpps).",
            MetricKind::Gauge,
        )
        .declare(
            "gdrperf_latency_seconds",
            "A latency statistic of the size in seconds (the t_*_us and p*_us columns).",
            MetricKind::Gauge,
        )
        .declare(
            "gdrperf_nic_errors",
            "NIC error counters that moved during the size (nic_errors).",
            MetricKind::Gauge,
        );
}

/// Seconds since the Unix epoch, now.
fn now_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_secs_f64())
        .unwrap_or(0.0)
}

/// A row's labels: its place columns (see [`ROW_LABELS`]), the message size and the side.
fn row_labels(row: &serde_json::Value, role: &str) -> Vec<(&'static str, String)> {
    let text = |key: &str| match &row[key] {
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    };
    let mut labels: Vec<(&'static str, String)> =
        ROW_LABELS.iter().map(|(key, label)| (*label, text(key))).collect();
    labels.push(("size_bytes", text("bytes")));
    labels.push(("role", role.to_string()));
    labels
}

/// Borrowed label pairs, as [`Exposition::set`] takes them.
fn pairs<'a>(
    labels: &'a [(&'static str, String)],
    extra: &'a [(&'static str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    labels.iter().map(|(label, value)| (*label, value.as_str())).chain(extra.iter().copied()).collect()
}

impl PrometheusFile {
    /// Checks the path now (a bad one fails before measuring) and writes the run as running.
    pub fn create(path: &Path) -> Result<PrometheusFile> {
        check_result_path(path)?;
        let mut exposition = Exposition::new();
        declare(&mut exposition);
        let mut file = PrometheusFile { path: path.to_path_buf(), exposition, role: String::new() };
        file.set_status("running", 0, 0);
        file.rewrite()?;
        Ok(file)
    }

    fn set_status(&mut self, state: &str, threshold_failures: u64, validation_failures: u64) {
        let role = self.role.clone();
        for candidate in STATES {
            let value = if candidate == state { 1.0 } else { 0.0 };
            self.exposition.set("gdrperf_run_status", &[("role", &role), ("status", candidate)], value);
        }
        self.exposition.set("gdrperf_run_threshold_failures", &[("role", &role)], threshold_failures as f64);
        self.exposition.set(
            "gdrperf_run_validation_failures",
            &[("role", &role)],
            validation_failures as f64,
        );
    }

    fn rewrite(&mut self) -> Result<()> {
        let role = self.role.clone();
        self.exposition.set("gdrperf_run_last_update_timestamp_seconds", &[("role", &role)], now_seconds());
        self.exposition.write(&self.path).map_err(|source| output_error(&self.path, source))
    }

    /// The series of one row, in base units (see the module's documentation).
    fn add_row(&mut self, row: &impl Row) -> Result<()> {
        let json = serde_json::to_value(row).map_err(|error| output_error(&self.path, error.into()))?;
        let labels = row_labels(&json, &self.role);
        if let Some(gbit_s) = row.bandwidth_gbit_s() {
            let bytes_per_second = gbit_s * gdrperf_stats::units::BITS_PER_GBIT / 8.0;
            self.exposition.set("gdrperf_bandwidth_bytes_per_second", &pairs(&labels, &[]), bytes_per_second);
        }
        if let Some(mpps) = row.message_rate_mpps() {
            self.exposition.set("gdrperf_message_rate_per_second", &pairs(&labels, &[]), mpps * 1e6);
        }
        for statistic in LatencyStatistic::ALL {
            if let Some(microseconds) = row.latency_us(statistic) {
                let extra = [("statistic", statistic.label())];
                self.exposition.set("gdrperf_latency_seconds", &pairs(&labels, &extra), microseconds * 1e-6);
            }
        }
        if let Some(errors) = row.nic_errors() {
            self.exposition.set("gdrperf_nic_errors", &pairs(&labels, &[]), errors as f64);
        }
        Ok(())
    }
}

impl<R: Row> Exporter<R> for PrometheusFile {
    fn start(&mut self, run: &RunStart) -> Result<()> {
        let text = |key: &str| match &run.metadata[key] {
            serde_json::Value::String(text) => text.clone(),
            serde_json::Value::Null => String::new(),
            other => other.to_string(),
        };
        // The first start names the side; the status series written before it had none.
        if self.role.is_empty() {
            self.exposition = Exposition::new();
            declare(&mut self.exposition);
            self.role = text("role");
            self.set_status("running", 0, 0);
        }
        let info: Vec<(&str, String)> = [
            ("test", "test"),
            ("host", "host"),
            ("peer_host", "peer_host"),
            ("device", "device"),
            ("port", "port"),
            ("role", "role"),
            ("version", "gdrperf_version"),
            ("git_commit", "git_commit"),
            ("relaxed_ordering", "relaxed_ordering"),
        ]
        .iter()
        .map(|(label, key)| (*label, text(key)))
        .collect();
        let info: Vec<(&str, &str)> = info.iter().map(|(label, value)| (*label, value.as_str())).collect();
        self.exposition.set("gdrperf_run_info", &info, 1.0);
        self.rewrite()
    }

    fn finish(&mut self, outcome: &serde_json::Value) -> Result<()> {
        let count = |key: &str| outcome[key].as_array().map_or(0, Vec::len) as u64;
        let state = outcome["status"].as_str().filter(|state| STATES.contains(state)).unwrap_or("failed");
        self.set_status(state, count("threshold_failures"), count("validation_failures"));
        self.rewrite()
    }

    fn write_row(&mut self, row: &R) -> Result<()> {
        self.add_row(row)?;
        self.rewrite()
    }
}

#[cfg(test)]
mod tests;
