//! The `--prom` file after each size and at the end: base units, one series per figure, the
//! run's state.

use super::*;
use crate::output::latency_row::{LatencyFigures, LatencyRow, LatencySettings};
use crate::output::rows::{BandwidthFigures, BandwidthSettings};
use crate::output::{BandwidthRow, RowContext};

fn run_start() -> RunStart {
    RunStart {
        header: Vec::new(),
        metadata: serde_json::json!({
            "test": "write_bw", "host": "node\"7", "peer_host": "node8", "device": "mlx5_0",
            "port": 1, "role": "client", "gdrperf_version": "0.1.0", "git_commit": "abc",
            "relaxed_ordering": "asked",
        }),
    }
}

/// A row of `bytes` at `mib_per_second` (one direction).
fn bandwidth(bytes: u64, mib_per_second: f64) -> BandwidthRow {
    let direction = BandwidthFigures {
        message_size_bytes: bytes,
        messages: 1000,
        elapsed_nanos: 1_000_000_000,
        peak_bytes_per_second: Some(mib_per_second * 2.0 * 1_048_576.0),
        average_bytes_per_second: mib_per_second * 1_048_576.0,
        messages_per_second: 1000.0,
        copy_seconds: 0.0,
        peak_span: Some((10, 1000)),
        events_not_stored: 0,
    };
    let settings = BandwidthSettings { tx_depth: 128, cq_mod: 100, bidirectional: false };
    let context = RowContext { test: "write_bw".into(), device: "mlx5_0".into(), ..RowContext::default() };
    BandwidthRow::new(&context, settings, &[direction], "off")
}

fn scratch(name: &str) -> PathBuf {
    let directory = std::env::temp_dir().join(format!("gdrperf-prom-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).unwrap();
    directory.join("gdrperf.prom")
}

/// The value of the one sample line that starts with `name{` and contains every one of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> f64 {
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| {
            line.starts_with(&format!("{name}{{")) && labels.iter().all(|label| line.contains(label))
        })
        .collect();
    assert_eq!(lines.len(), 1, "one sample of {name} {labels:?} in:\n{text}");
    lines[0].rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn a_sweep_writes_bytes_per_second_per_size_and_the_end_state() {
    let path = scratch("sweep");
    let mut file = PrometheusFile::create(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(sample(&text, "gdrperf_run_status", &["status=\"running\""]), 1.0, "running before the start");
    Exporter::<BandwidthRow>::start(&mut file, &run_start()).unwrap();
    for (bytes, rate) in [(4096, 1000.0), (65536, 2000.0)] {
        Exporter::write_row(&mut file, &bandwidth(bytes, rate)).unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    // 1000 MiB/s = 1000 * 2^20 bytes per second, 2000 MiB/s twice that.
    for (size, expected) in [("4096", 1_048_576_000.0), ("65536", 2_097_152_000.0)] {
        let label = format!("size_bytes=\"{size}\"");
        let value = sample(&text, "gdrperf_bandwidth_bytes_per_second", &[&label, "role=\"client\""]);
        assert!((value - expected).abs() / expected < 1e-9, "{size}: {value} vs {expected}");
        // 1000 messages per second.
        let rate = sample(&text, "gdrperf_message_rate_per_second", &[&label]);
        assert!((rate - 1000.0).abs() < 1e-6, "{rate}");
    }
    assert!(text.contains("host=\"node\\\"7\""), "the host's quote escaped:\n{text}");
    assert_eq!(text.matches("# TYPE gdrperf_bandwidth_bytes_per_second gauge").count(), 1);
    assert!(!text.contains("gdrperf_latency_seconds"), "a bandwidth row has no latency series");
    assert_eq!(sample(&text, "gdrperf_run_status", &["status=\"running\""]), 1.0);
    let outcome = serde_json::json!({"status": "interrupted", "threshold_failures": ["FAIL a", "FAIL b"],
        "validation_failures": []});
    Exporter::<BandwidthRow>::finish(&mut file, &outcome).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(sample(&text, "gdrperf_run_status", &["status=\"interrupted\""]), 1.0);
    assert_eq!(sample(&text, "gdrperf_run_status", &["status=\"running\""]), 0.0);
    assert_eq!(sample(&text, "gdrperf_run_threshold_failures", &[]), 2.0);
    assert_eq!(sample(&text, "gdrperf_run_info", &["version=\"0.1.0\"", "relaxed_ordering=\"asked\""]), 1.0);
    let folder = path.parent().unwrap();
    assert_eq!(std::fs::read_dir(folder).unwrap().count(), 1, "no temporary file left");
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn a_latency_row_writes_each_statistic_in_seconds() {
    let path = scratch("latency");
    let mut file = PrometheusFile::create(&path).unwrap();
    let figures = LatencyFigures {
        bytes: 8,
        samples: 1000,
        t_min_nanos: 1000,
        t_max_nanos: 9000,
        t_typical_nanos: 2500,
        t_avg_nanos: 2600.0,
        t_stdev_nanos: 100.0,
        p99_nanos: 4000,
        p99_9_nanos: 5000,
        p99_99_nanos: 6000,
        elapsed_nanos: 2_600_000,
        saturated: 0,
        exact_percentiles: true,
        copy_seconds: 0.0,
        span: None,
        refused_samples: 0,
        inline_size: 0,
    };
    let settings = LatencySettings { arrival: "poll_last_byte", inline_size: 0 };
    let row = LatencyRow::new(&RowContext::default(), settings, &figures, "off");
    Exporter::<LatencyRow>::start(&mut file, &run_start()).unwrap();
    Exporter::write_row(&mut file, &row).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let typical = sample(&text, "gdrperf_latency_seconds", &["statistic=\"typical\"", "size_bytes=\"8\""]);
    assert!((typical - 2.5e-6).abs() < 1e-15, "{typical}");
    let p99 = sample(&text, "gdrperf_latency_seconds", &["statistic=\"p99\""]);
    assert!((p99 - 4e-6).abs() < 1e-15, "{p99}");
    assert_eq!(text.matches("gdrperf_latency_seconds{").count(), LatencyStatistic::ALL.len());
    assert!(!text.contains("gdrperf_bandwidth_bytes_per_second{"), "a latency row has no bandwidth");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_link_at_the_path_is_refused_before_measuring() {
    let path = scratch("link");
    let target = path.with_file_name("target");
    std::fs::write(&target, "mine").unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let error = PrometheusFile::create(&path).err().expect("a link is refused");
    assert!(error.to_string().contains("symbolic link"), "{error}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}
