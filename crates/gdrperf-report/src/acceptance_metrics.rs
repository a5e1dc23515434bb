//! `gdrperf accept --prom PATH`: the acceptance verdicts and figures as a Prometheus
//! textfile-collector file, so that a fleet's monitoring sees which node passed, which row
//! failed and by how much, in Prometheus's base units (bytes per second, seconds).
//!
//! Verdicts are state sets: for each row `gdrperf_accept_verdict{..., verdict="pass"}` and its
//! siblings `skip`, `fail`, `error`, exactly one of them 1, so an alert is
//! `gdrperf_accept_verdict{verdict="fail"} == 1` and a row's series keep their labels whatever
//! the verdict. The measured value is in base units from the row's own unit (Gb/s or MiB/s for
//! bandwidth, µs for latency).

use gdrperf_files::prometheus::{Exposition, MetricKind};
use gdrperf_threshold::limit::BITS_PER_GBIT;
use gdrperf_threshold::BandwidthUnit;

use crate::acceptance::AcceptanceRow;
use crate::Verdict;

/// Every verdict, the state set's members.
const VERDICTS: [Verdict; 4] = [Verdict::Pass, Verdict::Skip, Verdict::Fail, Verdict::Error];

/// The identity of the run, for `gdrperf_accept_info`.
pub struct AcceptRun<'a> {
    pub profile: &'a str,
    pub host: &'a str,
    pub version: &'a str,
    pub git_commit: &'a str,
    /// When the run ended, Unix time.
    pub timestamp_seconds: f64,
}

/// The verdict as a label value: "pass", "skip", "fail", "error".
fn word(verdict: Verdict) -> String {
    verdict.label().to_ascii_lowercase()
}

/// A row's measured value in base units, and the family it belongs to; `None` when the row
/// measured nothing or its unit is not one accept writes.
fn base_value(row: &AcceptanceRow) -> Option<(&'static str, f64)> {
    let value = row.value?;
    let gbit = |unit: BandwidthUnit| unit.to_gbit(value) * BITS_PER_GBIT / 8.0;
    match row.unit.as_str() {
        "Gb/s" => Some(("gdrperf_accept_bandwidth_bytes_per_second", gbit(BandwidthUnit::GigabitsPerSecond))),
        "MiB/s" => {
            Some(("gdrperf_accept_bandwidth_bytes_per_second", gbit(BandwidthUnit::MebibytesPerSecond)))
        }
        "us" => Some(("gdrperf_accept_latency_seconds", value * 1e-6)),
        _ => None,
    }
}

