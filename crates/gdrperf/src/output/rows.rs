//! Result rows. Their field names are the CSV column names: a published contract that plotting
//! scripts and stored baselines depend on. Add columns at the end; rename none without a reason
//! in the commit.

use gdrperf_stats::units::{BITS_PER_GBIT, BYTES_PER_MIB};
use gdrperf_stats::BandwidthReport;
use serde::{Deserialize, Serialize};

use crate::harness::config::BandwidthUnit;
use crate::output::Row;

/// Facts about the run that every row repeats, so that each row stands alone in a merged CSV.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RowContext {
    pub test: String,
    pub host: String,
    pub peer_host: String,
    pub device: String,
    pub peer_device: String,
    pub mtu: u32,
    pub qps: u32,
    pub mem_local: crate::memory_kind::MemoryKind,
    pub mem_remote: crate::memory_kind::MemoryKind,
    pub gpu_local: String,
    pub gpu_remote: String,
    /// The lane of a `--concurrent` run ("0", "1", ...; "all" for the aggregate), else empty.
    pub lane: String,
}

/// One size of a bandwidth test.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BandwidthRow {
    pub test: String,
    pub bytes: u64,
    /// Messages completed (all QPs; both directions when bidirectional).
    pub iterations: u64,
    pub bw_peak_mib_s: f64,
    pub bw_avg_mib_s: f64,
    pub bw_peak_gbit_s: f64,
    pub bw_avg_gbit_s: f64,
    pub msg_rate_mpps: f64,
    pub elapsed_s: f64,
    pub qps: u32,
    pub tx_depth: u32,
    pub cq_mod: u32,
    pub bidirectional: bool,
    pub mtu: u32,
    /// `off`, `pass` or `fail`.
    pub validation: String,
    pub host: String,
    pub peer_host: String,
    pub device: String,
    pub peer_device: String,
    pub mem_local: String,
    pub mem_remote: String,
    pub gpu_local: String,
    pub gpu_remote: String,
    /// Staged memory: the seconds during which at least one copy between payload and bounce
    /// buffer was running (the union of the copies' intervals, `gdrperf_stats::busy_nanos`, per
    /// side and QP), summed over both sides, for this size, warm-up included (0 where nothing is
    /// staged).
    pub copy_time_s: f64,
    /// `--concurrent`: the lane ("0", "1", ...) or "all" for the sum of the lanes; empty otherwise.
    #[serde(default)]
    pub lane: String,
}

/// One direction's bandwidth figures: what a side measured, in a form that crosses the exchange
/// (the stats crate's report only serialises).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BandwidthFigures {
    pub message_size_bytes: u64,
    pub messages: u64,
    pub elapsed_nanos: u64,
    pub peak_bytes_per_second: f64,
    pub average_bytes_per_second: f64,
    pub messages_per_second: f64,
    /// Staged memory: seconds this side spent in copies between payload and bounce buffer.
    #[serde(default)]
    pub copy_seconds: f64,
}

impl From<&BandwidthReport> for BandwidthFigures {
    fn from(report: &BandwidthReport) -> BandwidthFigures {
        BandwidthFigures {
            message_size_bytes: report.message_size_bytes,
            messages: report.messages,
            elapsed_nanos: report.elapsed_nanos,
            peak_bytes_per_second: report.peak.bytes_per_second(),
            average_bytes_per_second: report.average.bytes_per_second(),
            messages_per_second: report.message_rate.messages_per_second(),
            copy_seconds: 0.0,
        }
    }
}

/// Settings of a bandwidth row that are not in the context.
#[derive(Debug, Clone, Copy)]
pub struct BandwidthSettings {
    pub tx_depth: u32,
    pub cq_mod: u32,
    pub bidirectional: bool,
}

impl BandwidthRow {
    /// Builds the row from one or two directions' reports: bidirectional bandwidth is the sum of
    /// both directions, as perftest reports it; elapsed time is the longer of the two.
    pub fn new(
        context: &RowContext,
        settings: BandwidthSettings,
        reports: &[BandwidthFigures],
        validation: &str,
    ) -> BandwidthRow {
        let sum = |pick: fn(&BandwidthFigures) -> f64| reports.iter().map(pick).sum::<f64>();
        BandwidthRow {
            test: context.test.clone(),
            bytes: reports.first().map(|report| report.message_size_bytes).unwrap_or(0),
            iterations: reports.iter().map(|report| report.messages).sum(),
            bw_peak_mib_s: sum(|report| report.peak_bytes_per_second) / BYTES_PER_MIB,
            bw_avg_mib_s: sum(|report| report.average_bytes_per_second) / BYTES_PER_MIB,
            bw_peak_gbit_s: sum(|report| report.peak_bytes_per_second) * 8.0 / BITS_PER_GBIT,
            bw_avg_gbit_s: sum(|report| report.average_bytes_per_second) * 8.0 / BITS_PER_GBIT,
            msg_rate_mpps: sum(|report| report.messages_per_second) / 1e6,
            elapsed_s: reports.iter().map(|report| report.elapsed_nanos as f64 / 1e9).fold(0.0, f64::max),
            qps: context.qps,
            tx_depth: settings.tx_depth,
            cq_mod: settings.cq_mod,
            bidirectional: settings.bidirectional,
            mtu: context.mtu,
            validation: validation.to_string(),
            host: context.host.clone(),
            peer_host: context.peer_host.clone(),
            device: context.device.clone(),
            peer_device: context.peer_device.clone(),
            mem_local: context.mem_local.to_string(),
            mem_remote: context.mem_remote.to_string(),
            gpu_local: context.gpu_local.clone(),
            gpu_remote: context.gpu_remote.clone(),
            copy_time_s: reports.iter().map(|report| report.copy_seconds).sum(),
            lane: context.lane.clone(),
        }
    }