/// The file's text for `rows`, whose overall verdict (the soak's included) is `overall`.
pub fn exposition(run: &AcceptRun, rows: &[AcceptanceRow], overall: Verdict) -> Exposition {
    let mut exposition = Exposition::new();
    exposition
        .declare(
            "gdrperf_accept_info",
            "The acceptance run: profile, host, version, commit (always 1).",
            MetricKind::Gauge,
        )
        .declare(
            "gdrperf_accept_overall",
            "The node's verdict: 1 for it (pass, fail, error), 0 for the others.",
            MetricKind::Gauge,
        )
        .declare(
            "gdrperf_accept_exit_code",
            "gdrperf accept's exit code (0 pass, 1 fail, 2 error).",
            MetricKind::Gauge,
        )
        .declare(
            "gdrperf_accept_last_run_timestamp_seconds",
            "When the acceptance run ended (Unix time): a stale file is an old run.",
            MetricKind::Gauge,
        )
        .declare(
            "gdrperf_accept_verdict",
            "Each row's verdict: 1 for it (pass, skip, fail, error), 0 for the others.",
            MetricKind::Gauge,
        )
        .declare(
            "gdrperf_accept_bandwidth_bytes_per_second",
            "A bandwidth row's measured average in bytes per second.",
            MetricKind::Gauge,
        )
        .declare(
            "gdrperf_accept_latency_seconds",
            "A latency row's measured statistic (the metric label) in seconds.",
            MetricKind::Gauge,
        );
    exposition.set(
        "gdrperf_accept_info",
        &[
            ("profile", run.profile),
            ("host", run.host),
            ("version", run.version),
            ("git_commit", run.git_commit),
        ],
        1.0,
    );
    for verdict in [Verdict::Pass, Verdict::Fail, Verdict::Error] {
        let state = word(verdict);
        exposition.set(
            "gdrperf_accept_overall",
            &[("verdict", &state)],
            f64::from(u8::from(verdict == overall)),
        );
    }
    exposition.set("gdrperf_accept_exit_code", &[], f64::from(overall.exit_code()));
    exposition.set("gdrperf_accept_last_run_timestamp_seconds", &[], run.timestamp_seconds);
    for row in rows {
        let size = row.bytes.to_string();
        let labels = [
            ("nic", row.nic.as_str()),
            ("gpu", row.gpu.as_str()),
            ("test", row.test.as_str()),
            ("memory", row.mem.as_str()),
            ("size_bytes", size.as_str()),
            ("metric", row.metric.as_str()),
        ];
        for verdict in VERDICTS {
            let state = word(verdict);
            let mut with_state = labels.to_vec();
            with_state.push(("verdict", &state));
            exposition.set(
                "gdrperf_accept_verdict",
                &with_state,
                f64::from(u8::from(verdict == row.verdict)),
            );
        }
        if let Some((family, value)) = base_value(row) {
            exposition.set(family, &labels, value);
        }
    }
    exposition
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(test: &str, mem: &str, verdict: Verdict, value: Option<f64>, unit: &str) -> AcceptanceRow {
        AcceptanceRow {
            nic: "mlx5_0".into(),
            port_rate: "400 Gb/sec (4X NDR)".into(),
            gpu: "GPU0".into(),
            gpu_bus_id: String::new(),
            test: test.into(),
            mem: mem.into(),
            bytes: 65536,
            metric: if unit == "us" { "t_typical_us".into() } else { "bw_avg_gbit_s".into() },
            value,
            unit: unit.into(),
            threshold: String::new(),
            verdict,
            detail: String::new(),
            threshold_source: String::new(),
            result_file: String::new(),
            ceiling_gbps: None,
            ceiling_limited_by: String::new(),
            pct_of_ceiling: None,
            ceiling_causes: String::new(),
            deviation: String::new(),
        }
    }

    fn value_of(text: &str, starts: &str, contains: &[&str]) -> f64 {
        let lines: Vec<&str> = text
            .lines()
            .filter(|line| line.starts_with(starts) && contains.iter().all(|part| line.contains(part)))
            .collect();
        assert_eq!(lines.len(), 1, "one line {starts} {contains:?}:\n{text}");
        lines[0].rsplit(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn each_row_has_one_verdict_set_and_its_value_in_base_units() {
        let run = AcceptRun {
            profile: "ndr-400g",
            host: "n7",
            version: "0.1.0",
            git_commit: "abc",
            timestamp_seconds: 5.0,
        };
        let rows = [
            row("write_bw", "cuda", Verdict::Fail, Some(100.0), "Gb/s"),
            row("write_bw", "host", Verdict::Pass, Some(1000.0), "MiB/s"),
            row("read_lat", "host", Verdict::Pass, Some(2.5), "us"),
            row("write_bw", "cuda-staged", Verdict::Skip, None, ""),
        ];
        let text = exposition(&run, &rows, Verdict::Fail).render();
        // 100 Gb/s = 12.5e9 bytes/s; 1000 MiB/s = 1000 * 2^20 bytes/s; 2.5 µs.
        let cuda = value_of(&text, "gdrperf_accept_bandwidth_bytes_per_second{", &["memory=\"cuda\""]);
        assert!((cuda - 12.5e9).abs() < 1.0, "{cuda}");
        let host = value_of(&text, "gdrperf_accept_bandwidth_bytes_per_second{", &["memory=\"host\""]);
        assert!((host - 1_048_576_000.0).abs() < 1e-3, "{host}");
        let latency = value_of(&text, "gdrperf_accept_latency_seconds{", &["test=\"read_lat\""]);
        assert!((latency - 2.5e-6).abs() < 1e-15, "{latency}");
        assert_eq!(value_of(&text, "gdrperf_accept_verdict{", &["memory=\"cuda\"", "verdict=\"fail\""]), 1.0);
        assert_eq!(value_of(&text, "gdrperf_accept_verdict{", &["memory=\"cuda\"", "verdict=\"pass\""]), 0.0);
        assert_eq!(value_of(&text, "gdrperf_accept_verdict{", &["cuda-staged", "verdict=\"skip\""]), 1.0);
        // Four states a row, each row once; nothing measured, no value.
        assert_eq!(text.matches("gdrperf_accept_verdict{").count(), 4 * rows.len());
        assert_eq!(text.matches("gdrperf_accept_bandwidth_bytes_per_second{").count(), 2);
        assert_eq!(value_of(&text, "gdrperf_accept_overall{", &["verdict=\"fail\""]), 1.0);
        assert_eq!(value_of(&text, "gdrperf_accept_exit_code", &[]), 1.0);
        assert_eq!(text.matches("# TYPE gdrperf_accept_verdict gauge").count(), 1);
    }
}