    /// The aggregate row of one size of a `--concurrent` run: bandwidth, message rate, counts and
    /// copy time summed over the lanes (they start each size together), elapsed time the longest
    /// lane's, the places joined ("mlx5_0+mlx5_1"), and `lane` "all". `None` without lanes.
    pub fn aggregate(lanes: &[BandwidthRow]) -> Option<BandwidthRow> {
        let first = lanes.first()?;
        let sum = |pick: fn(&BandwidthRow) -> f64| lanes.iter().map(pick).sum::<f64>();
        let join = |pick: fn(&BandwidthRow) -> &str| join_distinct(lanes.iter().map(pick));
        Some(BandwidthRow {
            iterations: lanes.iter().map(|row| row.iterations).sum(),
            bw_peak_mib_s: sum(|row| row.bw_peak_mib_s),
            bw_avg_mib_s: sum(|row| row.bw_avg_mib_s),
            bw_peak_gbit_s: sum(|row| row.bw_peak_gbit_s),
            bw_avg_gbit_s: sum(|row| row.bw_avg_gbit_s),
            msg_rate_mpps: sum(|row| row.msg_rate_mpps),
            elapsed_s: lanes.iter().map(|row| row.elapsed_s).fold(0.0, f64::max),
            qps: lanes.iter().map(|row| row.qps).sum(),
            validation: combined_validation(lanes.iter().map(|row| row.validation.as_str())),
            device: join(|row| &row.device),
            peer_device: join(|row| &row.peer_device),
            mem_local: join(|row| &row.mem_local),
            mem_remote: join(|row| &row.mem_remote),
            gpu_local: join(|row| &row.gpu_local),
            gpu_remote: join(|row| &row.gpu_remote),
            copy_time_s: sum(|row| row.copy_time_s),
            lane: "all".into(),
            ..first.clone()
        })
    }
}

/// The distinct values in order of first appearance, joined with '+' ("mlx5_0+mlx5_1"; "host").
pub fn join_distinct<'a>(values: impl Iterator<Item = &'a str>) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for value in values {
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    seen.join("+")
}

/// "fail" if any lane failed its data check, "pass" if all passed, else "off".
pub fn combined_validation<'a>(mut values: impl Iterator<Item = &'a str> + Clone) -> String {
    if values.clone().any(|value| value == "fail") {
        "fail".into()
    } else if values.all(|value| value == "pass") {
        "pass".into()
    } else {
        "off".into()
    }
}

/// The console's note after a lane's line: "lane 1: rxe0, cuda:1", "all lanes".
pub(crate) fn lane_note(lane: &str, device: &str, mem: &str, gpu: &str) -> String {
    match lane {
        "" => String::new(),
        "all" => "  all lanes".into(),
        lane if gpu.is_empty() => format!("  lane {lane}: {device}, {mem}"),
        lane => format!("  lane {lane}: {device}, {mem}:{gpu}"),
    }
}

impl Row for BandwidthRow {
    fn aggregate(lanes: &[BandwidthRow]) -> Option<BandwidthRow> {
        BandwidthRow::aggregate(lanes)
    }

    fn console_header(unit: BandwidthUnit) -> String {
        let unit = match unit {
            BandwidthUnit::MebibytesPerSecond => "MiB/sec",
            BandwidthUnit::GigabitsPerSecond => "Gb/sec",
        };
        format!(
            " {:<10} {:<13} {:<20} {:<22} {:<14} {}",
            "#bytes",
            "#iterations",
            format!("BW peak[{unit}]"),
            format!("BW average[{unit}]"),
            "MsgRate[Mpps]",
            "check"
        )
    }

    fn console_line(&self, unit: BandwidthUnit) -> String {
        let (peak, average) = match unit {
            BandwidthUnit::MebibytesPerSecond => (self.bw_peak_mib_s, self.bw_avg_mib_s),
            BandwidthUnit::GigabitsPerSecond => (self.bw_peak_gbit_s, self.bw_avg_gbit_s),
        };
        format!(
            " {:<10} {:<13} {:<20.2} {:<22.2} {:<14.6} {}{}",
            self.bytes,
            self.iterations,
            peak,
            average,
            self.msg_rate_mpps,
            self.validation,
            lane_note(&self.lane, &self.device, &self.mem_local, &self.gpu_local)
        )
    }
}
